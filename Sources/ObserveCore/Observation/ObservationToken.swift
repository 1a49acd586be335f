/// Keeps an observation alive; cancelling or releasing it stops the observation.
///
/// The shape Swift users know from `NSKeyValueObservation`:
///
/// ```swift
/// var token: ObservationToken? = person.observe(\.name) { person, change in print(change) }
/// token?.cancel()      // or: token = nil
/// ```
///
/// Cancelling is idempotent, thread-safe, and allowed from inside a handler (including the
/// token's own handler); once `cancel()` returns, the handler is not called again for changes
/// that start afterwards. A token of an object that has died is already inert.
public final class ObservationToken: @unchecked Sendable {
    // One registration is the common case; it is kept out of an array to spare an allocation.
    private let _single: _AnyRegistration?
    private let _several: [_AnyRegistration]
    /// For composite observations (an owner's array property): cancels the whole composite.
    private let _cancelComposite: (@Sendable () -> Void)?
    private let _isCompositeCancelled: (@Sendable () -> Bool)?
    /// A composite observation's names for `withoutNotifying` (its registrations' silence key).
    private let _compositeSilenceKeys: [UInt]

    @usableFromInline
    internal init(_ registration: _AnyRegistration?) {
        _single = registration
        _several = []
        _cancelComposite = nil
        _isCompositeCancelled = nil
        _compositeSilenceKeys = []
    }

    @usableFromInline
    internal init(_ registrations: [_AnyRegistration]) {
        _single = nil
        _several = registrations
        _cancelComposite = nil
        _isCompositeCancelled = nil
        _compositeSilenceKeys = []
    }

    internal init(cancel: @escaping @Sendable () -> Void, isCancelled: @escaping @Sendable () -> Bool,
                  silenceKeys: [UInt]) {
        _single = nil
        _several = []
        _cancelComposite = cancel
        _isCompositeCancelled = isCancelled
        _compositeSilenceKeys = silenceKeys
    }

    deinit { cancel() }

    /// Stops the observation. Calling it again does nothing.
    public func cancel() {
        if let single = _single, !single.isCancelled { single.registry.remove(single) }
        for registration in _several where !registration.isCancelled {
            registration.registry.remove(registration)
        }
        _cancelComposite?()
    }

    /// Whether the observation has stopped (cancelled, removed, or its object died).
    /// What `withoutNotifying` silences for this token: its registrations' silence keys.
    internal var _silenceKeys: [UInt] {
        (_single.map { [$0.silenceKey] } ?? []) + _several.map(\.silenceKey) + _compositeSilenceKeys
    }

    public var isCancelled: Bool {
        if let _isCompositeCancelled { return _isCompositeCancelled() }
        return (_single?.isCancelled ?? true) && _several.allSatisfy { $0.isCancelled }
    }
}
