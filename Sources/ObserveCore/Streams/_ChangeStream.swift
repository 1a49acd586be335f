import Dispatch
import Synchronization

/// The shared state of one change stream: the buffer between the thread that sets the property
/// (the producer, inside a notification) and the task that iterates (the consumer).
///
/// States: `active` → `sourceEnded` (the registration died with the object or was removed: the
/// buffer is still drained, then `nil`) or → `terminated` (the consumer is cancelled or went
/// away: the registration is removed, buffered changes are dropped, `next()` returns `nil`).
///
/// Hand-off: the producer always stores the change in the buffer. A consumer that finds nothing
/// parks one non-generic `UnsafeContinuation<Void, Never>`; the next change (or the end) resumes
/// it, and it takes from the buffer again. The lock is the package's `_Lock` (atomics that
/// ThreadSanitizer sees); nothing is resumed, released or removed while it is held.
///
/// Unbounded mode takes in bulk: a consumer whose own buffer (`_taken*`, touched by the consumer
/// alone) is empty swaps it with the shared ring under the lock, then hands out what it took
/// without locking. A producer and its consumer on two cores thus meet at the lock once per bulk
/// instead of once per change. The other modes take one element per lock: `.latest` must fold
/// into the one pending change, and `.bounded` counts each element taken to let one blocked
/// producer go.
///
/// Each ring grows to the largest burst it held and never shrinks, so a stream that once buffered
/// a burst of n changes keeps up to two rings of n slots until it is freed.
///
/// One consumer: `_consuming` is set for the whole of each `next()` (suspension included), so a
/// second task iterating the same stream at once traps with a message instead of racing on the
/// consumer's buffer. A stream that has ended answers `nil` instead (its cancelled consumer may
/// not have left `next()` yet).
///
/// Termination drops what the consumer took but has not handed out too: `next()` checks
/// `_terminated` before each element of its own buffer, and `terminate()` empties that buffer
/// itself when no `next()` runs.
///
/// Bounded mode blocks the producer while the buffer is full: it counts itself in
/// `_blockedProducers`, unlocks and waits on `_space`; each element the consumer takes signals one
/// waiting producer, and termination signals them all.
///
/// Why the waiter is not handed the change: a continuation typed by the element is generic
/// metadata, looked up at run time in this unspecialized class on every park and every produce;
/// it was most of the time the consumer spent holding the lock, and the producer spun on it
/// (perf: ~20% of the row in metadata lookups, ~18% in the producer's `sched_yield`).
internal final class _ChangeStream<Element>: @unchecked Sendable {
    typealias Waiter = UnsafeContinuation<Void, Never>

    private enum State { case active, sourceEnded, terminated }

    private let _lock = _Lock()
    private let _buffering: ChangeStreamBuffering
    /// Whether the consumer takes the whole buffer at once (unbounded mode).
    private let _takesInBulk: Bool
    /// `.latest`: folds a change that arrived while one was pending into one change that takes
    /// the consumer from the pending change's starting state to the newest.
    private let _coalesce: (Element, Element) -> Element
    private let _space = DispatchSemaphore(value: 0)
    /// Set while a `next()` runs (see the type's comment).
    private let _consuming = Atomic<Bool>(false)
    /// Set once, by `terminate()`; read by the consumer without the lock.
    private let _terminated = Atomic<Bool>(false)
    // Guarded by `_lock`.
    @exclusivity(unchecked) private var _state = State.active
    @exclusivity(unchecked) private var _ring: UnsafeMutablePointer<Element>
    @exclusivity(unchecked) private var _capacity = 16
    @exclusivity(unchecked) private var _head = 0
    @exclusivity(unchecked) private var _count = 0
    @exclusivity(unchecked) private var _latest: Element?
    @exclusivity(unchecked) private var _waiter: Waiter?
    @exclusivity(unchecked) private var _blockedProducers = 0
    /// Ends the source when the consumer ends the stream (run once, outside the lock): removes
    /// the stream's registration, or cancels an array property's observation.
    @exclusivity(unchecked) private var _onTerminate: (() -> Void)?
    // The consumer's own buffer (bulk mode): read and written only inside `next()`, which
    // `_consuming` keeps to one task at a time; a ring like the shared one, swapped with it whole.
    @exclusivity(unchecked) private var _taken: UnsafeMutablePointer<Element>
    @exclusivity(unchecked) private var _takenCapacity = 16
    @exclusivity(unchecked) private var _takenHead = 0
    @exclusivity(unchecked) private var _takenCount = 0

    init(buffering: ChangeStreamBuffering, coalesce: @escaping (Element, Element) -> Element) {
        _buffering = buffering
        if case .unbounded = buffering._kind { _takesInBulk = true } else { _takesInBulk = false }
        _coalesce = coalesce
        _ring = .allocate(capacity: _capacity)
        _taken = .allocate(capacity: _takenCapacity)
    }

    deinit {
        for i in 0..<_count { (_ring + ((_head + i) & (_capacity - 1))).deinitialize(count: 1) }
        _ring.deallocate()
        _dropTaken()
        _taken.deallocate()
    }

    /// Remembers the registration (weakly) so that termination can remove it.
    func attach(_ registration: _AnyRegistration?) {
        attach { [weak registration] in
            registration?.removeFromRegistry()
        }
    }

    /// What termination must run to end the source.
    func attach(onTerminate: @escaping () -> Void) {
        _lock.withLock { _onTerminate = onTerminate }
    }

    // MARK: Ring (under the lock)

    private func _pushLocked(_ element: Element) {
        if _count == _capacity {
            let capacity = _capacity * 2
            let ring = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
            for i in 0..<_count { (ring + i).moveInitialize(from: _ring + ((_head + i) & (_capacity - 1)), count: 1) }
            _ring.deallocate()
            _ring = ring
            _capacity = capacity
            _head = 0
        }
        (_ring + ((_head + _count) & (_capacity - 1))).initialize(to: element)
        _count += 1
    }

    private func _popLocked() -> Element? {
        if _count > 0 {
            let element = (_ring + _head).move()
            _head = (_head + 1) & (_capacity - 1)
            _count -= 1
            return element
        }
        if let latest = _latest {
            _latest = nil
            return latest
        }
        return nil
    }

    private func _drainLocked() -> [Element] {
        var dropped: [Element] = []
        dropped.reserveCapacity(_count)
        while let element = _popLocked() { dropped.append(element) }
        return dropped
    }

    // MARK: Producer

    /// Called by the registration's handler on the mutating thread.
    func produce(_ change: Element) {
        _lock.lock()
        guard _state == .active else {
            _lock.unlock()
            return
        }
        if _takesInBulk {
            _pushLocked(change)
        } else if !_storeLocked(change) {
            return
        }
        let waiter = _waiter
        _waiter = nil
        _lock.unlock()
        waiter?.resume()
    }

    /// `.latest` and `.bounded`: stores `change` under the lock; false when the stream ended while
    /// a bounded producer waited for room (the lock is then released). Out of line, so that
    /// `produce()`'s unbounded path touches no `Optional<Element>`.
    @inline(never)
    private func _storeLocked(_ change: Element) -> Bool {
        switch _buffering._kind {
        case .unbounded:
            _pushLocked(change)   // not reached: produce() pushes these itself
        case .latest:
            _latest = _latest.map { _coalesce($0, change) } ?? change
        case .bounded(let capacity):
            while _count >= capacity && _state == .active {
                _blockedProducers += 1
                _lock.unlock()
                _space.wait()
                _lock.lock()
            }
            guard _state == .active else {
                _lock.unlock()
                return false
            }
            _pushLocked(change)
        }
        return true
    }

    // MARK: Consumer

    func next(isolation actor: isolated (any Actor)?) async -> Element? {
        if _consuming.exchange(true, ordering: .acquiring) {
            if _terminated.load(ordering: .acquiring) { return nil }
            _misuse("ObserveCore: two tasks are iterating one change stream at once; a stream "
                            + "has a single consumer (make one stream per consumer)")
        }
        defer { _consuming.store(false, ordering: .releasing) }
        while true {
            if Task.isCancelled {
                terminate()
                _dropTaken()
                return nil
            }
            if _takenCount > 0 {
                if _terminated.load(ordering: .acquiring) {
                    _dropTaken()
                    return nil
                }
                return _popTaken()
            }
            switch _take() {
            case .took:
                return _popTaken()
            case .ended:
                return nil
            case .empty:
                await withTaskCancellationHandler {
                    await withUnsafeContinuation(isolation: actor) { (waiter: Waiter) in
                        if !_park(waiter) { waiter.resume() }
                    }
                } onCancel: {
                    self.terminate()
                }
            }
        }
    }

    private enum TakeOutcome { case took, empty, ended }

    /// Fills the consumer's empty buffer from the shared one: all of it in bulk mode, else one
    /// element (letting one blocked producer go). Synchronous and outside `next()`, so that
    /// `next()`'s frame holds no value whose type is built from `Element` at run time.
    @inline(never)
    private func _take() -> TakeOutcome {
        _lock.lock()
        if _takesInBulk {
            if _count > 0 {
                swap(&_ring, &_taken)
                swap(&_capacity, &_takenCapacity)
                swap(&_head, &_takenHead)
                swap(&_count, &_takenCount)
                _lock.unlock()
                return .took
            }
        } else if let element = _popLocked() {
            (_taken + _takenHead).initialize(to: element)
            _takenCount = 1
            let wake = _blockedProducers > 0
            if wake { _blockedProducers -= 1 }
            _lock.unlock()
            if wake { _space.signal() }
            return .took
        }
        let ended = _state != .active
        _lock.unlock()
        return ended ? .ended : .empty
    }

    /// Parks the consumer until the next change or the end; false (not parked) when one arrived
    /// since `_take()` looked.
    @inline(never)
    private func _park(_ waiter: Waiter) -> Bool {
        _lock.lock()
        defer { _lock.unlock() }
        if _count > 0 || _latest != nil || _state != .active { return false }
        _waiter = waiter
        return true
    }

    /// Releases what the consumer's own buffer holds (the caller is the consumer, or holds
    /// `_consuming` for it; no lock).
    private func _dropTaken() {
        while _takenCount > 0 { _ = _popTaken() }
    }

    /// The next element of the consumer's own buffer (not empty; no lock).
    private func _popTaken() -> Element {
        let element = (_taken + _takenHead).move()
        _takenHead = (_takenHead + 1) & (_takenCapacity - 1)
        _takenCount -= 1
        return element
    }

    // MARK: Ending

    /// The consumer is cancelled or gone: remove the registration, drop what is buffered, wake
    /// the consumer (with nil) and every blocked producer.
    func terminate() {
        _lock.lock()
        if _state == .terminated {
            _lock.unlock()
            return
        }
        _state = .terminated
        _terminated.store(true, ordering: .releasing)
        let waiter = _waiter
        _waiter = nil
        let producers = _blockedProducers
        _blockedProducers = 0
        let onTerminate = _onTerminate
        _onTerminate = nil
        let dropped = _drainLocked()
        _lock.unlock()
        waiter?.resume()
        for _ in 0..<producers { _space.signal() }
        onTerminate?()
        _ = dropped   // released here, after unlocking
        // What a consumer took and did not hand out goes too, unless a `next()` is running (it
        // drops it itself on seeing `_terminated`).
        if _consuming.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            _dropTaken()
            _consuming.store(false, ordering: .releasing)
        }
    }

    /// The registration died (its object died, or it was removed): what is buffered is still
    /// delivered, then the stream ends.
    func sourceEnded() {
        _lock.lock()
        guard _state == .active else {
            _lock.unlock()
            return
        }
        _state = .sourceEnded
        let waiter = _waiter
        _waiter = nil
        let producers = _blockedProducers
        _blockedProducers = 0
        _lock.unlock()
        waiter?.resume()
        for _ in 0..<producers { _space.signal() }
    }
}

/// Captured only by the registration's handler: when the registry releases the registration (its
/// object died, or someone removed it), this goes too and ends the stream. It never calls into
/// the registry (it may be released under a registry lock).
internal final class _StreamSentinel<Element>: @unchecked Sendable {
    let stream: _ChangeStream<Element>
    init(_ stream: _ChangeStream<Element>) { self.stream = stream }
    deinit { stream.sourceEnded() }
}

/// Held by every copy of a stream and by its iterators; the last one gone terminates the stream.
internal final class _StreamLifetime<Element>: @unchecked Sendable {
    let stream: _ChangeStream<Element>
    init(_ stream: _ChangeStream<Element>) { self.stream = stream }
    deinit { stream.terminate() }
}
