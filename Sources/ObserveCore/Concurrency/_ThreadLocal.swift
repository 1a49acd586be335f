#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One object per thread, in pthread-specific storage: made on the thread's first `current`,
/// released when the thread exits. What `withoutNotifying` scopes and transactions keep per
/// thread. Reading it is a `pthread_getspecific` call, so callers check a cheaper process-wide
/// count first (`_Registry.openScopes`).
internal final class _ThreadLocal<Value: AnyObject>: @unchecked Sendable {
    private let _key: pthread_key_t
    private let _make: () -> Value

    /// `make` creates the object of a thread that has none; `what` names it in the message of the
    /// (process-fatal) failure to get a key.
    init(_ what: String, _ make: @escaping () -> Value) {
        var key = pthread_key_t()
        #if canImport(Darwin)
        let status = pthread_key_create(&key) { pointer in Unmanaged<AnyObject>.fromOpaque(pointer).release() }
        #else
        let status = pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
        }
        #endif
        _require(status == 0, "ObserveCore: pthread_key_create failed (\(status)) for \(what)")
        _key = key
        _make = make
    }

    /// The calling thread's object, if it has one.
    var existing: Value? {
        guard let pointer = pthread_getspecific(_key) else { return nil }
        return unsafeDowncast(Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue(), to: Value.self)
    }

    /// The calling thread's object, made now if it has none.
    var current: Value {
        if let existing { return existing }
        let value = _make()
        let status = pthread_setspecific(_key, Unmanaged<AnyObject>.passRetained(value).toOpaque())
        _require(status == 0, "ObserveCore: pthread_setspecific failed (\(status)) for a thread's state")
        return value
    }
}
