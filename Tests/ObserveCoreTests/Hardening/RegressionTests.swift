// Deterministic reproductions of bugs that the hardening suites (stress, differential, property)
// found, kept small so that a regression names its cause.

import Dispatch
@_spi(Testing) import ObserveCore
import Testing

@Suite("Hardening: regressions", .serialized)
struct RegressionTests {
    /// Found by the stress test (shared array without anchors, element-key observers coming and
    /// going): an element change that found no element-key observer left shut the element tracker
    /// down but left it installed on the array, and the next removal asked the shut-down tracker to
    /// forget an element it had already forgotten (`cobs_positions_remove` → COBS_NOT_FOUND, a
    /// fatal error; on the Swift backend a membership-count underflow).
    @Test("an array whose last element-key observer left can still be mutated and observed again",
          arguments: ObservationBackend.allCases)
    func mutatingAfterElementTrackingStopped(backend: ObservationBackend) {
        expectNoLeaks { tracker in
            let a = tracker.track(Student(backend, "a")), b = tracker.track(Student(backend, "b"))
            let array = tracker.track(ObservableArray([a, b, a], backend: backend))
            var token: ObservationToken? = array.observe(elementKeyPaths: [\Student.grade]) { _, _ in }
            token!.cancel()
            a.grade += 1            // finds nobody: element tracking stops here
            array.remove(at: 0)     // crashed: the stopped tracker was still asked to forget `a`
            array.insert(b, at: 0)
            array.swapAt(0, 1)
            array.append(a)
            array.removeAll()
            array.append(contentsOf: [a, b, a])

            var heard: [[Int?]] = []
            token = array.observe(elementKeyPaths: [\Student.grade]) { _, change in
                if change.kind == .elementChanged { heard.append(change.elements.map(\.newIndex)) }
            }
            a.grade += 1
            #expect(heard == [[0, 2]], "tracking restarts with the current contents")
            array.remove(at: 0)
            b.grade += 1
            #expect(heard == [[0, 2], [0]])
            array._checkInvariants()
            token = nil
            array.removeAll()
        }
    }

    /// The same shutdown through the other path: the last element-key observer left while a plain
    /// observer stayed; elements that joined while tracking was stopped must not keep the "someone
    /// tracks me" bits set for ever (they would send every later set down the slow path).
    @Test("elements leave no membership behind once element tracking stopped", arguments: ObservationBackend.allCases)
    func noMembershipLeftAfterTrackingStopped(backend: ObservationBackend) {
        expectNoLeaks { tracker in
            let a = tracker.track(Student(backend, "a")), b = tracker.track(Student(backend, "b"))
            let array = tracker.track(ObservableArray([a], backend: backend))
            let plain = array.observe { _, _ in }
            var elementToken: ObservationToken? = array.observe(elementKeyPaths: [\Student.grade]) { _, _ in }
            elementToken = nil
            a.grade += 1            // the plain observer wants no element keys: tracking stops
            array.append(b)         // joins while tracking is stopped
            array.remove(at: 0)
            array.remove(at: 0)
            // Observed again from scratch, `b` must be reported exactly once per change.
            var heard = 0
            elementToken = array.observe(elementKeyPaths: [\Student.grade]) { _, change in
                if change.kind == .elementChanged { heard += 1 }
            }
            array.append(b)
            b.grade += 1
            #expect(heard == 1)
            array._checkInvariants()
            _ = (plain, elementToken)
            plain.cancel()
            elementToken = nil
            array.removeAll()
        }
    }
}

@Suite("Hardening: regressions under threads", .serialized)
struct ThreadedRegressionTests {
    /// `popLast()` promises nil on an empty array, and the array promises that every operation is
    /// atomic. It checked emptiness and removed in two separate critical sections, so two threads
    /// popping the last element both passed the check and one trapped in `removeLast()` ("the
    /// array is empty").
    @Test("popLast from several threads returns nil instead of trapping when another thread emptied the array",
          arguments: ObservationBackend.allCases)
    func concurrentPopLast(backend: ObservationBackend) {
        expectNoLeaks { tracker in
            let array = tracker.track(ObservableArray<Int>(backend: backend))
            let popped = AtomicCounter(), appended = AtomicCounter()
            let rounds = environmentInt("OBSERVECORE_STRESS_OPS", default: 5_000) * 4
            runOnThreads(4) { _ in
                for i in 0..<rounds {
                    if i % 2 == 0 { array.append(i); appended.increment() }
                    if array.popLast() != nil { popped.increment() }
                }
            }
            #expect(popped.value + array.count == appended.value)
        }
    }

    /// Found by the stress test under ThreadSanitizer: a batch that changes nothing ended with
    /// `Array(unsafeUninitializedCapacity: 0)`, which in Swift 6.3 writes the count of the shared
    /// empty-array singleton; two threads ending such batches at once raced on it. (Only a
    /// ThreadSanitizer run can fail this test.)
    @Test("batches that change nothing end on several threads at once without a race", arguments: ObservationBackend.allCases)
    func concurrentEmptyBatches(backend: ObservationBackend) {
        expectNoLeaks { tracker in
            let arrays = (0..<4).map { _ in tracker.track(ObservableArray([1, 2, 3], backend: backend)) }
            let heard = AtomicCounter()
            let tokens = arrays.map { $0.observe { _, _ in heard.increment() } }
            runOnThreads(4) { t in
                for _ in 0..<environmentInt("OBSERVECORE_STRESS_OPS", default: 5_000) / 5 {
                    arrays[t].performBatchUpdates { a in a.swapAt(0, 1); a.swapAt(0, 1) }
                }
            }
            #expect(heard.value == 0, "a batch that changes nothing reports nothing")
            for token in tokens { token.cancel() }
        }
    }
}
