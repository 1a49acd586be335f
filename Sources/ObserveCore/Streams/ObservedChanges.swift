/// How a change stream holds changes that its consumer has not taken yet.
///
/// ```swift
/// for await change in person.changes(for: \.age) { … }                         // .unbounded
/// for await change in person.changes(for: \.age, buffering: .bounded(256)) { … }
/// for await change in person.changes(for: \.age, buffering: .latest) { … }
/// ```
public struct ChangeStreamBuffering: Sendable, Hashable, CustomStringConvertible {
    internal enum _Kind: Sendable, Hashable {
        case unbounded
        case bounded(Int)
        case latest
    }
    internal let _kind: _Kind

    /// Lossless, never blocks the setter: every change, in order, in a buffer that grows as
    /// needed. Memory is the back-pressure: a consumer that falls behind for good grows the
    /// buffer without limit (about the size of one ``ObservedChange`` per change). The default.
    ///
    /// ```swift
    /// for await change in person.changes(for: \.age, buffering: .unbounded) { … }
    /// ```
    public static var unbounded: ChangeStreamBuffering { ChangeStreamBuffering(_kind: .unbounded) }

    /// Lossless with back-pressure: every change, in order, at most `capacity` waiting. When the
    /// buffer is full, the *setter* waits (the thread that assigned the property blocks inside
    /// the notification) until the consumer takes one.
    ///
    /// - Warning: A setter that blocks must not be the thread the consumer needs in order to run:
    ///   do not set the property from the consuming task's actor (the main actor, say) or from a
    ///   thread the consumer waits for. Set from another thread or task, or use ``unbounded``.
    ///
    /// ```swift
    /// for await change in counter.changes(for: \.value, buffering: .bounded(1024)) { … }
    /// ```
    /// - Parameter capacity: At least 1.
    public static func bounded(_ capacity: Int) -> ChangeStreamBuffering {
        _require(capacity >= 1, "ObserveCore: a bounded change stream needs a capacity of at least 1, not \(capacity)")
        return ChangeStreamBuffering(_kind: .bounded(capacity))
    }

    /// Latest value: at most one change waits; a newer one replaces it, keeping the waiting
    /// change's `oldValue` (so the element spans every change it stands for: `oldValue` from the
    /// first, `newValue` from the last). Never blocks the setter; a slow consumer sees fewer
    /// elements, always ending with the latest value. Not combinable with `.prior`.
    ///
    /// ```swift
    /// for await change in slider.changes(for: \.value, buffering: .latest) { render(change.newValue!) }
    /// ```
    public static var latest: ChangeStreamBuffering { ChangeStreamBuffering(_kind: .latest) }

    /// The policy's name, as written in code.
    ///
    /// ```swift
    /// print(ChangeStreamBuffering.bounded(8))     // bounded(8)
    /// ```
    public var description: String {
        switch _kind {
        case .unbounded: return "unbounded"
        case .bounded(let capacity): return "bounded(\(capacity))"
        case .latest: return "latest"
        }
    }
}

/// The changes of one property as an `AsyncSequence`, for Swift concurrency.
///
/// Made by ``KeyValueObservable/changes(for:options:buffering:)``. The registration is made when
/// the stream is made, so every change from then on is captured (in order, per
/// ``ChangeStreamBuffering``), even before iteration starts. A stream has one consumer and is
/// iterated once.
///
/// The stream ends (the registration is removed) when:
/// - the consuming task is cancelled, or the iterator goes away (a `for await` loop that
///   `break`s): `next()` returns nil and changes still buffered are dropped;
/// - every copy of the stream and of its iterator is gone without iterating;
/// - the observed object dies, or its observers are removed (`removeAllObservers`): changes
///   already buffered are still delivered, then `next()` returns nil.
///
/// ```swift
/// let ages = person.changes(for: \.age, options: [.old, .new])
/// Task {
///     for await change in ages { print(change.oldValue!, "->", change.newValue!) }
///     print("person is gone")
/// }
/// ```
///
/// Elements are the ``ObservedChange`` values an inline handler would get, handed from the
/// setting thread to the consuming task. The stream is `Sendable` when `Value` is; for other
/// values, make and iterate it in one isolation domain.
public struct ObservedChanges<Value>: AsyncSequence {
    /// One change of the property.
    ///
    /// ```swift
    /// for await change in person.changes(for: \.age) { let age: Int? = change.newValue }
    /// ```
    public typealias Element = ObservedChange<Value>
    /// A change stream never throws; it ends with `nil`.
    ///
    /// ```swift
    /// for await change in person.changes(for: \.age) { … }    // no `try`
    /// ```
    public typealias Failure = Never

    internal let _lifetime: _StreamLifetime<ObservedChange<Value>>

    /// Makes the stream's single iterator.
    ///
    /// ```swift
    /// var iterator = person.changes(for: \.name).makeAsyncIterator()
    /// let first = await iterator.next()
    /// ```
    public func makeAsyncIterator() -> Iterator {
        Iterator(_sequence: _lifetime, _iterator: _StreamLifetime(_lifetime.stream))
    }

    /// The iterator of a change stream. When it goes away, the stream ends.
    ///
    /// ```swift
    /// var iterator = person.changes(for: \.name).makeAsyncIterator()
    /// while let change = await iterator.next() { print(change.newValue!) }
    /// ```
    public struct Iterator: AsyncIteratorProtocol {
        internal let _sequence: _StreamLifetime<ObservedChange<Value>>
        internal let _iterator: _StreamLifetime<ObservedChange<Value>>

        /// The next change, waiting for one if none is buffered; nil once the stream ended.
        ///
        /// ```swift
        /// let change = await iterator.next()
        /// ```
        public mutating func next() async -> ObservedChange<Value>? {
            await _iterator.stream.next(isolation: nil)
        }

        /// The next change, resuming on the caller's actor; nil once the stream ended.
        ///
        /// ```swift
        /// let change = await iterator.next(isolation: #isolation)
        /// ```
        public mutating func next(isolation actor: isolated (any Actor)?) async -> ObservedChange<Value>? {
            await _iterator.stream.next(isolation: actor)
        }
    }
}

extension ObservedChanges: Sendable where Value: Sendable {}

extension KeyValueObservable {
    /// The changes of a property as an `AsyncSequence` (see ``ObservedChanges``).
    ///
    /// ```swift
    /// for await change in person.changes(for: \.name) {
    ///     print("now", change.newValue!)
    /// }
    ///
    /// // Latest value only: a slow consumer skips intermediate values.
    /// for await change in slider.changes(for: \.value, buffering: .latest) { render(change.newValue!) }
    /// ```
    ///
    /// Key path chains and dependent keys work as with ``observe(_:options:delivery:_:)``.
    ///
    /// - Parameters:
    ///   - keyPath: The property, rooted at the class that declares its ``ObservableKey``.
    ///   - options: What each change carries; `[.new]` by default. With `.initial`, the first
    ///     element is the current value.
    ///   - buffering: ``ChangeStreamBuffering/unbounded`` (lossless; the default),
    ///     ``ChangeStreamBuffering/bounded(_:)`` (lossless, the setter waits when full) or
    ///     ``ChangeStreamBuffering/latest``.
    /// - Returns: A stream whose registration is live from now on.
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func changes<Value>(
        for keyPath: KeyPath<Self, Value>,
        options: ObservationOptions = [.new],
        buffering: ChangeStreamBuffering = .unbounded
    ) -> ObservedChanges<Value> {
        _changes(for: keyPath, options: options, buffering: buffering) { $0 }
    }

    /// `changes(for:)`, each change passed through `transform` on the setting thread (the
    /// optional-property form unwraps values one level).
    internal func _changes<Value, Output>(
        for keyPath: KeyPath<Self, Value>, options: ObservationOptions, buffering: ChangeStreamBuffering,
        _ transform: @escaping (ObservedChange<Value>) -> ObservedChange<Output>
    ) -> ObservedChanges<Output> {
        if buffering == .latest {
            _require(!options.contains(.prior),
                     "ObserveCore: a .latest change stream cannot carry .prior notifications (\(keyPath)); "
                     + "use .unbounded or .bounded to receive them")
        }
        let stream = _ChangeStream<ObservedChange<Output>>(buffering: buffering) { pending, change in
            ObservedChange(oldValue: pending.oldValue, newValue: change.newValue, isPrior: false,
                           isInitial: pending.isInitial)
        }
        let sentinel = _StreamSentinel(stream)
        let registration = _register(keyPath, options: options, delivery: .inline,
                                     tokenHandler: { _, change in sentinel.stream.produce(transform(change)) })
        stream.attach(registration)
        return ObservedChanges(_lifetime: _StreamLifetime(stream))
    }
}
