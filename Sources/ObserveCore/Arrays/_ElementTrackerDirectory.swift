internal import CObserveCore
import Synchronization

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
///
/// Each entry holds its key id beside the tracker, so a change finds its trackers from the
/// directory alone: a tracker's own key list is written under its array's lock (a tracker can
/// gain keys while registered), which the directory does not hold — reading it here raced with
/// `add(keyIDs:)` replacing the list (a use-after-free seen in release stress runs).
///
/// Readers take no lock: the entries are published as an immutable snapshot, trackers grouped by
/// element key (`_FrozenGroups`: a program observes few element keys, scanned linearly), in one
/// atomic word, read in a read section tagged with the directory's address, exactly as a setter
/// reads its object's dispatch cache (`Concurrency/_ReadSections.swift`). Writers — tracking
/// starting or stopping, under an array's lock — edit the master list under `_lock`, publish a
/// new snapshot and retire the old one to `_RetiredCaches`. (An element change used to take
/// `_lock` and copy a bucket: a compare-and-swap and a retain/release pair on every change.)
internal final class _ElementTrackerDirectory: @unchecked Sendable {
    static let shared = _ElementTrackerDirectory()

    private struct Entry {
        let keyID: UInt32
        let tracker: _ElementTrackerBase
    }

    private typealias _Snapshot = _FrozenGroups<_ElementTrackerBase>

    private let _lock = _Lock()
    /// The master list, in registration order, under `_lock`; `_snapshotWord` publishes it
    /// frozen (`Unmanaged<_Snapshot>` bits, 0 before the first registration), owning one retain.
    @exclusivity(unchecked) private var _entries: [Entry] = []
    private let _snapshotWord = Atomic<UInt>(0)

    /// The tag of the directory's read sections (taken without a retain; the directory is immortal).
    private var _address: UInt { UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()) }

    func register(_ tracker: _ElementTrackerBase, keyID: UInt32) {
        _edit { $0.append(Entry(keyID: keyID, tracker: tracker)) }
    }

    func unregister(_ tracker: _ElementTrackerBase, keyIDs: some Sequence<UInt32>) {
        let keyIDs = Set(keyIDs)
        _edit { entries in entries.removeAll { $0.tracker === tracker && keyIDs.contains($0.keyID) } }
    }

    /// Edits the master list and publishes it; the replaced snapshot is retired, and
    /// released at once unless a reader may hold it. Trackers hold no lock in their deinit, so
    /// releasing one here (perhaps under the caller's array lock) is safe.
    private func _edit(_ body: (inout [Entry]) -> Void) {
        _lock.lock()
        body(&_entries)
        // Grouped by key, keys and trackers in registration order.
        var groups: [(UInt32, ContiguousArray<_ElementTrackerBase>)] = []
        for entry in _entries {
            if let g = groups.firstIndex(where: { $0.0 == entry.keyID }) {
                groups[g].1.append(entry.tracker)
            } else {
                groups.append((entry.keyID, [entry.tracker]))
            }
        }
        let snapshot = Unmanaged.passRetained(_Snapshot(groups: groups))
        let old = _snapshotWord.exchange(UInt(bitPattern: snapshot.toOpaque()), ordering: .sequentiallyConsistent)
        _lock.unlock()
        guard old != 0 else { return }
        let retired = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: old)!)
        if _RetiredCaches.shared.retire(retired, of: _address) { retired.release() }
    }

    func elementDidChange(keyID: UInt32, element: AnyObject, values: _ElementValueStore) {
        let tag = _address
        cobs_read_enter(tag)
        let word = _snapshotWord.load(ordering: .acquiring)
        if word != 0 {
            // Inside the read section the snapshot, and so each tracker it retains, stays alive:
            // both are used without a retain.
            Unmanaged<_Snapshot>.fromOpaque(UnsafeRawPointer(bitPattern: word)!)._withUnsafeGuaranteedRef { snapshot in
                for i in snapshot.range(of: keyID) {
                    snapshot.items[i]._withUnsafeGuaranteedRef { tracker in
                        tracker.elementDidChange(keyID: keyID, element: element, values: values)
                    }
                }
            }
        }
        if _slowPath(cobs_read_leave(tag)) { _RetiredCaches.shared.drain() }
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
