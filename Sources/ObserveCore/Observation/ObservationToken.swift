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
    // One registration is the common case: the token then holds it and nothing else (32 bytes
    // with the object's header; every other shape lives in `_rest`, out of line).
    private let _single: _AnyRegistration?
    /// Several registrations, or a composite observation (an owner's array property).
    private let _rest: _CompositeToken?

    @usableFromInline
    internal init(_ registration: _AnyRegistration?) {
        _single = registration
        _rest = nil
    }

    @usableFromInline
    internal init(_ registrations: [_AnyRegistration]) {
        _single = nil
        _rest = registrations.isEmpty ? nil : _CompositeToken(several: registrations)
    }

    internal init(cancel: @escaping @Sendable () -> Void, isCancelled: @escaping @Sendable () -> Bool,
                  silenceKeys: [UInt]) {
        _single = nil
        _rest = _CompositeToken(cancel: cancel, isCancelled: isCancelled, silenceKeys: silenceKeys)
    }

    deinit { cancel() }

    /// Stops the observation. Calling it again does nothing.
    public func cancel() {
        _single?.removeFromRegistry()
        _rest?.cancel()
    }

    /// What `withoutNotifying` silences for this token: its registrations' silence keys.
    internal var _silenceKeys: [UInt] {
        (_single.map { [$0.silenceKey] } ?? []) + (_rest?.silenceKeys ?? [])
    }

    /// Whether the observation has stopped (cancelled, removed, or its object died).
    public var isCancelled: Bool {
        if let _rest { return _rest.isCancelled }
        return _single?.isCancelled ?? true
    }
}

/// What a token holds beyond one registration: several registrations (`observe` of several key
/// paths), or a composite observation's controls (an owner's array property, an actor's mailbox).
private final class _CompositeToken: @unchecked Sendable {
    private let _several: [_AnyRegistration]
    private let _cancel: (@Sendable () -> Void)?
    private let _isCancelled: (@Sendable () -> Bool)?
    /// A composite observation's names for `withoutNotifying` (its registrations' silence key).
    private let _silenceKeys: [UInt]

    init(several: [_AnyRegistration]) {
        _several = several
        _cancel = nil
        _isCancelled = nil
        _silenceKeys = []
    }

    init(cancel: @escaping @Sendable () -> Void, isCancelled: @escaping @Sendable () -> Bool, silenceKeys: [UInt]) {
        _several = []
        _cancel = cancel
        _isCancelled = isCancelled
        _silenceKeys = silenceKeys
    }

    func cancel() {
        for registration in _several { registration.removeFromRegistry() }
        _cancel?()
    }

    var silenceKeys: [UInt] { _several.map(\.silenceKey) + _silenceKeys }

    var isCancelled: Bool {
        if let _isCancelled { return _isCancelled() }
        return _several.allSatisfy { $0.isCancelled }
    }
}
