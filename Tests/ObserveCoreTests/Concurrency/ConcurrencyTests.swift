import Dispatch
import ObserveCore
import Synchronization
import Testing

/// Run under `swift test --sanitize=thread` by .ci/run: set, observe and remove from several
/// threads at once, on shared and on distinct objects.
@Suite("Concurrency", .serialized)
struct ConcurrencyTests {
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
