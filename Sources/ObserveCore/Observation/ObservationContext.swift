/// Distinguishes registrations of the same observer on the same key path, as the `context`
/// pointer of Foundation's KVO does.
///
/// Registering the same (observer, key path, context) twice keeps one registration; a
/// different context makes a second one. Contexts compare by value.
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

    /// The default context of every registration that names none.
    public static let none = ObservationContext(rawValue: 0)

    /// A context from its raw bits.
    @inlinable
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// A context from an integer tag.
    @inlinable
    public init(integerLiteral value: UInt) { self.rawValue = value }

    /// A context from an address, typically of a private static variable (`&Self.context`).
    @inlinable
    public init(_ pointer: UnsafeRawPointer) { self.rawValue = UInt(bitPattern: pointer) }

    /// A context identifying an object (compared by identity; the object is not retained).
    @inlinable
    public init(_ object: AnyObject) { self.rawValue = UInt(bitPattern: ObjectIdentifier(object)) }
}
