import Dispatch

/// A class whose properties can be observed.
///
/// Conform, store a ``KeyValueRegistrar``, declare an ``ObservableKey`` for each observable
/// property and announce its changes from `willSet`/`didSet`:
///
/// ```swift
/// final class Person: KeyValueObservable {
///     let kvoRegistrar = KeyValueRegistrar()
///
///     static let name = ObservableKey(\Person.name)
///     var name = "" {
///         willSet { kvoRegistrar.willSet(Person.name, of: self, from: name) }
///         didSet { kvoRegistrar.didSet(Person.name, of: self, from: oldValue, to: name) }
///     }
/// }
///
/// let person = Person()
/// let token = person.observe(\.name, options: [.old, .new]) { person, change in
///     print(change.oldValue ?? "-", "->", change.newValue ?? "-")
/// }
/// person.name = "Ada"    // prints "" -> Ada
/// ```
///
/// The name avoids the Observation module's `Observable` and Combine's `ObservableObject`, so
/// a class may adopt those too.
///
/// Lifetimes: every registration on an object is removed when the object deinitialises; an
/// observer is held weakly, and ObserveCore never messages a deallocated observer.
public protocol KeyValueObservable: AnyObject {
    /// The object's registrar. Store it as `let kvoRegistrar = KeyValueRegistrar()`; never share it.
    var kvoRegistrar: KeyValueRegistrar { get }

    /// Calls `body` with the registrar of the object at `address`, borrowed. An implementation
    /// detail of ``ObservableArray``: do not implement it; the default is the right one.
    ///
    /// An array tracking its elements' properties tells each element's registrar so when it
    /// starts (and when elements enter or leave). Its code is generic over the element type, so
    /// reading `kvoRegistrar` there goes through the protocol witness, which returns the registrar
    /// retained, and copies each element through value witnesses: three atomic reference-count
    /// operations per element on top of the one the registrar needs. This requirement's default
    /// implementation is inlined into each conforming type's witness, where the type is known, so
    /// the array reaches each registrar with no retain, and never copies the element.
    static func _withRegistrar(ofObjectAt address: UnsafeRawPointer, _ body: (KeyValueRegistrar) -> Void)
}

extension KeyValueObservable {
    /// The one implementation of the requirement: lends `kvoRegistrar` of the object at
    /// `address`. Inlined into each conforming type's witness, where `Self` is known.
    @inlinable
    public static func _withRegistrar(ofObjectAt address: UnsafeRawPointer, _ body: (KeyValueRegistrar) -> Void) {
        Unmanaged<Self>.fromOpaque(address)._withUnsafeGuaranteedRef { body($0.kvoRegistrar) }
    }
}

// MARK: - Observing with a token

extension KeyValueObservable {
    /// Observes one property until the returned token is cancelled or released.
    ///
    /// ```swift
    /// let token = person.observe(\.age, options: [.old, .new]) { person, change in
    ///     print(person.name, change.oldValue!, "->", change.newValue!)
    /// }
    /// ```
    /// - Parameters:
    ///   - keyPath: The property, rooted at the class that declares its ``ObservableKey``.
    ///   - options: What the handler receives and when; `[.new]` by default.
    ///   - delivery: Where the handler runs; inline on the mutating thread by default.
    ///   - handler: Called with the object and the typed change.
    /// - Returns: The token that keeps the observation alive.
    @inlinable
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>,
        options: ObservationOptions = [.new],
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Self, ObservedChange<Value>) -> Void
    ) -> ObservationToken {
        ObservationToken(_register(keyPath, options: options, delivery: delivery,
                                   tokenHandler: handler))
    }

    /// Observes several properties of one type with one handler, which is told which changed.
    ///
    /// ```swift
    /// let token = person.observe([\.firstName, \.lastName]) { person, keyPath, change in
    ///     print(keyPath == \Person.firstName ? "first" : "last", change.newValue!)
    /// }
    /// ```
    public func observe<Value>(
        _ keyPaths: [KeyPath<Self, Value>],
        options: ObservationOptions = [.new],
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Self, KeyPath<Self, Value>, ObservedChange<Value>) -> Void
    ) -> ObservationToken {
        var registrations: [_AnyRegistration] = []
        for keyPath in keyPaths {
            if let registration = _register(keyPath, options: options, delivery: delivery,
                                            tokenHandler: { object, change in handler(object, keyPath, change) }) {
                registrations.append(registration)
            }
        }
        return ObservationToken(registrations)
    }

    /// Observes several properties of any types with one handler; values arrive as `Any`.
    ///
    /// ```swift
    /// let token = person.observe([\.name, \.age] as [PartialKeyPath<Person>]) { person, keyPath, change in
    ///     print(keyPath, change.newValue!)
    /// }
    /// ```
    public func observe(
        _ keyPaths: [PartialKeyPath<Self>],
        options: ObservationOptions = [.new],
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Self, PartialKeyPath<Self>, ObservedChange<Any>) -> Void
    ) -> ObservationToken {
        var registrations: [_AnyRegistration] = []
        for keyPath in keyPaths {
            guard let opener = keyPath as? any _ErasedKeyPath else {
                _misuse("ObserveCore: \(keyPath) is not a readable key path")
            }
            if let registration = opener._registerErased(on: self, observer: nil, context: .none, options: options,
                                                         delivery: delivery, { object, _, keyPath, change in
                                                             handler(object, keyPath, change)
                                                         }) {
                registrations.append(registration)
            }
        }
        return ObservationToken(registrations)
    }
}

// MARK: - Observer-tagged registration

extension KeyValueObservable {
    /// Registers `observer` for a property, in the style of Foundation's `addObserver`.
    ///
    /// The observer is held weakly and handed back to the handler, so the handler needs no
    /// `[weak self]`. Registering the same (observer, key path, context) again keeps the first
    /// registration; another context makes a second one. The registration lasts until it is
    /// removed, the object dies, or the observer dies.
    ///
    /// ```swift
    /// person.addObserver(self, for: \.age, options: [.new]) { me, person, change in
    ///     me.ageLabel = "\(change.newValue!)"
    /// }
    /// person.removeObserver(self, for: \.age)
    /// ```
    @inlinable
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func addObserver<Observer: AnyObject, Value>(
        _ observer: Observer,
        for keyPath: KeyPath<Self, Value>,
        options: ObservationOptions = [.new],
        context: ObservationContext = .none,
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Observer, Self, ObservedChange<Value>) -> Void
    ) {
        _ = _register(keyPath, observer: observer, context: context, options: options, delivery: delivery,
                      observerHandler: { observer, object, change in
                          handler(unsafeDowncast(observer, to: Observer.self), object, change)
                      })
    }

    /// Registers `observer` for several properties of one type; the handler is told which changed.
    public func addObserver<Observer: AnyObject, Value>(
        _ observer: Observer,
        for keyPaths: [KeyPath<Self, Value>],
        options: ObservationOptions = [.new],
        context: ObservationContext = .none,
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Observer, Self, KeyPath<Self, Value>, ObservedChange<Value>) -> Void
    ) {
        for keyPath in keyPaths {
            _ = _register(keyPath, observer: observer, context: context, options: options, delivery: delivery,
                          observerHandler: { observer, object, change in
                              handler(unsafeDowncast(observer, to: Observer.self), object, keyPath, change)
                          })
        }
    }

    /// Registers `observer` for several properties of any types; values arrive as `Any`.
    public func addObserver<Observer: AnyObject>(
        _ observer: Observer,
        for keyPaths: [PartialKeyPath<Self>],
        options: ObservationOptions = [.new],
        context: ObservationContext = .none,
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Observer, Self, PartialKeyPath<Self>, ObservedChange<Any>) -> Void
    ) {
        for keyPath in keyPaths {
            guard let opener = keyPath as? any _ErasedKeyPath else {
                _misuse("ObserveCore: \(keyPath) is not a readable key path")
            }
            _ = opener._registerErased(on: self, observer: observer, context: context, options: options,
                                       delivery: delivery) { object, observer, keyPath, change in
                handler(unsafeDowncast(observer!, to: Observer.self), object, keyPath, change)
            }
        }
    }

    /// Registers `observer` for a property with a context that the handler is told, so that one
    /// handler can serve several registrations (the `context` argument of Foundation's
    /// `observeValue(forKeyPath:of:change:context:)`).
    ///
    /// ```swift
    /// for (tag, keyPath) in [(1, \Person.age), (2, \Person.score)] as [(ObservationContext, KeyPath<Person, Int>)] {
    ///     person.addObserver(self, for: keyPath, context: tag) { me, person, change, context in
    ///         me.refresh(section: context.rawValue)
    ///     }
    /// }
    /// ```
    @inlinable
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func addObserver<Observer: AnyObject, Value>(
        _ observer: Observer,
        for keyPath: KeyPath<Self, Value>,
        options: ObservationOptions = [.new],
        context: ObservationContext,
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (Observer, Self, ObservedChange<Value>, ObservationContext) -> Void
    ) {
        _ = _register(keyPath, observer: observer, context: context, options: options, delivery: delivery,
                      observerHandler: { observer, object, change in
                          handler(unsafeDowncast(observer, to: Observer.self), object, change, context)
                      })
    }

    /// ``addObserver(_:for:options:context:delivery:_:)-(Observer,_,_,_,_,_)`` for an observer
    /// typed `AnyObject` or as a class-bound protocol existential (`any Listener`), which the
    /// generic form cannot take: for `AnyObject`, Swift 6.3.1 crashes compiling the generic call
    /// ("Invalid conformance in type-checked AST", signal 6, debug and release) — reduced:
    /// `func f(_ p: Person, _ o: AnyObject) { p.addObserver(o, for: \.age) { _, _, _ in } }`;
    /// `any Listener` is refused as "not a class type". This overload is what both resolve to;
    /// a concrete class still gets the generic form and its typed observer.
    ///
    /// ```swift
    /// func attach(_ listener: any Listener, to person: Person) {
    ///     person.addObserver(listener, for: \.age) { listener, person, change in
    ///         (listener as! any Listener).ageChanged(to: change.newValue!)
    ///     }
    /// }
    /// ```
    @_disfavoredOverload  // an optional key path takes the flattening overload
    public func addObserver<Value>(
        _ observer: AnyObject,
        for keyPath: KeyPath<Self, Value>,
        options: ObservationOptions = [.new],
        context: ObservationContext = .none,
        delivery: ObservationDelivery = .inline,
        _ handler: @escaping (AnyObject, Self, ObservedChange<Value>) -> Void
    ) {
        _ = _register(keyPath, observer: observer, context: context, options: options, delivery: delivery,
                      observerHandler: handler)
    }
}

// MARK: - Removal

extension KeyValueObservable {
    /// Removes `observer`'s registrations for `keyPath`, whatever their context.
    /// Removing what is not registered does nothing.
    public func removeObserver(_ observer: AnyObject, for keyPath: PartialKeyPath<Self>) {
        _remove(keyPath, observer: observer, context: nil)
    }

    /// Removes `observer`'s registration for `keyPath` made with `context`.
    /// Removing what is not registered does nothing.
    public func removeObserver(_ observer: AnyObject, for keyPath: PartialKeyPath<Self>, context: ObservationContext) {
        _remove(keyPath, observer: observer, context: context.rawValue)
    }

    /// Removes `observer`'s registrations for each of `keyPaths`.
    public func removeObserver(_ observer: AnyObject, for keyPaths: [PartialKeyPath<Self>]) {
        for keyPath in keyPaths { removeObserver(observer, for: keyPath) }
    }

    /// Removes the registrations of each of `observers` for `keyPath`.
    public func removeObservers(_ observers: [AnyObject], for keyPath: PartialKeyPath<Self>) {
        let addresses = Set(observers.map { UInt(bitPattern: ObjectIdentifier($0)) })
        _remove(keyPath) { addresses.contains($0.observerAddress) }
    }

    /// Removes every registration for `keyPath`, observer-tagged and token-based alike
    /// (their tokens become inert).
    public func removeAllObservers(for keyPath: PartialKeyPath<Self>) {
        _remove(keyPath) { _ in true }
    }

    /// Removes every registration on this object.
    public func removeAllObservers() {
        kvoRegistrar._registry.remove(object: UInt(bitPattern: ObjectIdentifier(self)), keyID: nil,
                                      registrar: kvoRegistrar) { _ in true }
    }

    private func _remove(_ keyPath: PartialKeyPath<Self>, where matches: (_AnyRegistration) -> Bool) {
        guard let keyID = _KeyTable.shared.existingID(for: keyPath) else { return }
        kvoRegistrar._registry.remove(object: UInt(bitPattern: ObjectIdentifier(self)), keyID: keyID,
                                      registrar: kvoRegistrar, where: matches)
    }

    /// Removes `observer`'s registrations for `keyPath` (with `context`, or all), through the
    /// group's observer index.
    private func _remove(_ keyPath: PartialKeyPath<Self>, observer: AnyObject, context: UInt?) {
        guard let keyID = _KeyTable.shared.existingID(for: keyPath) else { return }
        kvoRegistrar._registry.remove(object: UInt(bitPattern: ObjectIdentifier(self)), keyID: keyID,
                                      observer: UInt(bitPattern: ObjectIdentifier(observer)), context: context,
                                      registrar: kvoRegistrar)
    }
}

// MARK: - Introspection

extension KeyValueObservable {
    /// The key paths that currently have at least one live registration on this object. Like
    /// ``observationCount``, it skips a registration whose observer has died, even before a
    /// change finds it gone and removes it: what it lists must not depend on when that happens.
    public var observedKeyPaths: [PartialKeyPath<Self>] {
        var seen = Set<AnyKeyPath>()
        var result: [PartialKeyPath<Self>] = []
        for registration in _registrations(nil) where !registration._observerDied {
            let keyPath = registration.keyPath   // looked up in the key table: once
            if seen.insert(keyPath).inserted, let typed = keyPath as? PartialKeyPath<Self> { result.append(typed) }
        }
        return result
    }

    /// The live observers registered for `keyPath` (token-based registrations have none).
    public func observers(for keyPath: PartialKeyPath<Self>) -> [AnyObject] {
        guard let keyID = _KeyTable.shared.existingID(for: keyPath) else { return [] }
        return _registrations(keyID).compactMap { $0.hasObserver ? $0._observer : nil }
    }

    /// The number of live registrations on this object (all key paths, all forms). A
    /// registration whose observer has died is not counted, even before a change finds it gone
    /// and removes it.
    public var observationCount: Int {
        _registrations(nil).reduce(0) { $0 + ($1._observerDied ? 0 : 1) }
    }

    /// A readable listing of this object's registrations, one per line.
    public var observationDebugDescription: String {
        let lines = _registrations(nil).map(\._debugLine)
        return lines.isEmpty ? "\(Self.self): no registrations" : lines.joined(separator: "\n")
    }

    private func _registrations(_ keyID: UInt32?) -> [_AnyRegistration] {
        kvoRegistrar._registry.registrations(object: UInt(bitPattern: ObjectIdentifier(self)), keyID: keyID)
    }
}

// MARK: - Registration core

extension KeyValueObservable {
    /// Adds a token registration (`observe`). Inlinable so that the registration's generic type
    /// is specialised (and its metadata cached) at the caller; everything non-generic happens in
    /// `KeyValueRegistrar._add`.
    ///
    /// The handler parameters are not optional on purpose: an optional closure is stored at the
    /// most general abstraction, and unwrapping it for the registration's field added a second
    /// reabstraction thunk to every delivery (callgrind: about 33 instructions per handler).
    @inlinable
    internal func _register<Value>(
        _ keyPath: KeyPath<Self, Value>,
        options: ObservationOptions,
        delivery: ObservationDelivery,
        tokenHandler: @escaping (Self, ObservedChange<Value>) -> Void
    ) -> _AnyRegistration? {
        _addRegistration(_TokenRegistration<Self, Value>(
                registrar: kvoRegistrar, object: self, keyPath: keyPath, options: options, delivery: delivery,
                handler: tokenHandler),
                         keyPath, observer: nil, options: options)
    }

    /// Adds an observer-tagged registration (`addObserver`); nil when it duplicates the
    /// observer's existing one (same key path and context). See the token form.
    @inlinable
    internal func _register<Value>(
        _ keyPath: KeyPath<Self, Value>,
        observer: AnyObject,
        context: ObservationContext,
        options: ObservationOptions,
        delivery: ObservationDelivery,
        observerHandler: @escaping (AnyObject, Self, ObservedChange<Value>) -> Void
    ) -> _AnyRegistration? {
        _addRegistration(_ObserverRegistration<Self, Value>(
                registrar: kvoRegistrar, object: self, keyPath: keyPath, context: context, observer: observer,
                options: options, delivery: delivery, handler: observerHandler),
                         keyPath, observer: observer, options: options)
    }

    /// What both forms of `_register` do once the registration exists.
    @inlinable
    internal func _addRegistration<Value>(_ registration: _PropertyRegistration<Self, Value>, _ keyPath: KeyPath<Self, Value>,
                                          observer: AnyObject?, options: ObservationOptions) -> _AnyRegistration? {
        if options.contains(.skipEqualValues) { _requireEquatable(Value.self, keyPath) }
        guard kvoRegistrar._add(registration, observer: observer) else { return nil }
        _derivedKeyDidAdd(self, keyPath, registration)   // chains and dependent keys (Registry/_RegistryHooks.swift)
        if options.contains(.initial) {
            registration._deliver(self, ObservedChange(
                oldValue: nil, newValue: options.contains(.new) ? self[keyPath: keyPath] : nil, isInitial: true))
        }
        return registration
    }
}

/// Stops with a message naming the key path unless `Value` is `Equatable`.
@usableFromInline
internal func _requireEquatable<Value>(_: Value.Type, _ keyPath: AnyKeyPath) {
    _require(Value.self is any Equatable.Type,
             "ObserveCore: .skipEqualValues needs an Equatable value, but \(keyPath) holds \(Value.self)")
}

/// Opens a `PartialKeyPath`'s value type so that a typed registration can be made for it.
internal protocol _ErasedKeyPath {
    func _registerErased<Object: KeyValueObservable>(
        on object: Object, observer: AnyObject?, context: ObservationContext, options: ObservationOptions,
        delivery: ObservationDelivery,
        _ handler: @escaping (Object, AnyObject?, PartialKeyPath<Object>, ObservedChange<Any>) -> Void
    ) -> _AnyRegistration?

    /// Registers a token handler told only that the property changed, and whether the call is
    /// the prior one (a dependent key's driver): no change is erased to `ObservedChange<Any>` per
    /// call, where `_registerErased` builds and destroys one.
    func _registerSignal<Object: KeyValueObservable>(
        on object: Object, options: ObservationOptions, _ handler: @escaping (Object, _ isPrior: Bool) -> Void
    ) -> _AnyRegistration?
}

extension KeyPath: _ErasedKeyPath {
    func _registerErased<Object: KeyValueObservable>(
        on object: Object, observer: AnyObject?, context: ObservationContext, options: ObservationOptions,
        delivery: ObservationDelivery,
        _ handler: @escaping (Object, AnyObject?, PartialKeyPath<Object>, ObservedChange<Any>) -> Void
    ) -> _AnyRegistration? {
        guard let keyPath = self as? KeyPath<Object, Value> else {
            _misuse("ObserveCore: \(self) is not rooted at \(Object.self)")
        }
        // A registration that asked for no values gets the flags alone: reading them needs no
        // metadata, where boxing a value looks up three types.
        let wantsValues = !options.isDisjoint(with: [.old, .new])
        func erase(_ change: ObservedChange<Value>) -> ObservedChange<Any> {
            guard wantsValues else {
                return ObservedChange<Any>(oldValue: nil, newValue: nil, isPrior: change.isPrior, isInitial: change.isInitial)
            }
            return ObservedChange<Any>(oldValue: change.oldValue.map { $0 as Any }, newValue: change.newValue.map { $0 as Any },
                                       isPrior: change.isPrior, isInitial: change.isInitial)
        }
        if let observer {
            return object._register(keyPath, observer: observer, context: context, options: options, delivery: delivery,
                                    observerHandler: { observer, object, change in
                                        handler(object, observer, keyPath, erase(change))
                                    })
        }
        return object._register(keyPath, options: options, delivery: delivery,
                                tokenHandler: { object, change in handler(object, nil, keyPath, erase(change)) })
    }

    func _registerSignal<Object: KeyValueObservable>(
        on object: Object, options: ObservationOptions, _ handler: @escaping (Object, _ isPrior: Bool) -> Void
    ) -> _AnyRegistration? {
        guard let keyPath = self as? KeyPath<Object, Value> else {
            _misuse("ObserveCore: \(self) is not rooted at \(Object.self)")
        }
        _require(options.isDisjoint(with: [.old, .new]), "ObserveCore: a signal registration asks for no values")
        return object._register(keyPath, options: options, delivery: .inline,
                                tokenHandler: { object, change in handler(object, change.isPrior) })
    }
}
