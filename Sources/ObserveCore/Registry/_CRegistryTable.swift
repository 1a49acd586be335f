internal import CObserveCore

/// The registry table backed by the C core (`cobs_registry.h`). This file is the only one that
/// calls `cobs_registry_*` functions; every status code is turned into Swift here and nowhere else:
/// - `COBS_NOT_FOUND` becomes `nil`, `COBS_EXISTS` the existing slot;
/// - `COBS_BUFFER_TOO_SMALL` is part of the enumeration protocol (grow the buffers and retry);
/// - `COBS_NO_MEMORY` traps (Swift itself traps on allocation failure, so there is nothing
///   better to do), and `COBS_INVALID_ARGUMENT` traps as a bug in the façade.
internal final class _CRegistryTable: _RegistryTable {
    private let _reg: OpaquePointer
    // Output buffers for `entries(of:into:)`, reused so that removal allocates nothing. Guarded
    // by the owning shard's lock like the table itself.
    @exclusivity(unchecked) private var _keyScratch: UnsafeMutablePointer<cobs_key> = .allocate(capacity: 8)
    @exclusivity(unchecked) private var _slotScratch: UnsafeMutablePointer<cobs_slot> = .allocate(capacity: 8)
    @exclusivity(unchecked) private var _entryScratchCapacity = 8

    init(capacityHint: Int = 0) {
        var reg: OpaquePointer? = nil
        let status = cobs_registry_create(capacityHint, &reg)
        Self._check(status, "cobs_registry_create")
        _reg = reg!
    }

    deinit {
        cobs_registry_destroy(_reg)
        _keyScratch.deallocate()
        _slotScratch.deallocate()
    }

    /// The C key of (object, key). The façade keeps every context of a key in one group (see
    /// `_RegistrationGroup`), so it stores context 0: an object has one entry per observed key.
    @inline(__always)
    private static func _key(_ object: UInt, _ key: UInt32) -> cobs_key {
        cobs_key(object: object, context: 0, key: key, reserved_: 0)
    }

    @inline(__always)
    private static func _check(_ status: cobs_status, _ function: StaticString) {
        if status != COBS_OK { _fail(status, function) }
    }

    @inline(never)
    private static func _fail(_ status: cobs_status, _ function: StaticString) -> Never {
        let name = String(cString: cobs_status_name(status))
        if status == COBS_NO_MEMORY {
            fatalError("ObserveCore: out of memory in \(function) (\(name))")
        }
        fatalError("ObserveCore internal error: \(function) returned \(name)")
    }

    func insert(object: UInt, key: UInt32, slot: UInt32) -> UInt32? {
        var existing: cobs_slot = 0
        let status = cobs_registry_insert(_reg, Self._key(object, key), slot, &existing)
        if status == COBS_EXISTS { return existing }
        Self._check(status, "cobs_registry_insert")
        return nil
    }

    func find(object: UInt, key: UInt32) -> UInt32? {
        var slot: cobs_slot = 0
        let status = cobs_registry_find(_reg, Self._key(object, key), &slot)
        if status == COBS_NOT_FOUND { return nil }
        Self._check(status, "cobs_registry_find")
        return slot
    }

    func remove(object: UInt, key: UInt32) -> UInt32? {
        var slot: cobs_slot = 0
        let status = cobs_registry_remove(_reg, Self._key(object, key), &slot)
        if status == COBS_NOT_FOUND { return nil }
        Self._check(status, "cobs_registry_remove")
        return slot
    }

    func entries(of object: UInt, into entries: inout [_TableEntry]) {
        entries._removeAllKeepingCapacity()
        var count = 0
        var status = cobs_registry_object_entries(_reg, object, _keyScratch, _slotScratch, _entryScratchCapacity, &count)
        if status == COBS_BUFFER_TOO_SMALL {
            _growEntryScratch(to: count)
            status = cobs_registry_object_entries(_reg, object, _keyScratch, _slotScratch, _entryScratchCapacity, &count)
        }
        Self._check(status, "cobs_registry_object_entries")
        for i in 0..<count {
            entries.append(_TableEntry(key: _keyScratch[i].key, slot: _slotScratch[i]))
        }
    }

    private func _growEntryScratch(to count: Int) {
        _keyScratch.deallocate()
        _slotScratch.deallocate()
        _entryScratchCapacity = max(count, _entryScratchCapacity * 2)
        _keyScratch = .allocate(capacity: _entryScratchCapacity)
        _slotScratch = .allocate(capacity: _entryScratchCapacity)
    }

    func removeObject(_ object: UInt) -> [UInt32] {
        var count = 0
        var status = cobs_registry_remove_object(_reg, object, nil, 0, &count)
        if status == COBS_OK { return [] }   // nothing to remove (count 0)
        var slots = [cobs_slot](repeating: 0, count: count)
        status = cobs_registry_remove_object(_reg, object, &slots, count, &count)
        Self._check(status, "cobs_registry_remove_object")
        return slots
    }

    var count: Int { cobs_registry_count(_reg) }

    func checkInvariants() {
        let status = cobs_registry_check_invariants(_reg)
        if status != COBS_OK {
            cobs_registry_dump(_reg, nil)
            fatalError("ObserveCore: C registry invariants broken (\(String(cString: cobs_status_name(status))))")
        }
    }
}
