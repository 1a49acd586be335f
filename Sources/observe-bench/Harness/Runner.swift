import Foundation
import Histogram
@_spi(Testing) import ObserveCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How long and how often to measure.
struct RunConfig: Sendable {
    /// A `--quick` run: too short to judge a target, so verdicts are printed as indicative.
    var isQuick = false
    /// Repetitions of every (scenario, impl) cell; cells are interleaved within a repetition so
    /// that a slow phase of the machine hits every impl, and shows up as spread.
    var repetitions = 7
    /// Time spent taking samples per cell per repetition.
    var measureNs: UInt64 = 150_000_000
    /// Warm-up per cell per repetition (the first repetition also calibrates and warms longer).
    var warmupNs: UInt64 = 15_000_000
    /// A batch is sized (power of two) so that it takes about this long.
    var targetBatchNs: UInt64 = 5_000
    var maxBatch = 4096
    /// When set, every latency scenario uses this batch size.
    var fixedBatch: Int? = nil
    /// Registrations per memory measurement.
    var memoryItems = 10_000
    /// Fewest samples a repetition takes even when a batch outlasts the measuring time.
    var minSamples = 5
    /// When set, every repetition takes exactly this many timed batches instead of sampling for
    /// `measureNs` (threads: each thread does this many batches per object).
    var fixedIterations: Int? = nil
    /// Array sizes N the array scenarios run at.
    var elementCounts = [1_000, 10_000, 100_000]
    /// Time spent taking samples per array cell per repetition (array cells are many, and the
    /// expensive ones take at least one sample whatever this says).
    var arrayMeasureNs: UInt64 = 15_000_000
    /// Warm-up per array cell per repetition (the first repetition warms at least one batch).
    var arrayWarmupNs: UInt64 = 3_000_000
}

typealias LatencyHistogram = Histogram<UInt64>

/// Histograms record picoseconds per operation (per-batch means), 3 significant digits.
func makeHistogram() -> LatencyHistogram { Histogram(numberOfSignificantValueDigits: .three) }

/// Everything measured for one (scenario, impl) across repetitions.
final class Cell {
    let scenario: any Scenario
    let impl: Impl
    /// Operations per timed batch (latency and threads scenarios).
    var batch: Int?
    /// Operations per thread in threads scenarios.
    var opsPerThread: Int?
    /// Per-batch mean ps/op, every sample of every repetition.
    var histogram = makeHistogram()
    /// Median ns/op of each repetition's samples.
    var repetitionMedians: [Double] = []
    var bytesPerItem: [Double] = []
    /// Per repetition: heap allocations per op, counted in untimed batches after the timed ones
    /// (latency scenarios, when `AllocationCounter.isCounting`).
    var allocationsPerOp: [Double] = []
    /// Per repetition: bytes per item of the element-position index, where reported.
    var indexBytesPerItem: [Double] = []
    var memoryItems: Int?
    var memoryMethod: String?
    /// Threads: per repetition, throughput(2 threads) / throughput(1 thread).
    var speedups: [Double] = []
    var oneThreadOpsPerSecond: [Double] = []
    var twoThreadsOpsPerSecond: [Double] = []
    var warnings: [String] = []
    /// Per repetition: cores used by other processes while this cell measured (nil: unknown).
    var backgroundCores: [Double] = []

    init(scenario: any Scenario, impl: Impl) {
        self.scenario = scenario
        self.impl = impl
    }
}

// MARK: - Timing primitives

enum Harness {
    /// Runs one batch of `count` operations and returns how long the batch itself took (the
    /// fixture's untimed preparation and clean-up run outside the clock).
    @inline(__always)
    static func timedBatch(_ fixture: Fixture, _ count: Int) -> UInt64 {
        fixture.prepareBatch?(count)
        let t0 = monotonicNanoseconds()
        fixture.runBatch(count)
        let t1 = monotonicNanoseconds()
        fixture.finishBatch?(count)
        return t1 - t0
    }

    /// Finds the power-of-two batch size (1 ... maxBatch) whose run takes about `targetBatchNs`;
    /// also warms the fixture up.
    static func calibrate(_ fixture: Fixture, _ config: RunConfig, fixedBatch: Int? = nil) -> Int {
        if let fixed = fixedBatch ?? config.fixedBatch { return fixed }
        var batch = 1
        while true {
            var best = UInt64.max
            for _ in 0..<3 {
                best = min(best, timedBatch(fixture, batch))
            }
            if best >= config.targetBatchNs || batch >= config.maxBatch { return batch }
            let perOp = max(Double(best) / Double(batch), 0.05)
            var next = batch * 2
            while next < config.maxBatch && Double(next) * perOp < Double(config.targetBatchNs) { next *= 2 }
            batch = min(next, config.maxBatch)
        }
    }

    /// Runs batches for about `nanoseconds` (at least one; none when `nanoseconds` is 0).
    static func warmUp(_ fixture: Fixture, batch: Int, nanoseconds: UInt64) {
        if nanoseconds == 0 { return }
        let end = monotonicNanoseconds() + nanoseconds
        repeat { _ = timedBatch(fixture, batch) } while monotonicNanoseconds() < end
    }

    /// Times batches of `batch` operations for about `nanoseconds` of wall time (untimed
    /// preparation included); returns ps per item (op × `itemsPerOp`) per batch.
    /// With `iterations`, takes exactly that many batches instead.
    static func sample(_ fixture: Fixture, batch: Int, nanoseconds: UInt64, minSamples: Int,
                       iterations: Int? = nil) -> [UInt64] {
        var samples: [UInt64] = []
        samples.reserveCapacity(iterations ?? 4096)
        let end = monotonicNanoseconds() + nanoseconds
        let items = UInt64(batch * fixture.itemsPerOp)
        repeat {
            let ns = timedBatch(fixture, batch)
            samples.append(ns * 1000 / items)
            if let iterations, samples.count >= iterations { break }
        } while iterations != nil || monotonicNanoseconds() < end || samples.count < minSamples
        return samples
    }

    static func median(_ values: [UInt64]) -> Double {
        let sorted = values.sorted()
        if sorted.isEmpty { return .nan }
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? Double(sorted[mid]) : (Double(sorted[mid - 1]) + Double(sorted[mid])) / 2
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        if sorted.isEmpty { return .nan }
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }
}

// MARK: - Threads

/// Runs a threads scenario once with `threadCount` threads, each on its own objects.
///
/// With one thread, that thread does the whole work (M operations on each of two objects,
/// alternating batches); with two, each thread does M operations on its own object. Fixtures are
/// built and warmed on the thread that uses them; then every thread waits at a start barrier,
/// the clock starts, and the wall time ends when the last thread finishes.
private final class ThreadRun: @unchecked Sendable {
    let ready = Atomic<Int>(0)
    let go = Atomic<Bool>(false)
    let finished = Atomic<Int>(0)
    let done = DispatchSemaphore(value: 0)
    let lock = NSLock()
    var ends: [UInt64] = []
    var warnings: [String] = []
    var histogram = makeHistogram()
}

extension Harness {
    static func runThreads(_ scenario: any Scenario, _ impl: Impl, _ config: RunConfig,
                           threadCount: Int, opsPerObject: Int, batch: Int)
        -> (wallNs: UInt64, histogram: LatencyHistogram, warnings: [String]) {
        let run = ThreadRun()
        let objectsPerThread = 2 / threadCount
        for thread in 0..<threadCount {
            let worker = Thread {
                var fixtures: [Fixture] = []
                for object in 0..<objectsPerThread {
                    fixtures.append(scenario.makeThreadFixture(impl, thread: thread * objectsPerThread + object, config))
                }
                for fixture in fixtures {
                    Harness.warmUp(fixture, batch: batch, nanoseconds: config.warmupNs / UInt64(objectsPerThread))
                }
                var histogram = makeHistogram()
                run.ready.add(1, ordering: .releasing)
                while !run.go.load(ordering: .acquiring) { sched_yield() }

                var remaining = opsPerObject
                while remaining > 0 {
                    let count = min(batch, remaining)
                    for fixture in fixtures {
                        let t0 = monotonicNanoseconds()
                        fixture.runBatch(count)
                        let t1 = monotonicNanoseconds()
                        histogram.record((t1 - t0) * 1000 / UInt64(count))
                    }
                    remaining -= count
                }
                let end = monotonicNanoseconds()

                // Tear down only after every thread stopped its clock.
                run.finished.add(1, ordering: .acquiringAndReleasing)
                while run.finished.load(ordering: .acquiring) < threadCount { sched_yield() }
                var warnings: [String] = []
                for fixture in fixtures { if let warning = fixture.tearDown() { warnings.append(warning) } }
                fixtures = []
                run.lock.lock()
                run.warnings.append(contentsOf: warnings)
                run.ends.append(end)
                run.histogram.add(histogram)
                run.lock.unlock()
                run.done.signal()
            }
            worker.start()
        }
        while run.ready.load(ordering: .acquiring) < threadCount { sched_yield() }
        let start = monotonicNanoseconds()
        run.go.store(true, ordering: .releasing)
        for _ in 0..<threadCount { run.done.wait() }
        run.lock.lock()
        defer { run.lock.unlock() }
        return (run.ends.max()! - start, run.histogram, run.warnings)
    }
}

// MARK: - The run

/// Drives every cell through the repetitions, printing progress on stderr.
final class Runner {
    let cells: [Cell]
    let config: RunConfig
    private let started = monotonicNanoseconds()
    private let startLoad = BackgroundLoad.snapshot()
    private var step = 0
    /// Cores used by other processes, averaged over the whole run (nil: unknown).
    private(set) var backgroundCores: Double?

    init(cells: [Cell], config: RunConfig) {
        self.cells = cells
        self.config = config
    }

    var elapsedSeconds: Double { Double(monotonicNanoseconds() - started) / 1e9 }

    /// Background CPU (in cores) from which a measurement counts as disturbed.
    static let disturbedCores = 0.2

    func run() {
        let total = cells.count * config.repetitions
        for repetition in 0..<config.repetitions {
            for cell in cells {
                step += 1
                let before = BackgroundLoad.snapshot()
                var figure: String
                switch cell.scenario.kind {
                case .latency: figure = runLatency(cell)
                case .memory: figure = runMemory(cell)
                case .threads: figure = runThreads(cell)
                }
                if let before, let after = BackgroundLoad.snapshot(), let others = before.coresUsedByOthers(until: after) {
                    cell.backgroundCores.append(others)
                    if others >= Runner.disturbedCores {
                        figure += String(format: "  [other processes used %.1f cores]", others)
                    }
                }
                progress(String(format: "[%3d/%d %5.1fs] rep %d/%d  ", step, total, elapsedSeconds, repetition + 1,
                                config.repetitions)
                         + cell.scenario.label.padded(19) + " " + cell.impl.rawValue.padded(17) + " " + figure)
            }
        }
        if let startLoad, let end = BackgroundLoad.snapshot() {
            backgroundCores = startLoad.coresUsedByOthers(until: end)
        }
    }

    private func progress(_ line: String) {
        FileHandle.standardError.write((line + "\n").data(using: .utf8)!)
    }

    private func runLatency(_ cell: Cell) -> String {
        let registrationsBefore = liveRegistrations(cell.impl)
        let sampling = cell.scenario.sampling(cell.impl, config)
        let fixture = cell.scenario.makeFixture(cell.impl, config)
        let batch: Int
        if let known = cell.batch {
            batch = known
            Harness.warmUp(fixture, batch: batch, nanoseconds: sampling.warmupNs)
        } else {
            batch = Harness.calibrate(fixture, config, fixedBatch: sampling.fixedBatch)
            cell.batch = batch
            // The first repetition warms up at least one batch.
            Harness.warmUp(fixture, batch: batch, nanoseconds: max(sampling.warmupNs * 2, 1))
        }
        let samples = Harness.sample(fixture, batch: batch, nanoseconds: sampling.measureNs,
                                     minSamples: sampling.minSamples, iterations: config.fixedIterations)
        var bytesNote = ""
        if let measured = fixture.bytesPerItem?() {
            cell.bytesPerItem.append(measured.heap)
            cell.memoryMethod = HeapAccounting.method
            bytesNote = String(format: ", %.1f heap bytes per item", measured.heap)
            if let index = measured.index {
                cell.indexBytesPerItem.append(index)
                bytesNote += String(format: " (index %.2f)", index)
            }
        }
        // After the heap figure (array.setup's comes from the timed batches' clean-up): more
        // operations, untimed, counting allocations; tear-down checks them with the rest.
        var allocationsNote = ""
        if AllocationCounter.isCounting {
            let perOp = Harness.allocationsPerOp(fixture, batch: batch)
            cell.allocationsPerOp.append(perOp)
            allocationsNote = ", \(formatAllocations(perOp)) allocations per op"
        }
        warn(cell, fixture.tearDown())
        checkLeaks(cell, before: registrationsBefore)
        for sample in samples { cell.histogram.record(sample) }
        let median = Harness.median(samples) / 1000
        cell.repetitionMedians.append(median)
        let unit = cell.scenario.unit.replacingOccurrences(of: "ns per ", with: "ns/")
        return formatNs(median) + " \(unit)  (batch \(batch), \(samples.count) samples\(bytesNote)\(allocationsNote))"
    }

    private func runMemory(_ cell: Cell) -> String {
        let registrationsBefore = liveRegistrations(cell.impl)
        let measurement = cell.scenario.measureBytes(cell.impl, config)
        checkLeaks(cell, before: registrationsBefore)
        cell.bytesPerItem.append(measurement.bytesPerItem)
        cell.memoryItems = measurement.items
        cell.memoryMethod = measurement.method
        return String(format: "%.1f bytes per registration (%d registrations)", measurement.bytesPerItem, measurement.items)
    }

    private func runThreads(_ cell: Cell) -> String {
        if cell.batch == nil {
            // Calibrate on this thread with a fixture like the ones the workers build.
            let fixture = cell.scenario.makeThreadFixture(cell.impl, thread: 0, config)
            let batch = Harness.calibrate(fixture, config)
            Harness.warmUp(fixture, batch: batch, nanoseconds: config.warmupNs)
            let samples = Harness.sample(fixture, batch: batch, nanoseconds: config.warmupNs, minSamples: config.minSamples)
            warn(cell, fixture.tearDown())
            let nsPerOp = max(Harness.median(samples) / 1000, 0.1)
            // The one-thread run (2M ops) takes about 2/3 of the measuring time, the two-thread run the rest.
            let ops = Int(Double(config.measureNs) / 3 / nsPerOp)
            cell.batch = batch
            cell.opsPerThread = config.fixedIterations.map { $0 * batch }
                ?? max(batch * config.minSamples, (ops / batch) * batch)
        }
        let batch = cell.batch!, ops = cell.opsPerThread!
        let registrationsBefore = liveRegistrations(cell.impl)
        let one = Harness.runThreads(cell.scenario, cell.impl, config, threadCount: 1, opsPerObject: ops, batch: batch)
        let two = Harness.runThreads(cell.scenario, cell.impl, config, threadCount: 2, opsPerObject: ops, batch: batch)
        for warning in one.warnings + two.warnings { warn(cell, warning) }
        checkLeaks(cell, before: registrationsBefore)
        let totalOps = Double(2 * ops)
        let oneThroughput = totalOps / (Double(one.wallNs) / 1e9)
        let twoThroughput = totalOps / (Double(two.wallNs) / 1e9)
        cell.oneThreadOpsPerSecond.append(oneThroughput)
        cell.twoThreadsOpsPerSecond.append(twoThroughput)
        cell.speedups.append(twoThroughput / oneThroughput)
        cell.histogram.add(two.histogram)
        let perOp = 1e9 / twoThroughput
        cell.repetitionMedians.append(perOp)
        return String(format: "speedup %.2f×", twoThroughput / oneThroughput)
            + "  (1 thread \(formatNs(1e9 / oneThroughput)) ns/op, 2 threads \(formatNs(perOp)) ns/op of wall time)"
    }

    private func liveRegistrations(_ impl: Impl) -> Int {
        switch impl {
        case .c, .swift: return ObservationRuntime.liveRegistrationCount
        case .naive, .perElementNaive, .scan: return NaiveRegistry.shared.count
        default: return 0
        }
    }

    private func checkLeaks(_ cell: Cell, before: Int) {
        let after = liveRegistrations(cell.impl)
        if after != before {
            warn(cell, "\(cell.scenario.name)/\(cell.impl.rawValue): \(after - before) registration(s) still live after tear-down")
        }
    }

    private func warn(_ cell: Cell, _ message: String?) {
        guard let message else { return }
        if !cell.warnings.contains(message) { cell.warnings.append(message) }
        progress("warning: " + message)
    }
}

/// ns with 3 significant figures-ish: 1.42, 13.4, 612, 1,339.
func formatNs(_ ns: Double) -> String {
    if ns.isNaN { return "-" }
    if ns < 10 { return String(format: "%.2f", ns) }
    if ns < 100 { return String(format: "%.1f", ns) }
    return groupThousands(Int(ns.rounded()))
}

func groupThousands(_ value: Int) -> String {
    let digits = String(abs(value))
    var out = ""
    for (i, ch) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(ch)
    }
    return (value < 0 ? "-" : "") + out
}

extension String {
    /// Left-aligned in `width` columns (never truncated).
    func padded(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
    /// Right-aligned in `width` columns.
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
