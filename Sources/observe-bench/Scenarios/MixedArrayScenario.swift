@_spi(Testing) import ObserveCore
import SeededRandom

// `array.mixed`: the service-shaped array workload. Isolated rows hide what interleaving reveals
// (an index invalidated by one operation and rebuilt by the next costs nothing in either row
// alone), so this row interleaves, per tick, element property changes with middle inserts,
// removals and moves at random positions, every other tick inside one batch, on an array of
// 50,000 elements watched by three observers: a replica that applies every change to a plain
// array of ids, a counter, and a running aggregate (the sum of the elements' grades), kept up to
// date from the changes alone.

/// One operation of a tick, with the pool ids it involves (the same for every impl).
enum MixedOp {
    case elementChange(id: Int, value: Int)
    case insert(index: Int, id: Int)
    case remove(index: Int)
    case move(from: Int, to: Int)
}

/// Generates the ticks and keeps a plain mirror of the contents (pool ids), as `EditScript` does.
/// A tick is `elementChanges` property sets interleaved with `edits` structural edits (a third
/// each inserts, removals and moves) in random order; the array's length is back to N after each
/// tick. Element changes target elements present at that moment.
struct MixedScript {
    static let elementChanges = 300
    static let edits = 30
    private(set) var mirror: [Int]
    private var spares: [Int]
    private var generator: SplitMix64

    init(count: Int, seed: UInt64 = 0x0A11_3D0C) {
        mirror = Array(0..<count)
        spares = Array((StudentPool.spareBase..<(StudentPool.spareBase + 256)).reversed())
        generator = SplitMix64(seed: seed &+ UInt64(count))
    }

    /// The next tick's operations (already applied to the mirror).
    mutating func nextTick() -> [MixedOp] {
        var kinds = [Int](repeating: 0, count: Self.elementChanges)
        for edit in 0..<Self.edits { kinds.append(1 + edit % 3) }
        kinds.shuffle(using: &generator)
        var ops: [MixedOp] = []
        ops.reserveCapacity(kinds.count)
        for kind in kinds {
            let n = mirror.count
            switch kind {
            case 0:
                let id = mirror[Int.random(in: 0..<n, using: &generator)]
                let value = Int.random(in: 0..<1_000_000, using: &generator)
                ops.append(.elementChange(id: id, value: value))
            case 1:
                let index = Int.random(in: 0...n, using: &generator)
                let id = spares.removeLast()
                mirror.insert(id, at: index)
                ops.append(.insert(index: index, id: id))
            case 2:
                let index = Int.random(in: 0..<n, using: &generator)
                spares.append(mirror.remove(at: index))
                ops.append(.remove(index: index))
            default:
                let from = Int.random(in: 0..<n, using: &generator), to = Int.random(in: 0..<n, using: &generator)
                mirror.insert(mirror.remove(at: from), at: to)
                ops.append(.move(from: from, to: to))
            }
        }
        return ops
    }
}

/// `array.mixed` at 50,000 elements; one op = one tick (300 element changes, 30 edits).
/// - c, swift: an `ObservableArray` observed three times with the element key `grade`
///   (replica, counter, aggregate); odd ticks run inside `performBatchUpdates`.
/// - per-element-naive: one naive registration per element (`NaiveObservedArray`, index map);
///   a move is a removal and an insertion (what its user would write); its one observer does the
///   three observers' work. It has no batches: every edit is reported at once.
/// - diff: the edits on a plain `[Int]` of ids, element properties set on plain objects nobody
///   observes, then `after.difference(from: before)` once per tick applied to the replica. It
///   misses the element changes (it cannot see them), and items inserted and removed in a tick.
struct ArrayMixedScenario: ArrayScenario {
    static let defaultCount = 50_000
    let n: Int
    var name: String { "array.mixed" }
    var summary: String {
        "per tick: 300 element changes interleaved with 30 middle inserts/removals/moves (every other tick "
            + "batched); 3 observers: replica, counter, aggregate"
    }
    var unit: String { "ns per tick" }
    var impls: [Impl] { [.c, .swift, .perElementNaive, .diff] }
    var peer: Impl? { .perElementNaive }
    var chartFamily: ChartFamily? { nil }
    var notes: [String] {
        ["one op = one tick: 300 element property sets and 30 structural edits (10 inserts, 10 removals, 10 moves at "
         + "uniformly random positions, seeded), in random order; odd ticks inside one performBatchUpdates (c, swift).",
         "verified at tear-down: every replica equals the array, every aggregate equals the sum of the grades of "
         + "the elements in the array (diff's excepted: it cannot see element changes), the contents equal the "
         + "script's. The aggregate observer of c/swift takes element changes with .old/.new and, from a batch's "
         + "change, reads the grades of the elements it reports inserted or modified."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { heavySampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "array.mixed/\(impl.rawValue)"
        var script = MixedScript(count: n)
        var ops: [MixedOp] = []
        var ticks = 0
        let prepare: (Int) -> Void = { _ in ops = script.nextTick() }
        var replica = Array(0..<n)
        var counter = 0
        // The aggregate observer's state: the sum of the grades of the elements in the array,
        // and the grade it last accounted for each of them (by id).
        var aggregate = 0
        var accounted: [Int: Int] = [:]
        func startAggregate(_ grades: [(id: Int, grade: Int)]) {
            accounted = Dictionary(uniqueKeysWithValues: grades.map { ($0.id, $0.grade) })
            aggregate = grades.reduce(0) { $0 &+ $1.grade }
        }
        func account(_ id: Int, _ grade: Int?) {
            aggregate &+= (grade ?? 0) &- (accounted[id] ?? 0)
            accounted[id] = grade
        }
        func verify(_ ids: [Int], expectedAggregate: Int?) -> String? {
            if ids != script.mirror { return "\(label): contents differ from the script's" }
            if replica != ids { return "\(label): the replica differs from the array" }
            if let expectedAggregate, aggregate != expectedAggregate {
                return "\(label): aggregate \(aggregate), expected \(expectedAggregate)"
            }
            if counter == 0 { return "\(label): the counter observer was never called" }
            return nil
        }

        switch impl {
        case .c, .swift:
            let backend: ObservationBackend = impl == .c ? .c : .swift
            let pool = StudentPool.kvoStudents(backend)
            let array = ObservableArray(pool[0..<n], backend: backend)
            startAggregate(pool[0..<n].map { ($0.id, $0.grade) })
            let tokens = [
                array.observe(elementKeyPaths: [\KVOStudent.grade]) { _, change in
                    if change.kind != .elementChanged { applyRuns(change, to: &replica) }
                },
                array.observe(elementKeyPaths: [\KVOStudent.grade]) { _, _ in counter &+= 1 },
                array.observe(options: [.new], elementKeyPaths: [\KVOStudent.grade]) { _, change in
                    if change.kind == .elementChanged {
                        let grade = change.elementChange(for: \KVOStudent.grade)!.new!   // typed: no Any
                        for element in change.elements { account(element.element.id, grade) }
                        return
                    }
                    // Structural, or a batch's one change (its element changes are modify runs).
                    var elements = change.elements.makeIterator()
                    for run in change.runs {
                        for _ in 0..<run.range.count {
                            let element = elements.next()!.element
                            switch run.kind {
                            case .remove: account(element.id, nil)
                            case .insert, .modify: account(element.id, element.grade)
                            case .move: break
                            }
                        }
                    }
                },
            ]
            func run(_ array: ObservableArray<KVOStudent>) {
                for op in ops {
                    switch op {
                    case .elementChange(let id, let value): pool[id].grade = value
                    case .insert(let index, let id): array.insert(pool[id], at: index)
                    case .remove(let index): array.remove(at: index)
                    case .move(let from, let to): array.move(from: from, to: to)
                    }
                }
            }
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    if ticks & 1 == 1 { array.performBatchUpdates(run) } else { run(array) }
                    ticks += 1
                }
            }, tearDown: {
                for token in tokens { token.cancel() }
                array._checkInvariants()
                return verify(array.map(\.id), expectedAggregate: array.reduce(0) { $0 &+ $1.grade })
            }, prepareBatch: prepare)

        case .perElementNaive:
            freshNaiveTable()
            let pool = StudentPool.naiveStudents()
            startAggregate(pool[0..<n].map { ($0.id, $0.grade) })
            let peer = NaiveObservedArray(pool[0..<n], indexing: .map) { change in
                switch change.kind {
                case .insert:
                    replica.insert(change.value, at: change.index)
                    account(change.value, pool[change.value].grade)
                case .append: break
                case .remove, .removeLast: account(replica.remove(at: change.index), nil)
                case .elementChanged: account(replica[change.index], change.value)
                }
                counter &+= 1
            }
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    for op in ops {
                        switch op {
                        case .elementChange(let id, let value): pool[id].grade = value
                        case .insert(let index, let id): peer.insert(pool[id], at: index)
                        case .remove(let index): peer.remove(at: index)
                        case .move(let from, let to): peer.insert(peer.remove(at: from), at: to)
                        }
                    }
                    ticks += 1
                }
            }, tearDown: {
                let ids = peer.elements.map(\.id)
                let expected = peer.elements.reduce(0) { $0 &+ $1.grade }
                peer.cancelAll()
                freshNaiveTable()
                return verify(ids, expectedAggregate: expected)
            }, prepareBatch: prepare)

        case .diff:
            let pool = StudentPool.naiveStudents().map { PlainStudent(id: $0.id) }
            var ids = Array(0..<n)
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let before = ids
                    for op in ops {
                        switch op {
                        case .elementChange(let id, let value): pool[id].grade = value
                        case .insert(let index, let id): ids.insert(id, at: index)
                        case .remove(let index): ids.remove(at: index)
                        case .move(let from, let to): ids.insert(ids.remove(at: from), at: to)
                        }
                    }
                    replica = replica.applying(ids.difference(from: before))!
                    counter &+= 1
                    ticks += 1
                }
            }, tearDown: {
                verify(ids, expectedAggregate: nil)
            }, prepareBatch: prepare)

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

/// A plain object whose property nobody observes (the re-diff peer's elements).
final class PlainStudent {
    let id: Int
    var grade = 0
    init(id: Int) { self.id = id }
}

/// What a replica does with an `ArrayChange`: take out the removed elements and the moves'
/// sources (highest old index first), then put in the inserted elements and the moves'
/// destinations (lowest new index first), as the change's canonical order allows.
@inline(never)
func applyRuns(_ change: ArrayChange<KVOStudent>, to replica: inout [Int]) {
    var takeOut: [Int] = []
    var putIn: [(index: Int, id: Int)] = []
    let elements = change.elements
    var cursor = 0
    for run in change.runs {
        for _ in 0..<run.range.count {
            let element = elements[cursor]
            cursor += 1
            switch run.kind {
            case .remove: takeOut.append(element.oldIndex!)
            case .insert: putIn.append((element.newIndex!, element.element.id))
            case .move:
                takeOut.append(element.oldIndex!)
                putIn.append((element.newIndex!, element.element.id))
            case .modify: break
            }
        }
    }
    for index in takeOut.sorted(by: >) { replica.remove(at: index) }
    for (index, id) in putIn.sorted(by: { $0.index < $1.index }) { replica.insert(id, at: index) }
}
