import Synchronization

/// The per-object state that makes an object observable: a few bits that tell a setter whether
/// anyone listens, and the hook that removes the object's registrations when it dies.
///
/// Every ``KeyValueObservable`` class stores one, as a `let`, and announces its changes through
/// ``willSet(_:of:from:)`` and ``didSet(_:of:from:to:)``:
///
/// ```swift
/// final class Person: KeyValueObservable {
///     let kvoRegistrar = KeyValueRegistrar()
///
///     static let age = ObservableKey(\Person.age)
///     var age = 0 {
///         willSet { kvoRegistrar.willSet(Person.age, of: self, from: age) }
///         didSet { kvoRegistrar.didSet(Person.age, of: self, from: oldValue, to: age) }
///     }
/// }
/// ```
///
/// A set that nobody observes costs one relaxed atomic load and a branch: no lock, no call into
/// the registry, no allocation, no key path.
///
/// - Warning: A registrar serves exactly one object, the one that stores it. Do not share it,
///   store it elsewhere, or hand it to another object: registrations die when the registrar does.
public final class KeyValueRegistrar: @unchecked Sendable {
    /// Bit `1 << (key id & 31)` (`_KeyTable.bit(for:)`; the high half is `_membership`'s) is set while some registration on this object may need a
    /// `didSet` notification for a key with that bit (false positives only cost a lookup).
    @usableFromInline internal let _observedMask = Atomic<UInt64>(0)
    /// The same for registrations that asked for `.prior` (checked by `willSet`).
    @usableFromInline internal let _priorMask = Atomic<UInt64>(0)
    /// Membership of this object in arrays observed with element key paths: the low 32 bits
    /// count (array, occurrence) memberships, the high 32 bits are the member bits of those
    /// arrays' element keys. Updated with compare-and-swap so that the count reaching zero and
    /// the bits being cleared happen together.
    @usableFromInline internal let _membership = Atomic<UInt64>(0)
    /// The registry this object's registrations live in.
    @usableFromInline internal let _registry: _Registry
    /// The address of the object this registrar serves, 0 until the first registration.
    private let _objectAddress = Atomic<UInt>(0)
    /// The object's dispatch cache (`Unmanaged<_DispatchCache>` bits, 0 = none); see
    /// `Concurrency/_ReadSections.swift` for the publication and reclamation protocol.
    @usableFromInline internal let _cacheWord = Atomic<UInt>(0)
    /// Registrations in which this registrar's object is the *observer*; cancelled on deinit.
    /// Inline, not a `_Lock` object: that was a second allocation for every observable object.
    private let _asObserverLock = _LockWord()
    /// The object's (object, key) groups with live registrations, kept by its registry shard
    /// under the shard's lock (`_Shard.add`, `removeFromGroup`, `removeObject`). When a removal empties
    /// the last one, the masks are cleared without asking the table for the object's other
    /// entries (a quarter of an observe-and-cancel, callgrind). In the lock word's padding.
    @exclusivity(unchecked) internal var _groupCount: UInt32 = 0
    @exclusivity(unchecked) private var _asObserver: [_AnyRegistration] = []
    @exclusivity(unchecked) private var _asObserverPruneAt = 8

    /// Creates a registrar.
    ///
    /// ```swift
    /// let kvoRegistrar = KeyValueRegistrar()
    /// ```
    public convenience init() {
        self.init(backend: ObservationRuntime.defaultBackend)
    }

    /// Creates a registrar whose registrations live in the given backend's registry (the
    /// benchmark and the tests use this to run both side by side).
    @_spi(Testing)
    public init(backend: ObservationBackend) {
        _registry = _Registry.shared(backend)
    }

    /// The backend this registrar's registrations live in.
    @_spi(Testing)
    public var backend: ObservationBackend { _registry.backend }

    deinit {
        // Registrations first: once they are cancelled under the shard lock, no removal on
        // another thread touches this registrar's caches, which can then be released.
        let object = _objectAddress.load(ordering: .acquiring)
        if object != 0 { _registry.removeObject(object) }
        _releaseCaches()
        _asObserverLock.lock()
        let observing = _asObserver
        _asObserver = []
        _asObserverLock.unlock()
        for registration in observing { registration.removeFromRegistry() }
    }

    // MARK: Announcing changes (the setter path)

    /// Announces that the property of `key` on `object` is about to change from `oldValue`.
    /// Call it from the property's `willSet`; it notifies observers that asked for `.prior`.
    ///
    /// `key` is an autoclosure so that an object nobody observes never even reads it: a
    /// `static let` costs a `swift_once` call per access on Linux, more than the whole check.
    @inlinable
    public func willSet<Root: KeyValueObservable, Value>(_ key: @autoclosure () -> ObservableKey<Root, Value>,
                                                         of object: Root, from oldValue: Value) {
        let mask = _priorMask.load(ordering: .relaxed)
        if _fastPath(mask == 0) { return }
        _willSetObserved(mask, key, object, oldValue)
    }

    /// The rest of `willSet`, out of line (see `_didSetObserved`).
    @inlinable @inline(never)
    internal func _willSetObserved<Root: KeyValueObservable, Value>(_ mask: UInt64, _ key: () -> ObservableKey<Root, Value>,
                                                                    _ object: Root, _ oldValue: Value) {
        let key = key()
        if mask & key._bit == 0 { return }
        _notifyPrior(key, object, oldValue)
    }

    /// Announces that the property of `key` on `object` changed from `oldValue` to `newValue`.
    /// Call it from the property's `didSet`; it notifies every observer of the property.
    @inlinable
    public func didSet<Root: KeyValueObservable, Value>(_ key: @autoclosure () -> ObservableKey<Root, Value>,
                                                        of object: Root, from oldValue: Value, to newValue: Value) {
        let mask = _observedMask.load(ordering: .relaxed)
            | (_membership.load(ordering: .relaxed) & 0xFFFF_FFFF_0000_0000)
        if _fastPath(mask == 0) { return }
        _didSetObserved(mask, key, object, oldValue, newValue)
    }

    /// Everything after the fast check, out of line — including reading the key, whose
    /// `swift_once` call would otherwise make the setter save registers on every set, observed
    /// or not (measured: the unobserved set went from 1.0× to 2× a plain set).
    @inlinable @inline(never)
    internal func _didSetObserved<Root: KeyValueObservable, Value>(_ mask: UInt64, _ key: () -> ObservableKey<Root, Value>,
                                                                   _ object: Root, _ oldValue: Value, _ newValue: Value) {
        let key = key()
        if mask & key._memberBit != 0 {
            _notifyArrays(key._id, object) { cell, wantsOld, wantsNew in
                _ElementValues<Value>.store(wantsOld ? oldValue : nil, wantsNew ? newValue : nil, in: &cell)
            }
        }
        if mask & key._bit != 0 {
            _notify(key, object, oldValue, newValue)
        }
    }

    /// Tells the observed arrays holding `object` that its property `keyID` changed. `values`
    /// stores the old and new values, typed, only for an observer that asked for them (`.old`, `.new`).
    @usableFromInline @inline(never)
    internal func _notifyArrays(_ keyID: UInt32, _ object: AnyObject, _ values: _ElementValueStore) {
        Unmanaged.passUnretained(_registry.elementTrackers)._withUnsafeGuaranteedRef {
            $0.elementDidChange(keyID: keyID, element: object, values: values)
        }
    }

    /// Counts one more membership in a tracked array whose element keys have `memberBits`.
    internal func _enterArray(memberBits: UInt64) {
        var word = _membership.load(ordering: .relaxed)
        while true {
            _require(word & 0xFFFF_FFFF != 0xFFFF_FFFF, "ObserveCore: an object is in 2^32 tracked arrays")
            let (exchanged, current) = _membership.compareExchange(
                expected: word, desired: (word | memberBits) &+ 1, ordering: .relaxed)
            if exchanged { return }
            word = current
        }
    }

    /// Adds member bits without changing the count (a tracked array gained an element key).
    internal func _addMemberBits(_ memberBits: UInt64) {
        _membership.bitwiseOr(memberBits, ordering: .relaxed)
    }

    /// Counts one membership less; the member bits go with the last one.
    internal func _leaveArray() {
        var word = _membership.load(ordering: .relaxed)
        while true {
            let count = word & 0xFFFF_FFFF
            _require(count > 0, "ObserveCore: array membership count underflow")
            let desired: UInt64 = count == 1 ? 0 : word &- 1
            let (exchanged, current) = _membership.compareExchange(expected: word, desired: desired, ordering: .relaxed)
            if exchanged { return }
            word = current
        }
    }

    @inlinable
    internal func _notify<Root: KeyValueObservable, Value>(_ key: ObservableKey<Root, Value>, _ object: Root,
                                                           _ oldValue: Value, _ newValue: Value) {
        // Inside the delivery's read section the cache, and so every registration in it, stays
        // alive: registrations are used unretained.
        guard let (registrations, range, uniform) = _openDelivery(object: UInt(bitPattern: ObjectIdentifier(object)),
                                                                  keyID: key._id)
        else { return }
        defer { _closeDelivery() }
        // One load decides for silencing and transactions alike; passed down to each delivery.
        let scopesOpen = _slowPath(_registry.openScopes.load(ordering: .relaxed) != 0)
        if scopesOpen,
           _holdInTransaction(registrations, range, as: _PropertyRegistration<Root, Value>.self, object, oldValue, newValue) {
            return
        }
        if _fastPath(uniform != 0 && !scopesOpen) {
            // Every registration is an inline token registration asking for the same values
            // (`_DispatchCache.uniform`): one change, and each handler called directly — what
            // `_deliver` does for such a registration, without its per-registration checks.
            let change = ObservedChange(oldValue: uniform & ObservationOptions.old.rawValue != 0 ? oldValue : nil,
                                        newValue: uniform & ObservationOptions.new.rawValue != 0 ? newValue : nil)
            for index in range {
                registrations[index]._withUnsafeGuaranteedRef { entry in
                    let registration = unsafeDowncast(entry, to: _TokenRegistration<Root, Value>.self)
                    if !registration.isCancelled { registration._handler(object, change) }
                }
            }
            return
        }
        var equality: Bool? = nil
        // One change value, rebuilt only when a registration asks for other values than the one
        // before it (most observers of a key ask for the same): building it per handler was a
        // quarter of each handler's share of the loop (callgrind, set with 10 observers).
        var change = ObservedChange<Value>(oldValue: nil, newValue: nil)
        var changeHolds = ObservationOptions()
        for index in range {
            registrations[index]._withUnsafeGuaranteedRef { entry in
                let registration = unsafeDowncast(entry, to: _PropertyRegistration<Root, Value>.self)
                let options = registration.options
                if options.contains(.skipEqualValues) {
                    if equality == nil { equality = _valuesEqual(oldValue, newValue) }
                    if equality == true { return }
                }
                let wanted = options.intersection([.old, .new])
                if wanted != changeHolds {
                    change = ObservedChange(oldValue: wanted.contains(.old) ? oldValue : nil,
                                            newValue: wanted.contains(.new) ? newValue : nil)
                    changeHolds = wanted
                }
                registration._deliver(object, change, scopesOpen: scopesOpen)
            }
        }
    }

    @inlinable @inline(never)
    internal func _notifyPrior<Root: KeyValueObservable, Value>(_ key: ObservableKey<Root, Value>, _ object: Root,
                                                                _ oldValue: Value) {
        guard let (registrations, range, _) = _openDelivery(object: UInt(bitPattern: ObjectIdentifier(object)), keyID: key._id)
        else { return }
        defer { _closeDelivery() }
        let scopesOpen = _registry.openScopes.load(ordering: .relaxed) != 0
        for index in range {
            registrations[index]._withUnsafeGuaranteedRef { entry in
                guard entry.options.contains(.prior) else { return }
                // In a transaction, only before the first change the registration is held back for.
                if _slowPath(scopesOpen) && _transactionHolds(entry) { return }
                let registration = unsafeDowncast(entry, to: _PropertyRegistration<Root, Value>.self)
                registration._deliver(object, ObservedChange(
                    oldValue: registration.options.contains(.old) ? oldValue : nil,
                    newValue: nil, isPrior: true))
            }
        }
    }

    /// Raises the thread's notification depth; false (after reporting) when the limit is hit.
    @usableFromInline
    internal func _enterDelivery(keyID: UInt32) -> Bool {
        let depth = _ThreadDepth.enter()
        if _fastPath(depth <= ObservationRuntime._maximumDepth.load(ordering: .relaxed)) { return true }
        _ThreadDepth.leave()
        _reportRunawayRecursion(keyID: keyID, depth: depth)
        return false
    }

    /// Reports a notification dropped at `depth`, beyond the limit.
    @inline(never)
    internal func _reportRunawayRecursion(keyID: UInt32, depth: UInt32) {
        let limit = ObservationRuntime._maximumDepth.load(ordering: .relaxed)
        let name = _KeyTable.shared.displayName(for: keyID)
        ObservationRuntime._reportRunawayRecursion(
            "ObserveCore: runaway recursion: a change of \(name) was announced \(depth) notifications deep "
            + "(limit \(limit); a queued delivery counts as one level deeper than the change that queued it). "
            + "An observer keeps re-triggering the change it observes; the notification at this depth was dropped.")
    }

    // MARK: Registration plumbing

    /// Binds the registrar to the object it serves (on first registration) and checks it is
    /// not being used for another object.
    internal func _bind(to object: AnyObject) -> UInt {
        let address = UInt(bitPattern: ObjectIdentifier(object))
        if _objectAddress.load(ordering: .relaxed) == address { return address }
        let (exchanged, original) = _objectAddress.compareExchange(expected: 0, desired: address, ordering: .acquiringAndReleasing)
        _require(exchanged || original == address,
                 "ObserveCore: this KeyValueRegistrar already serves another object; every observable object "
                 + "needs its own registrar (`let kvoRegistrar = KeyValueRegistrar()`), never a shared one")
        return address
    }

    /// Adds `registration` to the registry and, when its observer is itself observable, to the
    /// observer's list so that it dies with the observer. False for a duplicate.
    @usableFromInline
    internal func _add(_ registration: _AnyRegistration, observer: AnyObject?) -> Bool {
        guard _registry.add(registration) else { return false }
        if let observer, let observable = observer as? any KeyValueObservable {
            observable.kvoRegistrar._noteObserving(registration)
        }
        return true
    }

    /// Records that this registrar's object observes through `registration`, so that the
    /// registration is removed when the object dies.
    internal func _noteObserving(_ registration: _AnyRegistration) {
        _asObserverLock.lock()
        defer { _asObserverLock.unlock() }
        _asObserver.append(registration)
        if _asObserver.count >= _asObserverPruneAt {
            _asObserver.removeAll { $0.isCancelled }
            _asObserverPruneAt = max(8, _asObserver.count * 2)
        }
    }
}

/// `==` for two values of a type known only generically, when it is `Equatable`; nil otherwise.
/// Decided by the type, so optionals (`nil == nil`) compare as their `Equatable` conformance says.
@usableFromInline
internal func _valuesEqual<Value>(_ a: Value, _ b: Value) -> Bool? {
    func open<E: Equatable>(_: E.Type) -> Bool { (a as! E) == (b as! E) }
    guard let equatable = Value.self as? any Equatable.Type else { return nil }
    return open(equatable)
}
