internal import CObserveCore

/// The calling thread's notification depth, kept in the C core's thread record
/// (`include/cobs_read_sections.h`: inline accessors of one initial-exec `_Thread_local`, far
/// cheaper than Foundation's thread dictionary).
@usableFromInline
internal enum _ThreadDepth {
    @usableFromInline
    static func enter() -> UInt32 { cobs_thread_depth_enter() }
    @usableFromInline
    static func leave() { _ = cobs_thread_depth_leave() }

    /// The depth of the delivery running on this thread (0 outside any).
    @usableFromInline
    static var current: UInt32 { cobs_thread_depth_get() }

    /// Runs `body` (a queued delivery) at `depth`, the depth its change was announced at, then
    /// restores the thread's own: a handler that re-triggers its change through a queue nests one
    /// level deeper at each round, and is caught at the limit like an inline one.
    @usableFromInline
    static func withDepth(_ depth: UInt32, _ body: () -> Void) {
        let saved = cobs_thread_depth_exchange(depth)
        defer { _ = cobs_thread_depth_exchange(saved) }
        body()
    }
}
