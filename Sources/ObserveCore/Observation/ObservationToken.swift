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
    /// What the token stops: one registration (the common case), a composite of several, or
    /// nothing (already inert). One reference, so a token is 24 bytes with the object's header
    /// and takes the allocator's 32-byte size class, where two optional references took its
    /// 48-byte one; and reached through a class method, so cancelling copies nothing (a
    /// `switch` over an enum of references retained and released the registration, callgrind).
    private let _target: _TokenTarget?

    @usableFromInline
    internal init(_ registration: _AnyRegistration?) {
        _target = registration
    }

    @usableFromInline
    internal init(_ registrations: [_AnyRegistration]) {
        _target = registrations.isEmpty ? nil : _CompositeToken(several: registrations)
    }

    internal init(cancel: @escaping @Sendable () -> Void, isCancelled: @escaping @Sendable () -> Bool,
                  silenceKeys: [UInt]) {
        _target = _CompositeToken(cancel: cancel, isCancelled: isCancelled, silenceKeys: silenceKeys)
    }

    deinit { cancel() }

    /// Stops the observation. Calling it again does nothing.
    ///
    /// The handler, and what it captures, stays with the token: it is released when the token is
    /// (set the token to nil to break a cycle through a strong capture), or later, on another
    /// thread, if a notification in progress there, a queued delivery or an open transaction
    /// still holds it then (README, "Threads").
    public func cancel() {
        _target?._tokenCancel()
    }

    /// What `withoutNotifying` silences for this token: its registrations' silence keys.
    internal var _silenceKeys: [UInt] { _target?._tokenSilenceKeys ?? [] }

    /// Whether the observation has stopped (cancelled, removed, or its object died).
    public var isCancelled: Bool { _target?._tokenIsCancelled ?? true }
}

/// What an ``ObservationToken`` stops: a registration (`_AnyRegistration`) or a composite of
/// several (`_CompositeToken`). Abstract; the subclasses say what each member means.
@usableFromInline
internal class _TokenTarget: @unchecked Sendable {
    @usableFromInline init() {}
    /// Stops it (idempotent, thread-safe).
    func _tokenCancel() { fatalError("abstract") }
    /// Whether it has stopped.
    var _tokenIsCancelled: Bool { fatalError("abstract") }
    /// Its names for `withoutNotifying`.
    var _tokenSilenceKeys: [UInt] { fatalError("abstract") }
}

/// What a token holds beyond one registration: several registrations (`observe` of several key
/// paths), or a composite observation's controls (an owner's array property, an actor's mailbox).
private final class _CompositeToken: _TokenTarget, @unchecked Sendable {
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
        super.init()
    }

    init(cancel: @escaping @Sendable () -> Void, isCancelled: @escaping @Sendable () -> Bool, silenceKeys: [UInt]) {
        _several = []
        _cancel = cancel
        _isCancelled = isCancelled
        _silenceKeys = silenceKeys
        super.init()
    }

    override func _tokenCancel() {
        for registration in _several { registration.removeFromRegistry() }
        _cancel?()
    }

    override var _tokenSilenceKeys: [UInt] { _several.map(\.silenceKey) + _silenceKeys }

    override var _tokenIsCancelled: Bool {
        if let _isCancelled { return _isCancelled() }
        return _several.allSatisfy { $0.isCancelled }
    }
}
