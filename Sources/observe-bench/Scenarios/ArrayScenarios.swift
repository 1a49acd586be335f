@_spi(Testing) import ObserveCore
import SeededRandom
import Observation
import OpenCombine

// The array scenarios, each at N = 1k / 10k / 100k elements (`--elements`): an
// array of N "students" observed with one element key path (`grade`), by ObserveCore (`c`,
// `swift`: one registration per array) and by the approaches a user would take instead — one
// observer per element in a naive registry (`per-element-naive`, the seeds' approach; `scan`),
// in Swift's Observation (`observation`) or OpenCombine (`opencombine`), a plain Swift array
// (`plain`, observed by nobody: the floor) and `CollectionDifference` (`diff`).
//
// Every observer reads what it was told (an index, a run) into a `Sink`, and every fixture
// checks at tear-down that its observers were called as often as expected with the expected
// indices, so that a peer that silently stopped reporting (or reported wrong indices) cannot
// look fast.

/// What the array scenarios share.
protocol ArrayScenario: Scenario {}

extension ArrayScenario {
    var kind: ScenarioKind { .latency }
    var sizeLabel: String? { "N=\(groupThousands(n))" }
    var ratioStyle: RatioStyle { .speedupOverPeer }

    /// Operations cheap enough to batch: calibrated batches, `arrayMeasureNs` per repetition.
    func cheapSampling(_ config: RunConfig, measureFraction: Double = 1) -> Sampling {
        Sampling(measureNs: UInt64(Double(config.arrayMeasureNs) * measureFraction), warmupNs: config.arrayWarmupNs,
                 minSamples: 5, fixedBatch: config.fixedBatch)
    }

    /// Operations that are a whole setup / append / batch each: one per timed batch; the first
    /// repetition warms up one of them, later ones do not (each op is long and starts cold anyway).
    func heavySampling(_ config: RunConfig) -> Sampling {
        Sampling(measureNs: config.arrayMeasureNs, warmupNs: 0, minSamples: 1, fixedBatch: 1)
    }
}

/// ObserveCore's backend for an impl.
func backend(_ impl: Impl) -> ObservationBackend { impl == .c ? .c : .swift }

/// The one observation every ObserveCore fixture makes: the array's mutations and its
/// elements' `grade`, with `handler` reading the change.
func observeArray(_ array: ObservableArray<KVOStudent>,
                          _ handler: @escaping (ArrayChange<KVOStudent>) -> Void) -> ObservationToken {
    array.observe(elementKeyPaths: [\KVOStudent.grade]) { _, change in handler(change) }
}

/// The observer's side effect when it is told about an element change: the element's index.
/// ObserveCore's documented way (`change.elements`, README "Observing arrays").
func readElementChange(_ change: ArrayChange<KVOStudent>, _ sink: Sink) {
    for element in change.elements { sink.add(element.newIndex!) }
}

/// The observer's side effect for a structural change: start + length of every run.
private func readRuns(_ change: ArrayChange<KVOStudent>, _ sink: Sink) {
    for run in change.runs { sink.add(run.range.lowerBound &+ run.range.count) }
}

/// Starts a naive-registry fixture from an empty table, as in a fresh process (a Swift
/// Dictionary keeps its capacity when emptied: without this, the first fixture's growth would
/// be paid once and hidden from every later one) and hands the memory back afterwards.
func freshNaiveTable() { NaiveRegistry.shared.releaseStorageIfEmpty() }

/// Median of the measured values, leaving out the first when there are several (the first
/// batch of a fixture may pay one-time initialisation).
private func steadyMedian(_ values: [Double]) -> Double? {
    if values.isEmpty { return nil }
    return Harness.median(values.count > 1 ? Array(values.dropFirst()) : values)
}

func mismatch(_ what: String, _ got: Int, _ expected: Int) -> String? {
    got == expected ? nil : "\(what): observers reported \(got), expected \(expected)"
}

// MARK: - array.setup

/// `array.setup`: observe an existing array of N elements with one element key path. One op is
/// the whole setup; figures are per element: time, heap bytes held afterwards (malloc
/// accounting, measured around the setup call only), and for `c`/`swift` the element-position
/// index's own bytes (`_elementIndexBytes / N`). What each impl sets up:
/// - c, swift: `array.observe(elementKeyPaths: [\.grade])` (one registration + the position index);
/// - per-element-naive: one naive registration per element + the element -> index Dictionary;
/// - observation: one `withObservationTracking` per element + the Dictionary;
/// - opencombine: one `sink` per element (kept in an array) + the Dictionary.
/// The array (and the elements) exist before the clock starts and are not counted.
struct ArraySetupScenario: ArrayScenario {
    let n: Int
    var name: String { "array.setup" }
    var summary: String {
        "observe an existing array of N elements with one element key path (time and heap bytes per element)"
    }
    var unit: String { "ns per element" }
    var impls: [Impl] { [.c, .swift, .perElementNaive, .observation, .opencombine] }
    var peer: Impl? { .perElementNaive }
    var chartFamily: ChartFamily? {
        ChartFamily(title: "array.setup — observe an array of N elements with one element key path",
                    xLabel: "elements (N)", yLabel: "ns per element")
    }
    var notes: [String] {
        ["one op = the whole setup; ns and bytes are per element. bytes: heap held after the setup minus before it "
         + "(malloc accounting); index: ObserveCore's element-position index alone (_elementIndexBytes / N).",
         "per-element-naive, observation and opencombine include building their element -> index Dictionary "
         + "(what they need to report indices); the array and its elements exist before and are not counted.",
         "c/swift from 8,192 elements: the index pass and the membership pass run on two threads at once "
         + "(DispatchQueue.concurrentPerform), so ns/element is wall time, with two cores busy; below that, one."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { heavySampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "array.setup/\(impl.rawValue)"
        let sink = Sink()
        var heapBytes: [Double] = []
        var indexBytes: [Double] = []
        var heapBefore = 0
        var setups = 0
        func recordHeap() { heapBytes.append(Double(HeapAccounting.bytesInUse() - heapBefore) / Double(n)) }
        let bytes: () -> (heap: Double, index: Double?)? = {
            steadyMedian(heapBytes).map { ($0, steadyMedian(indexBytes)) }
        }

        switch impl {
        case .c, .swift:
            let backend = backend(impl)
            let elements = StudentPool.kvoStudents(backend)[0..<n]
            var array: ObservableArray<KVOStudent>?
            var token: ObservationToken?
            return Fixture(runBatch: { _ in
                token = observeArray(array!) { readElementChange($0, sink) }
                setups += 1
            }, tearDown: {
                sink.consume()
                return mismatch("\(label) calls", sink.calls, 0)
            }, prepareBatch: { _ in
                array = ObservableArray(elements, backend: backend)
                heapBefore = HeapAccounting.bytesInUse()
            }, finishBatch: { _ in
                recordHeap()
                indexBytes.append(Double(array!._elementIndexBytes) / Double(n))
                token!.cancel()
                token = nil
                array = nil
            }, itemsPerOp: n, bytesPerItem: bytes)

        case .perElementNaive:
            let elements = StudentPool.naiveStudents()[0..<n]
            var peer: NaiveObservedArray?
            return Fixture(runBatch: { _ in
                peer = NaiveObservedArray(elements, indexing: .map) { change in sink.add(change.index) }
                setups += 1
            }, tearDown: {
                freshNaiveTable()
                sink.consume()
                return mismatch("\(label) calls", sink.calls, 0)
            }, prepareBatch: { _ in
                freshNaiveTable()
                heapBefore = HeapAccounting.bytesInUse()
            }, finishBatch: { _ in
                recordHeap()
                peer!.cancelAll()
                peer = nil
            }, itemsPerOp: n, bytesPerItem: bytes)

        case .observation:
            // Fresh elements for every setup: Observation cannot remove a tracking, and an
            // element's registrar keeps what earlier trackings allocated.
            var elements: [ObservationStudent] = []
            var peer: ObservationArrayPeer?
            return Fixture(runBatch: { _ in
                peer = ObservationArrayPeer(elements) { change in sink.add(change.index) }
                setups += 1
            }, tearDown: {
                sink.consume()
                return mismatch("\(label) calls", sink.calls, 0)
            }, prepareBatch: { _ in
                elements = (0..<n).map { ObservationStudent(id: $0) }
                heapBefore = HeapAccounting.bytesInUse()
            }, finishBatch: { _ in
                recordHeap()
                peer!.retire()
                peer = nil
                elements = []
            }, itemsPerOp: n, bytesPerItem: bytes)

        case .opencombine:
            // Fresh elements too: `@Published` allocates its subject on first subscription and
            // keeps it, which a reused element would not pay again.
            var elements: [PublishedStudent] = []
            var peer: PublishedArrayPeer?
            return Fixture(runBatch: { _ in
                peer = PublishedArrayPeer(elements) { change in sink.add(change.index) }
                setups += 1
            }, tearDown: {
                sink.consume()
                // Each sink receives the current value once, on subscription.
                return mismatch("\(label) calls", sink.calls, setups * n)
            }, prepareBatch: { _ in
                elements = (0..<n).map { PublishedStudent(id: $0) }
                heapBefore = HeapAccounting.bytesInUse()
            }, finishBatch: { _ in
                recordHeap()
                peer!.cancelAll()
                peer = nil
                elements = []
            }, itemsPerOp: n, bytesPerItem: bytes)

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

// MARK: - array.element-change

/// `array.element-change`: one element's `grade` is set; the array's observer is told the
/// element changed, with its index, and adds the index to a counter. The elements set follow a
/// fixed pseudo-random sequence of 4,096 indices (the same for every impl), so positions
/// average N/2 and the elements touched do not all sit in cache. The fixture checks that every
/// set was reported once and that the indices reported are the right ones.
struct ArrayElementChangeScenario: ArrayScenario {
    let n: Int
    var name: String { "array.element-change" }
    var summary: String { "set one element's observed property; the observer reads the element's index" }
    var impls: [Impl] { [.c, .swift, .perElementNaive, .scan, .observation, .opencombine] }
    var peer: Impl? { .perElementNaive }
    /// Impls run only when named with `--impls`: OpenCombine's 100,000 subscriptions take about
    /// 0.3 s to build and tear down per repetition, and its per-change cost is set.1's plus a
    /// Dictionary lookup.
    static let optInImpls: [Impl] = [.opencombine]
    var optInImpls: [Impl] { Self.optInImpls }
    var chartFamily: ChartFamily? {
        ChartFamily(title: "array.element-change — an element's property set, reported with its index",
                    xLabel: "elements (N)", yLabel: "ns per change")
    }
    var notes: [String] {
        ["c/swift read the index from change.elements (the documented way); per-element-naive, observation and "
         + "opencombine from their Dictionary map; scan with firstIndex(where: ===). Every reported index is checked.",
         "observation and opencombine are told before the value is stored (will-set); the others after it. "
         + "opencombine runs here only with --impls naming it (its per-change cost is set.1's plus a map lookup)."]
    }

    static let sequenceLength = 4096

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling {
        // scan costs O(N) per change: a shorter measuring time is plenty at its size.
        cheapSampling(config, measureFraction: impl == .scan ? 0.5 : 1)
    }

    /// The indices set, in order (seeded by N, the same for every impl and for the rows that
    /// repeat this one with more observers).
    fileprivate static func order(n: Int) -> [Int] {
        var generator = SplitMix64(seed: 0xE1E_C4A6E &+ UInt64(n))
        return (0..<Self.sequenceLength).map { _ in Int.random(in: 0..<n, using: &generator) }
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "array.element-change/\(impl.rawValue)"
        let sink = Sink()
        let sets = ElementChangeSequence(n: n)
        let order = sets.order
        func check(extraCalls: Int = 0, extraSum: Int = 0) -> String? {
            sink.consume()
            return mismatch("\(label) calls", sink.calls, sets.cursor + extraCalls)
                ?? mismatch("\(label) sum of indices", sink.total, sets.expectedIndexSum &+ extraSum)
        }

        switch impl {
        case .c, .swift:
            let backend = backend(impl)
            let pool = StudentPool.kvoStudents(backend)
            let array = ObservableArray(pool[0..<n], backend: backend)
            let token = observeArray(array) { readElementChange($0, sink) }
            let targets = order.map { pool[$0] }
            return Fixture(runBatch: { count in sets.run(count, targets, setGrade) }, tearDown: {
                token.cancel()
                array._checkInvariants()
                return check()
            })

        case .perElementNaive, .scan:
            freshNaiveTable()
            let pool = StudentPool.naiveStudents()
            let peer = NaiveObservedArray(pool[0..<n], indexing: impl == .scan ? .scan : .map) { change in
                sink.add(change.index)
            }
            let targets = order.map { pool[$0] }
            return Fixture(runBatch: { count in sets.run(count, targets, setGrade) }, tearDown: {
                peer.cancelAll()
                freshNaiveTable()
                return check()
            })

        case .observation:
            let elements = (0..<n).map { ObservationStudent(id: $0) }
            let peer = ObservationArrayPeer(elements) { change in sink.add(change.index) }
            let targets = order.map { elements[$0] }
            return Fixture(runBatch: { count in sets.run(count, targets, setGrade) }, tearDown: {
                peer.retire()
                return check()
            })

        case .opencombine:
            let pool = StudentPool.publishedStudents()
            let peer = PublishedArrayPeer(pool[0..<n]) { change in sink.add(change.index) }
            let targets = order.map { pool[$0] }
            return Fixture(runBatch: { count in sets.run(count, targets, setGrade) }, tearDown: {
                peer.cancelAll()
                // Each sink also received the current value once, on subscription (index i).
                return check(extraCalls: n, extraSum: n &* (n - 1) / 2)
            })

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

/// The sets an element-change row makes, the same for every impl: the elements of a fixed
/// pseudo-random sequence of 4,096 indices (seeded by N) in turn, each to a fresh value.
final class ElementChangeSequence {
    /// The indices set, in order.
    let order: [Int]
    /// How many sets were made.
    private(set) var cursor = 0
    private var base = runtimeSeed

    init(n: Int) { order = ArrayElementChangeScenario.order(n: n) }

    /// Makes the next `count` sets: `set(targets[order position], value)`, where `targets` holds
    /// the element of each position of `order`.
    @inline(__always)
    func run<Element>(_ count: Int, _ targets: [Element], _ set: (Element, Int) -> Void) {
        let mask = ArrayElementChangeScenario.sequenceLength - 1
        var next = cursor
        for i in 0..<count {
            set(targets[next & mask], base &+ i)
            next &+= 1
        }
        cursor = next
        base &+= count
    }

    /// The sum of the indices the sets made so far must report.
    var expectedIndexSum: Int {
        let whole = order.reduce(0, &+)
        return (cursor / order.count) &* whole &+ order[0..<(cursor % order.count)].reduce(0, &+)
    }
}

// MARK: - array.insert-front

/// `array.insert-front`: one op removes the last element and inserts it at index 0 (the array
/// rotates by one, so N stays fixed and no element is allocated); both mutations are delivered
/// to the observer, which reads each change's run. ObserveCore's ring makes both O(1), with no
/// index entry touched for the elements that stay. per-element-naive pays what its approach
/// costs: the element's registration removed and re-added, and its index map shifted (O(N)).
struct ArrayInsertFrontScenario: ArrayScenario {
    let n: Int
    var name: String { "array.insert-front" }
    var summary: String {
        "removeLast() then insert(it, at: 0) on an observed array (N stays fixed); one op = both, both delivered"
    }
    var unit: String { "ns per op" }
    var impls: [Impl] { [.c, .swift, .perElementNaive, .plain] }
    var peer: Impl? { .perElementNaive }
    var chartFamily: ChartFamily? {
        ChartFamily(title: "array.insert-front — removeLast + insert at 0 (N fixed), both observed",
                    xLabel: "elements (N)", yLabel: "ns per op (removeLast + insert at 0)")
    }
    var notes: [String] {
        ["N is kept fixed by removing from the end: one op = removeLast() + insert(that element, at: 0). "
         + "plain: the same on a Swift Array nobody observes (an O(N) memmove).",
         "per-element-naive shifts its element -> index map in place over Dictionary.values (no re-hashing)."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { cheapSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "array.insert-front/\(impl.rawValue)"
        let sink = Sink()
        var ops = 0
        // Each op reports a removal at n-1 and an insertion at 0, each of one element.
        func check() -> String? {
            sink.consume()
            return mismatch("\(label) calls", sink.calls, 2 * ops)
                ?? mismatch("\(label) sum of start + length", sink.total, ops &* (n + 1))
        }
        switch impl {
        case .c, .swift:
            let backend = backend(impl)
            let array = ObservableArray(StudentPool.kvoStudents(backend)[0..<n], backend: backend)
            let token = observeArray(array) { readRuns($0, sink) }
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let element = array.removeLast()
                    array.insert(element, at: 0)
                }
                ops += count
            }, tearDown: {
                token.cancel()
                array._checkInvariants()
                return check()
            })

        case .perElementNaive:
            freshNaiveTable()
            let peer = NaiveObservedArray(StudentPool.naiveStudents()[0..<n], indexing: .map) { change in
                sink.add(change.index &+ change.count)
            }
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let element = peer.removeLast()
                    peer.insert(element, at: 0)
                }
                ops += count
            }, tearDown: {
                let consistent = peer.mapIsConsistent()
                peer.cancelAll()
                freshNaiveTable()
                return consistent ? check() : "\(label): the index map disagrees with the array"
            })

        case .plain:
            var array = Array(StudentPool.kvoStudents(.c)[0..<n])
            return Fixture(runBatch: { count in
                // Edited as a local (moved out and back, no copy): no exclusivity check per op.
                var local: [KVOStudent] = []
                swap(&local, &array)
                for _ in 0..<count {
                    let element = local.removeLast()
                    local.insert(element, at: 0)
                }
                swap(&local, &array)
            }, tearDown: {
                blackHole(array.count &+ array[0].id)
                return nil
            })

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

// MARK: - array.append-10k, array.remove-10k

/// `array.append-10k`: `append(contentsOf:)` of 10,000 elements to an observed array of N; one
/// op is the whole append, figures are per appended element. ObserveCore reports it as one
/// change of one run (checked: a change with more runs is a warning). The 10,000 are removed
/// again after each op, outside the clock, so N stays fixed.
///
/// `array.remove-10k` (`removes`): the mirror, `removeLast(10,000)` from an observed array of
/// N + 10,000; the 10,000 are appended before each op, outside the clock. Figures are per
/// removed element. No target: the row keeps the cost of a long removal in view.
struct ArrayAppendScenario: ArrayScenario {
    let n: Int
    var removes = false
    static let appended = 10_000
    var name: String { removes ? "array.remove-10k" : "array.append-10k" }
    var summary: String {
        removes ? "removeLast(10,000) from an observed array of N + 10,000 (per removed element)"
            : "append(contentsOf:) 10,000 elements to an observed array of N (per appended element)"
    }
    var unit: String { "ns per element" }
    var impls: [Impl] { [.c, .swift, .perElementNaive, .plain] }
    var peer: Impl? { .perElementNaive }
    var chartFamily: ChartFamily? {
        removes
            ? ChartFamily(title: "array.remove-10k — removeLast(10,000) from an observed array of N + 10,000",
                          xLabel: "elements (N)", yLabel: "ns per removed element")
            : ChartFamily(title: "array.append-10k — append(contentsOf:) 10,000 elements to an observed array of N",
                          xLabel: "elements (N)", yLabel: "ns per appended element")
    }
    var notes: [String] {
        removes
            ? ["one op = one removeLast(10,000) of the elements appended last; figures per removed element; the "
               + "append(contentsOf:) before it is not timed. c/swift: every removal is checked to arrive as one change "
               + "of one run of 10,000.",
               "c/swift: the removed elements are moved out in bulk for the change and each one's membership is "
               + "counted down. At 100k each position-index entry is taken out (a backward-shift deletion, ~580 "
               + "instructions at the table's 84% load); at 1k and 10k the run is more than a quarter of the array, "
               + "so the index is left to one rebuild at the next element change, which this row never makes (the "
               + "ops-scaling rows time index upkeep with element changes)."]
            : ["one op = one append(contentsOf:) of 10,000; figures per appended element; removeLast(10,000) afterwards "
               + "is not timed. c/swift: every append is checked to arrive as one change of one run of 10,000.",
               "c/swift: the run is copied in by two threads sharing its chunks, then indexed on one while the other "
               + "counts one membership per element (DispatchQueue.concurrentPerform, as setup's passes), so ns/element "
               + "is wall time."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { heavySampling(config) }

    /// The timed edit and the untimed one that undoes it, for `count` ops of `k` elements.
    private func edits(append: @escaping () -> Void, removeLast: @escaping (Int) -> Void, k: Int)
    -> (run: (Int) -> Void, prepare: ((Int) -> Void)?, finish: ((Int) -> Void)?) {
        if removes {
            return ({ count in for _ in 0..<count { removeLast(k) } },
                    { count in for _ in 0..<count { append() } }, nil)
        }
        return ({ count in for _ in 0..<count { append() } }, nil, { count in removeLast(count * k) })
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, k = Self.appended, label = "\(name)/\(impl.rawValue)"
        let sink = Sink()
        var ops = 0
        // Each op: one append change (one run of k) and one removal change (one run of k).
        func check() -> String? {
            sink.consume()
            return mismatch("\(label) calls", sink.calls, 2 * ops) ?? mismatch("\(label) elements", sink.total, 2 * k * ops)
        }
        switch impl {
        case .c, .swift:
            let backend = backend(impl)
            let pool = StudentPool.kvoStudents(backend)
            let spares = Array(pool[StudentPool.spareBase..<(StudentPool.spareBase + k)])
            let array = ObservableArray(pool[0..<n], backend: backend)
            var multiRun = 0
            let token = observeArray(array) { change in
                let runs = change.runs
                if runs.count != 1 { multiRun += 1 }
                for run in runs { sink.add(run.range.count) }
            }
            let edit = edits(append: { array.append(contentsOf: spares) }, removeLast: { array.removeLast($0) }, k: k)
            return Fixture(runBatch: { count in
                edit.run(count)
                ops += count
            }, tearDown: {
                token.cancel()
                array._checkInvariants()
                if multiRun > 0 { return "\(label): \(multiRun) change(s) had more than one run" }
                return check()
            }, prepareBatch: edit.prepare, finishBatch: edit.finish, itemsPerOp: k)

        case .perElementNaive:
            freshNaiveTable()
            let pool = StudentPool.naiveStudents()
            let spares = Array(pool[StudentPool.spareBase..<(StudentPool.spareBase + k)])
            let peer = NaiveObservedArray(pool[0..<n], indexing: .map) { change in sink.add(change.count) }
            let edit = edits(append: { peer.append(contentsOf: spares) }, removeLast: { peer.removeLast($0) }, k: k)
            return Fixture(runBatch: { count in
                edit.run(count)
                ops += count
            }, tearDown: {
                let consistent = peer.mapIsConsistent()
                peer.cancelAll()
                freshNaiveTable()
                return consistent ? check() : "\(label): the index map disagrees with the array"
            }, prepareBatch: edit.prepare, finishBatch: edit.finish, itemsPerOp: k)

        case .plain:
            let pool = StudentPool.kvoStudents(.c)
            let spares = Array(pool[StudentPool.spareBase..<(StudentPool.spareBase + k)])
            var array = Array(pool[0..<n])
            let edit = edits(append: { array.append(contentsOf: spares) }, removeLast: { array.removeLast($0) }, k: k)
            return Fixture(runBatch: edit.run, tearDown: {
                blackHole(array.count)
                return nil
            }, prepareBatch: edit.prepare, finishBatch: edit.finish, itemsPerOp: k)

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

// MARK: - array.batch-100

/// `array.batch-100`: 100 random edits (seeded; 25 insertions, 25 removals, 25 replacements and
/// 25 swaps at uniformly random indices, in random order — the same edits for every impl) made
/// to an observed array of N, and one coalesced change delivered to one observer. One op = one
/// batch, the edits included.
/// - c, swift: the edits inside `performBatchUpdates`; the observer reads the change's runs.
/// - diff: snapshot a plain `[Int]` of element ids, make the same edits to it, then
///   `after.difference(from: before)`; the observer reads the difference's counts. Ids are the
///   cheapest elements to diff (favouring the peer); diffing the objects by identity costs more.
/// - plain: the same edits to a plain `[Int]`, nothing else (the floor: the edits alone).
struct ArrayBatchScenario: ArrayScenario {
    let n: Int
    var name: String { "array.batch-100" }
    var summary: String {
        "100 random edits (25 insert, 25 remove, 25 replace, 25 swap; seeded) to an observed array, "
            + "delivered as one change (per batch)"
    }
    var unit: String { "ns per batch" }
    var impls: [Impl] { [.c, .swift, .diff, .plain] }
    var peer: Impl? { .diff }
    var chartFamily: ChartFamily? {
        ChartFamily(title: "array.batch-100 — 100 random edits delivered as one change",
                    xLabel: "elements (N)", yLabel: "ns per batch of 100 edits")
    }
    var notes: [String] {
        ["one op = one batch of 100 edits, edits included; diff and plain edit a [Int] of ids (diff: snapshot + "
         + "edits + after.difference(from: before)); the contents after every impl's batches are checked equal.",
         "an insertion or removal in the middle of a ring moves the shorter side, O(min(i, N - i)) elements, in bulk "
         + "(memmove); c/swift then rebuild the element-position index once, lazily, when more than 64 moved."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { heavySampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "array.batch-100/\(impl.rawValue)"
        let sink = Sink()
        var script = EditScript(count: n)
        var edits: [ArrayEdit] = []
        var ops = 0
        let prepare: (Int) -> Void = { _ in edits = script.nextBatch() }
        switch impl {
        case .c, .swift:
            let backend = backend(impl)
            let pool = StudentPool.kvoStudents(backend)
            let array = ObservableArray(pool[0..<n], backend: backend)
            let token = observeArray(array) { change in
                var touched = 0
                for run in change.runs { touched &+= run.range.count }
                sink.add(touched)
            }
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    array.performBatchUpdates { array in
                        for edit in edits {
                            switch edit {
                            case .insert(let index, let id): array.insert(pool[id], at: index)
                            case .remove(let index): array.remove(at: index)
                            case .replace(let index, let id): array[index] = pool[id]
                            case .swap(let i, let j): array.swapAt(i, j)
                            }
                        }
                    }
                }
                ops += count
            }, tearDown: {
                token.cancel()
                array._checkInvariants()
                sink.consume()
                if array.map(\.id) != script.mirror { return "\(label): contents differ from the edit script's" }
                return mismatch("\(label) changes delivered", sink.calls, ops)
            }, prepareBatch: prepare)

        case .diff:
            var ids = Array(0..<n)
            let observer: (CollectionDifference<Int>) -> Void = { difference in
                sink.add(difference.insertions.count &+ difference.removals.count)
            }
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let before = ids
                    applyEdits(edits, to: &ids)
                    observer(ids.difference(from: before))
                }
                ops += count
            }, tearDown: {
                sink.consume()
                if ids != script.mirror { return "\(label): contents differ from the edit script's" }
                return mismatch("\(label) changes delivered", sink.calls, ops)
            }, prepareBatch: prepare)

        case .plain:
            var ids = Array(0..<n)
            return Fixture(runBatch: { count in
                for _ in 0..<count { applyEdits(edits, to: &ids) }
            }, tearDown: {
                if ids != script.mirror { return "\(label): contents differ from the edit script's" }
                blackHole(ids.count)
                return nil
            }, prepareBatch: prepare)

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

/// The edits applied to a plain array of ids (`diff`, `plain`).
@inline(never)
func applyEdits(_ edits: [ArrayEdit], to ids: inout [Int]) {
    for edit in edits {
        switch edit {
        case .insert(let index, let id): ids.insert(id, at: index)
        case .remove(let index): ids.remove(at: index)
        case .replace(let index, let id): ids[index] = id
        case .swap(let i, let j): ids.swapAt(i, j)
        }
    }
}
