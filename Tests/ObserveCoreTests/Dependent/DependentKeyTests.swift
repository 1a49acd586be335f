@_spi(Testing) @testable import ObserveCore
import Synchronization
import Testing

@Suite("Dependent keys", .serialized)
struct DependentKeyTests {
    @Test("observers of a dependent key hear one change per set, with recomputed values", arguments: ObservationBackend.allCases)
    func oneChangePerSet(backend: ObservationBackend) {
        let ada = Employee(backend, first: "Ada", last: "Byron", office: Office(backend, city: "London"))
        var changes: [String] = []
        let token = ada.observe(\.fullName, options: [.old, .new]) { _, change in
            changes.append("\(change.oldValue!) -> \(change.newValue!)")
        }
        ada.lastName = "Lovelace"
        ada.firstName = "Augusta Ada"
        ada.firstName = "Augusta Ada"            // a set to the same value is still a set
        #expect(changes == ["Ada Byron -> Ada Lovelace", "Ada Lovelace -> Augusta Ada Lovelace",
                            "Augusta Ada Lovelace -> Augusta Ada Lovelace"])
        token.cancel()
        ada.firstName = "A."
        #expect(changes.count == 3)
    }

    @Test("an object observed through a dependent key dies when released; its driver goes with it",
          arguments: ObservationBackend.allCases)
    func observedObjectDiesWithItsDriver(backend: ObservationBackend) {
        // The driver holds its object unowned (`_UnownedReference`), not weakly: it must neither
        // keep the object alive nor stay in the drivers' table after it. Nothing here holds the
        // object weakly (that would give it the side table the driver no longer does).
        let registrationsBefore = ObservationRuntime.liveRegistrationCount
        let driversBefore = _DerivedDrivers.shared.liveCount.load(ordering: .relaxed)
        var heard: [String] = []
        var token: ObservationToken?
        do {
            let ada = Employee(backend, first: "Ada", last: "Byron", office: Office(backend, city: "London"))
            token = ada.observe(\.fullName, options: [.new]) { _, change in heard.append(change.newValue!) }
            #expect(_DerivedDrivers.shared.liveCount.load(ordering: .relaxed) == driversBefore + 1)
            #expect(ObservationRuntime.liveRegistrationCount == registrationsBefore + 3,
                    "the observer's, and the driver's on two dependencies")
            ada.lastName = "Lovelace"
        }
        #expect(ObservationRuntime.liveRegistrationCount == registrationsBefore,
                "the object died (its registrations went with it): the driver did not keep it alive")
        #expect(_DerivedDrivers.shared.liveCount.load(ordering: .relaxed) == driversBefore,
                "the driver left the table with its object")
        #expect(heard == ["Ada Lovelace"])
        token?.cancel()
    }

    @Test("skipEqualValues on a dependent key skips sets that do not change it", arguments: ObservationBackend.allCases)
    func skipEqualValuesOnADependentKey(backend: ObservationBackend) {
        let ada = Employee(backend, first: "Ada", last: "Lovelace", office: Office(backend, city: "London"))
        var lengths: [Int?] = []
        let token = ada.observe(\.fullNameLength, options: [.new, .skipEqualValues]) { _, change in lengths.append(change.newValue) }
        ada.firstName = "Eva"                     // same length: skipped
        ada.firstName = "Augusta"
        #expect(lengths == [16])
        token.cancel()
    }

    @Test("a dependency through a chain: replacing the link reports, the old object does not", arguments: ObservationBackend.allCases)
    func dependencyThroughAChain(backend: ObservationBackend) {
        let london = Office(backend, city: "London"), paris = Office(backend, city: "Paris")
        let ada = Employee(backend, first: "Ada", last: "Lovelace", office: london)
        var badges: [String] = []
        let token = ada.observe(\.badge, options: [.new]) { _, change in badges.append(change.newValue!) }
        london.city = "Londinium"
        ada.office = paris
        london.city = "ignored"
        paris.city = "Lutetia"
        ada.lastName = "King"                     // through fullName, itself dependent
        #expect(badges == ["Ada Lovelace @ Londinium", "Ada Lovelace @ Paris", "Ada Lovelace @ Lutetia",
                           "Ada King @ Lutetia"])
        #expect(london.observationCount == 0)
        token.cancel()
        #expect(ada.observationCount == 0 && paris.observationCount == 0, "every internal registration went")
    }

    @Test("a dependent key through an optional chain", arguments: ObservationBackend.allCases)
    func dependentThroughAnOptionalChain(backend: ObservationBackend) {
        let office = Office(backend, city: "Paris")
        var labels: [String] = []
        let token = office.observe(\.label) { _, change in labels.append(change.newValue!) }
        let tower = Building(backend, name: "Tower")
        office.building = tower
        tower.name = "Spire"
        office.building = nil
        office.city = "Lyon"
        #expect(labels == ["Tower, Paris", "Spire, Paris", "?, Paris", "?, Lyon"])
        token.cancel()
    }

    @Test("prior notifications of a dependent key carry the value before the change", arguments: ObservationBackend.allCases)
    func priorOnADependentKey(backend: ObservationBackend) {
        let ada = Employee(backend, first: "Ada", last: "Byron", office: Office(backend, city: "London"))
        var events: [String] = []
        let token = ada.observe(\.fullName, options: [.prior, .old, .new]) { _, change in
            events.append(change.isPrior ? "prior \(change.oldValue!)" : "after \(change.newValue!)")
        }
        ada.lastName = "Lovelace"
        #expect(events == ["prior Ada Byron", "after Ada Lovelace"])
        token.cancel()
    }

    @Test("several observers share one set of internal registrations, gone with the last", arguments: ObservationBackend.allCases)
    func observersShareInternalRegistrations(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let ada = Employee(backend, first: "Ada", last: "Byron", office: Office(backend, city: "London"))
        var calls = 0
        let tokens = (0..<5).map { _ in ada.observe(\.fullName) { _, _ in calls += 1 } }
        #expect(ada.observationCount == 5 + 2, "five observers and one registration per dependency")
        Employee.fullNameReads = 0
        ada.firstName = "Augusta"
        #expect(calls == 5)
        #expect(Employee.fullNameReads == 1, "recomputed once per set, whatever the number of observers")
        tokens.dropLast().forEach { $0.cancel() }
        #expect(ada.observationCount == 1 + 2)
        tokens.last!.cancel()
        #expect(ada.observationCount == 0)
        #expect(ObservationRuntime.liveRegistrationCount == before)
    }

    @Test("removeAllObservers(for:) on a dependent key removes its internal registrations", arguments: ObservationBackend.allCases)
    func removeAllObserversForADependentKey(backend: ObservationBackend) {
        let ada = Employee(backend, first: "Ada", last: "Byron", office: Office(backend, city: "London"))
        let watcher = Watcher()
        ada.addObserver(watcher, for: \.fullName) { w, _, _ in w.count += 1 }
        ada.addObserver(watcher, for: \.fullName, context: 2) { w, _, _ in w.count += 1 }
        ada.removeAllObservers(for: \.fullName)
        #expect(ada.observationCount == 0)
        ada.firstName = "x"
        #expect(watcher.count == 0)
    }

    @Test("a dependent key works as an async stream", arguments: ObservationBackend.allCases)
    func dependentKeyAsAStream(backend: ObservationBackend) async {
        let ada = Employee(backend, first: "Ada", last: "Byron", office: Office(backend, city: "London"))
        var iterator = ada.changes(for: \.fullName, options: [.old, .new]).makeAsyncIterator()
        ada.lastName = "Lovelace"
        let change = await iterator.next()
        #expect(change?.oldValue == "Ada Byron" && change?.newValue == "Ada Lovelace")
    }

    @Test("the object dying removes a dependent key's registrations", arguments: ObservationBackend.allCases)
    func objectDyingRemovesEverything(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        let london = Office(backend, city: "London")
        do {
            let ada = tracker.track(Employee(backend, office: london))
            let watcher = ObservableWatcher(backend)
            ada.addObserver(watcher, for: \.badge) { _, _, _ in }
            ada.addObserver(watcher, for: \.office.city) { _, _, _ in }
            _ = ada.observe(\.fullName) { _, _ in }     // token released at once
            #expect(london.observationCount == 1, "the badge's dependency and the direct observer share one chain")
        }
        #expect(tracker.survivors.isEmpty)
        #expect(london.observationCount == 0)
        #expect(ObservationRuntime.liveRegistrationCount == before)
    }

    @Test("a dependent key declared with read: is read through the closure, prior values included",
          arguments: ObservationBackend.allCases)
    func dependentKeyWithAReader(backend: ObservationBackend) {
        let box = ReadCountingBox(backend, width: 2, height: 3)
        var events: [String] = []
        let token = box.observe(\.area, options: [.prior, .old, .new]) { _, change in
            events.append(change.isPrior ? "prior \(change.oldValue!)" : "\(change.oldValue!) -> \(change.newValue!)")
        }
        let readsAfterWiring = box.reads
        box.width = 4
        box.height = 5
        #expect(events == ["prior 6", "6 -> 12", "prior 12", "12 -> 20"])
        #expect(box.reads == readsAfterWiring + 2, "one read per change, through the declared closure")
        token.cancel()
        #expect(box.observationCount == 0)
    }

    @Test("a dependent key's kept value is released exactly once through rewiring (.prior added) and unwiring",
          arguments: ObservationBackend.allCases)
    func keptValueLifetime(backend: ObservationBackend) {
        let before = Badge.live.load(ordering: .relaxed)
        do {
            let box = ReadCountingBox(backend, width: 1, height: 1)
            var seen: [Int] = []
            let plain = box.observe(\.badge, options: [.new]) { _, change in seen.append(change.newValue!.area) }
            box.width = 2
            // A .prior observer makes the driver wire again while it keeps a value.
            let prior = box.observe(\.badge, options: [.prior, .old]) { _, change in
                if change.isPrior { seen.append(-change.oldValue!.area) }
            }
            box.height = 3
            #expect(seen == [2, -2, 6])
            plain.cancel()
            prior.cancel()
            box.width = 4
            #expect(seen == [2, -2, 6])
            #expect(box.observationCount == 0)
        }
        #expect(Badge.live.load(ordering: .relaxed) == before, "every badge read was released, none twice")
    }

    @Test("an optional dependent value: a nil kept value is announced as the old value, not taken for no value",
          arguments: ObservationBackend.allCases)
    func optionalDependentValue(backend: ObservationBackend) {
        let box = ReadCountingBox(backend, width: 0, height: 1)
        var changes: [String] = []
        let token = box.observe(\.label, options: [.old, .new]) { _, change in
            changes.append("\(change.oldValue!.map { "'\($0)'" } ?? "nil") -> \(change.newValue!.map { "'\($0)'" } ?? "nil")")
        }
        box.width = 2
        box.height = 0
        box.height = 0
        #expect(changes == ["nil -> '2x1'", "'2x1' -> nil", "nil -> nil"])
        token.cancel()

        // A prior notification carries the kept value, nil included.
        var priors: [String] = []
        let prior = box.observe(\.label, options: [.prior, .old]) { _, change in
            if change.isPrior { priors.append(change.oldValue!.map { "'\($0)'" } ?? "nil") }
        }
        box.width = 3
        box.height = 1
        #expect(priors == ["nil", "nil"], "kept nil while the area stays 0, then nil before 3x1")
        box.height = 2
        #expect(priors == ["nil", "nil", "'3x1'"])
        prior.cancel()
    }
}

/// A dependent value that is an object: `live` counts the instances alive.
private final class Badge: Sendable {
    static let live = Atomic<Int>(0)
    let area: Int
    init(area: Int) {
        self.area = area
        Badge.live.add(1, ordering: .relaxed)
    }
    deinit { Badge.live.subtract(1, ordering: .relaxed) }
}

/// A dependent key declared with `read:`: the closure counts its calls, so a driver reading
/// through the key path instead would leave the count unchanged.
private final class ReadCountingBox: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [width, height, area, badge, label]
    init(_ backend: ObservationBackend, width: Int, height: Int) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.width = width
        self.height = height
    }
    var reads = 0
    static let width = ObservableKey(\ReadCountingBox.width)
    var width: Int {
        willSet { kvoRegistrar.willSet(ReadCountingBox.width, of: self, from: width) }
        didSet { kvoRegistrar.didSet(ReadCountingBox.width, of: self, from: oldValue, to: width) }
    }
    static let height = ObservableKey(\ReadCountingBox.height)
    var height: Int {
        willSet { kvoRegistrar.willSet(ReadCountingBox.height, of: self, from: height) }
        didSet { kvoRegistrar.didSet(ReadCountingBox.height, of: self, from: oldValue, to: height) }
    }
    static let area = ObservableKey(\ReadCountingBox.area, dependsOn: [\.width, \.height], read: { box in
        box.reads += 1
        return box.area
    })
    var area: Int { width * height }
    static let badge = ObservableKey(\ReadCountingBox.badge, dependsOn: [\.width, \.height], read: { $0.badge })
    var badge: Badge { Badge(area: area) }
    /// Nil while the box is empty: a dependent value that is itself optional.
    static let label = ObservableKey(\ReadCountingBox.label, dependsOn: [\.width, \.height], read: { $0.label })
    var label: String? { area == 0 ? nil : "\(width)x\(height)" }
}
