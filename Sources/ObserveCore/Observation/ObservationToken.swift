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
    private let _registrations: [_AnyRegistration]

    internal init(_ registrations: [_AnyRegistration]) {
        _registrations = registrations
    }

    deinit { cancel() }

    /// Stops the observation. Calling it again does nothing.
    public func cancel() {
        for registration in _registrations where !registration.isCancelled {
            registration.registry.remove(registration)
        }
    }

    /// Whether the observation has stopped (cancelled, removed, or its object died).
    public var isCancelled: Bool { _registrations.allSatisfy { $0.isCancelled } }
}
