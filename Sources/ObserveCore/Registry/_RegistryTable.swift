/// One entry of a registry table: (object, key) -> slot.
internal struct _TableEntry: Equatable {
    var key: UInt32
    var slot: UInt32
}

/// The internal interface both registry implementations provide: a map from
/// (object address, key id) to a slot index, with per-object enumeration and removal.
///
/// An object has one entry per key it has observers for, whatever their number and contexts
/// (they share the key's `_RegistrationGroup`), so an object's entries stay as few as the keys
/// its type declares: no client can grow one object's probe run by registering many contexts.
///
/// `_CRegistryTable` forwards to the C core (`cobs_registry_*`); `_SwiftRegistryTable` is the
/// same contract in plain Swift, so the test suite and the benchmark can run against either.
/// Neither is thread-safe: the owning `_Shard` serializes every call under its lock.
internal protocol _RegistryTable: AnyObject {
    /// Inserts the entry; returns the existing slot instead when the key is already present.
    func insert(object: UInt, key: UInt32, slot: UInt32) -> UInt32?
    /// The slot stored for (object, key).
    func find(object: UInt, key: UInt32) -> UInt32?
    /// Removes (object, key) and returns its slot.
    @discardableResult
    func remove(object: UInt, key: UInt32) -> UInt32?
    /// Replaces the contents of `entries` with every entry of `object` (reusing its storage).
    func entries(of object: UInt, into entries: inout [_TableEntry])
    /// Removes every entry of `object` and returns their slots.
    func removeObject(_ object: UInt) -> [UInt32]
    /// The number of entries.
    var count: Int { get }
    /// Traps with a description if a structural invariant is broken.
    func checkInvariants()
}

/// The pure-Swift registry: a dictionary from object address to that object's entries.
///
/// Plain, idiomatic Swift on purpose: it is the reference the C core is measured and
/// differentially tested against. Per-object entry lists are short (one per observed key), so
/// a linear scan within an object beats a second hash.
internal final class _SwiftRegistryTable: _RegistryTable {
    init() {}

    // Guarded by the owning shard's lock (see `_Shard`), hence no dynamic exclusivity checks.
    @exclusivity(unchecked) private var _objects: [UInt: [_TableEntry]] = [:]
    @exclusivity(unchecked) private var _count = 0

    func insert(object: UInt, key: UInt32, slot: UInt32) -> UInt32? {
        if let existing = _objects[object]?.first(where: { $0.key == key }) {
            return existing.slot
        }
        _objects[object, default: []].append(_TableEntry(key: key, slot: slot))
        _count += 1
        return nil
    }

    func find(object: UInt, key: UInt32) -> UInt32? {
        _objects[object]?.first(where: { $0.key == key })?.slot
    }

    func remove(object: UInt, key: UInt32) -> UInt32? {
        guard var list = _objects[object], let index = list.firstIndex(where: { $0.key == key }) else { return nil }
        let slot = list.remove(at: index).slot
        _objects[object] = list.isEmpty ? nil : list
        _count -= 1
        return slot
    }

    func entries(of object: UInt, into entries: inout [_TableEntry]) {
        entries._removeAllKeepingCapacity()
        if let list = _objects[object] { entries.append(contentsOf: list) }
    }

    func removeObject(_ object: UInt) -> [UInt32] {
        guard let list = _objects.removeValue(forKey: object) else { return [] }
        _count -= list.count
        return list.map(\.slot)
    }

    var count: Int { _count }

    func checkInvariants() {
        var total = 0
        for (object, list) in _objects {
            _require(!list.isEmpty, "_SwiftRegistryTable: empty list kept for object \(object)")
            total += list.count
            for (i, a) in list.enumerated() {
                for b in list[(i + 1)...] {
                    _require(a.key != b.key, "_SwiftRegistryTable: duplicate key \(a.key)")
                }
            }
        }
        _require(total == _count, "_SwiftRegistryTable: count \(_count) but \(total) entries")
    }
}
