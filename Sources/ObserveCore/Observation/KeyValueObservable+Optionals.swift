// Observing a property whose type is itself optional (`String?`, a chain through an optional
// link such as `\.address?.city`).
//
// The general forms hand over `ObservedChange<Value>`, whose `oldValue`/`newValue` are `Value?`:
// for `Value == String?` that is `String??`, which user code has to unwrap twice and which prints
// as `Optional(Optional("Paris"))`. Each form below takes `KeyPath<Self, Wrapped?>` and hands over
// `ObservedChange<Wrapped>` instead: `newValue` is `String?`, nil when the property is nil (or
// when `.new` was not asked for). Swift picks these overloads for every optional key path, as
// the more specific ones (the general forms are `@_disfavoredOverload`); the forms for several
// key paths at once keep the general change type. `post` has its optional form in Posting.swift.

extension ObservedChange {
    /// The change of an optional property with its values unwrapped one level.
    @inlinable
    internal init(flattening change: ObservedChange<Value?>) {
        self.init(oldValue: change.oldValue ?? nil, newValue: change.newValue ?? nil,
                  isPrior: change.isPrior, isInitial: change.isInitial)
    }
}

extension KeyValueObservable {
    /// Observes an optional property; the change's values are `Wrapped?` (one level of optional).
    ///
    /// ```swift
    /// let token = person.observe(\.address?.city, options: [.old, .new]) { person, change in
    ///     print(change.oldValue ?? "none", "->", change.newValue ?? "none")   // String?, String?
    /// }
    /// ```
    /// Everything else is as for ``observe(_:options:delivery:_:)-(KeyPath<Self,Value>,_,_,_)``.
    @inlinable
    public func observe<Wrapped>(
        _ keyPath: KeyPath<Self, Wrapped?>,
        options: ObservationOptions = [.new],
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Self, ObservedChange<Wrapped>) -> Void
    ) -> ObservationToken {
        ObservationToken(_register(keyPath, options: options, delivery: delivery,
                                   tokenHandler: { object, change in handler(object, ObservedChange(flattening: change)) }))
    }

    /// Registers `observer` for an optional property; the change's values are `Wrapped?`.
    ///
    /// ```swift
    /// person.addObserver(self, for: \.nickname) { me, person, change in me.title = change.newValue ?? person.name }
    /// ```
    @inlinable
    public func addObserver<Observer: AnyObject, Wrapped>(
        _ observer: Observer,
        for keyPath: KeyPath<Self, Wrapped?>,
        options: ObservationOptions = [.new],
        context: ObservationContext = .none,
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Observer, Self, ObservedChange<Wrapped>) -> Void
    ) {
        _ = _register(keyPath, observer: observer, context: context, options: options, delivery: delivery,
                      observerHandler: { observer, object, change in
                          handler(unsafeDowncast(observer, to: Observer.self), object, ObservedChange(flattening: change))
                      })
    }

    /// Registers `observer` for an optional property with a context the handler is told; the
    /// change's values are `Wrapped?`.
    ///
    /// ```swift
    /// person.addObserver(self, for: \.nickname, context: 7) { me, person, change, context in
    ///     me.refresh(section: context.rawValue, with: change.newValue)
    /// }
    /// ```
    @inlinable
    public func addObserver<Observer: AnyObject, Wrapped>(
        _ observer: Observer,
        for keyPath: KeyPath<Self, Wrapped?>,
        options: ObservationOptions = [.new],
        context: ObservationContext,
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Observer, Self, ObservedChange<Wrapped>, ObservationContext) -> Void
    ) {
        _ = _register(keyPath, observer: observer, context: context, options: options, delivery: delivery,
                      observerHandler: { observer, object, change in
                          handler(unsafeDowncast(observer, to: Observer.self), object, ObservedChange(flattening: change),
                                  context)
                      })
    }

    /// The `AnyObject` / protocol-existential observer form (see the non-optional one for why it
    /// exists) for an optional property; the change's values are `Wrapped?`.
    ///
    /// ```swift
    /// func attach(_ listener: AnyObject, to person: Person) {
    ///     person.addObserver(listener, for: \.nickname) { _, _, change in print(change.newValue ?? "none") }
    /// }
    /// ```
    public func addObserver<Wrapped>(
        _ observer: AnyObject,
        for keyPath: KeyPath<Self, Wrapped?>,
        options: ObservationOptions = [.new],
        context: ObservationContext = .none,
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (AnyObject, Self, ObservedChange<Wrapped>) -> Void
    ) {
        _ = _register(keyPath, observer: observer, context: context, options: options, delivery: delivery,
                      observerHandler: { observer, object, change in
                          handler(observer, object, ObservedChange(flattening: change))
                      })
    }

    /// The changes of an optional property as an `AsyncSequence`; values are `Wrapped?`.
    ///
    /// ```swift
    /// for await change in person.changes(for: \.address?.city) { print(change.newValue ?? "no city") }
    /// ```
    public func changes<Wrapped>(
        for keyPath: KeyPath<Self, Wrapped?>,
        options: ObservationOptions = [.new],
        buffering: ChangeStreamBuffering = .unbounded
    ) -> ObservedChanges<Wrapped> {
        _changes(for: keyPath, options: options, buffering: buffering) { ObservedChange(flattening: $0) }
    }

    /// Observes an optional property on the main actor; values are `Wrapped?`.
    ///
    /// ```swift
    /// token = person.observe(\.nickname, on: MainActor.shared) { [weak self] change in self?.title = change.newValue }
    /// ```
    public func observe<Wrapped: Sendable>(
        _ keyPath: KeyPath<Self, Wrapped?>,
        options: ObservationOptions = [.new],
        on mainActor: MainActor,
        _ handler: @escaping @MainActor @Sendable (ObservedChange<Wrapped>) -> Void
    ) -> ObservationToken {
        _observe(keyPath, options: options, on: mainActor, transform: { ObservedChange(flattening: $0) }) { _, change in
            MainActor.assumeIsolated { handler(change) }
        }
    }

    /// Observes an optional property with a handler isolated to `actor`; values are `Wrapped?`.
    ///
    /// ```swift
    /// let token = person.observe(\.nickname, on: log) { log, change in log.record(change.newValue ?? "-") }
    /// ```
    public func observe<Wrapped: Sendable, A: Actor>(
        _ keyPath: KeyPath<Self, Wrapped?>,
        options: ObservationOptions = [.new],
        on actor: A,
        _ handler: @escaping @Sendable (isolated A, ObservedChange<Wrapped>) -> Void
    ) -> ObservationToken {
        _observe(keyPath, options: options, on: actor, transform: { ObservedChange(flattening: $0) }, handler)
    }
}

extension ArrayChange {
    /// The old and new values of an element property change whose type is optional, unwrapped
    /// one level: nil unless this is an ``Kind/elementChanged`` change of `keyPath`.
    ///
    /// ```swift
    /// if let (old, new) = change.elementChange(for: \.nickname) { print(old ?? "none", "->", new ?? "none") }
    /// ```
    public func elementChange<Wrapped>(for keyPath: KeyPath<Element, Wrapped?>) -> (old: Wrapped?, new: Wrapped?)? {
        guard let (old, new) = _elementValues(for: keyPath) else { return nil }
        return (old ?? nil, new ?? nil)
    }
}
