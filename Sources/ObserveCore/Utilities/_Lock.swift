import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A small non-recursive lock: one compare-and-swap to take it, one release store to drop it.
///
/// Why not `pthread_mutex_t`: on this machine kind an uncontended `pthread_mutex_lock`/`unlock`
/// pair executed ~106 instructions (callgrind) on the notification path, more than the registry
/// lookup it protects; this lock takes two atomic instructions. Critical sections here are a
/// table probe and an array copy, so a waiter spins briefly and then yields its time slice, which
/// keeps a preempted holder from being starved on a 2-core machine. ThreadSanitizer sees the
/// acquire/release atomics (they are inlined into this module), so it still checks callers.
@usableFromInline
internal final class _Lock: @unchecked Sendable {
    @usableFromInline internal let _state = Atomic<UInt32>(0)

    internal init() {}

    @inlinable @inline(__always)
    internal func lock() {
        if _state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { return }
        _lockContended()
    }

    @usableFromInline @inline(never)
    internal func _lockContended() {
        var spins = 0
        while true {
            if _state.load(ordering: .relaxed) == 0,
               _state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged {
                return
            }
            spins += 1
            if spins >= 32 {
                sched_yield()
                spins = 0
            }
        }
    }

    @inlinable @inline(__always)
    internal func unlock() {
        _state.store(0, ordering: .releasing)
    }

    @inline(__always)
    internal func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
