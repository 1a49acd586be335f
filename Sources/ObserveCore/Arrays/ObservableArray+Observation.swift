import Dispatch

// Observing an array: its mutations, its elements' properties, and (through the owner's
// property) the array being replaced by another.

/// The non-generic part of an array registration (read on the element-change path without
/// touching generic metadata).
internal class _ArrayRegistrationBase: _AnyRegistration, @unchecked Sendable {
    /// Element key ids this registration wants element changes for (few: scanned linearly).
    final let elementKeyIDs: [UInt32]
    /// The first of `elementKeyIDs` (meaningless when there are none), and how many there are:
    /// `wantsElementKey` answers for the usual single key without copying `elementKeyIDs`
    /// (a copy on the element-change path cost a retain and a release).
    private let _firstElementKeyID: UInt32
    private let _elementKeyCount: Int
    /// The array, for element-key registrations only (to stop tracking when they all go). Not
    /// `weak`, which would put the array's counts on a side table (`_UnownedReference`). A token
    /// that outlives its array keeps this registration, and so the dead array's allocation (not
    /// its elements or storage), until the token is released.
    private let _array: _UnownedReference<AnyObject>?
    /// The composite observation this registration belongs to (an owner's array property), 0
    /// for none: what `withoutNotifying` names it by then. Only array registrations belong to
    /// composites, so only they carry the field.
    private let _silenceOwner: UInt

    init(array: AnyObject & _ElementTrackingOwner, registrar: KeyValueRegistrar, keyID: UInt32,
         observer: AnyObject?, context: ObservationContext, options: ObservationOptions,
         delivery: ObservationDelivery, elementKeyIDs: [UInt32], silenceOwner: UInt) {
        self.elementKeyIDs = elementKeyIDs
        _silenceOwner = silenceOwner
        _firstElementKeyID = elementKeyIDs.first ?? 0
        _elementKeyCount = elementKeyIDs.count
        _array = elementKeyIDs.isEmpty ? nil : _UnownedReference(array)
        super.init(registrar: registrar, object: array, keyPath: nil, keyID: keyID, context: context,
                   observer: observer, options: options, delivery: delivery)
    }

    override final var silenceKey: UInt { _silenceOwner != 0 ? _silenceOwner : super.silenceKey }

    /// Whether the registration asked for element key paths at all.
    final var hasElementKeys: Bool { _elementKeyCount != 0 }

    /// Whether the registration asked for changes of element key `keyID`.
    @inline(__always)
    final func wantsElementKey(_ keyID: UInt32) -> Bool {
        if _elementKeyCount == 0 { return false }
        return _firstElementKeyID == keyID || (_elementKeyCount > 1 && elementKeyIDs.contains(keyID))
    }

    override func _didRemove() {
        (_array?.load() as? any _ElementTrackingOwner)?._reconcileElementTracking()
    }
}

/// An array that can stop element tracking once no registration asks for element keys.
internal protocol _ElementTrackingOwner: AnyObject {
    func _reconcileElementTracking()
}

extension ObservableArray: _ElementTrackingOwner {
    /// Stops element tracking (every element leaves, the index is freed) when no live
    /// registration on the array has element keys any more.
    internal func _reconcileElementTracking() {
        _lock.withLock {
            guard let tracker = _tracker, tracker.isActive else { return }
            let live = kvoRegistrar._registry.registrations(object: UInt(bitPattern: ObjectIdentifier(self)),
                                                            keyID: _mutationKeyID)
            let wanted = live.contains { !$0.isCancelled && unsafeDowncast($0, to: _ArrayRegistrationBase.self).hasElementKeys }
            if !wanted {
                tracker.deactivate(_storage)
                _tracker = nil
            }
        }
    }
}

/// A registration on an array. Registered once per observer in the registry, under the array's
/// mutation key — never once per element.
internal final class _ArrayRegistration<Element>: _ArrayRegistrationBase, @unchecked Sendable {
    /// (array, observer or nil, change).
    let handler: (ObservableArray<Element>, AnyObject?, ArrayChange<Element>) -> Void

    init(array: ObservableArray<Element>, observer: AnyObject?, context: ObservationContext,
         options: ObservationOptions, delivery: ObservationDelivery, elementKeyIDs: [UInt32], silenceOwner: UInt,
         handler: @escaping (ObservableArray<Element>, AnyObject?, ArrayChange<Element>) -> Void) {
        self.handler = handler
        super.init(array: array, registrar: array.kvoRegistrar, keyID: array._mutationKeyID,
                   observer: observer, context: context, options: options, delivery: delivery,
                   elementKeyIDs: elementKeyIDs, silenceOwner: silenceOwner)
    }

    func deliver(_ array: ObservableArray<Element>, _ change: ArrayChange<Element>) {
        // The scope count read through the array's registry, which is alive here: through
        // `registry` it would cost a `swift_once` per change.
        if isSilencedOrCancelled(scopesOpen: array.kvoRegistrar._registry.openScopes.load(ordering: .relaxed) != 0) {
            return
        }
        var observer: AnyObject? = nil
        if hasObserver {
            guard let alive = _observer else { _removeDeadObserverRegistration(); return }
            observer = alive
        }
        if let queue = _queue {
            let work = _UncheckedSendable((self, array, change))
            let hadObserver = hasObserver
            let depth = _ThreadDepth.current
            queue.async {
                let (registration, array, change) = work.value
                if registration.isCancelled { return }
                var observer: AnyObject? = nil
                if hadObserver {
                    guard let alive = registration._observer else { return }
                    observer = alive
                }
                _ThreadDepth.withDepth(depth) { registration.handler(array, observer, change) }
            }
        } else {
            handler(array, observer, change)
        }
    }
}

/// A structural change collected under the array's lock, delivered after it is released
/// (element changes take `_deliverElementChange`, which delivers only to the registrations
/// that asked for the element key).
///
/// It holds a read section on the array's dispatch cache (see `Concurrency/_ReadSections.swift`): the
/// registrations in `range` stay alive, unretained, until `ObservableArray._deliver(_:)` ends the
/// section. Every pending notification must be delivered exactly once, by the array that
/// recorded it.
///
/// Not generic, and the change travels as its box: as `_PendingArrayNotification<Element>`
/// holding an `ArrayChange<Element>`, the mutation paths (generic code that runs unspecialized)
/// looked up both types' metadata on every observed mutation, to call `deliver()` and to destroy
/// the change (about 650 of 3,460 instructions per observed append, callgrind).
internal struct _PendingArrayNotification {
    let cache: Unmanaged<_DispatchCache>
    let range: Range<Int>
    /// The change's `_ArrayChangeBox<Element>`, of the recording array's element type.
    let box: AnyObject
}

extension ObservableArray {
    /// Delivers a change this array recorded (`_pending`), ends its read section, and keeps the
    /// change's box for the next one when no handler kept the change.
    internal func _deliver(_ pending: consuming _PendingArrayNotification) {
        let cache = pending.cache, range = pending.range, box = pending.box
        _ = consume pending
        if kvoRegistrar._enterDelivery(keyID: _mutationKeyID) {
            let change = ArrayChange<Element>(_box: unsafeDowncast(box, to: _ArrayChangeBox<Element>.self))
            let registrations = cache._withUnsafeGuaranteedRef { $0.registrations }
            for index in range {
                registrations[index]._withUnsafeGuaranteedRef { entry in
                    unsafeDowncast(entry, to: _ArrayRegistration<Element>.self).deliver(self, change)
                }
            }
            _ThreadDepth.leave()
        }
        kvoRegistrar._leaveReadSection()
        _recycle(consume box, structural: true)
    }
}

extension ObservableArray {
    /// Enters a read section on this array's observers; nil (section left) when there are none.
    /// Lock held.
    internal func _observers() -> (cache: Unmanaged<_DispatchCache>, range: Range<Int>)? {
        let cache = kvoRegistrar._enterReadSection(object: UInt(bitPattern: ObjectIdentifier(self)))
        let range = cache._withUnsafeGuaranteedRef { $0.range(of: _mutationKeyID) }
        if range.isEmpty {
            kvoRegistrar._leaveReadSectionUnderLock()
            return nil
        }
        return (cache, range)
    }
}

extension ObservableArray {
    // MARK: Registering

    /// Adds an array registration and, for element key paths, starts or widens element tracking.
    internal func _addArrayRegistration(observer: AnyObject?, context: ObservationContext, options: ArrayObservationOptions,
                                        delivery: ObservationDelivery, elementKeyPaths: [AnyKeyPath],
                                        startTracking: (([_ElementKey]) -> Void)?, silenceOwner: UInt = 0,
                                        handler: @escaping (ObservableArray<Element>, AnyObject?, ArrayChange<Element>) -> Void)
    -> _ArrayRegistration<Element>? {
        // Each key path's id as its elements announce it (a superclass's key for an inherited
        // property), with the key path the caller wrote, which changes report.
        var keys: [_ElementKey] = []
        for keyPath in elementKeyPaths {
            let id = _KeyCatalog.shared.elementKeyID(for: keyPath)
            if !keys.contains(where: { $0.id == id }) { keys.append(_ElementKey(id: id, keyPath: keyPath)) }
        }
        let keyIDs = keys.map(\.id)
        let registration = _ArrayRegistration(array: self, observer: observer, context: context, options: ObservationOptions(options),
                                              delivery: delivery, elementKeyIDs: keyIDs, silenceOwner: silenceOwner,
                                              handler: handler)
        guard kvoRegistrar._add(registration, observer: observer) else { return nil }
        if !keys.isEmpty { startTracking?(keys) }
        if options.contains(.initial) {
            registration.deliver(self, ._replaced(by: self, oldCount: 0, isInitial: true))
        }
        return registration
    }

    /// Observes every mutation of this array until the token is cancelled or released.
    ///
    /// ```swift
    /// let token = queue.observe { queue, change in
    ///     if change.kind == .append { print("enqueued", change.insertedCount) }
    /// }
    /// ```
    /// - Parameters:
    ///   - options: `.initial` delivers an ``ArrayChange/Kind/arrayReplaced`` change at once;
    ///     `.new` and `.old` matter to element changes only (see ``ArrayObservationOptions``,
    ///     which has no `.prior`). The default, `[.new]`, is the properties' default.
    ///   - delivery: Where the handler runs.
    public func observe(options: ArrayObservationOptions = [.new], delivery: ObservationDelivery = .inline,
                        _ handler: @escaping (ObservableArray<Element>, ArrayChange<Element>) -> Void) -> ObservationToken {
        ObservationToken(_addArrayRegistration(observer: nil, context: .none, options: options, delivery: delivery,
                                               elementKeyPaths: [], startTracking: nil) { array, _, change in
            handler(array, change)
        })
    }

    /// Registers `observer` (held weakly) for every mutation of this array. The same
    /// (observer, context) twice keeps one registration. Remove it with
    /// ``KeyValueObservable/removeObserver(_:for:)`` passing `\ObservableArray<Element>.self`,
    /// or let it die with either side.
    public func addObserver<Observer: AnyObject>(_ observer: Observer, options: ArrayObservationOptions = [.new],
                                                 context: ObservationContext = .none,
                                                 delivery: ObservationDelivery = .inline,
                                                 _ handler: @escaping (Observer, ObservableArray<Element>, ArrayChange<Element>) -> Void) {
        _ = _addArrayRegistration(observer: observer, context: context, options: options, delivery: delivery,
                                  elementKeyPaths: [], startTracking: nil) { array, observer, change in
            handler(unsafeDowncast(observer!, to: Observer.self), array, change)
        }
    }

    /// ``addObserver(_:options:context:delivery:_:)-(Observer,_,_,_,_)`` for an observer typed
    /// `AnyObject` or `any SomeClassBoundProtocol`, which the generic form cannot take (Swift
    /// 6.3.1 crashes compiling it for `AnyObject`; see `KeyValueObservable.addObserver`).
    ///
    /// ```swift
    /// func attach(_ listener: AnyObject, to queue: ObservableArray<Job>) {
    ///     queue.addObserver(listener) { listener, queue, change in print(change.kind) }
    /// }
    /// ```
    public func addObserver(_ observer: AnyObject, options: ArrayObservationOptions = [.new],
                            context: ObservationContext = .none, delivery: ObservationDelivery = .inline,
                            _ handler: @escaping (AnyObject, ObservableArray<Element>, ArrayChange<Element>) -> Void) {
        _ = _addArrayRegistration(observer: observer, context: context, options: options, delivery: delivery,
                                  elementKeyPaths: [], startTracking: nil) { array, observer, change in
            handler(observer!, array, change)
        }
    }
}

extension ObservableArray where Element: KeyValueObservable {
    /// Observes every mutation of this array and every change of the given properties of its
    /// elements, with one registration — never one per element.
    ///
    /// ```swift
    /// let token = students.observe(elementKeyPaths: [\.name]) { students, change in
    ///     if change.kind == .elementChanged {
    ///         print("student at", change.elements.map(\.newIndex!), "renamed to", change.elementNewValue!)
    ///     }
    /// }
    /// ```
    /// An element in the array several times is reported with each of its indices; an element in
    /// several observed arrays is reported to each. Elements removed from the array stop being
    /// reported; inserted ones start. Element changes carry the property's new value by default
    /// (`options` defaults to `[.new]`, as for properties) and its old value with `.old`; read them
    /// typed with ``ArrayChange/elementChange(for:)``.
    public func observe(options: ArrayObservationOptions = [.new], elementKeyPaths: [PartialKeyPath<Element>],
                        delivery: ObservationDelivery = .inline,
                        _ handler: @escaping (ObservableArray<Element>, ArrayChange<Element>) -> Void) -> ObservationToken {
        ObservationToken(_addArrayRegistration(observer: nil, context: .none, options: options, delivery: delivery,
                                               elementKeyPaths: elementKeyPaths, startTracking: _startTracking) {
            array, _, change in handler(array, change)
        })
    }

    /// Registers `observer` (held weakly) for this array's mutations and its elements' properties.
    public func addObserver<Observer: AnyObject>(_ observer: Observer, options: ArrayObservationOptions = [.new],
                                                 elementKeyPaths: [PartialKeyPath<Element>],
                                                 context: ObservationContext = .none,
                                                 delivery: ObservationDelivery = .inline,
                                                 _ handler: @escaping (Observer, ObservableArray<Element>, ArrayChange<Element>) -> Void) {
        _ = _addArrayRegistration(observer: observer, context: context, options: options, delivery: delivery,
                                  elementKeyPaths: elementKeyPaths, startTracking: _startTracking) { array, observer, change in
            handler(unsafeDowncast(observer!, to: Observer.self), array, change)
        }
    }

    /// Starts element tracking for `keys` (or adds them to the running tracker).
    internal func _startTracking(_ keys: [_ElementKey]) {
        _lock.withLock {
            if let tracker = _tracker as? _ElementTracker<Element>, tracker.isActive {
                tracker.add(keys: keys, ring: _storage)
            } else {
                _tracker = _ElementTracker(array: self, keys: keys, ring: _storage)
            }
        }
    }

    /// Heap bytes of this array's element-position index (0 when no element key is observed).
    /// For the benchmark's memory figures.
    @_spi(Testing)
    public var _elementIndexBytes: Int {
        _lock.withLock { (_tracker as? _ElementTracker<Element>)?.indexBytes ?? 0 }
    }

    /// The identity of the array's current storage (tests: a write that had to copy the storage
    /// changes it; growing does not).
    @_spi(Testing)
    public var _storageIdentity: ObjectIdentifier {
        _lock.withLock { ObjectIdentifier(_storage) }
    }

    /// How many long runs this array's element tracking has copied in on two threads (tests:
    /// that the shared copy ran).
    @_spi(Testing)
    public var _sharedCopyCount: Int {
        _lock.withLock { (_tracker as? _ElementTracker<Element>)?.sharedCopies ?? 0 }
    }

    /// Whether the element-position index has fallen behind the contents and will be rebuilt at
    /// the next element change (for tests of when a full shift log is folded instead, and of
    /// long removals).
    @_spi(Testing)
    public var _isElementIndexStale: Bool {
        _lock.withLock { _tracker.map { !$0.isIndexed } ?? false }
    }

    /// Traps if the element-position index disagrees with the contents (for tests).
    @_spi(Testing)
    public func _checkInvariants() {
        _lock.withLock {
            if let tracker = _tracker as? _ElementTracker<Element>, tracker.isActive { tracker.checkInvariants(_storage) }
        }
    }
}

extension ObservableArray: _ElementChangeReceiver {
    /// Called by the element-tracker directory when a property of the element at `elementAddress`
    /// changed; `trackerSerial` is the serial of the tracker that found this array (see the
    /// protocol).
    internal func _elementDidChange(trackerSerial: UInt64, keyID: UInt32, elementAddress: UInt,
                                    values: _ElementValueStore) {
        _joinTransaction()
        // The box is held only by `boxObject` across the calls below (filling borrows it, the
        // change takes it over), and `_recycle` takes it over (`consume`), so that it finds the box
        // uniquely referenced when no handler kept it. Borrowing, not a downcast temporary, spares a retain/release pair.
        _lock.lock()
        let boxObject = _takeChangeBox()
        var stale: AnyObject? = nil   // storage the recycled box showed last, released unlocked
        var prepared: (cache: Unmanaged<_DispatchCache>, range: Range<Int>)? = nil
        if let tracker = _trackerUnretained(serial: trackerSerial) {
            prepared = Unmanaged.passUnretained(boxObject)._withUnsafeGuaranteedRef { box in
                tracker._withUnsafeGuaranteedRef { tracker in
                    _prepareElementChange(unsafeDowncast(box, to: _ArrayChangeBox<Element>.self), tracker: tracker,
                                          keyID: keyID, elementAddress: elementAddress, values: values, stale: &stale)
                }
            }
        }
        _lock.unlock()
        if stale != nil { _releaseAfterUnlocking(stale) }
        if let (cache, range) = prepared {
            // The change takes the box over (`consume`) and hands it back to `_recycle`: built
            // from a copy of `boxObject` instead, it cost a retain and a release per change.
            let change = ArrayChange(_box: unsafeDowncast(consume boxObject, to: _ArrayChangeBox<Element>.self))
            _deliverElementChange(change, cache: cache, range: range, keyID: keyID)
            _recycle((consume change)._box)
        } else {
            kvoRegistrar._drainRetiredIfIdle()   // what a read section left under the lock could not free
            _recycle(consume boxObject)
        }
    }

    /// The array's tracker, unretained, if it has `serial` (lock held: the array keeps its
    /// tracker alive meanwhile, and `_prepareElementChange` moves it out rather than dropping it).
    /// Nil once the tracker a change was found through was replaced or dropped: that notice is
    /// stale.
    @inline(__always)
    private func _trackerUnretained(serial: UInt64) -> Unmanaged<_AnyElementTracker<Element>>? {
        guard let tracker = _tracker, tracker.serial == serial else { return nil }
        return .passUnretained(tracker)
    }

    /// Fills `box` with the element change and enters a read section on the observers that want
    /// it; nil (no section held) when nobody does. The caller holds the array's lock, and
    /// `tracker` is the array's current tracker.
    private func _prepareElementChange(_ box: _ArrayChangeBox<Element>, tracker: _AnyElementTracker<Element>,
                                       keyID: UInt32, elementAddress: UInt, values: _ElementValueStore,
                                       stale: inout AnyObject?)
    -> (cache: Unmanaged<_DispatchCache>, range: Range<Int>)? {
        // The storage is used borrowed: nothing below replaces it while the lock is held, and a
        // retain/release pair around each call that takes it cost two atomic operations each.
        let storage = Unmanaged.passUnretained(_storage)
        guard tracker.isActive,
              storage._withUnsafeGuaranteedRef({ tracker.appendModifyRuns(ofElementAt: elementAddress, ring: $0, to: &box.runs) })
        else { return nil }
        if let batch = _batch {
            // Inside a batch the element's indices are in a state observers have not been told
            // about yet: the change joins the batch's one coalesced change as modifications.
            for run in box.runs {
                for index in run.start..<(run.start + run.length) { batch.composer.modify(at: index) }
            }
            return nil
        }
        guard let (cache, range) = _observers() else {
            // Nobody observes any more: stop tracking (every element leaves) — the lazy end of
            // element tracking once the last element-key observer is gone. The stopped tracker
            // is uninstalled too: left in place, it would still be told of every insertion and
            // removal (hardening: RegressionTests).
            if kvoRegistrar._observedMask.load(ordering: .relaxed) == 0 { _stopTracking(tracker, releasingInto: &stale) }
            return nil
        }
        var wanted = false, anyElementKeys = false, wantsOld = false, wantsNew = false
        let registrations = cache._withUnsafeGuaranteedRef { $0.registrations }
        for index in range {
            registrations[index]._withUnsafeGuaranteedRef { entry in
                let registration = unsafeDowncast(entry, to: _ArrayRegistrationBase.self)
                anyElementKeys = anyElementKeys || registration.hasElementKeys
                if registration.wantsElementKey(keyID) {
                    wanted = true
                    wantsOld = wantsOld || entry.options.contains(.old)
                    wantsNew = wantsNew || entry.options.contains(.new)
                }
            }
        }
        guard wanted else {
            if !anyElementKeys { _stopTracking(tracker, releasingInto: &stale) }
            kvoRegistrar._leaveReadSectionUnderLock()
            return nil
        }
        storage._withUnsafeGuaranteedRef {
            box.fillElementChange(snapshot: $0, keyID: keyID, keyPath: { tracker.keyPath(for: keyID) }, stale: &stale)
        }
        if wantsOld || wantsNew { box.storeValues(values, wantsOld: wantsOld, wantsNew: wantsNew) }
        return (cache, range)
    }

    /// Deactivates and uninstalls `tracker`, the array's current one, while the caller still
    /// borrows it: the array's reference moves to `stale` (released after unlocking), so the
    /// tracker outlives the borrow and its deinit runs with no lock held. Nothing else is in
    /// `stale` on the paths that call this (the box is filled only after them).
    private func _stopTracking(_ tracker: _AnyElementTracker<Element>, releasingInto stale: inout AnyObject?) {
        tracker.deactivate(_storage)
        _require(stale == nil, "ObserveCore internal error: a stopped tracker would displace released storage")
        stale = _tracker.take()
    }

    /// Delivers an element change to the registrations in `range` that asked for `keyID`, then
    /// leaves the read section `_observers()` entered. (What `_PendingArrayNotification` does,
    /// without a generic struct on the path: its metadata was looked up on every change.)
    private func _deliverElementChange(_ change: ArrayChange<Element>, cache: Unmanaged<_DispatchCache>,
                                       range: Range<Int>, keyID: UInt32) {
        defer { kvoRegistrar._leaveReadSection() }
        guard kvoRegistrar._enterDelivery(keyID: _mutationKeyID) else { return }
        defer { _ThreadDepth.leave() }
        let registrations = cache._withUnsafeGuaranteedRef { $0.registrations }
        for index in range {
            registrations[index]._withUnsafeGuaranteedRef { entry in
                guard unsafeDowncast(entry, to: _ArrayRegistrationBase.self).wantsElementKey(keyID) else { return }
                unsafeDowncast(entry, to: _ArrayRegistration<Element>.self).deliver(self, change)
            }
        }
    }

    /// The recycled element-change box (or structural-change box), or a new one. The box travels
    /// as `AnyObject` (and is used through `unsafeDowncast`): `Unmanaged` and
    /// `isKnownUniquelyReferenced` of the generic box type looked up its generic metadata on
    /// every change.
    ///
    /// Lock held. Every take runs under the array's lock, so no other thread can empty the slot
    /// between the load and the store below; a `_recycle` on another thread only fills an empty
    /// slot (compare-and-swap from 0), so it cannot fill this one either once the load saw a box.
    /// A load and a store, where an exchange was a serialising read-modify-write (~4.7 ns here).
    internal func _takeChangeBox(structural: Bool = false) -> AnyObject {
        let bits: UInt
        if structural {
            bits = _spareStructuralBox.load(ordering: .acquiring)
            if bits != 0 { _spareStructuralBox.store(0, ordering: .relaxed) }
        } else {
            bits = _spareChangeBox.load(ordering: .acquiring)
            if bits != 0 { _spareChangeBox.store(0, ordering: .relaxed) }
        }
        if bits == 0 { return _ArrayChangeBox<Element>() }
        return Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue()
    }

    /// Keeps `box` for the next element change when nothing else refers to it (a handler that
    /// kept the change, or a queue delivery still pending, keeps the box to itself).
    private func _recycle(_ box: consuming AnyObject, structural: Bool = false) {
        var box = box
        // A sanitized build never reuses a box: a reader on another thread that dropped it is
        // ordered before the refill only through the runtime's reference count, which
        // ThreadSanitizer cannot see (`_CopyOnWriteHandoff`).
        guard isKnownUniquelyReferenced(&box), !_CopyOnWriteHandoff.isActive else { return }
        Unmanaged.passUnretained(box)._withUnsafeGuaranteedRef {
            let box = unsafeDowncast($0, to: _ArrayChangeBox<Element>.self)
            // An element box keeps showing the storage, so that the next element change refills
            // it without a retain and a release — unless nothing else holds that storage any more
            // (the array moved on while this change was delivered): then it is released here,
            // with no lock held.
            box.clearForReuse(keepingSnapshot: !structural && !box.snapshotIsOrphaned)
        }
        // The variable's reference becomes the slot's: `consume` ends its lifetime here, so the
        // retain below and the variable's release cancel out.
        let retained = Unmanaged<AnyObject>.passRetained(consume box)
        let bits = UInt(bitPattern: retained.toOpaque())
        let kept = structural ? _spareStructuralBox.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged
                              : _spareChangeBox.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged
        if !kept {
            retained.release()
        }
    }
}

