import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Monotonic time in nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`, a vDSO call on Linux).
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

// MARK: - Defeating the optimiser

/// A value the optimiser cannot know: derived from the process id and the clock at start-up, so
/// values written by the workloads are never constants it could fold.
nonisolated(unsafe) var runtimeSeed: Int = Int(getpid()) &* 1_000_003 &+ Int(truncatingIfNeeded: monotonicNanoseconds() & 0xFFFF)

/// Where consumed results go. Written through a non-inlined, non-optimised function, so a value
/// passed to ``blackHole(_:)`` must really be computed. Atomic because the threads scenario
/// consumes from two threads (never inside a timed loop).
private let _blackHoleStore = Atomic<Int>(0)

/// Consumes `value` so that the computation producing it cannot be removed.
@inline(never) @_optimize(none)
func blackHole(_ value: Int) {
    _blackHoleStore.wrappingAdd(value, ordering: .relaxed)
}

/// The side effect every observer performs: it adds what it was told to a counter. Observers
/// call through an instance of this class captured by their closure, so the compiler cannot
/// prove the additions dead; the totals are consumed with ``blackHole(_:)`` after each run.
///
/// Padded to a cache line so the two threads of `threads.2-distinct` never share one.
final class Sink: @unchecked Sendable {
    var total = 0
    /// How many times observers called in: checked against the operations run, so a peer whose
    /// observers silently stopped firing cannot look fast.
    var calls = 0
    private var _padding: (Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0)

    @inline(__always)
    func add(_ value: Int) {
        total &+= value
        calls &+= 1
    }

    /// A warning when observers were not called `expected` times.
    func check(expected: Int, _ what: String) -> String? {
        calls == expected ? nil : "\(what): observers were called \(calls) times, expected \(expected)"
    }

    /// Hands the total to the black hole and returns it.
    @discardableResult
    func consume() -> Int {
        blackHole(total &+ _padding.0)
        return total
    }
}

/// Wraps a value that is handed to another thread under an ordering the harness guarantees
/// (start barrier before use, semaphore after).
struct Unchecked<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
