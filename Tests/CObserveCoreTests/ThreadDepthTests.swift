// The per-thread notification depth the façade uses to catch runaway recursion: enter/leave
// count up and down, never below zero, and each thread has its own counter.

import CObserveCore
import Foundation
import Testing

@Suite struct ThreadDepthTests {
    @Test func enterAndLeaveCountUpAndDownOnOneThread() {
        #expect(cobs_thread_depth_enter() == 1)
        #expect(cobs_thread_depth_enter() == 2)
        #expect(cobs_thread_depth_enter() == 3)
        #expect(cobs_thread_depth_leave() == 2)
        #expect(cobs_thread_depth_leave() == 1)
        #expect(cobs_thread_depth_leave() == 0)
    }

    @Test func leaveAtDepthZeroStaysAtZero() {
        #expect(cobs_thread_depth_leave() == 0)
        #expect(cobs_thread_depth_leave() == 0)
        #expect(cobs_thread_depth_enter() == 1, "an unbalanced leave did not go negative")
        #expect(cobs_thread_depth_leave() == 0)
    }

    @Test func exchangeSetsTheDepthAndReturnsThePreviousOne() {
        #expect(cobs_thread_depth_get() == 0)
        #expect(cobs_thread_depth_enter() == 1)
        // A queued delivery runs at the depth its change was announced at...
        #expect(cobs_thread_depth_exchange(40) == 1)
        #expect(cobs_thread_depth_get() == 40)
        #expect(cobs_thread_depth_enter() == 41, "a change announced inside it nests one deeper")
        #expect(cobs_thread_depth_leave() == 40)
        // ... and the thread gets its own depth back afterwards.
        #expect(cobs_thread_depth_exchange(1) == 40)
        #expect(cobs_thread_depth_leave() == 0)
        #expect(cobs_thread_depth_get() == 0)
    }

    @Test func eachThreadHasItsOwnDepth() {
        // The test thread sits at depth 2 while other threads count independently.
        #expect(cobs_thread_depth_enter() == 1)
        #expect(cobs_thread_depth_enter() == 2)
        defer {
            #expect(cobs_thread_depth_leave() == 1)
            #expect(cobs_thread_depth_leave() == 0)
        }

        let results = DepthLog()
        let threadCount = 4
        let done = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        for t in 0..<threadCount {
            let thread = Thread {
                var seen: [UInt32] = [cobs_thread_depth_enter()]  // a new thread starts at 0
                go.wait()  // all threads are inside, at depth 1, at the same time
                for _ in 0..<(t + 1) { seen.append(cobs_thread_depth_enter()) }
                for _ in 0..<(t + 2) { seen.append(cobs_thread_depth_leave()) }
                results.append(thread: t, seen)
                done.signal()
            }
            thread.start()
        }
        for _ in 0..<threadCount { go.signal() }
        for _ in 0..<threadCount { done.wait() }

        for t in 0..<threadCount {
            let up = (1...(t + 2)).map(UInt32.init)
            let down = (0...(t + 1)).reversed().map(UInt32.init)
            #expect(results.log[t] == up + down, "thread \(t)")
        }
        #expect(cobs_thread_depth_enter() == 3, "other threads did not touch this one's depth")
        #expect(cobs_thread_depth_leave() == 2)
    }
}

/// Collects per-thread observations under a lock.
private final class DepthLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [Int: [UInt32]] = [:]
    func append(thread: Int, _ seen: [UInt32]) { lock.withLock { entries[thread] = seen } }
    var log: [Int: [UInt32]] { lock.withLock { entries } }
}
