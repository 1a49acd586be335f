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
    /// The one allocation holding `registrations`, `starts`, `keyIDs` and `uniform`, in that order (each
    /// part aligned for its type): a fill costs the object and this block, nothing else.
    private let _block: UnsafeMutableRawPointer

    /// Builds the cache of `keyCount` keys holding `registrationCount` registrations in all.
    /// `fill(key)` is called for key index 0, 1, … and returns that key's id after calling
    /// `add(registration)` for each of its registrations, in delivery order (the cache retains
    /// each once; the caller keeps them alive meanwhile). The counts must be exact.
    init(keyCount: Int, registrationCount: Int,
         fill: (_ key: Int, _ add: (Unmanaged<_AnyRegistration>) -> Void) -> UInt32) {
        self.keyCount = keyCount
        _registrationCount = registrationCount
        let registrationBytes = registrationCount * MemoryLayout<Unmanaged<_AnyRegistration>>.stride
        let startBytes = (keyCount + 1) * MemoryLayout<Int>.stride
        let keyBytes = max(keyCount, 1) * MemoryLayout<UInt32>.stride
        _block = .allocate(byteCount: registrationBytes + startBytes + keyBytes + max(keyCount, 1),
                           alignment: MemoryLayout<Int>.alignment)
        registrations = _block.bindMemory(to: Unmanaged<_AnyRegistration>.self, capacity: registrationCount)
        starts = (_block + registrationBytes).bindMemory(to: Int.self, capacity: keyCount + 1)
        keyIDs = (_block + registrationBytes + startBytes).bindMemory(to: UInt32.self, capacity: max(keyCount, 1))
        uniform = (_block + registrationBytes + startBytes + keyBytes).bindMemory(to: UInt8.self, capacity: max(keyCount, 1))
        var next = 0
        for key in 0..<keyCount {
            starts[key] = next
            var plain = Self._uniformFlag, values: UInt8? = nil
            keyIDs[key] = fill(key) { registration in
                _require(next < registrationCount, "_DispatchCache: more registrations than counted")
                (registrations + next).initialize(to: registration.retain())
                next += 1
                registration._withUnsafeGuaranteedRef { entry in
                    let asked = UInt8(truncatingIfNeeded: entry.options.intersection([.old, .new]).rawValue)
                    if entry.hasObserver || entry._queue != nil || entry.options.contains(.skipEqualValues)
                        || (values != nil && values != asked) {
                        plain = 0
                    }
                    values = asked
                }
            }
            uniform[key] = plain == 0 ? 0 : plain | (values ?? 0)
        }
        _require(next == registrationCount, "_DispatchCache: fewer registrations than counted")
        starts[keyCount] = next
    }

    deinit {
        for i in 0..<_registrationCount { registrations[i].release() }
        _block.deallocate()
    }

    /// Per key, parallel to `keyIDs`: `_uniformFlag` with the `.old`/`.new` option bits when every
    /// registration of the key is a token registration delivered inline that asks for the same
    /// values and does not skip equal values (a property's usual observers), else 0. Such a key's
    /// set builds one change and calls each handler directly (`KeyValueRegistrar._notify`).
    @usableFromInline let uniform: UnsafeMutablePointer<UInt8>

    /// The bit of a `uniform` entry that says "uniform" (the low bits are option bits).
    @usableFromInline static var _uniformFlag: UInt8 { 0x80 }

    /// The registrations of `keyID`, as a range into `registrations` (empty when none). Always
    /// inlined: `_openDelivery` calls it on every notified set (17 instructions as a call).
    @inlinable @inline(__always)
    func range(of keyID: UInt32) -> Range<Int> {
        delivery(of: keyID).range
    }

    /// The registrations of `keyID` and its `uniform` entry (0 when the key has none).
    @inlinable @inline(__always)
    func delivery(of keyID: UInt32) -> (range: Range<Int>, uniform: UInt8) {
        let keyIDs = keyIDs, count = keyCount
        var i = 0
        while i < count {
            if keyIDs[i] == keyID { return (Range(uncheckedBounds: (starts[i], starts[i &+ 1])), uniform[i]) }
            i &+= 1
        }
        return (0..<0, 0)
    }
}
