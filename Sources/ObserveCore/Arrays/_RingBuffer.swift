/// The element storage of an ``ObservableArray``: a ring of `capacity` slots (a power of two),
/// the element at logical index `i` in slot `(head + i) & mask`.
///
/// A ring makes inserting at the front O(1) (the head moves back one slot) and lets the
/// element-position index stay valid across front insertions, because positions are recorded
/// as slots and no slot changes. Insertions and removals in the middle move the shorter side.
///
/// Copy-on-write: an ``ArrayChange`` keeps the buffer it was made from as its snapshot, and the
/// array copies the buffer before mutating it while such a snapshot is alive. A copy keeps the
/// same capacity and head, so every slot still names the same element.
///
/// Invariants: `capacity` is a power of two (or 0 with `base` unallocated); exactly the slots
/// `(head + i) & mask` for `i < count` are initialised.
@usableFromInline
internal final class _RingBuffer<Element>: @unchecked Sendable {
    // Mutated only under the owning array's lock, on a uniquely referenced buffer (shared
    // snapshots are read-only), so dynamic exclusivity checks only cost time.
    @usableFromInline @exclusivity(unchecked) private(set) var base: UnsafeMutablePointer<Element>
    @usableFromInline @exclusivity(unchecked) private(set) var capacity: Int
    @usableFromInline @exclusivity(unchecked) var head: Int = 0
    @usableFromInline @exclusivity(unchecked) var count: Int = 0
    /// A `borrowingContiguousCopy` whose elements are still another buffer's references: it
    /// must not release them (see there).
    @usableFromInline @exclusivity(unchecked) var borrowsElements = false
    /// Whether this is a thread-sanitized build, whose readers and writers of a shared buffer
    /// annotate their hand-off (`_CopyOnWriteHandoff`). False otherwise: then `readerDone()` and
    /// `writerFoundUnique()` cost a load of this field and a branch never taken.
    @usableFromInline let _annotatesHandoffs: Bool = _CopyOnWriteHandoff.isActive

    init(capacity requested: Int = 0) {
        let capacity = requested == 0 ? 0 : max(4, Self._roundUp(requested))
        self.capacity = capacity
        self.base = .allocate(capacity: max(capacity, 1))
    }

    deinit {
        assert(!borrowsElements || count == 0, "_RingBuffer: a borrowing copy released with its borrowed elements")
        writerFoundUnique()   // the last reference is gone: freeing writes what readers read
        _forEachRun { start, length, _ in (base + start).deinitialize(count: length) }
        base.deallocate()
    }

    /// A reader (any thread) is done reading this buffer as a snapshot; see `_CopyOnWriteHandoff`.
    @inlinable @inline(__always)
    func readerDone() {
        if _slowPath(_annotatesHandoffs) { _CopyOnWriteHandoff.readerDone(self) }
    }

    /// The owning array found this buffer uniquely referenced and is about to write it (or the
    /// buffer is being freed); see `_CopyOnWriteHandoff`.
    @inlinable @inline(__always)
    func writerFoundUnique() {
        if _slowPath(_annotatesHandoffs) { _CopyOnWriteHandoff.writerFoundUnique(self) }
    }

    /// Calls `body(firstSlot, length, firstIndex)` for the at most two runs of slots that hold
    /// the contents, in logical order: from the head to the end of the allocation, then from its
    /// start. `firstIndex` is the logical index of the run's first element.
    @inline(__always)
    private func _forEachRun(_ body: (Int, Int, Int) -> Void) {
        let firstRun = Swift.min(count, capacity - head)
        if firstRun > 0 { body(head, firstRun, 0) }
        if count > firstRun { body(0, count - firstRun, firstRun) }
    }

    /// Whether the contents occupy consecutive slots (`base + head ..< base + head + count`).
    @inlinable @inline(__always) var isContiguous: Bool { head &+ count <= capacity }

    static func _roundUp(_ n: Int) -> Int {
        _require(n <= 1 << 32, "ObservableArray: more than 2^32 elements")
        var c = 1
        while c < n { c <<= 1 }
        return c
    }

    @inlinable @inline(__always) var mask: Int { capacity - 1 }
    @inlinable @inline(__always) func slot(_ index: Int) -> Int { (head &+ index) & (capacity &- 1) }
    @inlinable @inline(__always) subscript(index: Int) -> Element {
        get { base[slot(index)] }
        set { base[slot(index)] = newValue }
    }

    /// A copy with the same capacity and slot layout.
    func copy() -> _RingBuffer<Element> {
        let copy = _RingBuffer(capacity: 0)
        copy.base.deallocate()
        copy.capacity = capacity
        copy.base = .allocate(capacity: max(capacity, 1))
        copy.head = head
        copy.count = count
        _forEachRun { start, length, _ in (copy.base + start).initialize(from: base + start, count: length) }
        return copy
    }

    /// A copy of the contents in slots 0..<count of a new buffer of the same capacity (contiguous,
    /// head 0).
    @usableFromInline
    func contiguousCopy() -> _RingBuffer<Element> {
        let copy = _RingBuffer(capacity: capacity)
        _forEachRun { start, length, index in (copy.base + index).initialize(from: base + start, count: length) }
        copy.count = count
        return copy
    }

    /// A contiguous copy (head 0, same capacity) whose elements are this buffer's own, copied
    /// bitwise: it takes no reference of its own. Valid only while this buffer is alive and
    /// unchanged (a snapshot the array does not write to). Before it is released it must
    /// `forgetElements()`, or `adoptElements()` to own them, or receive them from this buffer's
    /// `forgetElements()` (`ObservableArray.sort`).
    @usableFromInline
    func borrowingContiguousCopy() -> _RingBuffer<Element> {
        let copy = _RingBuffer(capacity: capacity)
        _forEachRun { start, length, index in
            UnsafeMutableRawPointer(copy.base + index).copyMemory(from: base + start, byteCount: length * MemoryLayout<Element>.stride)
        }
        copy.count = count
        copy.borrowsElements = true
        return copy
    }

    /// Empties the buffer without releasing its elements (their references belong elsewhere).
    @usableFromInline
    func forgetElements() {
        count = 0
        head = 0
    }

    /// `forgetElements()` when this is a `borrowingContiguousCopy` that has not taken
    /// references of its own; nothing otherwise (a copy owning its elements releases them).
    @usableFromInline
    func forgetBorrowedElements() {
        if borrowsElements { forgetElements() }
    }

    /// Takes a reference of its own to each element: a `borrowingContiguousCopy` becomes a copy.
    @usableFromInline
    func adoptElements() {
        _forEachRun { start, length, _ in
            for slot in start..<(start + length) { (base + slot).initialize(to: (base + slot).pointee) }
        }
        borrowsElements = false
    }

    /// Reorders the contents so that new[i] = old[permutation[i]], moving each element once.
    /// Every slot may change: a position index must be rebuilt afterwards.
    func permute(_ permutation: [Int]) {
        _require(permutation.count == count, "ObservableArray: permutation of the wrong size")
        // An index twice would move one element twice (a double release) and leak another; the
        // callers build permutations themselves, so debug builds check it.
        assert(Set(permutation).count == count && permutation.allSatisfy { $0 >= 0 && $0 < count },
               "ObservableArray: not a permutation")
        let newBase = UnsafeMutablePointer<Element>.allocate(capacity: Swift.max(capacity, 1))
        for (i, old) in permutation.enumerated() { (newBase + i).moveInitialize(from: base + slot(old), count: 1) }
        base.deallocate()
        base = newBase
        head = 0
    }

    /// Reallocates to at least `minimumCapacity` slots, elements moved to slots 0..<count.
    /// Every slot changes: a position index must be rebuilt afterwards.
    func grow(to minimumCapacity: Int) {
        _relocate(capacity: max(4, Self._roundUp(max(minimumCapacity, capacity * 2))))
    }

    /// Moves the contents to slots 0..<count of a new allocation of the same capacity, so that
    /// they are contiguous (`isContiguous`). Every slot changes: a position index must be rebuilt.
    func makeContiguous() {
        _relocate(capacity: capacity)
    }

    private func _relocate(capacity newCapacity: Int) {
        let newBase = UnsafeMutablePointer<Element>.allocate(capacity: max(newCapacity, 1))
        _forEachRun { start, length, index in (newBase + index).moveInitialize(from: base + start, count: length) }
        base.deallocate()
        base = newBase
        capacity = newCapacity
        head = 0
    }

    /// Moves the element in slot `from` to the uninitialised slot `to`.
    @inline(__always) func moveSlot(from: Int, to: Int) {
        (base + to).moveInitialize(from: base + from, count: 1)
    }

    /// Moves the `count` elements at logical indices `from...` to logical indices `to...` (the
    /// ranges may overlap; either may be negative, i.e. before the head) in at most a few bulk
    /// moves, one per stretch that is contiguous in both source and destination. The vacated
    /// slots become uninitialised.
    @usableFromInline
    func moveLogical(from: Int, to: Int, count: Int) {
        guard count > 0, from != to else { return }
        if to < from {
            // Toward lower indices: front to back, so no element is overwritten before it moved.
            var done = 0
            while done < count {
                let source = slot(from + done), destination = slot(to + done)
                let run = Swift.min(count - done, capacity - source, capacity - destination)
                (base + destination).moveInitialize(from: base + source, count: run)
                done += run
            }
        } else {
            // Toward higher indices: back to front.
            var remaining = count
            while remaining > 0 {
                let sourceLast = slot(from + remaining - 1), destinationLast = slot(to + remaining - 1)
                let run = Swift.min(remaining, sourceLast + 1, destinationLast + 1)
                (base + destinationLast - run + 1).moveInitialize(from: base + sourceLast - run + 1, count: run)
                remaining -= run
            }
        }
    }

    /// Moves the `count` elements at logical indices `from...` out to `destination`, run by run of
    /// the allocation; their slots become uninitialised. A nil `destination` drops them, for
    /// values with no references only (nothing to deinitialise).
    @inlinable @inline(__always)
    func moveOut(from: Int, count: Int, to destination: UnsafeMutablePointer<Element>?) {
        guard let destination else { return }
        var done = 0
        while done < count {
            let source = slot(from &+ done)
            let run = Swift.min(count &- done, capacity &- source)
            (destination + done).moveInitialize(from: base + source, count: run)
            done &+= run
        }
    }

    /// The `count` elements at logical indices `from...`, moved out into a new array in at most
    /// two runs; their slots become uninitialised.
    @inlinable @inline(__always)
    func movedOut(from: Int, count: Int) -> ContiguousArray<Element> {
        ContiguousArray(unsafeUninitializedCapacity: count) { buffer, initialized in
            moveOut(from: from, count: count, to: buffer.baseAddress.unsafelyUnwrapped)
            initialized = count
        }
    }

    /// Copies `source` into the uninitialised slots at logical indices `index...`, run by run of
    /// the allocation.
    @inlinable @inline(__always)
    func initialize(at index: Int, from source: UnsafeBufferPointer<Element>) {
        var done = 0
        while done < source.count {
            let destination = slot(index &+ done)
            let run = Swift.min(source.count &- done, capacity &- destination)
            (base + destination).initialize(from: source.baseAddress.unsafelyUnwrapped + done, count: run)
            done &+= run
        }
    }

    /// Replaces the `k` elements at logical indices `lower...` with `source`'s, in a ring with room
    /// for the result (`count - k + source.count <= capacity`): the shorter side moves once, by
    /// the difference in length, the old elements are moved out to `removed` (nil drops them:
    /// values with no references only) and the new ones copied in. Growing, the gap opens before
    /// anything is moved out; shrinking, the surplus old elements go out and their slots close
    /// first: every slot a shift moves holds an element.
    @inlinable @inline(__always)
    func replace(at lower: Int, count k: Int, with source: UnsafeBufferPointer<Element>,
                 movingOldTo removed: UnsafeMutablePointer<Element>?) {
        let m = source.count
        if m > k {
            openGap(at: lower &+ k, count: m &- k) { moveLogical(from: $0, to: $1, count: $2) }
        } else if m < k {
            moveOut(from: lower &+ m, count: k &- m, to: removed.map { $0 + m })
            closeGap((lower &+ m)..<(lower &+ k)) { moveLogical(from: $0, to: $1, count: $2) }
        }
        moveOut(from: lower, count: Swift.min(k, m), to: removed)
        initialize(at: lower, from: source)
    }

    /// Opens `k` uninitialised slots at logical `index` (the count grows by `k`), moving the
    /// shorter side with `move(from, to, count)` (logical indices, as `moveLogical`; the array's
    /// general path passes a move that also keeps its position index right).
    @inlinable @inline(__always)
    func openGap(at index: Int, count k: Int, moving move: (Int, Int, Int) -> Void) {
        if index < count - index {
            move(0, -k, index)
            head = (head &- k) & mask
        } else {
            move(index, index + k, count - index)
        }
        count &+= k
    }

    /// Closes the gap of the already vacated slots at logical `range` (the count shrinks by its
    /// length), moving the shorter side with `move(from, to, count)`, as `openGap` does.
    @inlinable @inline(__always)
    func closeGap(_ range: Range<Int>, moving move: (Int, Int, Int) -> Void) {
        let k = range.count
        if range.lowerBound < count - range.upperBound {
            move(0, k, range.lowerBound)
            head = (head &+ k) & mask
        } else {
            move(range.upperBound, range.lowerBound, count - range.upperBound)
        }
        count &-= k
    }

    /// The element addresses of the slots, for the position index (class elements only).
    @inline(__always) var addresses: _RingAddresses { _RingAddresses(raw: UnsafeRawPointer(base)) }

    /// The elements in logical order.
    func elements() -> ContiguousArray<Element> {
        // Empty: not through the initializer, which stores the count into the stdlib's shared
        // empty-array singleton at capacity 0 (a race between threads, for ThreadSanitizer).
        if count == 0 { return [] }
        return ContiguousArray(unsafeUninitializedCapacity: count) { buffer, initialized in
            _forEachRun { start, length, index in
                (buffer.baseAddress! + index).initialize(from: base + start, count: length)
            }
            initialized = count
        }
    }

    /// Replaces all contents with `elements` (capacity kept when it suffices).
    func replaceAll<C: Collection>(with elements: C) where C.Element == Element {
        _forEachRun { start, length, _ in (base + start).deinitialize(count: length) }
        count = 0
        head = 0
        let n = elements.count
        if n > capacity {
            base.deallocate()
            capacity = max(4, Self._roundUp(n))
            base = .allocate(capacity: capacity)
        }
        // One bulk copy from contiguous elements (the array's initializer passes a
        // `ContiguousArray`): this code is not specialised, and the element-by-element loop
        // through `Collection`'s witnesses cost ~270 instructions per element (callgrind).
        let copied: Void? = n == 0 ? () : elements.withContiguousStorageIfAvailable { source in
            base.initialize(from: source.baseAddress.unsafelyUnwrapped, count: n)
        }
        if copied == nil {
            var i = 0
            for element in elements {
                (base + i).initialize(to: element)
                i += 1
            }
        }
        count = n
    }
}

/// A ring's slots read as element addresses, for the position index (class elements only).
///
/// The slots' memory is bound to the element type, so Swift must not read it through an
/// `UnsafePointer<UInt>` (type-based aliasing: a typed access to memory bound to another type is
/// undefined behaviour); these are raw loads of a trivial type, which the memory model allows,
/// and the C index receives the raw pointer (`const void *`) and reads it through `memcpy`.
internal struct _RingAddresses {
    let raw: UnsafeRawPointer

    /// The address of the element in `slot`.
    @inline(__always) subscript(slot: Int) -> UInt {
        raw.load(fromByteOffset: slot &* MemoryLayout<UInt>.stride, as: UInt.self)
    }
}
