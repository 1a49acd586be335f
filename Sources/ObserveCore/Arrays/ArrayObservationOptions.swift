/// What an array observer wants to hear: the subset of ``ObservationOptions`` that arrays
/// support, so that an unsupported one (`.prior`: an array has no "about to change" moment
/// observers could use) is refused by the compiler rather than at run time.
///
/// ```swift
/// let token = students.observe(options: [.old, .new, .initial], elementKeyPaths: [\.grade]) { _, change in
///     if let (old, new) = change.elementChange(for: \.grade) { print(old!, "->", new!) }
/// }
/// ```
/// `.new` and `.old` matter to element changes (their property's values); `.initial` delivers
/// an ``ArrayChange/Kind/arrayReplaced`` change at registration. The default everywhere is
/// `[.new]`, as for properties.
public struct ArrayObservationOptions: OptionSet, Sendable, Hashable {
    /// The option bits, the same as ``ObservationOptions``' for the same options.
    public let rawValue: UInt8

    /// Options from their bits (`OptionSet`); bits that are no array option are refused when the
    /// options are used, with a message.
    ///
    /// ```swift
    /// let options = ArrayObservationOptions(rawValue: ArrayObservationOptions.new.rawValue)   // [.new]
    /// ```
    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Element changes carry the property's value after the change (``ArrayChange/elementNewValue``).
    public static let new = ArrayObservationOptions(rawValue: ObservationOptions.new.rawValue)
    /// Element changes carry the property's value before the change (``ArrayChange/elementOldValue``).
    public static let old = ArrayObservationOptions(rawValue: ObservationOptions.old.rawValue)
    /// The handler runs once, during registration, with an ``ArrayChange/Kind/arrayReplaced``
    /// change holding the current contents (``ArrayChange/isInitial`` set).
    public static let initial = ArrayObservationOptions(rawValue: ObservationOptions.initial.rawValue)
}

extension ArrayObservationOptions {
    /// Every option arrays support.
    internal static let _all: ArrayObservationOptions = [.new, .old, .initial]
}

extension ObservationOptions {
    /// The registry's form of array options (same bits). Bits that are no array option (a value
    /// made with `init(rawValue:)`) are refused: they would reach the registry's `.prior` or
    /// `.skipEqualValues` bookkeeping.
    internal init(_ options: ArrayObservationOptions) {
        _require(options.isSubset(of: ArrayObservationOptions._all),
                 "ObserveCore: ArrayObservationOptions(rawValue: \(options.rawValue)) holds bits that are no array "
                 + "option; arrays support .new, .old and .initial")
        self.init(rawValue: options.rawValue)
    }
}
