import ObserveCoreMacros
@_spi(Testing) import ObserveCore
import Testing

/// The behaviour of the hand-written form (Tests/ObserveCoreTests), through models declared with
/// `@KeyValueObservable`: properties, options, observers, arrays and element keys, chains,
/// dependent keys, streams, bindings, names in messages.
@Suite("@KeyValueObservable models", .serialized)
struct MacroModelTests {
    @Test("a property's changes arrive with old, new and prior values")
    func propertyChanges() {
        let person = MPerson(name: "Ada")
        var log: [String] = []
        let token = person.observe(\.age, options: [.old, .new, .prior]) { _, change in
            log.append(change.isPrior ? "prior \(change.oldValue!)" : "\(change.oldValue!) -> \(change.newValue!)")
        }
        person.age = 36
        person.age = 37
        #expect(log == ["prior 0", "0 -> 36", "prior 36", "36 -> 37"])
        token.cancel()
        person.age = 38
        #expect(log.count == 4, "a cancelled token hears nothing")
    }

    @Test("optional properties, observer-tagged registration, removal")
    func optionalsAndObservers() {
        final class Watcher { var seen: [String?] = [] }
        let person = MPerson()
        let watcher = Watcher()
        person.addObserver(watcher, for: \.nickname, options: [.new]) { watcher, _, change in
            watcher.seen.append(change.newValue)
        }
        person.nickname = "Countess"
        person.nickname = nil
        #expect(watcher.seen == ["Countess", nil])
        person.removeObserver(watcher, for: \.nickname)
        person.nickname = "again"
        #expect(watcher.seen.count == 2)
        #expect(person.observationCount == 0)
    }

    @Test("an ignored property, a let and a plain computed property get no key; dependent and hand-declared keys are listed")
    func whatIsObservable() {
        let listed = MPerson.observableKeys.map { "\($0.erasedKeyPath)" }
        #expect(MPerson.observableKeys.count == 6, "name, age, nickname, address, label, greeting: \(listed)")
        #expect(MPerson.observableKeys.contains { $0.erasedKeyPath == \MPerson.greeting })
        #expect(!MPerson.observableKeys.contains { $0.erasedKeyPath == \MPerson.renderCount })
        let person = MPerson()
        person.renderCount += 1   // compiles, stays a plain stored property
        #expect(person.renderCount == 1)
    }

    @Test("a dependent key declared beside a computed property fires when its dependency changes")
    func dependentKey() {
        let person = MPerson(name: "Ada")
        var greetings: [String] = []
        let token = person.observe(\.greeting) { _, change in greetings.append(change.newValue!) }
        person.name = "Grace"
        #expect(greetings == ["Hello, Grace"])
        token.cancel()
    }

    @Test("a key path chain through an optional link, in debug and release builds")
    func chain() {
        let person = MPerson()
        var cities: [String?] = []
        let token = person.observe(\.address?.city) { _, change in cities.append(change.newValue) }
        person.address = MAddress(city: "London")
        person.address?.city = "Paris"
        let old = person.address!
        person.address = nil
        old.city = "Rome"   // no longer on the chain
        #expect(cities == ["London", "Paris", nil])
        token.cancel()
    }

    @Test("a computed property marked @KeyValueDependent fires when a dependency changes, through a chain too")
    func macroDeclaredDependentKey() {
        let person = MPerson(name: "Ada")
        var labels: [String] = []
        let token = person.observe(\.label, options: [.old, .new]) { _, change in
            labels.append("\(change.oldValue!) => \(change.newValue!)")
        }
        person.name = "Grace"
        person.address = MAddress(city: "Paris")
        person.address?.city = "Lyon"
        person.renderCount += 1                    // not a dependency
        #expect(labels == ["Ada of - => Grace of -", "Grace of - => Grace of Paris", "Grace of Paris => Grace of Lyon"])
        #expect(MPerson.observableKeys.contains { $0.erasedKeyPath == \MPerson.label }, "the macro lists the dependent key")
        token.cancel()
    }

    @Test("an ObservableArray property and its elements' keys")
    func arrays() {
        let teacher = MTeacher()
        let ada = MStudent("Ada"), grace = MStudent("Grace")
        var log: [String] = []
        let token = teacher.observeArray(\.students, options: [.new], elementKeyPaths: [\.grade]) { _, change in
            log.append("\(change.kind) \(change.elements.map { "\($0.element)@\($0.newIndex ?? -1)" })")
        }
        teacher.students.append(ada)
        teacher.students.insert(grace, at: 0)
        ada.grade = 5
        teacher.students = ObservableArray([grace])
        ada.grade = 6   // left with the old array
        #expect(log == ["append [\"Ada@0\"]", "insert [\"Grace@0\"]", "elementChanged [\"Ada@1\"]",
                        "arrayReplaced []"], "an arrayReplaced change lists no elements")
        token.cancel()
    }

    @Test("a change stream and a binding")
    func streamAndBinding() async {
        let person = MPerson(), mirror = MPerson()
        let binding = mirror.bind(\.name, to: person, \.name)
        let stream = person.changes(for: \.age)
        person.name = "Ada"
        #expect(mirror.name == "Ada")
        person.age = 1
        person.age = 2
        var ages: [Int] = []
        for await change in stream {
            ages.append(change.newValue!)
            if ages.count == 2 { break }
        }
        #expect(ages == [1, 2])
        binding.cancel()
    }

    @Test("observing a property the class declares no key for stops at registration, naming the fix")
    func undeclaredKeyIsLoud() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let person = MPerson()
            _ = person.observe(\.renderCount) { _, _ in }   // @KeyValueIgnored: would never fire
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("ObserveCore: cannot observe \\MPerson.renderCount on MPerson: MPerson declares no "
                                + "ObservableKey for it"), "\(stderr)")
    }

    @Test("a subclass of a macro-declared class adds keys by hand; its key paths reach the base's properties too")
    func subclass() {
        let derived = MDerived()
        var log: [String] = []
        let extra = derived.observe(\.extra) { _, change in log.append("extra \(change.newValue!)") }
        let title = derived.observe(\.title) { _, change in log.append("title \(change.newValue!)") }
        let viaBase = (derived as MBase).observe(\.title) { _, change in log.append("base \(change.newValue!)") }
        derived.extra = 1
        derived.title = "t"
        #expect(log == ["extra 1", "title t", "base t"] || log == ["extra 1", "base t", "title t"])
        viaBase.cancel()
        #expect(MBase.observableKeysAreComplete && !MDerived.observableKeysAreComplete,
                "the inherited listing is complete for the base only")
        extra.cancel()
        title.cancel()
    }

    @Test("a class that declares its own registrar keeps it")
    func ownRegistrar() {
        let object = MSwiftBacked()
        #expect(object.kvoRegistrar.backend == .swift)
        var heard = 0
        let token = object.observe(\.value) { _, _ in heard += 1 }
        object.value = 1
        #expect(heard == 1)
        token.cancel()
    }

    @Test("messages and listings name the property: \\MPerson.age, not a computed key path")
    func names() {
        let person = MPerson()
        let token = person.observe(\.age) { _, _ in }
        #expect(ObservationRuntime.debugListing().contains("\\MPerson.age"), "\(ObservationRuntime.debugListing())")
        token.cancel()

        let saved = ObservationRuntime.runawayRecursionHandler
        nonisolated(unsafe) var message = ""
        ObservationRuntime.runawayRecursionHandler = { message = $0 }
        defer { ObservationRuntime.runawayRecursionHandler = saved }
        let looping = person.observe(\.age) { person, _ in person.age += 1 }
        person.age = 1
        looping.cancel()
        #expect(message.contains("a change of \\MPerson.age was announced"), "\(message)")
    }
}
