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
    private func withSectionOnAnotherThread(enter: @escaping @Sendable () -> Void, leaving objects: [UInt],
                                            _ check: () -> Void) -> Bool {
        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var drainRequested = false
        Thread {
            enter()
            inside.signal()
            release.wait()
            var last = false
            for object in objects { last = cobs_read_leave(object) }
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

    /// Distinct addresses of live memory to name objects by (ThreadSanitizer builds annotate the
    /// address a section leaves, so it must be memory the process owns).
    private static let storage = UInt(bitPattern: UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8))
    private static func object(_ i: Int) -> UInt { storage + UInt(8 * i) }
    private let a = object(0), b = object(1), c = object(2)

    @Test("a section holds its own object's retired cache, not another's; its leave is told to drain")
    func holdsOwnObjectOnly() {
        let (a, b) = (a, b)
        let drain = withSectionOnAnotherThread(enter: { cobs_read_enter(a) }, leaving: [a]) {
            #expect(cobs_read_registered_threads() >= 1, "the reader registered itself")
            #expect(reclaimable([a, b]) == [true, false])
        }
        #expect(drain, "the reclaimer left a cache the reader held: its outermost leave asks for a drain")
        #expect(reclaimable([a]) == [false], "once the section ended nothing holds it")
    }

    @Test("nested sections hold the caches of the objects they read, and no other")
    func nestedHoldsItsObjects() {
        let (a, b, c) = (a, b, c)
        let drain = withSectionOnAnotherThread(enter: { cobs_read_enter(a); cobs_read_enter(b) }, leaving: [b, a]) {
            #expect(reclaimable([a, b, c]) == [true, true, false])
        }
        #expect(drain)
        #expect(reclaimable([a, b]) == [false, false])
    }

    /// What the records say, not the ordering (the semaphores order everything here).
    @Test("a section nested on the same object (entered without a fence) holds it until the outermost leave, which alone asks for a drain")
    func nestedOnSameObjectHoldsUntilOutermost() {
        let a = a
        let inside = DispatchSemaphore(value: 0), next = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var innerDrain = true, outerDrain = false
        Thread {
            cobs_read_enter(a)
            cobs_read_enter(a)                 // covered by the section around it: no fence
            inside.signal()
            next.wait()
            innerDrain = cobs_read_leave(a)    // nested: never asks for a drain
            inside.signal()
            next.wait()
            outerDrain = cobs_read_leave(a)
            done.signal()
        }.start()
        inside.wait()
        #expect(reclaimable([a]) == [true], "two sections deep on a")
        next.signal()
        inside.wait()
        #expect(reclaimable([a]) == [true], "the outer section still reads a")
        next.signal()
        done.wait()
        #expect(!innerDrain, "a nested leave does not drain")
        #expect(outerDrain, "the outermost leave sees the reclaimer's mark")
        #expect(reclaimable([a]) == [false])
    }

    @Test("nesting deeper than the record's stack holds every retired cache")
    func deepNestingHoldsEverything() {
        let depth = Int(COBS_READ_STACK) + 1
        let objects = (0..<depth).map { Self.object($0) }, other = Self.object(7)
        let drain = withSectionOnAnotherThread(enter: { for o in objects { cobs_read_enter(o) } }, leaving: objects.reversed()) {
            #expect(reclaimable([other]) == [true])
        }
        #expect(drain)
        #expect(reclaimable([other]) == [false])
    }

    @Test("a section with nothing retired leaves without a drain request")
    func quietLeave() {
        let (a, b) = (a, b)
        let drain = withSectionOnAnotherThread(enter: { cobs_read_enter(a) }, leaving: [a]) {
            #expect(reclaimable([b]) == [false])
        }
        #expect(!drain)
    }

    @Test("the calling thread's own open section holds too, and is asked to drain")
    func ownSection() {
        cobs_read_enter(a)
        #expect(cobs_read_depth() == 1)
        #expect(reclaimable([a]) == [true])
        #expect(cobs_read_leave(a), "told to drain")
        cobs_read_begin_drain()
        #expect(!cobs_read_should_drain())
        #expect(reclaimable([a]) == [false])
    }
}
