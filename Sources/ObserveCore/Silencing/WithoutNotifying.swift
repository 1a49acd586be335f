/// Runs `body` with the observations of `tokens` silenced on this thread: changes that `body`
/// makes are not delivered to those observations; every other observer still hears them.
///
/// The writer that caused a change often does not want to hear it back — a view that wrote a
/// model property from a text field, a replica applying a change it received. Realm offers this as
/// `write(withoutNotifying:)`; here any write of any observable object qualifies.
///
/// ```swift
/// let token = person.observe(\.name) { _, change in field.text = change.newValue! }
/// withoutNotifying(token) {
///     person.name = field.text          // the field's own edit: `token` is not told
/// }
/// person.name = "Ada"                   // told as usual
/// ```
///
/// - The scope is the calling thread's, for as long as `body` runs — the OS thread, so it includes
///   code `body` runs synchronously on it (a `DispatchQueue.sync` block usually runs on the
///   calling thread): a change another thread makes meanwhile is delivered as usual, and so is a
///   change `body` leaves to another thread or task. Whether a change is delivered is decided when
///   it is announced, on the writer's thread, so a silenced change is not queued at all (`.queue`
///   delivery, actor and main-actor handlers).
/// - An array change made inside ``ObservableArray/performBatchUpdates(_:)`` or a transaction is
///   announced when the batch closes: the scopes open then decide, so silence the whole batch
///   (`withoutNotifying(token) { array.performBatchUpdates { … } }`), not a part of it.
/// - Scopes nest; a token silenced by an outer scope stays silenced in the inner one. Several
///   tokens may be silenced at once.
/// - Every token kind is accepted: property, chain, dependent-key and array observations
///   (`observeArray`'s array replacements included), and handlers isolated to an actor.
/// - Cost when no scope and no transaction is open anywhere: one relaxed load per set of an observed
///   property (per delivered notification for arrays). While one is open on any thread, a
///   delivery also reads this thread's scopes (a `pthread_getspecific` call).
@discardableResult
public func withoutNotifying<R>(_ tokens: ObservationToken..., perform body: () throws -> R) rethrows -> R {
    try withoutNotifying(tokens, perform: body)
}

/// `withoutNotifying(_:perform:)` for a list of tokens built at run time.
///
/// ```swift
/// withoutNotifying(viewTokens) { model.apply(edit) }
/// ```
@discardableResult
public func withoutNotifying<R>(_ tokens: [ObservationToken], perform body: () throws -> R) rethrows -> R {
    let keys = tokens.flatMap { $0._silenceKeys }
    _ThreadSilence.push(keys)
    defer { _ThreadSilence.pop(keys.count) }
    return try body()
}

/// The silenced observations of each thread, and the process-wide count of open scopes that
/// lets every delivery skip the thread-local lookup when no scope is open anywhere.
///
/// An observation is named by its silence key (`_AnyRegistration.silenceKey`): a registration's
/// own address, or the address of the composite observation it belongs to (an `observeArray`
/// observation, whose array registration changes when the owner's array is replaced).
@usableFromInline
internal enum _ThreadSilence {
    /// Scopes are counted in every registry (`_Registry.openScopes`), which a delivery reads
    /// (relaxed) before anything else here: a scope opened on this thread is seen by this thread's
    /// later deliveries in program order, and a scope on another thread does not concern this
    /// thread's deliveries at all, so no stronger ordering is needed.
    private static func _countScope(_ delta: Int) {
        for backend in ObservationBackend.allCases {
            _Registry.shared(backend).openScopes.add(delta, ordering: .relaxed)
        }
    }

    /// The calling thread's silenced keys, innermost scope last.
    private final class Keys {
        var stack: [UInt] = []
    }

    private static let _perThread = _ThreadLocal("withoutNotifying's thread state") { Keys() }

    static func push(_ keys: [UInt]) {
        _perThread.current.stack.append(contentsOf: keys)
        _countScope(1)
    }

    static func pop(_ count: Int) {
        _countScope(-1)
        _perThread.current.stack.removeLast(count)
    }

    /// Whether the observation named `key` is silenced on this thread. Call it only after
    /// `openScopes` was seen non-zero.
    @usableFromInline @inline(never)
    static func isSilenced(_ key: UInt) -> Bool {
        _perThread.existing?.stack.contains(key) ?? false
    }

    /// The delivery check for a composite observation named `key` (registrations use
    /// `_AnyRegistration.isSilencedOrCancelled`, which reads the count through their registry).
    static func silences(_ key: UInt) -> Bool {
        _Registry.shared(.c).openScopes.load(ordering: .relaxed) != 0 && isSilenced(key)
    }
}
