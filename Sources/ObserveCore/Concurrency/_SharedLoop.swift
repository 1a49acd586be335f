import Synchronization

/// A loop of `chunks` independent iterations that two threads run together: each `help()` takes
/// the next chunk not yet taken (one atomic increment) and runs it, until none is left. `finish()`
/// helps, then waits until every chunk taken by anyone has ended, and sees everything those
/// chunks wrote (release at each chunk's end, acquire in the wait).
///
/// A waiter only waits for chunks another thread took and is running, so a thread that does all
/// the work alone (both halves of a `DispatchQueue.concurrentPerform` run on one thread) never
/// waits on itself. A chunk must not wait for anything: a waiter spins, yielding its time slice
/// every 32 tries (`_backOff`).
///
/// Used by `_ElementTracker.copyIn`, where the copy of a long run must be complete before one
/// thread indexes it, and the other thread, once awake, helps with the copy before its own pass:
///
///     let copying = _SharedLoop(chunks: n) { chunk in copyChunk(chunk) }
///     // thread A:                 // thread B:
///     copying.finish()             copying.help()
///     indexEverything()            countMemberships()
internal final class _SharedLoop: @unchecked Sendable {
    private let _next = Atomic<Int>(0)
    private let _ended = Atomic<Int>(0)
    private let _chunks: Int
    private let _body: (Int) -> Void

    init(chunks: Int, _ body: @escaping (Int) -> Void) {
        _chunks = chunks
        _body = body
    }

    /// Runs chunks until none is left to take.
    func help() {
        while true {
            let chunk = _next.wrappingAdd(1, ordering: .relaxed).oldValue
            if chunk >= _chunks { return }
            _body(chunk)
            _ended.wrappingAdd(1, ordering: .releasing)
        }
    }

    /// Runs chunks until none is left to take, then waits until every chunk has ended.
    func finish() {
        help()
        var spins = 0
        while _ended.load(ordering: .acquiring) < _chunks { _backOff(&spins) }
    }
}
