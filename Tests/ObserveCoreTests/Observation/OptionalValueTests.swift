@_spi(Testing) import ObserveCore
import Testing

/// An observer typed `AnyObject` (the form the compiler crashed on, see `addObserver`).
private final class Listener {}

@Suite("Optional properties: the single-key forms hand over Wrapped? values", .serialized)
struct OptionalValueTests {
    @Test("observe, addObserver (typed, with context, AnyObject), post: String? values", arguments: ObservationBackend.allCases)
    func everyRegistrationForm(backend: ObservationBackend) {
        let person = Person(backend)
        var seen: [String] = []
        func note(_ form: String, _ value: String?) { seen.append("\(form):\(value ?? "nil")") }
        let token = person.observe(\.nickname, options: [.old, .new]) { _, change in
            let old: String? = change.oldValue, new: String? = change.newValue   // typed one level deep
            note("observe", old)
            note("observe", new)
        }
        final class Watcher {}
        let watcher = Watcher()
        person.addObserver(watcher, for: \.nickname) { _, _, change in note("typed", change.newValue) }
        person.addObserver(watcher, for: \.nickname, context: 5) { _, _, change, context in
            note("context\(context.rawValue)", change.newValue)
        }
        let listener: AnyObject = Listener()
        person.addObserver(listener, for: \.nickname) { observer, _, change in
            // (Not `#expect(observer === listener)`: Swift 6.3.1 crashes compiling that closure.)
            note(ObjectIdentifier(observer) == ObjectIdentifier(listener) ? "any" : "wrong observer", change.newValue)
        }
        person.post(\.nickname) { _, change in note("post", change.newValue) }
        person.nickname = "Countess"
        person.nickname = nil
        #expect(seen.filter { $0.hasPrefix("observe") } == ["observe:nil", "observe:Countess", "observe:Countess", "observe:nil"])
        for form in ["typed", "context5", "any", "post"] {
            #expect(seen.filter { $0.hasPrefix(form + ":") } == ["\(form):Countess", "\(form):nil"])
        }
        token.cancel()
        person.removeObserver(watcher, for: \.nickname)
        person.removeObserver(listener, for: \.nickname)
        person.stopPosting(\.nickname)
    }

    @Test("a chain through an optional link, and .initial, give String?", arguments: ObservationBackend.allCases)
    func chainsAndInitial(backend: ObservationBackend) {
        // These models list no keys (ObservableKeyListing): reading the chain's keys creates them.
        _ = (Person.address, Address.city)
        let person = Person(backend)
        var changes: [ObservedChange<String>] = []
        let token = person.observe(\.address?.city, options: [.initial, .old, .new]) { _, change in changes.append(change) }
        person.address = Address(backend, city: "Paris")
        person.address?.city = "Lyon"
        person.address = nil
        #expect(changes.map(\.isInitial) == [true, false, false, false])
        #expect(changes.map(\.newValue) == [nil, "Paris", "Lyon", nil])
        #expect(changes.dropFirst().map(\.oldValue) == [nil, "Paris", "Lyon"])
        token.cancel()
    }

    @Test("the README's chain example prints what its comments say", arguments: ObservationBackend.allCases)
    func readmeChainExample(backend: ObservationBackend) {
        _ = (Person.address, Address.city)
        let person = Person(backend)
        var printed: [String] = []
        // As in README "Key path chains" (print joins its items with spaces).
        let cityToken = person.observe(\.address?.city, options: [.old, .new]) { person, change in
            printed.append([change.oldValue ?? "nil", "->", change.newValue ?? "nil"].joined(separator: " "))
        }
        person.address = Address(backend, city: "Paris")    // nil -> Paris
        person.address?.city = "Lyon"                       // Paris -> Lyon
        #expect(printed == ["nil -> Paris", "Paris -> Lyon"])
        cityToken.cancel()
    }

    @Test("a change stream of an optional property yields String?", arguments: ObservationBackend.allCases)
    func stream(backend: ObservationBackend) async {
        let person = Person(backend)
        let changes = person.changes(for: \.nickname, options: [.old, .new])
        person.nickname = "Ada"
        person.nickname = nil
        var values: [String?] = []
        for await change in changes {
            values.append(change.newValue)
            if values.count == 2 { break }
        }
        #expect(values == ["Ada", nil])
    }

    @Test("the main-actor and actor forms, and element changes, give String?")
    @MainActor
    func isolatedFormsAndElementChanges() async {
        let person = Person(.c)
        let log = NicknameLog()
        var onMain: [String?] = []
        let mainToken = person.observe(\.nickname, on: MainActor.shared) { change in onMain.append(change.newValue) }
        let actorToken = person.observe(\.nickname, on: log) { log, change in log.add(change.newValue) }
        let people = ObservableArray([person], backend: .c)
        var fromElements: [String?] = [], anyForm: [String] = []
        let arrayToken = people.observe(options: [.old, .new], elementKeyPaths: [\Person.nickname]) { _, change in
            if let (old, new) = change.elementChange(for: \Person.nickname) {
                let typed: (String?, String?) = (old, new)
                fromElements.append(typed.0)
                fromElements.append(typed.1)
                // The Any form unwraps one level too: it prints "Ada", and is nil for a nil property.
                anyForm.append(change.elementNewValue.map { "\($0)" } ?? "nil")
            }
        }
        person.nickname = "Ada"
        person.nickname = nil
        #expect(fromElements == [nil, "Ada", "Ada", nil])
        #expect(anyForm == ["Ada", "nil"])
        for _ in 0..<10_000 {   // bounded wait for the asynchronous deliveries
            if onMain.count >= 2, await log.values.count >= 2 { break }
            try? await Task.sleep(for: .milliseconds(1))
        }
        #expect(onMain == ["Ada", nil])
        #expect(await log.values == ["Ada", nil])
        [mainToken, actorToken, arrayToken].forEach { $0.cancel() }
    }
}

actor NicknameLog {
    private(set) var values: [String?] = []
    func add(_ value: String?) { values.append(value) }
}
