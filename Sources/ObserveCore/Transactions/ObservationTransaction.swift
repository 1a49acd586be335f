extension ObservationRuntime {
    /// Runs `body` as one transaction: each observer is told at the end, once per observed
    /// property, instead of once per set.
    ///
    /// Several writes, one reaction (MobX's `transaction`, Core Data's coalesced saves):
    ///
    /// ```swift
    /// ObservationRuntime.transaction {
    ///     order.quantity = 3
    ///     order.quantity = 4                  // observers of quantity: one change, old → 4
    ///     order.items.append(item)            // observers of items: one .batch change
    ///     order.items[0].price = 10           //   …which lists this element as modified
    /// }
    /// ```
    ///
    /// - Properties: each registration receives at most one change per (object, key): the old
    ///   value from before the first set, the new one from the last. A registration with
    ///   ``ObservationOptions/skipEqualValues`` hears nothing when the property ends where it
    ///   began. A ``ObservationOptions/prior`` notification is delivered at the first set, once —
    ///   so an observer that also skips equal values may get a prior with no change after it.
    ///   Chains, dependent keys, bindings and change streams react to the coalesced changes.
    /// - Arrays: every mutation of an observed ``ObservableArray`` inside the transaction joins
    ///   one ``ArrayChange/Kind/batch`` change per array, as in
    ///   ``ObservableArray/performBatchUpdates(_:)``; a change of an element's property joins it
    ///   as a modification, so a replica that applies the changes in order stays right. While
    ///   the transaction holds an array's batch open, other threads' mutations of that array
    ///   join it too.
    /// - Scope: the calling thread's, while `body` runs — the OS thread, so it includes code that
    ///   `body` runs synchronously on it (a `DispatchQueue.sync` block usually runs on the calling
    ///   thread); transactions nest (the outermost one delivers). Changes other threads make to
    ///   properties meanwhile are delivered as usual.
    /// - Delivery runs in rounds: what handlers and derived keys announce while the transaction
    ///   delivers is coalesced in turn and delivered after that round, so a dependent key of two
    ///   properties set in the transaction changes once, and a handler's own sets reach their
    ///   observers after every handler of the round has run.
    ///   Deliveries happen when `body` returns or throws, on this thread (inline handlers) or
    ///   queued then (``ObservationDelivery/queue(_:)``, actor and main-actor handlers).
    /// - A change is silenced (``withoutNotifying(_:perform:)``) or not when it is made.
    @discardableResult
    public static func transaction<R>(_ body: () throws -> R) rethrows -> R {
        _Transaction.begin()
        defer { _Transaction.end() }
        return try body()
    }
}

/// The calling thread's open transaction: what it holds back, in the order it was first
/// touched, and the arrays whose batch it opened. Lives in pthread-specific storage.
@usableFromInline
internal final class _Transaction {
    // Thread-confined (one per thread, reached through pthread-specific storage), so the
    // exclusivity checks a class's stored properties get would only cost.
    /// Nesting depth on this thread; the outermost `end()` delivers.
    @exclusivity(unchecked) private var _depth = 0
    /// Property changes held back, by registration (its address), in first-set order.
    @usableFromInline @exclusivity(unchecked) var _pending: [ObjectIdentifier: _AnyPendingChange] = [:]
    /// What the end delivers, in first-touch order: a pending property change, or an array's
    /// batch to close.
    @usableFromInline @exclusivity(unchecked) var _commits: [_Commit] = []
    /// The previous round's list, kept for its storage.
    @exclusivity(unchecked) private var _spareCommits: [_Commit] = []
    @exclusivity(unchecked) private var _arrays: Set<ObjectIdentifier> = []
    /// The entry `hold` touched last.
    @usableFromInline @exclusivity(unchecked) var _lastHeld: (id: ObjectIdentifier, change: _AnyPendingChange)?

    @usableFromInline
    enum _Commit {
        case property(_AnyPendingChange)
        case array(() -> Void)
    }

    private static let _perThread = _ThreadLocal("transactions' thread state") { _Transaction() }

    /// This thread's transaction, if one is open.
    @usableFromInline
    static var current: _Transaction? {
        guard let transaction = _perThread.existing, transaction._depth > 0 else { return nil }
        return transaction
    }

    static func begin() {
        let transaction = _perThread.current
        transaction._depth += 1
        if transaction._depth == 1 { _countOpen(1) }
    }

    /// Ends a level; the outermost delivers, in rounds: what one round's deliveries announce
    /// (a dependent key or a chain recomputed from several held changes, a handler's own sets) is
    /// held and coalesced in turn, and delivered by the next round, until a round announces
    /// nothing — so a derived key, too, changes once per transaction.
    static func end() {
        let transaction = current.unsafelyUnwrapped
        transaction._depth -= 1
        guard transaction._depth == 0 else { return }
        defer { _countOpen(-1) }
        let limit = Int(ObservationRuntime._maximumDepth.load(ordering: .relaxed))
        var round = 0
        while !transaction._commits.isEmpty {
            round += 1
            // The lists swap rather than copy, and are emptied keeping their storage: the next
            // round and the next transaction of this thread reuse it.
            var commits = transaction._spareCommits
            swap(&commits, &transaction._commits)
            defer {
                commits.removeAll(keepingCapacity: true)
                transaction._spareCommits = commits
            }
            transaction._pending.removeAll(keepingCapacity: true)
            transaction._arrays.removeAll(keepingCapacity: true)
            transaction._lastHeld = nil
            if round > limit {
                // The arrays' batches still close (left open, an array would never notify again);
                // the property changes are dropped.
                for case .array(let close) in commits { close() }
                ObservationRuntime._reportRunawayRecursion(
                    "ObserveCore: runaway recursion: a transaction's deliveries kept announcing new changes for \(limit) "
                    + "rounds (handlers that set what they observe); the last round's property changes were dropped.")
                return
            }
            transaction._depth = 1          // hold what this round announces
            // Arrays first: an owner property replaced in the transaction re-attaches its
            // observeArray observations to the new array when delivered, and the replacement's
            // snapshot already holds that array's mutations — its batch, closed before, has gone
            // to the observers attached then, so nobody is told the same mutation twice.
            for case .array(let close) in commits { close() }
            for case .property(let change) in commits { change.deliver() }
            transaction._depth = 0
        }
    }

    /// Open transactions on any thread, counted in every registry with the silence scopes
    /// (`_Registry.openScopes`) so that a set reads the count through its registrar's registry:
    /// one relaxed load while none is open anywhere.
    private static func _countOpen(_ delta: Int) {
        for backend in ObservationBackend.allCases {
            _Registry.shared(backend).openScopes.add(delta, ordering: .relaxed)
        }
    }

    // MARK: Holding changes back

    /// Whether `registration` already has a change held back (a prior notification is
    /// delivered only before the first).
    func holds(_ registration: _AnyRegistration) -> Bool { _pending[ObjectIdentifier(registration)] != nil }

    /// Holds back a change of `registration`'s property on `object`: the first one's old value
    /// is kept, the new value is the latest.
    @inlinable
    func hold<Root: AnyObject, Value>(_ registration: _PropertyRegistration<Root, Value>, _ object: Root,
                                      old: Value, new: Value) {
        let id = ObjectIdentifier(registration)
        // A run of sets of one key (the common transaction) hits the last entry: no hashing.
        if let last = _lastHeld, last.id == id {
            unsafeDowncast(last.change, to: _PendingChange<Root, Value>.self).new = new
            return
        }
        if let pending = _pending[id] {
            unsafeDowncast(pending, to: _PendingChange<Root, Value>.self).new = new
            _lastHeld = (id, pending)
            return
        }
        let pending = _PendingChange(registration, object, old: old, new: new)
        _pending[id] = pending
        _lastHeld = (id, pending)
        _commits.append(.property(pending))
    }

    /// Opens `array`'s batch for the rest of the transaction, once.
    func enlist<Element>(_ array: ObservableArray<Element>) {
        guard _arrays.insert(ObjectIdentifier(array)).inserted else { return }
        array._beginBatch()
        _commits.append(.array { array._endBatch() })
    }
}

extension KeyValueRegistrar {
    /// In a transaction of this thread: holds back the change for every registration in `range`
    /// (those silenced now are skipped) and returns true; false when this thread has none.
    @inlinable @inline(never)
    internal func _holdInTransaction<Root: AnyObject, Value>(
        _ registrations: UnsafeMutablePointer<Unmanaged<_AnyRegistration>>, _ range: Range<Int>,
        as _: _PropertyRegistration<Root, Value>.Type, _ object: Root, _ oldValue: Value, _ newValue: Value
    ) -> Bool {
        guard let transaction = _Transaction.current else { return false }
        for index in range {
            // Retained here: the held change outlives the dispatch cache's read section.
            let entry = registrations[index].takeUnretainedValue()
            if entry.isSilencedOrCancelled { continue }
            transaction.hold(unsafeDowncast(entry, to: _PropertyRegistration<Root, Value>.self), object,
                             old: oldValue, new: newValue)
        }
        return true
    }

    /// Whether this thread's transaction already holds a change back for `registration`.
    @usableFromInline @inline(never)
    internal func _transactionHolds(_ registration: _AnyRegistration) -> Bool {
        _Transaction.current?.holds(registration) ?? false
    }
}

/// A held-back property change, typed.
@usableFromInline
internal class _AnyPendingChange {
    @usableFromInline init() {}
    @usableFromInline func deliver() {}
}

@usableFromInline
internal final class _PendingChange<Root: AnyObject, Value>: _AnyPendingChange {
    @usableFromInline let registration: _PropertyRegistration<Root, Value>
    @usableFromInline let object: Root
    @usableFromInline let old: Value
    @usableFromInline @exclusivity(unchecked) var new: Value   // thread-confined, as its transaction

    @usableFromInline
    init(_ registration: _PropertyRegistration<Root, Value>, _ object: Root, old: Value, new: Value) {
        self.registration = registration
        self.object = object
        self.old = old
        self.new = new
    }

    @usableFromInline
    override func deliver() {
        let options = registration.options
        if options.contains(.skipEqualValues), _valuesEqual(old, new) == true { return }
        _ = _ThreadDepth.enter()
        defer { _ThreadDepth.leave() }
        registration._deliver(object, ObservedChange(oldValue: options.contains(.old) ? old : nil,
                                                     newValue: options.contains(.new) ? new : nil))
    }
}
