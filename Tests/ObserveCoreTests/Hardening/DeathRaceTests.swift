// Reproduces a deadlock in the registry: an observed object released on one thread while another
// thread cancels one of its tokens (and, in one variant, a third sets the observed property) could
// run `KeyValueRegistrar.deinit` — which takes the object's shard lock — while that shard lock was
// already held, and the process hung for ever.
//
// Each round, thread A creates a Person, observes `age` with a token (every other round also with
// an observer-tagged registration whose observer is itself observable) and hands the token to
// thread B (and, in the setter variant, a strong reference to the person to thread C) through a
// lock-protected slot. A barrier then releases them together: A drops its references, B cancels
// the token, C sets `age` and drops its reference. A watchdog on the test's thread turns a hang
// into a recorded issue instead of a stuck test run.
//
// Size: OBSERVECORE_DEATHRACE_ROUNDS (default 20,000) and OBSERVECORE_DEATHRACE_SECONDS (default 5),
// whichever ends first; the watchdog fires 30 s after the time budget.

import Dispatch
@_spi(Testing) import ObserveCore
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Hardening: death race", .serialized)
struct DeathRaceTests {
    /// Set when a watchdog fired: a thread may be stuck holding a shard lock, so anything that
    /// takes every shard lock (the live-registration count) would hang as well.
    static let wedged = Atomic<Bool>(false)

    @Test("an object released while another thread cancels its token does not deadlock",
          arguments: ObservationBackend.allCases)
    func releaseWhileCancelling(backend: ObservationBackend) { race(backend, withSetter: false) }

    @Test("an object released while one thread cancels its token and another sets it does not deadlock",
          arguments: ObservationBackend.allCases)
    func releaseWhileCancellingAndSetting(backend: ObservationBackend) { race(backend, withSetter: true) }

    private func race(_ backend: ObservationBackend, withSetter: Bool) {
        let what = "death race[\(backend)\(withSetter ? ", with setter" : "")]"
        if Self.wedged.load(ordering: .sequentiallyConsistent) {
            Issue.record("\(what): not run, an earlier death-race test left a thread deadlocked")
            return
        }
        let seconds = environmentInt("OBSERVECORE_DEATHRACE_SECONDS", default: 5)
        let before = ObservationRuntime.liveRegistrationCount
        let race = DeathRace(backend: backend, threads: withSetter ? 3 : 2,
                             rounds: environmentInt("OBSERVECORE_DEATHRACE_ROUNDS", default: 20_000), seconds: seconds)
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            runOnThreads(race.threads) { race.run(thread: $0) }
            finished.signal()
        }
        if finished.wait(timeout: .now() + .seconds(seconds + 30)) == .timedOut {
            Self.wedged.store(true, ordering: .sequentiallyConsistent)
            race.abandon()
            let rounds = race.completed.load(ordering: .sequentiallyConsistent)
            Issue.record("deadlock: \(what) did not finish within \(seconds + 30) s; \(rounds) rounds completed so far")
            return
        }
        let rounds = race.completed.load(ordering: .sequentiallyConsistent)
        #expect(rounds > 0)
        let after = ObservationRuntime.liveRegistrationCount
        if after != before {
            let listing = ObservationRuntime.debugListing().split(separator: "\n").prefix(20).joined(separator: "\n")
            Issue.record("\(what) live registrations: \(before) before, \(after) after; first ones left:\n\(listing)")
        }
        print("\(what): \(rounds) rounds, no deadlock")
    }
}

/// The racing threads' shared state. Thread 0 is A (owner), 1 is B (canceller), 2 is C (setter).
private final class DeathRace: @unchecked Sendable {
    let backend: ObservationBackend, threads: Int, rounds: Int, deadline: DispatchTime
    let completed = Atomic<Int>(0)
    private let arrived = Atomic<Int>(0)
    private let stop = Atomic<Bool>(false)
    private let abandoned = Atomic<Bool>(false)
    /// The hand-over slot, guarded by `lock`.
    private let lock = TestLock()
    private var slotToken: ObservationToken?
    private var slotPerson: Person?
    /// A's strong references, touched by thread A only (a stored array, so that they are released
    /// exactly when A clears it, not wherever the optimiser ends a local's lifetime).
    private var heldByA: [AnyObject] = []

    init(backend: ObservationBackend, threads: Int, rounds: Int, seconds: Int) {
        (self.backend, self.threads, self.rounds) = (backend, threads, rounds)
        deadline = .now() + .seconds(seconds)
    }

    /// Lets threads spinning in the barrier leave (the deadlocked one stays where it is).
    func abandon() { abandoned.store(true, ordering: .sequentiallyConsistent) }

    func run(thread: Int) {
        var phase = 0
        while true {
            if thread == 0 { prepare() }
            guard barrier(&phase), !stop.load(ordering: .sequentiallyConsistent) else { return }
            switch thread {
            case 0:
                heldByA.removeAll()                                     // A: the last reference, maybe
            case 1:
                lock.locked { slotToken.take() }?.cancel()              // B: cancel at the same moment
            default:
                if let person = lock.locked({ slotPerson.take() }) {    // C: set, then release
                    person.age += 1
                }
            }
            guard barrier(&phase) else { return }
            if thread == 0 { completed.add(1, ordering: .sequentiallyConsistent) }
        }
    }

    /// Thread A, before each round: an observed object, its token handed to B (and itself to C).
    private func prepare() {
        let round = completed.load(ordering: .sequentiallyConsistent)
        guard round < rounds, DispatchTime.now() < deadline else {
            stop.store(true, ordering: .sequentiallyConsistent)
            return
        }
        let person = Person(backend)
        let token = person.observe(\.age) { _, _ in }
        heldByA = [person]
        if round % 2 == 0 {
            let watcher = ObservableWatcher(backend)
            person.addObserver(watcher, for: \.age) { _, _, _ in }
            heldByA.append(watcher)
        }
        lock.locked {
            slotToken = token
            slotPerson = threads > 2 ? person : nil
        }
    }

    /// Waits until every thread reached this phase; false if the watchdog gave up on the race.
    private func barrier(_ phase: inout Int) -> Bool {
        phase += 1
        arrived.add(1, ordering: .sequentiallyConsistent)
        var spins = 0
        while arrived.load(ordering: .sequentiallyConsistent) < phase * threads {
            if abandoned.load(ordering: .sequentiallyConsistent) { return false }
            spins += 1
            if spins < 100_000 { sched_yield() } else { usleep(1_000) }   // a hang: stop burning a core
        }
        return true
    }
}
