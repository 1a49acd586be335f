import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The live part of one binding: its registrations (held weakly), the sources it watches for
/// death (combined bindings), and the cut-off state.
///
/// Ownership: the registry holds the registrations; each registration's handler holds the core;
/// the core holds the registrations weakly, so nothing here keeps an object or a registration
/// alive. Every registration names the *target* as observer (weakly held; when the target is
/// observable its registrations go the moment it dies) and the core's address as context (so
/// two bindings between the same objects never merge).
///
/// Cycles: `propagate` refuses to run a binding that is already propagating on the current
/// thread (a thread-local stack of active bindings), and writers skip values equal to the
/// target's current one; so A bound to B bound to A settles after one round.
internal final class _BindingCore: @unchecked Sendable, _DeathWatcher {
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _registrations: [_WeakRegistration] = []
    @exclusivity(unchecked) private var _watched: [UInt] = []
    private let _cut = Atomic<Bool>(false)

    var context: ObservationContext { ObservationContext(self) }

    deinit {
        let identity = ObjectIdentifier(self)
        for address in _watched { _DeathWatch.shared.unwatch(address, identity: identity) }
    }

    func add(_ registration: _AnyRegistration?) {
        guard let registration else { return }
        _lock.withLock { _registrations.append(_WeakRegistration(registration)) }
        if _cut.load(ordering: .acquiring) { registry(remove: registration) }
    }

    /// Cuts the binding off when `object` dies (combined bindings: any source's death ends it).
    func watch(_ object: AnyObject) {
        let address = UInt(bitPattern: ObjectIdentifier(object))
        _lock.withLock { _watched.append(address) }
        _DeathWatch.shared.watch(object, by: self)
    }

    var isCut: Bool { _cut.load(ordering: .acquiring) }

    /// Whether every registration of the binding is still live.
    var isActive: Bool {
        if isCut { return false }
        return _lock.withLock {
            !_registrations.isEmpty && _registrations.allSatisfy { $0.registration.map { !$0.isCancelled } ?? false }
        }
    }

    func cutOff() {
        if _cut.exchange(true, ordering: .acquiringAndReleasing) { return }
        let (registrations, watched) = _lock.withLock {
            defer {
                _registrations = []
                _watched = []
            }
            return (_registrations.compactMap(\.registration), _watched)
        }
        for registration in registrations { registry(remove: registration) }
        for address in watched { _DeathWatch.shared.unwatch(address, by: self) }
    }

    private func registry(remove registration: _AnyRegistration) {
        if !registration.isCancelled { registration.registry.remove(registration) }
    }

    func watchedObjectDidDie(_ address: UInt) { cutOff() }

    /// Runs `body` unless the binding is cut or already propagating on this thread.
    @inline(__always)
    func propagate(_ body: () -> Void) {
        if isCut { return }
        let identity = UInt(bitPattern: ObjectIdentifier(self))
        guard _BindingReentrancy.enter(identity) else { return }
        defer { _BindingReentrancy.leave(identity) }
        body()
    }

    /// The writer of a binding's target: skips values equal to the current one (when `Equatable`),
    /// sets, then runs the after-hook.
    static func writer<Target: AnyObject, Value>(
        _ keyPath: ReferenceWritableKeyPath<Target, Value>, after: ((Target, Value) -> Void)?
    ) -> (Target, Value) -> Void {
        let equals = _equality(Value.self)
        return { target, value in
            if let equals, equals(target[keyPath: keyPath], value) { return }
            target[keyPath: keyPath] = value
            after?(target, value)
        }
    }
}

internal struct _WeakRegistration {
    weak var registration: _AnyRegistration?
    init(_ registration: _AnyRegistration) { self.registration = registration }
}

/// The bindings propagating on the current thread, innermost last (a per-thread stack behind a
/// pthread key; a few entries at most).
internal enum _BindingReentrancy {
    private final class _Stack {
        var identities: [UInt] = []
    }

    private static let _key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        _require(status == 0, "ObserveCore: pthread_key_create failed (\(status))")
        return key
    }()

    private static func _stack() -> _Stack {
        if let pointer = pthread_getspecific(_key) {
            return unsafeDowncast(Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue(), to: _Stack.self)
        }
        let stack = _Stack()
        pthread_setspecific(_key, Unmanaged<AnyObject>.passRetained(stack).toOpaque())
        return stack
    }

    /// Pushes `identity`; false (and pushes nothing) when it is already on this thread's stack.
    static func enter(_ identity: UInt) -> Bool {
        let stack = _stack()
        if stack.identities.contains(identity) { return false }
        stack.identities.append(identity)
        return true
    }

    static func leave(_ identity: UInt) {
        let stack = _stack()
        if stack.identities.last == identity {
            stack.identities.removeLast()
        } else if let index = stack.identities.lastIndex(of: identity) {
            stack.identities.remove(at: index)
        }
    }
}
