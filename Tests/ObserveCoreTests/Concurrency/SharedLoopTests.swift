import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import ObserveCore
import Synchronization
import Testing

/// `_SharedLoop` (`Concurrency/_SharedLoop.swift`): the chunks of a loop that two threads run
/// together each run exactly once, `finish()` returns only after every chunk has ended and sees
/// what they wrote, and a thread alone runs them all without waiting on itself.
@Suite("Concurrency: a loop shared by two threads")
struct SharedLoopTests {
    /// One counter per chunk, written by whichever thread runs it (plain memory: `finish()`
    /// must make the helper's writes visible, which ThreadSanitizer checks in CI).
    private final class Runs: @unchecked Sendable {
        let counts: UnsafeMutableBufferPointer<Int>
        init(_ chunks: Int) { counts = .allocate(capacity: chunks); counts.initialize(repeating: 0) }
        deinit { counts.deallocate() }
    }

    @Test("a thread alone runs every chunk once, in order, and finish() returns")
    func aloneRunsEverything() {
        var order: [Int] = []
        let loop = _SharedLoop(chunks: 5) { order.append($0) }
        loop.finish()
        loop.finish()                                    // nothing left: returns at once
        loop.help()
        #expect(order == [0, 1, 2, 3, 4])
    }

    @Test("two threads share the chunks: each runs once, and finish() waits for the one the other thread is running")
    func twoThreadsShareTheChunks() {
        for round in 0..<20 {
            let chunks = 64, runs = Runs(chunks)
            let entered = DispatchSemaphore(value: 0), helped = DispatchSemaphore(value: 0)
            let loop = _SharedLoop(chunks: chunks) { chunk in
                if chunk == 0 {
                    // Taken by the helper (this thread calls finish() only after this signal):
                    // still running when finish() has run every other chunk.
                    entered.signal()
                    usleep(2_000)
                }
                runs.counts[chunk] += 1
            }
            DispatchQueue.global().async {
                loop.help()
                helped.signal()
            }
            entered.wait()
            loop.finish()
            #expect(runs.counts.allSatisfy { $0 == 1 }, "round \(round): every chunk ended exactly once before finish() returned")
            helped.wait()
        }
    }

    @Test("with no chunks, help() and finish() return at once")
    func noChunks() {
        let loop = _SharedLoop(chunks: 0) { _ in Issue.record("no chunk to run") }
        loop.help()
        loop.finish()
    }
}
