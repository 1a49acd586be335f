// Observation whose handler is isolated to an actor, checked by the compiler in Swift 6.
//
// The `delivery:` forms take a handler that is not `@Sendable`: `.inline` runs it on the
// mutating thread, where a non-Sendable handler belongs, and `.queue(q)` is left to the caller
// to make safe. The forms below are the checked ones: the handler is `@Sendable` and runs on
// the main actor (a `@MainActor` closure, so it may touch a view model's state) or on a given
// actor (with that actor `isolated`), asynchronously and in the order the changes were made on
// each thread. Only the changes cross threads, so they must be `Sendable`; the object does not,
// and it is not retained by a pending delivery (it can stay confined to the actor that owns it).
// Every form goes through one `_ActorMailbox` per registration (see there).

extension KeyValueObservable {
    /// Observes a property with a handler that runs on the main actor.
    ///
    /// ```swift
    /// @MainActor final class ThermometerViewModel {
    ///     private(set) var text = ""
    ///     private var token: ObservationToken?
    ///     func show(_ thermometer: Thermometer) {
    ///         token = thermometer.observe(\.celsius, on: MainActor.shared) { [weak self] change in
    ///             self?.text = "\(change.newValue!) °C"       // main-actor state, checked
    ///         }
    ///     }
    /// }
    /// ```
    /// Each change is delivered asynchronously on the main actor (also when it was made there),
    /// in the order the changes were made on each thread. Cancelling the token on the main actor
    /// guarantees that no later call happens, even for changes already made.
    /// - Parameters:
    ///   - keyPath: The property, rooted at the class that declares its ``ObservableKey``.
    ///   - options: What the changes carry; `[.new]` by default. `.prior` is delivered like any
    ///     change, asynchronously.
    ///   - mainActor: `MainActor.shared`.
    ///   - handler: Called on the main actor with the typed change.
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func observe<Value: Sendable>(
        _ keyPath: KeyPath<Self, Value>,
        options: ObservationOptions = [.new],
        on mainActor: MainActor,
        _ handler: @escaping @MainActor @Sendable (ObservedChange<Value>) -> Void
    ) -> ObservationToken {
        _observe(keyPath, options: options, on: mainActor, transform: { $0 }) { _, change in
            MainActor.assumeIsolated { handler(change) }
        }
    }

    /// Observes a property with a handler isolated to `actor`.
    ///
    /// ```swift
    /// actor TemperatureLog {
    ///     private(set) var readings: [Int] = []
    ///     func record(_ celsius: Int) { readings.append(celsius) }
    /// }
    /// let token = thermometer.observe(\.celsius, on: log) { log, change in
    ///     log.record(change.newValue!)                 // runs on `log`: no await
    /// }
    /// ```
    /// Each change is delivered asynchronously on the actor, one at a time, in the order the
    /// changes were made on each thread. Cancelling the token on the actor itself guarantees no
    /// later call, even for changes already made; cancelled from another thread, a call that is
    /// just starting may still happen.
    /// - Parameters:
    ///   - keyPath: The property, rooted at the class that declares its ``ObservableKey``.
    ///   - options: What the changes carry; `[.new]` by default.
    ///   - actor: The actor the handler runs on; kept alive by the observation.
    ///   - handler: Called on `actor` with the actor (isolated) and the typed change.
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func observe<Value: Sendable, A: Actor>(
        _ keyPath: KeyPath<Self, Value>,
        options: ObservationOptions = [.new],
        on actor: A,
        _ handler: @escaping @Sendable (isolated A, ObservedChange<Value>) -> Void
    ) -> ObservationToken {
        _observe(keyPath, options: options, on: actor, transform: { $0 }, handler)
    }

    /// Registers `keyPath` inline and posts each change, passed through `transform` on the
    /// mutating thread, to a mailbox drained on `actor`. The token closes the mailbox (dropping
    /// what is pending) and cancels the registration.
    internal func _observe<Value, Change: Sendable, A: Actor>(
        _ keyPath: KeyPath<Self, Value>, options: ObservationOptions, on actor: A,
        transform: @escaping (ObservedChange<Value>) -> Change,
        _ handler: @escaping @Sendable (isolated A, Change) -> Void
    ) -> ObservationToken {
        let mailbox = _ActorMailbox<A, Change>(actor: actor, handler: handler)
        let registration = ObservationToken(_register(
            keyPath, options: options, delivery: .inline,
            tokenHandler: { _, change in mailbox.post(transform(change)) }))
        return mailbox.token(closing: registration)
    }
}

extension ObservableArray where Element: Sendable {
    /// Observes this array's mutations with a handler that runs on the main actor.
    ///
    /// ```swift
    /// token = inbox.observe(on: MainActor.shared) { [weak self] change in
    ///     self?.unread += change.insertedCount                  // main-actor state, checked
    /// }
    /// ```
    /// Delivery is asynchronous, on the main actor, in order per mutating thread; cancelling the
    /// token on the main actor guarantees no later call.
    public func observe(options: ArrayObservationOptions = [.new], on mainActor: MainActor,
                        _ handler: @escaping @MainActor @Sendable (ArrayChange<Element>) -> Void) -> ObservationToken {
        _observe(options: options, on: mainActor) { _, change in
            MainActor.assumeIsolated { handler(change) }
        }
    }

    /// Observes this array's mutations with a handler isolated to `actor`.
    ///
    /// ```swift
    /// actor Replica {
    ///     private(set) var contents: [Int] = []
    ///     func apply(_ change: ArrayChange<Int>) { contents = change.applying(to: contents) ?? contents }
    /// }
    /// let token = numbers.observe(on: replica) { replica, change in replica.apply(change) }
    /// ```
    /// Delivery is one change at a time, on the actor, in order per mutating thread (so a
    /// replica that applies every change stays equal to the array when one thread — or one
    /// actor — mutates it); cancelling the token on the actor guarantees no later call.
    public func observe<A: Actor>(options: ArrayObservationOptions = [.new], on actor: A,
                                  _ handler: @escaping @Sendable (isolated A, ArrayChange<Element>) -> Void)
    -> ObservationToken {
        _observe(options: options, on: actor, handler)
    }

    private func _observe<A: Actor>(options: ArrayObservationOptions, on actor: A,
                                    _ handler: @escaping @Sendable (isolated A, ArrayChange<Element>) -> Void)
    -> ObservationToken {
        let mailbox = _ActorMailbox<A, ArrayChange<Element>>(actor: actor, handler: handler)
        let registration = observe(options: options, delivery: .inline) { _, change in mailbox.post(change) }
        return mailbox.token(closing: registration)
    }
}
