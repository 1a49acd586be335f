/// Objects grouped by key id, frozen: the immutable shape of a snapshot read in read sections
/// (`Concurrency/_ReadSections.swift`), today an object's dispatch cache (`_DispatchCache`: its
/// registrations by key).
///
/// Layout: key `i` is `keyIDs[i]`, its objects are `items[starts[i] ..< starts[i + 1]]`, each
/// retained once by the snapshot, so a reader inside a read section walks them with no reference
/// counting at all. Keys are few (scanned linearly: hashing cost more than the scan).
@usableFromInline
internal final class _FrozenGroups<Item: AnyObject>: @unchecked Sendable {
    /// Number of keys.
    @usableFromInline let keyCount: Int
    /// Key ids, parallel to `starts`.
    @usableFromInline let keyIDs: UnsafeMutablePointer<UInt32>
    /// Objects of key i are `items[starts[i] ..< starts[i + 1]]`.
    @usableFromInline let starts: UnsafeMutablePointer<Int>
    /// Every object, grouped by key, in the order given.
    @usableFromInline let items: UnsafeMutablePointer<Unmanaged<Item>>
    private let _itemCount: Int

    /// Freezes `groups` (key id, its objects), keeping their order.
    init(groups: [(UInt32, ContiguousArray<Item>)]) {
        keyCount = groups.count
        keyIDs = .allocate(capacity: max(groups.count, 1))
        starts = .allocate(capacity: groups.count + 1)
        _itemCount = groups.reduce(0) { $0 + $1.1.count }
        items = .allocate(capacity: max(_itemCount, 1))
        var next = 0
        for (i, (keyID, members)) in groups.enumerated() {
            keyIDs[i] = keyID
            starts[i] = next
            for member in members {
                (items + next).initialize(to: .passRetained(member))
                next += 1
            }
        }
        starts[groups.count] = next
    }

    deinit {
        for i in 0..<_itemCount { items[i].release() }
        items.deallocate()
        starts.deallocate()
        keyIDs.deallocate()
    }

    /// The objects of `keyID`, as a range into `items` (empty when none).
    @inlinable
    func range(of keyID: UInt32) -> Range<Int> {
        let keyIDs = keyIDs, count = keyCount
        var i = 0
        while i < count {
            if keyIDs[i] == keyID { return Range(uncheckedBounds: (starts[i], starts[i &+ 1])) }
            i &+= 1
        }
        return 0..<0
    }
}
