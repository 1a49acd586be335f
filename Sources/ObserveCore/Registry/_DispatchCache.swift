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
/// Publication and reclamation (per registrar, no global epoch):
/// - the registrar holds the current cache as `Unmanaged` bits in an atomic word (0 = none),
///   owning one retain; it is filled and invalidated only under the object's shard lock, so a
///   published cache always matches the registry;
/// - a reader counts itself in `_readers` (sequentially consistent increment), then loads the
///   word (sequentially consistent), and uses the cache unretained until it decrements;
/// - an invalidation exchanges the word for 0, then reads `_readers`: at zero, no reader can
///   hold the old cache (any later reader's increment is ordered after the exchange, so it loads
///   the new word) and it is released at once; otherwise it is retired, and released by whoever
///   next sees `_readers` at zero (the last reader out, or the next invalidation).
/// Handlers run inside the read section, so a handler that registers or removes observers
/// retires the cache it is iterating rather than freeing it.
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

    /// The registrations of `keyID`, as a range into `registrations` (empty when none).
    @inlinable
    func range(of keyID: UInt32) -> Range<Int> {
        for i in 0..<keyCount where keyIDs[i] == keyID { return starts[i]..<starts[i + 1] }
        return 0..<0
    }
}

extension KeyValueRegistrar {
    /// Enters a read section and returns the current cache, building it when there is none.
    /// Pair with `_leaveReadSection()`.
    @inlinable
    internal func _enterReadSection(object address: UInt) -> Unmanaged<_DispatchCache> {
        _readers.wrappingAdd(1, ordering: .sequentiallyConsistent)
        let word = _cacheWord.load(ordering: .sequentiallyConsistent)
        if _fastPath(word != 0) {
            return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
        }
        return _fillCache(object: address)
    }

    @inlinable
    internal func _leaveReadSection() {
        let previous = _readers.wrappingSubtract(1, ordering: .sequentiallyConsistent).oldValue
        if previous == 1 && _hasRetired.load(ordering: .relaxed) { _drainRetired() }
    }

    /// Builds and publishes the cache from the registry (under the shard lock, which orders it
    /// against every invalidation). The caller is inside a read section.
    @usableFromInline @inline(never)
    internal func _fillCache(object address: UInt) -> Unmanaged<_DispatchCache> {
        _registry.withCacheFill(object: address) { build in
            let word = _cacheWord.load(ordering: .sequentiallyConsistent)
            if word != 0 { return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word)!) }
            let cache = Unmanaged.passRetained(build())
            _cacheWord.store(UInt(bitPattern: cache.toOpaque()), ordering: .sequentiallyConsistent)
            return cache
        }
    }

    /// Drops the current cache (the object's registrations changed). Called under `shard`'s lock;
    /// the caches it frees are handed to the shard, to be released after the lock is dropped
    /// (a cache may hold the last reference to a removed registration and its handler).
    internal func _invalidateCache(deferringTo shard: _Shard) {
        let old = _cacheWord.exchange(0, ordering: .sequentiallyConsistent)
        guard old != 0 else { return }
        let cache = Unmanaged<_DispatchCache>.fromOpaque(UnsafeRawPointer(bitPattern: old)!)
        _retireLock.lock()
        if _readers.load(ordering: .sequentiallyConsistent) == 0 {
            let retired = _retired
            _retired.removeAll()
            _hasRetired.store(false, ordering: .relaxed)
            _retireLock.unlock()
            shard.deferRelease(cache.takeRetainedValue())
            for entry in retired { shard.deferRelease(entry.takeRetainedValue()) }
        } else {
            _retired.append(cache)
            _hasRetired.store(true, ordering: .relaxed)
            _retireLock.unlock()
        }
    }

    @usableFromInline @inline(never)
    internal func _drainRetired() {
        _retireLock.lock()
        guard _readers.load(ordering: .sequentiallyConsistent) == 0 else { _retireLock.unlock(); return }
        let retired = _retired
        _retired.removeAll()
        _hasRetired.store(false, ordering: .relaxed)
        _retireLock.unlock()
        for entry in retired { entry.release() }
    }

    /// Releases the current and retired caches. Called by deinit after the object's
    /// registrations were removed: no reader and no invalidation can reach this registrar any more.
    internal func _releaseCaches() {
        let word = _cacheWord.exchange(0, ordering: .sequentiallyConsistent)
        if word != 0 { Unmanaged<_DispatchCache>.fromOpaque(UnsafeRawPointer(bitPattern: word)!).release() }
        _retireLock.lock()
        let retired = _retired
        _retired.removeAll()
        _retireLock.unlock()
        for entry in retired { entry.release() }
    }
}
