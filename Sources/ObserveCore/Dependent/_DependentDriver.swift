/// Announces a dependent key (``ObservableKey/init(_:dependsOn:)``) on one object.
///
/// The driver registers for each dependency on the object (no observer: the registrations are on
/// the object and go with it; values are not requested, so nothing is boxed) and keeps the dependent
/// value last announced. When a dependency changes it reads the dependent property again,
/// swaps it with the kept value under its lock, and announces (kept, new) through the object's
/// registrar. The kept value makes the announced changes a consistent sequence (each change's
/// `oldValue` is the previous change's `newValue`) even when several threads set dependencies,
/// and needs no `willSet` from the dependencies' setters; with `.prior`, the prior notification
/// carries the kept value.
internal final class _DependentDriver<Root: KeyValueObservable, Value>: _DerivedDriver, @unchecked Sendable {
    private let _announcer: _DerivedAnnouncer<Root, Value>
    private let _dependencies: [PartialKeyPath<Root>]
    // Guarded by `lock`.
    @exclusivity(unchecked) private var _registrations: [_AnyRegistration] = []
    @exclusivity(unchecked) private var _cached: Value?
    @exclusivity(unchecked) private var _generation = 0

    init(announcer: _DerivedAnnouncer<Root, Value>, dependencies: [PartialKeyPath<Root>]) {
        _announcer = announcer
        _dependencies = dependencies
    }

    override func _wireLocked(_ root: AnyObject) -> [_AnyRegistration] {
        _generation += 1
        let generation = _generation
        let stale = _registrations
        _registrations = []
        let typedRoot = unsafeDowncast(root, to: Root.self)
        _cached = _announcer.read(typedRoot)
        for dependency in _dependencies {
            guard let opener = dependency as? any _ErasedKeyPath else {
                _misuse("ObserveCore: \(dependency), a dependency of a key of \(Root.self), is not a readable key path")
            }
            // No observer: these registrations are on the root itself, so they go with it
            // (`removeObject`), and naming it as a weak observer would send every retain and
            // release of the root through its side table (and a weak load per delivery).
            let registration = opener._registerErased(
                on: typedRoot, observer: nil, context: context, options: wantsPrior ? [.prior] : [], delivery: .inline
            ) { [self] object, _, _, change in
                _dependencyDidChange(generation: generation, root: object, isPrior: change.isPrior)
            }
            if let registration { _registrations.append(registration) }
        }
        return stale
    }

    override func _unwireLocked() -> [_AnyRegistration] {
        _generation += 1
        let stale = _registrations
        _registrations = []
        _cached = nil
        return stale
    }

    private func _dependencyDidChange(generation: Int, root: Root, isPrior: Bool) {
        if isPrior {
            let kept: Value? = lock.withLock {
                guard !isDetached && generation == _generation else { return nil }
                return _cached
            }
            if let kept { _announcer.willSet(root, kept) }
            return
        }
        let newValue = _announcer.read(root)               // the getter runs outside the lock
        lock.lock()
        guard !isDetached && generation == _generation, let oldValue = _cached else {
            lock.unlock()
            return
        }
        _cached = newValue
        lock.unlock()
        _announcer.didSet(root, oldValue, newValue)
    }
}
