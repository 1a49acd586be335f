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
/// the class is declared calls the getter. The kept value and the generation live in a
/// `_DependentCell`, which the announcer's `dependencyDidChange` step (specialised for `Root` and
/// `Value`) reads and swaps on each change; this class, generic code no caller specializes, only
/// wires and unwires.
internal final class _DependentDriver<Root: KeyValueObservable, Value>: _DerivedDriver, @unchecked Sendable {
    private let _announcer: _DerivedAnnouncer<Root, Value>
    private let _cell: _DependentCell<Root, Value>
    private let _dependencies: [PartialKeyPath<Root>]
    // Guarded by `lock`.
    @exclusivity(unchecked) private var _registrations: [_AnyRegistration] = []

    init(announcer: _DerivedAnnouncer<Root, Value>, object: AnyObject, read: ((Root) -> Value)?,
         dependencies: [PartialKeyPath<Root>]) {
        _announcer = announcer
        _dependencies = dependencies
        let lock = _Lock()
        _cell = _DependentCell(lock: lock, read: read ?? announcer.read)
        super.init(object: object, lock: lock)
    }

    override func _wireLocked(_ root: AnyObject) -> [_AnyRegistration] {
        let generation = _cell.rewireLocked(keeping: unsafeDowncast(root, to: Root.self))
        let stale = _registrations
        _registrations = []
        let typedRoot = unsafeDowncast(root, to: Root.self)
        for dependency in _dependencies {
            guard let opener = dependency as? any _ErasedKeyPath else {
                _misuse("ObserveCore: \(dependency), a dependency of a key of \(Root.self), is not a readable key path")
            }
            // No observer: these registrations are on the root itself, so they go with it
            // (`removeObject`), and naming it as a weak observer would send every retain and
            // release of the root through its side table (and a weak load per delivery).
            let registration = opener._registerSignal(on: typedRoot, options: wantsPrior ? [.prior] : []) {
                [self] object, isPrior in
                if isPrior {
                    _dependencyWillChange(generation: generation, root: object)
                } else {
                    _announcer.dependencyChanged(_cell, object, generation: generation)
                }
            }
            if let registration { _registrations.append(registration) }
        }
        return stale
    }

    override func _unwireLocked() -> [_AnyRegistration] {
        _cell.forgetLocked()
        let stale = _registrations
        _registrations = []
        return stale
    }

    /// `.prior`: announces the kept value as the one about to change.
    private func _dependencyWillChange(generation: Int, root: Root) {
        let kept: Value? = lock.withLock { _cell.kept(generation: generation) }
        if let kept { _announcer.announceWillSet(root, kept) }
    }
}

/// What a dependent key's driver keeps between changes: the value last announced and the
/// generation of the wiring, both guarded by the driver's lock.
///
/// Invariants (under `lock`): `_kept` is nil exactly while the driver is not wired (before its
/// first wiring, and after it was unwired or detached); every wiring and unwiring bumps
/// `_generation`, so a notification from a registration of an earlier wiring (a change racing
/// with a re-wiring) finds another generation and is dropped.
///
/// `replace` is inlinable so that it runs specialised inside the announcer's
/// `dependencyDidChange` step; `kept` serves prior notifications, the rest wiring and unwiring.
@usableFromInline
internal final class _DependentCell<Root, Value>: @unchecked Sendable {
    @usableFromInline let _lock: _Lock
    /// Reads the dependent property (the key's `read` closure, or the key path's read).
    @usableFromInline let _read: (Root) -> Value
    @usableFromInline @exclusivity(unchecked) var _generation = 0
    @usableFromInline @exclusivity(unchecked) var _kept: Value?

    init(lock: _Lock, read: @escaping (Root) -> Value) {
        _lock = lock
        _read = read
    }

    /// For a change announced by a registration of wiring `generation`: reads the new value
    /// (outside the lock: the getter may do anything), keeps it, and returns it with the value
    /// it replaced; nil when that wiring is gone.
    @inlinable
    func replace(on root: Root, generation: Int) -> (oldValue: Value, newValue: Value)? {
        let newValue = _read(root)
        _lock.lock()
        guard generation == _generation, let oldValue = _kept else {
            _lock.unlock()
            return nil
        }
        _kept = newValue
        _lock.unlock()
        return (oldValue, newValue)
    }

    /// The kept value if wiring `generation` is current (lock held).
    func kept(generation: Int) -> Value? {
        generation == _generation ? _kept : nil
    }

    /// Starts a new wiring: keeps `root`'s current value and returns the new generation (lock held).
    func rewireLocked(keeping root: Root) -> Int {
        _generation += 1
        _kept = _read(root)
        return _generation
    }

    /// Ends the wiring: forgets the kept value (lock held).
    func forgetLocked() {
        _generation += 1
        _kept = nil
    }
}
