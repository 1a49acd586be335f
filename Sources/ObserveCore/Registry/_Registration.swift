import Dispatch
import Synchronization

/// One registration: what to call, for which (object, key, context), and how.
///
/// Registrations are immutable after creation except for `_cancelled`, which flips once, under
/// the owning shard's lock, when the registration is removed for any reason (token cancelled,
/// removal call, object or observer died). A notification already collected checks it before
/// each call, so a handler removed by an earlier handler of the same change is not called.
///
/// Invariants:
/// - every registration in a shard group of key id K is a `_PropertyRegistration<Root, Value>`
///   whose types are those of the key path interned as K (ids are interned by key path
///   equality, and a key path's type fixes Root and Value), so dispatch may `unsafeDowncast`;
/// - `_cancelled == false` ⟺ the registration is in its shard's group (checked under the lock).
@usableFromInline
internal class _AnyRegistration: @unchecked Sendable {
    @usableFromInline let options: ObservationOptions
    let objectAddress: UInt
    let keyID: UInt32
    let context: UInt
    /// Identity of the observer, 0 for token registrations (`observe`).
    @usableFromInline let observerAddress: UInt
    @usableFromInline weak var _observer: AnyObject?
    @usableFromInline let _queue: DispatchQueue?
    @usableFromInline let _cancelled = Atomic<Bool>(false)
    /// The registrar of the observed object. Valid while `_cancelled` is false when read under
    /// the shard lock: the registrar's deinit cancels (under the same lock) before it goes away.
    unowned(unsafe) let registrar: KeyValueRegistrar
    /// The registry holding this registration (registries live for the whole process).
    @usableFromInline let registry: _Registry
    let keyPath: AnyKeyPath

    init(registrar: KeyValueRegistrar, objectAddress: UInt, keyID: UInt32, keyPath: AnyKeyPath,
         context: UInt, observer: AnyObject?, options: ObservationOptions, queue: DispatchQueue?) {
        self.registrar = registrar
        self.registry = registrar._registry
        self.objectAddress = objectAddress
        self.keyID = keyID
        self.keyPath = keyPath
        self.context = context
        self._observer = observer
        self.observerAddress = observer.map { UInt(bitPattern: ObjectIdentifier($0)) } ?? 0
        self.options = options
        self._queue = queue
    }

    @inlinable
    final var isCancelled: Bool { _cancelled.load(ordering: .acquiring) }

    /// Whether the registration names an observer (observer-tagged rather than token-based).
    @inlinable
    final var hasObserver: Bool { observerAddress != 0 }
}

/// A registration of a handler for a property of type `Value` on objects of type `Root`.
@usableFromInline
internal final class _PropertyRegistration<Root: AnyObject, Value>: _AnyRegistration, @unchecked Sendable {
    /// (object, observer or nil, change).
    @usableFromInline let _handler: (Root, AnyObject?, ObservedChange<Value>) -> Void

    init(registrar: KeyValueRegistrar, objectAddress: UInt, keyID: UInt32, keyPath: AnyKeyPath,
         context: UInt, observer: AnyObject?, options: ObservationOptions, queue: DispatchQueue?,
         handler: @escaping (Root, AnyObject?, ObservedChange<Value>) -> Void) {
        self._handler = handler
        super.init(registrar: registrar, objectAddress: objectAddress, keyID: keyID, keyPath: keyPath,
                   context: context, observer: observer, options: options, queue: queue)
    }

    /// Calls the handler on the configured delivery, unless the registration was cancelled or
    /// its observer died (then the registration is removed). Never messages a dead observer.
    @inlinable
    func _deliver(_ object: Root, _ change: ObservedChange<Value>) {
        if isCancelled { return }
        var observer: AnyObject? = nil
        if hasObserver {
            guard let alive = _observer else {
                _removeDeadObserverRegistration()
                return
            }
            observer = alive
        }
        if let queue = _queue {
            _deliverAsync(on: queue, object, observer, change)
        } else {
            _handler(object, observer, change)
        }
    }

    @usableFromInline @inline(never)
    func _deliverAsync(on queue: DispatchQueue, _ object: Root, _ observer: AnyObject?, _ change: ObservedChange<Value>) {
        let work = _UncheckedSendable((self, object, change))
        let hadObserver = observer != nil
        queue.async {
            let (registration, object, change) = work.value
            if registration.isCancelled { return }
            var observer: AnyObject? = nil
            if hadObserver {
                guard let alive = registration._observer else { return }
                observer = alive
            }
            registration._handler(object, observer, change)
        }
    }
}

extension _AnyRegistration {
    @usableFromInline @inline(never)
    final func _removeDeadObserverRegistration() {
        registry.remove(self)
    }
}

/// Carries a non-Sendable payload across a queue hop whose ordering the caller guarantees.
@usableFromInline
internal struct _UncheckedSendable<T>: @unchecked Sendable {
    @usableFromInline var value: T
    @inlinable init(_ value: T) { self.value = value }
}
