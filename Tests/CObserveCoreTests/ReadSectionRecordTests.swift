import CObserveCore
import Dispatch
import Foundation
import Testing

/// The C half of read sections (`include/cobs_read_sections.h`): a thread's record says which
/// object's retired cache it may hold, and a reclaimer marks the holders it had to leave waiting.
@Suite("ReadSectionRecords", .serialized)
struct ReadSectionRecordTests {
    /// Runs `body` on a new thread while the caller runs `check`, the thread inside `body`'s
    /// section until `check` returns; returns what the thread's leave reported.
    private func withSectionOnAnotherThread(enter: @escaping @Sendable () -> Void, leaves: Int,
                                            _ check: () -> Void) -> Bool {
        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var drainRequested = false
        Thread {
            enter()
            inside.signal()
            release.wait()
            var last = false
            for _ in 0..<leaves { last = cobs_read_leave() }
            drainRequested = last
            done.signal()
        }.start()
        inside.wait()
        check()
        release.signal()
        done.wait()
        return drainRequested
    }

    private func reclaimable(_ objects: [UInt]) -> [Bool] {
        var held = [Bool](repeating: true, count: objects.count)
        objects.withUnsafeBufferPointer { o in
            held.withUnsafeMutableBufferPointer { h in cobs_read_reclaimable(o.baseAddress, o.count, h.baseAddress) }
        }
        return held
    }

    @Test("a section holds its own object's retired cache, not another's; its leave is told to drain")
    func holdsOwnObjectOnly() {
        let drain = withSectionOnAnotherThread(enter: { cobs_read_enter(0x1000) }, leaves: 1) {
            #expect(cobs_read_registered_threads() >= 1, "the reader registered itself")
            #expect(reclaimable([0x1000, 0x2000]) == [true, false])
        }
        #expect(drain, "the reclaimer left a cache the reader held: its outermost leave asks for a drain")
        #expect(reclaimable([0x1000]) == [false], "once the section ended nothing holds it")
    }

    @Test("nested sections may read any object: they hold every retired cache")
    func nestedHoldsEverything() {
        let drain = withSectionOnAnotherThread(enter: { cobs_read_enter(0x1000); cobs_read_enter(0x3000) }, leaves: 2) {
            #expect(reclaimable([0x2000, 0x3000]) == [true, true])
        }
        #expect(drain)
        #expect(reclaimable([0x2000, 0x3000]) == [false, false])
    }

    @Test("a section with nothing retired leaves without a drain request")
    func quietLeave() {
        let drain = withSectionOnAnotherThread(enter: { cobs_read_enter(0x1000) }, leaves: 1) {
            #expect(reclaimable([0x2000]) == [false])
        }
        #expect(!drain)
    }

    @Test("the calling thread's own open section holds too, and is asked to drain")
    func ownSection() {
        cobs_read_enter(0x1000)
        #expect(cobs_read_depth() == 1)
        #expect(reclaimable([0x1000]) == [true])
        #expect(cobs_read_leave(), "told to drain")
        cobs_read_begin_drain()
        #expect(!cobs_read_should_drain())
        #expect(reclaimable([0x1000]) == [false])
    }
}
