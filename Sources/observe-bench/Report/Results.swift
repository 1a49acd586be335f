import Histogram

/// The figures of one (scenario, impl) after the run: what the table, JSON and chart show.
struct ResultRow {
    var scenario: String
    var impl: Impl
    var n: Int
    var kind: ScenarioKind
    var chartFamily: ChartFamily?
    /// Median over repetitions of each repetition's median ns/op (threads: ns/op of wall time with 2 threads).
    var median: Double?
    /// Min and max of the repetition medians.
    var spread: (min: Double, max: Double)?
    /// Percentiles of every per-batch mean ns/op sample (threads: per-thread samples with 2 threads).
    var p50: Double?
    var p99: Double?
    var p999: Double?
    var batch: Int?
    var samples: Int
    var repetitions: Int
    var bytesPerItem: Double?
    var bytesSpread: (min: Double, max: Double)?
    var memoryItems: Int?
    var memoryMethod: String?
    var speedup: Double?
    var speedupSpread: (min: Double, max: Double)?
    var oneThreadOpsPerSecond: Double?
    var twoThreadsOpsPerSecond: Double?
    var opsPerThread: Int?
    var warnings: [String]
    /// Most cores other processes used during one of this row's repetitions, and in how many
    /// repetitions they used at least `Runner.disturbedCores`.
    var backgroundCoresMax: Double?
    var disturbedRepetitions: Int
    /// Repetitions long enough (>= 100 ms) for the background figure.
    var backgroundMeasured: Int

    init(_ cell: Cell) {
        scenario = cell.scenario.name
        impl = cell.impl
        n = cell.scenario.n
        kind = cell.scenario.kind
        chartFamily = cell.scenario.chartFamily
        repetitions = max(cell.repetitionMedians.count, cell.bytesPerItem.count)
        samples = Int(cell.histogram.totalCount)
        batch = cell.batch
        warnings = cell.warnings
        backgroundCoresMax = cell.backgroundCores.max()
        disturbedRepetitions = cell.backgroundCores.filter { $0 >= Runner.disturbedCores }.count
        backgroundMeasured = cell.backgroundCores.count
        if !cell.repetitionMedians.isEmpty {
            median = Harness.median(cell.repetitionMedians)
            spread = (cell.repetitionMedians.min()!, cell.repetitionMedians.max()!)
        }
        if cell.histogram.totalCount > 0 {
            p50 = Double(cell.histogram.valueAtPercentile(50)) / 1000
            p99 = Double(cell.histogram.valueAtPercentile(99)) / 1000
            p999 = Double(cell.histogram.valueAtPercentile(99.9)) / 1000
        }
        if !cell.bytesPerItem.isEmpty {
            bytesPerItem = Harness.median(cell.bytesPerItem)
            bytesSpread = (cell.bytesPerItem.min()!, cell.bytesPerItem.max()!)
            memoryItems = cell.memoryItems
            memoryMethod = cell.memoryMethod
        }
        if !cell.speedups.isEmpty {
            speedup = Harness.median(cell.speedups)
            speedupSpread = (cell.speedups.min()!, cell.speedups.max()!)
            oneThreadOpsPerSecond = Harness.median(cell.oneThreadOpsPerSecond)
            twoThreadsOpsPerSecond = Harness.median(cell.twoThreadsOpsPerSecond)
            opsPerThread = cell.opsPerThread
        }
    }

    /// The figure ratios are taken of: ns/op, or bytes for memory scenarios.
    var headline: Double? { kind == .memory ? bytesPerItem : median }

    /// Spread relative to the median: (max - min) / median.
    var relativeSpread: Double? {
        if kind == .memory { guard let s = bytesSpread, let m = bytesPerItem, m > 0 else { return nil }; return (s.max - s.min) / m }
        if kind == .threads { guard let s = speedupSpread, let m = speedup, m > 0 else { return nil }; return (s.max - s.min) / m }
        guard let s = spread, let m = median, m > 0 else { return nil }
        return (s.max - s.min) / m
    }
}

// MARK: - Targets

/// A target from the issues, checked as a ratio of figures measured in this run.
struct Target {
    enum Rule {
        /// impl's figure / peer's figure ≤ limit (cost relative to a floor).
        case costAtMost(Double)
        /// peer's figure / impl's figure ≥ limit (times faster or smaller than the peer).
        case fasterAtLeast(Double)
        /// threads speedup ≥ limit.
        case speedupAtLeast(Double)
    }

    var label: String
    var scenario: String
    var impl: Impl
    var peer: Impl?
    var rule: Rule
    var source: String
    /// The size of the measured row, when the scenario runs at several (nil: the only one).
    var n: Int? = nil
    /// The size of the peer's row; with `peer == nil` the peer is `impl` itself at this size
    /// (e.g. insert-front at 100k against insert-front at 1k).
    var peerN: Int? = nil
    /// Compare bytes per item instead of the row's headline figure (memory targets of time rows).
    var usesBytes = false
    /// Set when the target cannot be measured yet whatever the options (the arrays).
    var pendingReason: String? = nil

    var measured: Double? = nil
    var met: Bool? = nil
    var status: String = ""

    var limit: Double {
        switch rule {
        case .costAtMost(let x), .fasterAtLeast(let x), .speedupAtLeast(let x): return x
        }
    }

    /// What `measured` is the ratio of.
    var ratioDefinition: String {
        let unit = usesBytes ? "bytes per item" : "ns per op"
        let peerName = peer?.rawValue ?? impl.rawValue
        let at: (Int?) -> String = { $0.map { " at n=\($0)" } ?? "" }
        switch rule {
        case .costAtMost: return "\(impl.rawValue)\(at(n)) / \(peerName)\(at(peerN)) (\(unit))"
        case .fasterAtLeast: return "\(peerName)\(at(peerN)) / \(impl.rawValue)\(at(n)) (\(unit))"
        case .speedupAtLeast: return "throughput with 2 threads / throughput with 1 thread (\(impl.rawValue))"
        }
    }

    var comparison: String {
        switch rule {
        case .costAtMost: return "<="
        case .fasterAtLeast, .speedupAtLeast: return ">="
        }
    }

    mutating func evaluate(_ rows: [ResultRow]) {
        if let reason = pendingReason { status = "not measured: \(reason)"; return }
        func row(_ impl: Impl, _ size: Int?) -> ResultRow? {
            rows.first { $0.scenario == scenario && $0.impl == impl && (size == nil || $0.n == size) }
        }
        let peerRow = row(peer ?? impl, peerN)
        func figure(_ row: ResultRow) -> Double? { usesBytes ? row.bytesPerItem : row.headline }
        guard let mine = row(impl, n) else { status = "not measured in this run (scenario or impl not selected)"; return }
        switch rule {
        case .costAtMost(let limit):
            guard let theirs = peerRow, let a = figure(mine), let b = figure(theirs), b > 0 else {
                status = "not measured in this run (\(peer?.rawValue ?? "peer") not selected)"; return
            }
            measured = a / b
            met = measured! <= limit
        case .fasterAtLeast(let limit):
            guard let theirs = peerRow, let a = figure(mine), let b = figure(theirs), a > 0 else {
                status = "not measured in this run (\(peer?.rawValue ?? "peer") not selected)"; return
            }
            measured = b / a
            met = measured! >= limit
        case .speedupAtLeast(let limit):
            guard let s = mine.speedup else { status = "not measured"; return }
            measured = s
            met = s >= limit
        }
        status = met! ? "met" : "MISSED"
    }

    /// The targets of issue 2 (foundation), the arrays issue and issue 4, for ObserveCore's C path.
    static func all() -> [Target] {
        let arrays = "array scenarios need ObservableArray (the arrays issue); not implemented yet"
        return [
            Target(label: "set.0 <= 1.5x plain", scenario: "set.0", impl: .c, peer: .plain,
                   rule: .costAtMost(1.5), source: "issue 2"),
            Target(label: "set.1 >= 8x faster than naive", scenario: "set.1", impl: .c, peer: .naive,
                   rule: .fasterAtLeast(8), source: "issue 2"),
            Target(label: "set.10 >= 10x faster than naive", scenario: "set.10", impl: .c, peer: .naive,
                   rule: .fasterAtLeast(10), source: "issue 2"),
            Target(label: "register.remove >= 2x faster than naive", scenario: "register.remove", impl: .c,
                   peer: .naive, rule: .fasterAtLeast(2), source: "issue 2"),
            Target(label: "threads.2-distinct speedup >= 1.7x", scenario: "threads.2-distinct", impl: .c, peer: nil,
                   rule: .speedupAtLeast(1.7), source: "issue 4"),
            Target(label: "set.1 >= 10x faster than observation", scenario: "set.1", impl: .c, peer: .observation,
                   rule: .fasterAtLeast(10), source: "DESIGN.md (an order of magnitude)"),
            Target(label: "set.1 >= 10x faster than opencombine", scenario: "set.1", impl: .c, peer: .opencombine,
                   rule: .fasterAtLeast(10), source: "DESIGN.md (an order of magnitude)"),
            Target(label: "array.setup @100k >= 35x faster than per-element-naive", scenario: "array.setup", impl: .c,
                   peer: .perElementNaive, rule: .fasterAtLeast(35), source: "issue 4", n: 100_000, peerN: 100_000, pendingReason: arrays),
            Target(label: "array.setup @100k >= 17x smaller than per-element-naive", scenario: "array.setup", impl: .c,
                   peer: .perElementNaive, rule: .fasterAtLeast(17), source: "issue 4", n: 100_000, peerN: 100_000, usesBytes: true,
                   pendingReason: arrays),
            Target(label: "array.element-change @100k >= 6x faster than per-element-naive",
                   scenario: "array.element-change", impl: .c, peer: .perElementNaive, rule: .fasterAtLeast(6),
                   source: "issue 4", n: 100_000, peerN: 100_000, pendingReason: arrays),
            Target(label: "array.insert-front @100k <= 2x its cost @1k", scenario: "array.insert-front", impl: .c,
                   peer: nil, rule: .costAtMost(2), source: "issue 4", n: 100_000, peerN: 1_000, pendingReason: arrays),
            Target(label: "array.batch-100 >= 100x faster than diff", scenario: "array.batch-100", impl: .c,
                   peer: .diff, rule: .fasterAtLeast(100), source: "issue 4", pendingReason: arrays),
        ]
    }
}
