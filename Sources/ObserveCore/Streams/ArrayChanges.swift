/// The changes of an ``ObservableArray`` as an `AsyncSequence`: every mutation (and, with
/// element key paths, every change of those properties of its elements), handed from the
/// mutating thread to the consuming task.
///
/// ```swift
/// var replica = Array(jobs)
/// for await change in jobs.changes() {
///     replica = change.applying(to: replica)!      // always equal to the array after the change
/// }
/// ```
///
/// Buffering as for property streams (``ChangeStreamBuffering``): `.unbounded` and `.bounded(n)`
/// deliver every change in order; with `.latest`, changes that arrive while one is waiting are
/// folded into one ``ArrayChange/Kind/arrayReplaced`` change holding the newest contents, so a
/// replica that applies what it receives still ends equal to the array. The stream ends when the
/// array dies; iterating ends it from the consumer's side (cancel the task, or drop the iterator).
public struct ArrayChanges<ArrayElement>: AsyncSequence {
    /// One change of the array.
    ///
    /// ```swift
    /// for await change in jobs.changes() { print(change.kind, change.insertedCount) }
    /// ```
    public typealias Element = ArrayChange<ArrayElement>
    /// A change stream never throws; it ends with `nil`.
    ///
    /// ```swift
    /// for await change in jobs.changes() { … }          // no `try`
    /// ```
    public typealias Failure = Never

    internal let _lifetime: _StreamLifetime<ArrayChange<ArrayElement>>

    /// Makes the stream's single iterator.
    ///
    /// ```swift
    /// var iterator = jobs.changes().makeAsyncIterator()
    /// let first = await iterator.next()
    /// ```
    public func makeAsyncIterator() -> Iterator {
        Iterator(_sequence: _lifetime, _iterator: _StreamLifetime(_lifetime.stream))
    }

    /// The iterator of an array change stream. When it goes away, the stream ends.
    ///
    /// ```swift
    /// var iterator = jobs.changes().makeAsyncIterator()
    /// while let change = await iterator.next() { print(change.kind) }
    /// ```
    public struct Iterator: AsyncIteratorProtocol {
        internal let _sequence: _StreamLifetime<ArrayChange<ArrayElement>>
        internal let _iterator: _StreamLifetime<ArrayChange<ArrayElement>>

        /// The next change, waiting for one if none is buffered; nil once the stream ended.
        ///
        /// ```swift
        /// let change = await iterator.next()
        /// ```
        public mutating func next() async -> ArrayChange<ArrayElement>? {
            await _iterator.stream.next(isolation: nil)
        }

        /// The next change, resuming on the caller's actor; nil once the stream ended.
        ///
        /// ```swift
        /// let change = await iterator.next(isolation: #isolation)
        /// ```
        public mutating func next(isolation actor: isolated (any Actor)?) async -> ArrayChange<ArrayElement>? {
            await _iterator.stream.next(isolation: actor)
        }
    }

    /// Registers on `array` (inline delivery into the stream's buffer) and wraps the stream.
    internal init(_ array: ObservableArray<ArrayElement>, options: ArrayObservationOptions, elementKeyPaths: [AnyKeyPath],
                  startTracking: (([_ElementKey]) -> Void)?, buffering: ChangeStreamBuffering) {
        let stream = _ChangeStream<ArrayChange<ArrayElement>>(buffering: buffering, coalesce: Self._fold)
        let sentinel = _StreamSentinel(stream)
        let registration = array._addArrayRegistration(
            observer: nil, context: .none, options: options, delivery: .inline, elementKeyPaths: elementKeyPaths,
            startTracking: startTracking) { _, _, change in sentinel.stream.produce(change) }
        stream.attach(registration)
        _lifetime = _StreamLifetime(stream)
    }

    /// Follows the array held in `keyPath` of `owner` (through reassignments) into a new stream.
    internal init<Owner: KeyValueObservable>(_ owner: Owner, _ keyPath: KeyPath<Owner, ObservableArray<ArrayElement>>,
                                             options: ArrayObservationOptions, elementKeyPaths: [AnyKeyPath],
                                             startTracking: ((ObservableArray<ArrayElement>, [_ElementKey]) -> Void)?,
                                             buffering: ChangeStreamBuffering) {
        let stream = _ChangeStream<ArrayChange<ArrayElement>>(buffering: buffering, coalesce: Self._fold)
        let link = _ArrayPropertyStreamLink(stream, owner: owner)
        let token = _ArrayObservation<Owner, ArrayElement>.start(
            owner: owner, keyPath: keyPath, options: options, delivery: .inline, elementKeyPaths: elementKeyPaths,
            startTracking: startTracking) { [weak stream] _, change in stream?.produce(change) }
        link.hold(token)
        stream.attach { link.end() }
        _lifetime = _StreamLifetime(stream)
    }

    /// `.latest`: the change from the state before `pending` to the state after `newest`, as
    /// "the contents are now these".
    private static func _fold(_ pending: ArrayChange<ArrayElement>, _ newest: ArrayChange<ArrayElement>)
    -> ArrayChange<ArrayElement> {
        ArrayChange(kind: .arrayReplaced, runs: [], removed: .none, snapshot: newest._snapshot,
                    oldCount: pending.oldCount, newCount: newest.newCount, isInitial: false,
                    oldArray: pending.oldArray, newArray: newest.newArray)
    }
}

extension ArrayChanges: Sendable where ArrayElement: Sendable {}

/// Ties an array-property stream to its observation: the owner's death ends the stream (after
/// what is buffered) and cancels the observation; the stream's end cancels it too. The stream
/// holds this (through its termination hook), which holds the observation's token; the death
/// watch holds it weakly; the observation's handler holds the stream weakly.
internal final class _ArrayPropertyStreamLink<ArrayElement>: _DeathWatcher, @unchecked Sendable {
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _token: ObservationToken?
    private weak var _stream: _ChangeStream<ArrayChange<ArrayElement>>?
    private let _ownerAddress: UInt

    init(_ stream: _ChangeStream<ArrayChange<ArrayElement>>, owner: AnyObject) {
        _stream = stream
        _ownerAddress = UInt(bitPattern: ObjectIdentifier(owner))
        _DeathWatch.shared.watch(owner, by: self)
    }

    deinit { _DeathWatch.shared.unwatch(_ownerAddress, identity: ObjectIdentifier(self)) }

    func hold(_ token: ObservationToken) { _lock.withLock { _token = token } }

    /// The consumer ended the stream (the watch goes with this link, in `deinit`).
    func end() { _takeToken()?.cancel() }

    func watchedObjectDidDie(_ address: UInt) {
        _takeToken()?.cancel()
        _stream?.sourceEnded()
    }

    private func _takeToken() -> ObservationToken? {
        _lock.withLock { () -> ObservationToken? in defer { _token = nil }; return _token }
    }
}

extension ObservableArray {
    /// This array's mutations as an `AsyncSequence` (see ``ArrayChanges``).
    ///
    /// ```swift
    /// for await change in jobs.changes(buffering: .bounded(64)) {
    ///     await apply(change)
    /// }
    /// ```
    /// - Parameters:
    ///   - options: `.initial` makes the first element the current contents
    ///     (``ArrayChange/Kind/arrayReplaced``); see ``ArrayObservationOptions``.
    ///   - buffering: ``ChangeStreamBuffering/unbounded`` (the default),
    ///     ``ChangeStreamBuffering/bounded(_:)`` (the mutating thread waits while it is full) or
    ///     ``ChangeStreamBuffering/latest`` (changes folded while the consumer is busy).
    /// - Returns: A stream whose registration is live from now on.
    public func changes(options: ArrayObservationOptions = [.new], buffering: ChangeStreamBuffering = .unbounded)
    -> ArrayChanges<Element> {
        ArrayChanges(self, options: options, elementKeyPaths: [], startTracking: nil, buffering: buffering)
    }
}

extension KeyValueObservable {
    /// The changes of the array held in a property, as an `AsyncSequence` (see ``ArrayChanges``):
    /// every mutation of the array the property holds, and when the property is set to another
    /// array, an ``ArrayChange/Kind/arrayReplaced`` change, after which the new array's mutations
    /// follow. The stream ends when the owner dies.
    ///
    /// ```swift
    /// for await change in teacher.arrayChanges(for: \.students) { print(change.kind) }
    /// ```
    public func arrayChanges<Element>(for keyPath: KeyPath<Self, ObservableArray<Element>>,
                                      options: ArrayObservationOptions = [.new],
                                      buffering: ChangeStreamBuffering = .unbounded) -> ArrayChanges<Element> {
        ArrayChanges(self, keyPath, options: options, elementKeyPaths: [], startTracking: nil, buffering: buffering)
    }

    /// ``arrayChanges(for:options:buffering:)`` with the given properties of the elements too.
    ///
    /// ```swift
    /// for await change in teacher.arrayChanges(for: \.students, elementKeyPaths: [\.grade]) { … }
    /// ```
    public func arrayChanges<Element: KeyValueObservable>(for keyPath: KeyPath<Self, ObservableArray<Element>>,
                                                          options: ArrayObservationOptions = [.new],
                                                          elementKeyPaths: [PartialKeyPath<Element>],
                                                          buffering: ChangeStreamBuffering = .unbounded)
    -> ArrayChanges<Element> {
        ArrayChanges(self, keyPath, options: options, elementKeyPaths: elementKeyPaths,
                     startTracking: { array, keys in array._startTracking(keys) }, buffering: buffering)
    }
}

extension ObservableArray where Element: KeyValueObservable {
    /// This array's mutations and the changes of the given properties of its elements, as an
    /// `AsyncSequence` — one registration, never one per element (see ``ArrayChanges``).
    ///
    /// ```swift
    /// for await change in students.changes(elementKeyPaths: [\.grade]) {
    ///     if change.kind == .elementChanged { print("grade at", change.elements.map(\.newIndex!)) }
    /// }
    /// ```
    public func changes(options: ArrayObservationOptions = [.new], elementKeyPaths: [PartialKeyPath<Element>],
                        buffering: ChangeStreamBuffering = .unbounded) -> ArrayChanges<Element> {
        ArrayChanges(self, options: options, elementKeyPaths: elementKeyPaths, startTracking: _startTracking,
                     buffering: buffering)
    }
}
