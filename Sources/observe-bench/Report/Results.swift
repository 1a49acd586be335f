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
    /// Heap allocations per op (median over repetitions) and their min-max, counted in untimed
    /// batches (latency scenarios; nil when the allocation counter is not in effect).
    var allocationsPerOp: Double?
    var allocationsSpread: (min: Double, max: Double)?
    /// array.setup (c, swift): bytes per element of the element-position index alone.
    var indexBytesPerItem: Double?
    /// What the figures are ("ns per op", "ns per element", ...).
    var unit: String
    var memoryItems: Int?
    var memoryMethod: String?
    var speedup: Double?
    var speedupSpread: (min: Double, max: Double)?
    var oneThreadOpsPerSecond: Double?
    var twoThreadsOpsPerSecond: Double?
    var opsPerThread: Int?
    var warnings: [String]
    /// The impl that runs the same code on this row (see `Scenario.sharedPath`), if any.
    var sameCodeAs: Impl?
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
        unit = cell.scenario.unit
        if !cell.indexBytesPerItem.isEmpty { indexBytesPerItem = Harness.median(cell.indexBytesPerItem) }
        repetitions = max(cell.repetitionMedians.count, cell.bytesPerItem.count)
        samples = Int(cell.histogram.totalCount)
        batch = cell.batch
        warnings = cell.warnings
        let shared = cell.scenario.sharedPath
        sameCodeAs = shared.contains(cell.impl) ? shared.first { $0 != cell.impl } : nil
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
        if !cell.allocationsPerOp.isEmpty {
            allocationsPerOp = Harness.median(cell.allocationsPerOp)
            allocationsSpread = (cell.allocationsPerOp.min()!, cell.allocationsPerOp.max()!)
        }
        if !cell.speedups.isEmpty {
            speedup = Harness.median(cell.speedups)
            speedupSpread = (cell.speedups.min()!, cell.speedups.max()!)
            oneThreadOpsPerSecond = Harness.median(cell.oneThreadOpsPerSecond)
            twoThreadsOpsPerSecond = Harness.median(cell.twoThreadsOpsPerSecond)
            opsPerThread = cell.opsPerThread
        }
    }

    /// The impl's name, with "(same code as X)" where another impl of the row runs the same code.
    var implLabel: String { impl.rawValue + (sameCodeAs.map { " (same code as \($0.rawValue))" } ?? "") }

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
        /// impl's own figure (ns, or bytes with `usesBytes`) ≤ limit: an absolute figure, which
        /// only a quiet machine confirms.
        case absoluteAtMost(Double)
        /// impl's heap allocations per op (counted, not timed) ≤ limit; `.allocationsAtMost(0)`
        /// is "allocates nothing", measured.
        case allocationsAtMost(Double)
    }

    var label: String
    var scenario: String
    var impl: Impl
    var peer: Impl?
    var rule: Rule
    var source: String
    /// The size of the measured row, when the scenario runs at several (nil: the only one).
    var n: Int? = nil
    /// The scenario of the peer's row when it is another one (e.g. `set.1` for the capability
    /// rows: chain leaf set <= 3x set.1); nil: the target's own scenario.
    var peerScenario: String? = nil
    /// The size of the peer's row; with `peer == nil` the peer is `impl` itself at this size
    /// (e.g. insert-front at 100k against insert-front at 1k).
    var peerN: Int? = nil
    /// Compare bytes per item instead of the row's headline figure (memory targets of time rows).
    var usesBytes = false
    /// Set when the target cannot be measured yet whatever the options.
    var pendingReason: String? = nil
    /// Printed when the target is missed: where the time goes and what meeting it would take
    /// (from profiling the façade; see README "Benchmark").
    var whenMissed: String? = nil

    var measured: Double? = nil
    var met: Bool? = nil
    var status: String = ""

    var limit: Double {
        switch rule {
        case .costAtMost(let x), .fasterAtLeast(let x), .speedupAtLeast(let x), .absoluteAtMost(let x),
             .allocationsAtMost(let x):
            return x
        }
    }

    /// What `measured` is the ratio of.
    var ratioDefinition: String {
        let unit = usesBytes ? "bytes per item" : "ns per op"
        let peerName = (peerScenario.map { $0 + " " } ?? "") + (peer?.rawValue ?? impl.rawValue)
        let at: (Int?) -> String = { $0.map { " at n=\($0)" } ?? "" }
        switch rule {
        case .costAtMost: return "\(impl.rawValue)\(at(n)) / \(peerName)\(at(peerN)) (\(unit))"
        case .fasterAtLeast: return "\(peerName)\(at(peerN)) / \(impl.rawValue)\(at(n)) (\(unit))"
        case .speedupAtLeast: return "throughput with 2 threads / throughput with 1 thread (\(impl.rawValue))"
        case .absoluteAtMost: return "\(impl.rawValue)\(at(n)) (\(usesBytes ? "bytes per item" : unit)), absolute"
        case .allocationsAtMost: return "\(impl.rawValue)\(at(n)) (heap allocations per op, counted), absolute"
        }
    }

    /// The unit of the measured row, for absolute targets' definitions.
    var unit = "ns per op"

    /// Whether `measured` is a ratio (else an absolute figure in `unit`).
    var isRatio: Bool {
        switch rule {
        case .absoluteAtMost, .allocationsAtMost: return false
        case .costAtMost, .fasterAtLeast, .speedupAtLeast: return true
        }
    }

    /// Whether `measured` is heap allocations per op.
    var usesAllocations: Bool {
        if case .allocationsAtMost = rule { return true }
        return false
    }

    var comparison: String {
        switch rule {
        case .costAtMost, .absoluteAtMost, .allocationsAtMost: return "<="
        case .fasterAtLeast, .speedupAtLeast: return ">="
        }
    }

    mutating func evaluate(_ rows: [ResultRow]) {
        if let reason = pendingReason { status = "not measured: \(reason)"; return }
        func row(_ impl: Impl, _ size: Int?) -> ResultRow? {
            rows.first { $0.scenario == scenario && $0.impl == impl && (size == nil || $0.n == size) }
        }
        let peerScenario = self.peerScenario ?? scenario
        let peerRow = rows.first {
            $0.scenario == peerScenario && $0.impl == (peer ?? impl) && (peerN == nil || $0.n == peerN)
        }
        func figure(_ row: ResultRow) -> Double? { usesBytes ? row.bytesPerItem : row.headline }
        guard let mine = row(impl, n) else {
            status = n.map { "not measured in this run (scenario, impl or N=\(groupThousands($0)) not selected)" }
                ?? "not measured in this run (scenario or impl not selected)"
            return
        }
        if usesAllocations { unit = "allocations per op" } else if !usesBytes { unit = mine.unit }
        switch rule {
        case .costAtMost(let limit):
            guard let theirs = peerRow, let a = figure(mine), let b = figure(theirs), b > 0 else {
                let missing = (self.peerScenario.map { $0 + " " } ?? "")
                    + (peer?.rawValue ?? (impl.rawValue + (peerN.map { " at N=\(groupThousands($0))" } ?? "")))
                status = "not measured in this run (\(missing) not selected)"; return
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
        case .absoluteAtMost(let limit):
            guard let a = figure(mine) else { status = "not measured"; return }
            measured = a
            met = a <= limit
        case .allocationsAtMost(let limit):
            guard let a = mine.allocationsPerOp else {
                status = "not measured: " + (AllocationCounter.isCounting ? "no allocation count for this row"
                                                                          : AllocationCounter.notCountingReason)
                return
            }
            measured = a
            met = a <= limit
        }
        status = met! ? "met" : "MISSED"
    }

    // What a missed array target would take. Qualitative on purpose: the figures that back them
    // come from profiling (README "Benchmark" and the commit messages), not from this program.
    static let setupNote = "setup is two passes over the elements, run on two threads from 8,192 elements: the "
        + "position index's rebuild (~4.5 ns per element at 100k alone, new elements added in bulk, bucket writes "
        + "prefetched) and one membership compare-and-swap on each element's registrar (~7.5 ns), reached through "
        + "the element type's own witness with no retain. The wall time is the longer pass when a second core is "
        + "free at once; on this 2-vCPU machine the passes also slow each other, so the median moves from run to "
        + "run (~9.5 to ~13 ns with this version). Meeting it reliably takes memberships kept without touching "
        + "each element's registrar."
    static let appendNote = "an observed append of a run of 8,192 or more is the ring's copy (what plain costs, a "
        + "retain per element), the run's position-index entries (~9.5 ns per element at 100k, one call, new "
        + "elements added in bulk with their buckets prefetched) and one membership compare-and-swap on each "
        + "element's registrar (~7.5 ns), on two threads: both copy chunks of the run, then one indexes it while the "
        + "other counts memberships. The wall time is about half the copy plus the index pass, plus the wake-up of "
        + "the second thread; on this 2-vCPU machine a busy second core shows directly. Meeting it reliably takes "
        + "memberships kept without an atomic read-modify-write on each element's registrar."
    static let elementChangeNote = "an element change allocates nothing (a recycled change box that keeps showing "
        + "the array's storage, values kept typed) and costs ~1,390 instructions (callgrind) with about ten "
        + "serialising atomic operations, ~4.7 ns each here: the element directory's lock, a try-retain and a "
        + "release of the array (taken under the directory's lock, which no longer copies its bucket), the "
        + "array's lock, the read section's two fences, the box's return, and the handler's own retains of the "
        + "change and the element. A lock-free directory, tried in an earlier session, made every register and "
        + "unregister rebuild a snapshot of all trackers and was reverted. What remains is that chain plus "
        + "instruction count across a dozen layers of unspecialized code; ~50 ns needs an element-change core "
        + "specialized for the element type (address -> index lookup, one lock, the handler) that reaches the "
        + "array without the directory's lock. The per-element-naive peer is noisy at 100k (190 to 480 ns "
        + "between runs), which moves this ratio more than any change here."

    static let mutationNote = "an observed mutation runs unspecialized generic code, though it looks up no "
        + "generic metadata and allocates nothing for a one-element change (a recycled change box); only "
        + "unobserved mutations take inlinable fast paths."
    static let batchNote = "middle edits move min(i, N - i) elements (bulk memmoves; the position index is rebuilt "
        + "lazily once), so at 100k the edits' own memmoves, not the encoding, set the floor; meeting it needs "
        + "storage whose middle edits move few elements (chunked / B-tree)."

    static let unobservedNote = "an unobserved operation takes the array's lock, checks that nobody observes and "
        + "that the storage is not shared, then touches the ring; a plain Array local to the loop is optimised "
        + "whole. The lock is biased: after 16,384 sections in a row by this thread it enters with plain loads and "
        + "stores (no atomic read-modify-write), so what remains is ~50 instructions (callgrind) against Array's "
        + "handful. "
        + "The lock is kept on purpose (README, Observing arrays): a variant without it is safe only with one "
        + "owner, which the type system cannot check for a shared class."

    static let mixedNote = "a middle edit moves min(i, N - i) elements (memmove) and records the move in the "
        + "position index's shift log; every 32 to 128 such moves (more for larger arrays) the log is folded into "
        + "the index's entries (about 1 ns per index bucket), and every element change walks the log. Beyond that, it "
        + "needs chunked storage whose middle edits move few elements."

    static let sameObjectNote = "a notified set writes only its own thread's read-section record (no lock, no "
        + "atomic read-modify-write on the object); the two threads share the observed value's cache line, which "
        + "plain pays too, and the handler's counter. A collapse below 0.5x would mean a shared write on the notify "
        + "path again."

    static let setNote = "a notified set reads its object's dispatch cache with no lock and no atomic "
        + "read-modify-write (a thread-local read section, fenced on entry and exit) and costs ~255 instructions "
        + "(callgrind) with no allocation; a key whose observers are all plain token registrations calls each "
        + "handler directly (set.10: ~25 instructions per further observer). On this machine kind a full fence "
        + "costs ~4.7 ns, so the two fences are about half of the set: built with COBS_READ_MEMBARRIER=1 (the "
        + "fences become compiler barriers and a registration change runs membarrier) set.1 measured 11.6 ns "
        + "(6.6x naive) instead of 19.8, but threads.2-observe-churn went from ~80 to ~580 ns per set (a system "
        + "call per registration change while another thread reads), so the default stays. 8x the naive "
        + "registry (~9 ns here) needs the asymmetric fence with reclamation batched so that a registration "
        + "change does not pay a system call, and a flat cache that holds each handler inline."

    static let chainNote = "a leaf change is converted by the key's own adapter, made specialized where the key "
        + "is declared, the chain's registrations do not name the root weakly (the driver holds it unowned), and "
        + "the driver checks that the registration that fired is still the wired one with one load of a "
        + "published stamp instead of taking its lock; callgrind: ~650 instructions per leaf set (from ~2,330). "
        + "What is left is two full notifications (the leaf's, then the root's key), each with its two fences, "
        + "and the root loaded strongly (a tryRetain and a release)."

    static let bindingNote = "a propagation is about 640 instructions (callgrind; from ~5,580): the target is held "
        + "unowned, not as a weak observer (no side table), the cycle guard is one thread-record load and store, "
        + "bind/bindable are inlinable, and a target property with observers is read and written through its "
        + "accessors, not by applying the key path (which allocated a writeback buffer, ~2,400 instructions). "
        + "What is left is the two notifications' work: the source's, and the target's own setter. A target "
        + "whose key path the accessors do not cover (several components, a subscript, a key path written "
        + "inside generic code) still applies the key path and costs about five times as much."

    static let dependentNote = "the dependent value is read through the key's reader (read:, as the macro "
        + "declares it: no key path applied, no metadata looked up) and the per-change step (read, swap with the "
        + "kept value under the driver's lock, announce) runs specialized, built where the announcer is made "
        + "(callgrind: ~620 instructions per set, from ~2,280 at first); what is left is two full notifications "
        + "(the dependency's, then the dependent key's) and one thunk around the reader. Below this, the dependent "
        + "key would have to be announced without a second full notification."

    static let registerNote = "an observe and its cancel cost ~1,730 instructions (callgrind; ~2,450 at the start "
        + "of the session before, which passed references owned through the registration's initializer, retained "
        + "the registry and copied the token's registration) with one allocation (the registration; this row's "
        + "token does not escape, and the optimizer keeps it on the stack) and about 14 reference-count calls, "
        + "two of them of nil; plus the shard lock taken twice and the C table's insert and remove. Twice the "
        + "naive registry needs about half of those instructions: a registration and token that are one object, "
        + "and a registry that keeps registrations in its own storage."

    static let registerMemoryNote = "one observe keeps the token (24 bytes: the allocator's 32-byte class), the "
        + "registration (72 bytes, its 80-byte class: a token registration delivered inline carries no observer, "
        + "context or queue fields, names its registry by a flag and keeps no silence owner), the group's slot "
        + "(the first member is stored in the group itself) and the C table's entry. 128 bytes takes the token "
        + "and the registration as one object, or the registry storing single registrations inline."

    static let churnNote = "churn, not delivery, is where it loses. Callgrind of this row (c, 7 ticks): about 3 in "
        + "4 sets find no dispatch cache (the object was created, or its registrations changed, since its last set) "
        + "and build one under the shard lock (~800 instructions and one allocation each; a set averages ~940 "
        + "instructions here against ~255 with a cache); creating and releasing a person costs ~4,650 "
        + "instructions (its registrar, and the registry's removal on death); an observe ~1,500 and a cancel ~770. "
        + "Meeting it takes sets that do not rebuild a per-object cache after every registration change (deliver "
        + "from the registry the first time, cache on the second) and one allocation per registration."
    static let scalingNote = "a middle insertion or removal moves min(i, N - i) elements, a far move |to - from| "
        + "(one memmove, a few µs at 100k: see array.unobserved-insert-middle), and each such block move takes a "
        + "record in the position index's shift log, which every element change walks; every 32 records (128 from "
        + "64k elements) the log is folded into the index's entries (about 140 µs at 100k, 1.1 µs per move "
        + "amortized; until this version the index was rebuilt from all N elements instead, about 0.9 ms). At 100k "
        + "the memmove of a middle edit alone is more than 3x the whole op at 1k: meeting it needs storage whose "
        + "middle edits move few elements (chunked / B-tree)."

    /// One target per `array.ops-scaling` row: an operation whose cost grows with N (or that leaves
    /// O(N) work to the next element change) tends to 100x at 100k what it costs at 1k; 3x leaves
    /// room for cache misses at 100k, which an O(1) operation pays too.
    static func scaling() -> [Target] {
        ScalingOperation.allCases.map { operation in
            let scenario = "\(ArrayOpsScalingScenario.family).\(operation.rawValue)"
            let movesBlocks = [.insertMiddle, .removeMiddle, .moveFar].contains(operation)
            return Target(label: "\(scenario) @100k <= 3x its cost @1k", scenario: scenario, impl: .c, peer: nil,
                          rule: .costAtMost(3), source: "no array operation O(N) (scaling guard)", n: 100_000,
                          peerN: 1_000, whenMissed: movesBlocks ? Target.scalingNote : nil)
        }
    }

    /// One target per `register.same-key.*` row: registrations of one key cost O(1) each to add and
    /// remove, so the per-registration figure at 32k must stay within 5x the figure at 8k.
    /// The issue asks for 32k/8k <= 5; a scan of the key's registrations would give about 4x
    /// (4x the registrations), which 5x lets through, so the guard here is 2.5x: constant cost
    /// per registration measures 1.3-1.9x (memory latency grows with the heap), a scan ~3.9x.
    static func sameKey() -> [Target] {
        SameKeyShape.allCases.map { shape in
            Target(label: "\(shape.name) per registration @32k <= 2.5x its cost @8k", scenario: shape.name, impl: .c,
                   peer: nil, rule: .costAtMost(2.5), source: "README: one key's add and remove O(1) (scaling guard)",
                   n: 32_000, peerN: 8_000)
        }
    }

    /// The property, array and memory targets, for ObserveCore's C path.
    static func all() -> [Target] {
        let k100 = 100_000
        return [
            Target(label: "set.0 <= 1.5x plain", scenario: "set.0", impl: .c, peer: .plain,
                   rule: .costAtMost(1.5), source: "issue 2"),
            Target(label: "set.1 >= 8x faster than naive", scenario: "set.1", impl: .c, peer: .naive,
                   rule: .fasterAtLeast(8), source: "issue 2", whenMissed: Target.setNote),
            Target(label: "set.10 >= 10x faster than naive", scenario: "set.10", impl: .c, peer: .naive,
                   rule: .fasterAtLeast(10), source: "issue 2", whenMissed: Target.setNote),
            // The macro writes the same accessors as the documented hand-written form.
            Target(label: "set.1-macro <= 1.1x set.1 (hand-written)", scenario: "set.1-macro", impl: .c, peer: .c,
                   rule: .costAtMost(1.1), source: "declarations issue", peerScenario: "set.1"),
            Target(label: "register.remove >= 2x faster than naive", scenario: "register.remove", impl: .c,
                   peer: .naive, rule: .fasterAtLeast(2), source: "issue 2", whenMissed: Target.registerNote),
            // The issue sets the handler's closure context aside; this figure includes it (the
            // scenario's handler captures one object), so the check is the stricter one.
            Target(label: "register.memory <= 128 bytes per registration (absolute, closure context included)",
                   scenario: "register.memory", impl: .c, peer: nil, rule: .absoluteAtMost(128),
                   source: "issue 11", usesBytes: true, whenMissed: Target.registerMemoryNote),
            Target(label: "threads.2-distinct speedup >= 1.7x", scenario: "threads.2-distinct", impl: .c, peer: nil,
                   rule: .speedupAtLeast(1.7), source: "issue 4"),
            // Two threads on one object share its lines; they must not fall below half the one-thread
            // throughput (the rule is in the scenario's notes).
            Target(label: "threads.2-same-object speedup >= 0.5x (no collapse)", scenario: "threads.2-same-object",
                   impl: .c, peer: nil, rule: .speedupAtLeast(0.5), source: "issue 11",
                   whenMissed: Target.sameObjectNote),
            Target(label: "set.1 >= 10x faster than observation", scenario: "set.1", impl: .c, peer: .observation,
                   rule: .fasterAtLeast(10), source: "DESIGN.md (an order of magnitude)"),
            Target(label: "set.1 >= 10x faster than opencombine", scenario: "set.1", impl: .c, peer: .opencombine,
                   rule: .fasterAtLeast(10), source: "DESIGN.md (an order of magnitude)"),
            Target(label: "array.setup @100k >= 35x faster than per-element-naive", scenario: "array.setup", impl: .c,
                   peer: .perElementNaive, rule: .fasterAtLeast(35), source: "issue 4", n: k100, peerN: k100,
                   whenMissed: Target.setupNote),
            Target(label: "array.setup @100k >= 17x smaller than per-element-naive", scenario: "array.setup", impl: .c,
                   peer: .perElementNaive, rule: .fasterAtLeast(17), source: "issue 4", n: k100, peerN: k100,
                   usesBytes: true),
            Target(label: "array.element-change @100k >= 6x faster than per-element-naive",
                   scenario: "array.element-change", impl: .c, peer: .perElementNaive, rule: .fasterAtLeast(6),
                   source: "issue 4", n: k100, peerN: k100, whenMissed: Target.elementChangeNote),
            Target(label: "array.element-change @100k >= 500x faster than scan",
                   scenario: "array.element-change", impl: .c, peer: .scan, rule: .fasterAtLeast(500),
                   source: "issue 3", n: k100, peerN: k100, whenMissed: Target.elementChangeNote),
            Target(label: "array.insert-front @100k <= 2x its cost @1k", scenario: "array.insert-front", impl: .c,
                   peer: nil, rule: .costAtMost(2), source: "issue 4", n: k100, peerN: 1_000),
            Target(label: "array.batch-100 @100k >= 100x faster than diff", scenario: "array.batch-100", impl: .c,
                   peer: .diff, rule: .fasterAtLeast(100), source: "issue 4", n: k100, peerN: k100,
                   whenMissed: Target.batchNote),
            Target(label: "array.append-10k @100k <= 2.5x plain Array (observed)", scenario: "array.append-10k",
                   impl: .c, peer: .plain, rule: .costAtMost(2.5), source: "array engine issue", n: k100, peerN: k100,
                   whenMissed: Target.appendNote),
            Target(label: "array.unobserved-append @100k <= 2x plain Array", scenario: "array.unobserved-append",
                   impl: .c, peer: .plain, rule: .costAtMost(2), source: "array engine issue", n: k100, peerN: k100,
                   whenMissed: Target.unobservedNote),
            Target(label: "array.unobserved-insert-middle @100k <= 2x plain Array",
                   scenario: "array.unobserved-insert-middle", impl: .c, peer: .plain, rule: .costAtMost(2),
                   source: "array engine issue", n: k100, peerN: k100, whenMissed: Target.unobservedNote),
            Target(label: "array.unobserved-subscript-set @100k <= 4x plain Array",
                   scenario: "array.unobserved-subscript-set", impl: .c, peer: .plain, rule: .costAtMost(4),
                   source: "array engine issue", n: k100, peerN: k100, whenMissed: Target.unobservedNote),
            Target(label: "array.iterate @100k <= 2x plain Array", scenario: "array.iterate", impl: .c, peer: .plain,
                   rule: .costAtMost(2), source: "array engine issue", n: k100, peerN: k100,
                   whenMissed: Target.unobservedNote),
            Target(label: "array.unobserved-sort @100k <= 2x plain Array", scenario: "array.unobserved-sort", impl: .c,
                   peer: .plain, rule: .costAtMost(2), source: "array engine issue (reverse and sort within 2x of Array)",
                   n: k100, peerN: k100, whenMissed: Target.unobservedNote),
            Target(label: "array.unobserved-reverse @100k <= 2x plain Array", scenario: "array.unobserved-reverse",
                   impl: .c, peer: .plain, rule: .costAtMost(2),
                   source: "array engine issue (reverse and sort within 2x of Array)", n: k100, peerN: k100,
                   whenMissed: Target.unobservedNote),
            Target(label: "array.mixed @50k >= 5x faster than per-element-naive", scenario: "array.mixed", impl: .c,
                   peer: .perElementNaive, rule: .fasterAtLeast(5), source: "array engine issue",
                   n: ArrayMixedScenario.defaultCount, peerN: ArrayMixedScenario.defaultCount, whenMissed: Target.mixedNote),
            Target(label: "array.mixed @50k faster than re-diffing a plain array", scenario: "array.mixed", impl: .c,
                   peer: .diff, rule: .fasterAtLeast(1), source: "array engine issue",
                   n: ArrayMixedScenario.defaultCount, peerN: ArrayMixedScenario.defaultCount, whenMissed: Target.mixedNote),
            // The meaning of the ratios in absolute figures: a quiet machine only.
            Target(label: "array.setup @100k <= 20 ns per element (absolute)", scenario: "array.setup", impl: .c,
                   peer: nil, rule: .absoluteAtMost(20), source: "issue 3 (absolute; quiet machine)", n: k100,
                   whenMissed: Target.setupNote),
            Target(label: "array.setup @100k <= 16 bytes per element (absolute)", scenario: "array.setup", impl: .c,
                   peer: nil, rule: .absoluteAtMost(16), source: "issue 3 (absolute)", n: k100, usesBytes: true),
            Target(label: "array.element-change @100k <= 50 ns (absolute)", scenario: "array.element-change",
                   impl: .c, peer: nil, rule: .absoluteAtMost(50), source: "issue 3 (absolute; quiet machine)", n: k100,
                   whenMissed: Target.elementChangeNote),
            // The element-change note says it allocates nothing; this counts it.
            Target(label: "array.element-change @100k allocations per change == 0", scenario: "array.element-change",
                   impl: .c, peer: nil, rule: .allocationsAtMost(0),
                   source: "element-change note (\"allocates nothing\"), counted", n: k100),
            // One op is two mutations (removeLast + insert at 0): 1 µs per mutation.
            Target(label: "array.insert-front @100k <= 2 us per op (absolute, 1 us per mutation)",
                   scenario: "array.insert-front", impl: .c, peer: nil, rule: .absoluteAtMost(2_000),
                   source: "issue 3 (absolute; quiet machine)", n: k100, whenMissed: Target.mutationNote),
            Target(label: "array.batch-100 @100k <= 50 us (absolute)", scenario: "array.batch-100", impl: .c,
                   peer: nil, rule: .absoluteAtMost(50_000), source: "issue 3 (absolute; quiet machine)", n: k100,
                   whenMissed: Target.batchNote),
        ] + scaling() + sameKey() + capabilities()
    }

    /// Issue 11: the service-shaped churn against the naive registry, every capability against
    /// `set.1` of the same (C) path, and the stream end to end in absolute terms.
    static func capabilities() -> [Target] {
        let leafSets = ChainLeafSetScenario.depths.map { depth in
            Target(label: "chain.leaf-set.\(depth) <= 3x set.1", scenario: "chain.leaf-set.\(depth)", impl: .c,
                   peer: .c, rule: .costAtMost(3), source: "issue 11", peerScenario: "set.1",
                   whenMissed: Target.chainNote)
        }
        return leafSets + [
            Target(label: "service.churn >= 2x faster than naive", scenario: "service.churn", impl: .c, peer: .naive,
                   rule: .fasterAtLeast(2), source: "issue 11", whenMissed: Target.churnNote),
            Target(label: "dependent.set <= 3x set.1", scenario: "dependent.set", impl: .c, peer: .c,
                   rule: .costAtMost(3), source: "issue 11", peerScenario: "set.1", whenMissed: Target.dependentNote),
            Target(label: "binding.propagate <= 4x set.1", scenario: "binding.propagate", impl: .c, peer: .c,
                   rule: .costAtMost(4), source: "issue 11", peerScenario: "set.1", whenMissed: Target.bindingNote),
            Target(label: "stream.end-to-end <= 300 ns per change (absolute)", scenario: "stream.end-to-end",
                   impl: .c, peer: nil, rule: .absoluteAtMost(300), source: "issue 11 (absolute; quiet machine)"),
        ]
    }
}
