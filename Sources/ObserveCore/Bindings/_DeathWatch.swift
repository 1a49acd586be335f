import Synchronization

/// Something told when a watched object is deinitialised.
internal protocol _DeathWatcher: AnyObject {
    /// Called once per watched object that dies, on the thread running its deinit, with no
    /// registry lock held.
    func watchedObjectDidDie(_ address: UInt)
}

/// Tells watchers that an observed object died (the registry calls `_objectDidDie` from the
/// object's registrar deinit, after removing its registrations).
///
/// Bindings use it: a binding dies with its target (whose registrations it does not name as
/// observer), and a combined binding also when *any* source dies, where a source's death
/// removes only that source's registration. Watchers are held weakly, and
/// a watch is removed when its watcher unwatches or goes away, so an address reused by a new
/// object never reaches an old watcher (the old object's death removed the entry first).
internal final class _DeathWatch: @unchecked Sendable {
    static let shared = _DeathWatch()

    private struct Entry {
        weak var watcher: (any _DeathWatcher)?
        let identity: ObjectIdentifier
    }

    private let _lock = _Lock()
    @exclusivity(unchecked) private var _entries: [UInt: [Entry]] = [:]
    /// Watched addresses; the registry's hook returns at once while it is zero.
    let count = Atomic<Int>(0)

    func watch(_ object: AnyObject, by watcher: any _DeathWatcher) {
        let address = UInt(bitPattern: ObjectIdentifier(object))
        _lock.withLock {
            // `count` counts addresses: one already present is counted, even when every watcher
            // left in it has died (a watcher whose deinit has not yet unwatched).
            guard var entries = _entries[address] else {
                count.add(1, ordering: .relaxed)
                _entries[address] = [Entry(watcher: watcher, identity: ObjectIdentifier(watcher))]
                return
            }
            entries.removeAll { $0.watcher == nil }
            entries.append(Entry(watcher: watcher, identity: ObjectIdentifier(watcher)))
            _entries[address] = entries
        }
    }

    func unwatch(_ address: UInt, by watcher: any _DeathWatcher) {
        let identity = ObjectIdentifier(watcher)
        _lock.withLock { _unwatchLocked(address, identity) }
    }

    /// `identity` instead of the watcher: callable from the watcher's deinit.
    func unwatch(_ address: UInt, identity: ObjectIdentifier) {
        _lock.withLock { _unwatchLocked(address, identity) }
    }

    private func _unwatchLocked(_ address: UInt, _ identity: ObjectIdentifier) {
        guard var entries = _entries[address] else { return }
        entries.removeAll { $0.identity == identity || $0.watcher == nil }
        if entries.isEmpty {
            _entries[address] = nil
            count.subtract(1, ordering: .relaxed)
        } else {
            _entries[address] = entries
        }
    }

    func objectDidDie(_ address: UInt) {
        let entries: [Entry] = _lock.withLock {
            guard let entries = _entries.removeValue(forKey: address) else { return [] }
            count.subtract(1, ordering: .relaxed)
            return entries
        }
        for entry in entries { entry.watcher?.watchedObjectDidDie(address) }
    }
}
