import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(Testing) @testable import ObserveCore
import Synchronization
import Testing

/// The array's biased lock (`Concurrency/_ArrayLock.swift`): a thread that uses an array alone
/// for a stretch enters without an atomic read-modify-write; another thread takes that right back
/// once, and nothing is lost or seen half-done either way. CI also runs the thread-sanitized,
/// address-sanitized and random suites with `OBSERVECORE_ARRAY_BIAS_AFTER=1`, so that every array
/// biases at once and every cross-thread test revokes.
@Suite("Observable arrays: the biased lock", .serialized,
       .enabled(if: _ArrayLock.canBias, "arrays never bias without the asymmetric barrier (membarrier)"))
struct ArrayLockBiasTests {
    @Test("one thread's stretch of sections biases the lock; another thread revokes it for good, losing nothing")
    func biasThenRevoke() {
        let values = ObservableArray<Int>(backend: .c)
        values.reserveCapacity(1_000)
        values._setLockBiasThreshold(100)
        for _ in 0..<99 { _ = values.count }                      // one section each
        #expect(!values._lockIsBiasedToCurrentThread, "99 sections: one short of the threshold")
        _ = values.count
        #expect(values._lockIsBiasedToCurrentThread)
        for i in 0..<200 { values.append(i); values[i] = i }      // biased sections

        // Another thread (`async`: `sync` may run the block on this one) revokes.
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { values.append(200); done.signal() }
        done.wait()
        #expect(!values._lockIsBiasedToCurrentThread)
        for i in 201..<1_000 { values.append(i) }
        #expect(!values._lockIsBiasedToCurrentThread, "a revoked lock never biases again")
        #expect(values.elements == Array(0..<1_000))
        #expect(!values._isLocked)
    }

    @Test("an in-place mutation gives the owner's bias up, and the bias can be earned again")
    func inPlaceDropsBias() {
        let rows = ObservableArray<[Int]>([[0]], backend: .c)
        rows._setLockBiasThreshold(4)
        for _ in 0..<4 { _ = rows.count }
        #expect(rows._lockIsBiasedToCurrentThread)
        rows[0].append(1)                                          // `_modify`: through the word
        #expect(!rows._lockIsBiasedToCurrentThread, "an in-place section is never biased")
        for _ in 0..<4 { _ = rows.count }
        #expect(rows._lockIsBiasedToCurrentThread, "earned again after the threshold")
        #expect(rows.elements == [[0, 1]])
        #expect(!rows._isLocked)
    }

    /// The in-place access first gives the bias up, then the re-entry meets the recorded holder.
    @Test("using an array inside its own in-place mutation traps with the in-place message after the lock biased")
    func reentryFromBiasedOwnerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let rows = ObservableArray<[Int]>([[1]], backend: .c)
            rows._setLockBiasThreshold(1)
            _ = rows.count
            rows[0].append(rows.count)                             // fine: count is read before
            rows[0].appendComputed { rows.count }                  // re-entry: traps
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("was used while one of its elements was being mutated in place"))
    }

    @Test("a biased owner taking the lock it holds traps instead of entering twice")
    func biasedOwnerReentryTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let values = ObservableArray([1, 2, 3], backend: .c)
            values._setLockBiasThreshold(1)
            _ = values.count
            guard values._lockIsBiasedToCurrentThread else { fatalError("took the lock while holding it (no bias here)") }
            values._lock.lock()
            values._lock.lock()
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("took an ObservableArray's lock while holding it"))
    }

    /// Many arrays, each biased to this thread, then written by it and by another thread at
    /// once. The other thread's first write (the revocation) is timed to land while this thread
    /// copies 100,000 elements in under the lock (room reserved: the quiet bulk append), so it
    /// finds the owner inside and must wait; or the owner, between its two loads, finds the bias
    /// gone and queues. Every write lands once, in each writer's order. A revoker that does not
    /// wait for the owner fails this test.
    @Test("revocations racing with the owner's sections lose no write (OnTwoThreads)")
    func revocationRacesOnTwoThreads() {
        let rounds = 30, bulks = 3, singles = 2_000, big = Array(0..<100_000)
        let total = 8 + bulks * big.count + singles
        let waitedBefore = _ArrayLock.revocationsThatWaited.load(ordering: .relaxed)
        defer {
            // The race this test is for happened (about half the rounds find the owner inside),
            // where two threads can run at once.
            if twoProcessors {
                #expect(_ArrayLock.revocationsThatWaited.load(ordering: .relaxed) > waitedBefore,
                        "no revocation found the owner inside: the test did not exercise the wait")
            }
        }
        for round in 0..<rounds {
            let values = ObservableArray<Int>(0..<8, backend: .c)
            values.reserveCapacity(total)
            values._setLockBiasThreshold(1 + round % 3)
            for _ in 0..<3 { _ = values.count }
            guard values._lockIsBiasedToCurrentThread else {
                Issue.record("the lock did not bias to the thread that filled the array")
                return
            }
            let ready = Atomic<Bool>(false), go = Atomic<Bool>(false)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                ready.store(true, ordering: .relaxed)
                while !go.load(ordering: .relaxed) {}
                for i in 0..<singles { values.append(-1 - i) }
                done.signal()
            }
            while !ready.load(ordering: .relaxed) {}
            go.store(true, ordering: .relaxed)
            for _ in 0..<bulks { values.append(contentsOf: big) }    // long biased sections
            done.wait()
            let contents = values.elements
            #expect(contents.count == total)
            #expect(Array(contents.prefix(8)) == Array(0..<8))
            #expect(contents.dropFirst(8).filter { $0 >= 0 } == Array((0..<bulks).map { _ in big }.joined()),
                    "this thread's appends, whole and in order")
            #expect(contents.filter { $0 < 0 } == (0..<singles).map { -1 - $0 }, "the other thread's appends, in order")
            #expect(!values._isLocked)
            if contents.count != total { break }
        }
    }

    /// Another thread's in-place access (`_modify`, always through `_word`) must revoke the
    /// owner's bias like any of its sections, and wait for the owner to leave: its first
    /// increment is timed to land while the owner copies 100,000 elements in under the lock.
    /// Every increment and every appended element lands once; some revocation found the owner
    /// inside (checked where two threads can run at once).
    @Test("another thread's in-place mutation revokes the bias and waits for the owner (OnTwoThreads)")
    func inPlaceFromAnotherThreadRevokes() {
        let rounds = 20, increments = 1_000, big = Array(1...100_000)
        let waitedBefore = _ArrayLock.revocationsThatWaited.load(ordering: .relaxed)
        for _ in 0..<rounds {
            let values = ObservableArray<Int>([0], backend: .c)
            values.reserveCapacity(1 + 3 * big.count)
            values._setLockBiasThreshold(1)
            _ = values.count
            #expect(values._lockIsBiasedToCurrentThread)
            let ready = Atomic<Bool>(false), go = Atomic<Bool>(false)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                ready.store(true, ordering: .relaxed)
                while !go.load(ordering: .relaxed) {}
                for _ in 0..<increments { values[0] += 1 }        // in place: `_modify`
                done.signal()
            }
            while !ready.load(ordering: .relaxed) {}
            go.store(true, ordering: .relaxed)
            for _ in 0..<3 { values.append(contentsOf: big) }    // long biased sections
            done.wait()
            let contents = values.elements
            #expect(contents.first == increments, "every in-place increment landed once")
            #expect(Array(contents.dropFirst()) == Array((0..<3).map { _ in big }.joined()))
            #expect(!values._lockIsBiasedToCurrentThread)
            if contents.first != increments { break }
        }
        if twoProcessors {
            #expect(_ArrayLock.revocationsThatWaited.load(ordering: .relaxed) > waitedBefore,
                    "no in-place revocation found the owner inside: the test did not exercise the wait")
        }
    }

    @Test("an array biased to one thread and released on another pays no revocation")
    func releasedOnAnotherThreadDoesNotRevoke() {
        final class Holder: @unchecked Sendable { var array: ObservableArray<Int>? }
        let holder = Holder()
        holder.array = ObservableArray([1, 2, 3], backend: .c)
        holder.array!._setLockBiasThreshold(1)
        _ = holder.array!.count
        #expect(holder.array!._lockIsBiasedToCurrentThread)
        let before = _ArrayLock.revocations.load(ordering: .relaxed)
        weak let watched = holder.array
        let releasedHere = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            holder.array = nil                                     // the last reference: deinit here
            releasedHere.store(watched == nil, ordering: .relaxed)
            done.signal()
        }
        done.wait()
        let deinitRanThere = releasedHere.load(ordering: .relaxed)
        #expect(deinitRanThere, "the deinit ran on the other thread")
        #expect(_ArrayLock.revocations.load(ordering: .relaxed) == before, "the deinit cleared the bias without a barrier")
    }
}

/// Whether two threads of this process can run at once (the race tests' "it happened" checks).
private let twoProcessors = sysconf(Int32(_SC_NPROCESSORS_ONLN)) >= 2

private extension Array where Element == Int {
    mutating func appendComputed(_ value: () -> Int) {
        append(value())
    }
}
