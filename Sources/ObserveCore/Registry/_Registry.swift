import Synchronization

/// Which registry implementation backs a registrar: a control for the tests and the benchmark,
/// which run both side by side (`@_spi(Testing) import ObserveCore`); users get the default.
@_spi(Testing)
public enum ObservationBackend: String, Sendable, CaseIterable {
    /// The C core (`CObserveCore`): an open-addressed table with backward-shift deletion.
    case c
    /// The same registry in plain Swift, kept as a reference for tests and benchmarks.
    case swift
}

/// A sharded registry of every registration of one backend.
///
/// Registrations are spread over `shardCount` shards by the observed object's address; each
/// shard has its own lock, table and groups, so threads working on unrelated objects rarely
/// meet on a lock. Everything that touches a shard's state happens under that shard's lock;
/// a notification reads the object's `_DispatchCache` (built under the lock, read without it)
/// and handlers are always called with no registry lock held.
@usableFromInline
internal final class _Registry: @unchecked Sendable {
    /// `withoutNotifying` scopes (`_ThreadSilence`) and transactions (`_Transaction`) open on any
    /// thread, one count for both, kept in every registry: a set reads it once, relaxed, through
    /// its registrar's registry (a global would cost a `swift_once` call per set), and while it is
    /// zero neither feature costs anything more. Relaxed is enough: a scope concerns only the
    /// thread that opened it, which sees its own increment in program order.
    @usableFromInline let openScopes = Atomic<Int>(0)
    /// The element-tracker directory (one per process; every registry refers to it), read
    /// through a registrar's registry so that an element change pays no `swift_once`.
    let elementTrackers = _ElementTrackerDirectory.shared

    static let c = _Registry(backend: .c)
    static let swift = _Registry(backend: .swift)
    /// `c` and `swift`, unretained: how a registration reaches its registry
    /// (`_AnyRegistration._registryReference`) without a retain and a release.
    static let cReference = Unmanaged.passUnretained(c)
    static let swiftReference = Unmanaged.passUnretained(swift)

    static func shared(_ backend: ObservationBackend) -> _Registry {
        switch backend {
        case .c: return c
        case .swift: return swift
        }
    }

    let backend: ObservationBackend
    private static let _shardBits = 6
    /// Immortal shards, held unmanaged so that picking one costs no retain/release on the
    /// notification path (registries live as long as the process; `deinit` never runs).
    private let _shards: UnsafeMutablePointer<Unmanaged<_Shard>>
    private static let _shardCount = 1 << _shardBits
    /// Registrations currently stored (not yet cancelled) in this registry: the shards' counts,
    /// each read under its lock. O(shards).
    var liveCount: Int {
        var total = 0
        for i in 0..<Self._shardCount {
            _shards[i]._withUnsafeGuaranteedRef { shard in total += shard.lock.withLock { shard.liveCount } }
        }
        return total
    }

    private init(backend: ObservationBackend) {
        self.backend = backend
        _shards = .allocate(capacity: Self._shardCount)
        for i in 0..<Self._shardCount {
            (_shards + i).initialize(to: Unmanaged.passRetained(_Shard(backend: backend)))
        }
    }

    @inline(__always)
    func shard(for object: UInt) -> Unmanaged<_Shard> {
        // Fibonacci hashing: aligned addresses have empty low bits, the top bits of the
        // product mix all of them.
        let index = Int(truncatingIfNeeded: (UInt64(object) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - Self._shardBits))
        return _shards[index]
    }

    /// Runs `body` on `object`'s shard with its lock held, then drops what `body` deferred
    /// (`_Shard.deferRelease`) after unlocking: a registration, a closure or a dispatch cache
    /// may hold the last reference to an object whose deinit re-enters the registry.
    @inline(__always)
    private func _withShard<R>(for object: UInt, _ body: (_Shard) -> R) -> R {
        shard(for: object)._withUnsafeGuaranteedRef { shard in
            shard.lock.lock()
            let result = body(shard)
            let (first, others) = shard.takeDeferredReleases()
            shard.lock.unlock()
            _ = consume first
            _ = consume others
            return result
        }
    }

    // MARK: Adding and removing

    /// Adds `registration`. Returns false (and adds nothing) when it names an observer that
    /// already has a registration for the same (object, key, context): the first one is kept.
    func add(_ registration: _AnyRegistration) -> Bool {
        _withShard(for: registration.objectAddress) { shard in _add(registration, to: shard) }
    }

    private func _add(_ registration: _AnyRegistration, to shard: _Shard) -> Bool {
        let added = shard.add(registration)
        if added {
            let bit = _KeyTable.bit(for: registration.keyID)
            registration.withRegistrar { registrar in
                registrar._invalidateCache(deferringTo: shard)
                registrar._observedMask.store(registrar._observedMask.load(ordering: .relaxed) | bit, ordering: .releasing)
                if registration.options.contains(.prior) {
                    registrar._priorMask.store(registrar._priorMask.load(ordering: .relaxed) | bit, ordering: .releasing)
                }
            }
        }
        return added
    }

    /// Removes one registration; a no-op if it is already gone.
    func remove(_ registration: _AnyRegistration) {
        let emptied: Bool = _withShard(for: registration.objectAddress) { shard in
            guard !registration.isCancelled else { return false }
            return registration.withRegistrar { registrar in
                registrar._invalidateCache(deferringTo: shard)
                let emptied = shard.removeFromGroup(registration)
                // The masks change only when a key lost its last group or a .prior registration left.
                if emptied || registration.options.contains(.prior) {
                    shard.refreshMasks(object: registration.objectAddress, registrar: registrar)
                }
                return emptied
            }
        }
        if emptied { _registrationsDidEmpty(object: registration.objectAddress, keyID: registration.keyID) }
        if registration.isCancelled { registration._didRemove() }
    }

    /// Removes the registrations on `object` (of key `keyID`, or all keys) that `matches`;
    /// returns how many.
    @discardableResult
    func remove(object: UInt, keyID: UInt32?, registrar: KeyValueRegistrar,
                where matches: (_AnyRegistration) -> Bool) -> Int {
        _remove(object: object, keyID: keyID, registrar: registrar) { shard in
            shard.registrations(object: object, keyID: keyID).filter(matches)
        }
    }

    /// Removes the registrations of the observer at `observer` on (object, key), with `context`
    /// or with any; returns how many. The candidates come from the group's observer index:
    /// O(what is removed), not O(the key's registrations).
    @discardableResult
    func remove(object: UInt, keyID: UInt32, observer: UInt, context: UInt?, registrar: KeyValueRegistrar) -> Int {
        _remove(object: object, keyID: keyID, registrar: registrar) { shard in
            shard.registrations(object: object, keyID: keyID, observer: observer, context: context)
        }
    }

    private func _remove(object: UInt, keyID: UInt32?, registrar: KeyValueRegistrar,
                         selecting select: (_Shard) -> [_AnyRegistration]) -> Int {
        let removed: [_AnyRegistration] = _withShard(for: object) { shard in
            var removed: [_AnyRegistration] = []
            for registration in select(shard) {
                shard.removeFromGroup(registration)
                removed.append(registration)
            }
            if !removed.isEmpty {
                registrar._invalidateCache(deferringTo: shard)
                shard.refreshMasks(object: object, registrar: registrar)
            }
            return removed
        }
        if !removed.isEmpty { _registrationsDidEmpty(object: object, keyID: keyID) }   // Registry/_RegistryHooks.swift
        for registration in removed { registration._didRemove() }
        return removed.count
    }

    /// Removes every registration on `object` (the object is going away).
    func removeObject(_ object: UInt) {
        _withShard(for: object) { shard in _ = shard.removeObject(object) }
        _objectDidDie(object)   // derived-key drivers, bindings (Registry/_RegistryHooks.swift)
    }

    // MARK: Notifying

    /// Runs `body` under `object`'s shard lock with a builder of the object's dispatch cache.
    func withCacheFill<R>(object: UInt, _ body: (() -> _DispatchCache) -> R) -> R {
        _withShard(for: object) { shard in body { shard.dispatchCache(object: object) } }
    }


    // MARK: Introspection

    /// The live registrations on `object` (optionally for one key), in registration order per group.
    func registrations(object: UInt, keyID: UInt32? = nil) -> [_AnyRegistration] {
        _withShard(for: object) { shard in shard.registrations(object: object, keyID: keyID) }
    }

    /// Every live registration of this registry.
    func allRegistrations() -> [_AnyRegistration] {
        var result: [_AnyRegistration] = []
        for i in 0..<Self._shardCount {
            _shards[i]._withUnsafeGuaranteedRef { shard in
                shard.lock.withLock { result.append(contentsOf: shard.allRegistrations()) }
            }
        }
        return result
    }

    /// Removes the registrations whose observer has died without anyone noticing yet.
    func purgeDeadObservers() {
        for registration in allRegistrations() where registration._observerDied {
            remove(registration)
        }
    }

    /// Traps if any shard's table or groups are inconsistent.
    func checkInvariants() {
        for i in 0..<Self._shardCount {
            _shards[i]._withUnsafeGuaranteedRef { shard in shard.lock.withLock { shard.checkInvariants() } }
        }
    }
}
