import Dispatch
@_spi(Testing) import ObserveCore
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
        // The serial queue serializes every set of `person`, which is what makes sharing it sound.
        // Not `Synchronization.Mutex`: on Linux it waits with raw futex calls, which
        // ThreadSanitizer does not see, so this suite's TSan run in CI would report its sets as
        // racing. A dispatch queue (or `NSLock`, `pthread_mutex_t`) is visible to it.
        nonisolated(unsafe) let shared = person
        let writeQueue = DispatchQueue(label: "serialized-writers.sets")
        DispatchQueue.concurrentPerform(iterations: writers) { writer in
            for i in 1...setsPerWriter {
                writeQueue.sync { shared.age = writer * 1_000_000 + i }
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

    /// One thread keeps adding element keys to an array's running tracker (a second observation
    /// with another element key path) while another sets the elements' properties. The element
    /// directory once read the tracker's key list there without the array's lock, racing with
    /// the list being replaced (a use-after-free in release stress runs); under TSan (CI) this
    /// test reported it.
    @Test("element keys added to a running tracker while elements change on another thread",
          arguments: ObservationBackend.allCases)
    func elementKeysAddedWhileElementsChange(backend: ObservationBackend) {
        let pupils = (0..<4).map { Student(backend, "p\($0)") }
        let array = ObservableArray(pupils, backend: backend)
        let heard = AtomicCounter()
        nonisolated(unsafe) let shared = (array, pupils)
        DispatchQueue.concurrentPerform(iterations: 2) { role in
            let (array, pupils) = shared
            for round in 0..<400 {
                if role == 0 {
                    let grades = array.observe(elementKeyPaths: [\Student.grade]) { _, _ in heard.increment() }
                    let names = array.observe(elementKeyPaths: [\Student.name]) { _, _ in heard.increment() }
                    names.cancel()
                    grades.cancel()
                } else {
                    pupils[round % 4].grade = round
                    pupils[(round + 1) % 4].name = "n\(round)"
                }
            }
        }
        #expect(array.observationCount == 0, "every observation was cancelled")
        array._checkInvariants()
        _ = heard.value
    }

    /// A queued observer reads each change's elements (the change's copy-on-write snapshot of the
    /// storage) on its queue while the array goes on mutating in place on this thread; element
    /// changes (whose change box the array recycles once the queue lets go of it) are mixed in.
    /// Under ThreadSanitizer (CI) this must report nothing: the snapshot's hand-back to the
    /// writer is annotated (`_CopyOnWriteHandoff`), and sanitized builds do not recycle boxes.
    @Test("a queued array observer reads change snapshots while the array mutates", arguments: ObservationBackend.allCases)
    func snapshotsReadWhileMutating(backend: ObservationBackend) {
        let students = (0..<8).map { Student(backend, "s\($0)") }
        let array = ObservableArray(students, backend: backend)
        let queue = DispatchQueue(label: "snapshot-reader")
        final class Replica: @unchecked Sendable { var contents: [Student] = []; var gradesSeen = 0 }
        let replica = Replica()
        replica.contents = Array(array)
        let token = array.observe(options: [.new], elementKeyPaths: [\Student.grade], delivery: .queue(queue)) { _, change in
            if change.kind == .elementChanged {
                replica.gradesSeen += change.elements.count
            } else if let next = change.applying(to: replica.contents) {
                replica.contents = next
            }
        }
        var spun = 0
        for round in 0..<4_000 {
            for i in 0..<2_000 { spun &+= i }   // lets the queue catch up, so that some mutations find the snapshot released
            switch round % 4 {
            case 0: array.append(students[round % 8])
            case 1: array[round % array.count] = students[(round / 4) % 8]
            case 2: students[round % 8].grade += 1
            default: _ = array.remove(at: (round * 7) % array.count)
            }
        }
        queue.sync {}
        token.cancel()
        #expect(replica.contents.map(ObjectIdentifier.init) == array.map(ObjectIdentifier.init))
        #expect(replica.gradesSeen > 0)
        #expect(spun != 0)
    }

    /// The copy-on-write hand-off at its sharpest: another thread reads a change's snapshot (or
    /// iterates the array), drops it and says so through a relaxed atomic only — nothing that
    /// ThreadSanitizer sees as ordering — and this thread then finds the storage unique and
    /// rewrites, in place, the storage fields the reader read (the head, by inserting at the
    /// front; the allocation, by growing). The order is real (the reference count), but lives in
    /// the uninstrumented runtime: without the library's annotations (`_CopyOnWriteHandoff`),
    /// ThreadSanitizer (CI) reports this test as a race.
    @Test("a snapshot read on another thread, dropped, then written in place: no race reported",
          arguments: ObservationBackend.allCases, [false, true])
    func snapshotDroppedThenWrittenInPlace(backend: ObservationBackend, throughIterator: Bool) {
        final class Handoff: @unchecked Sendable {
            var change: ArrayChange<Int>?
            var sum = 0
        }
        let array = ObservableArray([9, 1, 2, 3], backend: backend)   // capacity 4
        let handoff = Handoff()
        var token: ObservationToken?
        if throughIterator {
            // Full, so that the append below grows the storage the reader read.
            _ = array.removeFirst()
            array.append(4)
        } else {
            token = array.observe { _, change in handoff.change = change }
            array[0] = 10   // the change keeps a snapshot of the storage; the handler keeps the change
            #expect(handoff.change != nil)
        }
        let dropped = Atomic<Bool>(false)
        let reader = DispatchQueue(label: "snapshot-dropper")
        // Reads the snapshot and lets go of it before announcing that it has.
        @Sendable @inline(never) func readAndDrop() {
            if throughIterator {
                for value in array { handoff.sum += value }
            } else {
                let change = handoff.change.take()!
                for element in change.elements { handoff.sum += element.element }
            }
        }
        reader.async {
            readAndDrop()
            dropped.store(true, ordering: .relaxed)
        }
        while !dropped.load(ordering: .relaxed) {}
        if throughIterator {
            array.append(5)        // full: grows, replacing the allocation the iterator read
        } else {
            array.insert(0, at: 0) // moves the head the change's reads went through
        }
        reader.sync {}
        #expect(handoff.sum == (throughIterator ? 1 + 2 + 3 + 4 : 9 + 10))   // a replace: 9 removed, 10 inserted
        #expect(Array(array) == (throughIterator ? [1, 2, 3, 4, 5] : [0, 10, 1, 2, 3]))
        token?.cancel()
    }
}
