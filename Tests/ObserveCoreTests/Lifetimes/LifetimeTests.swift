@_spi(Testing) import ObserveCore
import Testing

/// These tests read the process-wide registration count, so the suite runs serialized and the
/// test command runs without parallelism (see README).
@Suite("Lifetimes", .serialized)
struct LifetimeTests {
    @Test("registrations die with the observed object", arguments: ObservationBackend.allCases)
    func registrationsDieWithTheObservedObject(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        let watcher = Watcher()
        var token: ObservationToken?
        do {
            let person = tracker.track(Person(backend))
            token = person.observe(\.age) { _, _ in }
            person.addObserver(watcher, for: \.name) { _, _, _ in }
            person.addObserver(watcher, for: \.age, context: 3) { _, _, _ in }
            #expect(ObservationRuntime.liveRegistrationCount == before + 3)
        }
        #expect(tracker.survivors.isEmpty, "registrations must not keep the observed object alive")
        #expect(ObservationRuntime.liveRegistrationCount == before)
        #expect(token!.isCancelled, "a token outliving its object is inert")
        token!.cancel()   // no-op, no crash
        #expect(ObservationRuntime.observations(of: watcher).isEmpty)
    }

    @Test("an observable observer's registrations die the moment it does", arguments: ObservationBackend.allCases)
    func observableObserverRegistrationsDieWithIt(backend: ObservationBackend) {
        let person = Person(backend)
        let tracker = LifetimeTracker()
        do {
            let watcher = tracker.track(ObservableWatcher(backend))
            person.addObserver(watcher, for: \.age) { w, _, _ in w.seen.append("age") }
            person.addObserver(watcher, for: \.name, context: 1) { w, _, _ in w.seen.append("name") }
            #expect(person.observationCount == 2)
        }
        #expect(tracker.survivors.isEmpty)
        #expect(person.observationCount == 0, "removed eagerly, without waiting for a change")
    }

    @Test("a plain observer's registrations go at the next change or count", arguments: ObservationBackend.allCases)
    func plainObserverRegistrationsAreSwept(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let person = Person(backend)
        var watcher: Watcher? = Watcher()
        person.addObserver(watcher!, for: \.age) { w, _, _ in w.count += 1 }
        person.addObserver(watcher!, for: \.name) { w, _, _ in w.count += 1 }
        watcher = nil
        #expect(person.observationCount == 0, "registrations of a dead observer are not counted")
        person.age = 1                        // finds the observer gone: drops that registration
        #expect(ObservationRuntime.liveRegistrationCount == before)   // the sweep drops the other
        #expect(person.observationCount == 0)
    }

    @Test("a new observer at a dead observer's address is not mistaken for a duplicate", arguments: ObservationBackend.allCases)
    func reusedObserverAddressIsNotADuplicate(backend: ObservationBackend) {
        let person = Person(backend)
        var calls = 0
        // Churn observers so that some new observer is likely to reuse a dead one's address.
        for _ in 0..<200 {
            let watcher = Watcher()
            person.addObserver(watcher, for: \.age) { _, _, _ in calls += 1 }
        }
        let last = Watcher()
        person.addObserver(last, for: \.age) { _, _, _ in calls += 1 }
        calls = 0
        person.age = 1
        #expect(calls == 1, "only the live observer is called")
        #expect(person.observationCount == 1)
    }

    @Test("handlers' captures are released with the registration", arguments: ObservationBackend.allCases)
    func capturesAreReleased(backend: ObservationBackend) {
        let tracker = LifetimeTracker()
        let person = Person(backend)
        do {
            let captured = tracker.track(Watcher(), "captured by a token handler")
            let token = person.observe(\.age) { _, _ in captured.count += 1 }
            token.cancel()
        }
        do {
            let captured = tracker.track(Watcher(), "captured by an observer handler")
            let observer = Watcher()
            person.addObserver(observer, for: \.age) { _, _, _ in captured.count += 1 }
            person.removeObserver(observer, for: \.age)
        }
        #expect(tracker.survivors.isEmpty)
    }

    @Test("the live registration count returns to zero", arguments: ObservationBackend.allCases)
    func liveRegistrationCountReturnsToZero(backend: ObservationBackend) {
        do {
            let people = (0..<50).map { Person(backend, age: $0) }
            let watchers = (0..<5).map { _ in ObservableWatcher(backend) }
            var tokens: [ObservationToken] = []
            for (i, person) in people.enumerated() {
                tokens.append(person.observe(\.age) { _, _ in })
                person.addObserver(watchers[i % 5], for: \.name, context: .init(rawValue: UInt(i % 3))) { _, _, _ in }
            }
            // The optimiser may end a local's lifetime at its last use (the watchers would die
            // after the loop, and their registrations with them): keep both explicitly.
            withExtendedLifetime((tokens, watchers)) {
                #expect(ObservationRuntime.liveRegistrationCount >= 100)
                for person in people { person.age += 1; person.name = "x" }
            }
        }
        #expect(ObservationRuntime.liveRegistrationCount == 0)
        ObservationRuntime._checkInvariants()
    }
}
