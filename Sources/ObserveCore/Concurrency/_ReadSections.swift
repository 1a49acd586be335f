import Synchronization

// Read sections: how a setter reads its object's `_DispatchCache` with no lock, and when a
// replaced cache is freed. Part of the concurrency core (see `_Overview.swift`).
//
// Publication and reclamation (per registrar, no global epoch):
// - the registrar holds the current cache as `Unmanaged` bits in an atomic word (`_cacheWord`,
//   0 = none), owning one retain; it is filled and invalidated only under the object's shard
//   lock, so a published cache always matches the registry;
// - a reader counts itself in `_readers` (sequentially consistent increment), then loads the
//   word (sequentially consistent), and uses the cache unretained until it decrements;
// - an invalidation exchanges the word for 0, retires the old cache (`_retired`, under
//   `_retireLock`), sets `_hasRetired`, then reads `_readers`: at zero, no reader can hold a
//   retired cache (any later reader's increment is ordered after the exchange, so it loads the
//   new word) and they are released at once; otherwise the last reader out sees `_hasRetired`
//   (both sides sequentially consistent) and releases them.
// Handlers run inside the read section, so a handler that registers or removes observers
// retires the cache it is iterating rather than freeing it. Tests:
// `ConcurrencyTests` (set/observe/cancel from several threads) run under ThreadSanitizer in CI.

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
        if previous == 1 { _drainRetiredIfIdle() }
    }

    /// `_leaveReadSection()` for a caller that holds a lock (an array's): it never drains, because
    /// releasing a retired cache can release a registration's handler and run any deinit its
    /// captures have, which must not find the caller's lock taken. The caller calls
    /// `_drainRetiredIfIdle()` once it has dropped the lock.
    @inlinable
    internal func _leaveReadSectionUnderLock() {
        _readers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
    }

    /// Frees retired caches when no reader remains: what `_leaveReadSectionUnderLock()` left
    /// undone. One load when nothing is retired.
    @inlinable
    internal func _drainRetiredIfIdle() {
        if _slowPath(_hasRetired.load(ordering: .sequentiallyConsistent)) { _drainRetired() }
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
        _retired.append(cache)
        // Then the readers are counted: the last reader may leave between this count and the
        // flag, and check `_hasRetired` before it is stored. Both sides are sequentially
        // consistent (store here, then load `_readers`; decrement there, then load
        // `_hasRetired`), so either this load sees the reader gone and frees the caches now, or
        // the reader's load sees this store and frees them itself. Without it, a retired cache
        // waited for the next registration change or reader, and one holding a handler that
        // captures the object was never freed.
        _hasRetired.store(true, ordering: .sequentiallyConsistent)
        guard _readers.load(ordering: .sequentiallyConsistent) == 0 else {
            _retireLock.unlock()
            return
        }
        let retired = _retired
        _retired.removeAll()
        _hasRetired.store(false, ordering: .relaxed)
        _retireLock.unlock()
        for entry in retired { shard.deferRelease(entry.takeRetainedValue()) }
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
