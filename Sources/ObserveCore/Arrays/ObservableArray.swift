internal import CObserveCore
import Synchronization

/// An array whose every mutation is reported to its observers, with the exact indices that
/// changed, and whose elements' properties can be observed without one registration per element.
///
/// ```swift
/// final class Teacher: KeyValueObservable {
///     let kvoRegistrar = KeyValueRegistrar()
///     static let students = ObservableKey(\Teacher.students)
///     var students = ObservableArray<Student>() {
///         willSet { kvoRegistrar.willSet(Teacher.students, of: self, from: students) }
///         didSet { kvoRegistrar.didSet(Teacher.students, of: self, from: oldValue, to: students) }
///     }
/// }
///
/// let token = teacher.observeArray(\.students, elementKeyPaths: [\.name]) { teacher, change in
///     for e in change.elements { print(change.kind, e.element.name, e.oldIndex as Any, e.newIndex as Any) }
/// }
/// teacher.students.append(ada)                       // .append, new index 0
/// teacher.students.performBatchUpdates { students in // one coalesced .batch change
///     students.remove(at: 0); students.insert(grace, at: 0)
/// }
/// ada.name = "Ada L."                                // .elementChanged at her index, if still present
/// ```
///
/// It is a class: every holder sees the same contents, and one array held by two owners
/// notifies the observers of both. It conforms to `RandomAccessCollection`,
/// `MutableCollection` and `RangeReplaceableCollection`; every mutation, through any entry point,
/// is reported (generic algorithms that go through the subscript report element by element).
///
/// Storage is a ring buffer, so `insert(_:at: 0)` and `removeFirst()` are O(1) amortised, like
/// appending. Thread safety: every operation takes the array's lock; handlers run after it is
/// released. Reading while another thread mutates sees one state or the other, never a mix.
///
/// Reentrancy: a handler may mutate the array it observes. The nested mutation is applied and
/// reported at once (its change describes the array as the handler found it), before the outer
/// notification reaches the remaining observers.
///
/// - Precondition: Indices must be valid, as for `Array`: an out-of-range index traps with a
///   message naming the index and the count.
public final class ObservableArray<Element>: KeyValueObservable, @unchecked Sendable {
    /// The array's registrar (its observers are registrations on the array itself).
    public let kvoRegistrar: KeyValueRegistrar
    @usableFromInline internal let _lock = _ArrayLock()
    @usableFromInline @exclusivity(unchecked) internal var _storage: _RingBuffer<Element>
    @usableFromInline @exclusivity(unchecked) internal var _tracker: _AnyElementTracker<Element>?
    @usableFromInline @exclusivity(unchecked) internal var _batch: _BatchState<Element>?
    /// Key id of the array's mutations (an identity key path of this array type).
    internal let _mutationKeyID: UInt32
    /// A recycled element-change box (`Unmanaged` bits, 0 = none), owned by the array; see
    /// `_ArrayChangeBox` and `_elementDidChange`. Emptied only under the array's lock
    /// (`_takeChangeBox`) or by deinit (no other reference left), filled by compare-and-swap
    /// from 0 (`_recycle`).
    internal let _spareChangeBox = Atomic<UInt>(0)
    /// The same for structural changes (`_pending`, `_deliver`): kept apart, so that neither kind
    /// of change finds the other's fields in a recycled box.
    internal let _spareStructuralBox = Atomic<UInt>(0)
    /// References the lock holder gave up (storage and, with it, elements) that it releases once
    /// the lock is dropped: an element's deinit may use the array. Lock held to touch.
    @exclusivity(unchecked) internal var _releaseAfterUnlock: [AnyObject] = []

    /// An empty array whose observations live in the default backend's registry.
    public required convenience init() {
        self.init(backend: ObservationRuntime.defaultBackend)
    }

    /// An empty array whose observations live in the given backend's registry (tests, benchmark).
    @_spi(Testing)
    public convenience init(backend: ObservationBackend) {
        self.init(storage: _RingBuffer(), backend: backend)
    }

    /// An array over `storage` (which it takes as its own), on the given backend: every
    /// initializer ends here, so an array made from elements allocates its ring once.
    internal init(storage: _RingBuffer<Element>, backend: ObservationBackend) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        _storage = storage
        _mutationKeyID = _KeyTable.shared.id(forKeyOf: ObservableArray<Element>.self) { \ObservableArray<Element>.self }
    }

    /// An array holding `elements`.
    ///
    /// ```swift
    /// let scores = ObservableArray([3, 1, 2])
    /// ```
    public convenience init<S: Sequence>(_ elements: S) where S.Element == Element {
        self.init(elements, backend: ObservationRuntime.defaultBackend)
    }

    /// An array holding `elements`, on the given backend (tests, benchmark).
    @_spi(Testing)
    public convenience init<S: Sequence>(_ elements: S, backend: ObservationBackend) where S.Element == Element {
        let contents = ContiguousArray(elements)
        let storage = _RingBuffer<Element>(capacity: contents.count)
        storage.replaceAll(with: contents)
        self.init(storage: storage, backend: backend)
    }

    deinit {
        _lock.lockForDeinit()   // (no bias to revoke: nobody else can be inside)
        _tracker?.deactivate(_storage)
        _lock.unlock()
        func release(_ spare: UInt) {
            if spare != 0 { Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: spare)!).release() }
        }
        release(_spareChangeBox.exchange(0, ordering: .acquiring))
        release(_spareStructuralBox.exchange(0, ordering: .acquiring))
    }

    /// Whether some thread holds the array's lock right now (tests: an element's deinit must never
    /// run under it).
    @_spi(Testing)
    public var _isLocked: Bool { _lock.isHeld }

    /// The storage slot that holds logical `index` (tests: whether a run wraps around the end
    /// of the allocation).
    @_spi(Testing)
    public func _storageSlot(of index: Int) -> Int {
        _lock.withLock { _storage.slot(index) }
    }

    /// Whether the array's lock is biased to the calling thread (tests; `_ArrayLock`).
    internal var _lockIsBiasedToCurrentThread: Bool { _lock.isBiasedToCurrentThread }

    /// Sets the array's lock's bias threshold and restarts its streak (tests; `_ArrayLock`).
    internal func _setLockBiasThreshold(_ sections: Int) { _lock._setBiasThreshold(sections) }

    // MARK: Storage helpers (caller holds the lock)

    /// Runs `body` under the lock, then releases what it gave up (`_releaseAfterUnlock`) after
    /// unlocking.
    @inline(__always)
    internal func _withLockReleasingAfter<R>(_ body: () -> R) -> R {
        _lock.lock()
        let result = body()
        _unlockReleasing()
        return result
    }

    /// Unlocks, then releases what the section gave up (`_releaseAfterUnlock`). Lock held.
    @inline(__always)
    internal func _unlockReleasing() {
        let released = _takeReleasesAfterUnlock()
        _lock.unlock()
        if released != nil { _releaseAfterUnlocking(released) }
    }

    @inline(__always)
    internal func _makeUnique() {
        _reclaimStorageFromSpareBox()
        if _storageIsUnique { _storage.writerFoundUnique() } else { _storage = _storage.copy() }
    }

    /// Takes the storage back from the parked element-change box, which keeps showing it so that
    /// the next element change refills the box without a retain and a release (`_recycle`).
    /// The general paths call this before testing the storage for uniqueness or replacing it:
    /// otherwise the storage would look shared and be copied, or stay alive in the box. (The
    /// inlinable fast paths do not: after element observation ends, the first unobserved write
    /// finds the storage shared and takes the general path, which reclaims it.)
    ///
    /// Lock held. A parked box is taken only under the lock, so it stays parked meanwhile and is
    /// this thread's to write. When it shows the current storage, dropping that reference frees
    /// nothing (`_storage` is another). When it shows storage the array gave up while the box was
    /// being delivered (a write on another thread, or one a handler made while something else
    /// held that storage), the reference may be the last one: it moves to `_releaseAfterUnlock`,
    /// so that the elements' deinits never run under the lock.
    @inline(__always)
    internal func _reclaimStorageFromSpareBox() {
        let bits = _spareChangeBox.load(ordering: .acquiring)
        if bits != 0 { _reclaimSpareSnapshot(bits) }
    }

    @inline(never)
    private func _reclaimSpareSnapshot(_ bits: UInt) {
        let given = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
            ._withUnsafeGuaranteedRef {
                unsafeDowncast($0, to: _ArrayChangeBox<Element>.self).takeSnapshot(unlessAt: _address(of: _storage))
            }
        if let given { _releaseAfterUnlock.append(given) }
    }

    /// Keeps elements a mutation took out and reports to nobody until the lock is dropped
    /// (`_releaseAfterUnlock`): an element's deinit may use the array, whose lock is not
    /// reentrant. Nothing to keep for elements that hold no references. Lock held.
    internal func _keepUntilUnlocked(_ elements: consuming ContiguousArray<Element>) {
        if _isPOD(Element.self) || elements.isEmpty { return }
        _releaseAfterUnlock.append(_ElementsReleasedAfterUnlock(elements))
    }

    /// `_keepUntilUnlocked` of one element (an object is kept as itself: no allocation).
    internal func _keepUntilUnlocked(_ element: consuming Element) {
        if _isPOD(Element.self) { return }
        if _isOneReference(Element.self) {
            _releaseAfterUnlock.append(unsafeBitCast(element, to: AnyObject.self))
        } else {
            _releaseAfterUnlock.append(_ElementsReleasedAfterUnlock([element]))
        }
    }

    /// What the lock holder gave up and must release after unlocking (`_releaseAfterUnlock`), or
    /// nil; call it just before `unlock()` and let the result go after it. Lock held.
    @inline(__always)
    internal func _takeReleasesAfterUnlock() -> [AnyObject]? {
        if _fastPath(_releaseAfterUnlock.isEmpty) { return nil }
        return _takeReleasesSlow()
    }

    @inline(never)
    private func _takeReleasesSlow() -> [AnyObject] {
        defer { _releaseAfterUnlock = [] }
        return _releaseAfterUnlock
    }

    /// `isKnownUniquelyReferenced(&_storage)` for the paths that run unspecialized: called with
    /// `_RingBuffer<Element>`, the generic function looked up that type's metadata on every
    /// observed mutation (`include/cobs_swift_runtime.h`). The inlinable fast paths are
    /// specialized by their callers and use the plain call.
    internal var _storageIsUnique: Bool { _isOnlyReference(_address(of: _storage)) }

    internal func _ensureCapacity(_ extra: Int) {
        if _storage.count + extra > _storage.capacity {
            _storage.grow(to: _storage.count + extra)
            _tracker?.rebuild(_storage)
        }
    }

    @inlinable @inline(__always)
    internal func _checkIndex(_ index: Int, _ function: StaticString) {
        if _slowPath(index < 0 || index >= _storage.count) { _indexOutOfRange(function, index, _storage.count) }
    }

    /// The fast paths' condition (lock held): nobody observes the array, no element is tracked,
    /// no batch is open, and the storage is not shared with a change or an iterator — so a
    /// mutation needs no change recorded, no index kept and no copy. One relaxed load and three
    /// compares; everything else takes the general path.
    @inlinable @inline(__always)
    internal var _isQuietAndUnique: Bool {
        guard _isQuiet && isKnownUniquelyReferenced(&_storage) else { return false }
        _storage.writerFoundUnique()
        return true
    }

    /// Nobody observes the array, no element is tracked and no batch is open: a mutation has
    /// nothing to report (lock held).
    @inlinable @inline(__always)
    internal var _isQuiet: Bool {
        _tracker == nil && _batch == nil && kvoRegistrar._observedMask.load(ordering: .relaxed) == 0
    }

    // MARK: Reading

    /// The elements, copied into a standard array.
    public var elements: [Element] { _lock.withLock { Array(_storage.elements()) } }

    /// A snapshot of the storage for lock-free iteration (copy-on-write shared).
    internal func _snapshot() -> _RingBuffer<Element> { _lock.withLock { _storage } }
}

extension ObservableArray: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { "ObservableArray(\(elements))" }
    public var debugDescription: String {
        let (count, tracked) = _lock.withLock { (_storage.count, _tracker?.isActive == true) }
        return "ObservableArray<\(Element.self)>(count: \(count), elementTracking: \(tracked), "
            + "observers: \(observationCount))"
    }
}

/// Traps for an out-of-range index, naming the operation, the index and the count. A
/// `fatalError`, not a `precondition`: an optimised build keeps its message (a precondition's
/// is dropped under -O), as `Array`'s "Index out of range" is kept.
@usableFromInline @inline(never)
internal func _indexOutOfRange(_ function: StaticString, _ index: Int, _ count: Int) -> Never {
    fatalError("ObservableArray.\(function): index \(index) out of range for count \(count)")
}

/// The address of `object`, taken without a retain.
@inline(__always)
internal func _address(of object: AnyObject) -> UInt {
    UInt(bitPattern: Unmanaged<AnyObject>.passUnretained(object).toOpaque())
}

/// Whether the object at `address` has exactly one strong reference: a plain load of its count
/// through the runtime's entry point (`isKnownUniquelyReferenced` of a generic type, run
/// unspecialized, looks up the type's metadata each time).
@inline(__always)
internal func _isOnlyReference(_ address: UInt) -> Bool {
    swift_isUniquelyReferenced_nonNull_native(UnsafeRawPointer(bitPattern: address).unsafelyUnwrapped)
}

/// Elements a mutation took out without reporting them, held in `_releaseAfterUnlock` so that
/// they are released after the array's lock is dropped.
internal final class _ElementsReleasedAfterUnlock<Element> {
    let elements: ContiguousArray<Element>
    init(_ elements: consuming ContiguousArray<Element>) { self.elements = elements }
}
