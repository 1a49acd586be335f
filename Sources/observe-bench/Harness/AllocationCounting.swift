import BenchAllocCounter
import Foundation

/// Heap allocations per operation, counted in-process by the `BenchAllocCounter` target, which
/// replaces malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign for the whole
/// process and counts their calls per thread (see its header for what one allocation is).
///
/// Every latency row gets the figure the same way: after its timed batches, one or more extra
/// batches of the calibrated size run untimed, and the allocations the measuring thread made
/// inside `runBatch` (not in `prepareBatch` or `finishBatch`) are divided by the operations run.
/// An op is the row's op: a whole setup, append of 10,000 or batch where the row says so.
///
/// Replacement can fail silently (a libc that binds its own malloc first, a preloaded
/// allocator): the counter then stays still and every row would read zero. So the counter is
/// trusted only after ``probe`` has seen it count objects that Swift really allocated; otherwise
/// no row reports allocations, and a target on them says why.
enum AllocationCounter {
    /// Allocations made by the calling thread so far.
    @inline(__always)
    static func count() -> UInt64 { bench_alloc_count() }

    /// Objects the probe allocates.
    static let probeObjects = 1_000

    /// Allocations counted while the probe created ``probeObjects`` class instances, each one
    /// escaping through a non-inlined function so that none can be promoted to the stack.
    static let probe: UInt64 = {
        var sum = 0
        let before = count()
        for i in 0..<probeObjects { sum &+= makeProbeObject(i).value }
        let after = count()
        blackHole(sum)
        return after - before
    }()

    /// Whether allocations are counted: the probe saw one allocation per object (a few more are
    /// tolerated, fewer mean that Swift's allocations bypass the counter).
    static var isCounting: Bool {
        probe >= UInt64(probeObjects) && probe <= UInt64(probeObjects + probeObjects / 10)
    }

    /// What the figures are, for the output.
    static var method: String {
        isCounting
            ? "heap allocations counted in-process (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign "
                + "replaced; probe: \(probeObjects) Swift objects counted as \(probe) allocations), per op, in untimed "
                + "batches (>= 256 ops or 1 ms) after each repetition's timed ones"
            : "not counted: the allocation counter saw \(probe) allocations for \(probeObjects) Swift objects "
                + "(malloc replacement not in effect)"
    }

    /// The status of targets on allocations when nothing is counted.
    static var notCountingReason: String {
        "allocation counter not in effect (\(probe) allocations counted for \(probeObjects) objects)"
    }
}

private final class ProbeObject {
    let value: Int
    init(_ value: Int) { self.value = value }
}

@inline(never)
private func makeProbeObject(_ value: Int) -> ProbeObject { ProbeObject(value) }

extension Harness {
    /// Runs untimed batches of `batch` operations, at least one, until `minOps` operations or
    /// `maxNs` of wall time, and returns the heap allocations the calling thread made per
    /// operation inside the batches themselves (their untimed preparation and clean-up excluded).
    static func allocationsPerOp(_ fixture: Fixture, batch: Int, minOps: Int = 256,
                                 maxNs: UInt64 = 1_000_000) -> Double {
        var allocations: UInt64 = 0
        var ops = 0
        let end = monotonicNanoseconds() + maxNs
        repeat {
            fixture.prepareBatch?(batch)
            let before = AllocationCounter.count()
            fixture.runBatch(batch)
            allocations += AllocationCounter.count() - before
            fixture.finishBatch?(batch)
            ops += batch
        } while ops < minOps && monotonicNanoseconds() < end
        return Double(allocations) / Double(ops)
    }
}

/// Allocations per op: 0, 0.0039, 0.06, 3, 1.50, 300,012.
func formatAllocations(_ x: Double) -> String {
    if x.isNaN { return "-" }
    if x == x.rounded() && x < 1e15 { return groupThousands(Int(x)) }
    if x < 0.01 { return String(format: "%.4f", x) }
    if x < 10 { return String(format: "%.2f", x) }
    if x < 100 { return String(format: "%.1f", x) }
    return groupThousands(Int(x.rounded()))
}
