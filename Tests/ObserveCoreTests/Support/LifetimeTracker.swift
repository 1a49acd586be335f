/// Watches objects through weak references and reports those still alive — the way
/// swift-collections' LifetimeTracker reports "potential leak" — so a test can prove that
/// observed objects, observers and tokens' captures are all released.
final class LifetimeTracker {
    private struct Entry { weak var object: AnyObject?; let label: String }
    private var entries: [Entry] = []

    /// Starts watching `object`; returns it for chaining.
    @discardableResult
    func track<T: AnyObject>(_ object: T, _ label: String = "\(T.self)") -> T {
        entries.append(Entry(object: object, label: label))
        return object
    }

    /// Labels of the watched objects that are still alive.
    var survivors: [String] { entries.filter { $0.object != nil }.map(\.label) }
}
