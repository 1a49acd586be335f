import Dispatch

/// Where a handler runs.
///
/// ```swift
/// person.observe(\.name, delivery: .queue(.main)) { person, change in updateLabel(change) }
/// ```
public enum ObservationDelivery: Sendable {
    /// Synchronously on the thread that made the change, before the setter returns
    /// (the default, as in Foundation's KVO).
    case inline
    /// Asynchronously on the given queue, in the order the changes were made on each thread.
    /// The object is kept alive until the handler has run; the observer (for observer-tagged
    /// registrations) is not, and a handler whose observer died in between is skipped.
    ///
    /// The handler's type is shared with `.inline`, so it is not `@Sendable`: Swift 6 does not
    /// check what it touches from the queue's thread. For a handler the compiler checks, pass
    /// the actor instead: `observe(\.name, on: MainActor.shared) { change in … }` or
    /// `observe(\.name, on: someActor) { actor, change in … }`.
    case queue(DispatchQueue)
}
