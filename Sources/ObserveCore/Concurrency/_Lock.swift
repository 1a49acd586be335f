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
internal class _Lock: @unchecked Sendable {
    @usableFromInline internal final let _word = _LockWord()

    internal init() {}

    @inlinable @inline(__always)
    internal final func lock() {
        if _word.tryLock() { return }
        _lockContended()
    }

    /// Waits for the lock (overridden by `_HolderRecordingLock` to catch its holder coming back).
    @usableFromInline @inline(never)
    internal func _lockContended() {
        _word.waitAndLock()
    }

    @inlinable @inline(__always)
    internal final func unlock() {
        _word.unlock()
    }

    /// Drops the lock after a section whose only reference-counted traffic with the shared state
    /// is values of `T` moved or copied in or out (the array's unobserved fast paths: an element
    /// stored, read or taken; the storage itself held `unowned(unsafe)`). When `T` holds no
    /// references there is no retain or release that could sink below the store, so the barrier
    /// call of `unlock()` (1.6 ns of a 4.6 ns append) is skipped; otherwise this is `unlock()`.
    @inlinable @inline(__always)
    internal final func unlock<T>(movingOnly type: T.Type) {
        _word.unlock(movingOnly: type)
    }

    @inline(__always)
    internal final func withLock<R>(_ body: () throws -> R) rethrows -> R {
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
            spins += 1
            if spins >= 32 {
                sched_yield()
                spins = 0
            }
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

/// A `_Lock` whose holder may run user code while holding it (an ``ObservableArray`` element
/// mutated in place through the subscript): the section records its thread, so that the same
/// thread asking for the lock again traps with a message instead of spinning forever. Only the
/// array's lock pays for the extra word.
@usableFromInline
internal final class _HolderRecordingLock: _Lock, @unchecked Sendable {
    /// The thread in a `lockRecordingHolder()` section, or 0.
    @usableFromInline internal let _holder = Atomic<UInt>(0)

    override internal init() {}

    @usableFromInline @inline(never)
    override internal func _lockContended() {
        if _slowPath(_holder.load(ordering: .relaxed) == _currentThreadID()) { _reenteredDuringInPlaceAccess() }
        super._lockContended()
    }

    /// Takes the lock for a section that runs user code, recording the calling thread. Pair with
    /// `unlockRecordedHolder()`.
    @inlinable @inline(__always)
    internal func lockRecordingHolder() {
        lock()
        _holder.store(_currentThreadID(), ordering: .relaxed)
    }

    @inlinable @inline(__always)
    internal func unlockRecordedHolder() {
        _holder.store(0, ordering: .relaxed)
        unlock()
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

/// The calling thread's identity, never 0.
@usableFromInline @inline(__always)
internal func _currentThreadID() -> UInt {
    #if canImport(Glibc)
    UInt(pthread_self())
    #else
    UInt(bitPattern: pthread_self())
    #endif
}

/// The one user of `lockRecordingHolder()` is an ``ObservableArray`` element mutated in place
/// through its subscript, so the message speaks of that.
@usableFromInline @inline(never)
internal func _reenteredDuringInPlaceAccess() -> Never {
    fatalError("ObservableArray: the array was used while one of its elements was being mutated in place "
               + "through its subscript (for example `array[i].mutate { array.count }`, or "
               + "`swap(&array[i], &array[j])`: use `swapAt`). Nobody observes the array, so the element is "
               + "mutated where it is stored, with the array locked; read what the mutation needs before it, "
               + "or copy the element out, change it and assign it back.")
}
