// The mutation surface of ObservableArray. Every public mutator follows one shape:
//   lock -> make storage unique -> mutate ring (+ element tracker) -> record the change
//   (into the open batch, or as a pending notification if anyone observes) -> unlock -> deliver.

/// State of an open `performBatchUpdates`.
@usableFromInline
internal final class _BatchState<Element> {
    let composer: any _BatchComposing
    let oldCount: Int
    var depth = 1
    /// Removed original elements (elements inserted in the batch are not kept): the one that was
    /// at original index `i` is `_removedValues[_removedSlot[i]!]`. An index map and the array's
    /// own storage type rather than a `[Int: Element]`: this code runs unspecialized, and every
    /// dictionary or array operation on `Element` looked up generic metadata (a third of a
    /// 100-edit batch's instructions, callgrind); `[Int: Int]` is concrete, and appending to a
    /// `_RingBuffer` needs only `Element`'s metadata.
    // Used only under the array's lock: dynamic exclusivity checks would only cost time.
    @exclusivity(unchecked) private var _removedSlot: [Int: Int] = [:]
    private let _removedValues = _RingBuffer<Element>()

    init(composer: any _BatchComposing, oldCount: Int) {
        self.composer = composer
        self.oldCount = oldCount
    }

    /// Keeps `value`, the element that was at original index `origin`.
    func keepRemoved(_ value: Element, origin: Int) {
        let values = _removedValues
        if values.count == values.capacity { values.grow(to: values.count + 1) }
        (values.base + values.slot(values.count)).initialize(to: value)
        _removedSlot[origin] = values.count
        values.count += 1
    }

    /// The elements of the original indices the remove runs of `runs` name, in run order.
    func removedValues(in runs: [_ArrayRun]) -> ContiguousArray<Element> {
        let total = runs.reduce(0) { $1.op == .remove ? $0 + $1.length : $0 }
        // Not through the initializer below when empty: with capacity 0 it stores the count into
        // the stdlib's shared empty-array singleton, a write ThreadSanitizer reports as a race
        // between two threads ending empty batches.
        if total == 0 { return [] }
        return ContiguousArray(unsafeUninitializedCapacity: total) { buffer, initialized in
            for run in runs where run.op == .remove {
                for index in run.start..<(run.start + run.length) {
                    guard let slot = _removedSlot[index] else {
                        _misuse("ObserveCore internal error: batch removal of original index \(index) not kept")
                    }
                    (buffer.baseAddress.unsafelyUnwrapped + initialized).initialize(to: _removedValues[slot])
                    initialized += 1
                }
            }
        }
    }
}

extension ObservableArray {
    // MARK: Ring primitives (lock held, storage unique)
    //
    // Each holds the ring `unowned(unsafe)`: `_storage` keeps it alive while the lock is held and
    // nothing here replaces it (growth and permutation work in place), and a strong local cost a
    // retain/release pair (two atomic operations) per primitive call (callgrind).

    /// Up to this many elements moved by one insertion or removal, the position index is
    /// updated entry by entry (one hash probe each); beyond it the move is recorded as one block
    /// in the index's shift log (O(1), see `cobs_positions_shift`); when that log is full it is
    /// folded into the entries, or the index is marked stale and rebuilt from the ring on next
    /// use (`_ElementTracker.shifted` decides) — at most one O(count) pass per 32 to 128 bulk
    /// moves (more for larger arrays), so element changes interleaved with middle edits do not
    /// pay a re-index each, and a batch of edits still costs only its memmoves.
    internal static var _perElementIndexLimit: Int { 64 }

    /// Moves the `count` elements at logical `from` to logical `to` (shorter-side shift), in
    /// bulk, keeping the element tracker's index right (entry by entry, or as one block move).
    private func _shift(from: Int, to: Int, count: Int) {
        guard count > 0 else { return }
        if count <= Self._perElementIndexLimit {
            var moved = false
            _withTracker { tracker, ring in
                guard tracker.isIndexed else { return }
                // Few elements: move them one by one (toward lower indices front first, otherwise
                // back first, so none is overwritten) and tell the index each new slot.
                let step = to < from ? 1 : -1
                var i = to < from ? 0 : count - 1
                for _ in 0..<count {
                    let source = ring.slot(from + i), destination = ring.slot(to + i)
                    ring.moveSlot(from: source, to: destination)
                    tracker.move(from: source, to: destination, ring: ring)
                    i += step
                }
                moved = true
            }
            if moved { return }
        }
        unowned(unsafe) let ring = _storage
        let firstSlot = ring.slot(from)
        ring.moveLogical(from: from, to: to, count: count)
        _withTracker { $0.shifted(firstSlot: firstSlot, count: count, delta: to - from, ring: $1) }
    }

    /// Calls `body` with the element tracker, if there is one, and the ring, both borrowed
    /// (lock held: `_tracker` and `_storage` keep them alive). A plain `_tracker?.enter(…, ring:)`
    /// retained and released both around the call: four atomic operations per tracked mutation.
    @inline(__always)
    private func _withTracker(_ body: (_AnyElementTracker<Element>, _RingBuffer<Element>) -> Void) {
        guard _tracker != nil else { return }
        Unmanaged.passUnretained(_tracker.unsafelyUnwrapped)._withUnsafeGuaranteedRef { tracker in
            Unmanaged.passUnretained(_storage)._withUnsafeGuaranteedRef { ring in body(tracker, ring) }
        }
    }

    /// Opens a gap of `k` uninitialised slots at logical `index` (the count grows by `k`),
    /// moving the shorter side.
    private func _openGap(at index: Int, count k: Int) {
        _ensureCapacity(k)
        Unmanaged.passUnretained(_storage)._withUnsafeGuaranteedRef {
            $0.openGap(at: index, count: k) { _shift(from: $0, to: $1, count: $2) }
        }
    }

    /// Inserts one element at logical `index` (what `_insertElements` does, without a generic
    /// collection: its metadata was looked up on every call).
    internal func _insertElement(_ element: Element, at index: Int) {
        _openGap(at: index, count: 1)
        unowned(unsafe) let ring = _storage
        let slot = ring.slot(index)
        (ring.base + slot).initialize(to: element)
        _withTracker { $0.enter(slot: slot, ring: $1) }
    }

    /// Inserts `elements` at logical `index`, moving the shorter side.
    internal func _insertElements<C: Collection>(_ elements: C, at index: Int) where C.Element == Element {
        let k = elements.count
        guard k > 0 else { return }
        _openGap(at: index, count: k)
        unowned(unsafe) let ring = _storage
        // At most two bulk copies: up to the end of the allocation, then from its start. A tracker
        // copies a contiguous run itself: it may overlap the copy with its passes (`copyIn`).
        let copied: Void? = elements.withContiguousStorageIfAvailable { source in
            if _tracker == nil { ring.initialize(at: index, from: source) }
            else { _withTracker { $0.copyIn(source, at: index, ring: $1) } }
        }
        if copied == nil {
            var i = index
            for element in elements {
                (ring.base + ring.slot(i)).initialize(to: element)
                i += 1
            }
            _withTracker { $0.enter(indices: index..<(index + k), ring: $1) }
        }
    }

    /// Up to this many removed objects nobody records are kept for release one by one (no
    /// allocation); more are moved out into one array.
    internal static var _releasedOneByOneLimit: Int { 8 }

    /// Removes the elements in `range`, moving the shorter side; returns them when `capture`.
    @discardableResult
    internal func _removeElements(_ range: Range<Int>, capture: Bool) -> ContiguousArray<Element> {
        unowned(unsafe) let ring = _storage
        let k = range.count
        var removed = ContiguousArray<Element>()
        guard k > 0 else { return removed }
        _withTracker { $0.leave(indices: range, ring: $1) }
        // Uncaptured elements holding references are released after the lock as well (their
        // deinit may use the array, `_keepUntilUnlocked`): a few objects one by one, as
        // themselves; more, or other values, collected like captured ones (moved out in at most
        // two runs: appending them one by one ran unspecialized, a metadata lookup per element)
        // and handed over in one box. Values with no references need nothing.
        let trivial = !capture && _isPOD(Element.self)
        let collect = capture || (!trivial && (k > Self._releasedOneByOneLimit || !_isOneReference(Element.self)))
        if collect {
            removed = ring.movedOut(from: range.lowerBound, count: k)
        } else if !trivial {
            for i in range { _keepUntilUnlocked((ring.base + ring.slot(i)).move()) }
        }
        Unmanaged.passUnretained(_storage)._withUnsafeGuaranteedRef {
            $0.closeGap(range) { _shift(from: $0, to: $1, count: $2) }
        }
        if !capture {
            _keepUntilUnlocked(removed)
            return []
        }
        return removed
    }

    /// Moves the element at logical `from` to logical `to`, shifting the elements between by one
    /// place toward `from`; the element tracker's index follows every element that moved.
    internal func _moveElement(from: Int, to: Int) {
        unowned(unsafe) let ring = _storage
        let fromSlot = ring.slot(from)
        // Its index entry goes first: while the others shift, two entries could otherwise name
        // the same slot, and the index finds an entry to move by element and slot.
        _withTracker { $0.lift(slot: fromSlot, ring: $1) }
        let element = (ring.base + fromSlot).move()
        if to > from {
            _shift(from: from + 1, to: from, count: to - from)
        } else {
            _shift(from: to, to: to + 1, count: from - to)
        }
        let toSlot = ring.slot(to)
        (ring.base + toSlot).initialize(to: element)
        _withTracker { $0.place(slot: toSlot, ring: $1) }
    }

    /// Replaces the element at `index`; returns the old one.
    internal func _replaceElement(at index: Int, with element: Element) -> Element {
        unowned(unsafe) let ring = _storage
        let slot = ring.slot(index)
        _withTracker { $0.leave(slot: slot, ring: $1) }
        let old = (ring.base + slot).move()
        (ring.base + slot).initialize(to: element)
        _withTracker { $0.enter(slot: slot, ring: $1) }
        return old
    }

    /// Reorders the contents so that new[i] = old[permutation[i]].
    internal func _permute(_ permutation: [Int]) {
        _storage.permute(permutation)
        _tracker?.rebuild(_storage)
    }

    // MARK: Recording

    /// Whether this mutation must be recorded at all (someone observes, or a batch is open).
    @inline(__always)
    internal var _mustRecord: Bool {
        _batch != nil || kvoRegistrar._observedMask.load(ordering: .relaxed) != 0
    }

    /// Records a finished mutation outside a batch: the pending notification, or nil when
    /// nobody observes. Lock held.
    internal func _pending(_ kind: ArrayChange<Element>.Kind, runs: [_ArrayRun], removed: _RemovedValues<Element>,
                           oldCount: Int) -> _PendingArrayNotification? {
        guard !runs.isEmpty else { return nil }
        return _pending(kind, removed: removed, oldCount: oldCount) { $0 = runs }
    }

    /// `_pending` of a change of one run: written into the recycled change's own run list, so
    /// that an observed single-element mutation allocates no array for it.
    internal func _pending(_ kind: ArrayChange<Element>.Kind, run: _ArrayRun, removed: _RemovedValues<Element>,
                           oldCount: Int) -> _PendingArrayNotification? {
        _pending(kind, removed: removed, oldCount: oldCount) { $0.append(run) }
    }

    /// `_pending` whose runs `setRuns` writes into the recycled change's run list (which it finds
    /// empty), so that a change of a few runs allocates no array for them.
    internal func _pending(_ kind: ArrayChange<Element>.Kind, removed: _RemovedValues<Element>, oldCount: Int,
                           runs setRuns: (inout [_ArrayRun]) -> Void) -> _PendingArrayNotification? {
        guard let (cache, range) = _observers() else { return nil }
        let box = _takeChangeBox(structural: true)
        Unmanaged.passUnretained(box)._withUnsafeGuaranteedRef {
            let box = unsafeDowncast($0, to: _ArrayChangeBox<Element>.self)
            box.fillStructural(kind: kind, removed: removed, snapshot: _storage, oldCount: oldCount, newCount: _storage.count)
            setRuns(&box.runs)
        }
        return _PendingArrayNotification(cache: cache, range: range, box: box)
    }

    /// Batch bookkeeping for a removal of `values` at current `index`.
    internal func _batchRemoved(at index: Int, _ values: ContiguousArray<Element>) {
        guard let batch = _batch, !values.isEmpty else { return }
        let origins = batch.composer.remove(at: index, count: values.count)
        for (i, origin) in origins.enumerated() {
            if let origin { batch.keepRemoved(values[i], origin: origin) }
        }
    }

    // MARK: Running a mutation

    /// Runs `body` under the lock with unique storage; delivers what it returns afterwards.
    @inline(__always)
    internal func _mutate(_ body: () -> _PendingArrayNotification?) {
        _joinTransaction()
        _lock.lock()
        _makeUnique()
        let pending = body()
        _unlockReleasing()
        _deliverUnlocked(consume pending)
    }

    /// Delivers what a mutation recorded, after the lock was dropped; when it recorded nothing,
    /// frees the dispatch caches that a read section left under the lock had to leave retired
    /// (`_leaveReadSectionUnderLock`; one load when there are none).
    @inline(__always)
    internal func _deliverUnlocked(_ pending: consuming _PendingArrayNotification?) {
        switch consume pending {
        case .some(let pending): _deliver(pending)
        case .none: kvoRegistrar._drainRetiredIfIdle()
        }
    }

    /// For mutations decided by user code (predicates, comparators), which must not run under
    /// the lock: `decide` runs on a snapshot; `apply` runs under the lock only if the array did
    /// not change meanwhile (an intermediate mutation would have copied the shared storage, so
    /// identity tells), otherwise the whole thing is retried on a fresh snapshot.
    internal func _mutate<Decision>(deciding decide: (_RingBuffer<Element>) throws -> Decision,
                                    apply: (Decision) -> _PendingArrayNotification?) rethrows {
        _joinTransaction()
        while true {
            var snapshot: _RingBuffer<Element>? = _snapshot()
            let decision = try decide(snapshot!)
            _lock.lock()
            if _storage === snapshot {
                snapshot = nil   // drop the extra reference so the storage is unique again
                _makeUnique()
                let pending = apply(decision)
                _unlockReleasing()
                _deliverUnlocked(consume pending)
                return
            }
            _lock.unlock()
        }
    }
}

// MARK: - Public mutators

extension ObservableArray {
    /// Adds `element` at the end. Reports ``ArrayChange/Kind/append``.
    /// - Complexity: O(1) amortised.
    @inlinable @inline(__always)   // (with the biased lock, too big for the inliner's own choice)
    public func append(_ element: Element) {
        _lock.lock()
        if _fastPath(_isQuietAndUnique && _storage.count < _storage.capacity) {
            unowned(unsafe) let ring = _storage   // _storage keeps it alive while the lock is held
            (ring.base + ring.slot(ring.count)).initialize(to: element)
            ring.count &+= 1
            _lock.unlock(movingOnly: Element.self)
            return
        }
        _lock.unlock(movingOnly: Element.self)
        _append(element)
    }

    /// `append` when someone observes (or the storage is shared or full).
    @usableFromInline
    internal func _append(_ element: Element) {
        _mutate {
            let old = _storage.count
            _insertElement(element, at: old)
            if let batch = _batch { batch.composer.insert(at: old, count: 1); return nil }
            guard _mustRecord else { return nil }
            return _pending(.append, run: _ArrayRun(.insert, start: old, length: 1), removed: .none, oldCount: old)
        }
    }

    /// Adds `elements` at the end: one ``ArrayChange/Kind/append`` change, one run however many.
    /// - Complexity: O(`elements.count`) amortised.
    @inlinable
    public func append<S: Sequence>(contentsOf elements: S) where S.Element == Element {
        let new = ContiguousArray(elements)
        guard !new.isEmpty else { return }
        _lock.lock()
        if _fastPath(_isQuietAndUnique && _storage.capacity &- _storage.count >= new.count) {
            // Nobody observing and room for all: copied in after the last element, in at most two
            // runs (up to the end of the allocation, then from its start), as `Array` copies. The
            // storage is borrowed (see `_replaceIfQuiet`).
            Unmanaged.passUnretained(_storage)._withUnsafeGuaranteedRef { ring in
                new.withUnsafeBufferPointer { ring.initialize(at: ring.count, from: $0) }
                ring.count &+= new.count
            }
            _lock.unlock(movingOnly: Element.self)
            return
        }
        _lock.unlock(movingOnly: Element.self)
        _append(contentsOf: new)
    }

    /// `append(contentsOf:)` when someone observes (or the storage is shared or too small).
    @usableFromInline
    internal func _append(contentsOf new: ContiguousArray<Element>) {
        _mutate {
            let old = _storage.count
            _insertElements(new, at: old)
            if let batch = _batch { batch.composer.insert(at: old, count: new.count); return nil }
            guard _mustRecord else { return nil }
            return _pending(.append, run: _ArrayRun(.insert, start: old, length: new.count), removed: .none, oldCount: old)
        }
    }

    /// Inserts `element` at `index` (0...count). Reports ``ArrayChange/Kind/insert``.
    /// - Complexity: O(min(index, count - index)); O(1) at either end.
    @inlinable @inline(__always)   // (with the biased lock, too big for the inliner's own choice)
    public func insert(_ element: Element, at index: Int) {
        _lock.lock()
        if _fastPath(_isQuietAndUnique && _storage.count < _storage.capacity) {
            unowned(unsafe) let ring = _storage   // _storage keeps it alive while the lock is held
            if _slowPath(index < 0 || index > ring.count) { _indexOutOfRange("insert", index, ring.count) }
            ring.openGap(at: index, count: 1) { ring.moveLogical(from: $0, to: $1, count: $2) }
            (ring.base + ring.slot(index)).initialize(to: element)
            _lock.unlock(movingOnly: Element.self)
            return
        }
        _lock.unlock(movingOnly: Element.self)
        _insert(element, at: index)
    }

    /// `insert(_:at:)` when someone observes (or the storage is shared or full).
    @usableFromInline
    internal func _insert(_ element: Element, at index: Int) {
        _mutate {
            let old = _storage.count
            if index < 0 || index > old { _indexOutOfRange("insert", index, old) }
            _insertElement(element, at: index)
            if let batch = _batch { batch.composer.insert(at: index, count: 1); return nil }
            guard _mustRecord else { return nil }
            return _pending(.insert, run: _ArrayRun(.insert, start: index, length: 1), removed: .none, oldCount: old)
        }
    }

    /// Inserts `elements` at `index` (0...count). Reports ``ArrayChange/Kind/insert``.
    /// - Complexity: O(`elements.count` + min(index, count - index)).
    @inlinable
    public func insert<C: Collection>(contentsOf elements: C, at index: Int) where C.Element == Element {
        let new = ContiguousArray(elements)
        if _replaceIfQuiet(index..<index, with: new) { return }
        _insert(contentsOf: new, at: index)
    }

    /// `insert(contentsOf:at:)` when someone observes (or the storage is shared or too small, or
    /// the index is out of range).
    @usableFromInline
    internal func _insert(contentsOf new: ContiguousArray<Element>, at index: Int) {
        _mutate {
            let old = _storage.count
            if index < 0 || index > old { _indexOutOfRange("insert(contentsOf:at:)", index, old) }
            guard !new.isEmpty else { return nil }
            _insertElements(new, at: index)
            if let batch = _batch { batch.composer.insert(at: index, count: new.count); return nil }
            guard _mustRecord else { return nil }
            return _pending(.insert, run: _ArrayRun(.insert, start: index, length: new.count), removed: .none, oldCount: old)
        }
    }

    /// Removes and returns the element at `index`. Reports ``ArrayChange/Kind/remove``.
    /// - Complexity: O(min(index, count - index)); O(1) at either end.
    @discardableResult
    @inlinable @inline(__always)   // (with the biased lock, too big for the inliner's own choice)
    public func remove(at index: Int) -> Element {
        _lock.lock()
        if _fastPath(_isQuietAndUnique) {
            unowned(unsafe) let ring = _storage   // _storage keeps it alive while the lock is held
            if _slowPath(index < 0 || index >= ring.count) { _indexOutOfRange("remove(at:)", index, ring.count) }
            let element = (ring.base + ring.slot(index)).move()
            ring.closeGap(index..<(index + 1)) { ring.moveLogical(from: $0, to: $1, count: $2) }
            _lock.unlock(movingOnly: Element.self)
            return element
        }
        _lock.unlock(movingOnly: Element.self)
        return _remove(at: index)
    }

    /// `remove(at:)` when someone observes (or the storage is shared, or a batch is open).
    @usableFromInline
    internal func _remove(at index: Int) -> Element {
        var result: Element?
        _mutate {
            _checkIndex(index, "remove(at:)")
            let old = _storage.count
            let removed = _removeElements(index..<(index + 1), capture: true)
            result = removed[0]
            if _batch != nil { _batchRemoved(at: index, removed); return nil }
            guard _mustRecord else { return nil }
            return _pending(.remove, run: _ArrayRun(.remove, start: index, length: 1), removed: .values(removed), oldCount: old)
        }
        return result!
    }

    /// Removes and returns the last element. Reports ``ArrayChange/Kind/removeLast``.
    /// - Precondition: The array is not empty.
    @discardableResult
    @inlinable
    public func removeLast() -> Element {
        guard let last = popLast() else { _emptyArray("removeLast") }
        return last
    }

    /// Removes and returns the last element, or nil when empty. Reports ``ArrayChange/Kind/removeLast``.
    /// The emptiness check and the removal are one critical section: another thread emptying the
    /// array in between makes this return nil, never trap (hardening: ThreadedRegressionTests).
    @discardableResult
    @inlinable @inline(__always)   // (with the biased lock, too big for the inliner's own choice)
    public func popLast() -> Element? {
        _lock.lock()
        if _fastPath(_isQuietAndUnique) {
            unowned(unsafe) let ring = _storage   // _storage keeps it alive while the lock is held
            guard ring.count > 0 else { _lock.unlock(movingOnly: Element.self); return nil }
            ring.count &-= 1
            let last = (ring.base + ring.slot(ring.count)).move()
            _lock.unlock(movingOnly: Element.self)
            return last
        }
        _lock.unlock(movingOnly: Element.self)
        return _popLast()
    }

    /// `popLast` when someone observes (or the storage is shared).
    @usableFromInline
    internal func _popLast() -> Element? {
        var result: Element?
        _mutate {
            let old = _storage.count
            guard old > 0 else { return nil }
            let removed = _removeElements((old - 1)..<old, capture: true)
            result = removed[0]
            if _batch != nil { _batchRemoved(at: old - 1, removed); return nil }
            guard _mustRecord else { return nil }
            return _pending(.removeLast, run: _ArrayRun(.remove, start: old - 1, length: 1), removed: .values(removed), oldCount: old)
        }
        return result
    }

    /// Removes the last `k` elements. Reports ``ArrayChange/Kind/removeLast``.
    /// - Complexity: O(`k`).
    @inlinable
    public func removeLast(_ k: Int) {
        _lock.lock()
        if _fastPath(_isQuietAndUnique && k > 0 && k <= _storage.count) {
            // Nobody observing: the elements are moved out, in at most two runs, and released once
            // the lock is dropped (their deinit may use the array); values holding no references
            // need neither. The storage is borrowed (see `_replaceIfQuiet`).
            let removed: ContiguousArray<Element>? = Unmanaged.passUnretained(_storage)._withUnsafeGuaranteedRef { ring in
                let start = ring.count &- k
                ring.count = start
                if _isPOD(Element.self) { return nil }
                return ring.movedOut(from: start, count: k)
            }
            _lock.unlock(movingOnly: Element.self)
            _releaseAfterUnlocking(removed)
            return
        }
        _lock.unlock(movingOnly: Element.self)
        _removeLast(k)
    }

    /// `removeLast(_:)` when someone observes (or the storage is shared, or `k` is 0 or out of range).
    @usableFromInline
    internal func _removeLast(_ k: Int) {
        _mutate {
            let old = _storage.count
            _require(k >= 0 && k <= old, "ObservableArray.removeLast: cannot remove \(k) of \(old) elements")
            guard k > 0 else { return nil }
            let removed = _removeElements((old - k)..<old, capture: _mustRecord)
            if _batch != nil { _batchRemoved(at: old - k, removed); return nil }
            guard _mustRecord else { return nil }
            return _pending(.removeLast, run: _ArrayRun(.remove, start: old - k, length: k), removed: .values(removed), oldCount: old)
        }
    }

    /// Removes and returns the first element. Reports ``ArrayChange/Kind/remove``.
    /// - Complexity: O(1).
    @discardableResult
    public func removeFirst() -> Element {
        var result: Element?
        // The emptiness check and the removal are one critical section (as in popLast): another
        // thread emptying the array in between cannot turn a valid call into an index trap.
        _mutate {
            if _storage.count == 0 { _emptyArray("removeFirst") }
            let old = _storage.count
            let removed = _removeElements(0..<1, capture: true)
            result = removed[0]
            if _batch != nil { _batchRemoved(at: 0, removed); return nil }
            guard _mustRecord else { return nil }
            return _pending(.remove, run: _ArrayRun(.remove, start: 0, length: 1), removed: .values(removed), oldCount: old)
        }
        return result!
    }

    /// Removes the first `k` elements. Reports ``ArrayChange/Kind/remove``. (Without it, the
    /// collection protocols' default is `mutating`, which a `let` array cannot call.)
    ///
    /// ```swift
    /// let queue: ObservableArray = [1, 2, 3, 4]
    /// queue.removeFirst(2)     // [3, 4]
    /// ```
    /// - Complexity: O(k).
    public func removeFirst(_ k: Int) {
        _mutate {
            let old = _storage.count
            _require(k >= 0 && k <= old, "ObservableArray.removeFirst: cannot remove \(k) of \(old) elements")
            guard k > 0 else { return nil }
            let removed = _removeElements(0..<k, capture: _mustRecord)
            if _batch != nil { _batchRemoved(at: 0, removed); return nil }
            guard _mustRecord else { return nil }
            return _pending(.remove, run: _ArrayRun(.remove, start: 0, length: k), removed: .values(removed), oldCount: old)
        }
    }

    /// Removes the elements in `bounds`. Reports ``ArrayChange/Kind/remove``.
    /// - Complexity: O(`bounds.count` + min(index, count - index)).
    @inlinable
    public func removeSubrange(_ bounds: Range<Int>) {
        if _replaceIfQuiet(bounds, with: []) { return }
        _replaceSubrange(bounds, with: EmptyCollection(), function: "removeSubrange")
    }

    /// Removes every element. Reports ``ArrayChange/Kind/remove`` with every old index (nothing
    /// when already empty).
    /// - Complexity: O(count) (elements are released); the change keeps the old storage.
    public func removeAll(keepingCapacity keepCapacity: Bool = false) {
        _mutate {
            let old = _storage.count
            guard old > 0 else { return nil }
            _tracker?.leaveAll(_storage)
            let oldStorage = _storage
            _storage = _RingBuffer(capacity: keepCapacity ? oldStorage.capacity : 0)
            if let batch = _batch {
                let origins = batch.composer.remove(at: 0, count: old)
                for (i, origin) in origins.enumerated() { if let origin { batch.keepRemoved(oldStorage[i], origin: origin) } }
                _releaseAfterUnlock.append(oldStorage)   // the last reference: elements die unlocked
                return nil
            }
            guard _mustRecord else {
                _releaseAfterUnlock.append(oldStorage)
                return nil
            }
            return _pending(.remove, run: _ArrayRun(.remove, start: 0, length: old), removed: .storage(oldStorage), oldCount: old)
        }
    }

    /// Removes every element that satisfies `shouldBeRemoved`, in one ``ArrayChange/Kind/remove``
    /// change listing each removed index (nothing when none does).
    ///
    /// ```swift
    /// scores.removeAll { $0 < 10 }
    /// ```
    /// The predicate runs without the array's lock, so it may read the array; if another thread
    /// mutates the array meanwhile, the predicate runs again on the new contents.
    /// - Complexity: O(n) calls of the predicate (inlined into the caller: each element is read
    ///   in place, as `Array.removeAll(where:)` reads it), plus O(min(i, n - i)) element moves per
    ///   run of removed elements.
    @inlinable
    public func removeAll(where shouldBeRemoved: (Element) throws -> Bool) rethrows {
        var snapshot: _RingBuffer<Element>? = _decisionSnapshot()
        while let current = snapshot.take() {
            var doomed: [Int] = []
            // The ring's at most two runs, through its pointer (`current` keeps it alive).
            let base = current.base, head = current.head, count = current.count
            let firstRun = Swift.min(count, current.capacity &- head)
            for k in 0..<firstRun where try shouldBeRemoved(base[head &+ k]) { doomed.append(k) }
            for k in firstRun..<count where try shouldBeRemoved(base[k &- firstRun]) { doomed.append(k) }
            snapshot = _removeDecided(doomed, on: consume current)
        }
    }

    /// The storage, for a mutation that user code decides without the lock (`removeAll(where:)`),
    /// after joining this thread's transaction (before the lock, as every mutation does).
    @usableFromInline
    internal func _decisionSnapshot() -> _RingBuffer<Element> {
        _joinTransaction()
        return _snapshot()
    }

    /// Removes the elements at ascending `doomed` indices, decided on `snapshot`, if the array
    /// still holds that storage (any mutation since would have copied the shared storage, so
    /// identity tells); otherwise does nothing and returns the current storage to decide on again.
    @usableFromInline
    internal func _removeDecided(_ doomed: [Int], on snapshot: consuming _RingBuffer<Element>) -> _RingBuffer<Element>? {
        _lock.lock()
        guard _storage === snapshot else {
            let current = _storage
            _lock.unlock()
            _releaseAfterUnlocking(snapshot)   // as in `_applySortPermutation`: never under the lock
            return current
        }
        _ = consume snapshot   // the storage is unique again, unless an iterator shares it
        _makeUnique()
        let pending = doomed.isEmpty ? nil : _removeIndices(doomed, kind: .remove)
        _unlockReleasing()
        _deliverUnlocked(consume pending)
        return nil
    }

    /// Removes the elements at ascending `indices`; lock held.
    internal func _removeIndices(_ indices: [Int], kind: ArrayChange<Element>.Kind) -> _PendingArrayNotification? {
        let old = _storage.count
        var runs: [_ArrayRun] = []
        for index in indices {
            if let last = runs.last, last.start + last.length == index {
                runs[runs.count - 1].length += 1
            } else {
                runs.append(_ArrayRun(.remove, start: index, length: 1))
            }
        }
        var removed = ContiguousArray<Element>()
        let capture = _mustRecord
        for run in runs.reversed() {
            let values = _removeElements(run.start..<(run.start + run.length), capture: capture)
            if _batch != nil { _batchRemoved(at: run.start, values) }
            removed.insert(contentsOf: values, at: 0)
        }
        if _batch != nil { return nil }
        guard capture else { return nil }
        return _pending(kind, runs: runs, removed: .values(removed), oldCount: old)
    }

    /// Replaces the elements in `bounds` with `newElements`: ``ArrayChange/Kind/replace`` (or
    /// ``ArrayChange/Kind/insert`` / ``ArrayChange/Kind/remove`` when one side is empty).
    ///
    /// - Complexity: O(`newElements.count`) when the lengths are equal (the elements are
    ///   overwritten in place); otherwise O(min(index, count - index)) element moves as well.
    @inlinable
    public func replaceSubrange<C: Collection>(_ bounds: Range<Int>, with newElements: C) where C.Element == Element {
        let new = ContiguousArray(newElements)
        if _replaceIfQuiet(bounds, with: new) { return }
        _replaceSubrange(bounds, with: new, function: "replaceSubrange")
    }

    /// The quiet path of `replaceSubrange`, `insert(contentsOf:at:)` and `removeSubrange`: when
    /// nobody observes, no batch is open, the storage is not shared and the result fits, does the
    /// replacement under the lock and returns true; otherwise changes nothing and returns false
    /// (the caller takes the general path). The lock is dropped either way.
    ///
    /// The shorter side of the ring moves once, by the difference in length (none when the
    /// lengths are equal: overwritten in place, as `Array` does), the old elements are moved out,
    /// to be released once the lock is dropped (their deinit may use the array), and the new ones
    /// copied in (`_RingBuffer.replace`). The bounds are checked before their count is taken, so
    /// an out-of-range one reaches the general path's message instead of an overflow. The storage
    /// is borrowed: captured by the closures, an `unowned(unsafe)` reference was retained and
    /// released around each.
    @inlinable @inline(__always)
    internal func _replaceIfQuiet(_ bounds: Range<Int>, with new: ContiguousArray<Element>) -> Bool {
        _lock.lock()
        guard _fastPath(_isQuietAndUnique && bounds.lowerBound >= 0 && bounds.upperBound <= _storage.count
                        && (!bounds.isEmpty || !new.isEmpty)
                        && _storage.count &- bounds.count &+ new.count <= _storage.capacity) else {
            _lock.unlock()
            return false
        }
        let k = bounds.count
        var removed: ContiguousArray<Element>? = nil
        Unmanaged.passUnretained(_storage)._withUnsafeGuaranteedRef { ring in
            new.withUnsafeBufferPointer { source in
                if k > 0 && !_isPOD(Element.self) {
                    removed = ContiguousArray(unsafeUninitializedCapacity: k) { buffer, initialized in
                        ring.replace(at: bounds.lowerBound, count: k, with: source,
                                     movingOldTo: buffer.baseAddress.unsafelyUnwrapped)
                        initialized = k
                    }
                } else {
                    // Nothing to release: no old elements, or no references in them.
                    ring.replace(at: bounds.lowerBound, count: k, with: source, movingOldTo: nil)
                }
            }
        }
        _lock.unlock(movingOnly: Element.self)
        _releaseAfterUnlocking(removed)
        return true
    }

    /// `replaceSubrange`, with the public operation's name for its out-of-range message.
    @usableFromInline
    internal func _replaceSubrange<C: Collection>(_ bounds: Range<Int>, with newElements: C, function: StaticString)
    where C.Element == Element {
        let new = ContiguousArray(newElements)
        _mutate {
            let old = _storage.count
            _require(bounds.lowerBound >= 0 && bounds.upperBound <= old,
                     "ObservableArray.\(function): range \(bounds) out of range for count \(old)")
            if bounds.isEmpty && new.isEmpty { return nil }
            // Replacing elements with themselves changes nothing, so reports nothing. Unrecorded,
            // the overwrite below is as cheap as the check, and changes nothing either.
            if bounds.count == new.count && _mustRecord && _sameElements(_storage, from: bounds.lowerBound, as: new) {
                return nil
            }
            let removed: ContiguousArray<Element>
            if bounds.count == new.count {
                // Same length: overwrite in place (no element outside the range moves).
                var olds = ContiguousArray<Element>()
                if _mustRecord { olds.reserveCapacity(new.count) }
                for (offset, element) in new.enumerated() {
                    let old = _replaceElement(at: bounds.lowerBound + offset, with: element)
                    if _mustRecord { olds.append(old) } else { _keepUntilUnlocked(old) }
                }
                removed = olds
            } else {
                removed = _removeElements(bounds, capture: _mustRecord)
                _insertElements(new, at: bounds.lowerBound)
            }
            if let batch = _batch {
                _batchRemoved(at: bounds.lowerBound, removed)
                if !new.isEmpty { batch.composer.insert(at: bounds.lowerBound, count: new.count) }
                return nil
            }
            guard _mustRecord else { return nil }
            var runs: [_ArrayRun] = []
            if !bounds.isEmpty { runs.append(_ArrayRun(.remove, start: bounds.lowerBound, length: bounds.count)) }
            if !new.isEmpty { runs.append(_ArrayRun(.insert, start: bounds.lowerBound, length: new.count)) }
            let kind: ArrayChange<Element>.Kind = bounds.isEmpty ? .insert : new.isEmpty ? .remove : .replace
            return _pending(kind, runs: runs, removed: .values(removed), oldCount: old)
        }
    }

    /// Exchanges the elements at `i` and `j`: ``ArrayChange/Kind/move`` reporting both
    /// (nothing when `i == j`).
    public func swapAt(_ i: Int, _ j: Int) {
        _mutate {
            _checkIndex(i, "swapAt")
            _checkIndex(j, "swapAt")
            guard i != j else { return nil }
            unowned(unsafe) let ring = _storage
            let si = ring.slot(i), sj = ring.slot(j)
            // Both entries go, then come back: moving one entry onto the other's slot first
            // would leave two entries naming one slot, and the index finds entries by slot.
            _withTracker { $0.lift(slot: si, ring: $1); $0.lift(slot: sj, ring: $1) }
            swap(&ring.base[si], &ring.base[sj])
            _withTracker { $0.place(slot: si, ring: $1); $0.place(slot: sj, ring: $1) }
            if let batch = _batch {
                let (low, high) = (Swift.min(i, j), Swift.max(i, j))
                batch.composer.move(from: high, to: low)
                batch.composer.move(from: low + 1, to: high)
                return nil
            }
            guard _mustRecord else { return nil }
            var runs = [_ArrayRun(.move, start: i, length: 1, to: j), _ArrayRun(.move, start: j, length: 1, to: i)]
            runs.sort { $0.start < $1.start }
            return _pending(.move, runs: runs, removed: .none, oldCount: ring.count)
        }
    }

    /// Moves the element at `from` so that it ends up at index `to`: ``ArrayChange/Kind/move``
    /// (nothing when `from == to`).
    ///
    /// Reported as one move run (`from` → `to`); the elements between shift by one place
    /// implicitly, as the run format defines.
    /// - Complexity: O(|to - from|) element moves, whatever the array's length.
    public func move(from: Int, to: Int) {
        _mutate {
            let count = _storage.count
            _require(from >= 0 && from < count && to >= 0 && to < count,
                     "ObservableArray.move: indices \(from) -> \(to) out of range for count \(count)")
            guard from != to else { return nil }
            _moveElement(from: from, to: to)
            if let batch = _batch { batch.composer.move(from: from, to: to); return nil }
            guard _mustRecord else { return nil }
            return _pending(.move, run: _ArrayRun(.move, start: from, length: 1, to: to), removed: .none,
                            oldCount: count)
        }
    }

    /// Moves the elements at `offsets` (any order; an offset given twice counts once) so that
    /// they end up together, in their original order, before the element that was at
    /// `destination` — as SwiftUI's `move(fromOffsets:toOffset:)` does on an `Array`:
    /// ``ArrayChange/Kind/move``, one move run per moved element (the elements between shift
    /// implicitly, as for ``move(from:to:)``).
    ///
    /// ```swift
    /// let tasks = ObservableArray(["a", "b", "c", "d", "e"])
    /// tasks.move(fromOffsets: [0, 2], toOffset: 4)   // ["b", "d", "a", "c", "e"]
    /// ```
    /// - Complexity: O(k log k + s) for k offsets, where s is the span from the lowest of the
    ///   offsets and `destination` to the highest: the elements outside it do not move, however
    ///   long the array is.
    public func move<S: Sequence<Int>>(fromOffsets offsets: S, toOffset destination: Int) {
        let sources = Set(offsets).sorted()
        _mutate {
            let count = _storage.count
            _require((sources.first ?? 0) >= 0 && (sources.last ?? -1) < count && destination >= 0 && destination <= count,
                     "ObservableArray.move(fromOffsets:toOffset:): offsets \(sources) or destination \(destination) "
                     + "out of range for count \(count)")
            // The sources below `destination` end just before it, the others just after it:
            // source j lands at `first + j`. Sources already there do not move.
            let below = sources.firstIndex { $0 >= destination } ?? sources.count
            let first = destination - below
            guard sources.indices.contains(where: { sources[$0] != first + $0 }) else { return nil }
            _moveElements(sources, below: below, to: first)
            if let batch = _batch {
                _composeMove(of: sources, below: below, to: first, count: count, into: batch.composer)
                return nil
            }
            guard _mustRecord else { return nil }
            var runs: [_ArrayRun] = []
            for (j, source) in sources.enumerated() where source != first + j {
                runs.append(_ArrayRun(.move, start: source, length: 1, to: first + j))
            }
            _normalize(&runs)
            return _pending(.move, runs: runs, removed: .none, oldCount: count)
        }
    }

    /// Moves the elements at ascending `sources` (the first `below` of them lower than where
    /// they go) to indices `first ..< first + sources.count`: each is lifted out, the blocks of
    /// other elements between them shift by as many places as sources they pass (one bulk move
    /// each, `_shift`), and the sources go back in their new places. O(span) element moves and
    /// O(sources) index updates. Lock held, storage unique.
    private func _moveElements(_ sources: [Int], below: Int, to first: Int) {
        unowned(unsafe) let ring = _storage
        let lifted = UnsafeMutablePointer<Element>.allocate(capacity: sources.count)
        defer { lifted.deallocate() }
        for (j, source) in sources.enumerated() {
            let slot = ring.slot(source)
            // Its index entry goes first, as in `_moveElement`.
            _withTracker { $0.lift(slot: slot, ring: $1) }
            (lifted + j).moveInitialize(from: ring.base + slot, count: 1)
        }
        // Below the destination, the block after source j moves down past j + 1 sources.
        for j in 0..<below {
            let start = sources[j] + 1, end = j + 1 < below ? sources[j + 1] : first + below
            _shift(from: start, to: start - (j + 1), count: end - start)
        }
        // Above it, the block before source j moves up past the sources from j on (highest first).
        for j in (below..<sources.count).reversed() {
            let start = j > below ? sources[j - 1] + 1 : first + below, end = sources[j]
            _shift(from: start, to: start + (sources.count - j), count: end - start)
        }
        for j in sources.indices {
            let slot = ring.slot(first + j)
            (ring.base + slot).moveInitialize(from: lifted + j, count: 1)
            _withTracker { $0.place(slot: slot, ring: $1) }
        }
    }

    /// Tells a batch's composer about `move(fromOffsets:toOffset:)` (see `_moveElements`): a few
    /// sources as the single moves that give the same order (each O(segments) in the composer:
    /// the sources below the destination highest first, then the others lowest first), many as
    /// one reorder of the whole array.
    private func _composeMove(of sources: [Int], below: Int, to first: Int, count: Int,
                              into composer: any _BatchComposing) {
        guard sources.count > 32 else {
            for j in (0..<below).reversed() where sources[j] != first + j { composer.move(from: sources[j], to: first + j) }
            for j in below..<sources.count where sources[j] != first + j { composer.move(from: sources[j], to: first + j) }
            return
        }
        // permutation[i]: the old index of the element now at i.
        var permutation: [Int] = []
        permutation.reserveCapacity(count)
        var next = 0
        for i in 0..<count {
            if permutation.count == first { permutation.append(contentsOf: sources) }
            if next < sources.count && sources[next] == i { next += 1 } else { permutation.append(i) }
        }
        if permutation.count == first { permutation.append(contentsOf: sources) }
        composer.permute(permutation)
    }

    /// Sorts in place by `areInIncreasingOrder`: one ``ArrayChange/Kind/move`` change listing
    /// every element that changed place (nothing when already sorted).
    ///
    /// The comparator never runs under the array's lock (it may read the array): the elements are
    /// sorted in a copy, which replaces the contents unless the array changed meanwhile (then the
    /// sort starts over, so a comparator that mutates the array on every call never finishes).
    /// Equal elements keep their order.
    ///
    /// ```swift
    /// students.sort { $0.name < $1.name }
    /// ```
    /// - Complexity: O(n log n) comparisons, as `Array.sort`, plus one bitwise copy of the
    ///   elements (no reference counting: the copy holds the array's own references while it is
    ///   sorted, and they change hands when it replaces the contents). Elements that cannot be
    ///   moved bitwise (an Objective-C weak reference inside, a C++ value) are copied instead.
    @inlinable @inline(__always)
    public func sort(by areInIncreasingOrder: (Element, Element) throws -> Bool) rethrows {
        while true {
            var (snapshot, copy, quiet) = _sortingCopy()
            var installed = false
            defer { if !installed { copy.forgetBorrowedElements() } }
            if quiet {
                // The only part inlined with the comparator: what `Array.sort` does.
                var elements = UnsafeMutableBufferPointer(start: copy.base, count: copy.count)
                try elements.sort(by: areInIncreasingOrder)
                installed = _installSorted(copy, replacing: &snapshot)
                if installed { return }
            } else if try _sortObserved(copy, by: areInIncreasingOrder, replacing: snapshot.take()) {
                return
            }
        }
    }

    /// The storage to sort a copy of, the copy, and whether nobody observes the array (no change
    /// to report). Joins this thread's transaction first, as every mutation does. The copy
    /// borrows the snapshot's references (bitwise) when the element type allows a bitwise move —
    /// all native Swift types; not a struct holding an Objective-C weak reference, whose address
    /// the runtime registers — and owns copies otherwise (`_RingBuffer.borrowsElements`).
    @usableFromInline
    internal func _sortingCopy() -> (_RingBuffer<Element>?, copy: _RingBuffer<Element>, quiet: Bool) {
        _joinTransaction()
        let (snapshot, quiet) = _lock.withLock { (_storage, _isQuiet) }
        let copy = _isBitwiseTakable(Element.self) ? snapshot.borrowingContiguousCopy() : snapshot.contiguousCopy()
        return (snapshot, copy, quiet)
    }

    /// `sort` when someone observes: sorts positions by the elements of `copy`, then applies the
    /// permutation and reports it, unless the array is no longer `snapshot` (false).
    ///
    /// Inlinable, so that the caller's module specialises it for its element type, but never
    /// inlined: with a second sort inlined beside `Array`'s part, the comparator of the unobserved
    /// path was called through a thunk (`array.unobserved-sort` 1.1x -> 2.4x `Array`). Here it is
    /// an indirect call per comparison on specialised code: finding that 100k sorted elements stay
    /// put takes ~0.8 ms (3.3 ms unspecialised, when this was not inlinable; 56 µs unobserved).
    @inlinable @inline(never)
    internal func _sortObserved(_ copy: _RingBuffer<Element>, by areInIncreasingOrder: (Element, Element) throws -> Bool,
                                replacing snapshot: consuming _RingBuffer<Element>?) rethrows -> Bool {
        let elements = UnsafeMutableBufferPointer(start: copy.base, count: copy.count)
        var permutation = Array(0..<elements.count)
        try permutation.sort { try areInIncreasingOrder(elements[$0], elements[$1]) }
        return _applySortPermutation(permutation, replacing: snapshot)
    }

    /// Makes `sorted`, a copy of `snapshot`, the storage if the array is still `snapshot` and still
    /// unobserved; false (nothing done) otherwise. A copy that borrows its elements
    /// (`borrowingContiguousCopy`) takes the old storage's references when nothing else holds the
    /// old storage, and references of its own when something does (an iterator's snapshot).
    @usableFromInline
    internal func _installSorted(_ sorted: _RingBuffer<Element>, replacing snapshot: inout _RingBuffer<Element>?) -> Bool {
        _lock.lock()
        guard _storage === snapshot, _isQuiet else {
            _lock.unlock()
            return false
        }
        snapshot = nil   // the caller's reference: gone, so that uniqueness tells
        _reclaimStorageFromSpareBox()
        if !sorted.borrowsElements {
            // A copy with references of its own: the old storage releases its own.
        } else if isKnownUniquelyReferenced(&_storage) {
            _storage.writerFoundUnique()
            _storage.forgetElements()
            sorted.borrowsElements = false
        } else {
            sorted.adoptElements()
        }
        let old = _storage
        _storage = sorted
        _unlockReleasing()
        _releaseAfterUnlocking(old)   // an element's deinit may use the array
        return true
    }

    /// Applies new[i] = old[permutation[i]] and reports it, if the array is still `snapshot`;
    /// false (nothing done) otherwise.
    @usableFromInline
    internal func _applySortPermutation(_ permutation: [Int], replacing snapshot: consuming _RingBuffer<Element>?) -> Bool {
        _lock.lock()
        guard _storage === snapshot else {
            _lock.unlock()
            // A consuming parameter may be released at its last use: after the unlock, because a
            // stale snapshot can hold the last references to elements removed meanwhile, whose
            // deinit may use the array.
            _releaseAfterUnlocking(snapshot)
            return false
        }
        snapshot = nil   // drop the extra reference so the storage is unique again
        _makeUnique()
        let pending = _applyPermutation(permutation)
        _unlockReleasing()
        _deliverUnlocked(consume pending)
        return true
    }

    /// Reverses in place: one ``ArrayChange/Kind/move`` change.
    /// - Complexity: O(count) swaps in place; when nobody observes, nothing else.
    @inlinable
    public func reverse() {
        _lock.lock()
        if _fastPath(_isQuietAndUnique) {
            unowned(unsafe) let ring = _storage   // _storage keeps it alive while the lock is held
            if ring.isContiguous {
                var contents = UnsafeMutableBufferPointer(start: ring.base + ring.head, count: ring.count)
                contents.reverse()
                _lock.unlock(movingOnly: Element.self)
                return
            }
            var low = 0, high = ring.count - 1
            while low < high {
                let a = ring.base + ring.slot(low), b = ring.base + ring.slot(high)
                let element = a.move()
                a.moveInitialize(from: b, count: 1)
                b.initialize(to: element)
                low &+= 1
                high &-= 1
            }
            _lock.unlock(movingOnly: Element.self)
            return
        }
        _lock.unlock(movingOnly: Element.self)
        _reverse()
    }

    /// `reverse` when someone observes (or the storage is shared, or a batch is open).
    @usableFromInline
    internal func _reverse() {
        _reorder { count in Array((0..<count).reversed()) }
    }

    /// Shuffles in place: one ``ArrayChange/Kind/move`` change.
    public func shuffle() {
        var generator = SystemRandomNumberGenerator()
        shuffle(using: &generator)
    }

    /// Shuffles in place with `generator`: one ``ArrayChange/Kind/move`` change.
    public func shuffle<G: RandomNumberGenerator>(using generator: inout G) {
        _reorder { count in Array(0..<count).shuffled(using: &generator) }
    }

    /// Applies the permutation `make(count)` computed for the current count.
    internal func _reorder(_ make: (Int) -> [Int]) {
        _mutate(deciding: { snapshot in make(snapshot.count) }, apply: { permutation in _applyPermutation(permutation) })
    }

    /// Applies new[i] = old[permutation[i]] and reports the elements that changed place.
    /// Lock held, storage unique.
    internal func _applyPermutation(_ permutation: [Int]) -> _PendingArrayNotification? {
        _require(permutation.count == _storage.count, "ObservableArray: permutation of the wrong size")
        guard permutation.indices.contains(where: { permutation[$0] != $0 }) else { return nil }
        _permute(permutation)
        if let batch = _batch {
            batch.composer.permute(permutation)
            return nil
        }
        guard _mustRecord else { return nil }
        // One move per element that changed place, in old-index order (the encoder merges them).
        var destination = [Int](repeating: 0, count: permutation.count)
        for (newIndex, oldIndex) in permutation.enumerated() { destination[oldIndex] = newIndex }
        var runs: [_ArrayRun] = []
        for (oldIndex, newIndex) in destination.enumerated() where oldIndex != newIndex {
            runs.append(_ArrayRun(.move, start: oldIndex, length: 1, to: newIndex))
        }
        _normalize(&runs)
        return _pending(.move, runs: runs, removed: .none, oldCount: permutation.count)
    }

    internal func _normalize(_ runs: inout [_ArrayRun]) {
        kvoRegistrar.backend.runEncoding.normalize(&runs)
    }

    /// Runs `body` as one transaction: every mutation made inside is delivered as one
    /// ``ArrayChange/Kind/batch`` change when the outermost batch ends, coalesced — an element
    /// inserted and removed inside reports nothing, reordered elements are reported as moves,
    /// and ``ArrayChange/applying(to:)`` maps the contents before the batch to those after it.
    ///
    /// ```swift
    /// students.performBatchUpdates { s in
    ///     s.remove(at: 3); s.insert(newcomer, at: 0); s.swapAt(1, 2)
    /// }
    /// ```
    /// Batches nest (the outermost one delivers). Mutations by other threads while a batch is
    /// open join it. A property change of an element (for observations with element key paths)
    /// made while the batch is open joins it too: the element is listed among the batch change's
    /// modifications (`RunKind.modify`, new indices), without the property's old and new values
    /// — so that every change an observer receives is in the coordinates of the last state it was
    /// told about, and a replica that applies the changes in order stays right.
    @discardableResult
    public func performBatchUpdates<R>(_ body: (ObservableArray<Element>) throws -> R) rethrows -> R {
        _joinTransaction()
        _beginBatch()
        defer { _endBatch() }
        return try body(self)
    }

    /// Opens a batch, or nests in the open one.
    internal func _beginBatch() {
        _lock.withLock {
            if let batch = _batch {
                batch.depth += 1
            } else {
                _batch = _BatchState(composer: kvoRegistrar.backend.makeBatchComposer(oldCount: _storage.count),
                                     oldCount: _storage.count)
            }
        }
    }

    /// In a transaction of this thread (`ObservationRuntime.transaction`): keeps a batch open on
    /// this array until the transaction ends, so that its mutations make one change. One relaxed
    /// load when no transaction and no silence scope is open anywhere.
    @inline(__always)
    internal func _joinTransaction() {
        if _slowPath(kvoRegistrar._registry.openScopes.load(ordering: .relaxed) != 0) {
            _Transaction.current?.enlist(self)
        }
    }

    /// Closes a batch level; the outermost delivers the batch's one change.
    internal func _endBatch() {
        _lock.lock()
        let batch = _batch!
        batch.depth -= 1
        guard batch.depth == 0 else { _lock.unlock(); return }
        _batch = nil
        var pending: _PendingArrayNotification?
        if kvoRegistrar._observedMask.load(ordering: .relaxed) != 0 {
            let runs = batch.composer.finish()
            pending = _pending(.batch, runs: runs, removed: .values(batch.removedValues(in: runs)), oldCount: batch.oldCount)
        }
        _lock.unlock()
        _deliverUnlocked(consume pending)
    }
}

/// Whether a value of `type` is exactly one object reference: a class, or `AnyObject` itself.
/// (What may be cast to `AnyObject` bit for bit; a class-bound protocol existential also carries
/// witness tables: see `_isIdentifiedByReference`.)
internal func _isOneReference<Element>(_ type: Element.Type) -> Bool {
    type is AnyObject.Type || ObjectIdentifier(type) == ObjectIdentifier(AnyObject.self)
}

/// Whether a value of `type` is identified by the object reference in its first word: one
/// reference (`_isOneReference`), or a class-bound existential (`any P` with `P: AnyObject`, or
/// `any C & P` with a class `C`), whose other words are witness tables fixed by the object's
/// dynamic type, so the same object gives the same words.
internal func _isIdentifiedByReference<Element>(_ type: Element.Type) -> Bool {
    _isOneReference(type) || _isClassBoundExistential(type)
}

/// Whether `type` is a class-bound existential, read from its metadata: the runtime's test for
/// it is not public. The layout is the Swift ABI's: an existential type's metadata starts with
/// its kind word, `MetadataKind::Existential` (0x303), then 32 bits of `ExistentialTypeFlags`
/// whose top bit is clear when the existential is class-bound (`ProtocolClassConstraint::Class`
/// is 0). `any Error` and `Any` have it set. Existentials with constraints on primary associated
/// types have another kind (extended existentials) and are not recognised: their values compare
/// as values, never equal, as before.
internal func _isClassBoundExistential(_ type: Any.Type) -> Bool {
    let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
    guard metadata.load(as: UInt.self) == 0x303 else { return false }
    return metadata.load(fromByteOffset: MemoryLayout<UInt>.stride, as: UInt32.self) & 0x8000_0000 == 0
}

/// Whether two elements are the same: identical objects, or equal `Equatable` values.
internal func _identical<Element>(_ a: Element, _ b: Element) -> Bool {
    if _isIdentifiedByReference(Element.self) {
        // The references: compare the first words. `a as AnyObject` in this unspecialised code
        // bridged each value through the runtime's dynamic cast (~1,000 instructions a pair:
        // 40% of an observed subscript set with its element change, 1,079 -> 632 ns at 100k).
        return withUnsafeBytes(of: a) { x in withUnsafeBytes(of: b) { y in x.load(as: UInt.self) == y.load(as: UInt.self) } }
    }
    return _valuesEqual(a, b) ?? false
}

/// Whether the elements of `ring` from logical index `start` on are the same as `new`'s, as
/// `_identical` decides, with the type tested once per call, not per element (a dynamic cast and
/// an existential per element cost ~300 ns each: replacing 100k elements took 32 ms, callgrind).
internal func _sameElements<Element>(_ ring: _RingBuffer<Element>, from start: Int, as new: ContiguousArray<Element>) -> Bool {
    if _isIdentifiedByReference(Element.self) {
        // The references: compare the first word of each element (a class-bound existential is
        // wider than one word, so by the element's stride).
        let stride = MemoryLayout<Element>.stride
        return new.withUnsafeBytes { words in
            (0..<new.count).allSatisfy { k in
                UnsafeRawPointer(ring.base + ring.slot(start &+ k)).load(as: UInt.self)
                    == words.load(fromByteOffset: k &* stride, as: UInt.self)
            }
        }
    }
    guard let equatable = Element.self as? any Equatable.Type else { return false }
    func compare<E: Equatable>(_: E.Type) -> Bool {
        // Element is E: both sides are read as E where they are.
        new.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: E.self) { values in
                values.indices.allSatisfy { k in
                    UnsafeRawPointer(ring.base + ring.slot(start &+ k)).assumingMemoryBound(to: E.self).pointee == values[k]
                }
            }
        }
    }
    return compare(equatable)
}

extension ObservableArray where Element: AnyObject {
    /// Removes every occurrence of `object` (by identity): one ``ArrayChange/Kind/remove`` change
    /// listing each removed index (nothing when absent).
    ///
    /// ```swift
    /// students.removeAll(of: graduate)
    /// ```
    /// - Complexity: while element key paths are observed, O(k) to find the object's k copies
    ///   (the position index answers), otherwise one scan of the element addresses; plus
    ///   O(min(i, n - i)) element moves per run of removed elements.
    public func removeAll(of object: Element) {
        let address = UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque())
        _mutate {
            let ring = _storage
            var doomed: [Int] = []
            var runs: [_ArrayRun] = []
            if let tracker = _tracker, tracker.isActive {
                if tracker.appendModifyRuns(ofElementAt: address, ring: ring, to: &runs) {
                    for run in runs { doomed.append(contentsOf: run.start..<(run.start + run.length)) }
                }
            } else if ring.capacity > 0 {
                let addresses = ring.addresses
                for i in 0..<ring.count where addresses[ring.slot(i)] == address { doomed.append(i) }
            }
            return doomed.isEmpty ? nil : _removeIndices(doomed, kind: .remove)
        }
    }
}

extension ObservableArray where Element: Comparable {
    /// Sorts in ascending order: one ``ArrayChange/Kind/move`` change.
    @inlinable
    public func sort() { sort(by: <) }
}

/// Traps for an operation that needs an element on an empty array (the message survives -O).
@usableFromInline @inline(never)
internal func _emptyArray(_ function: StaticString) -> Never {
    fatalError("ObservableArray.\(function): the array is empty")
}
