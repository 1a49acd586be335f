/// One shard of a registry: a table from (object, key) to a slot, and the groups the slots
/// index (one `_RegistrationGroup` per observed (object, key), every context in it). Every
/// method requires the caller to hold `lock`.
///
/// Invariants (checked by `checkInvariants`):
/// - `groups[s]` is non-empty ⟺ some table entry stores slot `s`, and then the entry's key is
///   the (object, key) of every registration in `groups[s]`;
/// - an empty `groups[s]` has `s` in `freeSlots`, exactly once;
/// - no registration in a group is cancelled;
/// - the registrar of each object with a non-empty group counts that object's non-empty groups
///   (`KeyValueRegistrar._groupCount`; all of an object's groups are in its one shard).
///
/// Notifications do not read groups directly: each object's `_DispatchCache` is built from them
/// (under this lock) and read without it.
internal final class _Shard: @unchecked Sendable {
    let lock = _Lock()
    private let _table: any _RegistryTable
    // Every access happens under `lock`, so Swift's dynamic exclusivity checks (which cost more
    // than the registry lookup itself on the notification path, per callgrind) are turned off.
    @exclusivity(unchecked) private var _groups: ContiguousArray<_RegistrationGroup> = []
    @exclusivity(unchecked) private var _freeSlots: [UInt32] = []
    @exclusivity(unchecked) private var _entryScratch: [_TableEntry] = []
    /// Registrations stored in this shard and not cancelled: the groups' own counts, summed
    /// (introspection only; O(groups)). Lock held. Not one registry-wide atomic kept on every
    /// observe and cancel: that cost two serialising read-modify-writes per registration (and
    /// shared a cache line between threads registering on unrelated objects).
    internal var liveCount: Int { _groups.reduce(0) { $0 + $1.liveCount } }
    /// References dropped under the lock, released by `_Registry` after it unlocks: the first
    /// in `_deferredFirst` (a removal usually drops one, the replaced dispatch cache, and an
    /// array would be allocated and freed for it on every removal), the others in
    /// `_deferredReleases`.
    @exclusivity(unchecked) private var _deferredFirst: AnyObject?
    @exclusivity(unchecked) private var _deferredReleases: [AnyObject] = []

    init(backend: ObservationBackend) {
        switch backend {
        case .c: _table = _CRegistryTable()
        case .swift: _table = _SwiftRegistryTable()
        }
    }

    /// Keeps `object` alive until the lock is released (see `_Registry._withShard`).
    func deferRelease(_ object: AnyObject) {
        if _deferredFirst == nil { _deferredFirst = object } else { _deferredReleases.append(object) }
    }

    /// What `deferRelease` collected, for the caller to drop once the lock is released.
    @inline(__always)
    func takeDeferredReleases() -> (AnyObject?, [AnyObject]) {
        if _fastPath(_deferredFirst == nil) { return (nil, []) }
        let first = _deferredFirst.take()
        if _fastPath(_deferredReleases.isEmpty) { return (first, []) }
        defer { _deferredReleases = [] }
        return (first, _deferredReleases)
    }

    private func _allocateSlot() -> UInt32 {
        if let slot = _freeSlots.popLast() { return slot }
        _require(_groups.count < Int(UInt32.max), "ObserveCore: too many registration groups in one shard")
        _groups.append(_RegistrationGroup())
        return UInt32(_groups.count - 1)
    }

    /// Adds `registration` to the group of its (object, key). False (nothing added) when its
    /// observer already has a registration there with the same context; an entry with the same
    /// observer address whose observer died belongs to a former object at a reused address and
    /// is dropped instead.
    func add(_ registration: _AnyRegistration) -> Bool {
        let object = registration.objectAddress, key = registration.keyID
        // One table operation: insert a fresh slot, or learn the slot of the existing group.
        let fresh = _allocateSlot()
        guard let slot = _table.insert(object: object, key: key, slot: fresh) else {
            registration._slot = fresh
            _groups[Int(fresh)].append(registration)
            registration.withRegistrar { $0._groupCount += 1 }
            return true
        }
        _freeSlots.append(fresh)
        let index = Int(slot)
        if registration.hasObserver,
           let existing = _groups[index].member(observer: registration.observerAddress, context: registration.context) {
            if existing._observer != nil { return false }
            _groups[index].remove(existing)
            existing._cancelled.store(true, ordering: .releasing)
            deferRelease(existing)
        }
        registration._slot = slot
        _groups[index].append(registration)
        return true
    }

    /// Removes a live registration from its group (and the group's entry once it is empty) and
    /// marks it cancelled. Returns true when the group emptied (the object's masks may change).
    @discardableResult
    func removeFromGroup(_ registration: _AnyRegistration) -> Bool {
        let slot = registration._slot
        let index = Int(slot)
        _groups[index].remove(registration)
        let emptied = _groups[index].isEmpty
        if emptied {
            // While the registration is not yet cancelled (`withRegistrar`'s rule).
            registration.withRegistrar { registrar in
                _require(registrar._groupCount > 0,
                         "ObserveCore: a registrar outlived its object or serves two objects; every observable "
                         + "object needs its own registrar (`let kvoRegistrar = KeyValueRegistrar()`), never a shared one")
                registrar._groupCount -= 1
            }
        }
        registration._cancelled.store(true, ordering: .releasing)
        guard emptied else { return false }
        let removed = _table.remove(object: registration.objectAddress, key: registration.keyID)
        _require(removed == slot, "ObserveCore internal error: registry table and shard groups disagree")
        _freeSlots.append(slot)
        return true
    }

    /// Removes every registration of `object`; returns how many.
    func removeObject(_ object: UInt) -> Int {
        var removed = 0
        for slot in _table.removeObject(object) {
            for registration in _groups[Int(slot)].removeAll() {
                if removed == 0 { registration.withRegistrar { $0._groupCount = 0 } }   // before the cancel
                registration._cancelled.store(true, ordering: .releasing)
                // Often the last reference (observer-tagged registrations live only here), and
                // its handler's captures may re-enter the registry when released.
                deferRelease(registration)
                removed += 1
            }
            _freeSlots.append(slot)
        }
        return removed
    }

    /// Recomputes the registrar's observed-key masks from what is left for `object`: O(keys
    /// observed on the object), whatever the number of registrations.
    func refreshMasks(object: UInt, registrar: KeyValueRegistrar) {
        var observed: UInt64 = 0, prior: UInt64 = 0
        if registrar._groupCount == 0 {
            // Nothing left on the object: no table query needed.
            registrar._observedMask.store(0, ordering: .releasing)
            registrar._priorMask.store(0, ordering: .releasing)
            return
        }
        _table.entries(of: object, into: &_entryScratch)
        for entry in _entryScratch {
            let bit = _KeyTable.bit(for: entry.key)
            observed |= bit
            if _groups[Int(entry.slot)].priorCount > 0 { prior |= bit }
        }
        registrar._observedMask.store(observed, ordering: .releasing)
        registrar._priorMask.store(prior, ordering: .releasing)
    }

    /// Every registration of `object`, grouped by key, for its dispatch cache: built straight
    /// from the groups into the cache's one block (no array per group, no array of groups).
    func dispatchCache(object: UInt) -> _DispatchCache {
        _table.entries(of: object, into: &_entryScratch)
        var registrationCount = 0
        for entry in _entryScratch { registrationCount += _groups[Int(entry.slot)].liveCount }
        return _DispatchCache.make(keyCount: _entryScratch.count, registrationCount: registrationCount) { key, add in
            let entry = _entryScratch[key]
            _groups[Int(entry.slot)].forEachLive(add)
            return entry.key
        }
    }

    /// The live registrations of `object` (of one key, or all), in registration order per key.
    func registrations(object: UInt, keyID: UInt32?) -> [_AnyRegistration] {
        var result: [_AnyRegistration] = []
        if let keyID {
            if let slot = _table.find(object: object, key: keyID) { result.append(contentsOf: _groups[Int(slot)].live) }
        } else {
            _table.entries(of: object, into: &_entryScratch)
            for entry in _entryScratch { result.append(contentsOf: _groups[Int(entry.slot)].live) }
        }
        return result
    }

    /// The live registrations of `observer` on (object, key) — with `context`, or every context:
    /// O(what is returned) expected, whatever else the key has.
    func registrations(object: UInt, keyID: UInt32, observer: UInt, context: UInt?) -> [_AnyRegistration] {
        guard let slot = _table.find(object: object, key: keyID) else { return [] }
        guard let context else { return _groups[Int(slot)].members(observer: observer) }
        return _groups[Int(slot)].member(observer: observer, context: context).map { [$0] } ?? []
    }

    func allRegistrations() -> [_AnyRegistration] {
        var result: [_AnyRegistration] = []
        for group in _groups { result.append(contentsOf: group.live) }
        return result
    }

    func checkInvariants() {
        _table.checkInvariants()
        let free = Set(_freeSlots)
        _require(free.count == _freeSlots.count, "_Shard: a free slot is listed twice")
        var used = 0
        var groupsByObject: [UInt: UInt32] = [:]
        for (index, group) in _groups.enumerated() {
            if group.isEmpty {
                _require(free.contains(UInt32(index)), "_Shard: empty group \(index) not on the free list")
                continue
            }
            used += 1
            _require(!free.contains(UInt32(index)), "_Shard: group \(index) is used and free")
            group.checkInvariants("_Shard group \(index)")
            let members = group.live
            let first = members[0]
            groupsByObject[first.objectAddress, default: 0] += 1
            _require(_table.find(object: first.objectAddress, key: first.keyID) == UInt32(index),
                     "_Shard: group \(index) is not reachable through its key")
            for registration in members {
                _require(!registration.isCancelled, "_Shard: cancelled registration still in group \(index)")
                _require(registration.objectAddress == first.objectAddress && registration.keyID == first.keyID,
                         "_Shard: group \(index) mixes keys")
                _require(registration._slot == UInt32(index), "_Shard: a member of group \(index) has slot \(registration._slot)")
            }
        }
        _require(used == _table.count, "_Shard: \(used) groups but \(_table.count) table entries")
        for (index, group) in _groups.enumerated() where !group.isEmpty {
            var first: _AnyRegistration?
            group.forEachLive { if first == nil { first = $0.takeUnretainedValue() } }
            guard let first else { continue }
            let expected = groupsByObject[first.objectAddress] ?? 0
            first.withRegistrar { registrar in
                _require(registrar._groupCount == expected,
                         "_Shard: group \(index)'s object has \(expected) groups, its registrar counts \(registrar._groupCount)")
            }
        }
    }
}
