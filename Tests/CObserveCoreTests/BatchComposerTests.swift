// cobs_batch: coalescing, origins, move detection (heaviest increasing subsequence and its
// tie-breaking), modifications, the finish protocol, every error code, and a property test
// over 10,000 random batches checked against a reference application.

import CObserveCore
import SeededRandom
import Testing

@Suite struct BatchComposerTests {
    // MARK: Coalescing

    @Test func untouchedBatchReportsNothing() {
        let batch = TestBatch(oldCount: 10)
        #expect(batch.finish() == [])
        #expect(TestBatch(oldCount: 0).finish() == [])
    }

    @Test func insertThenRemoveOfTheSameElementReportsNothing() {
        let batch = TestBatch(oldCount: 10)
        assertStatus(batch.insert(3), COBS_OK)
        #expect(batch.remove(3).origins == [.max])
        #expect(batch.finish() == [])
        #expect(batch.count == 10)
    }

    @Test func insertedElementMovedAroundAndRemovedReportsNothing() {
        let batch = TestBatch(oldCount: 6)
        batch.insert(2, 3)
        batch.move(3, 0)
        batch.move(0, 8)
        let removed = batch.remove(7, 2).origins   // [.., 5, inserted]
        #expect(removed == [5, .max])
        batch.remove(2, 2)                          // the two remaining inserted elements
        #expect(batch.finish() == [.remove(5)])
    }

    @Test func appendingOneHundredThousandElementsIsOneInsertRun() {
        let batch = TestBatch(oldCount: 5)
        batch.insert(5, 100_000)
        #expect(batch.finish() == [.insert(5, 100_000)])
    }

    @Test func appendingOneAtATimeIsStillOneInsertRun() {
        let batch = TestBatch(oldCount: 2)
        for i in 0..<1000 { batch.insert(2 + UInt64(i)) }
        #expect(batch.finish() == [.insert(2, 1000)])
    }

    @Test func removingEveryElementOneByOneIsOneRemoveRunWithTheirOrigins() {
        let batch = TestBatch(oldCount: 4)
        var origins: [UInt64] = []
        for _ in 0..<4 { origins += batch.remove(0).origins }
        #expect(origins == [0, 1, 2, 3])
        #expect(batch.finish() == [.remove(0, 4)])
    }

    @Test func replaceIsARemovalAndAnInsertionAtTheSameIndex() {
        let batch = TestBatch(oldCount: 5)
        batch.remove(2)
        batch.insert(2)
        #expect(batch.finish() == [.remove(2), .insert(2)])
    }

    // MARK: Origins

    @Test func removeReportsOriginalIndicesAndUIntMaxForBatchInsertedElements() {
        let batch = TestBatch(oldCount: 5)           // [0 1 2 3 4]
        batch.insert(2, 2)                           // [0 1 a b 2 3 4]
        batch.move(6, 0)                             // [4 0 1 a b 2 3]
        let (status, origins) = batch.remove(2, 4)   // 1 a b 2
        assertStatus(status, COBS_OK)
        #expect(origins == [1, .max, .max, 2])
        #expect(batch.count == 3)
        #expect(batch.finish() == [.remove(1, 2), .move(4, to: 0)])
    }

    @Test func removeWithoutAnOriginsBufferStillRemoves() {
        let batch = TestBatch(oldCount: 5)
        assertStatus(cobs_batch_remove(batch.raw, 1, 2, nil), COBS_OK)
        #expect(batch.finish() == [.remove(1, 2)])
    }

    // MARK: Moves

    @Test func movingTheLastElementToTheFrontIsOneMove() {
        let batch = TestBatch(oldCount: 10)
        batch.move(9, 0)
        #expect(batch.finish() == [.move(9, to: 0)])
    }

    @Test func movingTheFirstElementToTheEndIsOneMove() {
        let batch = TestBatch(oldCount: 10)
        batch.move(0, 9)
        #expect(batch.finish() == [.move(0, to: 9)])
    }

    @Test func movingAnElementBackWhereItWasReportsNothing() {
        let batch = TestBatch(oldCount: 10)
        batch.move(3, 7)
        batch.move(7, 3)
        batch.move(4, 4)
        #expect(batch.finish() == [])
    }

    @Test func movesKeepTheMostElementsInPlaceNotTheMostSegments() {
        // [0 1 ... 99] -> [1 ... 99 0]: one segment of 99 and one of 1. Either could "stay" if
        // segments were counted; weighting by length keeps the 99.
        let batch = TestBatch(oldCount: 100)
        batch.move(0, 99)
        #expect(batch.finish() == [.move(0, to: 99)])
        let blockMoved = TestBatch(oldCount: 100)
        for _ in 0..<60 { blockMoved.move(99, 0) }   // [40 ... 99 0 ... 39]
        #expect(blockMoved.finish() == [.move(0, 40, to: 60)])
    }

    @Test func swapOfTwoElementsIsReportedAsTheirTwoMoves() {
        // swapAt(1, 3) on [0 1 2 3 4] -> [0 3 2 1 4]: 2 stayed at its index, so it is kept.
        let batch = TestBatch(oldCount: 5)
        batch.move(1, 3)   // [0 2 3 1 4]
        batch.move(2, 1)   // [0 3 2 1 4]
        #expect(batch.finish() == [.move(1, to: 3), .move(3, to: 1)])
    }

    @Test func swapOfNeighboursMovesTheFirstOne() {
        // [A B] -> [B A]: equal weights and displacements, so the one first in the new order (B)
        // stays and A is reported moved.
        let batch = TestBatch(oldCount: 2)
        batch.move(1, 0)
        #expect(batch.finish() == [.move(0, to: 1)])
    }

    @Test func movesAreChosenByLongestIncreasingSubsequence() {
        // [0 1 2 3 4 5 6 7] -> [5 0 1 7 2 3 4 6]: LIS 0 1 2 3 4 6 (6 elements) stays; 5 and 7 move.
        let batch = TestBatch(oldCount: 8)
        batch.move(5, 0)   // [5 0 1 2 3 4 6 7]
        batch.move(7, 3)   // [5 0 1 7 2 3 4 6]
        #expect(batch.finish() == [.move(5, to: 0), .move(7, to: 3)])
    }

    @Test func reversalMovesAllButOneElement() {
        let batch = TestBatch(oldCount: 4)
        batch.move(3, 0)
        batch.move(3, 1)
        batch.move(3, 2)   // [3 2 1 0]
        let runs = batch.finish()
        #expect(runs.filter { $0.op == 3 }.map(\.length).reduce(0, +) == 3)
        #expect(runs == [.move(0, to: 3), .move(1, to: 2), .move(3, to: 0)])
        #expect(applyReference(runs, old: [0, 1, 2, 3], new: [3, 2, 1, 0]) == [3, 2, 1, 0])
    }

    // MARK: Modifications

    @Test func permuteIsTheSameChangeAsTheMovesThatReorderTheSameWay() {
        var rng = SplitMix64(seed: 0x9E37_0001)
        for _ in 0..<200 {
            let oldCount = Int.random(in: 1...60, using: &rng)
            let permuted = TestBatch(oldCount: UInt64(oldCount)), moved = TestBatch(oldCount: UInt64(oldCount))
            for batch in [permuted, moved] {   // the same prefix: an insertion, a removal, a modification
                batch.insert(UInt64(oldCount / 2), 3)
                batch.remove(0)
                batch.modify(1)
            }
            let n = Int(permuted.count)
            let permutation = Array(0..<n).shuffled(using: &rng)
            assertStatus(permuted.permute(permutation), COBS_OK)
            // Selection moves: bring each target's element to its place, left to right.
            var current = Array(0..<n)
            for target in 0..<n where current[target] != permutation[target] {
                let from = current.firstIndex(of: permutation[target])!
                moved.move(UInt64(from), UInt64(target))
                current.insert(current.remove(at: from), at: target)
            }
            #expect(permuted.finish() == moved.finish(), "permutation \(permutation)")
        }
    }

    @Test func permuteOfAHundredThousandElements() {
        // As moves this is 100,000 edits of O(segments) each; as one permutation, one pass.
        let batch = TestBatch(oldCount: 100_000)
        assertStatus(batch.permute(Array((0..<100_000).reversed())), COBS_OK)
        let runs = batch.finish()
        #expect(runs.reduce(0) { $0 + Int($1.length) } == 99_999, "a reversal moves all but one element")
        assertStatus(batch.permute(Array((0..<100_000).reversed())), COBS_OK)
        #expect(batch.finish() == [], "reversed twice is the old array")
    }

    @Test func modifyOfAnOriginalElementIsReportedAtItsNewIndex() {
        let batch = TestBatch(oldCount: 5)
        batch.insert(0)
        batch.modify(3)   // old 2
        #expect(batch.finish() == [.insert(0), .modify(3)])
    }

    @Test func modifyOfAnInsertedElementIsJustAnInsertion() {
        let batch = TestBatch(oldCount: 5)
        batch.insert(2)
        batch.modify(2)
        #expect(batch.finish() == [.insert(2)])
    }

    @Test func modifyOfARemovedElementIsJustARemoval() {
        let batch = TestBatch(oldCount: 5)
        batch.modify(2)
        batch.modify(2)
        batch.remove(2)
        #expect(batch.finish() == [.remove(2)])
    }

    @Test func modifiedAndMovedElementIsReportedAsBoth() {
        let batch = TestBatch(oldCount: 5)
        batch.modify(0)
        batch.move(0, 4)
        #expect(batch.finish() == [.move(0, to: 4), .modify(4)])
    }

    @Test func neighbouringModificationsAreOneRun() {
        let batch = TestBatch(oldCount: 6)
        batch.modify(3)
        batch.modify(1)
        batch.modify(2)
        batch.modify(2)
        #expect(batch.finish() == [.modify(1, 3)])
    }

    // MARK: Finish

    @Test func finishWithATooSmallBufferWritesNothingButTheCount() {
        let batch = TestBatch(oldCount: 5)
        batch.remove(0)
        batch.insert(3)
        var runs = [cobs_run](repeating: cobs_run(op: 99, reserved_: 0, start: 0, length: 0, to: 0), count: 2)
        var count = 0
        let status = runs.withUnsafeMutableBufferPointer { cobs_batch_finish(batch.raw, $0.baseAddress, 1, &count) }
        assertStatus(status, COBS_BUFFER_TOO_SMALL)
        #expect(count == 2)
        #expect(runs[0].op == 99)
    }

    @Test func finishCanBeCalledAgainAndFollowsLaterEdits() {
        let batch = TestBatch(oldCount: 5)
        batch.remove(4)
        #expect(batch.finish() == [.remove(4)])
        #expect(batch.finish() == [.remove(4)])
        batch.insert(0)
        #expect(batch.finish() == [.remove(4), .insert(0)])
    }

    // MARK: Errors

    @Test func invalidArgumentsAreRejectedAndChangeNothing() {
        let batch = TestBatch(oldCount: 5)
        batch.insert(1)   // count 6
        let before = batch.finish()
        assertStatus(batch.insert(7), COBS_INVALID_ARGUMENT)              // index beyond count
        assertStatus(batch.insert(0, 0), COBS_INVALID_ARGUMENT)           // zero count
        assertStatus(batch.insert(0, .max), COBS_INVALID_ARGUMENT)        // length would overflow
        assertStatus(batch.remove(6).status, COBS_INVALID_ARGUMENT)       // range beyond count
        assertStatus(batch.remove(4, 3).status, COBS_INVALID_ARGUMENT)
        assertStatus(batch.remove(1, .max).status, COBS_INVALID_ARGUMENT)
        assertStatus(batch.remove(0, 0).status, COBS_INVALID_ARGUMENT)
        #expect(batch.remove(7).origins == [.max - 1], "origins untouched on error")
        assertStatus(batch.move(6, 0), COBS_INVALID_ARGUMENT)
        assertStatus(batch.move(0, 6), COBS_INVALID_ARGUMENT)
        assertStatus(batch.modify(6), COBS_INVALID_ARGUMENT)
        assertStatus(batch.permute([0, 1, 2, 3, 4]), COBS_INVALID_ARGUMENT, "fewer entries than elements")
        assertStatus(batch.permute([0, 1, 2, 3, 4, 4]), COBS_INVALID_ARGUMENT, "an index twice")
        assertStatus(batch.permute([0, 1, 2, 3, 4, 6]), COBS_INVALID_ARGUMENT, "an index out of range")
        assertStatus(cobs_batch_permute(batch.raw, nil, 6), COBS_INVALID_ARGUMENT)
        var count = 0
        assertStatus(cobs_batch_finish(batch.raw, nil, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_finish(batch.raw, nil, 0, nil), COBS_INVALID_ARGUMENT)
        #expect(batch.count == 6)
        #expect(batch.finish() == before)
    }

    @Test func nullBatchIsRejectedEverywhere() {
        var count = 0
        assertStatus(cobs_batch_insert(nil, 0, 1), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_remove(nil, 0, 1, nil), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_move(nil, 0, 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_modify(nil, 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_permute(nil, nil, 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_finish(nil, nil, 0, &count), COBS_INVALID_ARGUMENT)
        #expect(cobs_batch_count(nil) == 0)
        cobs_batch_destroy(nil)
    }

    @Test func createReportsNoMemoryAndReturnsNothing() {
        let allocator = CountingAllocator()
        allocator.failing = true
        var alloc = allocator.cAllocator
        var out: OpaquePointer? = OpaquePointer(bitPattern: 0x10)
        assertStatus(cobs_batch_create(5, &alloc, &out), COBS_NO_MEMORY)
        #expect(out == nil)
        allocator.failing = false
        allocator.failAfter = 1   // the struct succeeds, the segment list fails
        assertStatus(cobs_batch_create(5, &alloc, &out), COBS_NO_MEMORY)
        #expect(out == nil)
        #expect(allocator.liveBytes == 0)
    }

    @Test func noMemoryLeavesTheBatchAsItWas() {
        let allocator = CountingAllocator()
        let batch = TestBatch(oldCount: 100, allocator: allocator.cAllocator)
        // Three insertions inside the original segment: 7 segments, the initial capacity is 8.
        batch.insert(10)
        batch.insert(20)
        batch.insert(30)
        let before = batch.finish()
        allocator.failing = true
        assertStatus(batch.insert(40), COBS_NO_MEMORY)                     // segment list must grow
        #expect(batch.remove(50).origins == [.max - 1])
        assertStatus(batch.remove(50).status, COBS_NO_MEMORY)
        assertStatus(batch.move(50, 0), COBS_NO_MEMORY)
        assertStatus(batch.modify(50), COBS_NO_MEMORY)                     // first modified span
        assertStatus(batch.permute(Array((0..<103).reversed())), COBS_NO_MEMORY)
        #expect(batch.count == 103)
        var count = 0
        assertStatus(cobs_batch_finish(batch.raw, nil, 0, &count), COBS_BUFFER_TOO_SMALL, "cached result, no allocation")
        allocator.failing = false
        #expect(batch.finish() == before)
        assertStatus(batch.modify(50), COBS_OK)
        allocator.failing = true
        assertStatus(cobs_batch_finish(batch.raw, nil, 0, &count), COBS_NO_MEMORY, "composition needs scratch")
        allocator.failing = false
        #expect(batch.finish() == before + [.modify(50)])
    }

    @Test func theBatchFreesEverythingItAllocated() {
        let allocator = CountingAllocator()
        do {
            let batch = TestBatch(oldCount: 50, allocator: allocator.cAllocator)
            for i in 0..<40 { batch.move(UInt64(i), UInt64(49 - i)) }
            for i in 0..<20 { batch.modify(UInt64(i * 2)) }
            _ = batch.finish()
        }
        #expect(allocator.allocations > 2)
        #expect(allocator.liveBytes == 0)
        #expect(allocator.allocations == allocator.deallocations)
    }

    // MARK: Property: apply(change, old) == new

    @Test func randomBatchesApplyToTheOldArrayAndValidate() {
        var rng = SplitMix64(seed: 0xBA7C_4ED1_7500_0001)
        var failures = 0
        for iteration in 0..<10_000 {
            let random = RandomBatch(using: &rng)
            let runs = composeChecking(random, iteration: iteration, failures: &failures)
            let old = Array(0..<random.oldCount)
            func context() -> String { "iteration \(iteration): \(random.edits) -> \(runs)" }
            if !assertStatus(validated(runs, old: UInt64(random.oldCount), new: UInt64(random.final.count)), COBS_OK,
                             context()) {
                failures += 1
            }
            let applied = applyReference(runs, old: old, new: random.final)
            check(applied == random.final, "applied \(applied), expected \(random.final): \(context())", &failures)
            var moved = 0
            var modified: [Int] = []
            for run in runs {
                for t in 0..<Int(run.length) {
                    switch run.op {
                    case 2:
                        let element = random.final[Int(run.start) + t]
                        check(element >= RandomBatch.firstInserted, "inserted \(element): \(context())", &failures)
                    case 3:
                        let element = random.final[Int(run.to) + t]
                        check(element == Int(run.start) + t,
                              "a move names its element: \(element) != \(Int(run.start) + t): \(context())", &failures)
                        moved += 1
                    case 4: modified.append(Int(run.start) + t)
                    default: break
                    }
                }
            }
            check(modified == random.expectedModifiedIndices,
                  "modified \(modified), expected \(random.expectedModifiedIndices): \(context())", &failures)
            check(moved == random.minimumMoves, "fewest moves: \(moved) != \(random.minimumMoves): \(context())", &failures)
            if failures > 5 { return }
        }
    }

    /// Runs the edits through a cobs_batch, checking every removal's origins against a model.
    private func composeChecking(_ random: RandomBatch, iteration: Int, failures: inout Int) -> [Run] {
        let batch = TestBatch(oldCount: UInt64(random.oldCount))
        var model = Array(0..<random.oldCount)
        var next = RandomBatch.firstInserted
        for edit in random.edits {
            var status = COBS_OK
            switch edit {
            case let .insert(index, count):
                status = batch.insert(UInt64(index), UInt64(count))
                model.insert(contentsOf: next..<next + count, at: index)
                next += count
            case let .remove(index, count):
                let origins: [UInt64]
                (status, origins) = batch.remove(UInt64(index), UInt64(count))
                let expected = model[index..<index + count].map { $0 < RandomBatch.firstInserted ? UInt64($0) : .max }
                check(origins == expected, "origins \(origins), expected \(expected): iteration \(iteration)", &failures)
                model.removeSubrange(index..<index + count)
            case let .move(from, to):
                status = batch.move(UInt64(from), UInt64(to))
                model.insert(model.remove(at: from), at: to)
            case let .modify(index):
                status = batch.modify(UInt64(index))
            case let .permute(permutation):
                status = batch.permute(permutation)
                model = permutation.map { model[$0] }
            }
            if !assertStatus(status, COBS_OK, "\(edit): iteration \(iteration)") { failures += 1 }
            check(batch.count == UInt64(model.count), "count \(batch.count), expected \(model.count): iteration \(iteration)",
                  &failures)
        }
        check(model == random.final, "model \(model), expected \(random.final): iteration \(iteration)", &failures)
        return batch.finish()
    }
}

/// The random test's checks run about a million times: each is one comparison when it holds, and
/// a failure is recorded and counted (the test stops after more than five).
private func check(_ condition: Bool, _ message: @autoclosure () -> String, _ failures: inout Int,
                   sourceLocation: SourceLocation = #_sourceLocation) {
    guard !condition else { return }
    failures += 1
    Issue.record(Comment(rawValue: message()), sourceLocation: sourceLocation)
}
