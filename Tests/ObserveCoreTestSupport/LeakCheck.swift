@_spi(Testing) import ObserveCore
import Testing

/// Runs `body`, then checks that it leaked nothing: the process-wide count of live registrations
/// is back to its value before `body`, and every object `body` handed to the tracker (observed
/// objects, observers, arrays, elements, captures) has been deallocated.
///
/// ```swift
/// @Test func something(backend: ObservationBackend) {
///     expectNoLeaks { tracker in
///         let person = tracker.track(Person(backend))
///         let token = person.observe(\.age) { _, _ in }
///         person.age = 1
///         _ = token
///     }   // here: person, token and its registration are gone
/// }
/// ```
///
/// Everything `body` creates must be released when it returns: keep objects in its locals, not in
/// the returned value. Queued deliveries hold their change (and the objects in it) until they
/// run, so a body that delivers on a queue drains it before returning (`queue.sync {}`).
///
/// The registration count is process-wide (both backends, every test), so suites that use this
/// must be `.serialized` and the test command runs with `--no-parallel` (see README). Reading the
/// count also sweeps registrations whose observer died unnoticed.
@discardableResult
package func expectNoLeaks<R>(
    _ what: @autoclosure () -> String = "",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (LifetimeTracker) throws -> R
) rethrows -> R {
    let before = ObservationRuntime.liveRegistrationCount
    let tracker = LifetimeTracker()
    let result = try body(tracker)
    let after = ObservationRuntime.liveRegistrationCount
    if after != before {
        let listing = ObservationRuntime.debugListing().split(separator: "\n").prefix(20).joined(separator: "\n")
        Issue.record("\(what()) live registrations: \(before) before, \(after) after; first ones left:\n\(listing)",
                     sourceLocation: sourceLocation)
    }
    let survivors = tracker.survivors
    #expect(survivors.isEmpty,
            "\(what()) potential leak of \(survivors.count) objects: \(survivors.prefix(12).joined(separator: ", "))",
            sourceLocation: sourceLocation)
    ObservationRuntime._checkInvariants()
    return result
}
