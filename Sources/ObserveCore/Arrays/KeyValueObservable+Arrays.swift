import Dispatch

extension KeyValueObservable {
    /// Observes the array held in `keyPath`: its mutations, and the property being reassigned to
    /// another array (``ArrayChange/Kind/arrayReplaced``, with ``ArrayChange/oldArray`` and
    /// ``ArrayChange/newArray``), after which the new array's mutations are observed and the old
    /// one's no longer are.
    ///
    /// ```swift
    /// let token = teacher.observeArray(\.students) { teacher, change in
    ///     print(change.kind, change.elements.map { ($0.oldIndex, $0.newIndex) })
    /// }
    /// ```
    /// The property's setter must announce changes (see ``ObservableKey``). Setting the property
    /// to the array it already holds reports nothing.
    public func observeArray<Element>(
        _ keyPath: KeyPath<Self, ObservableArray<Element>>,
        options: ArrayObservationOptions = [.new],
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Self, ArrayChange<Element>) -> Void
    ) -> ObservationToken {
        _ArrayObservation<Self, Element>.start(owner: self, keyPath: keyPath, options: options, delivery: delivery,
                                               elementKeyPaths: [], startTracking: nil, handler: handler)
    }

    /// Observes the array held in `keyPath` and the given properties of its elements (one
    /// registration, never one per element); see ``ObservableArray/observe(options:elementKeyPaths:delivery:_:)``.
    ///
    /// ```swift
    /// let token = teacher.observeArray(\.students, options: [.old, .new], elementKeyPaths: [\.name]) { teacher, change in
    ///     if change.kind == .elementChanged { print(change.elementOldValue!, "->", change.elementNewValue!) }
    /// }
    /// ```
    public func observeArray<Element: KeyValueObservable>(
        _ keyPath: KeyPath<Self, ObservableArray<Element>>,
        options: ArrayObservationOptions = [.new],
        elementKeyPaths: [PartialKeyPath<Element>],
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Self, ArrayChange<Element>) -> Void
    ) -> ObservationToken {
        _ArrayObservation<Self, Element>.start(owner: self, keyPath: keyPath, options: options, delivery: delivery,
                                               elementKeyPaths: elementKeyPaths,
                                               startTracking: { array, keys in array._startTracking(keys) },
                                               handler: handler)
    }
}

/// An owner's observation of its array property: one registration on the owner's property (to
/// follow reassignment) and one on whichever array the property currently holds. The array
/// registration names the owner as its observer, so it dies with the owner.
internal final class _ArrayObservation<Owner: KeyValueObservable, Element>: @unchecked Sendable {
    private let _lock = _Lock()
    private let _options: ArrayObservationOptions
    private let _delivery: ObservationDelivery
    private let _elementKeyPaths: [AnyKeyPath]
    private let _startTracking: ((ObservableArray<Element>, [_ElementKey]) -> Void)?
    private let _handler: (Owner, ArrayChange<Element>) -> Void
    @exclusivity(unchecked) private var _ownerRegistration: _AnyRegistration?
    @exclusivity(unchecked) private var _arrayRegistration: _AnyRegistration?
    @exclusivity(unchecked) private var _cancelled = false

    private init(options: ArrayObservationOptions, delivery: ObservationDelivery, elementKeyPaths: [AnyKeyPath],
                 startTracking: ((ObservableArray<Element>, [_ElementKey]) -> Void)?,
                 handler: @escaping (Owner, ArrayChange<Element>) -> Void) {
        _options = options
        _delivery = delivery
        _elementKeyPaths = elementKeyPaths
        _startTracking = startTracking
        _handler = handler
    }

    static func start(owner: Owner, keyPath: KeyPath<Owner, ObservableArray<Element>>, options: ArrayObservationOptions,
                      delivery: ObservationDelivery, elementKeyPaths: [AnyKeyPath],
                      startTracking: ((ObservableArray<Element>, [_ElementKey]) -> Void)?,
                      handler: @escaping (Owner, ArrayChange<Element>) -> Void) -> ObservationToken {
        let observation = _ArrayObservation(options: options, delivery: delivery, elementKeyPaths: elementKeyPaths,
                                            startTracking: startTracking, handler: handler)
        observation._lock.withLock {
            observation._ownerRegistration = owner._register(
                keyPath, options: [.old, .new], delivery: .inline,
                tokenHandler: { [weak observation] owner, change in
                    observation?._ownerPropertyChanged(owner, from: change.oldValue!, to: change.newValue!)
                })
            observation._attach(to: owner[keyPath: keyPath], owner: owner)
        }
        if options.contains(.initial) {
            observation._deliver(owner, ._replaced(by: owner[keyPath: keyPath], oldCount: 0, isInitial: true))
        }
        // The token's closures capture non-generic closures only, so nothing of `Owner`'s type.
        let controls = _UncheckedSendable((cancel: { observation.cancel() }, isCancelled: { observation.isCancelled }))
        return ObservationToken(cancel: { controls.value.cancel() }, isCancelled: { controls.value.isCancelled() },
                                silenceKeys: [observation._silenceKey])
    }

    /// What `withoutNotifying` names this observation by: its array registrations carry it (the
    /// registration changes with the owner's array), and so do the array replacements it reports.
    /// The owner-property registration does not: it must re-attach even in a silenced scope.
    var _silenceKey: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    /// Lock held.
    private func _attach(to array: ObservableArray<Element>, owner: Owner) {
        let handler = _handler
        _arrayRegistration = array._addArrayRegistration(
            observer: owner, context: ObservationContext(self), options: _options.subtracting(.initial),
            delivery: _delivery, elementKeyPaths: _elementKeyPaths,
            startTracking: _startTracking.map { start in { keys in start(array, keys) } }, silenceOwner: _silenceKey
        ) { _, owner, change in handler(Self._owner(owner), change) }
    }

    /// The registration's observer as the owner it is (it is registered with nothing else).
    private static func _owner(_ observer: AnyObject?) -> Owner { unsafeDowncast(observer.unsafelyUnwrapped, to: Owner.self) }

    private func _ownerPropertyChanged(_ owner: Owner, from old: ObservableArray<Element>, to new: ObservableArray<Element>) {
        guard old !== new else { return }
        let proceed: Bool = _lock.withLock {
            guard !_cancelled else { return false }
            _arrayRegistration?.removeFromRegistry()
            _attach(to: new, owner: owner)
            return true
        }
        guard proceed else { return }
        _deliver(owner, ._replaced(by: new, oldCount: old.count, isInitial: false, oldArray: old))
    }

    private func _deliver(_ owner: Owner, _ change: ArrayChange<Element>) {
        if _ThreadSilence.silences(_silenceKey) { return }
        switch _delivery {
        case .inline:
            _handler(owner, change)
        case .queue(let queue):
            // The queued closure captures only a non-generic closure: nothing of `Owner`'s type.
            let depth = _ThreadDepth.current
            let work = _UncheckedSendable { [self] in
                if !isCancelled { _ThreadDepth.withDepth(depth) { _handler(owner, change) } }
            }
            queue.async { work.value() }
        }
    }

    func cancel() {
        let registrations: [_AnyRegistration] = _lock.withLock {
            _cancelled = true
            defer { _ownerRegistration = nil; _arrayRegistration = nil }
            return [_ownerRegistration, _arrayRegistration].compactMap { $0 }
        }
        for registration in registrations { registration.removeFromRegistry() }
    }

    var isCancelled: Bool {
        _lock.withLock { _cancelled || (_ownerRegistration?.isCancelled ?? true) }
    }
}
