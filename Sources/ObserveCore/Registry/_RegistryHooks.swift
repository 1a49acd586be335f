/// The three places where the registration core tells derived keys, bindings and streams what
/// happened. Each is one call in an existing file; each returns after one load when nothing in
/// the process uses what it serves.
///
/// | called from                                   | hook                        |
/// |-----------------------------------------------|-----------------------------|
/// | `KeyValueObservable._register`, after adding  | `_derivedKeyDidAdd`         |
/// | `_Registry.remove(_:)` / `remove(object:…)`   | `_registrationsDidEmpty`    |
/// | `_Registry.removeObject` (object deinit)      | `_objectDidDie`             |
///
/// Every hook runs with no registry lock held.

/// A registration was added for `keyPath` on `object`: when the key path is derived (a chain or
/// a dependent key), make sure the object has its driver. Classifies key paths seen for the
/// first time (and stops with a precondition failure for a chain that cannot be resolved).
///
/// Inlinable so that it is specialised where `_register` is: the common case (a declared key)
/// costs one non-generic call that takes only the registration, and a derived key's announcer
/// is made here, in code specialised for `Root` and `Value` (the drivers themselves are generic
/// code that would otherwise look up generic metadata on every change).
@inlinable
internal func _derivedKeyDidAdd<Root: KeyValueObservable, Value>(
    _ object: Root, _ keyPath: KeyPath<Root, Value>, _ registration: _AnyRegistration
) {
    if _fastPath(_isDeclaredKey(registration)) { return }
    _derivedKeyDidAddSlow(object, keyPath, registration) { _DerivedAnnouncer(keyPath) }
}

/// Whether the registration's key is announced by a setter (or not derived, as far as is known).
@inlinable @inline(__always)
internal func _isDeclaredKey(_ registration: _AnyRegistration) -> Bool {
    let kind = _KeyCatalog.shared.kind(registration.keyID)
    return kind == .plain || kind == .undetermined
}

@usableFromInline @inline(never)
internal func _derivedKeyDidAddSlow<Root: KeyValueObservable, Value>(
    _ object: Root, _ keyPath: KeyPath<Root, Value>, _ registration: _AnyRegistration,
    _ makeAnnouncer: () -> _DerivedAnnouncer<Root, Value>
) {
    let catalog = _KeyCatalog.shared
    var kind = catalog.kind(registration.keyID)
    if kind == .unknown { kind = catalog.classify(keyPath, id: registration.keyID) }
    guard kind == .derived, let plan = catalog.plan(for: registration.keyID) else { return }
    _DerivedDrivers.shared.attach(object, keyID: registration.keyID, registry: registration.registry, plan: plan,
                                  options: registration.options, makeAnnouncer: makeAnnouncer)
}

/// How a driver announces its derived key and reads its value: closures made in code
/// specialised for the key's types (see `_derivedKeyDidAdd`). Made only after the key was
/// classified as derived, so that the `ObservableKey` it makes is never taken for a declared one.
@usableFromInline
internal final class _DerivedAnnouncer<Root: KeyValueObservable, Value>: @unchecked Sendable {
    @usableFromInline let didSet: (Root, Value, Value) -> Void
    @usableFromInline let willSet: (Root, Value) -> Void
    @usableFromInline let read: (Root) -> Value
    /// A dependent key's whole step when a dependency changed (`_DependentDriver`): read the
    /// value, swap it with the kept one under the driver's lock, announce. Made here, in code
    /// specialised for `Root` and `Value`, so that the value moves as what it is: run by the
    /// generic driver, the same step went through reabstraction thunks around the reader and
    /// value-witness calls for the kept value (callgrind, dependent set: 705 -> 622 instructions).
    @usableFromInline let dependencyDidChange: (_DependentCell<Root, Value>, Root, _ generation: Int) -> Void

    @inlinable
    init(_ keyPath: KeyPath<Root, Value>) {
        let key = ObservableKey(keyPath)
        self.didSet = { root, oldValue, newValue in root.kvoRegistrar.didSet(key, of: root, from: oldValue, to: newValue) }
        self.willSet = { root, oldValue in root.kvoRegistrar.willSet(key, of: root, from: oldValue) }
        self.read = { root in root[keyPath: keyPath] }
        self.dependencyDidChange = { cell, root, generation in
            guard let (oldValue, newValue) = cell.replace(on: root, generation: generation) else { return }
            root.kvoRegistrar.didSet(key, of: root, from: oldValue, to: newValue)
        }
    }

    /// Announces a change of the key. Drivers call these, not `didSet` through the announcer: a
    /// closure read from another object's field and called was retained and released around the
    /// call (two atomic operations per change); called from its owner's method, inlined, it is
    /// not (callgrind, dependent set: 747 -> 704 instructions, no retain).
    @inline(__always) final func announceDidSet(_ root: Root, _ oldValue: Value, _ newValue: Value) {
        didSet(root, oldValue, newValue)
    }

    /// Announces the change about to happen (`.prior`); see `announceDidSet`.
    @inline(__always) final func announceWillSet(_ root: Root, _ oldValue: Value) { willSet(root, oldValue) }

    /// Runs `dependencyDidChange` (without a retain of the closure; see `announceDidSet`).
    @inline(__always) final func dependencyChanged(_ cell: _DependentCell<Root, Value>, _ root: Root, generation: Int) {
        dependencyDidChange(cell, root, generation)
    }
}

/// Registrations of `object` for `keyID` (or for any key, when nil) were removed and a group
/// emptied: a derived key left without registrations loses its driver.
internal func _registrationsDidEmpty(object: UInt, keyID: UInt32?) {
    let drivers = _DerivedDrivers.shared
    if drivers.liveCount.load(ordering: .relaxed) == 0 { return }
    if let keyID, _KeyCatalog.shared.kind(keyID) != .derived { return }
    drivers.reconcile(object: object, keyID: keyID)
}

/// `object` is being deinitialised and its registrations were just removed.
internal func _objectDidDie(_ object: UInt) {
    if _DerivedDrivers.shared.liveCount.load(ordering: .relaxed) != 0 {
        _DerivedDrivers.shared.objectDidDie(object)
    }
    if _DeathWatch.shared.count.load(ordering: .relaxed) != 0 {
        _DeathWatch.shared.objectDidDie(object)
    }
}
