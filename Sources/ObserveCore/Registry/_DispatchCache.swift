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
///
/// One allocation: the object carries its arrays in its own tail (`ManagedBuffer`), so a fill
/// costs one `malloc` and its invalidation one `free` — not two of each, as when the arrays were
/// a separate block (a fill happens on the first set after every registration change, which is
/// most sets of a service whose registrations churn: `service.churn`).
@usableFromInline
internal final class _DispatchCache: ManagedBuffer<_DispatchCacheHeader, UInt> {
    /// Number of keys with registrations.
    @inlinable var keyCount: Int { _header.pointee.keyCount }
    /// Key ids (few: scanned linearly), parallel to `starts`.
    @inlinable var keyIDs: UnsafeMutablePointer<UInt32> { _header.pointee.keyIDs }
    /// Registrations of key i are `registrations[starts[i] ..< starts[i + 1]]`.
    @inlinable var starts: UnsafeMutablePointer<Int> { _header.pointee.starts }
    /// Every registration, grouped by key (contexts merged, registry order), each retained
    /// once by the cache: a reader walks them with no reference counting at all.
    @inlinable var registrations: UnsafeMutablePointer<Unmanaged<_AnyRegistration>> { _header.pointee.registrations }
    /// Per key, parallel to `keyIDs`: `_uniformFlag` with the `.old`/`.new` option bits when every
    /// registration of the key is a token registration delivered inline that asks for the same
    /// values and does not skip equal values (a property's usual observers), else 0. Such a key's
    /// set builds one change and calls each handler directly (`KeyValueRegistrar._notify`).
    @inlinable var uniform: UnsafeMutablePointer<UInt8> { _header.pointee.uniform }

    /// The header, in place. Not `header`: that property is a `var` whose every read is a
    /// dynamic exclusivity check and a copy of the whole struct (a set went from 256 to 374
    /// instructions, callgrind). The header is written once, by `create`, and the object keeps
    /// the pointer valid for as long as it lives.
    @inlinable @inline(__always)
    var _header: UnsafeMutablePointer<_DispatchCacheHeader> { withUnsafeMutablePointerToHeader { $0 } }

    /// Builds the cache of `keyCount` keys holding `registrationCount` registrations in all.
    /// `fill(key)` is called for key index 0, 1, … and returns that key's id after calling
    /// `add(registration)` for each of its registrations, in delivery order (the cache retains
    /// each once; the caller keeps them alive meanwhile). The counts must be exact.
    static func make(keyCount: Int, registrationCount: Int,
                     fill: (_ key: Int, _ add: (Unmanaged<_AnyRegistration>) -> Void) -> UInt32) -> _DispatchCache {
        // The tail, in words: registrations, starts, then key ids and uniform bytes, each part
        // starting on a word (so aligned for its type). Sizes from strides: a word is 4 bytes on
        // 32-bit targets.
        let word = MemoryLayout<UInt>.stride
        func words(_ bytes: Int) -> Int { (bytes + word - 1) / word }
        let keySlots = max(keyCount, 1)
        let registrationWords = words(registrationCount * MemoryLayout<Unmanaged<_AnyRegistration>>.stride)
        let startWords = words((keyCount + 1) * MemoryLayout<Int>.stride)
        let keyIDWords = words(keySlots * MemoryLayout<UInt32>.stride)
        let uniformWords = words(keySlots * MemoryLayout<UInt8>.stride)
        let total = registrationWords + startWords + keyIDWords + uniformWords
        let buffer = self.create(minimumCapacity: total) { buffer in
            buffer.withUnsafeMutablePointerToElements { tail in
                let raw = UnsafeMutableRawPointer(tail)
                let starts = raw + registrationWords * word, keyIDs = starts + startWords * word
                return _DispatchCacheHeader(
                    keyCount: keyCount, registrationCount: registrationCount,
                    registrations: raw.bindMemory(to: Unmanaged<_AnyRegistration>.self, capacity: registrationCount),
                    starts: starts.bindMemory(to: Int.self, capacity: keyCount + 1),
                    keyIDs: keyIDs.bindMemory(to: UInt32.self, capacity: keySlots),
                    uniform: (keyIDs + keyIDWords * word).bindMemory(to: UInt8.self, capacity: keySlots))
            }
        }
        let cache = unsafeDowncast(buffer, to: _DispatchCache.self)
        cache._fill(fill)
        return cache
    }

    private func _fill(_ fill: (_ key: Int, _ add: (Unmanaged<_AnyRegistration>) -> Void) -> UInt32) {
        let header = _header.pointee
        let keyCount = header.keyCount, registrationCount = header.registrationCount
        let registrations = header.registrations, starts = header.starts
        let keyIDs = header.keyIDs, uniform = header.uniform
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
        let header = _header.pointee
        for i in 0..<header.registrationCount { header.registrations[i].release() }
    }

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
        let header = _header
        let keyIDs = header.pointee.keyIDs, count = header.pointee.keyCount
        var i = 0
        while i < count {
            if keyIDs[i] == keyID {
                let starts = header.pointee.starts
                return (Range(uncheckedBounds: (starts[i], starts[i &+ 1])), header.pointee.uniform[i])
            }
            i &+= 1
        }
        return (0..<0, 0)
    }
}

/// A dispatch cache's counts and where its parts sit in its tail (`_DispatchCache`).
@usableFromInline
internal struct _DispatchCacheHeader {
    @usableFromInline let keyCount: Int
    @usableFromInline let registrationCount: Int
    @usableFromInline let registrations: UnsafeMutablePointer<Unmanaged<_AnyRegistration>>
    @usableFromInline let starts: UnsafeMutablePointer<Int>
    @usableFromInline let keyIDs: UnsafeMutablePointer<UInt32>
    @usableFromInline let uniform: UnsafeMutablePointer<UInt8>
}
