/// The type-erased face of an ``ObservableKey``, so that a class can list its keys in one array.
///
/// You do not conform to this protocol; ``ObservableKey`` does. It exists for
/// ``ObservableKeyListing/observableKeys``:
///
/// ```swift
/// static let observableKeys: [any ObservableKeyProtocol] = [name, address]
/// ```
public protocol ObservableKeyProtocol: Sendable {
    /// The key path the key stands for, type-erased.
    ///
    /// ```swift
    /// let keyPath = Person.name.erasedKeyPath      // \Person.name
    /// ```
    var erasedKeyPath: AnyKeyPath { get }
}

extension ObservableKey: ObservableKeyProtocol {
    /// The key path the key stands for, type-erased (``keyPath`` as an `AnyKeyPath`).
    ///
    /// ```swift
    /// let keyPath = Person.name.erasedKeyPath      // \Person.name
    /// ```
    public var erasedKeyPath: AnyKeyPath { keyPath }
}

/// A class that lists its ``ObservableKey``s, so that key path chains and dependent keys can find
/// them before they are first used.
///
/// Keys are `static let`s, and Swift creates a `static let` the first time it is read — for an
/// observed property, the first time its setter runs while someone listens. A chain such as
/// `\Person.address?.city` is resolved into its links (`Person.address`, then `Address.city`) by
/// looking for *declared* keys, and a dependent key (``ObservableKey/init(_:dependsOn:)``) takes
/// effect when it is declared; a key that has not been created yet is invisible to both. Listing
/// the keys makes that deterministic: ObserveCore reads `observableKeys` once per class, the first
/// time it needs that class's keys.
///
/// List every key of every class that a chain goes *through or ends in*, and every dependent key:
///
/// ```swift
/// final class Person: KeyValueObservable, ObservableKeyListing {
///     let kvoRegistrar = KeyValueRegistrar()
///     static let observableKeys: [any ObservableKeyProtocol] = [address, fullName]
///
///     static let address = ObservableKey(\Person.address)
///     var address: Address? = nil {
///         willSet { kvoRegistrar.willSet(Person.address, of: self, from: address) }
///         didSet { kvoRegistrar.didSet(Person.address, of: self, from: oldValue, to: address) }
///     }
///     static let fullName = ObservableKey(\Person.fullName, dependsOn: \.address?.city)
///     var fullName: String { "Someone from \(address?.city ?? "nowhere")" }
/// }
/// extension Address: ObservableKeyListing {
///     static let observableKeys: [any ObservableKeyProtocol] = [city]
/// }
///
/// let token = person.observe(\.address?.city) { person, change in print(change.newValue ?? "no city") }   // String?
/// ```
///
/// A class that does not conform still works when its keys happen to exist already (any key that
/// was read once is remembered); conforming removes the dependence on what ran first. When a chain
/// cannot be resolved, registration stops with a precondition failure naming the key path.
public protocol ObservableKeyListing: KeyValueObservable {
    /// Every ``ObservableKey`` of the class (including dependent keys), in any order.
    ///
    /// ```swift
    /// static let observableKeys: [any ObservableKeyProtocol] = [name, age, address, fullName]
    /// ```
    static var observableKeys: [any ObservableKeyProtocol] { get }

    /// Whether ``observableKeys`` lists every observable property of the class (false unless the
    /// class says otherwise; `@KeyValueObservable` says true). Then observing a key path that is
    /// neither listed, nor a chain of listed keys, nor a key a superclass lists — a property
    /// marked `@KeyValueIgnored`, a computed property with no dependent key — stops at registration with a message naming the fix, instead of registering an
    /// observation that would never fire.
    ///
    /// ```swift
    /// static let observableKeysAreComplete = true
    /// ```
    static var observableKeysAreComplete: Bool { get }
}

extension ObservableKeyListing {
    /// False: a hand-written listing may name only the keys that chains and dependent keys need.
    public static var observableKeysAreComplete: Bool { false }
}
