internal import CObserveCore
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
    @usableFromInline internal final let _word = _LockWord()

    internal init() {}

    @inlinable @inline(__always)
    internal func lock() {
        if _word.tryLock() { return }
        _lockContended()
    }

    /// Waits for the lock (out of line: the inlined path is the one compare-and-swap).
    @usableFromInline @inline(never)
    internal func _lockContended() {
        _word.waitAndLock()
    }

    @inlinable @inline(__always)
    internal func unlock() {
        _word.unlock()
    }

    /// Drops the lock after a section whose only reference-counted traffic with the shared state
    /// is values of `T` moved or copied in or out (the array's unobserved fast paths: an element
    /// stored, read or taken; the storage itself held `unowned(unsafe)`). When `T` holds no
    /// references there is no retain or release that could sink below the store, so the barrier
    /// call of `unlock()` (1.6 ns of a 4.6 ns append) is skipped; otherwise this is `unlock()`.
    @inlinable @inline(__always)
    internal func unlock<T>(movingOnly type: T.Type) {
        _word.unlock(movingOnly: type)
    }

    @inline(__always)
    internal func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// `_Lock`'s word, for an object that keeps its lock inline rather than as an object of its own
/// (a registrar: one allocation less for every observable object). Same protocol: one
/// compare-and-swap to take it, one release store to drop it, a brief spin and then yields.
@usableFromInline
internal struct _LockWord: ~Copyable, @unchecked Sendable {
    @usableFromInline internal let _state = Atomic<UInt32>(0)

    @usableFromInline
    internal init() {}

    @inlinable @inline(__always)
    internal func tryLock() -> Bool {
        _state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged
    }

    @inlinable @inline(__always)
    internal func lock() {
        if tryLock() { return }
        waitAndLock()
    }

    /// Spins, then yields its time slice every 32 tries, until the lock is taken.
    @usableFromInline @inline(never)
    internal func waitAndLock() {
        var spins = 0
        while true {
            if _state.load(ordering: .relaxed) == 0, tryLock() { return }
            _backOff(&spins)
        }
    }

    @inlinable @inline(__always)
    internal func unlock() {
        // An opaque call first: without it the optimizer sank the retain of a value copied out
        // under the lock below this store (cobs_barrier.h says how it was found).
        _opaqueBarrier()
        _state.store(0, ordering: .releasing)
    }

    /// `unlock()` without the barrier when `T` holds no references (see `_Lock.unlock(movingOnly:)`).
    @inlinable @inline(__always)
    internal func unlock<T>(movingOnly _: T.Type) {
        if !_isPOD(T.self) { _opaqueBarrier() }
        _state.store(0, ordering: .releasing)
    }
}

/// Releases `value` after the caller's `unlock()`. Written plainly (`_ = consume value` after the
/// unlock), the release could run before the unlock: the unlock is a release store, which keeps
/// what comes before it above it but lets what follows move up, and the optimizer did move the
/// release of a removed storage there, so that its elements' deinits ran under the array's lock
/// (caught by "removeAll releases the elements after dropping the array's lock", release build).
/// The opaque call first pins the release below the store.
@inlinable @inline(__always)
internal func _releaseAfterUnlocking<T>(_ value: consuming T) {
    if _isPOD(T.self) { return }
    _opaqueBarrier()
    _ = consume value
}

/// A call the optimizer cannot see through (`cobs_barrier.h`): no retain or release moves across
/// it. Not inlinable, so that inlined `unlock()`s in other modules keep the call too.
@usableFromInline
internal func _opaqueBarrier() {
    cobs_opaque_barrier()
}

/// One more turn of a wait loop: every 32nd turn yields the thread's time slice, so that the
/// thread being waited for gets a core even when it was preempted (two cores here). The waits of
/// `_Lock`, `_ArrayLock`'s revocation and `_SharedLoop` share it.
@usableFromInline @inline(__always)
internal func _backOff(_ spins: inout Int) {
    spins += 1
    if spins >= 32 {
        sched_yield()
        spins = 0
    }
}
