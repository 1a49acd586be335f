import Synchronization

/// Element-property observation for arrays, without one registration per element.
///
/// While an ``ObservableArray`` has observers with element key paths, its tracker keeps:
/// - a position index (C or Swift, per backend) from each element's address to the ring slots
///   holding it, so a change is reported with the element's indices without scanning;
/// - one membership per (element, occurrence) counted in the element's registrar, whose high
///   bits tell the element's setter that some tracked array wants that key.
/// An element's setter that finds its member bit set asks `_ElementTrackerDirectory` for the
/// arrays tracking that key (usually one or a few), and each array looks the element up in its
/// tracker's index, under its own lock.
///
/// Lock order: an array's lock, then (inside it) a registry shard lock or a registrar's CAS
/// words. Nothing here takes an array lock while holding a shard lock.

/// The process-wide directory: key id -> trackers whose arrays observe that element key.
/// 32 buckets by `keyID % 32` (the same folding as the member bits), scanned linearly: a
/// program observes few element keys, and hashing cost more than the whole scan.
///
/// Each entry holds its key id beside the tracker, so a change finds its trackers from the
/// bucket alone: a tracker's own key list is written under its array's lock (a tracker can
/// gain keys while registered), which the directory does not hold — reading it here raced with
/// `add(keyIDs:)` replacing the list (a use-after-free seen in release stress runs).
///
/// Lock order: this lock is taken with an array's lock held (`register`, `unregister`), and
/// `elementDidChange` takes no other lock under it (it only try-retains arrays).
internal final class _ElementTrackerDirectory: @unchecked Sendable {
    static let shared = _ElementTrackerDirectory()

    /// A registered (key, tracker) pair. The entry owns one retain of the tracker (taken by
    /// `register`, dropped by `unregister`), so the bucket holds only trivial values: reading it
    /// under the lock costs no reference counting, where an array of strong entries was retained
    /// and released around every read.
    private struct Entry {
        let keyID: UInt32
        let tracker: Unmanaged<_ElementTrackerBase>
    }

    /// One bucket's entries, in a buffer the directory manages itself (under `_lock`).
    private struct Bucket {
        var entries: UnsafeMutablePointer<Entry>? = nil
        var count = 0
        var capacity = 0
    }

    private let _lock = _Lock()
    /// 32 buckets by `keyID % 32`, allocated once: the directory lives as long as the process.
    private let _buckets: UnsafeMutablePointer<Bucket> = {
        let buckets = UnsafeMutablePointer<Bucket>.allocate(capacity: 32)
        buckets.initialize(repeating: Bucket(), count: 32)
        return buckets
    }()

    func register(_ tracker: _ElementTrackerBase, keyID: UInt32) {
        _lock.withLock {
            let bucket = _buckets + Int(keyID & 31)
            if bucket.pointee.count == bucket.pointee.capacity {
                let capacity = max(4, bucket.pointee.capacity * 2)
                let grown = UnsafeMutablePointer<Entry>.allocate(capacity: capacity)
                if let old = bucket.pointee.entries {
                    grown.moveInitialize(from: old, count: bucket.pointee.count)
                    old.deallocate()
                }
                bucket.pointee.entries = grown
                bucket.pointee.capacity = capacity
            }
            (bucket.pointee.entries.unsafelyUnwrapped + bucket.pointee.count)
                .initialize(to: Entry(keyID: keyID, tracker: .passRetained(tracker)))
            bucket.pointee.count += 1
        }
    }

    /// Forgets `tracker` for `keyIDs`. The caller holds a reference to the tracker, so dropping
    /// the entries' retains under the lock never runs its deinit here.
    func unregister(_ tracker: _ElementTrackerBase, keyIDs: some Sequence<UInt32>) {
        let address = Unmanaged.passUnretained(tracker).toOpaque()
        _lock.withLock {
            for keyID in keyIDs {
                let bucket = _buckets + Int(keyID & 31)
                guard let entries = bucket.pointee.entries else { continue }
                var kept = 0
                for index in 0..<bucket.pointee.count {
                    let entry = entries[index]
                    if entry.keyID == keyID && entry.tracker.toOpaque() == address {
                        entry.tracker.release()
                    } else {
                        entries[kept] = entry
                        kept += 1
                    }
                }
                bucket.pointee.count = kept
            }
        }
    }

    /// Tells the arrays tracking `keyID` that `element` changed that property.
    ///
    /// Under the lock each registered tracker is alive (its entry holds it), so each matching
    /// tracker loads its array there, strongly (a try-retain, which fails for an array already
    /// dying; nothing else runs under this lock), and its serial is read. The arrays are told
    /// after unlocking; each acts only if its tracker is still the one with that serial (checked
    /// under its lock, where it keeps its tracker alive): a serial, not the tracker's address,
    /// because a tracker freed meanwhile and a new one allocated at the same address must not
    /// pass. Copying the bucket instead, to keep its trackers alive past the lock, cost a retain
    /// and a release of the bucket per change (two of the ~ten serialising operations).
    ///
    /// Every array is loaded before the first is told, so an array whose last reference an
    /// earlier array's handler drops is still told of this change, and freed after it (with no
    /// lock held).
    func elementDidChange(keyID: UInt32, element: AnyObject, values: _ElementValueStore) {
        // Only the element's address is used (to find its indices): the object that changed may
        // be of a superclass of an array's `Element` when the key is declared there, and then is
        // not in that array, so it is never cast to `Element`.
        let address = UInt(bitPattern: ObjectIdentifier(element))
        var first: (any _ElementChangeReceiver)? = nil, firstSerial: UInt64 = 0
        var others: [(receiver: any _ElementChangeReceiver, serial: UInt64)] = []
        _lock.lock()
        let bucket = _buckets[Int(keyID & 31)]
        for index in 0..<bucket.count {
            let entry = bucket.entries.unsafelyUnwrapped[index]
            guard entry.keyID == keyID,
                  let receiver = entry.tracker._withUnsafeGuaranteedRef({ $0._loadReceiver() }) else { continue }
            let serial = entry.tracker._withUnsafeGuaranteedRef { $0.serial }
            if first == nil {
                first = receiver
                firstSerial = serial
            } else {
                others.append((receiver, serial))
            }
        }
        _lock.unlock()
        // Consumed, not bound: a binding copied the receiver (a retain and a release).
        switch consume first {
        case .some(let receiver):
            receiver._elementDidChange(trackerSerial: firstSerial, keyID: keyID, elementAddress: address, values: values)
        case .none:
            return
        }
        for (receiver, serial) in others {
            receiver._elementDidChange(trackerSerial: serial, keyID: keyID, elementAddress: address, values: values)
        }
    }
}

/// An array told of its elements' property changes (`ObservableArray`): how the directory
/// reaches a generic array from one of its trackers without knowing the element type.
internal protocol _ElementChangeReceiver: AnyObject {
    /// The element at `elementAddress` changed its property `keyID`. `trackerSerial` is the
    /// serial of the tracker that found this array, which may have been replaced since: the
    /// array acts only if its tracker still has that serial. Called with no lock held.
    func _elementDidChange(trackerSerial: UInt64, keyID: UInt32, elementAddress: UInt, values: _ElementValueStore)
}

/// The non-generic face of a tracker, for the directory.
@usableFromInline
internal class _ElementTrackerBase: @unchecked Sendable {
    /// Unique for the life of the process (never reused, unlike an address): how an array
    /// recognises, under its lock, that the tracker a change was found through is still its own.
    final let serial: UInt64 = _ElementTrackerBase._serials.add(1, ordering: .relaxed).newValue
    private static let _serials = Atomic<UInt64>(0)

    /// Element key ids tracked, with their key paths (few: scanned linearly). Written and read
    /// only under the array's lock (the directory keeps its own copy of each key id).
    @exclusivity(unchecked) final var keys: [_ElementKey] = []

    final func tracks(_ keyID: UInt32) -> Bool { keys.contains { $0.id == keyID } }

    final func keyPath(for keyID: UInt32) -> AnyKeyPath? { keys.first { $0.id == keyID }?.keyPath }

    /// The tracker's array, retained, unless it began to die. Called under the directory's lock.
    func _loadReceiver() -> (any _ElementChangeReceiver)? { nil }
}
