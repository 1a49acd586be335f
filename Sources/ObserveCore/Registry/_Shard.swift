/// One shard of a registry: a table from (object, key, context) to a slot, and the groups the
/// slots index. Every method requires the caller to hold `lock`.
///
/// Invariants (checked by `checkInvariants`):
/// - `groups[s]` is non-empty ⟺ some table entry stores slot `s`, and then the entry's key is
///   the (object, key, context) of every registration in `groups[s]`;
/// - an empty `groups[s]` has `s` in `freeSlots`, exactly once;
/// - no registration in a group is cancelled.
///
/// Notifications do not read groups directly: each object's `_DispatchCache` is built from them
/// (under this lock) and read without it.
internal final class _Shard: @unchecked Sendable {
    let lock = _Lock()
    private let _table: _RegistryTable
    // Every access happens under `lock`, so Swift's dynamic exclusivity checks (which cost more
    // than the registry lookup itself on the notification path, per callgrind) are turned off.
    @exclusivity(unchecked) private var _groups: ContiguousArray<ContiguousArray<_AnyRegistration>> = []
    @exclusivity(unchecked) private var _freeSlots: [UInt32] = []
    @exclusivity(unchecked) private var _scratch: UnsafeMutablePointer<UInt32>
    @exclusivity(unchecked) private var _scratchCapacity = 16
    @exclusivity(unchecked) private var _entryScratch: [_TableEntry] = []
    /// References dropped under the lock, released by `_Registry` after it unlocks.
    @exclusivity(unchecked) private var _deferredReleases: [AnyObject] = []

    init(backend: ObservationBackend) {
        switch backend {
        case .c: _table = _CRegistryTable()
        case .swift: _table = _SwiftRegistryTable()
        }
        _scratch = .allocate(capacity: _scratchCapacity)
    }

    deinit { _scratch.deallocate() }

    /// Keeps `object` alive until the lock is released (see `_Registry._withShard`).
    func deferRelease(_ object: AnyObject) {
        _deferredReleases.append(object)
    }

    /// What `deferRelease` collected, for the caller to drop once the lock is released.
    @inline(__always)
    func takeDeferredReleases() -> [AnyObject] {
        if _fastPath(_deferredReleases.isEmpty) { return [] }
        defer { _deferredReleases = [] }
        return _deferredReleases
    }

    private func _allocateSlot() -> UInt32 {
        if let slot = _freeSlots.popLast() { return slot }
        _require(_groups.count < Int(UInt32.max), "ObserveCore: too many registration groups in one shard")
        _groups.append([])
        return UInt32(_groups.count - 1)
    }

    /// The slots of every context of (object, key); valid until the next call.
    private func _lookup(object: UInt, keyID: UInt32) -> UnsafeBufferPointer<UInt32> {
        var count = _table.lookup(object: object, key: keyID, into: _scratch, capacity: _scratchCapacity)
        if count > _scratchCapacity {
            _scratch.deallocate()
            _scratchCapacity = max(count, _scratchCapacity * 2)
            _scratch = .allocate(capacity: _scratchCapacity)
            count = _table.lookup(object: object, key: keyID, into: _scratch, capacity: _scratchCapacity)
        }
        return UnsafeBufferPointer(start: _scratch, count: count)
    }

    func add(_ registration: _AnyRegistration) -> Bool {
        let object = registration.objectAddress, key = registration.keyID, context = registration.context
        // One table operation: insert a fresh slot, or learn the slot of the existing group.
        let fresh = _allocateSlot()
        if let slot = _table.insert(object: object, key: key, context: context, slot: fresh) {
            _freeSlots.append(fresh)
            let index = Int(slot)
            if registration.hasObserver {
                // An entry with the same observer address whose observer died belongs to a
                // former object at a reused address: drop it rather than treat it as a duplicate.
                if let existing = _groups[index].firstIndex(where: { $0.observerAddress == registration.observerAddress }) {
                    if _groups[index][existing]._observer != nil { return false }
                    let dead = _groups[index].remove(at: existing)
                    dead._cancelled.store(true, ordering: .releasing)
                    deferRelease(dead)
                    registration.registry.liveCount.subtract(1, ordering: .relaxed)
                }
            }
            registration._slot = slot
            _groups[index].append(registration)
            return true
        }
        registration._slot = fresh
        _groups[Int(fresh)].append(registration)
        return true
    }

    /// Removes a live registration from its group (and the group's entry once it is empty) and
    /// marks it cancelled. Returns true when the group emptied (the object's masks may change).
    @discardableResult
    func removeFromGroup(_ registration: _AnyRegistration) -> Bool {
        let slot = registration._slot
        let index = Int(slot)
        guard let position = _groups[index].firstIndex(where: { $0 === registration }) else { _missingFromGroup() }
        _groups[index].remove(at: position)   // keeps the buffer for the next group in this slot
        registration._cancelled.store(true, ordering: .releasing)
        guard _groups[index].isEmpty else { return false }
        let removed = _table.remove(object: registration.objectAddress, key: registration.keyID,
                                    context: registration.context)
        _require(removed == slot, "ObserveCore: registry table and shard groups disagree")
        // The emptied buffer is kept for the next group that takes this slot: register/remove
        // churn then allocates no group storage.
        _freeSlots.append(slot)
        return true
    }

    @inline(never)
    private func _missingFromGroup() -> Never {
        fatalError("ObserveCore internal error: a live registration is missing from its shard group")
    }

    /// Removes every registration of `object`; returns how many.
    func removeObject(_ object: UInt) -> Int {
        var removed = 0
        for slot in _table.removeObject(object) {
            for registration in _groups[Int(slot)] {
                registration._cancelled.store(true, ordering: .releasing)
                // Often the last reference (observer-tagged registrations live only here), and
                // its handler's captures may re-enter the registry when released.
                deferRelease(registration)
                removed += 1
            }
            _groups[Int(slot)].removeAll(keepingCapacity: true)
            _freeSlots.append(slot)
        }
        return removed
    }

    /// Recomputes the registrar's observed-key masks from what is left for `object`.
    func refreshMasks(object: UInt, registrar: KeyValueRegistrar) {
        var observed: UInt64 = 0, prior: UInt64 = 0
        _table.entries(of: object, into: &_entryScratch)
        for entry in _entryScratch {
            let bit = _KeyTable.bit(for: entry.key)
            observed |= bit
            if _groups[Int(entry.slot)].contains(where: { $0.options.contains(.prior) }) { prior |= bit }
        }
        registrar._observedMask.store(observed, ordering: .releasing)
        registrar._priorMask.store(prior, ordering: .releasing)
    }

    /// Every registration of `object`, grouped by key (contexts merged), for its dispatch cache.
    func dispatchCache(object: UInt) -> _DispatchCache {
        _table.entries(of: object, into: &_entryScratch)
        var groups: [(keyID: UInt32, registrations: ContiguousArray<_AnyRegistration>)] = []
        for entry in _entryScratch {
            if let index = groups.firstIndex(where: { $0.keyID == entry.key }) {
                groups[index].registrations.append(contentsOf: _groups[Int(entry.slot)])
            } else {
                groups.append((entry.key, _groups[Int(entry.slot)]))
            }
        }
        return _DispatchCache(groups: groups)
    }


    func registrations(object: UInt, keyID: UInt32?) -> [_AnyRegistration] {
        var result: [_AnyRegistration] = []
        if let keyID {
            for slot in _lookup(object: object, keyID: keyID) { result.append(contentsOf: _groups[Int(slot)]) }
        } else {
            _table.entries(of: object, into: &_entryScratch)
            for entry in _entryScratch { result.append(contentsOf: _groups[Int(entry.slot)]) }
        }
        return result
    }

    func allRegistrations() -> [_AnyRegistration] {
        var result: [_AnyRegistration] = []
        for group in _groups { result.append(contentsOf: group) }
        return result
    }

    func checkInvariants() {
        _table.checkInvariants()
        let free = Set(_freeSlots)
        _require(free.count == _freeSlots.count, "_Shard: a free slot is listed twice")
        var used = 0
        for (index, group) in _groups.enumerated() {
            if group.isEmpty {
                _require(free.contains(UInt32(index)), "_Shard: empty group \(index) not on the free list")
                continue
            }
            used += 1
            _require(!free.contains(UInt32(index)), "_Shard: group \(index) is used and free")
            let first = group[0]
            _require(_table.find(object: first.objectAddress, key: first.keyID, context: first.context) == UInt32(index),
                     "_Shard: group \(index) is not reachable through its key")
            for registration in group {
                _require(!registration.isCancelled, "_Shard: cancelled registration still in group \(index)")
                _require(registration.objectAddress == first.objectAddress && registration.keyID == first.keyID
                         && registration.context == first.context, "_Shard: group \(index) mixes keys")
            }
        }
        _require(used == _table.count, "_Shard: \(used) groups but \(_table.count) table entries")
    }
}
