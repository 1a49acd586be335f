/// The internal interfaces between `ObservableArray` and the two implementations of its core
/// algorithms: the C core (`cobs_changes.h`, `cobs_positions.h`) and the pure-Swift twin. The
/// array picks one by its registrar's ``ObservationBackend``.

/// The kind of one run of an array change (raw values match `cobs_run_op`).
@usableFromInline
internal enum _RunOp: UInt32, Sendable {
    case remove = 1
    case insert = 2
    case move = 3
    case modify = 4
}

/// One run of an array change, as in `cobs_run` (see `include/cobs_changes.h` for the meaning
/// of each field and the canonical order).
@usableFromInline
internal struct _ArrayRun: Equatable, Sendable {
    @usableFromInline var op: _RunOp
    @usableFromInline var start: Int
    @usableFromInline var length: Int
    @usableFromInline var to: Int

    init(_ op: _RunOp, start: Int, length: Int, to: Int = 0) {
        self.op = op
        self.start = start
        self.length = length
        self.to = to
    }
}

/// Sorting, merging and validating runs (the encoder).
internal protocol _RunEncoding {
    /// Sorts into canonical order and merges touching runs; traps on malformed runs (a bug in
    /// the array, whose mutators are the only producers).
    static func normalize(_ runs: inout [_ArrayRun])
    /// Whether `runs` is a canonical, consistent change from `oldCount` to `newCount` elements.
    static func validate(_ runs: [_ArrayRun], oldCount: Int, newCount: Int) -> Bool
}

/// Composes the edits of a batch into one canonical change (see `cobs_batch` in the header).
internal protocol _BatchComposing: AnyObject {
    /// The array's current length inside the batch.
    var count: Int { get }
    func insert(at index: Int, count: Int)
    /// The original index of each removed element, nil for elements inserted during the batch.
    func remove(at index: Int, count: Int) -> [Int?]
    func move(from: Int, to: Int)
    /// The element now at index i was at index `permutation[i]` (a whole reorder; O(count)).
    func permute(_ permutation: [Int])
    func modify(at index: Int)
    func finish() -> [_ArrayRun]
}

/// Element address -> slots of the array's ring (see `cobs_positions.h`, including the ring
/// invariant every call relies on).
internal protocol _PositionIndexing: AnyObject {
    func insert(ring: _RingAddresses, mask: UInt32, element: UInt, slot: UInt32)
    /// `insert` for the elements of the `count` slots from `first` (mod `mask + 1`), in one call
    /// (see `cobs_positions_insert_run`).
    func insertRun(ring: _RingAddresses, mask: UInt32, first: UInt32, count: Int)
    func remove(ring: _RingAddresses, mask: UInt32, element: UInt, slot: UInt32)
    func move(mask: UInt32, element: UInt, from: UInt32, to: UInt32)
    /// The `count` elements that were in slots `first`, `first + 1`, … (mod `mask + 1`) are now
    /// `delta` slots further in `ring` (already moved). False when the index could not record it
    /// (the C index's shift log is full): then `fold()` and shift again, or the index no longer
    /// matches the ring and must be rebuilt before its next use (see `cobs_positions_shift`).
    func shift(ring: _RingAddresses, mask: UInt32, first: UInt32, count: Int, delta: Int) -> Bool
    /// Empties the shift log by bringing every entry up to date, without reading the ring (see
    /// `cobs_positions_fold`): after a refused `shift`, fold and shift again instead of
    /// rebuilding. False when it could not (no memory): the index is unchanged.
    func fold() -> Bool
    /// Replaces the contents of `slots` with the slots holding `element` (unordered).
    func lookup(ring: _RingAddresses, mask: UInt32, element: UInt, into slots: inout [UInt32])
    /// The slot of `element` when it is in the ring exactly once; nil when it is absent or
    /// present several times (then use `lookup`). Allocates nothing.
    func singleSlot(ring: _RingAddresses, mask: UInt32, element: UInt) -> UInt32?
    func rebuild(ring: _RingAddresses, mask: UInt32, head: UInt32, count: Int)
    func clear()
    var count: Int { get }
    /// Heap bytes held by the index (for the benchmark's memory figures).
    var bytes: Int { get }
    /// Traps with a description when an invariant is broken (for tests).
    func checkInvariants(ring: _RingAddresses, mask: UInt32)
}

extension _PositionIndexing {
    /// One `insert` per slot of the run (the Swift twin; the C index inserts the run in one call).
    func insertRun(ring: _RingAddresses, mask: UInt32, first: UInt32, count: Int) {
        for i in 0..<count {
            let slot = (first &+ UInt32(truncatingIfNeeded: i)) & mask
            insert(ring: ring, mask: mask, element: ring[Int(slot)], slot: slot)
        }
    }
}

