import Dispatch

/// The shared state of one change stream: the buffer between the thread that sets the property
/// (the producer, inside a notification) and the task that iterates (the consumer).
///
/// States: `active` → `sourceEnded` (the registration died with the object or was removed: the
/// buffer is still drained, then `nil`) or → `terminated` (the consumer is cancelled or went
/// away: the registration is removed, buffered changes are dropped, `next()` returns `nil`).
///
/// Hand-off: a consumer that finds nothing parks one continuation; the next change resumes it
/// directly (so the buffer is empty whenever a continuation is parked). The lock is the
/// package's `_Lock` (atomics that ThreadSanitizer sees); nothing is resumed, released or
/// removed while it is held.
///
/// Bounded mode blocks the producer while the buffer is full: it counts itself in
/// `_blockedProducers`, unlocks and waits on `_space`; each element the consumer takes signals one
/// waiting producer, and termination signals them all.
internal final class _ChangeStream<Element>: @unchecked Sendable {
    typealias Continuation = UnsafeContinuation<_UncheckedSendable<Element?>, Never>

    private enum State { case active, sourceEnded, terminated }

    private let _lock = _Lock()
    private let _buffering: ChangeStreamBuffering
    /// `.latest`: folds a change that arrived while one was pending into one change that takes
    /// the consumer from the pending change's starting state to the newest.
    private let _coalesce: (Element, Element) -> Element
    private let _space = DispatchSemaphore(value: 0)
    // Guarded by `_lock`.
    @exclusivity(unchecked) private var _state = State.active
    @exclusivity(unchecked) private var _ring: UnsafeMutablePointer<Element>
    @exclusivity(unchecked) private var _capacity = 16
    @exclusivity(unchecked) private var _head = 0
    @exclusivity(unchecked) private var _count = 0
    @exclusivity(unchecked) private var _latest: Element?
    @exclusivity(unchecked) private var _waiter: Continuation?
    @exclusivity(unchecked) private var _blockedProducers = 0
    /// Ends the source when the consumer ends the stream (run once, outside the lock): removes
    /// the stream's registration, or cancels an array property's observation.
    @exclusivity(unchecked) private var _onTerminate: (() -> Void)?

    init(buffering: ChangeStreamBuffering, coalesce: @escaping (Element, Element) -> Element) {
        _buffering = buffering
        _coalesce = coalesce
        _ring = .allocate(capacity: _capacity)
    }

    deinit {
        for i in 0..<_count { (_ring + ((_head + i) & (_capacity - 1))).deinitialize(count: 1) }
        _ring.deallocate()
    }

    /// Remembers the registration (weakly) so that termination can remove it.
    func attach(_ registration: _AnyRegistration?) {
        attach { [weak registration] in
            if let registration, !registration.isCancelled { registration.registry.remove(registration) }
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

    /// Takes the next element and, in bounded mode, lets one blocked producer go (returned so the
    /// caller signals after unlocking).
    private func _takeLocked() -> (Element, wakeProducer: Bool)? {
        guard let element = _popLocked() else { return nil }
        if _blockedProducers > 0 {
            _blockedProducers -= 1
            return (element, true)
        }
        return (element, false)
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
        if let waiter = _waiter {
            _waiter = nil
            _lock.unlock()
            waiter.resume(returning: _UncheckedSendable(change))
            return
        }
        switch _buffering._kind {
        case .unbounded:
            _pushLocked(change)
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
                return
            }
            if let waiter = _waiter {
                _waiter = nil
                _lock.unlock()
                waiter.resume(returning: _UncheckedSendable(change))
                return
            }
            _pushLocked(change)
        }
        _lock.unlock()
    }

    // MARK: Consumer

    func next(isolation actor: isolated (any Actor)?) async -> Element? {
        if Task.isCancelled {
            terminate()
            return nil
        }
        _lock.lock()
        if let (element, wake) = _takeLocked() {
            _lock.unlock()
            if wake { _space.signal() }
            return element
        }
        if _state != .active {
            _lock.unlock()
            return nil
        }
        _lock.unlock()
        return await withTaskCancellationHandler {
            await withUnsafeContinuation(isolation: actor) { (continuation: Continuation) in
                _lock.lock()
                if let (element, wake) = _takeLocked() {
                    _lock.unlock()
                    if wake { _space.signal() }
                    continuation.resume(returning: _UncheckedSendable(element))
                    return
                }
                if _state != .active {
                    _lock.unlock()
                    continuation.resume(returning: _UncheckedSendable(nil))
                    return
                }
                if _waiter != nil {
                    _lock.unlock()
                    _misuse("ObserveCore: two tasks are iterating one change stream at once; a stream "
                                    + "has a single consumer (make one stream per consumer)")
                }
                _waiter = continuation
                _lock.unlock()
            }.value
        } onCancel: {
            self.terminate()
        }
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
        let waiter = _waiter
        _waiter = nil
        let producers = _blockedProducers
        _blockedProducers = 0
        let onTerminate = _onTerminate
        _onTerminate = nil
        let dropped = _drainLocked()
        _lock.unlock()
        waiter?.resume(returning: _UncheckedSendable(nil))
        for _ in 0..<producers { _space.signal() }
        onTerminate?()
        _ = dropped   // released here, after unlocking
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
        waiter?.resume(returning: _UncheckedSendable(nil))
        for _ in 0..<producers { _space.signal() }
    }

    /// Buffered elements (for tests and the debug description).
    var bufferedCount: Int { _lock.withLock { _count + (_latest == nil ? 0 : 1) } }
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
