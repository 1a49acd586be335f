import Synchronization

/// The registry every hand-rolled KVO starts from, written plainly: one process-wide
/// `Mutex`-guarded `Dictionary` from (object, property id) to the list of handlers.
///
/// Written the way a competent engineer would on a first pass, and not sabotaged:
/// - handlers are collected under the lock and called after it is released (so a handler may
///   observe, cancel or set without deadlocking);
/// - each handler sits in a struct next to its id, so reading it back does not re-abstract it;
/// - removal mutates the stored list in place (no copy-on-write of the whole list);
/// - property ids are small integers fixed at declaration, not key paths.
/// What makes it naive: one global lock taken on every set, observed or not; a hashed
/// dictionary lookup (`Hasher`/SipHash over the key) on every set; values passed as `Any`.
final class NaiveRegistry: Sendable {
    static let shared = NaiveRegistry()

    typealias Handler = @Sendable (_ object: AnyObject, _ old: Any, _ new: Any) -> Void

    struct Key: Hashable {
        var object: ObjectIdentifier
        var property: Int
    }

    private struct Entry {
        var id: UInt64
        var handler: Handler
    }

    private struct State {
        var observers: [Key: [Entry]] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Registers `handler` for changes of `property` on `object`; keep the token to stay registered.
    func observe<Object: AnyObject, Value>(
        _ object: Object, property: Int,
        _ handler: @escaping @Sendable (Object, _ old: Value, _ new: Value) -> Void
    ) -> NaiveToken {
        let key = Key(object: ObjectIdentifier(object), property: property)
        let erased: Handler = { object, old, new in
            handler(unsafeDowncast(object, to: Object.self), old as! Value, new as! Value)
        }
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            state.observers[key, default: []].append(Entry(id: state.nextID, handler: erased))
            return state.nextID
        }
        return NaiveToken(registry: self, key: key, id: id)
    }

    /// Removes one registration; a no-op when it is gone already.
    func remove(_ key: Key, id: UInt64) {
        state.withLock { state in
            guard let index = state.observers[key]?.firstIndex(where: { $0.id == id }) else { return }
            state.observers[key]!.remove(at: index)
            if state.observers[key]!.isEmpty { state.observers[key] = nil }
        }
    }

    /// Called from a property's `didSet`: notifies every handler of (object, property).
    func didChange(_ object: AnyObject, property: Int, old: Any, new: Any) {
        let key = Key(object: ObjectIdentifier(object), property: property)
        guard let entries = state.withLock({ $0.observers[key] }) else { return }
        for entry in entries {
            entry.handler(object, old, new)
        }
    }

    /// Frees the table's storage when nothing is registered (a Swift Dictionary keeps its
    /// capacity when emptied), so that a benchmark fixture starts from an empty table as in a
    /// fresh process, and a large one does not linger into the next fixture.
    func releaseStorageIfEmpty() {
        state.withLock { state in
            if state.observers.isEmpty { state.observers = [:] }
        }
    }

    /// Registrations currently held (for leak checks).
    var count: Int {
        state.withLock { $0.observers.values.reduce(0) { $0 + $1.count } }
    }
}

/// Keeps a naive registration alive; cancelling or releasing it removes the registration.
final class NaiveToken: @unchecked Sendable {
    private let registry: NaiveRegistry
    private let key: NaiveRegistry.Key
    private let id: UInt64
    private var cancelled = false

    init(registry: NaiveRegistry, key: NaiveRegistry.Key, id: UInt64) {
        self.registry = registry
        self.key = key
        self.id = id
    }

    func cancel() {
        if cancelled { return }
        cancelled = true
        registry.remove(key, id: id)
    }

    deinit { cancel() }
}
