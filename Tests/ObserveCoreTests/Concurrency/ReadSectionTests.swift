import Dispatch
import Foundation
@_spi(Testing) @testable import ObserveCore
import ObserveCoreTestSupport
import Synchronization
import Testing

/// The reclamation of dispatch caches (`Concurrency/_ReadSections.swift`): a setter reads its
/// object's cache with no lock; a registration change replaces the cache and retires the old one,
/// which must stay alive while any thread may still read it and be freed as soon as none can.
/// What a user sees of it: when a cancelled registration's handler, and everything it captured,
/// is released. Run under ThreadSanitizer in CI (the `ReadSection` filter of `.ci/run`).
@Suite("ReadSection", .serialized)
struct ReadSectionTests {
    /// Something a handler captures, so that its release can be seen.
    final class Canary: Sendable {}

    /// Observes `person` with a handler that holds a fresh canary, stores the token in `token`
    /// (its only owner) and returns a weak view of the canary.
    private func observeWithCanary(_ person: Person, into token: inout ObservationToken?) -> () -> Canary? {
        let canary = Canary()
        weak let weakCanary = canary
        token = person.observe(\.age) { _, _ in withExtendedLifetime(canary) {} }
        return { weakCanary }
    }

    @Test("a cache retired while another thread reads its object lives until that read ends",
          arguments: ObservationBackend.allCases)
    func retiredWhileRead(backend: ObservationBackend) {
        let person = Person(backend)
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let blocker = person.observe(\.age) { _, _ in entered.signal(); proceed.wait() }
        var token: ObservationToken?
        let canary = observeWithCanary(person, into: &token)
        nonisolated(unsafe) let shared = person
        Thread { shared.age = 1; done.signal() }.start()
        entered.wait()                      // the other thread is inside the set, reading the cache
        token?.cancel()                     // retires the cache it reads
        token = nil
        #expect(canary() != nil, "the cache the other thread reads still holds the cancelled registration")
        #expect(_RetiredCaches.shared.count == 1)
        proceed.signal()
        done.wait()                         // its read section ended, and it freed what it held
        #expect(canary() == nil, "the cancelled handler's captures were released when the read ended")
        #expect(_RetiredCaches.shared.count == 0)
        blocker.cancel()
    }

    @Test("a cache retired while another thread reads a different object is freed at once",
          arguments: ObservationBackend.allCases)
    func retiredWhileOtherObjectRead(backend: ObservationBackend) {
        let busy = Person(backend), other = Person(backend)
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let blocker = busy.observe(\.age) { _, _ in entered.signal(); proceed.wait() }
        var token: ObservationToken?
        let canary = observeWithCanary(other, into: &token)
        other.age = 1                       // builds other's cache
        nonisolated(unsafe) let shared = busy
        Thread { shared.age = 1; done.signal() }.start()
        entered.wait()
        token?.cancel()
        token = nil
        #expect(canary() == nil, "nobody could read other's old cache: freed by the cancel itself")
        #expect(_RetiredCaches.shared.count == 0)
        proceed.signal()
        done.wait()
        blocker.cancel()
    }

    @Test("a thread blocked in a nested delivery holds the caches of the objects it reads, no others",
          arguments: ObservationBackend.allCases)
    func nestedReaderHoldsOnlyItsObjects(backend: ObservationBackend) {
        let outer = Person(backend), inner = Person(backend), other = Person(backend)
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let innerShared = inner
        let relay = outer.observe(\.age) { _, change in innerShared.age = change.newValue ?? 0 }
        let blocker = inner.observe(\.age) { _, _ in entered.signal(); proceed.wait() }
        var innerToken: ObservationToken?, otherToken: ObservationToken?
        let innerCanary = observeWithCanary(inner, into: &innerToken)
        let otherCanary = observeWithCanary(other, into: &otherToken)
        other.age = 1                       // builds other's cache
        nonisolated(unsafe) let outerShared = outer
        Thread { outerShared.age = 1; done.signal() }.start()
        entered.wait()                      // two sections deep: outer's, then inner's
        innerToken?.cancel()
        innerToken = nil
        otherToken?.cancel()
        otherToken = nil
        #expect(innerCanary() != nil, "the blocked thread reads inner's cache")
        #expect(otherCanary() == nil, "nobody reads other's: freed at once, nesting notwithstanding")
        proceed.signal()
        done.wait()
        #expect(innerCanary() == nil)
        #expect(_RetiredCaches.shared.count == 0)
        relay.cancel()
        blocker.cancel()
    }

    @Test("sections nested on one object (a handler setting another property of it) hold its caches until the outermost ends",
          arguments: ObservationBackend.allCases)
    func nestedOnOneObjectHoldsUntilOutermostEnds(backend: ObservationBackend) {
        // The inner section opens with no fence (the outer one's record covers the object, see
        // `cobs_read_enter`), and only the outermost leave fences and drains. This checks what
        // the sections hold and who drains, not the memory ordering (the semaphores order
        // everything here): that argument is in the header.
        let person = Person(backend)
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let shared = person
        let relay = person.observe(\.age) { _, change in shared.name = "\(change.newValue ?? 0)" }
        let blocker = person.observe(\.name) { _, _ in entered.signal(); proceed.wait() }
        var token: ObservationToken?
        let canary = observeWithCanary(person, into: &token)
        Thread { shared.age = 1; done.signal() }.start()
        entered.wait()                      // two sections deep, both on person
        token?.cancel()                     // retires the cache both sections read
        token = nil
        #expect(canary() != nil, "the blocked thread reads person's cache in both sections")
        #expect(_RetiredCaches.shared.count == 1)
        proceed.signal()
        done.wait()                         // the inner leave kept it; the outermost one freed it
        #expect(canary() == nil, "freed when the outermost section ended")
        #expect(_RetiredCaches.shared.count == 0)
        #expect(person.name == "1")
        relay.cancel()
        blocker.cancel()
    }

    @Test("a handler that cancels mid-delivery: the cache it iterates outlives the cancel, then goes",
          arguments: ObservationBackend.allCases)
    func cancelFromInsideHandler(backend: ObservationBackend) {
        let person = Person(backend)
        nonisolated(unsafe) var secondToken: ObservationToken?
        nonisolated(unsafe) var canary: () -> Canary? = { nil }
        nonisolated(unsafe) var aliveAfterCancel = false
        let calls = AtomicCounter()
        let first = person.observe(\.age) { _, _ in
            calls.increment()
            secondToken?.cancel()           // retires the cache this delivery iterates
            secondToken = nil
            aliveAfterCancel = canary() != nil
        }
        canary = observeWithCanary(person, into: &secondToken)
        person.age = 1
        #expect(calls.value == 1)
        #expect(aliveAfterCancel, "the cache being iterated still held the cancelled registration")
        #expect(canary() == nil, "freed when the set that iterated it returned")
        #expect(_RetiredCaches.shared.count == 0)
        first.cancel()
    }

    /// Threads set shared objects while others observe and cancel on them: every retired cache
    /// is freed by the end, every handler's captures released, and ThreadSanitizer (CI) sees the
    /// frees ordered after the reads.
    @Test("publish and retire hammered from threads: nothing read after free, nothing kept",
          arguments: ObservationBackend.allCases)
    func hammer(backend: ObservationBackend) {
        let threads = max(2, environmentInt("OBSERVECORE_STRESS_THREADS", default: 4))
        let rounds = environmentInt("OBSERVECORE_STRESS_OPS", default: 5_000) / 5
        // SharedCounter's setter is thread-safe, as a property set from several threads must be.
        let counters = (0..<3).map { _ in SharedCounter(backend) }
        let tracker = LifetimeTracker()
        let delivered = AtomicCounter()
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<rounds {
                let counter = counters[(t + i) % counters.count]
                if t % 2 == 0 {
                    counter.value = i                   // reads (and builds) the cache
                } else {
                    let canary = tracker.track(Canary())
                    let token = counter.observe(\.value) { _, _ in withExtendedLifetime(canary) { delivered.increment() } }
                    counter.value = -i                  // delivered to it at least
                    token.cancel()                      // retires the cache others may be reading
                }
            }
        }
        #expect(delivered.value >= rounds * (threads / 2))
        #expect(_RetiredCaches.shared.count == 0, "every retired cache was freed by the last section that held it")
        #expect(tracker.survivors.isEmpty, "captures of cancelled handlers still alive: \(tracker.survivors.prefix(3))")
    }
    /// Element changes on some threads while others start and stop tracking (each observe and
    /// cancel replaces the array's dispatch cache, which element changes read in their read
    /// sections). Every change made while an observer is registered on its own thread reaches it,
    /// and every retired cache is freed by the end.
    @Test("element changes while other threads start and stop tracking: nothing missed, nothing retired kept",
          arguments: ObservationBackend.allCases)
    func directoryHammer(backend: ObservationBackend) {
        let threads = max(2, environmentInt("OBSERVECORE_STRESS_THREADS", default: 4))
        let rounds = environmentInt("OBSERVECORE_STRESS_OPS", default: 5_000) / 10
        // Each thread sets only its own students (a property set from two threads would race).
        let students = (0..<threads).map { t in (0..<4).map { Student(backend, "s\(t).\($0)") } }
        let arrays = (0..<2).map { _ in ObservableArray(students.flatMap { $0 }, backend: backend) }
        let heardOwn = (0..<threads).map { _ in AtomicCounter() }
        nonisolated(unsafe) let shared = (students: students, arrays: arrays)
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let mine = shared.students[t], arrays = shared.arrays
            for i in 0..<rounds {
                if t % 2 == 0 {
                    for student in mine { student.grade = i }       // read the directory
                } else {
                    let token = arrays[i % 2].observe(elementKeyPaths: [\.grade]) { _, change in
                        if change.elements.contains(where: { $0.element === mine[0] }) { heardOwn[t].increment() }
                    }                                               // starts tracking
                    mine[0].grade = -i                              // reaches this thread's observer
                    token.cancel()                                  // stops it (lazily) or leaves it
                }
            }
        }
        for t in stride(from: 1, to: threads, by: 2) {
            #expect(heardOwn[t].value >= rounds, "thread \(t) missed its own element changes")
        }
        #expect(_RetiredCaches.shared.count == 0, "every retired cache was freed by the last section that held it")
    }
}
