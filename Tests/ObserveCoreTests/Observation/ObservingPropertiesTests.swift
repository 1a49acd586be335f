@_spi(Testing) import ObserveCore
import Testing

@Suite("Observing properties")
struct ObservingPropertiesTests {
    @Test("observe reports typed old and new values", arguments: ObservationBackend.allCases)
    func observeReportsTypedOldAndNewValues(backend: ObservationBackend) {
        let person = Person(backend, name: "Ada")
        let log = Log<(String?, String?)>()
        let token = person.observe(\.name, options: [.old, .new]) { _, change in
            log.append((change.oldValue, change.newValue))
        }
        person.name = "Grace"
        person.name = "Barbara"
        #expect(log.events.map(\.0) == ["Ada", "Grace"])
        #expect(log.events.map(\.1) == ["Grace", "Barbara"])
        token.cancel()
    }

    @Test("every kind of value type arrives typed", arguments: ObservationBackend.allCases)
    func everyKindOfValueArrivesTyped(backend: ObservationBackend) {
        let person = Person(backend)
        var ints: [Int?] = [], doubles: [Double?] = [], bools: [Bool?] = []
        var points: [Point?] = [], nicknames: [String?] = [], blobs: [[UInt8]?] = []
        var addresses: [Address?] = []
        let tokens = [
            person.observe(\.age, options: [.new]) { _, c in ints.append(c.newValue) },
            person.observe(\.score, options: [.new]) { _, c in doubles.append(c.newValue) },
            person.observe(\.isActive, options: [.new]) { _, c in bools.append(c.newValue) },
            person.observe(\.position, options: [.new]) { _, c in points.append(c.newValue) },
            person.observe(\.nickname, options: [.old, .new]) { _, c in nicknames.append(c.oldValue); nicknames.append(c.newValue) },
            person.observe(\.blob, options: [.new]) { _, c in blobs.append(c.newValue?.bytes) },
            person.observe(\.address, options: [.new]) { _, c in addresses.append(c.newValue) },
        ]
        let home = Address(backend, city: "Paris")
        person.age = 36
        person.score = 2.5
        person.isActive = true
        person.position = Point(x: 3, y: 4)
        person.nickname = "Countess"
        person.nickname = nil
        person.blob = Blob(bytes: [1, 2])
        person.address = home
        #expect(ints == [36])
        #expect(doubles == [2.5])
        #expect(bools == [true])
        #expect(points == [Point(x: 3, y: 4)])
        // An optional property's change holds `String?` values: nil when the property was nil.
        #expect(nicknames == [nil, "Countess", "Countess", nil])
        #expect(blobs == [[1, 2]])
        #expect(addresses.count == 1 && addresses[0] === home)
        tokens.forEach { $0.cancel() }
    }

    @Test("without .old or .new the change carries no values", arguments: ObservationBackend.allCases)
    func withoutOptionsTheChangeCarriesNoValues(backend: ObservationBackend) {
        let person = Person(backend)
        var changes: [ObservedChange<Int>] = []
        let noValues = person.observe(\.age, options: []) { _, change in changes.append(change) }
        person.age = 5
        #expect(changes.count == 1)
        #expect(changes[0].oldValue == nil && changes[0].newValue == nil)
        noValues.cancel()

        changes = []
        let oldOnly = person.observe(\.age, options: [.old]) { _, change in changes.append(change) }
        person.age = 6
        #expect(changes.map(\.oldValue) == [5] && changes[0].newValue == nil)
        oldOnly.cancel()
    }

    @Test(".initial calls the handler once at registration with the current value", arguments: ObservationBackend.allCases)
    func initialCallsAtRegistration(backend: ObservationBackend) {
        let person = Person(backend, name: "Ada")
        var changes: [ObservedChange<String>] = []
        let token = person.observe(\.name, options: [.initial, .new]) { _, change in changes.append(change) }
        #expect(changes.count == 1)
        #expect(changes[0].isInitial && changes[0].newValue == "Ada" && changes[0].oldValue == nil)
        person.name = "Grace"
        #expect(changes.count == 2 && !changes[1].isInitial && changes[1].newValue == "Grace")
        token.cancel()
    }

    @Test(".prior notifies before the change, while the object still holds the old value", arguments: ObservationBackend.allCases)
    func priorNotifiesBeforeTheChange(backend: ObservationBackend) {
        let person = Person(backend, age: 1)
        var events: [String] = []
        let token = person.observe(\.age, options: [.prior, .old, .new]) { person, change in
            events.append("\(change.isPrior ? "prior" : "after") old=\(change.oldValue.map(String.init) ?? "nil") "
                          + "new=\(change.newValue.map(String.init) ?? "nil") current=\(person.age)")
        }
        person.age = 2
        #expect(events == ["prior old=1 new=nil current=1", "after old=1 new=2 current=2"])
        token.cancel()
    }

    @Test("observers without .prior are not called before the change", arguments: ObservationBackend.allCases)
    func observersWithoutPriorAreNotCalledBefore(backend: ObservationBackend) {
        let person = Person(backend)
        var calls: [Bool] = []
        let plain = person.observe(\.age) { _, change in calls.append(change.isPrior) }
        let prior = person.observe(\.age, options: [.prior]) { _, change in calls.append(change.isPrior) }
        person.age = 3
        #expect(calls.sorted { !$0 && $1 } .count == 3)
        #expect(calls.filter { $0 }.count == 1)
        plain.cancel(); prior.cancel()
        person.age = 4
        #expect(calls.count == 3)
    }

    @Test(".skipEqualValues skips sets to an equal value", arguments: ObservationBackend.allCases)
    func skipEqualValuesSkipsEqualSets(backend: ObservationBackend) {
        let person = Person(backend, name: "Ada")
        var skipping: [String?] = [], all: [String?] = []
        let a = person.observe(\.name, options: [.new, .skipEqualValues]) { _, c in skipping.append(c.newValue) }
        let b = person.observe(\.name, options: [.new]) { _, c in all.append(c.newValue) }
        person.name = "Ada"
        person.name = "Grace"
        person.name = "Grace"
        #expect(skipping == ["Grace"])
        #expect(all == ["Ada", "Grace", "Grace"])
        var nicknames: [String?] = []
        let c = person.observe(\.nickname, options: [.new, .skipEqualValues]) { _, ch in nicknames.append(ch.newValue) }
        person.nickname = nil          // nil == nil: skipped
        person.nickname = "G"
        #expect(nicknames == ["G"])
        var points: [Point?] = []
        let d = person.observe(\.position, options: [.new, .skipEqualValues]) { _, ch in points.append(ch.newValue) }
        person.position = Point(x: 0, y: 0)
        person.position = Point(x: 1, y: 0)
        #expect(points == [Point(x: 1, y: 0)])
        [a, b, c, d].forEach { $0.cancel() }
    }

    @Test("cancelling or releasing the token stops the observation", arguments: ObservationBackend.allCases)
    func cancellingOrReleasingTheTokenStops(backend: ObservationBackend) {
        let person = Person(backend)
        var calls = 0
        let token = person.observe(\.age) { _, _ in calls += 1 }
        person.age = 1
        token.cancel()
        #expect(token.isCancelled)
        person.age = 2
        token.cancel()   // twice: no-op
        #expect(calls == 1)

        var released: ObservationToken? = person.observe(\.age) { _, _ in calls += 1 }
        person.age = 3
        #expect(calls == 2)
        released = nil
        person.age = 4
        #expect(calls == 2 && released == nil)
        #expect(person.observationCount == 0)
    }

    @Test("several key paths in one call report which one changed", arguments: ObservationBackend.allCases)
    func severalKeyPathsReportWhichChanged(backend: ObservationBackend) {
        let person = Person(backend)
        var seen: [(KeyPath<Person, String>, String?)] = []
        let token = person.observe([\.name, \.name]) { _, keyPath, change in seen.append((keyPath, change.newValue)) }
        // The same key path listed twice makes two token registrations, as two observe calls would.
        person.name = "x"
        #expect(seen.count == 2 && seen.allSatisfy { $0.0 == \Person.name && $0.1 == "x" })
        token.cancel()

        var mixed: [(PartialKeyPath<Person>, String)] = []
        let erased = person.observe([\.age, \.nickname, \.position] as [PartialKeyPath<Person>], options: [.old, .new]) {
            _, keyPath, change in mixed.append((keyPath, "\(change.oldValue ?? "-")->\(change.newValue ?? "-")"))
        }
        person.age = 7
        person.nickname = "N"
        person.position = Point(x: 1, y: 2)
        #expect(mixed.map(\.0) == [\Person.age, \Person.nickname, \Person.position])
        #expect(mixed.map(\.1) == ["0->7", "nil->Optional(\"N\")", "(0, 0)->(1, 2)"])
        erased.cancel()
        person.age = 8
        #expect(mixed.count == 3)
    }

    @Test("several observers of one property are all called, in registration order", arguments: ObservationBackend.allCases)
    func severalObserversAreAllCalled(backend: ObservationBackend) {
        let person = Person(backend)
        var order: [Int] = []
        let tokens = (0..<10).map { i in person.observe(\.age) { _, _ in order.append(i) } }
        person.age = 1
        #expect(order == Array(0..<10))
        tokens[3].cancel()
        order = []
        person.age = 2
        #expect(order == [0, 1, 2, 4, 5, 6, 7, 8, 9])
        tokens.forEach { $0.cancel() }
    }

    @Test("observers of one property that ask for different values each get exactly theirs",
          arguments: ObservationBackend.allCases)
    func observersWithDifferentOptionsGetTheirOwnValues(backend: ObservationBackend) {
        // One set delivers to registrations in order; the change value is shared between
        // neighbours that ask for the same values and rebuilt when the next one asks for others.
        let person = Person(backend, name: "Ada")
        let asked: [ObservationOptions] = [[.new], [.new], [.old], [], [.old, .new], [.old, .new], [.new], []]
        var seen: [(Int, String?, String?)] = []
        let tokens = asked.enumerated().map { i, options in
            person.observe(\.name, options: options) { _, change in seen.append((i, change.oldValue, change.newValue)) }
        }
        person.name = "Grace"
        #expect(seen.map(\.0) == Array(0..<asked.count))
        for (i, old, new) in seen {
            #expect(old == (asked[i].contains(.old) ? "Ada" : nil), "observer \(i) old value")
            #expect(new == (asked[i].contains(.new) ? "Grace" : nil), "observer \(i) new value")
        }
        tokens.forEach { $0.cancel() }
    }

    @Test("a handler that cancels a later observer of the property keeps this set from reaching it",
          arguments: ObservationBackend.allCases)
    func cancellingALaterObserverDuringDelivery(backend: ObservationBackend) {
        // The set iterates the object's dispatch cache as it was when the set began; a
        // registration cancelled meanwhile is still in it and must be skipped.
        let person = Person(backend)
        var calls: [Int] = []
        var tokens: [ObservationToken] = []
        tokens.append(person.observe(\.age) { _, _ in calls.append(0); tokens[1].cancel() })
        tokens.append(person.observe(\.age) { _, _ in calls.append(1) })
        tokens.append(person.observe(\.age) { _, change in calls.append(2 + (change.newValue ?? 0) * 10) })
        person.age = 1
        #expect(calls == [0, 12])
        person.age = 2
        #expect(calls == [0, 12, 0, 22])
        tokens.forEach { $0.cancel() }
    }

    @Test("an unrelated property's set does not notify", arguments: ObservationBackend.allCases)
    func unrelatedSetDoesNotNotify(backend: ObservationBackend) {
        let person = Person(backend)
        var calls = 0
        let token = person.observe(\.age) { _, _ in calls += 1 }
        person.name = "n"
        person.score = 1
        #expect(calls == 0)
        person.age = 1
        #expect(calls == 1)
        token.cancel()
    }

    @Test("two objects of one class are observed independently", arguments: ObservationBackend.allCases)
    func twoObjectsAreIndependent(backend: ObservationBackend) {
        let a = Person(backend), b = Person(backend)
        var fromA = 0, fromB = 0
        let ta = a.observe(\.age) { _, _ in fromA += 1 }
        let tb = b.observe(\.age) { _, _ in fromB += 1 }
        a.age = 1; a.age = 2; b.age = 1
        #expect(fromA == 2 && fromB == 1)
        ta.cancel(); tb.cancel()
    }

    @Test("cancelling one key's last observer keeps the object's other keys reported; the last cancel silences it",
          arguments: ObservationBackend.allCases)
    func cancellingKeyByKeyKeepsTheOthersReported(backend: ObservationBackend) {
        let person = Person(backend)
        var heard: [String] = []
        let name = person.observe(\.name) { _, change in heard.append("name \(change.newValue!)") }
        let age = person.observe(\.age) { _, change in heard.append("age \(change.newValue!)") }
        let prior = person.observe(\.score, options: [.prior, .new]) { _, change in
            heard.append(change.isPrior ? "score prior" : "score \(change.newValue!)")
        }
        name.cancel()        // the object keeps two observed keys
        person.name = "Ada"
        person.age = 1
        prior.cancel()       // a .prior key leaves: the prior mask is recomputed, age still observed
        person.score = 2
        person.age = 2
        #expect(heard == ["age 1", "age 2"])
        age.cancel()         // the object's last observed key: nothing is left to report
        person.age = 3
        #expect(heard == ["age 1", "age 2"])
        let again = person.observe(\.age) { _, change in heard.append("again \(change.newValue!)") }
        person.age = 4
        #expect(heard == ["age 1", "age 2", "again 4"])
        again.cancel()
        ObservationRuntime._checkInvariants()
    }
}
