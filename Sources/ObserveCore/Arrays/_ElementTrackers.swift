/// Element-property observation for arrays, without one registration per element.
///
/// While an ``ObservableArray`` has observers with element key paths, its tracker keeps:
/// - a position index (C or Swift, per backend) from each element's address to the ring slots
///   holding it, so a change is reported with the element's indices without scanning;
/// - one membership per (element, occurrence) counted in the element's registrar, whose high
///   bits tell the element's setter that some tracked array wants that key.
/// An element's setter that finds its member bit set asks `_ElementTrackers` for the trackers
/// of that key (usually one or a few) and each looks the element up in its own index.
///
/// Lock order: an array's lock, then (inside it) a registry shard lock or a registrar's CAS
/// words. Nothing here takes an array lock while holding a shard lock.

/// The process-wide directory: key id -> trackers whose arrays observe that element key.
internal final class _ElementTrackers: @unchecked Sendable {
    static let shared = _ElementTrackers()
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _byKey: [UInt32: ContiguousArray<_ElementTrackerBase>] = [:]

    func register(_ tracker: _ElementTrackerBase, keyID: UInt32) {
        _lock.withLock { _byKey[keyID, default: []].append(tracker) }
    }

    func unregister(_ tracker: _ElementTrackerBase, keyIDs: some Sequence<UInt32>) {
        _lock.withLock {
            for keyID in keyIDs {
                _byKey[keyID]?.removeAll { $0 === tracker }
                if _byKey[keyID]?.isEmpty == true { _byKey[keyID] = nil }
            }
        }
    }

    func elementDidChange(keyID: UInt32, element: AnyObject, oldValue: Any, newValue: Any) {
        guard let trackers = _lock.withLock({ _byKey[keyID] }) else { return }
        for tracker in trackers {
            tracker.elementDidChange(keyID: keyID, element: element, oldValue: oldValue, newValue: newValue)
        }
    }
}

/// The non-generic face of a tracker, for the directory.
internal class _ElementTrackerBase: @unchecked Sendable {
    func elementDidChange(keyID: UInt32, element: AnyObject, oldValue: Any, newValue: Any) {}
}

