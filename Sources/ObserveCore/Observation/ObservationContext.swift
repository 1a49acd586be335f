/// Distinguishes registrations of the same observer on the same key path, as the `context`
/// pointer of Foundation's KVO does.
///
/// Registering the same (observer, key path, context) twice keeps one registration; a
/// different context makes a second one. Contexts compare by value. Every tag is distinct from
/// ``none`` (the context of a registration that names none), `0` included: ``none`` is a
/// reserved value (`UInt.max`) that no tag, address or object can take.
///
/// ```swift
/// private static var ageContext = 0
/// let context = ObservationContext(&Self.ageContext)       // a unique address, KVO style
/// person.addObserver(self, for: \.age, context: context) { me, person, change in … }
/// person.removeObserver(self, for: \.age, context: context)
/// let tagged: ObservationContext = 42                       // or any integer tag
/// ```
public struct ObservationContext: Hashable, Sendable, ExpressibleByIntegerLiteral {
    /// The context's bits; compared, never dereferenced.
    public let rawValue: UInt

    /// The default context of every registration that names none. Its raw value is `UInt.max`,
    /// which no other context can have, so `context: 0` is a context of its own.
    public static let none = ObservationContext(_none: ())

    private init(_none: Void) { rawValue = UInt.max }

    /// A context from its raw bits (any value but `UInt.max`, which is ``none``'s).
    ///
    /// ```swift
    /// let context = ObservationContext(rawValue: 7)
    /// ```
    @inlinable
    public init(rawValue: UInt) {
        _require(rawValue != UInt.max, "ObserveCore: UInt.max is the raw value of ObservationContext.none; use another tag")
        self.rawValue = rawValue
    }

    /// A context from an integer tag (any value but `UInt.max`); `0` is a tag like any other.
    @inlinable
    public init(integerLiteral value: UInt) { self.init(rawValue: value) }

    /// A context from an address, typically of a private static variable (`&Self.context`).
    @inlinable
    public init(_ pointer: UnsafeRawPointer) { self.rawValue = UInt(bitPattern: pointer) }

    /// A context identifying an object (compared by identity; the object is not retained).
    @inlinable
    public init(_ object: AnyObject) { self.rawValue = UInt(bitPattern: ObjectIdentifier(object)) }
}
