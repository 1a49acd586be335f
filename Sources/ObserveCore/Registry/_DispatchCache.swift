import Synchronization

/// An immutable snapshot of one object's registrations, by key: what a setter reads instead of
/// taking a registry shard's lock and probing the table.
///
/// Why: with the registry as the only read path, a notified set paid a shard lock, a C probe,
/// three Swift layers around it and a retain/release of the group (~500 instructions, ~45 ns);
/// the naive Mutex-and-Dictionary registry it is measured against costs ~80 ns. The registry
/// (C or Swift) stays the one source of truth for every registration change, lookup by
/// observer, introspection and teardown; this cache is derived from it, per object, on the first
/// notification after a change, and thrown away by the next change.
///
/// How a reader gets one without a lock, and when it is freed: `Concurrency/_ReadSections.swift`.
@usableFromInline
internal final class _DispatchCache: @unchecked Sendable {
    /// Number of keys with registrations.
    @usableFromInline let keyCount: Int
    /// Key ids (few: scanned linearly), parallel to `starts`.
    @usableFromInline let keyIDs: UnsafeMutablePointer<UInt32>
    /// Registrations of key i are `registrations[starts[i] ..< starts[i + 1]]`.
    @usableFromInline let starts: UnsafeMutablePointer<Int>
    /// Every registration, grouped by key (contexts merged, registry order), each retained
    /// once by the cache: a reader walks them with no reference counting at all.
    @usableFromInline let registrations: UnsafeMutablePointer<Unmanaged<_AnyRegistration>>
    private let _registrationCount: Int

    init(groups: [(keyID: UInt32, registrations: ContiguousArray<_AnyRegistration>)]) {
        keyCount = groups.count
        keyIDs = .allocate(capacity: max(groups.count, 1))
        starts = .allocate(capacity: groups.count + 1)
        _registrationCount = groups.reduce(0) { $0 + $1.registrations.count }
        registrations = .allocate(capacity: max(_registrationCount, 1))
        var next = 0
        for (i, group) in groups.enumerated() {
            keyIDs[i] = group.keyID
            starts[i] = next
            for registration in group.registrations {
                (registrations + next).initialize(to: Unmanaged.passRetained(registration))
                next += 1
            }
        }
        starts[groups.count] = next
    }

    deinit {
        for i in 0..<_registrationCount { registrations[i].release() }
        registrations.deallocate()
        starts.deallocate()
        keyIDs.deallocate()
    }

    /// The registrations of `keyID`, as a range into `registrations` (empty when none). Always
    /// inlined: `_openDelivery` calls it on every notified set (17 instructions as a call).
    @inlinable @inline(__always)
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
