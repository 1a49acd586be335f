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
    internal init(_ array: ObservableArray<ArrayElement>, options: ObservationOptions, elementKeyPaths: [AnyKeyPath],
                  startTracking: ((Set<UInt32>) -> Void)?, buffering: ChangeStreamBuffering) {
        let stream = _ChangeStream<ArrayChange<ArrayElement>>(buffering: buffering, coalesce: Self._fold)
        let sentinel = _StreamSentinel(stream)
        let registration = array._addArrayRegistration(
            observer: nil, context: .none, options: options, delivery: .inline, elementKeyPaths: elementKeyPaths,
            startTracking: startTracking) { _, _, change in sentinel.stream.produce(change) }
        stream.attach(registration)
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
    ///     (``ArrayChange/Kind/arrayReplaced``). `.prior` is not supported for arrays.
    ///   - buffering: ``ChangeStreamBuffering/unbounded`` (the default),
    ///     ``ChangeStreamBuffering/bounded(_:)`` (the mutating thread waits while it is full) or
    ///     ``ChangeStreamBuffering/latest`` (changes folded while the consumer is busy).
    /// - Returns: A stream whose registration is live from now on.
    public func changes(options: ObservationOptions = [], buffering: ChangeStreamBuffering = .unbounded)
    -> ArrayChanges<Element> {
        ArrayChanges(self, options: options, elementKeyPaths: [], startTracking: nil, buffering: buffering)
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
    public func changes(options: ObservationOptions = [], elementKeyPaths: [PartialKeyPath<Element>],
                        buffering: ChangeStreamBuffering = .unbounded) -> ArrayChanges<Element> {
        ArrayChanges(self, options: options, elementKeyPaths: elementKeyPaths, startTracking: _startTracking,
                     buffering: buffering)
    }
}
