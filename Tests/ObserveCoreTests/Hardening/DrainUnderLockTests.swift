// Reproduces a re-entry into an array's lock from a deinit: an element change that nobody wants
// leaves its read section on the array's observers while holding the array's lock, and the last
// reader out used to free the caches that a concurrent registration change had retired — there,
// under the lock. Freeing a cache can free a cancelled registration, its handler, and what the
// handler captured; a captured object whose deinit mutates the same array then re-entered the
// array's lock on the thread that held it (reported by the array's lock as a re-entry, a crash).
//
// Thread A sets, over and over, the `grade` of the array's elements: the array tracks `grade` (a
// registration asked for it once) but its standing observer wants only `name`, so each change
// enters the observers' read section under the lock and leaves it there. Thread B registers and
// at once releases a `name` observer whose handler captures a `Bomb` that appends to the array
// when it dies: each release retires the cache A may be reading, and that cache then holds the
// last reference to the registration.
//
// With the drain back under the lock this test hangs on both backends (checked by reverting the
// fix): the array's lock spins. A watchdog turns the hang into a recorded issue. Size: OBSERVECORE_DRAIN_ROUNDS (default 20,000) registrations on B.

import Dispatch
@_spi(Testing) import ObserveCore
import Synchronization
import Testing

@Suite("Hardening: retired caches are never freed under an array's lock", .serialized)
struct DrainUnderLockTests {
    /// Appends to `array` when it dies (from whichever thread releases the last reference).
    final class Bomb: @unchecked Sendable {
        let array: ObservableArray<Student>
        let spare: Student
        init(_ array: ObservableArray<Student>, _ spare: Student) { self.array = array; self.spare = spare }
        deinit { array.append(spare) }
    }

    @Test("an element change racing with cancellations never runs a captured deinit under the array's lock",
          arguments: ObservationBackend.allCases)
    func cancellationsDuringUnwantedElementChanges(backend: ObservationBackend) {
        let rounds = environmentInt("OBSERVECORE_DRAIN_ROUNDS", default: 20_000)
        expectNoLeaks("drain under lock[\(backend)]") { tracker in
            let students = (0..<8).map { tracker.track(Student(backend, "s\($0)")) }
            let spare = tracker.track(Student(backend, "spare"))
            let array = tracker.track(ObservableArray(students, backend: backend))
            let names = array.observe(elementKeyPaths: [\.name]) { _, _ in }
            // The tracker now tracks `grade` too, and keeps it while `names` has element keys.
            array.observe(elementKeyPaths: [\.grade]) { _, _ in }.cancel()

            let shared = _UncheckedBox((array: array, students: students, spare: spare))
            let stop = Atomic<Bool>(false)
            let finished = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                runOnThreads(2) { thread in
                    let (array, students, spare) = shared.value!
                    if thread == 0 {
                        var value = 0
                        while !stop.load(ordering: .relaxed) {
                            value &+= 1
                            students[value & 7].grade = value
                        }
                    } else {
                        for _ in 0..<rounds {
                            // Released at once: its cancellation drops the last reference but the
                            // caches'. It wants `name`, so A's `grade` changes stay unwanted.
                            let bomb = Bomb(array, spare)
                            _ = array.observe(elementKeyPaths: [\.name]) { _, _ in _ = bomb }
                        }
                        stop.store(true, ordering: .relaxed)
                    }
                }
                // Dropped before signalling: the queue releases this block only after it returns,
                // which could be after the leak check below.
                shared.value = nil
                finished.signal()
            }
            // The re-entry this guards against spins for ever on the array's lock: a watchdog
            // turns it into a recorded issue (the stuck thread is left behind).
            guard finished.wait(timeout: .now() + .seconds(60)) == .success else {
                Issue.record("deadlock: a deinit run under the array's lock re-entered it (\(backend))")
                // Everything that would take the stuck array's lock is kept alive for ever.
                _ = Unmanaged.passRetained(_UncheckedBox((names, shared)))
                return
            }
            // Every bomb went off exactly once: the spare was appended once per round.
            #expect(array.count == students.count + rounds)
            _ = names
        }
    }
}

/// Hands non-Sendable test objects to the threads of one test (each is used as the test says),
/// and lets the test drop them.
private final class _UncheckedBox<Value>: @unchecked Sendable {
    var value: Value?
    init(_ value: Value) { self.value = value }
}
