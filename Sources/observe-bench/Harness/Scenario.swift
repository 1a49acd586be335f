/// An implementation measured by the benchmark. The raw values are the JSON `impl` names.
enum Impl: String, CaseIterable, Sendable {
    /// ObserveCore with `KeyValueRegistrar(backend: .c)`: the C registry.
    case c
    /// ObserveCore with `KeyValueRegistrar(backend: .swift)`: the same registry in plain Swift.
    case swift
    /// A hand-rolled registry: a Mutex-guarded Dictionary keyed by (object, property) of closures.
    case naive
    /// Swift's Observation framework: `@Observable` and `withObservationTracking`, re-armed in `onChange`.
    case observation
    /// OpenCombine's `@Published` with `sink` subscribers.
    case opencombine
    /// Array scenarios: edits applied to a plain Swift array of ids, then `CollectionDifference`
    /// of the arrays before and after.
    case diff
    /// Array scenarios: one naive registration per element (the seeds' approach), index from a
    /// Dictionary map maintained on mutation.
    case perElementNaive = "per-element-naive"
    /// A plain stored property set the same way (the floor for `set.0`); in the array scenarios,
    /// a plain Swift `Array` edited the same way, observed by nobody.
    case plain
    /// `array.element-change`: one naive registration per element that finds its index by
    /// scanning the array (`firstIndex(where: ===)`).
    case scan

    var summary: String {
        switch self {
        case .c: return "ObserveCore, C registry (KeyValueRegistrar(backend: .c))"
        case .swift: return "ObserveCore, pure-Swift registry (KeyValueRegistrar(backend: .swift))"
        case .naive: return "Mutex<[ (ObjectIdentifier, property id) : [closure] ]>, values passed as Any"
        case .observation: return "Observation: @Observable + withObservationTracking re-armed in onChange"
        case .opencombine: return "OpenCombine 0.14: @Published + sink"
        case .diff: return "edits on a plain [Int] of ids, then after.difference(from: before)"
        case .perElementNaive: return "one naive-registry registration per element; index from a Dictionary map"
        case .plain: return "no observation: a plain stored Int property / a plain Swift Array"
        case .scan: return "one naive-registry registration per element; index by firstIndex(where: ===)"
        }
    }
}

/// What a scenario measures, which decides how the harness drives it.
enum ScenarioKind: Sendable {
    /// Per-operation time: batches of operations timed with a monotonic clock.
    case latency
    /// Bytes of heap held per registration / element (malloc accounting).
    case memory
    /// Throughput of two threads on distinct objects against one thread doing the same work.
    case threads
}

/// One timed workload, ready to run: `runBatch(k)` performs `k` operations.
///
/// The fixture owns its objects; `tearDown` releases them (and is where leaks are checked).
struct Fixture {
    var runBatch: (Int) -> Void
    /// Releases the objects; returns a warning when the work done was not the work expected
    /// (observers not called once per operation and observer, registrations left behind).
    var tearDown: () -> String? = { nil }
    /// Untimed work before each timed batch (e.g. building the fresh array that `array.setup`
    /// observes, or generating the next batch of edits). Runs in calibration and warm-up too.
    var prepareBatch: ((Int) -> Void)? = nil
    /// Untimed work after each timed batch (e.g. reading the heap, cancelling the observation).
    var finishBatch: ((Int) -> Void)? = nil
    /// Items per operation: figures are per item (array.setup: N elements per op; append-10k:
    /// 10,000 appended elements per op).
    var itemsPerOp = 1
    /// Heap bytes per item measured (untimed) during this repetition, and the element-position
    /// index's own bytes per item where the impl reports them; nil where nothing is measured.
    var bytesPerItem: (() -> (heap: Double, index: Double?)?)? = nil
}

/// How long and how a latency scenario samples; by default what `RunConfig` says.
struct Sampling {
    var measureNs: UInt64
    var warmupNs: UInt64
    var minSamples: Int
    /// A batch size to use instead of calibrating one.
    var fixedBatch: Int?
}

/// A benchmark scenario. Families of scenarios that vary one size (`set.N` over N observers,
/// `array.*` over N elements) share a `chartFamily` and are drawn as one panel of the chart.
///
/// To add a scenario: write a type conforming to this protocol, return fixtures for the impls it
/// supports, and register it in ``ScenarioCatalog``. The harness, table, JSON and chart need no
/// change. A family run at several sizes (the `array.*` scenarios over N elements) is one
/// instance per size, all with the same `name` and different `n`.
protocol Scenario: Sendable {
    /// The JSON `scenario` name, e.g. `set.10`.
    var name: String { get }
    /// The size it runs at (observers, elements, threads); the JSON `n`.
    var n: Int { get }
    var kind: ScenarioKind { get }
    /// One line for the table header.
    var summary: String { get }
    /// The impls it runs, in table order.
    var impls: [Impl] { get }
    /// Impls of `impls` that run only when `--impls` names them (too slow for the default suite).
    var optInImpls: [Impl] { get }
    /// The impl the others are compared with in the ratio column, if any.
    var peer: Impl? { get }
    /// How the ratio column reads: `.costRelativeToPeer` (this / peer, "× plain") or
    /// `.speedupOverPeer` (peer / this, "× faster than naive").
    var ratioStyle: RatioStyle { get }
    /// Impls a user would expect here but that cannot be measured, with the reason.
    var unsupported: [(Impl, String)] { get }
    /// Chart panel this scenario contributes a point to (nil: not charted).
    var chartFamily: ChartFamily? { get }
    /// What one figure is, for the table and JSON ("ns per op", "ns per element", ...).
    var unit: String { get }
    /// For a family run at several sizes, how this size reads ("N=10,000"); nil otherwise.
    var sizeLabel: String? { get }
    /// For a family run at several sizes, the option that chooses them, as the table suggests it
    /// for a rerun ("--elements N").
    var sizeOption: String { get }
    /// Lines printed under the scenario's table (how N is kept, what is verified, ...).
    var notes: [String] { get }
    /// Impls that run the same code on this row, so that their figures differ by noise only (the
    /// set rows: `c` and `swift` differ in the registry, which a set does not touch). The table
    /// labels them as one path.
    var sharedPath: [Impl] { get }
    /// Another scenario each impl's figure is also compared with, impl for impl (the capability
    /// rows: `set.1`, one set with one observer); printed under the table when it ran.
    var referenceScenario: String? { get }
    /// How to sample `impl` (latency scenarios).
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling

    /// A fresh fixture for a latency scenario (`kind == .latency`).
    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture
    /// A fresh fixture for thread `index` of a threads scenario; each thread gets its own objects.
    func makeThreadFixture(_ impl: Impl, thread index: Int, _ config: RunConfig) -> Fixture
    /// Bytes per item for a memory scenario, measured once.
    func measureBytes(_ impl: Impl, _ config: RunConfig) -> MemoryMeasurement
}

enum RatioStyle: Sendable {
    case costRelativeToPeer
    case speedupOverPeer
}

/// A panel of the chart: cost per op against a size on a log axis.
struct ChartFamily: Hashable, Sendable {
    var title: String
    var xLabel: String
    /// What the y axis measures.
    var yLabel = "ns per op"
}

struct MemoryMeasurement: Sendable {
    var bytesPerItem: Double
    var items: Int
    var method: String
}

extension Scenario {
    var unsupported: [(Impl, String)] { [] }
    var optInImpls: [Impl] { [] }
    var chartFamily: ChartFamily? { nil }
    var unit: String { "ns per op" }
    var sizeLabel: String? { nil }
    var sizeOption: String { "--elements N" }
    var notes: [String] { [] }
    var referenceScenario: String? { nil }
    var sharedPath: [Impl] { [] }
    /// The name with the size, for progress lines.
    var label: String { sizeLabel.map { "\(name) \($0)" } ?? name }
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling {
        Sampling(measureNs: config.measureNs, warmupNs: config.warmupNs, minSamples: config.minSamples,
                 fixedBatch: config.fixedBatch)
    }
    var peer: Impl? { nil }
    var ratioStyle: RatioStyle { .speedupOverPeer }
    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        preconditionFailure("\(name) is not a latency scenario")
    }
    func makeThreadFixture(_ impl: Impl, thread index: Int, _ config: RunConfig) -> Fixture {
        preconditionFailure("\(name) is not a threads scenario")
    }
    func measureBytes(_ impl: Impl, _ config: RunConfig) -> MemoryMeasurement {
        preconditionFailure("\(name) is not a memory scenario")
    }
}
