// Standard collection behaviour. Reads take the lock briefly (or iterate a copy-on-write
// snapshot); the subscript setter is a reported mutation like any other.

extension ObservableArray: RandomAccessCollection, MutableCollection, RangeReplaceableCollection {
    public typealias Index = Int
    public typealias Indices = Range<Int>
    public typealias SubSequence = Slice<ObservableArray<Element>>

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { count }
    /// The number of elements (read under the array's lock).
    @inlinable @inline(__always) public var count: Int {
        _lock.lock()
        defer { _lock.unlock(movingOnly: Int.self) }
        return _storage.count
    }
    /// Whether the array has no elements.
    public var isEmpty: Bool { count == 0 }

    /// The first element, or nil when the array is empty (read under one lock acquisition;
    /// `Collection`'s default took two, for `isEmpty` and the subscript).
    @inlinable @inline(__always) public var first: Element? {
        _lock.lock()
        defer { _lock.unlock(movingOnly: Element.self) }
        return _storage.count == 0 ? nil : _storage[0]
    }

    /// The last element, or nil when the array is empty (read under one lock acquisition).
    @inlinable @inline(__always) public var last: Element? {
        _lock.lock()
        defer { _lock.unlock(movingOnly: Element.self) }
        return _storage.count == 0 ? nil : _storage[_storage.count &- 1]
    }

    @inlinable public func index(after i: Int) -> Int { i + 1 }
    @inlinable public func index(before i: Int) -> Int { i - 1 }

    /// The element at `position`. Setting it replaces the element: ``ArrayChange/Kind/replace``,
    /// reporting the removed element (old index) and the inserted one (new index), or nothing when
    /// the new element is the same object or an equal value.
    ///
    /// Mutating an element through the subscript (`array[i].append(x)` on an array of arrays,
    /// `array[i] += 1`) reports one ``ArrayChange/Kind/replace`` (nothing when the element ends up
    /// the same). When nobody observes the array, no element is tracked and no batch is open, the
    /// element is mutated where it is stored, under the array's lock, and is not copied (a
    /// copy-on-write element stays uniquely referenced). Otherwise the element is copied out,
    /// mutated, and assigned back, as `array[i] = x` would (the old value is the change's removed
    /// element), and the array is not locked meanwhile.
    ///
    /// ```swift
    /// let rows = ObservableArray<[Int]>([[1], [2]])
    /// rows[0].append(3)          // in place: rows[0] == [1, 3]
    /// ```
    /// - Important: While an element of an unobserved array is mutated in place, the mutation
    ///   must not use the same array: not `array[i].mutate { array.count }`, not
    ///   `swap(&array[i], &array[j])` (use ``swapAt(_:_:)``), and not an `await` inside the access
    ///   (`await f(&array[i])` keeps the array locked across the suspension). Using it from the
    ///   same thread traps with a message.
    @inlinable
    public subscript(position: Int) -> Element {
        @inline(__always) get {
            _lock.lock()
            defer { _lock.unlock(movingOnly: Element.self) }
            _checkIndex(position, "subscript")
            return _storage[position]
        }
        @inline(__always) set {
            _lock.lock()
            if _fastPath(_isQuietAndUnique) {
                _checkIndex(position, "subscript")
                unowned(unsafe) let ring = _storage   // _storage keeps it alive while the lock is held
                let slot = ring.slot(position)
                let old = (ring.base + slot).move()
                (ring.base + slot).initialize(to: newValue)
                _lock.unlock(movingOnly: Element.self)
                _releaseAfterUnlocking(old)   // its deinit may use the array
                return
            }
            _lock.unlock(movingOnly: Element.self)
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
            // Observed (or shared storage, or a batch): the old value is kept for the change
            // anyway, so the element is mutated as a copy, with no lock held (the mutation may set
            // a tracked element's property, or a handler may read the array).
            var element = _storage[position]
            _lock.unlockRecordedHolder()
            // In a `defer`, so that a mutation that throws halfway is still recorded.
            defer { _replace(at: position, with: element) }
            yield &element
        }
    }

    /// The subscript's setter when someone observes (or the storage is shared).
    @usableFromInline
    internal func _replace(at position: Int, with newValue: Element) {
        _mutate {
            _checkIndex(position, "subscript")
            if _identical(_storage[position], newValue) { return nil }
            let old = _replaceElement(at: position, with: newValue)
            if let batch = _batch {
                _batchRemoved(at: position, [old])
                batch.composer.insert(at: position, count: 1)
                return nil
            }
            guard _mustRecord else {
                _keepUntilUnlocked(old)   // its deinit may use the array
                return nil
            }
            return _pending(.replace, removed: .values([old]), oldCount: _storage.count) { runs in
                runs.append(_ArrayRun(.remove, start: position, length: 1))
                runs.append(_ArrayRun(.insert, start: position, length: 1))
            }
        }
    }

    /// A slice of the array. Assigning a slice of the same length replaces those elements
    /// (one ``ArrayChange/Kind/replace`` change); a different length is a precondition failure.
    public subscript(bounds: Range<Int>) -> Slice<ObservableArray<Element>> {
        get { Slice(base: self, bounds: bounds) }
        set {
            _require(newValue.count == bounds.count,
                     "ObservableArray: a slice assignment must keep the slice's length (\(bounds.count) elements, "
                     + "not \(newValue.count))")
            replaceSubrange(bounds, with: Array(newValue))
        }
    }

    /// Reserves room for `minimumCapacity` elements (not a change; nothing is reported).
    public func reserveCapacity(_ minimumCapacity: Int) {
        _withLockReleasingAfter {
            _makeUnique()
            if minimumCapacity > _storage.capacity {
                _storage.grow(to: minimumCapacity)
                _tracker?.rebuild(_storage)
            }
        }
    }

    /// Iterates over a snapshot of the contents taken when iteration starts.
    ///
    /// The snapshot's contents are contiguous: `next()` walks one pointer to one end, so a loop
    /// over the array compiles to what a loop over a buffer does (the optimiser vectorises a sum
    /// of `Int`s, as for `Array`).
    public struct Iterator: IteratorProtocol {
        /// Keeps the snapshot alive (and unmutated: the array copies shared storage first).
        @usableFromInline let _storage: _RingBuffer<Element>
        /// The next element, and the end of the contents.
        @usableFromInline var _next: UnsafeMutablePointer<Element>
        @usableFromInline let _end: UnsafeMutablePointer<Element>

        /// - Precondition: `_storage.isContiguous`.
        @inlinable
        init(_storage: _RingBuffer<Element>) {
            self._storage = _storage
            _next = _storage.base + _storage.head
            _end = _next + _storage.count
        }

        /// The next element of the snapshot, or nil at its end.
        @inlinable
        public mutating func next() -> Element? {
            guard _next != _end else {
                _storage.readerDone()
                return nil
            }
            defer { _next += 1 }
            return _next.pointee
        }
    }

    /// An iterator over the contents as they are now; later mutations do not affect it.
    ///
    /// - Complexity: O(1), or O(n) when the ring wraps around its allocation (after insertions
    ///   or removals at the front): the contents are then laid out contiguously first (in place,
    ///   so later iterations find them contiguous; a loop that stops early pays it too).
    @inlinable
    public func makeIterator() -> Iterator {
        _lock.lock()
        defer { _lock.unlock() }
        if _slowPath(!_storage.isContiguous) { return Iterator(_storage: _contiguousStorageForIteration()) }
        return Iterator(_storage: _storage)
    }

    /// Calls `body` with the contents as they are now, contiguous: a snapshot, as an iterator
    /// reads (later mutations do not affect it). Not `withContiguousStorageIfAvailable`: `Slice`
    /// forwards that to its base and cuts the buffer at the slice's bounds unchecked, and a
    /// slice's bounds were fixed when it was made, so a slice the array has since outgrown would
    /// read past the snapshot instead of trapping.
    @inlinable
    internal func _withSnapshotBuffer<R, E: Error>(_ body: (UnsafeBufferPointer<Element>) throws(E) -> R) throws(E) -> R {
        let iterator = makeIterator()
        defer { iterator._storage.readerDone() }
        return try withExtendedLifetime(iterator) { () throws(E) -> R in
            try body(UnsafeBufferPointer(start: iterator._next, count: iterator._end - iterator._next))
        }
    }

    /// An array of `transform` applied to each element of a snapshot of the contents (one lock
    /// acquisition, not one per element as `Collection`'s default `map` takes).
    ///
    /// ```swift
    /// let names = students.map(\.name)
    /// ```
    @inlinable
    public func map<T, E: Error>(_ transform: (Element) throws(E) -> T) throws(E) -> [T] {
        try _withSnapshotBuffer { (elements) throws(E) -> [T] in
            if elements.isEmpty { return [] }   // never writes the shared empty array
            // Written in place: appending kept a retain and a release per element (11x Array).
            return try [T](unsafeUninitializedCapacity: elements.count) { (result, initialized) throws(E) in
                for index in elements.indices {
                    (result.baseAddress.unsafelyUnwrapped + index).initialize(to: try transform(elements[index]))
                    initialized = index &+ 1
                }
            }
        }
    }

    /// The index of the first element that satisfies `predicate`, or nil: one pass over a
    /// snapshot of the contents (the predicate may read the array; mutations meanwhile do not
    /// affect the pass).
    @inlinable
    public func firstIndex(where predicate: (Element) throws -> Bool) rethrows -> Int? {
        var iterator = makeIterator()
        var index = 0
        while let element = iterator.next() {
            if try predicate(element) { return index }
            index &+= 1
        }
        return nil
    }

    /// The elements of a snapshot of the contents that satisfy `isIncluded`, in order, in a new
    /// array that nobody observes yet: one pass with no lock held (the predicate may read the
    /// array), then one build, where `RangeReplaceableCollection`'s default appended, and so
    /// locked, once per element kept.
    ///
    /// ```swift
    /// let passing = students.filter { $0.grade >= 50 }   // an ObservableArray<Student>
    /// ```
    @inlinable
    public func filter(_ isIncluded: (Element) throws -> Bool) rethrows -> ObservableArray<Element> {
        // `_withSnapshotBuffer`'s body, written out: its typed throws cannot carry `rethrows`.
        let iterator = makeIterator()
        defer { iterator._storage.readerDone() }
        let kept = try withExtendedLifetime(iterator) { () throws -> ContiguousArray<Element> in
            var kept = ContiguousArray<Element>()
            for element in UnsafeBufferPointer(start: iterator._next, count: iterator._end - iterator._next)
            where try isIncluded(element) {
                kept.append(element)
            }
            return kept
        }
        return ObservableArray(kept)
    }

    /// The index of the last element that satisfies `predicate`, or nil: one backward pass over a
    /// snapshot of the contents.
    @inlinable
    public func lastIndex(where predicate: (Element) throws -> Bool) rethrows -> Int? {
        // `_withSnapshotBuffer`'s body, written out: its typed throws cannot carry `rethrows`.
        let iterator = makeIterator()
        defer { iterator._storage.readerDone() }
        return try withExtendedLifetime(iterator) {
            let elements = UnsafeBufferPointer(start: iterator._next, count: iterator._end - iterator._next)
            for index in elements.indices.reversed() where try predicate(elements[index]) { return index }
            return nil
        }
    }

    /// Contiguous storage for an iterator of a ring that wraps (lock held): the array's own
    /// storage, relaid out in place, when nothing shares it (a tracked element's position is its
    /// slot, so the position index is rebuilt, as after growing); otherwise a contiguous copy for
    /// this iterator alone.
    @usableFromInline
    internal func _contiguousStorageForIteration() -> _RingBuffer<Element> {
        _reclaimStorageFromSpareBox()
        if isKnownUniquelyReferenced(&_storage) {
            _storage.writerFoundUnique()
            _storage.makeContiguous()
            _tracker?.rebuild(_storage)
            return _storage
        }
        return _storage.contiguousCopy()
    }
}

extension ObservableArray where Element: Equatable {
    /// The index of the first element equal to `element`, or nil: one pass over a snapshot.
    @inlinable
    public func firstIndex(of element: Element) -> Int? {
        firstIndex { $0 == element }
    }

    /// The index of the last element equal to `element`, or nil: one backward pass over a snapshot.
    @inlinable
    public func lastIndex(of element: Element) -> Int? {
        lastIndex { $0 == element }
    }
}
