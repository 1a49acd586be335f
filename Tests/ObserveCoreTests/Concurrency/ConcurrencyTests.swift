import Dispatch
import ObserveCore
import Synchronization
import Testing

/// Run under `swift test --sanitize=thread` by .ci/run: set, observe and remove from several
/// threads at once, on shared and on distinct objects.
@Suite("Concurrency", .serialized)
struct ConcurrencyTests {
    /// The README's condition for several writers of one property: they serialize their sets.
    /// Then every notification reports the value its set wrote, each old value is the previous
    /// notification's new value, and the last notification holds the final value — inline, and
    /// on a serial delivery queue.
    @Test("serialized writers: each notification carries what its set wrote, in set order",
          arguments: ObservationBackend.allCases, [false, true])
    func serializedWriters(backend: ObservationBackend, queued: Bool) {
        let person = Person(backend)
        let queue = DispatchQueue(label: "serialized-writers")
        let seen = Mutex<[(old: Int, new: Int)]>([])
        let token = person.observe(\.age, options: [.old, .new], delivery: queued ? .queue(queue) : .inline) { _, change in
            seen.withLock { $0.append((change.oldValue!, change.newValue!)) }
        }
        let writers = 4, setsPerWriter = 2_000
        // The lock serializes every access to `person`, which is what makes sharing it sound.
        nonisolated(unsafe) let shared = person
        let writeLock = Mutex(())
        DispatchQueue.concurrentPerform(iterations: writers) { writer in
            for i in 1...setsPerWriter {
                writeLock.withLock { _ in shared.age = writer * 1_000_000 + i }
            }
        }
        queue.sync {}
        token.cancel()
        let log = seen.withLock { $0 }
        #expect(log.count == writers * setsPerWriter, "one notification per set")
        let written = Set((0..<writers).flatMap { w in (1...setsPerWriter).map { w * 1_000_000 + $0 } })
        #expect(log.allSatisfy { written.contains($0.new) }, "every new value was written by some set")
        #expect(log.first?.old == 0)
        #expect(zip(log, log.dropFirst()).allSatisfy { $0.new == $1.old }, "each old value is the previous new value")
        #expect(log.last?.new == person.age, "the last notification holds the final value")
    }

    @Test("concurrent sets, registrations and removals lose nothing and leak nothing", arguments: ObservationBackend.allCases)
    func concurrentSetObserveRemove(backend: ObservationBackend) {
        let shared = SharedCounter(backend)
        let sharedHits = AtomicCounter()
        let anchor = shared.observe(\.value) { _, _ in sharedHits.increment() }
        let threads = 4, rounds = 500
        let perThreadHits = (0..<threads).map { _ in AtomicCounter() }
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let mine = Person(backend)
            let token = mine.observe(\.age) { _, _ in perThreadHits[t].increment() }
            for i in 0..<rounds {
                mine.age = i
                shared.value = i
                let temporary = shared.observe(\.label) { _, _ in }
                shared.label = "t\(t) \(i)"
                temporary.cancel()
                let watcher = AtomicCounter()
                shared.addObserver(watcher, for: \.label, context: .init(rawValue: UInt(t))) { w, _, _ in w.increment() }
                shared.label = "again"
                shared.removeObserver(watcher, for: \.label)
                #expect(watcher.value >= 1, "its own set reached it")
            }
            token.cancel()
        }
        #expect(sharedHits.value == threads * rounds, "every set of the shared object notified once")
        for hits in perThreadHits { #expect(hits.value == rounds) }
        anchor.cancel()
        #expect(shared.observationCount == 0)
        ObservationRuntime._checkInvariants()
    }

    @Test("objects die on one thread while others observe and set", arguments: ObservationBackend.allCases)
    func objectsDieWhileOthersWork(backend: ObservationBackend) {
        let calls = AtomicCounter()
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<300 {
                let person = Person(backend, age: i)
                let watcher = ObservableWatcher(backend)
                person.addObserver(watcher, for: \.age) { _, _, _ in calls.increment() }
                let token = person.observe(\.name) { _, _ in calls.increment() }
                person.age += 1
                person.name = "\(t)"
                if i.isMultiple(of: 2) { token.cancel() }
            }
        }
        #expect(calls.value == 4 * 300 * 2)
        ObservationRuntime._checkInvariants()
    }
}

/// A counter that handlers on several threads may bump.
final class AtomicCounter: Sendable {
    private let _value = Atomic<Int>(0)
    func increment() { _value.add(1, ordering: .relaxed) }
    var value: Int { _value.load(ordering: .relaxed) }
}
