/// Element-property observation for arrays, without one registration per element.
///
/// While an ``ObservableArray`` has observers with element key paths, its tracker keeps:
/// - a position index (C or Swift, per backend) from each element's address to the ring slots
///   holding it, so a change is reported with the element's indices without scanning;
/// - one membership per (element, occurrence) counted in the element's registrar, whose high
///   bits tell the element's setter that some tracked array wants that key.
/// An element's setter that finds its member bit set asks `_ElementTrackerDirectory` for the trackers
/// of that key (usually one or a few) and each looks the element up in its own index.
///
/// Lock order: an array's lock, then (inside it) a registry shard lock or a registrar's CAS
/// words. Nothing here takes an array lock while holding a shard lock.

/// The process-wide directory: key id -> trackers whose arrays observe that element key.
/// 32 buckets by `keyID % 32` (the same folding as the member bits), scanned linearly: a
/// program observes few element keys, and hashing cost more than the whole scan.
///
/// Each entry holds its key id beside the tracker, so a change finds its trackers from the
/// bucket copy alone: a tracker's own key list is written under its array's lock (a tracker can
/// gain keys while registered), which the directory does not hold — reading it here raced with
/// `add(keyIDs:)` replacing the list (a use-after-free seen in release stress runs).
internal final class _ElementTrackerDirectory: @unchecked Sendable {
    static let shared = _ElementTrackerDirectory()

    private struct Entry {
        let keyID: UInt32
        let tracker: _ElementTrackerBase
    }

    private let _lock = _Lock()
    @exclusivity(unchecked) private var _buckets = [ContiguousArray<Entry>](repeating: [], count: 32)

    func register(_ tracker: _ElementTrackerBase, keyID: UInt32) {
        _lock.withLock { _buckets[Int(keyID & 31)].append(Entry(keyID: keyID, tracker: tracker)) }
    }

    func unregister(_ tracker: _ElementTrackerBase, keyIDs: some Sequence<UInt32>) {
        _lock.withLock {
            for keyID in keyIDs {
                _buckets[Int(keyID & 31)].removeAll { $0.tracker === tracker && $0.keyID == keyID }
            }
        }
    }

    func elementDidChange(keyID: UInt32, element: AnyObject, values: _ElementValueStore) {
        // The copy keeps its trackers alive: each is then used without a retain of its own.
        let entries = _lock.withLock { _buckets[Int(keyID & 31)] }
        for index in entries.indices where entries[index].keyID == keyID {
            Unmanaged.passUnretained(entries[index].tracker)._withUnsafeGuaranteedRef { tracker in
                tracker.elementDidChange(keyID: keyID, element: element, values: values)
            }
        }
    }
}

/// The non-generic face of a tracker, for the directory.
@usableFromInline
internal class _ElementTrackerBase: @unchecked Sendable {
    /// Element key ids tracked, with their key paths (few: scanned linearly). Written and read
    /// only under the array's lock (the directory keeps its own copy of each key id).
    @exclusivity(unchecked) final var keys: [_ElementKey] = []

    final func tracks(_ keyID: UInt32) -> Bool { keys.contains { $0.id == keyID } }

    final func keyPath(for keyID: UInt32) -> AnyKeyPath? { keys.first { $0.id == keyID }?.keyPath }

    func elementDidChange(keyID: UInt32, element: AnyObject, values: _ElementValueStore) {}
}
