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
internal class _AnyRegistration: _TokenTarget, @unchecked Sendable {
    // Fields are laid out in declaration order: the small ones share words (options, the
    // cancelled flag, the registry flag and the key id; the slot and the group index). With the
    // observer, context and queue in `_extras`, a token registration is 72 bytes, in the
    // allocator's 80-byte size class (136 bytes before `_extras`; 88 with the registry as a
    // reference and the silence owner in every registration).
    @usableFromInline let options: ObservationOptions
    @usableFromInline let _cancelled = Atomic<Bool>(false)
    /// Which of the two registries holds this registration (`registry`): a flag, not a
    /// reference, which would cost 8 bytes and, as `unowned(unsafe)`, a retain per read.
    @usableFromInline let _inSwiftRegistry: Bool
    @usableFromInline let keyID: UInt32
    /// The shard slot of this registration's group; meaningful while not cancelled, and read
    /// and written only under the shard's lock.
    @exclusivity(unchecked) var _slot: UInt32 = 0
    /// This registration's position in its group (`_RegistrationGroup`), under the same rules.
    @exclusivity(unchecked) var _groupIndex: UInt32 = 0
    let objectAddress: UInt
    /// The observer, its context and the delivery queue: nil for a token registration delivered
    /// inline (`observe`, the usual kind), which so carries 32 bytes less.
    @usableFromInline let _extras: _RegistrationExtras?
    /// The registrar of the observed object, unretained. Valid while `_cancelled` is false when
    /// read under the shard lock: the registrar's deinit cancels (under the same lock) before it
    /// goes away. Used only through `withRegistrar`, which takes no reference: a strong
    /// reference taken under the shard lock could be the last one once the object dies on
    /// another thread, and the registrar's deinit would then run, and take the same lock, on
    /// this thread (a self-deadlock seen with `unowned(unsafe)`, whose loads retain).
    private let _registrar: Unmanaged<KeyValueRegistrar>

    /// The registry holding this registration, unretained: the two registries live for the
    /// whole process.
    @usableFromInline final var _registryReference: Unmanaged<_Registry> {
        _inSwiftRegistry ? _Registry.swiftReference : _Registry.cReference
    }

    /// The registry holding this registration.
    @usableFromInline final var registry: _Registry { _registryReference.takeUnretainedValue() }

    /// Removes this registration from its registry (nothing when it was already removed): what
    /// cancelling a token does. Takes no reference to the registry.
    @usableFromInline
    final func removeFromRegistry() {
        if isCancelled { return }
        _registryReference._withUnsafeGuaranteedRef { $0.remove(self) }
    }

    /// The key path observed, as interned for `keyID` (an equal one; the key table keeps it for
    /// the life of the process). Not stored: introspection alone reads it, and a stored copy
    /// cost every registration 8 bytes and a retain and a release.
    var keyPath: AnyKeyPath { _KeyTable.shared.keyPath(for: keyID).unsafelyUnwrapped }

    /// Binds `registrar` to `object` (checking it serves no other), interns `keyPath`, and
    /// records the rest. Non-generic on purpose: the generic subclass init stays tiny.
    ///
    /// The references are borrowed (`__shared`): an initializer takes its arguments owned by
    /// default, so each caller retained registrar, object, key path and queue for this init to
    /// release them again, eight atomic read-modify-writes per registration (callgrind).
    /// `keyID`, when not 0, is the id already interned for `keyPath` (which is then not read, and
    /// may be nil): an array's registration passes its array's contents key, because building
    /// that generic key path again would cost more than the rest of the registration.
    @usableFromInline
    init(registrar: __shared KeyValueRegistrar, object: __shared AnyObject, keyPath: __shared AnyKeyPath?,
         keyID: UInt32 = 0, context: ObservationContext, observer: __shared AnyObject?, options: ObservationOptions,
         delivery: __shared ObservationDelivery) {
        self._registrar = Unmanaged.passUnretained(registrar)
        self._inSwiftRegistry = registrar._registry.backend == .swift
        self.objectAddress = registrar._bind(to: object)
        self.keyID = keyID != 0 ? keyID : _KeyTable.shared.id(for: keyPath!)
        self.options = options
        let queue: DispatchQueue?
        switch delivery {
        case .inline: queue = nil
        case .queue(let target): queue = target
        }
        // `ObservationContext.none` is `UInt.max` (compared as a literal: the static costs a
        // `swift_once` per registration).
        if observer != nil || queue != nil || context.rawValue != UInt.max {
            _extras = _RegistrationExtras(observer: observer, context: context.rawValue, queue: queue)
        } else {
            _extras = nil
        }
        super.init()
    }

    // What a token holding this registration alone does (`ObservationToken`).
    override final func _tokenCancel() { removeFromRegistry() }
    override final var _tokenIsCancelled: Bool { isCancelled }
    override final var _tokenSilenceKeys: [UInt] { [silenceKey] }

    /// Identity of the observer, 0 for token registrations (`observe`).
    @inlinable
    final var observerAddress: UInt { _extras?.observerAddress ?? 0 }
    /// The observer (held weakly); nil for a token registration or once the observer died.
    @inlinable
    final var _observer: AnyObject? { _extras?.observer }
    /// The queue the handler runs on; nil for inline delivery.
    @inlinable
    final var _queue: DispatchQueue? { _extras?.queue }
    /// The observer's context (`ObservationContext.rawValue`; `UInt.max` is `.none`).
    final var context: UInt { _extras?.context ?? UInt.max }

    /// Runs `body` on the observed object's registrar without retaining it. Call it only under
    /// the shard lock, and only while the registration is not cancelled (see `_registrar`).
    @inline(__always)
    final func withRegistrar<R>(_ body: (KeyValueRegistrar) -> R) -> R {
        _registrar._withUnsafeGuaranteedRef(body)
    }

    @inlinable
    final var isCancelled: Bool { _cancelled.load(ordering: .acquiring) }

    /// The key `withoutNotifying` names this registration's observation by: its own address,
    /// or the composite observation's it belongs to (`_ArrayRegistrationBase`).
    @usableFromInline
    var silenceKey: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    /// Whether a change announced now, on this thread, must not reach this registration: it was
    /// cancelled, or a `withoutNotifying` scope of this thread names its observation.
    @inlinable
    final var isSilencedOrCancelled: Bool {
        isSilencedOrCancelled(scopesOpen: registry.openScopes.load(ordering: .relaxed) != 0)
    }

    /// `isSilencedOrCancelled` for a caller that has read the scope count (`_Registry.openScopes`)
    /// itself, through a registry it holds: `scopesOpen` is whether it was non-zero.
    @inlinable
    final func isSilencedOrCancelled(scopesOpen: Bool) -> Bool {
        isCancelled || (_slowPath(scopesOpen) && _ThreadSilence.isSilenced(silenceKey))
    }

    /// Called once after the registration was removed, with no lock held. Array registrations
    /// use it to stop element tracking when the last element-key registration of an array goes.
    func _didRemove() {}

    /// Whether the registration names an observer (observer-tagged rather than token-based).
    @inlinable
    final var hasObserver: Bool { observerAddress != 0 }

    /// Whether the registration named an observer that has since died. Such a registration
    /// waits for a delivery or a sweep to remove it (both test this), and introspection skips it
    /// meanwhile.
    final var _observerDied: Bool { hasObserver && _observer == nil }
}

/// What a registration holds beyond a token registration delivered inline: set once, in the
/// registration's init.
@usableFromInline
internal final class _RegistrationExtras: @unchecked Sendable {
    @usableFromInline let observerAddress: UInt
    let context: UInt
    // Written once, in init (unchecked: a dynamic exclusivity check there cost ~76 instructions per
    // registration, callgrind).
    @usableFromInline @exclusivity(unchecked) weak var observer: AnyObject?
    @usableFromInline let queue: DispatchQueue?

    init(observer: AnyObject?, context: UInt, queue: DispatchQueue?) {
        self.observerAddress = observer.map { UInt(bitPattern: ObjectIdentifier($0)) } ?? 0
        self.context = context
        self.observer = observer
        self.queue = queue
    }
}

/// A registration of a handler for a property of type `Value` on objects of type `Root`.
///
/// The handler lives in one of two final subclasses, each with a non-optional closure of a
/// fixed shape. (Reading an optional closure stored in a generic class made the specialised
/// caller allocate a reabstraction thunk on every notification — callgrind showed a malloc per
/// set; a non-optional closure read from a final class is called directly.)
@usableFromInline
internal class _PropertyRegistration<Root: AnyObject, Value>: _AnyRegistration, @unchecked Sendable {
    /// Calls the handler on the configured delivery, unless the registration was cancelled or
    /// its observer died (then the registration is removed). Never messages a dead observer.
    /// - Parameter scopesOpen: false when the caller read `_Registry.openScopes` as zero on this
    ///   thread for this change: then no silence scope can name this registration, and only
    ///   cancellation is checked.
    @inlinable
    final func _deliver(_ object: Root, _ change: ObservedChange<Value>, scopesOpen: Bool = true) {
        if isCancelled || (_slowPath(scopesOpen) && isSilencedOrCancelled) { return }
        if _extras == nil {
            // A token registration delivered inline: one load decides.
            unsafeDowncast(self, to: _TokenRegistration<Root, Value>.self)._handler(object, change)
        } else if _queue != nil {
            _deliverAsync(object, change)
        } else if hasObserver {
            guard let observer = _observer else {
                _removeDeadObserverRegistration()
                return
            }
            unsafeDowncast(self, to: _ObserverRegistration<Root, Value>.self)._handler(observer, object, change)
        } else {
            // Extras without an observer or a queue: a context alone, which only observer
            // registrations carry (`_extras` is nil for a token registration delivered inline).
            _require(false, "ObserveCore: a registration with a context but no observer")
        }
    }

    @usableFromInline @inline(never)
    final func _deliverAsync(_ object: Root, _ change: ObservedChange<Value>) {
        if _observerDied {
            _removeDeadObserverRegistration()
            return
        }
        let work = _UncheckedSendable((self, object, change))
        let depth = _ThreadDepth.current
        _queue.unsafelyUnwrapped.async {
            let (registration, object, change) = work.value
            if registration.isCancelled { return }
            _ThreadDepth.withDepth(depth) {
                if registration.hasObserver {
                    // Never messages an observer that died while the change waited in the queue.
                    guard let observer = registration._observer else { return }
                    unsafeDowncast(registration, to: _ObserverRegistration<Root, Value>.self)._handler(observer, object, change)
                } else {
                    unsafeDowncast(registration, to: _TokenRegistration<Root, Value>.self)._handler(object, change)
                }
            }
        }
    }
}

/// A registration made with `observe`, kept alive by its ``ObservationToken``.
@usableFromInline
internal final class _TokenRegistration<Root: AnyObject, Value>: _PropertyRegistration<Root, Value>, @unchecked Sendable {
    @usableFromInline let _handler: (Root, ObservedChange<Value>) -> Void

    @inlinable
    init(registrar: __shared KeyValueRegistrar, object: __shared Root, keyPath: __shared KeyPath<Root, Value>,
         options: ObservationOptions, delivery: __shared ObservationDelivery,
         handler: @escaping (Root, ObservedChange<Value>) -> Void) {
        self._handler = handler
        super.init(registrar: registrar, object: object, keyPath: keyPath, context: .none,
                   observer: nil, options: options, delivery: delivery)
    }
}

/// A registration made with `addObserver`: the observer is held weakly and passed to the handler.
@usableFromInline
internal final class _ObserverRegistration<Root: AnyObject, Value>: _PropertyRegistration<Root, Value>, @unchecked Sendable {
    @usableFromInline let _handler: (AnyObject, Root, ObservedChange<Value>) -> Void

    @inlinable
    init(registrar: __shared KeyValueRegistrar, object: __shared Root, keyPath: __shared KeyPath<Root, Value>,
         context: ObservationContext, observer: __shared AnyObject, options: ObservationOptions,
         delivery: __shared ObservationDelivery, handler: @escaping (AnyObject, Root, ObservedChange<Value>) -> Void) {
        self._handler = handler
        super.init(registrar: registrar, object: object, keyPath: keyPath, context: context,
                   observer: observer, options: options, delivery: delivery)
    }
}

extension _AnyRegistration {
    @usableFromInline @inline(never)
    final func _removeDeadObserverRegistration() {
        removeFromRegistry()
    }
}

/// Carries a non-Sendable payload across a queue hop whose ordering the caller guarantees.
@usableFromInline
internal struct _UncheckedSendable<T>: @unchecked Sendable {
    @usableFromInline var value: T
    @inlinable init(_ value: T) { self.value = value }
}
