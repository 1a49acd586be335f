/// One change of an observed property, typed by the property's value.
///
/// Which values are present depends on the registration's ``ObservationOptions``:
/// `oldValue` needs `.old`, `newValue` needs `.new`. For a property whose type is itself
/// optional (`String?`), the single-key observation forms hand over `ObservedChange<String>`:
/// `newValue` is a `String?`, nil when the property is nil — and also when `.new` was not asked
/// for, so ask for the values you read. (A handler explicitly typed `ObservedChange<String?>`, the
/// several-key-path forms and generic code over `KeyPath<Root, Value>` get the general form,
/// whose values for an optional property are `String??`.)
///
/// ```swift
/// person.observe(\.age, options: [.old, .new]) { _, change in
///     if let old = change.oldValue, let new = change.newValue { print(old, "->", new) }
/// }
/// ```
public struct ObservedChange<Value> {
    // The flags come first: at offsets that do not depend on `Value`, code that is generic over
    // `Value` reads them without looking up the struct's metadata (`_registerErased` for a
    // registration that asked for no values, and `_registerSignal`, read only the flags).
    /// True for the notification sent *before* the change (option `.prior`).
    public let isPrior: Bool
    /// True for the notification sent during registration (option `.initial`).
    public let isInitial: Bool
    /// The value before the change, when the registration asked for `.old`.
    public let oldValue: Value?
    /// The value after the change, when the registration asked for `.new`. Always nil in a
    /// prior notification.
    public let newValue: Value?

    @inlinable
    public init(oldValue: Value?, newValue: Value?, isPrior: Bool = false, isInitial: Bool = false) {
        self.oldValue = oldValue
        self.newValue = newValue
        self.isPrior = isPrior
        self.isInitial = isInitial
    }
}

extension ObservedChange: @unchecked Sendable where Value: Sendable {}
extension ObservedChange: Equatable where Value: Equatable {}

extension ObservedChange: CustomStringConvertible {
    public var description: String {
        var parts: [String] = []
        if let oldValue { parts.append("old: \(oldValue)") }
        if let newValue { parts.append("new: \(newValue)") }
        if isPrior { parts.append("prior") }
        if isInitial { parts.append("initial") }
        return "ObservedChange(" + parts.joined(separator: ", ") + ")"
    }
}
