// Standard collection behaviour. Reads take the lock briefly (or iterate a copy-on-write
// snapshot); the subscript setter is a reported mutation like any other.

extension ObservableArray: RandomAccessCollection, MutableCollection, RangeReplaceableCollection {
    public typealias Index = Int
    public typealias Indices = Range<Int>
    public typealias SubSequence = Slice<ObservableArray<Element>>

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { count }
    /// The number of elements (read under the array's lock).
    @inlinable public var count: Int {
        _lock.lock()
        defer { _lock.unlock() }
        return _storage.count
    }
    /// Whether the array has no elements.
    public var isEmpty: Bool { count == 0 }

    @inlinable public func index(after i: Int) -> Int { i + 1 }
    @inlinable public func index(before i: Int) -> Int { i - 1 }

    /// The element at `position`. Setting it replaces the element: ``ArrayChange/Kind/replace``,
    /// reporting the removed element (old index) and the inserted one (new index), or nothing when
    /// the new element is the same object or an equal value.
    ///
    /// Mutating an element in place (`array[i].append(x)` on an array of arrays, `array[i] += 1`)
    /// changes it where it is stored and reports one ``ArrayChange/Kind/replace``. When nobody
    /// observes the array the element is not copied (a copy-on-write element stays uniquely
    /// referenced); when someone does, the old value is kept for the change's removed element.
    ///
    /// ```swift
    /// let rows = ObservableArray<[Int]>([[1], [2]])
    /// rows[0].append(3)          // in place: rows[0] == [1, 3]
    /// ```
    /// - Important: The array stays locked while the element is being mutated in place: the
    ///   mutation must not use the same array (that traps with a message); it may use anything else.
    @inlinable
    public subscript(position: Int) -> Element {
        get {
            _lock.lock()
            defer { _lock.unlock() }
            _checkIndex(position, "subscript")
            return _storage[position]
        }
        set {
            _lock.lock()
            if _fastPath(_isQuietAndUnique) {
                _checkIndex(position, "subscript")
                let ring = _storage, slot = ring.slot(position)
                let old = (ring.base + slot).move()
                (ring.base + slot).initialize(to: newValue)
                _lock.unlock()
                _ = consume old   // released after unlocking: its deinit may use the array
                return
            }
            _lock.unlock()
            _replace(at: position, with: newValue)
        }
        _modify {
            _lock.lockRecordingHolder()
            _checkIndex(position, "subscript")
            if _fastPath(_isQuietAndUnique) {
                defer { _lock.unlockRecordedHolder() }
                yield &(_storage.base + _storage.slot(position)).pointee
                return
            }
            let old = _beginObservedInPlaceMutation(at: position)
            // In a `defer`, so that a mutation that throws halfway is still recorded.
            defer { _didMutateInPlace(at: position, old: old) }
            yield &(_storage.base + _storage.slot(position)).pointee
        }
    }

    /// Before an in-place mutation that someone may observe (lock held, holder recorded): makes
    /// the storage unique and returns the element's old value, which the change reports.
    @usableFromInline
    internal func _beginObservedInPlaceMutation(at position: Int) -> Element {
        _makeUnique()
        return _storage[position]
    }

    /// After an in-place mutation of the element at `position` that someone may observe (lock
    /// held, holder recorded): records it as a replace of `old`, unlocks, and delivers.
    @usableFromInline
    internal func _didMutateInPlace(at position: Int, old: Element) {
        let pending = _recordInPlaceMutation(at: position, old: old)
        _lock.unlockRecordedHolder()
        pending?.deliver()
    }

    private func _recordInPlaceMutation(at position: Int, old: Element) -> _PendingArrayNotification<Element>? {
        let ring = _storage, slot = ring.slot(position)
        let new = ring.base[slot]
        if _identical(old, new) { return nil }
        if let tracker = _tracker {
            tracker.leave(old, slot: slot, ring: ring)
            tracker.enter(new, slot: slot, ring: ring)
        }
        return _recordReplace(at: position, old: old)
    }

    /// The subscript's setter when someone observes (or the storage is shared).
    @usableFromInline
    internal func _replace(at position: Int, with newValue: Element) {
        _mutate {
            _checkIndex(position, "subscript")
            if _identical(_storage[position], newValue) { return nil }
            return _recordReplace(at: position, old: _replaceElement(at: position, with: newValue))
        }
    }

    /// Records that the element at `position`, formerly `old`, was replaced (lock held).
    private func _recordReplace(at position: Int, old: Element) -> _PendingArrayNotification<Element>? {
        if let batch = _batch {
            _batchRemoved(at: position, [old])
            batch.composer.insert(at: position, count: 1)
            return nil
        }
        guard _mustRecord else { return nil }
        return _pending(.replace, runs: [_ArrayRun(.remove, start: position, length: 1),
                                         _ArrayRun(.insert, start: position, length: 1)],
                        removed: .values([old]), oldCount: _storage.count)
    }

    /// A slice of the array. Assigning a slice of the same length replaces those elements
    /// (one ``ArrayChange/Kind/replace`` change); a different length is a precondition failure.
    public subscript(bounds: Range<Int>) -> Slice<ObservableArray<Element>> {
        get { Slice(base: self, bounds: bounds) }
        set {
            precondition(newValue.count == bounds.count,
                         "ObservableArray: a slice assignment must keep the slice's length")
            replaceSubrange(bounds, with: Array(newValue))
        }
    }

    /// Reserves room for `minimumCapacity` elements (not a change; nothing is reported).
    public func reserveCapacity(_ minimumCapacity: Int) {
        _lock.withLock {
            _makeUnique()
            if minimumCapacity > _storage.capacity {
                _storage.grow(to: minimumCapacity)
                _tracker?.rebuild(_storage)
            }
        }
    }

    /// Iterates over a snapshot of the contents taken when iteration starts.
    public struct Iterator: IteratorProtocol {
        /// Keeps the snapshot alive (and unmutated: the array copies shared storage first).
        @usableFromInline let _storage: _RingBuffer<Element>
        // The ring's geometry, read once: `next()` then touches no class field.
        @usableFromInline let _base: UnsafeMutablePointer<Element>
        @usableFromInline let _mask: Int
        @usableFromInline let _head: Int
        @usableFromInline let _count: Int
        @usableFromInline var _index = 0

        @inlinable
        init(_storage: _RingBuffer<Element>) {
            self._storage = _storage
            _base = _storage.base
            _mask = _storage.capacity &- 1
            _head = _storage.head
            _count = _storage.count
        }

        /// The next element of the snapshot, or nil at its end.
        @inlinable
        public mutating func next() -> Element? {
            guard _index < _count else { return nil }
            defer { _index &+= 1 }
            return _base[(_head &+ _index) & _mask]
        }
    }

    /// An iterator over the contents as they are now; later mutations do not affect it.
    @inlinable
    public func makeIterator() -> Iterator {
        _lock.lock()
        defer { _lock.unlock() }
        return Iterator(_storage: _storage)
    }
}
