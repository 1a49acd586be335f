/// Watches objects through weak references and reports those still alive — the way
/// swift-collections' LifetimeTracker reports "potential leak" — so a test can prove that
/// observed objects, observers and tokens' captures are all released.
///
/// Thread-safe: the stress tests track objects from several threads at once.
package final class LifetimeTracker: @unchecked Sendable {
    package init() {}
    private struct Entry { weak var object: AnyObject?; let label: String }
    private let lock = TestLock()
    private var entries: [Entry] = []
    private var pruneAt = 4096

    /// Starts watching `object`; returns it for chaining.
    @discardableResult
    package func track<T: AnyObject>(_ object: T, _ label: String = "\(T.self)") -> T {
        lock.locked {
            entries.append(Entry(object: object, label: label))
            // Long stress runs track hundreds of thousands of short-lived objects: forget the dead
            // ones now and then so that the list stays proportional to the live ones.
            if entries.count >= pruneAt {
                entries.removeAll { $0.object == nil }
                pruneAt = max(4096, entries.count * 2)
            }
        }
        return object
    }

    /// Labels of the watched objects that are still alive.
    package var survivors: [String] { lock.locked { entries.filter { $0.object != nil }.map(\.label) } }
}
