/// What an observer wants to hear, and when.
///
/// The options mirror Foundation's `NSKeyValueObservingOptions`, plus ``skipEqualValues``:
///
/// ```swift
/// let token = person.observe(\.name, options: [.old, .new, .initial]) { person, change in
///     print(change.oldValue as Any, "->", change.newValue as Any)
/// }
/// ```
public struct ObservationOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8

    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// ``ObservedChange/newValue`` carries the value after the change.
    @inlinable public static var new: ObservationOptions { ObservationOptions(rawValue: 1 << 0) }
    /// ``ObservedChange/oldValue`` carries the value before the change.
    @inlinable public static var old: ObservationOptions { ObservationOptions(rawValue: 1 << 1) }
    /// The handler runs once, immediately, during registration, with the current value as
    /// ``ObservedChange/newValue`` (when `.new` is also given) and ``ObservedChange/isInitial`` set.
    @inlinable public static var initial: ObservationOptions { ObservationOptions(rawValue: 1 << 2) }
    /// The handler also runs *before* each change (``ObservedChange/isPrior`` set), while the
    /// object still holds the old value. The prior change carries `oldValue` (with `.old`) and
    /// never a `newValue`, as in Foundation's KVO.
    @inlinable public static var prior: ObservationOptions { ObservationOptions(rawValue: 1 << 3) }
    /// The handler is not called when the new value equals the old one. The observed value
    /// must be `Equatable`; registering this option for any other type stops with a
    /// precondition failure that names the key path.
    @inlinable public static var skipEqualValues: ObservationOptions { ObservationOptions(rawValue: 1 << 4) }
}

extension ObservationOptions: CustomStringConvertible {
    public var description: String {
        var names: [String] = []
        if contains(.new) { names.append("new") }
        if contains(.old) { names.append("old") }
        if contains(.initial) { names.append("initial") }
        if contains(.prior) { names.append("prior") }
        if contains(.skipEqualValues) { names.append("skipEqualValues") }
        return "[" + names.joined(separator: ", ") + "]"
    }
}
