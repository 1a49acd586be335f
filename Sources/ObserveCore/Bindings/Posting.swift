/// The context of every post-mode registration: an address no other registration uses.
private final class _PostingAnchor: Sendable {}
private let _postingAnchor = _PostingAnchor()
private var _postingContext: ObservationContext { ObservationContext(_postingAnchor) }

extension KeyValueObservable {
    /// Post mode (YJSafeKVO's `post`): this object publishes the changes of one of its properties
    /// to `handler` until ``stopPosting(_:)`` (or until it dies).
    ///
    /// ```swift
    /// person.post(\.name) { person, change in
    ///     analytics.record("renamed", change.newValue!)
    /// }
    /// person.name = "Ada"           // posted
    /// person.stopPosting(\.name)
    /// ```
    ///
    /// An object posts each property to one handler: posting a property again replaces the
    /// handler. The object is its own (weakly held) observer, so posting keeps nothing alive;
    /// the handler gets the object, so it need not capture it.
    ///
    /// - Parameters:
    ///   - keyPath: The property, rooted at the class that declares its ``ObservableKey``.
    ///   - options: What each change carries; `[.new]` by default.
    ///   - delivery: Where the handler runs; inline on the mutating thread by default.
    ///   - handler: Called with the object and each change.
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func post<Value>(
        _ keyPath: KeyPath<Self, Value>,
        options: ObservationOptions = [.new],
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Self, ObservedChange<Value>) -> Void
    ) {
        removeObserver(self, for: keyPath, context: _postingContext)
        addObserver(self, for: keyPath, options: options, context: _postingContext, delivery: delivery) { _, object, change in
            handler(object, change)
        }
    }

    /// ``post(_:options:delivery:_:)`` for an optional property: the change's values are
    /// `Wrapped?`, nil when the property is nil (see `KeyValueObservable+Optionals.swift`).
    ///
    /// ```swift
    /// person.post(\.nickname) { person, change in print(person.name, "is now", change.newValue ?? "unnamed") }
    /// ```
    public func post<Wrapped>(
        _ keyPath: KeyPath<Self, Wrapped?>,
        options: ObservationOptions = [.new],
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Self, ObservedChange<Wrapped>) -> Void
    ) {
        removeObserver(self, for: keyPath, context: _postingContext)
        addObserver(self, for: keyPath, options: options, context: _postingContext, delivery: delivery) { _, object, change in
            handler(object, change)
        }
    }

    /// Stops posting the changes of `keyPath` (see ``post(_:options:delivery:_:)``). Stopping a
    /// property that is not posted does nothing.
    ///
    /// ```swift
    /// person.stopPosting(\.name)
    /// ```
    public func stopPosting(_ keyPath: PartialKeyPath<Self>) {
        removeObserver(self, for: keyPath, context: _postingContext)
    }

    /// Stops posting every property of this object.
    ///
    /// ```swift
    /// person.stopPosting()
    /// ```
    public func stopPosting() {
        let address = UInt(bitPattern: ObjectIdentifier(self))
        let context = _postingContext.rawValue
        kvoRegistrar._registry.remove(object: address, keyID: nil, registrar: kvoRegistrar) {
            $0.observerAddress == address && $0.context == context
        }
    }

    /// The key paths this object currently posts.
    ///
    /// ```swift
    /// print(person.postedKeyPaths)       // [\Person.name]
    /// ```
    public var postedKeyPaths: [PartialKeyPath<Self>] {
        let address = UInt(bitPattern: ObjectIdentifier(self))
        let context = _postingContext.rawValue
        return kvoRegistrar._registry.registrations(object: address, keyID: nil)
            .filter { $0.observerAddress == address && $0.context == context }
            .compactMap { $0.keyPath as? PartialKeyPath<Self> }
    }
}
