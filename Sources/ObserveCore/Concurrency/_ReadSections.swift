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
// Reading: `cobs_read_enter` writes the calling thread's own record ("depth 1, reading this
// registrar"), then the word is loaded and the cache used unretained until `cobs_read_leave`.
// Nothing shared is written: two threads setting the same object touch no common cache line but
// the word they read.
//
// Reclamation (one place: `_RetiredCaches`): an invalidation exchanges the word for 0 and retires
// the old cache, tagged with its registrar, into one process-wide list. `cobs_read_reclaimable`
// (a membarrier, then a scan of every thread's record) says which retired caches no open section
// can hold; those are freed at once — when no other thread reads the object, that is the
// invalidation itself. Each thread that may still hold one is marked, and its outermost
// `cobs_read_leave` returns true: it drains the list then. So a retired cache lives until the end
// of the last section that could have loaded it, never longer.
//
// Handlers run inside the read section, so a handler that registers or removes observers
// retires the cache it is iterating rather than freeing it. Tests: `ReadSectionTests` (retire
// while sections are open on other threads; the drain at the end of the last one) and
// `ConcurrencyTests` (set/observe/cancel from several threads), under ThreadSanitizer in CI.

extension KeyValueRegistrar {
    /// Enters a read section and returns the current cache, building it when there is none.
    /// Pair with `_leaveReadSection()` on the same thread.
    @usableFromInline @inline(__always)
    internal func _enterReadSection(object address: UInt) -> Unmanaged<_DispatchCache> {
        cobs_read_enter(UInt(bitPattern: ObjectIdentifier(self)))
        let word = _cacheWord.load(ordering: .acquiring)
        if _fastPath(word != 0) {
            return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
        }
        return _fillCache(object: address)
    }

    /// A setter's delivery, opened in one call: enters a read section, finds the registrations of
    /// `keyID` in the cache and raises the thread's notification depth. Nil (nothing left open)
    /// when nobody observes the key or the depth limit was hit (reported). Otherwise close it
    /// with `_closeDelivery()` on the same thread; until then the registrations stay alive.
    @usableFromInline
    internal func _openDelivery(object address: UInt, keyID: UInt32)
    -> (registrations: UnsafeMutablePointer<Unmanaged<_AnyRegistration>>, range: Range<Int>)? {
        // Borrowed: the read section keeps the cache alive (a retain here would be an atomic RMW).
        let (registrations, range) = _enterReadSection(object: address)._withUnsafeGuaranteedRef {
            ($0.registrations, $0.range(of: keyID))
        }
        if _fastPath(!range.isEmpty) {
            let depth = cobs_thread_depth_enter()
            if _fastPath(depth <= ObservationRuntime._maximumDepth.load(ordering: .relaxed)) {
                return (registrations, range)
            }
            _ = cobs_thread_depth_leave()
            _reportRunawayRecursion(keyID: keyID, depth: depth)
        }
        _leaveReadSection()
        return nil
    }

    /// Closes what `_openDelivery` opened.
    @usableFromInline
    internal func _closeDelivery() {
        _ = cobs_thread_depth_leave()
        _leaveReadSection()
    }

    /// Leaves the innermost read section; at the end of the outermost one, frees the retired
    /// caches this thread was the last to hold.
    @usableFromInline @inline(__always)
    internal func _leaveReadSection() {
        if _slowPath(cobs_read_leave()) { _RetiredCaches.shared.drain() }
    }

    /// `_leaveReadSection()` for a caller that holds a lock (an array's): it never drains, because
    /// releasing a retired cache can release a registration's handler and run any deinit its
    /// captures have, which must not find the caller's lock taken. The caller calls
    /// `_drainRetiredIfIdle()` once it has dropped the lock.
    internal func _leaveReadSectionUnderLock() {
        _ = cobs_read_leave()
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
        let old = _cacheWord.exchange(0, ordering: .sequentiallyConsistent)
        guard old != 0 else { return }
        _RetiredCaches.shared.retire(Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: old)!),
                                     of: UInt(bitPattern: ObjectIdentifier(self)), deferringTo: shard)
    }

    /// Releases the current cache. Called by deinit after the object's registrations were
    /// removed: no setter of the object can run any more, so no section reads it. (Its retired
    /// caches, if any, are in `_RetiredCaches`, freed by the thread that last held them.)
    internal func _releaseCaches() {
        let word = _cacheWord.exchange(0, ordering: .acquiringAndReleasing)
        if word != 0 { Unmanaged<_DispatchCache>.fromOpaque(UnsafeRawPointer(bitPattern: word)!).release() }
    }
}

/// Every dispatch cache that was replaced but may still be read: the one list the reclaimer
/// works on (see the top of this file). Entries are (registrar address, cache, owning a retain).
internal final class _RetiredCaches: @unchecked Sendable {
    static let shared = _RetiredCaches()

    /// Taken after a shard lock, before the C core's records lock; never the other way.
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _registrars: [UInt] = []
    @exclusivity(unchecked) private var _caches: [Unmanaged<_DispatchCache>] = []
    @exclusivity(unchecked) private var _held: [Bool] = []

    /// Retires `cache`, the replaced cache of the registrar at `registrar`, and frees every
    /// retired cache nobody can hold any more — through `shard`, after its lock is dropped.
    /// Called under `shard`'s lock.
    func retire(_ cache: Unmanaged<_DispatchCache>, of registrar: UInt, deferringTo shard: _Shard) {
        _lock.lock()
        _registrars.append(registrar)
        _caches.append(cache)
        _reclaim { shard.deferRelease($0.takeRetainedValue()) }
        _lock.unlock()
    }

    /// Frees the retired caches nobody can hold any more: run by a thread whose outermost read
    /// section ended after a reclaimer found it holding one. Takes no other lock of the library.
    func drain() {
        _lock.lock()
        cobs_read_begin_drain()
        var freed: [Unmanaged<_DispatchCache>] = []
        _reclaim { freed.append($0) }
        _lock.unlock()
        for cache in freed { cache.release() }
    }

    /// Number of retired caches not yet freed (for tests).
    var count: Int { _lock.withLock { _caches.count } }

    /// Asks the C core which entries are still held, hands the others to `free`, keeps the rest.
    /// Under `_lock`.
    private func _reclaim(_ free: (Unmanaged<_DispatchCache>) -> Void) {
        let count = _caches.count
        guard count > 0 else { return }
        if _held.count < count { _held.append(contentsOf: repeatElement(false, count: count - _held.count)) }
        _registrars.withUnsafeBufferPointer { registrars in
            _held.withUnsafeMutableBufferPointer { held in
                cobs_read_reclaimable(registrars.baseAddress, count, held.baseAddress)
            }
        }
        var kept = 0
        for i in 0..<count {
            if _held[i] {
                _registrars[kept] = _registrars[i]
                _caches[kept] = _caches[i]
                kept += 1
            } else {
                free(_caches[i])
            }
        }
        _registrars.removeLast(count - kept)
        _caches.removeLast(count - kept)
    }
}
