internal import CObserveCore

// Read sections: how a setter reads its object's `_DispatchCache` with no lock and no atomic
// read-modify-write, and when a replaced cache is freed. Part of the concurrency core (see
// `_Overview.swift`); the per-thread half lives in C (`include/cobs_read_sections.h`, whose
// header comment proves the ordering).
//
// Publication: the registrar holds its current cache as `Unmanaged` bits in one atomic word
// (`_cacheWord`, 0 = none), owning one retain. It is filled and invalidated only under the
// object's shard lock, so a published cache always matches the registry.
//
// Reading: `cobs_read_enter` writes the calling thread's own record (its depth, and "reading this
// registrar" in its stack of open sections), then the word is loaded and the cache used
// unretained until `cobs_read_leave`. Nothing shared is written: two threads setting the same
// object touch no common cache line but the word they read.
//
// Reclamation (one place: `_RetiredCaches`): an invalidation exchanges the word for 0 and asks
// `cobs_read_reclaimable` (a fence, then a scan of every thread's record) whether an open
// section can hold the old cache. If none reads that registrar, the cache is freed at once, by
// the invalidation itself (after the shard lock is dropped). Otherwise it joins one process-wide
// retired list, and each thread that may hold it is marked: its outermost `cobs_read_leave`
// returns true and it drains the list then, with no lock of the library held. So a retired cache
// lives until the outermost section of the last thread that could have loaded it ends (a thread
// nested deeper than the record's stack of 4 counts as reading everything).
//
// Only a drain frees caches retired earlier: an invalidation runs under a shard lock and perhaps
// a driver's lock (chains and dependent keys register while holding it), and an old cache may
// hold the last reference to a cancelled handler whose captures' deinit needs those locks.
//
// Handlers run inside the read section, so a handler that registers or removes observers
// retires the cache it is iterating rather than freeing it. Tests: `ReadSectionTests` (retire
// while sections are open on other threads; the drain at the end of the last one; a hammer of
// publish and retire) and `ConcurrencyTests`, under ThreadSanitizer in CI.

extension KeyValueRegistrar {
    /// This registrar's address: what its read sections and retired caches are tagged with.
    /// Taken without a retain: `_invalidateCache` runs under a shard lock while the object may be
    /// dying on another thread, and a retain/release pair there (`ObjectIdentifier(self)` in a
    /// debug build) could be the last release, running the registrar's deinit — which takes the
    /// same shard lock — on this thread (a self-deadlock `DeathRaceTests` caught).
    internal var _address: UInt { UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()) }

    /// Enters a read section and returns the current cache, building it when there is none.
    /// Pair with `_leaveReadSection()` on the same thread.
    @usableFromInline @inline(__always)
    internal func _enterReadSection(object address: UInt) -> Unmanaged<_DispatchCache> {
        cobs_read_enter(_address)
        let word = _cacheWord.load(ordering: .acquiring)
        if _fastPath(word != 0) {
            return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
        }
        return _fillCache(object: address)
    }

    /// A setter's delivery, opened in one call: enters a read section, finds the registrations of
    /// `keyID` in the cache (and its `_DispatchCache.uniform` entry) and raises the thread's
    /// notification depth. Nil (nothing left open)
    /// when nobody observes the key or the depth limit was hit (reported). Otherwise close it
    /// with `_closeDelivery()` on the same thread; until then the registrations stay alive.
    @usableFromInline
    internal func _openDelivery(object address: UInt, keyID: UInt32)
    -> (registrations: UnsafeMutablePointer<Unmanaged<_AnyRegistration>>, range: Range<Int>, uniform: UInt8)? {
        // Borrowed: the read section keeps the cache alive (a retain here would be an atomic RMW).
        let (registrations, delivery) = _enterReadSection(object: address)._withUnsafeGuaranteedRef {
            ($0.registrations, $0.delivery(of: keyID))
        }
        let (range, uniform) = delivery
        if _fastPath(!range.isEmpty) && _enterDelivery(keyID: keyID) { return (registrations, range, uniform) }
        _leaveReadSection()
        return nil
    }

    /// Closes what `_openDelivery` opened.
    @usableFromInline
    internal func _closeDelivery() {
        _ThreadDepth.leave()
        _leaveReadSection()
    }

    /// Leaves the innermost read section; at the end of the outermost one, frees the retired
    /// caches this thread was the last to hold.
    @usableFromInline @inline(__always)
    internal func _leaveReadSection() {
        if _slowPath(cobs_read_leave(_address)) { _RetiredCaches.shared.drain() }
    }

    /// `_leaveReadSection()` for a caller that holds a lock (an array's): it never drains, because
    /// releasing a retired cache can release a registration's handler and run any deinit its
    /// captures have, which must not find the caller's lock taken. The caller calls
    /// `_drainRetiredIfIdle()` once it has dropped the lock.
    internal func _leaveReadSectionUnderLock() {
        _ = cobs_read_leave(_address)
    }

    /// Frees retired caches this thread held, when it is in no read section: what
    /// `_leaveReadSectionUnderLock()` left undone. Two thread-local loads when there are none.
    internal func _drainRetiredIfIdle() {
        if _slowPath(cobs_read_should_drain()) { _RetiredCaches.shared.drain() }
    }

    /// Builds and publishes the cache from the registry (under the shard lock, which orders it
    /// against every invalidation). The caller is inside a read section.
    @usableFromInline @inline(never)
    internal func _fillCache(object address: UInt) -> Unmanaged<_DispatchCache> {
        _registry.withCacheFill(object: address) { build in
            let word = _cacheWord.load(ordering: .acquiring)
            if word != 0 { return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word)!) }
            let cache = Unmanaged.passRetained(build())
            _cacheWord.store(UInt(bitPattern: cache.toOpaque()), ordering: .releasing)
            return cache
        }
    }

    /// Drops the current cache (the object's registrations changed). Called under `shard`'s lock;
    /// the caches it frees are handed to the shard, to be released after the lock is dropped
    /// (a cache may hold the last reference to a removed registration and its handler).
    internal func _invalidateCache(deferringTo shard: _Shard) {
        // No cache is the common case of observe-then-cancel with no set between. Only holders of
        // the shard lock publish a cache (`_fillCache`) and this caller holds it, so a word read
        // as 0 stays 0: the exchange, a serialising read-modify-write, is skipped.
        if _cacheWord.load(ordering: .relaxed) == 0 { return }
        let old = _cacheWord.exchange(0, ordering: .sequentiallyConsistent)
        guard old != 0 else { return }
        let cache = Unmanaged<_DispatchCache>.fromOpaque(UnsafeRawPointer(bitPattern: old)!)
        if _RetiredCaches.shared.retire(cache, of: _address) { shard.deferRelease(cache.takeRetainedValue()) }
    }

    /// Releases the current cache. Called by deinit after the object's registrations were
    /// removed: no setter of the object can run any more, so no section reads it. (Its retired
    /// caches, if any, are in `_RetiredCaches`, freed by the drain of a thread that held them.)
    internal func _releaseCaches() {
        let word = _cacheWord.exchange(0, ordering: .acquiringAndReleasing)
        if word != 0 { Unmanaged<_DispatchCache>.fromOpaque(UnsafeRawPointer(bitPattern: word)!).release() }
    }
}

/// Every dispatch cache that was replaced but may still be read: the one list the reclaimer
/// works on (see the top of this file). Entries are (registrar address, cache, owning a retain).
internal final class _RetiredCaches: @unchecked Sendable {
    static let shared = _RetiredCaches()

    /// Taken after a shard lock (and any driver lock the registering caller holds), before the C
    /// core's reclaimer lock; never the other way.
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _registrars: [UInt] = []
    @exclusivity(unchecked) private var _caches: [Unmanaged<_DispatchCache>] = []
    @exclusivity(unchecked) private var _held: [Bool] = []

    /// Retires `cache`, the replaced cache of the registrar at `registrar`: true when no open
    /// section can hold it (the caller releases it once its locks allow); otherwise it is kept
    /// for the drain of the threads that may, and false is returned. Frees nothing retired
    /// earlier (see the top of this file: the caller may hold a shard's or a driver's lock).
    func retire(_ cache: Unmanaged<_DispatchCache>, of registrar: UInt) -> Bool {
        _lock.lock()
        var registrar = registrar, held = true
        cobs_read_reclaimable(&registrar, 1, &held)
        if held {
            _registrars.append(registrar)
            _caches.append(cache)
        }
        _lock.unlock()
        return !held
    }

    /// Frees the retired caches nobody can hold any more: run by a thread whose outermost read
    /// section ended after a reclaimer found it holding one, with no lock of the library held.
    func drain() {
        _lock.lock()
        cobs_read_begin_drain()
        let freed = _reclaim()
        _lock.unlock()
        for cache in freed { cache.release() }
    }

    /// Number of retired caches not yet freed (for tests).
    var count: Int { _lock.withLock { _caches.count } }

    /// Asks the C core which entries are still held; keeps those, returns the others. Under `_lock`.
    private func _reclaim() -> [Unmanaged<_DispatchCache>] {
        let count = _caches.count
        guard count > 0 else { return [] }
        if _held.count < count { _held.append(contentsOf: repeatElement(false, count: count - _held.count)) }
        _registrars.withUnsafeBufferPointer { registrars in
            _held.withUnsafeMutableBufferPointer { held in
                cobs_read_reclaimable(registrars.baseAddress, count, held.baseAddress)
            }
        }
        var kept = 0, freed: [Unmanaged<_DispatchCache>] = []
        for i in 0..<count {
            if _held[i] {
                _registrars[kept] = _registrars[i]
                _caches[kept] = _caches[i]
                kept += 1
            } else {
                freed.append(_caches[i])
            }
        }
        _registrars.removeLast(count - kept)
        _caches.removeLast(count - kept)
        return freed
    }
}
