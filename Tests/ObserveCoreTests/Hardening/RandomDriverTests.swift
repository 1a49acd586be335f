// A seeded random driver of the public Swift API, checked against a plain model after every
// operation: property sets with token and observer registrations that come and go, objects that
// die, an observed array of shared elements (duplicates included) edited by every mutation —
// single edits, moves, swaps, sorts, batches with element changes inside — with three observers
// keeping replicas (inline, element-tracking, and on a serial queue). After every operation the
// array, each replica and the element-position index agree with the model, every notification
// carried the values the model predicts, and the registry's invariants hold.
//
// CI runs it in the test command and again under AddressSanitizer (`.ci/run`), where a stale
// snapshot, a recycled change box read after reuse or a freed registration would stop the run.
//
// Size: OBSERVECORE_FUZZ_RUNS runs per backend (default 200) of OBSERVECORE_FUZZ_OPS operations
// (default 120), seeds from OBSERVECORE_FUZZ_SEED (default 1). A failure names the seed that
// replays it: OBSERVECORE_FUZZ_SEED=<seed> OBSERVECORE_FUZZ_RUNS=1.

import Dispatch
@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

@Suite("Hardening: random driver (model-checked)", .serialized)
struct RandomDriverTests {
    @Test("random operations over properties, arrays and batches agree with a model after every step",
          arguments: ObservationBackend.allCases)
    func randomOperationsMatchTheModel(backend: ObservationBackend) {
        let runs = environmentInt("OBSERVECORE_FUZZ_RUNS", default: 200)
        let operations = environmentInt("OBSERVECORE_FUZZ_OPS", default: 120)
        let firstSeed = UInt64(environmentInt("OBSERVECORE_FUZZ_SEED", default: 1))
        var failures: [String] = []
        var executed = 0, notifications = 0
        expectNoLeaks("random driver[\(backend)]") { _ in
            for seed in firstSeed..<firstSeed + UInt64(runs) {
                let world = RandomDriverWorld(backend, seed: seed)
                let problems = world.run(operations: operations)
                executed += world.executed
                notifications += world.notifications
                if !problems.isEmpty {
                    failures.append("seed \(seed) (replay: OBSERVECORE_FUZZ_SEED=\(seed) OBSERVECORE_FUZZ_RUNS=1):\n  "
                                    + problems.prefix(5).joined(separator: "\n  "))
                    if failures.count >= 3 { break }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(notifications > executed / 4, "the operations were observed: \(notifications) notifications")
        print("random driver[\(backend)]: \(runs) runs from seed \(firstSeed), \(executed) operations, "
              + "\(notifications) notifications checked, \(failures.count) failing")
    }
}

/// One run's world: three people, a pool of students, an observed array of them, and the model
/// each is checked against.
final class RandomDriverWorld {
    private let backend: ObservationBackend
    private var rng: SplitMix64
    private(set) var executed = 0
    private(set) var notifications = 0
    private var problems: [String] = []
    private var step = 0

    // Properties: people and, per person, the age the model expects and what its token heard.
    private var people: [Person] = []
    private var ages: [Int] = []
    private var tokens: [ObservationToken?] = []
    private var heard: [[(old: Int, new: Int)]] = []
    /// Observer-tagged registrations (`addObserver`), one watcher per person at most.
    private var watchers: [Watcher?] = []
    private var watcherHeard: [Int] = []

    // The array, its model and the replicas its observers keep.
    private let pool: [Student]
    private let array: ObservableArray<Student>
    private var contents: [Student] = []
    private var plainReplica: [Student] = []
    private var trackingReplica: [Student] = []
    private var elementReports: [ArrayChange<Student>] = []
    private let queue = DispatchQueue(label: "random-driver.delivery")
    private final class QueuedReplica: @unchecked Sendable { var contents: [Student] = []; var changes = 0 }
    private let queued = QueuedReplica()
    private var arrayTokens: [ObservationToken] = []
    private var queuedToken: ObservationToken?
    private var inBatch = false

    init(_ backend: ObservationBackend, seed: UInt64) {
        self.backend = backend
        rng = SplitMix64(seed: seed)
        pool = (0..<10).map { Student(backend, "s\($0)") }
        array = ObservableArray<Student>(backend: backend)
        for _ in 0..<3 { addPerson() }
        observeArray()
    }

    /// Runs `operations` random operations; returns what disagreed with the model.
    func run(operations: Int) -> [String] {
        for _ in 0..<operations {
            step += 1
            switch rng.below(20) {
            case 0..<4: setAge()
            case 4: toggleToken()
            case 5: toggleWatcher()
            case 6: replacePerson()
            case 7..<11: edit()
            case 11..<13: batch()
            case 13..<16: setGrade()
            case 16: reobserveArray()
            case 17: sortOrReverse()
            default: replaceSubrange()
            }
            executed += 1
            verify()
            if problems.count >= 5 { break }
        }
        queue.sync {}
        if queued.contents.map(ObjectIdentifier.init) != contents.map(ObjectIdentifier.init) {
            fail("queued replica \(queued.contents) != model \(contents) after \(queued.changes) changes")
        }
        notifications += queued.changes
        for token in tokens { token?.cancel() }
        for token in arrayTokens { token.cancel() }
        queuedToken?.cancel()
        return problems
    }

    private func fail(_ message: String) { problems.append("step \(step): \(message)") }

    // MARK: Properties

    private func addPerson() {
        let person = Person(backend, age: 0)
        people.append(person)
        ages.append(0)
        heard.append([])
        watchers.append(nil)
        watcherHeard.append(0)
        tokens.append(nil)
        observePerson(people.count - 1)
    }

    private func observePerson(_ index: Int) {
        tokens[index] = people[index].observe(\.age, options: [.old, .new]) { [unowned self] _, change in
            heard[index].append((change.oldValue!, change.newValue!))
        }
    }

    private func setAge() {
        let index = rng.below(people.count)
        let old = ages[index], new = rng.below(4) == 0 ? old : rng.below(1_000)
        heard[index].removeAll()
        let watcherBefore = watcherHeard[index]
        people[index].age = new
        ages[index] = new
        if tokens[index] != nil {
            if heard[index].count != 1 || heard[index][0].old != old || heard[index][0].new != new {
                fail("person \(index) set \(old) -> \(new): token heard \(heard[index])")
            }
            notifications += heard[index].count
        } else if !heard[index].isEmpty {
            fail("person \(index): a cancelled token heard \(heard[index])")
        }
        let expected = watchers[index] == nil ? 0 : 1
        if watcherHeard[index] - watcherBefore != expected {
            fail("person \(index): watcher heard \(watcherHeard[index] - watcherBefore), expected \(expected)")
        }
        if people[index].age != new { fail("person \(index): reads \(people[index].age), set \(new)") }
    }

    private func toggleToken() {
        let index = rng.below(people.count)
        if let token = tokens[index] {
            token.cancel()
            tokens[index] = nil
        } else {
            observePerson(index)
        }
    }

    private func toggleWatcher() {
        let index = rng.below(people.count)
        if let watcher = watchers[index] {
            watchers[index] = nil
            guard rng.below(2) == 0 else { return }   // the watcher dies, which ends its registration
            people[index].removeObserver(watcher, for: \.age)
        } else {
            let watcher = Watcher()
            watchers[index] = watcher
            people[index].addObserver(watcher, for: \.age) { [unowned self] _, _, _ in watcherHeard[index] += 1 }
        }
        let expected = (tokens[index] == nil ? 0 : 1) + (watchers[index] == nil ? 0 : 1)
        if people[index].observationCount != expected {
            fail("person \(index): \(people[index].observationCount) registrations, expected \(expected)")
        }
    }

    /// A person dies with its registrations and a new one takes its place.
    private func replacePerson() {
        let index = rng.below(people.count)
        tokens[index]?.cancel()
        let person = Person(backend, age: 0)
        people[index] = person
        ages[index] = 0
        heard[index] = []
        watchers[index] = nil
        observePerson(index)
    }

    // MARK: The array

    private func observeArray() {
        plainReplica = contents
        trackingReplica = contents
        arrayTokens.append(array.observe { [unowned self] _, change in
            notifications += 1
            guard let next = change.applying(to: plainReplica) else { return fail("plain: no difference for \(change)") }
            plainReplica = next
        })
        arrayTokens.append(array.observe(options: [.old, .new], elementKeyPaths: [\Student.grade]) { [unowned self] _, change in
            if change.kind == .elementChanged { elementReports.append(change); return }
            guard let next = change.applying(to: trackingReplica) else { return fail("tracking: no difference for \(change)") }
            trackingReplica = next
        })
        if queuedToken == nil {   // the queued replica observes for the whole run
            let replica = queued
            replica.contents = contents
            queuedToken = array.observe(delivery: .queue(queue)) { _, change in
                replica.changes += 1
                if let next = change.applying(to: replica.contents) { replica.contents = next }
            }
        }
    }

    /// The inline observers cancel and register again, catching up from the current contents.
    private func reobserveArray() {
        for token in arrayTokens { token.cancel() }
        arrayTokens = []
        observeArray()
    }

    private func student() -> Student { pool[rng.below(pool.count)] }

    /// One random edit, applied to the array and the model alike.
    private func edit() {
        let count = contents.count
        switch rng.below(count == 0 ? 2 : 8) {
        case 0:
            let s = student()
            array.append(s); contents.append(s)
        case 1:
            let s = student(), at = rng.below(count + 1)
            array.insert(s, at: at); contents.insert(s, at: at)
        case 2:
            let at = rng.below(count)
            let removed = array.remove(at: at)
            if removed !== contents.remove(at: at) { fail("remove(at: \(at)) returned \(removed)") }
        case 3:
            let from = rng.below(count), to = rng.below(count)
            array.move(from: from, to: to)
            contents.insert(contents.remove(at: from), at: to)
        case 4:
            let i = rng.below(count), j = rng.below(count)
            array.swapAt(i, j); contents.swapAt(i, j)
        case 5:
            let s = student(), at = rng.below(count)
            array[at] = s; contents[at] = s
        case 6:
            let k = rng.below(min(count, 3) + 1)
            if rng.below(2) == 0 { array.removeLast(k); contents.removeLast(k) }
            else { array.removeFirst(k); contents.removeFirst(k) }
        default:
            let victim = student()
            array.removeAll(of: victim); contents.removeAll { $0 === victim }
        }
    }

    private func replaceSubrange() {
        let lower = rng.below(contents.count + 1), upper = lower + rng.below(contents.count - lower + 1)
        let replacement = (0..<rng.below(4)).map { _ in student() }
        array.replaceSubrange(lower..<upper, with: replacement)
        contents.replaceSubrange(lower..<upper, with: replacement)
    }

    private func sortOrReverse() {
        if rng.below(2) == 0 {
            array.sort { $0.name < $1.name }
            contents.sort { $0.name < $1.name }   // equal names are the same student: stability is moot
        } else {
            array.reverse(); contents.reverse()
        }
    }

    /// Several edits and element changes as one batch: one change reaches each observer.
    private func batch() {
        let before = notifications
        inBatch = true
        array.performBatchUpdates { _ in
            for _ in 0..<(1 + rng.below(5)) {
                if rng.below(3) == 0 { setGrade() } else { edit() }
            }
        }
        inBatch = false
        elementReports.removeAll()   // element changes inside a batch travel in the batch's change
        if notifications - before > 1 { fail("a batch reached the plain observer \(notifications - before) times") }
    }

    /// Sets a pooled student's grade: the element-tracking observer hears it once, at exactly the
    /// indices a scan of the model finds (nothing when the student is not in the array).
    private func setGrade() {
        let s = student()
        if !inBatch { elementReports.removeAll() }
        let old = s.grade
        s.grade += 1
        guard !inBatch else { return }
        let expected = contents.indices.filter { contents[$0] === s }
        if expected.isEmpty {
            if !elementReports.isEmpty { fail("\(s) is not in the array, yet reported \(elementReports.count) times") }
            return
        }
        guard elementReports.count == 1, let change = elementReports.first else {
            return fail("\(s) at \(expected): \(elementReports.count) element changes")
        }
        let indices = change.elements.map(\.newIndex)
        if indices != expected.map(Optional.some) || change.elements.contains(where: { $0.element !== s }) {
            fail("\(s) reported at \(indices), a scan finds \(expected)")
        }
        if change.elementOldValue as? Int != old || change.elementNewValue as? Int != s.grade {
            fail("\(s): element change \(String(describing: change.elementOldValue)) -> \(String(describing: change.elementNewValue))")
        }
        notifications += 1
        elementReports.removeAll()
    }

    // MARK: Checks after every operation

    private func verify() {
        let ids = contents.map(ObjectIdentifier.init)
        if array.elements.map(ObjectIdentifier.init) != ids { fail("array \(array.elements) != model \(contents)") }
        if plainReplica.map(ObjectIdentifier.init) != ids { fail("plain replica \(plainReplica) != model \(contents)") }
        if trackingReplica.map(ObjectIdentifier.init) != ids { fail("tracking replica \(trackingReplica) != model \(contents)") }
        array._checkInvariants()
        if step % 16 == 0 { ObservationRuntime._checkInvariants() }
    }
}
