/// The identity of one observable property, fixed when the class declares it.
///
/// A setter announces its changes with the key, never with a `KeyPath`: building a key path on
/// the setter path costs a runtime call and hashing it costs more than the whole unobserved set.
/// Registration still speaks key paths (`observe(\.name)`); both meet at the same small integer id.
///
/// Declare one key per observable property, as a `static let` next to the property (a static
/// member may share the property's name), and announce changes from `willSet`/`didSet`:
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
/// ```
///
/// The `willSet` line is needed only for observers that ask for ``ObservationOptions/prior``;
/// leaving it out makes prior notifications silently absent, so keep it.
///
/// - Note: A subclass's key path for a property its superclass declares (`\Student.name`, with
///   `Person.name` declared) is observed through the superclass's key: `student.observe(\.name)`
///   works. A subclass declares keys only for the properties it adds.
public struct ObservableKey<Root: AnyObject, Value>: @unchecked Sendable {
    /// The key path this key stands for.
    public var keyPath: KeyPath<Root, Value> { _keyPath }
    /// The key table's own instance of the key path, which the table keeps for the life of the
    /// process: held unowned so that copying a key (every notified set reads one) touches no
    /// reference count. A strong reference here made two threads setting unrelated objects
    /// contend on this one object's count (measured: 2 threads ran at half the speed of 1).
    @usableFromInline internal unowned(unsafe) let _keyPath: KeyPath<Root, Value>
    /// The small integer id shared with every registration made through ``keyPath``.
    @usableFromInline internal let _id: UInt32
    /// `1 << (id % 32)`: the bit this key sets in an object's observed-key masks.
    @usableFromInline internal let _bit: UInt64
    /// `1 << (32 + id % 32)`: the bit set in an element's membership word while an array that
    /// holds it is observed with this key as an element key path.
    @usableFromInline internal let _memberBit: UInt64

    /// Declares the key for `keyPath`. Cheap enough for a `static let`; call it once per property.
    ///
    /// Inlinable so that the key's chain-leaf adapters (`_LeafAdapters`) are made here, in code
    /// specialised for `Root` and `Value`.
    @inlinable
    public init(_ keyPath: KeyPath<Root, Value>) {
        self.init(_declaring: keyPath, leafAdapters: _LeafAdapters<Value>.make())
    }

    /// The body of ``init(_:)``, with the adapters a chain ending in this key uses.
    @usableFromInline
    internal init(_declaring keyPath: KeyPath<Root, Value>, leafAdapters: _LeafAdapters<Value>) {
        self._id = _KeyTable.shared.id(for: keyPath)
        self._keyPath = unsafeDowncast(_KeyTable.shared.keyPath(for: _id)!, to: KeyPath<Root, Value>.self)
        self._bit = _KeyTable.bit(for: self._id)
        self._memberBit = _KeyTable.memberBit(for: self._id)
        _KeyCatalog.shared.declare(keyPath, id: _id, leafAdapters: leafAdapters)   // for key path chains (Chains/_KeyCatalog.swift)
    }

    /// Declares the key for `keyPath` and the property's name, which ObserveCore's messages and
    /// listings print (`\Person.age`) where Swift would print the key path as
    /// `\Person.<computed 0x…>` (as it does on Linux for a stored property with observers).
    /// `@KeyValueObservable` declares every key this way.
    ///
    /// ```swift
    /// static let age = ObservableKey(\Person.age, name: "age")
    /// ```
    @inlinable
    public init(_ keyPath: KeyPath<Root, Value>, name: String) {
        self.init(keyPath)
        _KeyTable._setName(name, of: Root.self, for: _id)
    }
}
