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
///
/// The property is read through the key's `read` closure when its declaration gave one
/// (`@KeyValueDependent` does), else through the announcer's key path read: a key path captured by
/// a closure is applied at run time (`KeyPath._projectReadOnly`, about 900 of ~2,300 instructions
/// per change, callgrind), however specialized the closure, while `{ $0.fullName }` written where
/// the class is declared calls the getter. The kept value lives in a one-element allocation
/// typed by `Value`, not in a `Value?`: this class is generic code no caller specializes, and an
/// optional of the generic value looked up its metadata on every change.
internal final class _DependentDriver<Root: KeyValueObservable, Value>: _DerivedDriver, @unchecked Sendable {
    private let _announcer: _DerivedAnnouncer<Root, Value>
    private let _read: (Root) -> Value
    private let _dependencies: [PartialKeyPath<Root>]
    // Guarded by `lock`.
    @exclusivity(unchecked) private var _registrations: [_AnyRegistration] = []
    /// The value last announced, initialized while `_hasCached` (wired).
    private let _cached = UnsafeMutablePointer<Value>.allocate(capacity: 1)
    @exclusivity(unchecked) private var _hasCached = false
    @exclusivity(unchecked) private var _generation = 0

    init(announcer: _DerivedAnnouncer<Root, Value>, read: ((Root) -> Value)?, dependencies: [PartialKeyPath<Root>]) {
        _announcer = announcer
        _read = read ?? announcer.read
        _dependencies = dependencies
    }

    deinit {
        _forgetLocked()
        _cached.deallocate()
    }

    /// Replaces the kept value (lock held).
    private func _keepLocked(_ value: Value) {
        if _hasCached { _cached.pointee = value } else { _cached.initialize(to: value) }
        _hasCached = true
    }

    /// Drops the kept value, if any (lock held, or the driver is being freed).
    private func _forgetLocked() {
        if _hasCached {
            _hasCached = false
            _cached.deinitialize(count: 1)
        }
    }

    override func _wireLocked(_ root: AnyObject) -> [_AnyRegistration] {
        _generation += 1
        let generation = _generation
        let stale = _registrations
        _registrations = []
        let typedRoot = unsafeDowncast(root, to: Root.self)
        _keepLocked(_read(typedRoot))
        for dependency in _dependencies {
            guard let opener = dependency as? any _ErasedKeyPath else {
                _misuse("ObserveCore: \(dependency), a dependency of a key of \(Root.self), is not a readable key path")
            }
            // No observer: these registrations are on the root itself, so they go with it
            // (`removeObject`), and naming it as a weak observer would send every retain and
            // release of the root through its side table (and a weak load per delivery).
            let registration = opener._registerSignal(on: typedRoot, options: wantsPrior ? [.prior] : []) {
                [self] object, isPrior in
                _dependencyDidChange(generation: generation, root: object, isPrior: isPrior)
            }
            if let registration { _registrations.append(registration) }
        }
        return stale
    }

    override func _unwireLocked() -> [_AnyRegistration] {
        _generation += 1
        let stale = _registrations
        _registrations = []
        _forgetLocked()
        return stale
    }

    private func _dependencyDidChange(generation: Int, root: Root, isPrior: Bool) {
        if isPrior {
            _dependencyWillChange(generation: generation, root: root)
            return
        }
        let newValue = _read(root)               // the getter runs outside the lock
        lock.lock()
        guard !isDetached && generation == _generation && _hasCached else {
            lock.unlock()
            return
        }
        let oldValue = _cached.move()
        _cached.initialize(to: newValue)
        lock.unlock()
        _announcer.announceDidSet(root, oldValue, newValue)
    }

    /// `.prior`: announces the kept value as the one about to change.
    private func _dependencyWillChange(generation: Int, root: Root) {
        let kept: Value? = lock.withLock {
            guard !isDetached && generation == _generation && _hasCached else { return nil }
            return _cached.pointee
        }
        if let kept { _announcer.announceWillSet(root, kept) }
    }
}
