import Synchronization

/// What ObserveCore knows about each interned key path: whether a setter announces it (a
/// declared key), whether ObserveCore derives it (a chain or a dependent key), and, per root
/// class, the declared keys a chain can be made of.
///
/// Why a catalog. A registration names a key path; `\Person.address?.city` is announced by no
/// setter, so ObserveCore must see that it is `Person.address` followed by `Address.city`. Swift
/// cannot split a key path or compose one through an optional link through public API, so the
/// catalog works the other way round: every ``ObservableKey`` records itself here when it is
/// created (one line in its initialiser), with its key path's components as the runtime stores
/// them (`_KeyPathComponent`), and a chain is *recognised* by finding declared keys whose
/// components, joined by optional-chain components after optional links, are the registered key
/// path's — the same components key path equality compares, so the match is exact and does not
/// depend on how key paths print (which differs between debug and release builds).
/// `static let` keys are created lazily, so a key that has not been read yet is invisible here;
/// classes list their keys through ``ObservableKeyListing``, which the catalog reads once per
/// class before resolving anything rooted at or passing through it.
///
/// Classification is cached per key id in a lock-free byte table, so registering a declared key
/// costs one load here. A key path that is neither declared nor resolvable is `undetermined`
/// (it might be a key whose `static let` was not created yet); every new declaration turns
/// those back into `unknown`, so they are looked at again.
@usableFromInline
internal final class _KeyCatalog: @unchecked Sendable {
    @usableFromInline static let shared = _KeyCatalog()

    @usableFromInline
    enum Kind: UInt8 {
        /// Never classified.
        case unknown = 0
        /// Announced by a setter (a declared key).
        case plain = 1
        /// Announced by ObserveCore: a key path chain or a dependent key (see `plan(for:)`).
        case derived = 2
        /// Neither declared nor resolvable so far.
        case undetermined = 3
    }

    @usableFromInline static var _fastCount: Int { 1 << 13 }
    private static let _maximumChainLength = 16
    private static let _maximumCandidates = 20_000
    @usableFromInline let _fast: UnsafeMutablePointer<Atomic<UInt8>>
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _slowKinds: [UInt32: Kind] = [:]
    @exclusivity(unchecked) private var _hopsByRoot: [ObjectIdentifier: [_AnyHop]] = [:]
    @exclusivity(unchecked) private var _recorded: Set<UInt32> = []
    @exclusivity(unchecked) private var _listed: Set<ObjectIdentifier> = []
    @exclusivity(unchecked) private var _plans: [UInt32: _DerivedPlan] = [:]
    @exclusivity(unchecked) private var _undetermined: [UInt32] = []

    private init() {
        _fast = .allocate(capacity: Self._fastCount)
        for i in 0..<Self._fastCount { (_fast + i).initialize(to: Atomic<UInt8>(0)) }
    }

    // MARK: Kinds

    /// The kind of key `id`; one acquire load for ids below 8192.
    @inlinable @inline(__always)
    func kind(_ id: UInt32) -> Kind {
        if _fastPath(Int(id) < Self._fastCount) {
            return Kind(rawValue: _fast[Int(id)].load(ordering: .acquiring)).unsafelyUnwrapped
        }
        return _slowKind(id)
    }

    @usableFromInline @inline(never)
    func _slowKind(_ id: UInt32) -> Kind {
        _lock.withLock { _slowKinds[id] ?? .unknown }
    }

    /// Under the lock.
    private func _kindLocked(_ id: UInt32) -> Kind {
        if Int(id) < Self._fastCount { return Kind(rawValue: _fast[Int(id)].load(ordering: .relaxed))! }
        return _slowKinds[id] ?? .unknown
    }

    /// Under the lock.
    private func _setKindLocked(_ id: UInt32, _ kind: Kind) {
        if Int(id) < Self._fastCount {
            _fast[Int(id)].store(kind.rawValue, ordering: .releasing)
        } else {
            _slowKinds[id] = kind
        }
    }

    /// Under the lock: a new declaration may complete a chain that failed before.
    private func _forgetUndeterminedLocked() {
        for id in _undetermined where _kindLocked(id) == .undetermined { _setKindLocked(id, .unknown) }
        _undetermined.removeAll()
    }

    // MARK: Declarations

    /// Records a declared key (called when a key is declared, by `ObservableKey`'s
    /// `init(_declaring:leafAdapters:)`). Cheap when the key is known.
    func declare<Root: AnyObject, Value>(_ keyPath: KeyPath<Root, Value>, id: UInt32, leafAdapters: _LeafAdapters<Value>) {
        let current = kind(id)
        if current == .plain || current == .derived { return }
        let hop = Self._makeHop(keyPath, id: id, leafAdapters: leafAdapters)
        _lock.lock()
        defer { _lock.unlock() }
        if _recorded.insert(id).inserted, let hop {
            _hopsByRoot[ObjectIdentifier(Root.self), default: []].append(hop)
        }
        if _kindLocked(id) != .derived { _setKindLocked(id, .plain) }
        _forgetUndeterminedLocked()
    }

    /// Marks `id` as a dependent key with `plan` (called by ``ObservableKey/init(_:dependsOn:)``).
    func declareDerived(_ id: UInt32, plan: _DerivedPlan) {
        _lock.lock()
        defer { _lock.unlock() }
        _plans[id] = plan
        _setKindLocked(id, .derived)
        _forgetUndeterminedLocked()
    }

    func plan(for id: UInt32) -> _DerivedPlan? {
        _lock.withLock { _plans[id] }
    }

    private static func _makeHop<Root: AnyObject, Value>(_ keyPath: KeyPath<Root, Value>, id: UInt32,
                                                         leafAdapters: _LeafAdapters<Value>) -> _AnyHop? {
        guard let observable = Root.self as? any KeyValueObservable.Type else { return nil }
        func open<Object: KeyValueObservable>(_: Object.Type) -> _AnyHop {
            _TypedHop<Object, Value>(keyPath as! KeyPath<Object, Value>, keyID: id, leafAdapters: leafAdapters)
        }
        return open(observable)
    }

    /// Reads `type`'s ``ObservableKeyListing/observableKeys`` once, which creates (and so
    /// declares) every key it lists.
    func ensureListed(_ type: Any.Type) {
        guard let listing = type as? any ObservableKeyListing.Type else { return }
        let identity = ObjectIdentifier(type)
        if _lock.withLock({ _listed.contains(identity) }) { return }
        _ = listing.observableKeys          // outside the lock: creating a key declares it
        _lock.withLock { _ = _listed.insert(identity) }
    }

    private func _hops(rootedAt type: Any.Type) -> [_AnyHop] {
        _lock.withLock { _hopsByRoot[ObjectIdentifier(type)] ?? [] }
    }

    /// The declared keys a chain can take from an object of class `type`: its own, then its
    /// superclasses' (a link typed `Car` leads on through `Vehicle.speed`). Lists each class first.
    private func _hopsIncludingInherited(_ type: Any.Type) -> [_AnyHop] {
        ensureListed(type)
        var hops = _hops(rootedAt: type)
        guard let type = type as? AnyClass else { return hops }
        var ancestor: AnyClass? = _getSuperclass(type)
        while let next = ancestor {
            ensureListed(next)
            hops += _hops(rootedAt: next)
            ancestor = _getSuperclass(next)
        }
        return hops
    }

    // MARK: Classification

    /// Classifies a registered key path that is not known yet: a declared key (once its class's
    /// listing was read), a chain of declared keys (its plan is stored), or undetermined. A key
    /// path of several components that no chain spells stops with a precondition failure.
    func classify<Root: KeyValueObservable, Value>(_ keyPath: KeyPath<Root, Value>, id: UInt32) -> Kind {
        ensureListed(Root.self)
        let current = kind(id)
        if current != .unknown { return current }
        if let hops = _resolveChain(keyPath, id: id, root: Root.self, value: Value.self)
            ?? _resolveInherited(keyPath, id: id, root: Root.self, value: Value.self).map({ [$0] }) {
            let plan = _DerivedPlan { announcer, object in
                _ChainDriver<Root, Value>(announcer: unsafeDowncast(announcer, to: _DerivedAnnouncer<Root, Value>.self),
                                          object: object, hops: hops)
            }
            _lock.withLock {
                if _kindLocked(id) != .plain {
                    _plans[id] = plan
                    _setKindLocked(id, .derived)
                }
            }
            return kind(id)
        }
        if Self._componentCount(keyPath) >= 2 {
            // fatalError, not preconditionFailure: the message must survive -O builds.
            fatalError(Self._unresolvedMessage(keyPath, Root.self))
        }
        if let listing = Root.self as? any ObservableKeyListing.Type, listing.observableKeysAreComplete {
            fatalError(Self._undeclaredMessage(keyPath, Root.self))
        }
        return _lock.withLock {
            if _kindLocked(id) == .unknown {
                _setKindLocked(id, .undetermined)
                _undetermined.append(id)
            }
            return _kindLocked(id)
        }
    }

    /// The key an array tracking its elements' `keyPath` listens to: the key path's own key when
    /// the element type declares it, or the key a superclass declares for the same property
    /// (`\Car.speed` with `Vehicle.speed` declared): an element's setter announces only the key
    /// its class declares. A chain (`\Student.address?.city`) or a dependent key stops with a
    /// message: no element setter announces one, so tracking it would report nothing, ever.
    func elementKeyID(for keyPath: AnyKeyPath) -> UInt32 {
        let id = _KeyTable.shared.id(for: keyPath)
        let root = type(of: keyPath).rootType
        ensureListed(root)
        let current = kind(id)
        if current == .plain { return id }
        // Before the derived check: observing `\Car.speed` on one car made it a derived key (a
        // one-hop chain onto `Vehicle.speed`), and that is the key an element announces.
        if let rootClass = root as? AnyClass,
           let hop = _resolveInherited(keyPath, id: id, root: rootClass, value: type(of: keyPath).valueType) {
            // A superclass's dependent key is no more announced by a setter than the root's own.
            if kind(hop.keyID) == .derived { fatalError(Self._elementDerivedMessage(keyPath)) }
            return hop.keyID
        }
        if current == .derived || Self._componentCount(keyPath) >= 2 {
            fatalError(Self._elementDerivedMessage(keyPath))
        }
        // Not declared yet (its `static let` may not have run): tracked under its own id, which the
        // element's setter announces once the key exists. A property a superclass declares is
        // found only through that superclass's key listing (`ObservableKeyListing`, which
        // @KeyValueObservable writes) or once its key was created; without either, nothing
        // tells this key path apart from an undeclared one.
        return id
    }

    private static func _elementDerivedMessage(_ keyPath: AnyKeyPath) -> String {
        "ObserveCore: cannot track \(keyPath.debugDescription) as an element key path of "
            + "\(type(of: keyPath).rootType): element key paths must name "
            + "a property the element's class (or a superclass) declares an ObservableKey for. A key path chain or "
            + "a dependent key is announced only to observations of each object, never by the element's setter; "
            + "observe the element's own keys the chain or the dependent key is made of."
    }

    /// A search through sequences of declared keys, breadth first, whose components spell the
    /// target's: each link's components, then an optional-chain component after an optional
    /// link; the leaf's components; and a final optional wrap when the chain went through an
    /// optional link to a non-optional leaf (see `_KeyPathComponent`). Only sequences that
    /// match a prefix of the target are extended, so resolution is linear in the chain's length.
    private func _resolveChain(_ target: AnyKeyPath, id: UInt32, root: Any.Type, value: Any.Type) -> [_AnyHop]? {
        guard let goal = _KeyPathComponent.components(of: target), goal.count >= 2 else { return nil }
        var frontier: [_ChainSearchNode] = [_ChainSearchNode(hops: [], matched: 0, next: root)]
        var candidates = 0
        for _ in 0..<Self._maximumChainLength where !frontier.isEmpty {
            var nextFrontier: [_ChainSearchNode] = []
            for node in frontier {
                for hop in _hopsIncludingInherited(node.next) where hop.keyID != id {
                    candidates += 1
                    if candidates > Self._maximumCandidates { return nil }
                    guard let components = hop.components,
                          goal.count - node.matched >= components.count,
                          goal[node.matched..<node.matched + components.count].elementsEqual(components)
                    else { continue }
                    let matched = node.matched + components.count
                    let rest = goal[matched...]
                    let throughOptional = node.hops.contains { $0.linkIsOptional }
                    if !node.hops.isEmpty, hop.fits(chainValue: value),
                       rest.isEmpty || (throughOptional && rest.elementsEqual([.optionalWrap])) {
                        return node.hops + [hop]
                    }
                    guard let linkType = hop.linkType else { continue }
                    if hop.linkIsOptional {
                        guard rest.first == .optionalChain else { continue }
                        nextFrontier.append(_ChainSearchNode(hops: node.hops + [hop], matched: matched + 1, next: linkType))
                    } else {
                        nextFrontier.append(_ChainSearchNode(hops: node.hops + [hop], matched: matched, next: linkType))
                    }
                }
            }
            frontier = nextFrontier
        }
        return nil
    }

    /// A subclass's key path for a property a superclass declares (`\Student.name`, `Person.name`
    /// declared): the nearest superclass's declared key whose components are the target's (the
    /// same getter or stored offset, whichever class roots the key path). The key path becomes a
    /// one-hop chain: its driver registers the superclass's key on the object and announces the
    /// changes under the subclass's key path.
    private func _resolveInherited(_ target: AnyKeyPath, id: UInt32, root: AnyClass, value: Any.Type) -> _AnyHop? {
        guard let goal = _KeyPathComponent.components(of: target), !goal.isEmpty else { return nil }
        // The root's own keys come first and never match: same components, same key path, same id.
        return _hopsIncludingInherited(root).first { hop in
            hop.keyID != id && hop.fits(chainValue: value) && hop.components == goal
        }
    }

    /// How many property components `keyPath` has (optional chaining aside); 1 when unreadable.
    private static func _componentCount(_ keyPath: AnyKeyPath) -> Int {
        guard let components = _KeyPathComponent.components(of: keyPath) else { return 1 }
        return components.filter {
            switch $0 {
            case .optionalChain, .optionalWrap, .optionalForce: return false
            default: return true
            }
        }.count
    }

    /// For a class whose listing is complete (`@KeyValueObservable`): the key path names no key.
    private static func _undeclaredMessage(_ keyPath: AnyKeyPath, _ root: Any.Type) -> String {
        "ObserveCore: cannot observe \(keyPath) on \(root): \(root) declares no ObservableKey for it, so no change "
            + "of it would ever be reported. Observe a stored 'var' that is not marked @KeyValueIgnored; for a "
            + "computed property declare a dependent key beside it (static let x = ObservableKey(\\\(root).x, "
            + "dependsOn: ...)); a property a superclass declares is found through the superclass's listing "
            + "(conform it to ObservableKeyListing, as @KeyValueObservable does)."
    }

    private static func _unresolvedMessage(_ keyPath: AnyKeyPath, _ root: Any.Type) -> String {
        "ObserveCore: cannot observe \(keyPath.debugDescription): it is not a declared ObservableKey of \(root), and "
            + "no chain of declared keys spells it. In a key path chain every link must be a KeyValueObservable "
            + "object (or an optional one) and every property along it must have an ObservableKey, rooted at "
            + "the class that declares the property; the keys must exist before the chain is first observed: "
            + "conform \(root) and every class the chain passes through to ObservableKeyListing and list their "
            + "keys in `observableKeys`. Force-unwrapped links (`!.`) are not supported: write `?.`."
    }
}

/// A sequence of declared keys whose components spell the first `matched` components of a
/// registered chain (see `_resolveChain`); `next` is the class the last link leads to.
private struct _ChainSearchNode {
    var hops: [_AnyHop]
    var matched: Int
    var next: Any.Type
}

/// How to make the driver of one derived key (a chain or a dependent key) for one object.
internal final class _DerivedPlan: @unchecked Sendable {
    /// Takes the key's `_DerivedAnnouncer<Root, Value>` and the object.
    let makeDriver: (_ announcer: AnyObject, _ object: AnyObject) -> _DerivedDriver
    init(_ makeDriver: @escaping (AnyObject, AnyObject) -> _DerivedDriver) { self.makeDriver = makeDriver }
}
