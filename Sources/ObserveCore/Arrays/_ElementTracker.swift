import Dispatch

/// An element key path an array tracks: the key id its elements' setters announce (for a
/// property a superclass declares, that superclass's key) and the key path the observer wrote,
/// which the array's element changes report.
internal struct _ElementKey {
    let id: UInt32
    let keyPath: AnyKeyPath
}

/// What an ``ObservableArray`` of any element type calls when its contents change; the
/// concrete tracker exists only for elements that are ``KeyValueObservable``.
@usableFromInline
internal class _AnyElementTracker<Element>: _ElementTrackerBase, @unchecked Sendable {
    /// The element entered the ring at `slot` (ring already holds it there).
    func enter(slot: Int, ring: _RingBuffer<Element>) {}
    /// The element at `slot` is leaving (ring still holds it there).
    func leave(slot: Int, ring: _RingBuffer<Element>) {}
    /// The elements at logical `indices` entered the ring (it already holds them there).
    func enter(indices: Range<Int>, ring: _RingBuffer<Element>) {}
    /// Copies `source` into the ring's uninitialised slots from logical `index` on (a gap just
    /// opened for them), then records that they entered, as `enter(indices:ring:)` does. A
    /// tracker may overlap the copy with its own work.
    func copyIn(_ source: UnsafeBufferPointer<Element>, at index: Int, ring: _RingBuffer<Element>) {
        ring.initialize(at: index, from: source)
        enter(indices: index..<(index + source.count), ring: ring)
    }
    /// The elements at logical `indices` are leaving (the ring still holds them there).
    func leave(indices: Range<Int>, ring: _RingBuffer<Element>) {}
    /// The element now in slot `to` (the ring already moved it) was in slot `from`.
    func move(from: Int, to: Int, ring: _RingBuffer<Element>) {}
    /// The element at `slot` is about to be lifted out while others shift into its place; its
    /// index entry goes (membership is kept). Pair with `place(slot:ring:)`.
    func lift(slot: Int, ring: _RingBuffer<Element>) {}
    /// A lifted element is back in the ring at `slot`.
    func place(slot: Int, ring: _RingBuffer<Element>) {}
    /// Every slot may have changed (ring reallocated or reordered): re-index from the ring.
    func rebuild(_ ring: _RingBuffer<Element>) {}
    /// Every element is leaving (removeAll, or the tracker is being shut down).
    func leaveAll(_ ring: _RingBuffer<Element>) {}
    /// Whether the tracker still serves observers.
    var isActive: Bool { false }
    /// Appends `element`'s indices to `runs` as canonical modify runs (ascending, touching ones
    /// merged); false when the element is not in the array. Allocates nothing for an element
    /// present once (lock held).
    func appendModifyRuns(ofElementAt address: UInt, ring: _RingBuffer<Element>, to runs: inout [_ArrayRun]) -> Bool { false }
    /// Whether the position index matches the ring (false once a block move could not be
    /// recorded, or after a long removal; it is rebuilt on next use).
    var isIndexed: Bool { true }
    /// The `count` elements that were in slots from `firstSlot` on moved `delta` slots (the ring
    /// already shows it): recorded by the index (folding a full shift log first when lookups are
    /// being made), or the index becomes stale (element memberships are still counted as elements
    /// enter and leave).
    func shifted(firstSlot: Int, count: Int, delta: Int, ring: _RingBuffer<Element>) {}
    /// Shuts the tracker down: every element leaves, the directory forgets it.
    func deactivate(_ ring: _RingBuffer<Element>) {}
}

/// The tracker of an array of observable elements.
internal final class _ElementTracker<Element: KeyValueObservable>: _AnyElementTracker<Element>, @unchecked Sendable {
    /// The array, not retained: an element change racing with the array's deinit loads nil.
    /// Not `weak`: that put the array's counts on a side table, and every retain and release of
    /// the array on the runtime's slow path (see `_UnownedReference`).
    let array: _UnownedReference<ObservableArray<Element>>
    private let _index: any _PositionIndexing
    /// Member bits of the tracked element keys (see `keys` in the base class).
    @exclusivity(unchecked) private var _memberBits: UInt64 = 0
    @exclusivity(unchecked) private var _active = true
    /// The index no longer matches the ring; rebuilt before the next lookup.
    @exclusivity(unchecked) private var _stale = false
    /// The index was looked up (an element change, `removeAll(of:)`) since its shift log was last
    /// emptied by a fold or a rebuild: whether a full log is worth folding (see `shifted`).
    @exclusivity(unchecked) private var _lookedUpSinceLogEmptied = false
    @exclusivity(unchecked) private var _slots: [UInt32] = []

    /// Creates the tracker and indexes every element (the caller holds the array's lock).
    ///
    /// The two passes over the elements — building the position index and counting one
    /// membership in each element's registrar — touch disjoint memory (the index's table; the
    /// registrars' membership words) and only read the ring, so they run side by side
    /// (`_bothPasses`). At 100k elements the index pass is ~4.5 ns per element alone (the C
    /// driver, new elements added in bulk) and the membership pass ~7.5; side by side on this
    /// machine's two vCPUs they slow each other down (`array.setup`: ~9.5 ns per element).
    init(array: ObservableArray<Element>, keys elementKeys: [_ElementKey], ring: _RingBuffer<Element>) {
        let keyIDs = elementKeys.map(\.id)
        self.array = _UnownedReference(array)
        self._index = array.kvoRegistrar.backend.makePositionIndex(capacityHint: ring.count)
        super.init()
        self.keys = elementKeys
        self._memberBits = keyIDs.reduce(0) { $0 | _KeyTable.memberBit(for: $1) }
        let index = _index, memberBits = _memberBits
        let buildIndex = {
            if ring.capacity > 0 {
                index.rebuild(ring: ring.addresses, mask: UInt32(ring.mask), head: UInt32(ring.head), count: ring.count)
            }
        }
        let enterAll = { Self._forEachRegistrar(ring) { $0._enterArray(memberBits: memberBits) } }
        Self._bothPasses(elements: ring.count, buildIndex, enterAll)
        for keyID in keyIDs { _ElementTrackerDirectory.shared.register(self, keyID: keyID) }
    }

    /// Runs the index pass and the membership pass over `elements` elements: from
    /// `_parallelPassesThreshold` elements on two threads at once (`DispatchQueue.concurrentPerform`,
    /// which runs both on this thread when no other is free), below it one after the other. Both
    /// end before this returns, with the caller's lock (the array's) still held.
    private static func _bothPasses(elements: Int, _ indexPass: () -> Void, _ membershipPass: () -> Void) {
        guard elements >= _parallelPassesThreshold else {
            indexPass()
            membershipPass()
            return
        }
        withoutActuallyEscaping(indexPass) { indexPass in
            withoutActuallyEscaping(membershipPass) { membershipPass in
                let passes = _UncheckedSendable((indexPass, membershipPass))
                DispatchQueue.concurrentPerform(iterations: 2) { pass in
                    if pass == 0 { passes.value.0() } else { passes.value.1() }
                }
            }
        }
    }

    /// The element count from which the two passes run on two threads: below it, waking a
    /// second thread (~10-20 µs) costs more than half a pass saves.
    static var _parallelPassesThreshold: Int { 8_192 }

    override var isActive: Bool { _active }

    /// Adds element keys (the caller holds the array's lock).
    func add(keys newKeys: [_ElementKey], ring: _RingBuffer<Element>) {
        let added = newKeys.filter { !tracks($0.id) }
        guard !added.isEmpty else { return }
        keys += added
        let bits = added.reduce(0) { $0 | _KeyTable.memberBit(for: $1.id) }
        _memberBits |= bits
        Self._forEachRegistrar(ring) { $0._addMemberBits(bits) }
        for key in added { _ElementTrackerDirectory.shared.register(self, keyID: key.id) }
    }

    /// Calls `body` with the registrar of every element of `ring` (at logical `indices`, or all),
    /// borrowed: no retain or release per element (the ring keeps each alive, and the caller
    /// holds the array's lock).
    @inline(__always)
    private static func _forEachRegistrar(_ ring: _RingBuffer<Element>, at indices: Range<Int>? = nil,
                                          _ body: (KeyValueRegistrar) -> Void) {
        let addresses = ring.addresses
        for i in indices ?? (0..<ring.count) { _withRegistrar(at: addresses[ring.slot(i)], body) }
    }

    /// Calls `body` with the registrar of every element of `source`, borrowed (the caller's
    /// buffer keeps each alive): `Element` is a class, so the buffer holds object addresses.
    @inline(__always)
    private static func _forEachRegistrar(in source: UnsafeBufferPointer<Element>, _ body: (KeyValueRegistrar) -> Void) {
        guard let base = source.baseAddress else { return }
        let objects = _RingAddresses(raw: UnsafeRawPointer(base))
        for i in source.indices { _withRegistrar(at: objects[i], body) }
    }

    /// Calls `body` with the registrar of the element whose address a ring slot holds, borrowed
    /// (the ring keeps the element alive while the caller holds the array's lock), through the
    /// element type's own witness: no retain, no copy of the element
    /// (`KeyValueObservable._withRegistrar(ofObjectAt:_:)`).
    @inline(__always)
    private static func _withRegistrar(at address: UInt, _ body: (KeyValueRegistrar) -> Void) {
        Element._withRegistrar(ofObjectAt: UnsafeRawPointer(bitPattern: address).unsafelyUnwrapped, body)
    }

    override var isIndexed: Bool { !_stale }

    /// A full shift log (the index refuses the move) is folded when element changes are looking
    /// the index up between edits — a fold costs ~1 ns per bucket, the rebuild it replaces ~10 ns
    /// per element at 100k, paid by the next element change — and otherwise the index is left
    /// stale: a run of edits that nobody looks up between (a batch, a burst of mutations) then
    /// skips index upkeep until the next element change rebuilds it once.
    override func shifted(firstSlot: Int, count: Int, delta: Int, ring: _RingBuffer<Element>) {
        if _stale { return }
        let addresses = ring.addresses, mask = UInt32(ring.mask), first = UInt32(firstSlot)
        if _index.shift(ring: addresses, mask: mask, first: first, count: count, delta: delta) { return }
        if _lookedUpSinceLogEmptied && _index.fold()
            && _index.shift(ring: addresses, mask: mask, first: first, count: count, delta: delta) {
            _lookedUpSinceLogEmptied = false
            return
        }
        _stale = true
    }

    /// Rebuilds a stale index from the ring (lock held).
    private func _refresh(_ ring: _RingBuffer<Element>) {
        guard _stale else { return }
        _stale = false
        rebuild(ring)
    }

    override func enter(slot: Int, ring: _RingBuffer<Element>) {
        let address = ring.addresses[slot], memberBits = _memberBits
        if !_stale { _index.insert(ring: ring.addresses, mask: UInt32(ring.mask), element: address, slot: UInt32(slot)) }
        Self._withRegistrar(at: address) { $0._enterArray(memberBits: memberBits) }
    }

    override func leave(slot: Int, ring: _RingBuffer<Element>) {
        let address = ring.addresses[slot]
        if !_stale { _index.remove(ring: ring.addresses, mask: UInt32(ring.mask), element: address, slot: UInt32(slot)) }
        Self._withRegistrar(at: address) { $0._leaveArray() }
    }

    /// The index takes the run in one call (`insertRun`), then each element's membership is
    /// counted: the C index validates once and prefetches, where one call per element did neither.
    /// A run long enough takes both passes side by side, as setup does (`_bothPasses`).
    override func enter(indices: Range<Int>, ring: _RingBuffer<Element>) {
        guard !indices.isEmpty else { return }
        let memberBits = _memberBits, addresses = ring.addresses, index = _index, stale = _stale
        // A stale index takes no entries: then the membership pass runs alone, on this thread.
        Self._bothPasses(elements: stale ? 0 : indices.count, {
            if !stale {
                index.insertRun(ring: addresses, mask: UInt32(ring.mask), first: UInt32(ring.slot(indices.lowerBound)),
                                count: indices.count)
            }
        }, {
            Self._forEachRegistrar(ring, at: indices) { $0._enterArray(memberBits: memberBits) }
        })
    }

    /// A long run (`_parallelPassesThreshold`) copied in with an up-to-date index: the copy
    /// overlaps the passes. Both halves of `_bothPasses` (one on this thread, the other on a
    /// worker, as `concurrentPerform` decides) copy chunks of the run (`_SharedLoop`) until none
    /// is left. The first then waits for the other's last chunk and indexes the run (the index
    /// reads the ring); the second counts every membership at once, reading `source` (the
    /// caller's buffer keeps those elements alive), not the ring. At 100k the copy costs ~6.5 ns
    /// per element (a retain each), the index pass ~9.5 (the table is 84% full after the run),
    /// the membership pass ~7.5; an observed append of 10k took 18 ns per element when the whole
    /// copy came first (the other thread idle through it), 14.6 now. Indexing each chunk as soon
    /// as it is in, while the other copies the rest, measured slower (18 ns): the two vCPUs of
    /// this machine slow each other down more in that mix.
    override func copyIn(_ source: UnsafeBufferPointer<Element>, at index: Int, ring: _RingBuffer<Element>) {
        let k = source.count
        guard !_stale, k >= Self._parallelPassesThreshold else {
            super.copyIn(source, at: index, ring: ring)
            return
        }
        sharedCopies += 1
        let memberBits = _memberBits, positions = _index, addresses = ring.addresses
        let mask = UInt32(ring.mask), first = UInt32(ring.slot(index))
        let chunk = Self._copyChunk
        let copying = _SharedLoop(chunks: (k + chunk - 1) / chunk) { c in
            let lower = c * chunk, upper = Swift.min(lower + chunk, k)
            ring.initialize(at: index + lower, from: UnsafeBufferPointer(rebasing: source[lower..<upper]))
        }
        Self._bothPasses(elements: k, {
            copying.finish()
            positions.insertRun(ring: addresses, mask: mask, first: first, count: k)
        }, {
            copying.help()
            Self._forEachRegistrar(in: source) { $0._enterArray(memberBits: memberBits) }
        })
    }

    /// How many runs `copyIn` copied in and indexed on two threads (tests: that the path ran).
    /// Under the array's lock.
    @exclusivity(unchecked) private(set) var sharedCopies = 0

    /// Elements per chunk of a shared copy (`copyIn`): a few µs each, so that the thread that
    /// indexes waits little for the other's last one.
    static var _copyChunk: Int { 512 }

    /// A long run leaving (more than `_staleRemovalMinimum` elements, and a quarter of the array
    /// or more) leaves the index stale instead of taking each entry out: a removal's backward
    /// shift costs ~50 ns per element at 100k (~580 instructions: it re-homes the entries after
    /// the hole, reading the ring for each), a rebuild ~5-9 ns per element left, paid once by the
    /// next element change. Memberships are counted down either way.
    override func leave(indices: Range<Int>, ring: _RingBuffer<Element>) {
        if !_stale && indices.count > Self._staleRemovalMinimum && indices.count * 4 >= ring.count { _stale = true }
        let addresses = ring.addresses, mask = UInt32(ring.mask)
        for i in indices {
            let slot = ring.slot(i), address = addresses[slot]
            if !_stale { _index.remove(ring: addresses, mask: mask, element: address, slot: UInt32(slot)) }
            Self._withRegistrar(at: address) { $0._leaveArray() }
        }
    }

    /// See `leave(indices:ring:)`.
    static var _staleRemovalMinimum: Int { 1_024 }

    override func lift(slot: Int, ring: _RingBuffer<Element>) {
        if _stale { return }
        _index.remove(ring: ring.addresses, mask: UInt32(ring.mask), element: ring.addresses[slot], slot: UInt32(slot))
    }

    override func place(slot: Int, ring: _RingBuffer<Element>) {
        if _stale { return }
        _index.insert(ring: ring.addresses, mask: UInt32(ring.mask), element: ring.addresses[slot], slot: UInt32(slot))
    }

    override func move(from: Int, to: Int, ring: _RingBuffer<Element>) {
        if _stale { return }
        _index.move(mask: UInt32(ring.mask), element: ring.addresses[to], from: UInt32(from), to: UInt32(to))
    }

    override func rebuild(_ ring: _RingBuffer<Element>) {
        _stale = false
        _lookedUpSinceLogEmptied = false
        if ring.capacity == 0 { _index.clear(); return }
        _index.rebuild(ring: ring.addresses, mask: UInt32(ring.mask), head: UInt32(ring.head), count: ring.count)
    }

    override func leaveAll(_ ring: _RingBuffer<Element>) {
        Self._forEachRegistrar(ring) { $0._leaveArray() }
        _index.clear()
        _stale = false
        _lookedUpSinceLogEmptied = false
    }

    override func deactivate(_ ring: _RingBuffer<Element>) {
        guard _active else { return }
        _active = false
        leaveAll(ring)
        _ElementTrackerDirectory.shared.unregister(self, keyIDs: keys.map(\.id))
    }

    override func appendModifyRuns(ofElementAt address: UInt, ring: _RingBuffer<Element>, to runs: inout [_ArrayRun]) -> Bool {
        guard ring.capacity > 0 else { return false }
        _refresh(ring)
        _lookedUpSinceLogEmptied = true
        if let slot = _index.singleSlot(ring: ring.addresses, mask: UInt32(ring.mask), element: address) {
            runs.append(_ArrayRun(.modify, start: (Int(slot) &- ring.head) & ring.mask, length: 1))
            return true
        }
        // Absent, or present several times (singleSlot answers for an element present once).
        _index.lookup(ring: ring.addresses, mask: UInt32(ring.mask), element: address, into: &_slots)
        if _slots.isEmpty { return false }
        // Slots become indices in place and are sorted in place: no temporary arrays.
        for k in _slots.indices { _slots[k] = UInt32(truncatingIfNeeded: (Int(_slots[k]) &- ring.head) & ring.mask) }
        _slots.sort()
        for slot in _slots {
            let index = Int(slot)
            if let last = runs.last, last.start + last.length == index { runs[runs.count - 1].length += 1 }
            else { runs.append(_ArrayRun(.modify, start: index, length: 1)) }
        }
        return true
    }

    /// Heap bytes of the position index (benchmark figures).
    var indexBytes: Int { _index.bytes }

    func checkInvariants(_ ring: _RingBuffer<Element>) {
        _refresh(ring)
        _require(_index.count == ring.count, "_ElementTracker: \(_index.count) index entries for \(ring.count) elements")
        if ring.capacity > 0 { _index.checkInvariants(ring: ring.addresses, mask: UInt32(ring.mask)) }
    }

    override func _loadReceiver() -> (any _ElementChangeReceiver)? { array.load() }
}
