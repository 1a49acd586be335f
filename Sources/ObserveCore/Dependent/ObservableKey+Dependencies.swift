extension ObservableKey where Root: KeyValueObservable {
    /// Declares a *dependent* key: a property (usually computed) whose value follows from other
    /// observable properties of the same object, in the manner of KVO's
    /// `keyPathsForValuesAffecting<Key>`.
    ///
    /// Observers of the dependent key hear one change per set of any of `dependencies`, with the
    /// dependent value recomputed: `oldValue` is the value last announced (the value when the
    /// first observer registered, then after each change), `newValue` is read right after the
    /// dependency changed. A dependency may be a declared key, another dependent key, or a key
    /// path chain (`\.address?.city`); the dependent property needs no setter and no
    /// `willSet`/`didSet`.
    ///
    /// ```swift
    /// final class Person: KeyValueObservable, ObservableKeyListing {
    ///     let kvoRegistrar = KeyValueRegistrar()
    ///     static let observableKeys: [any ObservableKeyProtocol] = [firstName, lastName, fullName]
    ///
    ///     static let firstName = ObservableKey(\Person.firstName)
    ///     var firstName = "" {
    ///         willSet { kvoRegistrar.willSet(Person.firstName, of: self, from: firstName) }
    ///         didSet { kvoRegistrar.didSet(Person.firstName, of: self, from: oldValue, to: firstName) }
    ///     }
    ///     static let lastName = ObservableKey(\Person.lastName)
    ///     var lastName = "" { /* willSet / didSet as above */ }
    ///
    ///     static let fullName = ObservableKey(\Person.fullName, dependsOn: \.firstName, \.lastName)
    ///     var fullName: String { firstName + " " + lastName }
    /// }
    ///
    /// let token = person.observe(\.fullName, options: [.old, .new]) { person, change in
    ///     print(change.oldValue!, "->", change.newValue!)      // "Ada  -> Ada Lovelace"
    /// }
    /// person.lastName = "Lovelace"
    /// ```
    ///
    /// The key takes effect when it is created; list it in the class's
    /// ``ObservableKeyListing/observableKeys`` so that it exists before anyone observes it (a
    /// `static let` is created on first use). While a dependent key is observed on an object,
    /// ObserveCore keeps one internal registration per dependency on that object (visible in
    /// introspection, tagged with no observer); they go when the last observer of
    /// the dependent key does. A dependent key must not depend on itself, directly or through
    /// other dependent keys (that would re-announce without end; the runaway-recursion check
    /// reports it).
    ///
    /// - Parameters:
    ///   - keyPath: The dependent property.
    ///   - dependencies: The key paths, rooted at the same class, whose changes change it.
    public init(_ keyPath: KeyPath<Root, Value>, dependsOn dependencies: PartialKeyPath<Root>...) {
        self.init(keyPath, dependsOn: dependencies)
    }

    /// Declares a dependent key from an array of dependencies; see ``init(_:dependsOn:)-(_,PartialKeyPath<Root>...)``.
    ///
    /// ```swift
    /// static let summary = ObservableKey(\Order.summary, dependsOn: [\.items, \.customer?.name])
    /// ```
    public init(_ keyPath: KeyPath<Root, Value>, dependsOn dependencies: [PartialKeyPath<Root>]) {
        self.init(keyPath, name: nil, dependsOn: dependencies)
    }

    /// Declares a named dependent key (the name is what ObserveCore prints, as for
    /// ``init(_:name:)``); `@KeyValueDependent` declares dependent keys this way.
    ///
    /// ```swift
    /// static let fullName = ObservableKey(\Person.fullName, name: "fullName",
    ///                                     dependsOn: [\Person.firstName, \Person.lastName])
    /// ```
    public init(_ keyPath: KeyPath<Root, Value>, name: String?, dependsOn dependencies: [PartialKeyPath<Root>]) {
        self.init(keyPath, name: name, dependsOn: dependencies, reader: nil)
    }

    /// Declares a dependent key whose value is read by `read` instead of through `keyPath`;
    /// `@KeyValueDependent` declares dependent keys this way.
    ///
    /// `read` must return what `keyPath` reads (`{ $0.fullName }` for `\Person.fullName`). Written
    /// where the class is declared, it calls the getter directly, while a key path is applied at
    /// run time on every change of a dependency (in release builds about half of what announcing
    /// a dependent key costs).
    ///
    /// ```swift
    /// static let fullName = ObservableKey(\Person.fullName, name: "fullName",
    ///                                     dependsOn: [\Person.firstName, \Person.lastName],
    ///                                     read: { $0.fullName })
    /// ```
    public init(_ keyPath: KeyPath<Root, Value>, name: String? = nil, dependsOn dependencies: [PartialKeyPath<Root>],
                read: @escaping @Sendable (Root) -> Value) {
        self.init(keyPath, name: name, dependsOn: dependencies, reader: read)
    }

    private init(_ keyPath: KeyPath<Root, Value>, name: String?, dependsOn dependencies: [PartialKeyPath<Root>],
                 reader: (@Sendable (Root) -> Value)?) {
        if let name { self.init(keyPath, name: name) } else { self.init(keyPath) }
        _require(!dependencies.isEmpty, "ObserveCore: the dependent key \(keyPath) names no dependencies")
        _require(!dependencies.contains(keyPath),
                 "ObserveCore: the dependent key \(keyPath) depends on itself; remove it from its dependencies")
        _KeyCatalog.shared.declareDerived(_id, plan: _DerivedPlan { announcer, object in
            _DependentDriver<Root, Value>(announcer: unsafeDowncast(announcer, to: _DerivedAnnouncer<Root, Value>.self),
                                          object: object, read: reader, dependencies: dependencies)
        })
    }
}
