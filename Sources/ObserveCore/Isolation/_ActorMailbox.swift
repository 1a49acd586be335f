/// Delivers changes to a handler isolated to an actor: one at a time, on the actor, in the order
/// they were posted (one drain task per burst, never one task per change, so no two deliveries
/// race for the actor and none overtakes another).
///
/// `post` runs inline on the mutating thread (under no lock of ours) and only appends; the
/// drain runs on the actor. After `close()`, changes still pending are dropped and none is
/// delivered: closing on the actor itself therefore guarantees no later call.
///
/// `_state` is read and written only under `_lock` (a `_Lock` rather than
/// `Synchronization.Mutex`: on Linux the Mutex waits with futex calls that ThreadSanitizer does
/// not see, so it reported the guarded accesses as races).
internal final class _ActorMailbox<A: Actor, Change: Sendable>: @unchecked Sendable {
    private struct State {
        var pending: [Change] = []
        var draining = false
        var closed = false
    }

    private let actor: A
    private let handler: @Sendable (isolated A, Change) -> Void
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _state = State()

    init(actor: A, handler: @escaping @Sendable (isolated A, Change) -> Void) {
        self.actor = actor
        self.handler = handler
    }

    /// Queues `change`; starts a drain on the actor unless one is running.
    func post(_ change: Change) {
        let start = _withState { state -> Bool in
            if state.closed { return false }
            state.pending.append(change)
            if state.draining { return false }
            state.draining = true
            return true
        }
        if start {
            let actor = self.actor
            Task { await actor._drain(self) }
        }
    }

    /// Stops delivery: pending changes are dropped (released after the lock: a change's
    /// deinit may run arbitrary code).
    func close() {
        _ = _withState { state -> [Change] in   // the returned changes die after the unlock
            state.closed = true
            defer { state.pending = [] }
            return state.pending
        }
    }

    var isClosed: Bool { _withState { $0.closed } }

    /// The token of an observation delivered through this mailbox: cancelling it closes the
    /// mailbox, then cancels `registration`.
    func token(closing registration: ObservationToken) -> ObservationToken {
        ObservationToken(cancel: {
            self.close()
            registration.cancel()
        }, isCancelled: { self.isClosed || registration.isCancelled }, silenceKeys: registration._silenceKeys)
    }

    private func _withState<R>(_ body: (inout State) -> R) -> R {
        _lock.lock()
        defer { _lock.unlock() }
        return body(&_state)
    }

    /// Delivers what is pending, batch after batch, until nothing is (on the actor).
    func drain(_ actor: isolated A) {
        while true {
            let batch = _withState { state -> [Change] in
                let batch = state.pending
                state.pending.removeAll()
                if batch.isEmpty { state.draining = false }
                return batch
            }
            if batch.isEmpty { return }
            for change in batch {
                // A handler may cancel its own observation: nothing after that is delivered.
                if _withState({ $0.closed }) { break }
                handler(actor, change)
            }
        }
    }
}

extension Actor {
    /// Runs a mailbox's drain isolated to this actor.
    internal func _drain<Change>(_ mailbox: _ActorMailbox<Self, Change>) {
        mailbox.drain(self)
    }
}
