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
/// The registrations are grouped by key (contexts merged, registry order), in the frozen layout
/// of `_FrozenGroups` (`Concurrency/_FrozenGroups.swift`). How a reader gets one without a lock,
/// and when it is freed: `Concurrency/_ReadSections.swift`.
@usableFromInline
internal typealias _DispatchCache = _FrozenGroups<_AnyRegistration>

extension _FrozenGroups where Item == _AnyRegistration {
    /// Every registration, grouped by key: registrations of key i are
    /// `registrations[starts[i] ..< starts[i + 1]]`.
    @inlinable
    var registrations: UnsafeMutablePointer<Unmanaged<_AnyRegistration>> { items }
}
