import Dispatch
@_spi(Testing) import ObserveCore
import Testing

@Suite("Key path chains", .serialized)
struct KeyPathChainTests {
    @Test("a subclass's key path for a base-class property is the base's key", arguments: ObservationBackend.allCases)
    func subclassKeyPaths(backend: ObservationBackend) {
        let car = Car(backend)
        let log = Log<String>()
        let speed = car.observe(\.speed, options: [.old, .new, .prior]) { observed, change in
            #expect(observed === car)
            log.append(change.isPrior ? "prior \(change.oldValue!)" : "\(change.oldValue!) -> \(change.newValue!)")
        }
        let doors = car.observe(\.doors, options: [.new]) { _, change in log.append("doors \(change.newValue!)") }
        car.speed = 30
        car.doors = 2
        #expect(log.events == ["prior 0", "0 -> 30", "doors 2"])
        speed.cancel()
        car.speed = 50
        #expect(log.events.count == 3, "a cancelled subclass key path hears nothing")
        #expect(car.observationCount == 1, "only the doors observation is left")
        doors.cancel()
        #expect(car.observationCount == 0)
    }

    @Test("a chain through a link typed as a subclass reaches the base class's keys", arguments: ObservationBackend.allCases)
    func chainsThroughSubclassLinks(backend: ObservationBackend) {
        let garage = Garage(backend)
        let log = Log<String>()
        let token = garage.observe(\.car?.speed, options: [.old, .new]) { _, change in
            log.append("\(change.oldValue.map(String.init) ?? "nil") -> \(change.newValue.map(String.init) ?? "nil")")
        }
        let first = Car(backend), second = Car(backend)
        second.speed = 90
        garage.car = first
        first.speed = 10
        garage.car = second
        first.speed = 20                      // no longer the garage's car
        garage.car = nil
        #expect(log.events == ["nil -> 0", "0 -> 10", "10 -> 90", "90 -> nil"])
        let owner = Building(backend, name: "Ada")
        let owners = second.observe(\.owner?.name) { _, change in log.append("owner \(change.newValue ?? "nil")") }
        second.owner = owner
        owner.name = "Grace"
        #expect(log.events.suffix(2) == ["owner Ada", "owner Grace"], "a subclass-rooted chain through a base-class link")
        token.cancel()
        owners.cancel()
        #expect(first.observationCount == 0 && second.observationCount == 0 && owner.observationCount == 0)
    }

    @Test("a chain reports changes of the last property", arguments: ObservationBackend.allCases)
    func chainReportsLeafChanges(backend: ObservationBackend) {
        let paris = Office(backend, city: "Paris")
        let ada = Employee(backend, first: "Ada", office: paris)
        let log = Log<(String?, String?)>()
        let token = ada.observe(\.office.city, options: [.old, .new]) { employee, change in
            #expect(employee === ada)
            log.append((change.oldValue, change.newValue))
        }
        paris.city = "Lyon"
        paris.city = "Lille"
        #expect(log.events.map(\.0) == ["Paris", "Lyon"])
        #expect(log.events.map(\.1) == ["Lyon", "Lille"])
        token.cancel()
    }

    @Test("replacing a link re-wires: the new object is observed, the old one is not", arguments: ObservationBackend.allCases)
    func replacingALinkRewires(backend: ObservationBackend) {
        let paris = Office(backend, city: "Paris"), rome = Office(backend, city: "Rome")
        let ada = Employee(backend, office: paris)
        let log = Log<String>()
        let token = ada.observe(\.office.city, options: [.old, .new]) { _, change in
            log.append("\(change.oldValue!) -> \(change.newValue!)")
        }
        ada.office = rome                       // the city changes with the office
        #expect(log.events == ["Paris -> Rome"])
        paris.city = "Marseille"                // the old office: nothing
        #expect(log.events == ["Paris -> Rome"])
        rome.city = "Milan"                     // the new office: reported
        #expect(log.events == ["Paris -> Rome", "Rome -> Milan"])
        #expect(paris.observationCount == 0, "nothing is left registered on the old office")
        token.cancel()
    }

    @Test("re-wiring to an object with the same value, or to the same object, reports nothing", arguments: ObservationBackend.allCases)
    func rewiringWithoutAValueChangeIsSilent(backend: ObservationBackend) {
        let first = Office(backend, city: "Oslo"), twin = Office(backend, city: "Oslo")
        let ada = Employee(backend, office: first)
        var calls = 0
        let token = ada.observe(\.office.city) { _, _ in calls += 1 }
        ada.office = twin
        ada.office = twin
        #expect(calls == 0)
        first.city = "Bergen"
        #expect(calls == 0, "the first office is no longer observed")
        twin.city = "Bergen"
        #expect(calls == 1)
        token.cancel()
    }

    @Test("an optional link: nil reports nil values, not a crash", arguments: ObservationBackend.allCases)
    func optionalLinkReportsNil(backend: ObservationBackend) {
        let paris = Office(backend, city: "Paris")
        let ada = Employee(backend, office: paris)
        var changes: [ObservedChange<String>] = []
        let token = ada.observe(\.formerOffice?.city, options: [.initial, .old, .new]) { _, change in changes.append(change) }
        #expect(changes.count == 1 && changes[0].isInitial && changes[0].newValue == nil)
        ada.formerOffice = paris                // nil -> Paris
        paris.city = "Lyon"                     // Paris -> Lyon
        ada.formerOffice = nil                  // Lyon -> nil
        paris.city = "Nice"                     // not wired any more
        ada.formerOffice = nil                  // nil -> nil: same value, silent
        #expect(changes.dropFirst().map(\.oldValue) == [nil, "Paris", "Lyon"])
        #expect(changes.dropFirst().map(\.newValue) == ["Paris", "Lyon", nil])
        #expect(paris.observationCount == 0)
        token.cancel()
    }

    @Test("an optional leaf value through an optional link is not doubly wrapped", arguments: ObservationBackend.allCases)
    func optionalLeafThroughOptionalLink(backend: ObservationBackend) {
        let office = Office(backend, city: "x")
        let mentor = Employee(backend, office: office)
        let ada = Employee(backend, office: office)
        var seen: [String?] = []
        let token = ada.observe(\.mentor?.note, options: [.new]) { _, change in seen.append(change.newValue) }
        ada.mentor = mentor                     // nil -> nil (mentor has no note): same value, silent
        mentor.note = "kind"
        mentor.note = nil
        ada.mentor = nil
        #expect(seen == ["kind", nil])
        token.cancel()
    }

    @Test("chains of depth three, each link replaced", arguments: ObservationBackend.allCases)
    func depthThreeChain(backend: ObservationBackend) {
        let north = Building(backend, name: "North"), south = Building(backend, name: "South")
        let paris = Office(backend, city: "Paris", building: north)
        let rome = Office(backend, city: "Rome", building: nil)
        let ada = Employee(backend, office: paris)
        let log = Log<String>()
        let token = ada.observe(\.office.building?.name, options: [.old, .new]) { _, change in
            log.append("\(change.oldValue!.map { $0 } ?? "nil") -> \(change.newValue!.map { $0 } ?? "nil")")
        }
        north.name = "North Tower"              // leaf
        paris.building = south                  // middle link
        north.name = "ignored"                  // no longer wired
        ada.office = rome                       // first link: Rome has no building
        rome.building = north                   // nil link filled in
        south.name = "ignored too"
        north.name = "N"
        #expect(log.events == ["North -> North Tower", "North Tower -> South", "South -> nil", "nil -> ignored",
                               "ignored -> N"])
        #expect(south.observationCount == 0 && paris.observationCount == 0)
        token.cancel()
    }

    @Test("a leaf change through an optional link, with prior notifications", arguments: ObservationBackend.allCases)
    func leafThroughAnOptionalLinkWithPrior(backend: ObservationBackend) {
        let north = Building(backend, name: "North")
        let paris = Office(backend, city: "Paris", building: north)
        let ada = Employee(backend, office: paris)
        let log = Log<String>()
        // An optional key path: the change's values are String? (flattened), nil when the link is.
        let token = ada.observe(\.office.building?.name, options: [.prior, .old, .new]) { employee, change in
            log.append("\(change.isPrior ? "prior" : "after") \(change.oldValue ?? "nil") \(change.newValue ?? "nil")"
                       + " now=\(employee.office.building?.name ?? "nil")")
        }
        north.name = "North Tower"              // the leaf, through the optional link's adapter
        paris.building = nil                    // the link
        #expect(log.events == ["prior North nil now=North", "after North North Tower now=North Tower",
                               "prior North Tower nil now=North Tower", "after North Tower nil now=nil"])
        token.cancel()
        #expect(north.observationCount == 0 && paris.observationCount == 0)
    }

    @Test("chains through the same class several times", arguments: ObservationBackend.allCases)
    func chainThroughTheSameClass(backend: ObservationBackend) {
        let office = Office(backend, city: "Paris")
        let grand = Employee(backend, first: "Grand", office: office)
        let mentor = Employee(backend, first: "Mentor", office: office)
        let ada = Employee(backend, first: "Ada", office: office)
        mentor.mentor = grand
        var names: [String?] = []
        let token = ada.observe(\.mentor?.mentor?.firstName) { _, change in names.append(change.newValue) }
        ada.mentor = mentor                    // nil -> Grand
        grand.firstName = "Grandma"
        mentor.mentor = nil                    // -> nil
        #expect(names == ["Grand", "Grandma", nil])
        token.cancel()
    }

    @Test("options work on chains: initial, prior, skipEqualValues, queue delivery", arguments: ObservationBackend.allCases)
    func optionsWorkOnChains(backend: ObservationBackend) {
        let paris = Office(backend, city: "Paris"), rome = Office(backend, city: "Rome")
        let ada = Employee(backend, office: paris)
        var events: [String] = []
        let prior = ada.observe(\.office.city, options: [.prior, .old, .new]) { employee, change in
            events.append("\(change.isPrior ? "prior" : "after") \(change.oldValue ?? "-") \(change.newValue ?? "-") now=\(employee.office.city)")
        }
        paris.city = "Lyon"
        ada.office = rome
        #expect(events == ["prior Paris - now=Paris", "after Paris Lyon now=Lyon",
                           "prior Lyon - now=Lyon", "after Lyon Rome now=Rome"])
        prior.cancel()

        var skipped: [String?] = []
        let skip = ada.observe(\.office.city, options: [.new, .skipEqualValues]) { _, change in skipped.append(change.newValue) }
        rome.city = "Rome"
        rome.city = "Milan"
        #expect(skipped == ["Milan"])
        skip.cancel()

        let queue = DispatchQueue(label: "chains.delivery")
        let log = Log<String>()
        let queued = ada.observe(\.office.city, delivery: .queue(queue)) { _, change in log.append(change.newValue!) }
        rome.city = "Turin"
        ada.office = paris
        queue.sync {}
        #expect(log.events == ["Turin", "Lyon"])
        queued.cancel()
    }

    @Test("observer-tagged registration and removal by key path", arguments: ObservationBackend.allCases)
    func observerTaggedChains(backend: ObservationBackend) {
        let paris = Office(backend, city: "Paris")
        let ada = Employee(backend, office: paris)
        let watcher = Watcher()
        ada.addObserver(watcher, for: \.office.city, context: 7) { watcher, _, change in watcher.seen.append(change.newValue!) }
        paris.city = "Lyon"
        #expect(ada.observers(for: \.office.city).count == 1)
        #expect(ada.observedKeyPaths.contains(\Employee.office.city))
        ada.removeObserver(watcher, for: \.office.city, context: 7)
        paris.city = "Nice"
        #expect(watcher.seen == ["Lyon"])
        #expect(ada.observationCount == 0 && paris.observationCount == 0, "the chain's own registrations went too")
    }

    @Test("cancelling leaves nothing registered; the count returns to where it was", arguments: ObservationBackend.allCases)
    func cancellingLeavesNothing(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let north = Building(backend, name: "N")
        let paris = Office(backend, city: "Paris", building: north)
        let ada = Employee(backend, office: paris)
        let a = ada.observe(\.office.building?.name) { _, _ in }
        let b = ada.observe(\.office.building?.name) { _, _ in }
        let afterTwo = ObservationRuntime.liveRegistrationCount
        #expect(afterTwo == before + 2 + 3, "two observers share one set of chain registrations (three hops)")
        a.cancel()
        #expect(ObservationRuntime.liveRegistrationCount == before + 1 + 3)
        b.cancel()
        #expect(ObservationRuntime.liveRegistrationCount == before)
        #expect(ada.observationCount == 0 && paris.observationCount == 0 && north.observationCount == 0)
        ObservationRuntime._checkInvariants()
    }

    @Test("the root dying removes every registration of the chain", arguments: ObservationBackend.allCases)
    func rootDyingRemovesEverything(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        let paris = Office(backend, city: "Paris")
        var token: ObservationToken?
        do {
            let ada = tracker.track(Employee(backend, office: paris))
            token = ada.observe(\.office.city) { _, _ in }
            #expect(paris.observationCount == 1)
        }
        #expect(tracker.survivors.isEmpty, "a chain does not keep its root alive")
        #expect(paris.observationCount == 0)
        #expect(ObservationRuntime.liveRegistrationCount == before)
        #expect(token!.isCancelled)
    }

    @Test("a chain works as an async stream", arguments: ObservationBackend.allCases)
    func chainAsAStream(backend: ObservationBackend) async {
        let paris = Office(backend, city: "Paris"), rome = Office(backend, city: "Rome")
        let ada = Employee(backend, office: paris)
        var iterator = ada.changes(for: \.office.city).makeAsyncIterator()
        paris.city = "Lyon"
        ada.office = rome
        let first = await iterator.next(), second = await iterator.next()
        #expect(first?.newValue == "Lyon" && second?.newValue == "Rome")
    }

    @Test("a class that does not list its keys works once they exist", arguments: ObservationBackend.allCases)
    func unlistedClassesWorkOnceTheirKeysExist(backend: ObservationBackend) {
        // Person and Address (Support/Models.swift) do not conform to ObservableKeyListing; reading
        // their keys once creates them, and chains can then find them.
        _ = (Person.address, Address.city)
        let person = Person(backend)
        let home = Address(backend, city: "Paris")
        var cities: [String?] = []
        let token = person.observe(\.address?.city) { _, change in cities.append(change.newValue) }
        person.address = home
        home.city = "Lyon"
        #expect(cities == ["Paris", "Lyon"])
        token.cancel()
    }

    @Test("a key path chain that cannot be resolved stops with a message")
    func unresolvableChainStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let office = Office(.c, city: "Paris")
            let ada = Employee(.c, office: office)
            _ = ada.observe(\.office.city.count) { _, _ in }   // String is not observable
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("ObserveCore: cannot observe"), "the message names the mistake")
        #expect(message.contains("ObservableKeyListing"), "and says what to do")
    }
}
