/// One change of an ``ObservableArray``: what kind of mutation it was and which elements moved,
/// with their old and new indices.
///
/// The change is stored compactly, as runs of index ranges (appending 100,000 elements is one
/// run); ``elements`` materialises the per-element list only when read.
///
/// ```swift
/// let token = teacher.observeArray(\.students) { teacher, change in
///     switch change.kind {
///     case .append, .insert: print("inserted", change.insertedCount)
///     case .elementChanged: print(change.elementKeyPath!, "changed at", change.elements.map(\.newIndex!))
///     default: break
///     }
///     for e in change.elements { print(e.element, e.oldIndex as Any, e.newIndex as Any) }
/// }
/// ```
///
/// Indices follow `CollectionDifference`: removals and move sources are indices into the array
/// *before* the change, insertions and move destinations indices into the array *after* it;
/// ``applying(to:)`` turns the old contents into the new ones.
public struct ArrayChange<Element> {
    /// What happened.
    public enum Kind: Sendable, Equatable {
        /// Elements inserted at an index other than the end (`insert(_:at:)`, `insert(contentsOf:at:)`).
        case insert
        /// Elements added at the end (`append`, `append(contentsOf:)`).
        case append
        /// Elements removed other than only the last one (`remove(at:)`, `removeAll`, `removeAll(where:)`, …).
        case remove
        /// The last element removed (`removeLast`, `popLast`).
        case removeLast
        /// Elements replaced (subscript set, `replaceSubrange`): removals and insertions at the same place.
        case replace
        /// Elements moved without being added or removed (`swapAt`, `move`, `sort`, `reverse`, `shuffle`).
        case move
        /// A property of an element changed (observations with element key paths).
        case elementChanged
        /// The owner's property now refers to another array (``oldArray`` and ``newArray``); also
        /// the `.initial` change, and the change a `.latest` array stream folds several into:
        /// "the contents are now these" (``applying(to:)`` gives them).
        case arrayReplaced
        /// Several mutations made in ``ObservableArray/performBatchUpdates(_:)``, coalesced.
        case batch
    }

    /// The kind of one run of indices.
    public enum RunKind: Sendable, Equatable {
        /// Elements removed; `range` is in old indices.
        case remove
        /// Elements inserted; `range` is in new indices.
        case insert
        /// Elements moved; `range` is in old indices, `destination` the first new index.
        case move
        /// Elements that stayed but changed; `range` is in new indices.
        case modify
    }

    /// One run of consecutive indices.
    public struct Run: Sendable, Equatable {
        /// What happened to the elements of the run.
        public let kind: RunKind
        /// The run's indices: old indices for removals and moves, new ones for insertions and
        /// modifications.
        public let range: Range<Int>
        /// For ``RunKind/move``, the new index of the first element of the run.
        public let destination: Int?

        /// A run (for comparing against expected changes in tests).
        public init(kind: RunKind, range: Range<Int>, destination: Int?) {
            self.kind = kind
            self.range = range
            self.destination = destination
        }
    }

    /// One changed element and where it was and is.
    public struct ChangedElement {
        /// The element (for removals, the removed element).
        public let element: Element
        /// Its index before the change; nil for an inserted element.
        public let oldIndex: Int?
        /// Its index after the change; nil for a removed element.
        public let newIndex: Int?

        @inlinable
        init(element: Element, oldIndex: Int?, newIndex: Int?) {
            self.element = element
            self.oldIndex = oldIndex
            self.newIndex = newIndex
        }
    }

    /// Everything a change holds, in one reference: copying a change costs one retain.
    @usableFromInline internal let _box: _ArrayChangeBox<Element>

    /// What happened.
    @inlinable public var kind: Kind { _box.kind }
    /// True for the notification sent at registration (option `.initial`), of kind ``Kind/arrayReplaced``.
    @inlinable public var isInitial: Bool { _box.isInitial }
    /// The number of elements before the change.
    @inlinable public var oldCount: Int { _box.oldCount }
    /// The number of elements after the change.
    @inlinable public var newCount: Int { _box.newCount }
    /// For ``Kind/elementChanged``: the element property that changed.
    @inlinable public var elementKeyPath: AnyKeyPath? { _box.elementKeyPath }
    /// For ``Kind/elementChanged``: the property's value before the change, when the observation
    /// asked for `.old` (``elementChange(for:)`` gives it typed). An optional property's value is
    /// unwrapped one level: nil when the property was nil.
    public var elementOldValue: Any? { _box._hasValues ? _box._values?.anyOld : nil }
    /// For ``Kind/elementChanged``: the property's value after the change, when the observation
    /// asked for `.new` (``elementChange(for:)`` gives it typed). An optional property's value is
    /// unwrapped one level: nil when the property is nil.
    public var elementNewValue: Any? { _box._hasValues ? _box._values?.anyNew : nil }
    /// For ``Kind/arrayReplaced``: the array the owner's property held before (nil for `.initial`).
    @inlinable public var oldArray: ObservableArray<Element>? { _box.oldArray }
    /// For ``Kind/arrayReplaced``: the array the owner's property holds now.
    @inlinable public var newArray: ObservableArray<Element>? { _box.newArray }

    @inlinable internal var _runs: [_ArrayRun] { _box.runs }
    @inlinable internal var _removed: _RemovedValues<Element> { _box.removed }
    /// The array's contents right after the change (shared copy-on-write with the array).
    @inlinable internal var _snapshot: _RingBuffer<Element>? { _box.snapshot }

    internal init(kind: Kind, runs: [_ArrayRun], removed: _RemovedValues<Element>, snapshot: _RingBuffer<Element>?,
                  oldCount: Int, newCount: Int, isInitial: Bool = false,
                  oldArray: ObservableArray<Element>? = nil, newArray: ObservableArray<Element>? = nil) {
        _box = _ArrayChangeBox(kind: kind, runs: runs, removed: removed, snapshot: snapshot, oldCount: oldCount,
                               newCount: newCount, isInitial: isInitial, oldArray: oldArray, newArray: newArray)
    }

    /// "The contents are now `array`'s": an ``Kind/arrayReplaced`` change holding a snapshot of
    /// `array` (its count read once, and stated as read: `_CopyOnWriteHandoff`; the change's
    /// own readers state theirs).
    internal static func _replaced(by array: ObservableArray<Element>, oldCount: Int, isInitial: Bool,
                                   oldArray: ObservableArray<Element>? = nil) -> ArrayChange {
        let snapshot = array._snapshot()
        let count = snapshot.count
        snapshot.readerDone()
        return ArrayChange(kind: .arrayReplaced, runs: [], removed: .none, snapshot: snapshot, oldCount: oldCount,
                           newCount: count, isInitial: isInitial, oldArray: oldArray, newArray: array)
    }

    /// A change made of a filled box (the element-change path, which recycles boxes).
    internal init(_box box: _ArrayChangeBox<Element>) {
        _box = box
    }

    /// The runs of the change in canonical order: removals, insertions, moves, modifications,
    /// each ascending. Cheap: no element is touched.
    @inlinable public var runs: [Run] { Self._publicRuns(_runs) }

    /// `runs` as the public type. Inlinable, so that the caller's specialization builds the
    /// array: run unspecialized, every `Run` appended looked up the generic metadata of
    /// `ArrayChange<Element>.Run` and of its array (about 390 instructions per run, callgrind).
    @inlinable
    internal static func _publicRuns(_ runs: [_ArrayRun]) -> [Run] {
        runs.map { run in
            let kind: RunKind
            switch run.op {
            case .remove: kind = .remove
            case .insert: kind = .insert
            case .move: kind = .move
            case .modify: kind = .modify
            }
            return Run(kind: kind, range: run.start..<(run.start + run.length),
                       destination: run.op == .move ? run.to : nil)
        }
    }

    /// How many elements were removed (moves not counted).
    public var removedCount: Int { _runs.reduce(0) { $0 + ($1.op == .remove ? $1.length : 0) } }
    /// How many elements were inserted (moves not counted).
    public var insertedCount: Int { _runs.reduce(0) { $0 + ($1.op == .insert ? $1.length : 0) } }

    /// Every changed element with its old and new index: removals (ascending old index), then
    /// insertions (ascending new index), then moves (ascending old index), then modifications.
    ///
    /// A lazy collection over the runs: nothing is materialised until an element is read, and a
    /// change of one run (an element change, an append) reads its elements without allocating.
    @inlinable public var elements: Elements { Elements(self) }

    /// The changed elements of a change, computed from its runs on access.
    public struct Elements: RandomAccessCollection {
        @usableFromInline internal let _change: ArrayChange<Element>
        /// Where each run starts among the elements, for a change of several runs; nil for one
        /// run (an element change, an append), whose elements are then read with no lookup and
        /// no allocation.
        @usableFromInline internal let _layout: _ElementsLayout?
        public let count: Int

        @inlinable
        init(_ change: ArrayChange<Element>) {
            _change = change
            let runs = change._runs
            if runs.count <= 1 {
                // One run: offsets are positions, and a modified element kept its index.
                _layout = nil
                count = runs.first?.length ?? 0
            } else {
                let layout = _ElementsLayout(runs: runs, mapsKeptIndices: change.kind != .elementChanged)
                _layout = layout
                count = layout.offsets.last!
            }
        }

        @inlinable public var startIndex: Int { 0 }
        @inlinable public var endIndex: Int { count }

        @inlinable
        public subscript(position: Int) -> ChangedElement {
            _require(position >= 0 && position < count,
                     "ArrayChange.elements: index \(position) out of range for count \(count)")
            guard let layout = _layout else {
                return _change._element(run: 0, offset: position, position: position, keptMap: nil)
            }
            let (runIndex, offset) = layout.run(containing: position)
            return _change._element(run: runIndex, offset: offset, position: position, keptMap: layout.keptMap)
        }
    }

    /// The element at `offset` within run `runIndex`, which is element number `position` of the
    /// change. Removal runs come first in canonical order, so a removal's position is also its
    /// ordinal among the removed values.
    @inlinable
    internal func _element(run runIndex: Int, offset: Int, position: Int, keptMap: _KeptIndexMap?) -> ChangedElement {
        let run = _runs[runIndex]
        switch run.op {
        case .remove:
            let old = run.start + offset
            return ChangedElement(element: _removed.value(oldIndex: old, ordinal: position),
                                  oldIndex: old, newIndex: nil)
        case .insert:
            return ChangedElement(element: _snapshotElement(at: run.start + offset),
                                  oldIndex: nil, newIndex: run.start + offset)
        case .move:
            return ChangedElement(element: _snapshotElement(at: run.to + offset),
                                  oldIndex: run.start + offset, newIndex: run.to + offset)
        case .modify:
            let new = run.start + offset
            return ChangedElement(element: _snapshotElement(at: new),
                                  oldIndex: keptMap?.oldIndex(ofNewIndex: new) ?? new, newIndex: new)
        }
    }

    /// The element at `index` of the array after the change, read from the change's snapshot.
    @inlinable @inline(__always)
    internal func _snapshotElement(at index: Int) -> Element {
        let snapshot = _snapshot.unsafelyUnwrapped
        let element = snapshot[index]
        snapshot.readerDone()
        return element
    }

    /// The change as the standard library's `CollectionDifference` (moves become associated
    /// removal/insertion pairs), or nil for ``Kind/elementChanged`` and ``Kind/arrayReplaced``.
    public var difference: CollectionDifference<Element>? {
        if kind == .elementChanged || kind == .arrayReplaced { return nil }
        defer { _snapshot?.readerDone() }
        var changes: [CollectionDifference<Element>.Change] = []
        var removedOrdinal = 0
        for run in _runs {
            for offset in 0..<run.length {
                switch run.op {
                case .remove:
                    let old = run.start + offset
                    changes.append(.remove(offset: old, element: _removed.value(oldIndex: old, ordinal: removedOrdinal),
                                           associatedWith: nil))
                    removedOrdinal += 1
                case .insert:
                    let new = run.start + offset
                    changes.append(.insert(offset: new, element: _snapshot.unsafelyUnwrapped[new], associatedWith: nil))
                case .move:
                    let old = run.start + offset, new = run.to + offset
                    let element = _snapshot.unsafelyUnwrapped[new]
                    changes.append(.remove(offset: old, element: element, associatedWith: new))
                    changes.append(.insert(offset: new, element: element, associatedWith: old))
                case .modify:
                    break
                }
            }
        }
        return CollectionDifference(changes)
    }

    /// The old contents turned into the new ones by this change (`old` must be the array's
    /// contents before the change). For ``Kind/arrayReplaced``, the new array's contents.
    public func applying(to old: [Element]) -> [Element]? {
        if kind == .arrayReplaced {
            // The contents as the change saw them (a later mutation of the array is not in it).
            if let snapshot = _snapshot {
                defer { snapshot.readerDone() }
                return Array(snapshot.elements())
            }
            return newArray.map { Array($0) }
        }
        guard let difference else { return old }
        return old.applying(difference)
    }
}

extension ArrayChange {
    /// The old and new values of an element property change, typed: nil unless this is an
    /// ``Kind/elementChanged`` change of `keyPath`. Each value is present when the observation
    /// asked for it (`.old`, `.new`).
    ///
    /// ```swift
    /// let token = students.observe(options: [.old, .new], elementKeyPaths: [\.name, \.grade]) { _, change in
    ///     if let (old, new) = change.elementChange(for: \.grade) { print("grade", old!, "->", new!) }
    ///     if let (_, name) = change.elementChange(for: \.name) { print("renamed to", name!) }
    /// }
    /// ```
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func elementChange<Value>(for keyPath: KeyPath<Element, Value>) -> (old: Value?, new: Value?)? {
        _elementValues(for: keyPath)
    }

    /// The typed values of an element change of `keyPath` (nil for another change); the key
    /// path fixes the value type, so the values are read typed, never boxed.
    internal func _elementValues<Value>(for keyPath: KeyPath<Element, Value>) -> (old: Value?, new: Value?)? {
        guard kind == .elementChanged, let changed = elementKeyPath, changed == keyPath else { return nil }
        guard _box._hasValues, let values = _box._values, values.valueType == ObjectIdentifier(Value.self) else {
            return (nil, nil)
        }
        let typed = unsafeDowncast(values, to: _ElementValues<Value>.self)
        return (typed.old, typed.new)
    }
}

extension ArrayChange.ChangedElement: Equatable where Element: Equatable {}
extension ArrayChange: @unchecked Sendable where Element: Sendable {}
extension ArrayChange.ChangedElement: @unchecked Sendable where Element: Sendable {}
extension ArrayChange.Elements: @unchecked Sendable where Element: Sendable {}

extension ArrayChange: CustomStringConvertible {
    public var description: String {
        var parts = ["\(kind)"]
        for run in runs {
            switch run.kind {
            case .remove: parts.append("-\(run.range)")
            case .insert: parts.append("+\(run.range)")
            case .move: parts.append("\(run.range)->\(run.destination!)")
            case .modify: parts.append("~\(run.range)")
            }
        }
        if let elementKeyPath { parts.append("\(elementKeyPath)") }
        return "ArrayChange(" + parts.joined(separator: " ") + ")"
    }
}

/// Where a change finds the elements it removed.
@usableFromInline
internal enum _RemovedValues<Element> {
    case none
    /// The removed elements in ascending old-index order.
    case values(ContiguousArray<Element>)
    /// The array's whole old storage, read by old index (used when everything was removed).
    case storage(_RingBuffer<Element>)

    @inlinable
    func value(oldIndex: Int, ordinal: Int) -> Element {
        switch self {
        case .none: _misuse("ArrayChange: no removed elements were recorded")
        case .values(let values): return values[ordinal]
        case .storage(let storage): return storage[oldIndex]
        }
    }
}

/// Where each run of a several-run change starts among its ``ArrayChange/Elements``, and, for a
/// change that mixes modifications with structural runs (a batch), the old index of each
/// modified element. Built once per `elements` read.
@usableFromInline
internal final class _ElementsLayout {
    /// Prefix sums of run lengths: run r covers positions offsets[r] ..< offsets[r + 1].
    @usableFromInline let offsets: [Int]
    @usableFromInline let keptMap: _KeptIndexMap?

    @usableFromInline
    init(runs: [_ArrayRun], mapsKeptIndices: Bool) {
        var offsets = [0]
        offsets.reserveCapacity(runs.count + 1)
        for run in runs { offsets.append(offsets.last! + run.length) }
        self.offsets = offsets
        keptMap = mapsKeptIndices ? _KeptIndexMap(runs: runs) : nil
    }

    /// The run holding element `position`, and the position's offset within it (binary search
    /// for the last run whose start offset is <= position).
    @inlinable
    func run(containing position: Int) -> (run: Int, offset: Int) {
        var low = 0, high = offsets.count - 2
        while low < high {
            let mid = (low + high + 1) / 2
            if offsets[mid] <= position { low = mid } else { high = mid - 1 }
        }
        return (low, position - offsets[low])
    }
}

/// Where the elements a change kept (neither inserted nor removed) came from: old index of the
/// element now at a new index, in O(log runs) after one O(runs log runs) pass over the runs.
/// For a change with no modify run there is nothing to ask, and `init` returns nil.
@usableFromInline
internal struct _KeptIndexMap {
    /// Move runs by destination: (to, start, length).
    private var _moves: [(to: Int, start: Int, length: Int)] = []
    /// Old indices that left (removed, or moved away), as sorted disjoint ranges, and for each
    /// range the number of old indices in the ranges before it.
    private var _gone: [(start: Int, length: Int)] = []
    private var _goneBefore: [Int] = []
    /// New indices that arrived (inserted, or moved in), likewise.
    private var _came: [(start: Int, length: Int)] = []
    private var _cameBefore: [Int] = []

    @usableFromInline
    init?(runs: [_ArrayRun]) {
        guard runs.contains(where: { $0.op == .modify }) else { return nil }
        for run in runs {
            switch run.op {
            case .remove: _gone.append((run.start, run.length))
            case .insert: _came.append((run.start, run.length))
            case .move:
                _gone.append((run.start, run.length))
                _came.append((run.to, run.length))
                _moves.append((run.to, run.start, run.length))
            case .modify: break
            }
        }
        _gone.sort { $0.start < $1.start }
        _came.sort { $0.start < $1.start }
        _moves.sort { $0.to < $1.to }
        _goneBefore = Self._prefixLengths(_gone)
        _cameBefore = Self._prefixLengths(_came)
    }

    private static func _prefixLengths(_ ranges: [(start: Int, length: Int)]) -> [Int] {
        var sums: [Int] = []
        sums.reserveCapacity(ranges.count + 1)
        var total = 0
        for range in ranges {
            sums.append(total)
            total += range.length
        }
        sums.append(total)
        return sums
    }

    /// How many of the first `count` indices satisfy `isBelow`, which holds for a prefix of
    /// them (binary search).
    private static func _prefixCount(_ count: Int, _ isBelow: (Int) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if isBelow(mid) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The old index of the kept element now at `newIndex`.
    @usableFromInline
    func oldIndex(ofNewIndex newIndex: Int) -> Int {
        // A modified element that also moved: its move run knows where it came from.
        let moves = Self._prefixCount(_moves.count) { _moves[$0].to <= newIndex }
        if moves > 0, case let move = _moves[moves - 1], newIndex < move.to + move.length {
            return move.start + (newIndex - move.to)
        }
        // Its rank among the kept elements in new coordinates (the arrivals before it skipped;
        // every arrival range but the last one that starts below it lies wholly below it)...
        let arrived = Self._prefixCount(_came.count) { _came[$0].start < newIndex }
        var cameBelow = 0
        if arrived > 0 {
            let last = _came[arrived - 1]
            cameBelow = _cameBefore[arrived - 1] + Swift.min(last.length, newIndex - last.start)
        }
        let rank = newIndex - cameBelow
        // ...is its rank in old coordinates, departures skipped: it lies past departure range k
        // exactly when `start - (lengths before k) <= rank`, which holds for a prefix of them.
        let passed = Self._prefixCount(_gone.count) { _gone[$0].start - _goneBefore[$0] <= rank }
        return rank + _goneBefore[passed]
    }
}

/// The storage of an ``ArrayChange``.
///
/// Immutable once a change holding it has been handed out, with one exception that no reader
/// can see: an array recycles the box of an element change (`ObservableArray._elementDidChange`)
/// when, after delivery, nothing but the array refers to it — no handler kept the change, no
/// queue holds it — and refills it for the next element change, so that delivering one
/// allocates nothing. (Hence `var`s, whose dynamic exclusivity checks are off: the box is
/// written only while exactly one owner holds it, or, parked in its array, under the array's
/// lock.) A parked element box keeps showing the array's storage (`snapshot`) so that the next
/// element change refills it without a retain and a release; the array takes it back before
/// writing the storage (`ObservableArray._reclaimStorageFromSpareBox`).
@usableFromInline
internal final class _ArrayChangeBox<Element>: @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var kind: ArrayChange<Element>.Kind
    @usableFromInline @exclusivity(unchecked) var runs: [_ArrayRun]
    @usableFromInline @exclusivity(unchecked) var removed: _RemovedValues<Element>
    @usableFromInline @exclusivity(unchecked) var snapshot: _RingBuffer<Element>?
    @usableFromInline @exclusivity(unchecked) var oldCount: Int
    @usableFromInline @exclusivity(unchecked) var newCount: Int
    @usableFromInline @exclusivity(unchecked) var isInitial: Bool
    @usableFromInline @exclusivity(unchecked) var elementKeyPath: AnyKeyPath?
    /// The element change's values, typed (see `_ElementValues`); read only while `_hasValues`.
    @usableFromInline @exclusivity(unchecked) var _values: _ElementValuesBase?
    @usableFromInline @exclusivity(unchecked) var oldArray: ObservableArray<Element>?
    @usableFromInline @exclusivity(unchecked) var newArray: ObservableArray<Element>?

    /// An empty element-change box, to be filled by `fillElementChange`.
    init() {
        kind = .elementChanged
        runs = []
        removed = .none
        oldCount = 0
        newCount = 0
        isInitial = false
    }

    /// Whether `_values` holds this change's values (a recycled box keeps its cell, and the
    /// values of an earlier change in it, when the current observers asked for none).
    @usableFromInline @exclusivity(unchecked) var _hasValues = false
    /// The key id `elementKeyPath` was looked up for (a recycled box keeps both).
    @exclusivity(unchecked) var _elementKeyID: UInt32 = 0
    /// An element box's `snapshot` as an address (0 = none), kept with it by `fillElementChange`,
    /// `clearForReuse` and `takeSnapshot(unlessAt:)`: the recycling paths compare and test it without
    /// loading the generic reference (a retain and a release, or metadata, unspecialized).
    @exclusivity(unchecked) var _snapshotAddress: UInt = 0

    /// Whether the element box's snapshot is the only reference to its storage, or there is
    /// none: then the array has moved on to other storage, and the box must not keep it.
    var snapshotIsOrphaned: Bool { _snapshotAddress == 0 || _isOnlyReference(_snapshotAddress) }

    /// For a parked element box, under its array's lock: lets go of the snapshot. When it is the
    /// storage at `current` (the array's, which the array still holds) it is released here; other
    /// storage (which the array gave up while this box was being delivered) is handed back, for
    /// the caller to release once the lock is dropped.
    func takeSnapshot(unlessAt current: UInt) -> AnyObject? {
        if _snapshotAddress == 0 { return nil }
        let isCurrent = _snapshotAddress == current
        _snapshotAddress = 0
        let old: AnyObject? = snapshot.take()
        return isCurrent ? nil : old
    }

    /// Turns a recycled (uniquely referenced) box into a new element change; `runs` must have
    /// been filled already. The key path is kept from one change to the next when it is the same.
    ///
    /// A recycled element box keeps the storage it showed last (`clearForReuse(keepingSnapshot:)`):
    /// when `snapshot` is that storage, nothing is retained or released. Otherwise the one it held
    /// is moved to `stale`, for the caller to release after dropping the array's lock (it may be
    /// the last reference to storage the array no longer uses, and so to its elements).
    func fillElementChange(snapshot: _RingBuffer<Element>, keyID: UInt32, keyPath: () -> AnyKeyPath?,
                           stale: inout AnyObject?) {
        let address = _address(of: snapshot)
        if _snapshotAddress != address {
            stale = self.snapshot.take()
            self.snapshot = snapshot
            _snapshotAddress = address
        }
        oldCount = snapshot.count
        newCount = snapshot.count
        if _elementKeyID != keyID || elementKeyPath == nil {
            elementKeyPath = keyPath()
            _elementKeyID = keyID
        }
    }

    /// Stores the values an observer asked for, typed, through the setter's `values`.
    func storeValues(_ values: _ElementValueStore, wantsOld: Bool, wantsNew: Bool) {
        values(&_values, wantsOld, wantsNew)
        _hasValues = true
    }

    /// Fills a new or recycled box (`clearForReuse`) with a structural change.
    /// The caller sets `runs` (kept empty, with its capacity, by `clearForReuse`).
    func fillStructural(kind: ArrayChange<Element>.Kind, removed: _RemovedValues<Element>,
                        snapshot: _RingBuffer<Element>, oldCount: Int, newCount: Int) {
        self.kind = kind
        self.removed = removed
        self.snapshot = snapshot
        self.oldCount = oldCount
        self.newCount = newCount
    }

    /// Drops what the last change referred to, keeping the runs' capacity, the key path (an
    /// interned key path, alive for the whole process anyway) and the value cell.
    ///
    /// The snapshot goes too, except with `keepingSnapshot` (an element-change box parked in its
    /// array, which takes it back under its lock before writing the storage:
    /// `ObservableArray._reclaimStorageFromSpareBox`); otherwise the array's next mutation would
    /// find its storage shared and copy it.
    func clearForReuse(keepingSnapshot: Bool = false) {
        runs._removeAllKeepingCapacity()   // one run is the usual element change
        if !keepingSnapshot {
            snapshot = nil
            _snapshotAddress = 0
        }
        if case .none = removed {} else { removed = .none }   // removed elements must not outlive the change
        if _hasValues {
            _hasValues = false
            Unmanaged.passUnretained(_values.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
                if $0.holdsReferences { $0.clear() }
            }
        }
    }

    init(kind: ArrayChange<Element>.Kind, runs: [_ArrayRun], removed: _RemovedValues<Element>,
         snapshot: _RingBuffer<Element>?, oldCount: Int, newCount: Int, isInitial: Bool,
         oldArray: ObservableArray<Element>?, newArray: ObservableArray<Element>?) {
        self.kind = kind
        self.runs = runs
        self.removed = removed
        self.snapshot = snapshot
        self.oldCount = oldCount
        self.newCount = newCount
        self.isInitial = isInitial
        self.oldArray = oldArray
        self.newArray = newArray
    }
}
