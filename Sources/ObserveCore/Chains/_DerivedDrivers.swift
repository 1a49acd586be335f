import Synchronization

/// Derived keys — key path chains and dependent keys — are announced by ObserveCore itself.
///
/// A registration for a derived key is an ordinary registration on the root object (so tokens,
/// observer-tagged removal, options, queue delivery and introspection all work unchanged). What
/// is added is one *driver* per (object, derived key) while the key has registrations on the
/// object: it registers for the keys the derived value comes from and, when one of them
/// changes, announces the derived key through the object's registrar (`willSet`/`didSet`), as a
/// setter would.
///
/// Lifetimes:
/// - the driver is made by the first registration of its key on the object (`attach`, called
///   from `_register`), and detached when the key's last registration on the object goes (the
///   registry calls `_registrationsDidEmpty` after removing) or when the object dies (the
///   registry calls `_objectDidDie`);
/// - a driver's own registrations are token registrations (no observer): a dependent key's are
///   on the root itself and go with it; a chain's are on the objects along the chain and go when
///   the root's death detaches the driver (`objectDidDie`). Meanwhile a change reaching a chain
///   driver loads the root through its unowned reference, which answers nil once the root began
///   to die, and is dropped.
///
/// Lock order: this table's lock, then a shard lock (the table asks the registry whether a key
/// still has registrations). Drivers are installed and detached outside the table's lock, since
/// doing so registers and removes (which may re-enter the table for a derived key of a derived
/// key). A driver's own lock may be held while it registers, never while it removes.
internal final class _DerivedDrivers: @unchecked Sendable {
    static let shared = _DerivedDrivers()

    private let _lock = _Lock()
    @exclusivity(unchecked) private var _byObject: [UInt: [_DerivedDriver]] = [:]
    /// Drivers in the table; the registry's hooks return at once while it is zero.
    let liveCount = Atomic<Int>(0)

    /// Makes sure the object has a driver for `keyID` (a new registration of that derived key was
    /// just added), and that it delivers prior notifications if the registration wants them.
    func attach(_ object: AnyObject, keyID: UInt32, registry: _Registry, plan: _DerivedPlan,
                options: ObservationOptions, makeAnnouncer: () -> AnyObject) {
        let address = UInt(bitPattern: ObjectIdentifier(object))
        var stale: [_DerivedDriver] = []
        _lock.lock()
        var drivers = _byObject[address] ?? []
        // Drivers of another object at this address: cannot happen while a driver's unowned
        // reference keeps its dead object's memory (a missed `objectDidDie` would leave that
        // driver, and the memory, here for good); kept as a guard for Darwin, where the
        // reference is weak. Compared by address, with no load: a load's release could be the
        // object's last and run its deinit, which takes `_lock`, under `_lock`.
        drivers.removeAll { driver in
            guard !driver.object.refers(to: object) else { return false }
            stale.append(driver)
            return true
        }
        if let existing = drivers.first(where: { $0.keyID == keyID }) {
            _byObject[address] = drivers
            liveCount.subtract(stale.count, ordering: .relaxed)
            _lock.unlock()
            for driver in stale { driver.detach() }
            existing.noteRegistration(on: object, options: options)
            return
        }
        let driver = plan.makeDriver(makeAnnouncer(), object)
        driver.keyID = keyID
        driver.registry = registry
        drivers.append(driver)
        _byObject[address] = drivers
        liveCount.add(1 - stale.count, ordering: .relaxed)
        _lock.unlock()
        for driver in stale { driver.detach() }
        driver.install(on: object, prior: options.contains(.prior))
    }

    /// Detaches the object's drivers (of `keyID`, or all when nil) whose key has no registration
    /// left on the object.
    func reconcile(object address: UInt, keyID: UInt32?) {
        var detached: [_DerivedDriver] = []
        _lock.lock()
        if let drivers = _byObject[address] {
            var kept: [_DerivedDriver] = []
            for driver in drivers {
                let concerned = keyID == nil || driver.keyID == keyID
                if concerned && (driver.object.isDead
                                 || driver.registry.registrations(object: address, keyID: driver.keyID).isEmpty) {
                    detached.append(driver)
                } else {
                    kept.append(driver)
                }
            }
            _byObject[address] = kept.isEmpty ? nil : kept
            liveCount.subtract(detached.count, ordering: .relaxed)
        }
        _lock.unlock()
        for driver in detached { driver.detach() }
    }

    /// Detaches every driver of an object that is being deinitialised.
    func objectDidDie(_ address: UInt) {
        let drivers = _lock.withLock { _byObject.removeValue(forKey: address) } ?? []
        if drivers.isEmpty { return }
        liveCount.subtract(drivers.count, ordering: .relaxed)
        for driver in drivers { driver.detach() }
    }

    /// The drivers currently attached to `object` (for tests and debugging).
    func drivers(of object: AnyObject) -> [_DerivedDriver] {
        _lock.withLock { _byObject[UInt(bitPattern: ObjectIdentifier(object))] ?? [] }
    }
}

/// The driver of one derived key on one object; subclasses wire the sources.
///
/// `lock` guards the wiring. Subclasses implement `_wireLocked` (register everything for the
/// object, replacing what was there) and `_unwireLocked` (forget everything); both return the
/// registrations to remove, which the base removes after unlocking.
internal class _DerivedDriver: @unchecked Sendable {
    /// Shared with state the subclass keeps outside itself (`_DependentCell`).
    let lock: _Lock
    /// The object whose derived key this drives (a `let`: a chain driver loads it on every change,
    /// and a copy of an optional `var` took and dropped an unowned reference each time, about 200
    /// instructions, callgrind).
    /// Not `weak`: that put the user's object on a side table, and every retain and release of
    /// it, anywhere in the program, on the runtime's slow path (`_UnownedReference`). Holding its
    /// memory costs nothing lasting: a dying object's drivers are detached and dropped by its
    /// deinit (`objectDidDie`). Neither kind of driver names its object weakly anywhere, so off
    /// Darwin (where `_UnownedReference` is not `weak`) the object keeps no side table on their
    /// account.
    let object: _UnownedReference<AnyObject>
    /// Set once by `attach`, before the driver is shared.
    @exclusivity(unchecked) var keyID: UInt32 = 0
    @exclusivity(unchecked) var registry: _Registry!
    @exclusivity(unchecked) var isDetached = false
    /// Whether the sources are registered with `.prior` (some registration of the key asked for it).
    @exclusivity(unchecked) var wantsPrior = false

    init(object: AnyObject, lock: _Lock = _Lock()) {
        self.object = _UnownedReference(object)
        self.lock = lock
    }

    func _wireLocked(_ root: AnyObject) -> [_AnyRegistration] { fatalError("abstract") }
    func _unwireLocked() -> [_AnyRegistration] { fatalError("abstract") }

    final func install(on root: AnyObject, prior: Bool) {
        lock.lock()
        if isDetached {
            lock.unlock()
            return
        }
        wantsPrior = prior
        let stale = _wireLocked(root)
        lock.unlock()
        _remove(stale)
    }

    /// A further registration of the key: re-wires with `.prior` if it is the first to want it.
    final func noteRegistration(on root: AnyObject, options: ObservationOptions) {
        guard options.contains(.prior) else { return }
        lock.lock()
        if isDetached || wantsPrior {
            lock.unlock()
            return
        }
        wantsPrior = true
        let stale = _wireLocked(root)
        lock.unlock()
        _remove(stale)
    }

    final func detach() {
        lock.lock()
        if isDetached {
            lock.unlock()
            return
        }
        isDetached = true
        let stale = _unwireLocked()
        lock.unlock()
        _remove(stale)
    }

    final func _remove(_ registrations: [_AnyRegistration]) {
        for registration in registrations { registration.removeFromRegistry() }
    }
}
