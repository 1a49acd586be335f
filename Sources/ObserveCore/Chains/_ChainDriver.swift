import Synchronization

/// Announces a key path chain (`\Person.address?.city`) on its root object.
///
/// The chain is resolved into hops (`Person.address`, `Address.city`). Level 0 is the root;
/// level `j + 1` is the object that hop `j` leads to. The driver registers hop `j` on the object
/// at level `j` (token registrations: the root is not named as their observer, which would hold
/// it weakly and, off Darwin, move all of its reference counting onto a side table; the driver
/// holds the root unowned and loads it per change, and the root's death detaches the driver,
/// which removes them):
///
/// ```
///   level 0: root ──address──▶ level 1: Address ──city──▶ (leaf value)
///            reg(address)               reg(city)
/// ```
///
/// - A change of the leaf on the current leaf object is announced as is (its old and new values,
///   lifted to the chain's optional when a link is optional): one change per set.
/// - A change of a link at level `j` re-wires levels `j + 1…` to the new objects, and announces
///   the chain's value before (read through the *old* object, whose subtree is intact) and after,
///   unless they are equal (`Equatable` values) or the link now leads to the same object.
/// - A nil link leaves the levels after it unwired; the chain's value is then nil.
/// - A chain of one hop is a subclass's key path for a property its superclass declares
///   (`\Student.name`): the leaf is the root's own property, announced under the subclass's key.
/// - A notification from an object that is no longer wired at its level (a change racing with a
///   re-wiring, or a registration made by an earlier full wiring) is ignored: each level records
///   the identity of its object and each full wiring bumps a generation. The leaf, whose changes
///   are the frequent ones, is checked without the lock: each leaf registration carries a stamp,
///   and only the stamp of the current one is published (`_leafStamp`).
internal final class _ChainDriver<Root: KeyValueObservable, Value>: _DerivedDriver, @unchecked Sendable {
    private let _announcer: _DerivedAnnouncer<Root, Value>
    private let _hops: [_AnyHop]
    private let _equals: ((Value, Value) -> Bool)?
    // Guarded by `lock`.
    @exclusivity(unchecked) private var _objects: [ObjectIdentifier?]
    @exclusivity(unchecked) private var _registrations: [_AnyRegistration?]
    @exclusivity(unchecked) private var _generation = 0
    /// The stamp given to the latest leaf registration (guarded by `lock`; never 0).
    @exclusivity(unchecked) private var _lastLeafStamp: UInt = 0
    /// The stamp of the leaf registration that is wired now, 0 when none (unwired, detached, or a
    /// nil link before the leaf). Written under `lock`, before the registration it names is made;
    /// read without it by `_leafDidChange`, which would otherwise take the lock on every leaf set
    /// (an atomic read-modify-write, ~5 ns of a ~60 ns chain delivery on this machine kind). A
    /// reader may see a stamp an instant stale, exactly as the lock-taking check could become stale
    /// the instant it unlocked: a change racing with a re-wiring is announced or not, either way.
    /// The stamp orders no other data (the reader reads nothing the writer wrote with it), so
    /// relaxed would do; release/acquire costs nothing more on the machines we run.
    private let _leafStamp = Atomic<UInt>(0)

    init(announcer: _DerivedAnnouncer<Root, Value>, object: AnyObject, hops: [_AnyHop]) {
        _require(!hops.isEmpty, "ObserveCore internal error: a chain needs a hop")
        _announcer = announcer
        _hops = hops
        _equals = _equality(Value.self)
        _objects = Array(repeating: nil, count: hops.count)
        _registrations = Array(repeating: nil, count: hops.count)
        super.init(object: object)
    }

    override func _wireLocked(_ root: AnyObject) -> [_AnyRegistration] {
        _generation += 1
        return _wireLocked(from: 0, object: root)
    }

    override func _unwireLocked() -> [_AnyRegistration] {
        _generation += 1
        _leafStamp.store(0, ordering: .releasing)
        let stale = _registrations.compactMap { $0 }
        for level in _hops.indices {
            _registrations[level] = nil
            _objects[level] = nil
        }
        return stale
    }

    /// Wires levels `level…` starting with `object` (nil: a link before was nil); returns the
    /// registrations it replaced, for the caller to remove after unlocking.
    private func _wireLocked(from level: Int, object: AnyObject?) -> [_AnyRegistration] {
        var stale: [_AnyRegistration] = []
        var current = object
        let generation = _generation
        let last = _hops.count - 1
        for index in level...last {
            if let registration = _registrations[index] {
                stale.append(registration)
                _registrations[index] = nil
            }
            _objects[index] = current.map(ObjectIdentifier.init)
            guard let target = current else {
                if index == last { _leafStamp.store(0, ordering: .releasing) }
                continue
            }
            if index < last {
                _registrations[index] = _hops[index].registerLink(on: target, prior: wantsPrior) {
                    [self] object, oldNext, isPrior in
                    _linkDidChange(level: index, generation: generation, object: object, oldNext: oldNext,
                                   isPrior: isPrior)
                }
                current = _hops[index].next(of: target)
            } else {
                _lastLeafStamp &+= 1
                let stamp = _lastLeafStamp
                _leafStamp.store(stamp, ordering: .releasing)   // before a change can arrive
                _registrations[index] = _hops[index].registerLeaf(on: target, prior: wantsPrior, as: Value.self) {
                    [self] _, oldValue, newValue, isPrior in
                    _leafDidChange(stamp: stamp, oldValue: oldValue, newValue: newValue, isPrior: isPrior)
                }
            }
        }
        return stale
    }

    /// The chain's value read from `object` at `level` (nil object: nil value).
    private func _evaluate(from level: Int, _ object: AnyObject?) -> Value {
        var current = object
        var index = level
        while index < _hops.count - 1, let object = current {
            current = _hops[index].next(of: object)
            index += 1
        }
        if index < _hops.count - 1 { current = nil }
        return _hops[_hops.count - 1].leafValue(of: current, as: Value.self)
    }

    /// Whether `object` is still the one wired at `level` in this wiring (links only: a leaf
    /// change is checked against `_leafStamp`).
    @inline(__always)
    private func _isWiredLocked(_ level: Int, _ generation: Int, _ object: AnyObject) -> Bool {
        !isDetached && generation == _generation && _objects[level] == ObjectIdentifier(object)
    }

    /// The root, strongly, unless it began to die (then its deinit is about to detach this driver,
    /// and the change is not announced).
    @inline(__always)
    private func _loadRoot() -> Root? {
        guard let root = self.object.load() else { return nil }
        return unsafeDowncast(root, to: Root.self)
    }

    private func _linkDidChange(level: Int, generation: Int, object: AnyObject, oldNext: AnyObject?, isPrior: Bool) {
        guard let typedRoot = _loadRoot() else { return }
        if isPrior {
            let wired = lock.withLock { _isWiredLocked(level, generation, object) }
            if wired { _announcer.announceWillSet(typedRoot, _evaluate(from: 0, typedRoot)) }
            return
        }
        lock.lock()
        guard _isWiredLocked(level, generation, object) else {
            lock.unlock()
            return
        }
        let newNext = _hops[level].next(of: object)
        if newNext === oldNext {
            lock.unlock()
            return
        }
        let oldValue = _evaluate(from: level + 1, oldNext)
        let stale = _wireLocked(from: level + 1, object: newNext)
        let newValue = _evaluate(from: level + 1, newNext)
        lock.unlock()
        _remove(stale)
        if let _equals, _equals(oldValue, newValue) { return }
        _announcer.announceDidSet(typedRoot, oldValue, newValue)
    }

    /// A change of the leaf, from the registration stamped `stamp`: announced when that
    /// registration is still the wired one (see `_leafStamp`).
    private func _leafDidChange(stamp: UInt, oldValue: Value, newValue: Value, isPrior: Bool) {
        guard _leafStamp.load(ordering: .acquiring) == stamp, let typedRoot = _loadRoot() else { return }
        if isPrior {
            _announcer.announceWillSet(typedRoot, oldValue)
        } else {
            _announcer.announceDidSet(typedRoot, oldValue, newValue)
        }
    }
}

/// `==` for `Value` when it is `Equatable` (decided once, so the returned function runs no
/// dynamic cast), nil otherwise.
@usableFromInline
internal func _equality<Value>(_: Value.Type) -> ((Value, Value) -> Bool)? {
    guard let equatable = Value.self as? any Equatable.Type else { return nil }
    func open<E: Equatable>(_: E.Type) -> (Value, Value) -> Bool {
        { a, b in _identityCast(a, to: E.self) == _identityCast(b, to: E.self) }
    }
    return open(equatable)
}
