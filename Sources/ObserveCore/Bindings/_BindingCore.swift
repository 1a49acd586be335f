internal import CObserveCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The live part of one binding: its registrations (held weakly), the objects it watches for
/// death (the target; the sources of a combined binding), and the cut-off state.
///
/// Ownership: the registry holds the registrations; each registration's handler (a `sink`) holds
/// the core and an unowned reference to the target; the core holds the registrations weakly. So
/// nothing here keeps an object alive, and once the binding is cut off (its registrations
/// removed) nothing keeps even a dead target's memory.
///
/// The registrations are token registrations on the sources: they do not name the target as
/// observer, which would hold it weakly and, off Darwin, move all of its reference counting onto a
/// side table (callgrind, binding propagation: seven slow retains and releases of the target,
/// ~1,400 of ~5,600 instructions). Instead the core watches the target's death (`_DeathWatch`;
/// its registrar is bound to it for that) and cuts the binding off then; a change that races the
/// death loads the target as nil, writes nothing, and cuts the binding off itself (which also
/// covers a registrar that outlives its object). Internal registrations are therefore not listed
/// as the target observing the source (`observers(for:)`), and `removeObserver(target, …)` on the
/// source does not end a binding: `cancel()` does.
///
/// Two sources of one combined binding that observe the same property of the same object share
/// one registration (`add` drops the second): the reduce reads every source on each change anyway.
///
/// Cycles: `propagate` refuses to run a binding that is already propagating on the current
/// thread (`_BindingReentrancy`), and writers skip values equal to the target's current one; so
/// A bound to B bound to A settles after one round.
@usableFromInline
internal final class _BindingCore: @unchecked Sendable, _DeathWatcher {
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _registrations: [_WeakRegistration] = []
    @exclusivity(unchecked) private var _watched: [UInt] = []
    private let _cut = Atomic<Bool>(false)

    /// Makes the core of a binding of `target`, watching its death.
    @usableFromInline
    init<Target: KeyValueObservable>(target: Target) {
        // A registrar reports its object's death once bound to it; a target nobody observes
        // has not been bound yet.
        _ = target.kvoRegistrar._bind(to: target)
        watch(target)
    }

    deinit {
        let identity = ObjectIdentifier(self)
        for address in _watched { _DeathWatch.shared.unwatch(address, identity: identity) }
    }

    /// Keeps a source's registration (nil: the source is gone). A second registration for the
    /// same object and key as one the binding has is removed at once.
    @usableFromInline
    func add(_ registration: _AnyRegistration?) {
        guard let registration else { return }
        let duplicate = _lock.withLock { () -> Bool in
            let duplicate = _registrations.contains {
                $0.registration.map { $0.objectAddress == registration.objectAddress && $0.keyID == registration.keyID }
                    ?? false
            }
            if !duplicate { _registrations.append(_WeakRegistration(registration)) }
            return duplicate
        }
        if duplicate || _cut.load(ordering: .acquiring) { registry(remove: registration) }
    }

    /// Cuts the binding off when `object` dies (the target; any source of a combined binding).
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
        registration.removeFromRegistry()
    }

    func watchedObjectDidDie(_ address: UInt) { cutOff() }

    /// The handler of a source's registration: loads `target` (held unowned by the handler, so
    /// it goes with the registration) and propagates `write` to it; cuts the binding off if the
    /// target began to die.
    @usableFromInline
    func sink<Value>(to target: AnyObject, _ write: @escaping (AnyObject, Value) -> Void) -> (Value) -> Void {
        let target = _UnownedReference(target)
        return { [self] value in
            guard let object = target.load() else {
                cutOff()
                return
            }
            propagate(object) { write($0, value) }
        }
    }

    /// Runs `body` with `target` unless the binding is cut or already propagating on this thread.
    @usableFromInline
    func propagate(_ target: AnyObject, _ body: (AnyObject) -> Void) {
        if isCut { return }
        let identity = UInt(bitPattern: ObjectIdentifier(self))
        guard _BindingReentrancy.enter(identity) else { return }
        defer { _BindingReentrancy.leave(identity) }
        body(target)
    }

    /// The writer of a binding's target: skips values equal to the current one (when `Equatable`),
    /// sets, then runs the after-hook. A target property with `didSet` (or computed with a setter)
    /// is read and written through its accessors (`_ComputedAccessors`), not by applying the key
    /// path: about a tenth of the instructions, and no allocation.
    @inlinable
    static func writer<Target: AnyObject, Value>(
        _ keyPath: ReferenceWritableKeyPath<Target, Value>, after: ((Target, Value) -> Void)?
    ) -> (Target, Value) -> Void {
        let equals = _equality(Value.self)
        if let accessors = _ComputedAccessors.of(keyPath) {
            return { target, value in
                if let equals, equals(_callKeyPathGetter(accessors, target, as: Value.self), value) { return }
                _callKeyPathSetter(accessors, target, value)
                after?(target, value)
            }
        }
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

/// The bindings propagating on the current thread. The outermost sits in the C core's thread
/// record (one inline load and store: the common case, one binding at a time, took two
/// `pthread_getspecific` calls, two `swift_once` and an array search per propagation, ~670
/// instructions, callgrind); those nested inside it (a binding whose write propagates through
/// another) go on a per-thread stack behind a pthread key, innermost last (a few entries at most).
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

    /// Marks `identity` (non-zero) as propagating on this thread; false (and marks nothing) when it
    /// already is.
    @inline(__always)
    static func enter(_ identity: UInt) -> Bool {
        let outermost = UInt(cobs_thread_binding_get())
        if _fastPath(outermost == 0) {
            cobs_thread_binding_set(UInt(identity))
            return true
        }
        if outermost == identity { return false }
        return _enterNested(identity)
    }

    @inline(never)
    private static func _enterNested(_ identity: UInt) -> Bool {
        let stack = _stack()
        if stack.identities.contains(identity) { return false }
        stack.identities.append(identity)
        return true
    }

    /// Ends what `enter(identity)` began (propagations nest, so the outermost leaves last).
    @inline(__always)
    static func leave(_ identity: UInt) {
        if _fastPath(UInt(cobs_thread_binding_get()) == identity) {
            cobs_thread_binding_set(0)
            return
        }
        _leaveNested(identity)
    }

    @inline(never)
    private static func _leaveNested(_ identity: UInt) {
        let stack = _stack()
        if stack.identities.last == identity {
            stack.identities.removeLast()
        } else if let index = stack.identities.lastIndex(of: identity) {
            stack.identities.remove(at: index)
        }
    }
}
