// One-line observable classes. This library re-exports ObserveCore; depending on it builds
// swift-syntax (for the compiler plug-in), which the ObserveCore product alone never does.

@_exported import ObserveCore

/// Makes a class key-value observable: a registrar, one ``ObservableKey`` per stored `var`
/// (named for printing), the `willSet`/`didSet` that announce each change (`.prior` included),
/// the key listing that key path chains and dependent keys read, and the conformances.
///
/// ```swift
/// @KeyValueObservable
/// final class Person {
///     var name = ""
///     var age = 0
///     var address: Address?           // chains: person.observe(\.address?.city)
///     @KeyValueIgnored var cache = 0  // not observable
/// }
///
/// let token = person.observe(\.age, options: [.old, .new]) { person, change in
///     print(change.oldValue!, "->", change.newValue!)
/// }
/// ```
///
/// A `let`, a computed property, a `lazy` one and `static` ones are left alone. A computed
/// property that depends on others gets its key from ``KeyValueDependent(on:)``; one declared by
/// hand beside it (`static let fullName = ObservableKey(\Person.fullName, dependsOn: …)`) is
/// listed with the others too. Declare `kvoRegistrar` yourself to choose
/// its backend. Subclassing: apply it to the base class only; a subclass declares its own keys
/// by hand (`static let x = ObservableKey(\Sub.x, name: "x")` and `@KeyValueObserved var x`).
/// Errors: a struct or enum (observation needs an object's identity), a generic class
/// (Swift has no static stored properties there), a property with its own `willSet`/`didSet`;
/// a property wrapper's property is skipped with a warning.
@attached(member, names: named(kvoRegistrar), named(observableKeys), arbitrary)
@attached(memberAttribute)
@attached(extension, conformances: KeyValueObservable, ObservableKeyListing)
public macro KeyValueObservable() = #externalMacro(module: "ObserveCoreMacrosPlugin", type: "KeyValueObservableMacro")

/// Announces a stored property's changes with the class's key of the same name
/// (`@KeyValueObservable` adds it to every stored `var`; write it yourself on a class that declares
/// its keys by hand).
///
/// ```swift
/// static let age = ObservableKey(\Person.age, name: "age")
/// @KeyValueObserved var age = 0
/// ```
@attached(accessor, names: named(willSet), named(didSet))
public macro KeyValueObserved() = #externalMacro(module: "ObserveCoreMacrosPlugin", type: "KeyValueObservedMacro")

/// Leaves a stored property of a `@KeyValueObservable` class unobservable: no key, no announcing
/// accessors (as `@ObservationIgnored` does for `@Observable`).
///
/// ```swift
/// @KeyValueIgnored var lastRendered: Date?
/// ```
@attached(peer)
public macro KeyValueIgnored() = #externalMacro(module: "ObserveCoreMacrosPlugin", type: "KeyValueIgnoredMacro")

/// Makes a computed property of a `@KeyValueObservable` class observable: its key is a dependent
/// key, announced whenever one of `dependencies` changes (old value the last one announced, new
/// value read after the change).
///
/// ```swift
/// @KeyValueObservable
/// final class Person {
///     var firstName = ""
///     var lastName = ""
///     var address: Address?
///     @KeyValueDependent(on: \Person.firstName, \Person.lastName, \Person.address?.city)
///     var label: String { "\(firstName) \(lastName), \(address?.city ?? "-")" }
/// }
/// let token = person.observe(\.label) { _, change in print(change.newValue!) }
/// ```
/// The class macro declares the key (`static let label = ObservableKey(\Person.label, name: "label",
/// dependsOn: […], read: { $0.label })`) and lists it; the reader lets a change read the property
/// through its getter instead of applying the key path at run time. Write the key paths with their
/// root type (an attribute's arguments have no `Self` to infer it from). Errors: on a stored
/// property (observed directly), with no key path.
@attached(peer)
public macro KeyValueDependent(on dependencies: AnyKeyPath...) = #externalMacro(module: "ObserveCoreMacrosPlugin", type: "KeyValueDependentMacro")
