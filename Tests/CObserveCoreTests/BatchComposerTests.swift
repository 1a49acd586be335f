// cobs_batch: coalescing, origins, move detection (heaviest increasing subsequence and its
// tie-breaking), modifications, the finish protocol, every error code, and a property test
// over 10,000 random batches checked against a reference application.

import CObserveCore
import SeededRandom
import XCTest

final class BatchComposerTests: XCTestCase {
    // MARK: Coalescing

    func testUntouchedBatchReportsNothing() {
        let batch = TestBatch(oldCount: 10)
        XCTAssertEqual(batch.finish(), [])
        XCTAssertEqual(TestBatch(oldCount: 0).finish(), [])
    }

    func testInsertThenRemoveOfTheSameElementReportsNothing() {
        let batch = TestBatch(oldCount: 10)
        assertStatus(batch.insert(3), COBS_OK)
        XCTAssertEqual(batch.remove(3).origins, [.max])
        XCTAssertEqual(batch.finish(), [])
        XCTAssertEqual(batch.count, 10)
    }

    func testInsertedElementMovedAroundAndRemovedReportsNothing() {
        let batch = TestBatch(oldCount: 6)
        batch.insert(2, 3)
        batch.move(3, 0)
        batch.move(0, 8)
        let removed = batch.remove(7, 2).origins   // [.., 5, inserted]
        XCTAssertEqual(removed, [5, .max])
        batch.remove(2, 2)                          // the two remaining inserted elements
        XCTAssertEqual(batch.finish(), [.remove(5)])
    }

    func testAppendingOneHundredThousandElementsIsOneInsertRun() {
        let batch = TestBatch(oldCount: 5)
        batch.insert(5, 100_000)
        XCTAssertEqual(batch.finish(), [.insert(5, 100_000)])
    }

    func testAppendingOneAtATimeIsStillOneInsertRun() {
        let batch = TestBatch(oldCount: 2)
        for i in 0..<1000 { batch.insert(2 + UInt64(i)) }
        XCTAssertEqual(batch.finish(), [.insert(2, 1000)])
    }

    func testRemovingEveryElementOneByOneIsOneRemoveRunWithTheirOrigins() {
        let batch = TestBatch(oldCount: 4)
        var origins: [UInt64] = []
        for _ in 0..<4 { origins += batch.remove(0).origins }
        XCTAssertEqual(origins, [0, 1, 2, 3])
        XCTAssertEqual(batch.finish(), [.remove(0, 4)])
    }

    func testReplaceIsARemovalAndAnInsertionAtTheSameIndex() {
        let batch = TestBatch(oldCount: 5)
        batch.remove(2)
        batch.insert(2)
        XCTAssertEqual(batch.finish(), [.remove(2), .insert(2)])
    }

    // MARK: Origins

    func testRemoveReportsOriginalIndicesAndUIntMaxForBatchInsertedElements() {
        let batch = TestBatch(oldCount: 5)           // [0 1 2 3 4]
        batch.insert(2, 2)                           // [0 1 a b 2 3 4]
        batch.move(6, 0)                             // [4 0 1 a b 2 3]
        let (status, origins) = batch.remove(2, 4)   // 1 a b 2
        assertStatus(status, COBS_OK)
        XCTAssertEqual(origins, [1, .max, .max, 2])
        XCTAssertEqual(batch.count, 3)
        XCTAssertEqual(batch.finish(), [.remove(1, 2), .move(4, to: 0)])
    }

    func testRemoveWithoutAnOriginsBufferStillRemoves() {
        let batch = TestBatch(oldCount: 5)
        assertStatus(cobs_batch_remove(batch.raw, 1, 2, nil), COBS_OK)
        XCTAssertEqual(batch.finish(), [.remove(1, 2)])
    }

    // MARK: Moves

    func testMovingTheLastElementToTheFrontIsOneMove() {
        let batch = TestBatch(oldCount: 10)
        batch.move(9, 0)
        XCTAssertEqual(batch.finish(), [.move(9, to: 0)])
    }

    func testMovingTheFirstElementToTheEndIsOneMove() {
        let batch = TestBatch(oldCount: 10)
        batch.move(0, 9)
        XCTAssertEqual(batch.finish(), [.move(0, to: 9)])
    }

    func testMovingAnElementBackWhereItWasReportsNothing() {
        let batch = TestBatch(oldCount: 10)
        batch.move(3, 7)
        batch.move(7, 3)
        batch.move(4, 4)
        XCTAssertEqual(batch.finish(), [])
    }

    func testMovesKeepTheMostElementsInPlaceNotTheMostSegments() {
        // [0 1 ... 99] -> [1 ... 99 0]: one segment of 99 and one of 1. Either could "stay" if
        // segments were counted; weighting by length keeps the 99.
        let batch = TestBatch(oldCount: 100)
        batch.move(0, 99)
        XCTAssertEqual(batch.finish(), [.move(0, to: 99)])
        let blockMoved = TestBatch(oldCount: 100)
        for _ in 0..<60 { blockMoved.move(99, 0) }   // [40 ... 99 0 ... 39]
        XCTAssertEqual(blockMoved.finish(), [.move(0, 40, to: 60)])
    }

    func testSwapOfTwoElementsIsReportedAsTheirTwoMoves() {
        // swapAt(1, 3) on [0 1 2 3 4] -> [0 3 2 1 4]: 2 stayed at its index, so it is kept.
        let batch = TestBatch(oldCount: 5)
        batch.move(1, 3)   // [0 2 3 1 4]
        batch.move(2, 1)   // [0 3 2 1 4]
        XCTAssertEqual(batch.finish(), [.move(1, to: 3), .move(3, to: 1)])
    }

    func testSwapOfNeighboursMovesTheFirstOne() {
        // [A B] -> [B A]: equal weights and displacements, so the one first in the new order (B)
        // stays and A is reported moved.
        let batch = TestBatch(oldCount: 2)
        batch.move(1, 0)
        XCTAssertEqual(batch.finish(), [.move(0, to: 1)])
    }

    func testMovesAreChosenByLongestIncreasingSubsequence() {
        // [0 1 2 3 4 5 6 7] -> [5 0 1 7 2 3 4 6]: LIS 0 1 2 3 4 6 (6 elements) stays; 5 and 7 move.
        let batch = TestBatch(oldCount: 8)
        batch.move(5, 0)   // [5 0 1 2 3 4 6 7]
        batch.move(7, 3)   // [5 0 1 7 2 3 4 6]
        XCTAssertEqual(batch.finish(), [.move(5, to: 0), .move(7, to: 3)])
    }

    func testReversalMovesAllButOneElement() {
        let batch = TestBatch(oldCount: 4)
        batch.move(3, 0)
        batch.move(3, 1)
        batch.move(3, 2)   // [3 2 1 0]
        let runs = batch.finish()
        XCTAssertEqual(runs.filter { $0.op == 3 }.map(\.length).reduce(0, +), 3)
        XCTAssertEqual(runs, [.move(0, to: 3), .move(1, to: 2), .move(3, to: 0)])
        XCTAssertEqual(applyReference(runs, old: [0, 1, 2, 3], new: [3, 2, 1, 0]), [3, 2, 1, 0])
    }

    // MARK: Modifications

    func testPermuteIsTheSameChangeAsTheMovesThatReorderTheSameWay() {
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
            XCTAssertEqual(permuted.finish(), moved.finish(), "permutation \(permutation)")
        }
    }

    func testPermuteOfAHundredThousandElements() {
        // As moves this is 100,000 edits of O(segments) each; as one permutation, one pass.
        let batch = TestBatch(oldCount: 100_000)
        assertStatus(batch.permute(Array((0..<100_000).reversed())), COBS_OK)
        let runs = batch.finish()
        XCTAssertEqual(runs.reduce(0) { $0 + Int($1.length) }, 99_999, "a reversal moves all but one element")
        assertStatus(batch.permute(Array((0..<100_000).reversed())), COBS_OK)
        XCTAssertEqual(batch.finish(), [], "reversed twice is the old array")
    }

    func testModifyOfAnOriginalElementIsReportedAtItsNewIndex() {
        let batch = TestBatch(oldCount: 5)
        batch.insert(0)
        batch.modify(3)   // old 2
        XCTAssertEqual(batch.finish(), [.insert(0), .modify(3)])
    }

    func testModifyOfAnInsertedElementIsJustAnInsertion() {
        let batch = TestBatch(oldCount: 5)
        batch.insert(2)
        batch.modify(2)
        XCTAssertEqual(batch.finish(), [.insert(2)])
    }

    func testModifyOfARemovedElementIsJustARemoval() {
        let batch = TestBatch(oldCount: 5)
        batch.modify(2)
        batch.modify(2)
        batch.remove(2)
        XCTAssertEqual(batch.finish(), [.remove(2)])
    }

    func testModifiedAndMovedElementIsReportedAsBoth() {
        let batch = TestBatch(oldCount: 5)
        batch.modify(0)
        batch.move(0, 4)
        XCTAssertEqual(batch.finish(), [.move(0, to: 4), .modify(4)])
    }

    func testNeighbouringModificationsAreOneRun() {
        let batch = TestBatch(oldCount: 6)
        batch.modify(3)
        batch.modify(1)
        batch.modify(2)
        batch.modify(2)
        XCTAssertEqual(batch.finish(), [.modify(1, 3)])
    }

    // MARK: Finish

    func testFinishWithATooSmallBufferWritesNothingButTheCount() {
        let batch = TestBatch(oldCount: 5)
        batch.remove(0)
        batch.insert(3)
        var runs = [cobs_run](repeating: cobs_run(op: 99, reserved_: 0, start: 0, length: 0, to: 0), count: 2)
        var count = 0
        let status = runs.withUnsafeMutableBufferPointer { cobs_batch_finish(batch.raw, $0.baseAddress, 1, &count) }
        assertStatus(status, COBS_BUFFER_TOO_SMALL)
        XCTAssertEqual(count, 2)
        XCTAssertEqual(runs[0].op, 99)
    }

    func testFinishCanBeCalledAgainAndFollowsLaterEdits() {
        let batch = TestBatch(oldCount: 5)
        batch.remove(4)
        XCTAssertEqual(batch.finish(), [.remove(4)])
        XCTAssertEqual(batch.finish(), [.remove(4)])
        batch.insert(0)
        XCTAssertEqual(batch.finish(), [.remove(4), .insert(0)])
    }

    // MARK: Errors

    func testInvalidArgumentsAreRejectedAndChangeNothing() {
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
        XCTAssertEqual(batch.remove(7).origins, [.max - 1], "origins untouched on error")
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
        XCTAssertEqual(batch.count, 6)
        XCTAssertEqual(batch.finish(), before)
    }

    func testNullBatchIsRejectedEverywhere() {
        var count = 0
        assertStatus(cobs_batch_insert(nil, 0, 1), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_remove(nil, 0, 1, nil), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_move(nil, 0, 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_modify(nil, 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_permute(nil, nil, 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_batch_finish(nil, nil, 0, &count), COBS_INVALID_ARGUMENT)
        XCTAssertEqual(cobs_batch_count(nil), 0)
        cobs_batch_destroy(nil)
    }

    func testCreateReportsNoMemoryAndReturnsNothing() {
        let allocator = CountingAllocator()
        allocator.failing = true
        var alloc = allocator.cAllocator
        var out: OpaquePointer? = OpaquePointer(bitPattern: 0x10)
        assertStatus(cobs_batch_create(5, &alloc, &out), COBS_NO_MEMORY)
        XCTAssertNil(out)
        allocator.failing = false
        allocator.failAfter = 1   // the struct succeeds, the segment list fails
        assertStatus(cobs_batch_create(5, &alloc, &out), COBS_NO_MEMORY)
        XCTAssertNil(out)
        XCTAssertEqual(allocator.liveBytes, 0)
    }

    func testNoMemoryLeavesTheBatchAsItWas() {
        let allocator = CountingAllocator()
        let batch = TestBatch(oldCount: 100, allocator: allocator.cAllocator)
        // Three insertions inside the original segment: 7 segments, the initial capacity is 8.
        batch.insert(10)
        batch.insert(20)
        batch.insert(30)
        let before = batch.finish()
        allocator.failing = true
        assertStatus(batch.insert(40), COBS_NO_MEMORY)                     // segment list must grow
        XCTAssertEqual(batch.remove(50).origins, [.max - 1])
        assertStatus(batch.remove(50).status, COBS_NO_MEMORY)
        assertStatus(batch.move(50, 0), COBS_NO_MEMORY)
        assertStatus(batch.modify(50), COBS_NO_MEMORY)                     // first modified span
        assertStatus(batch.permute(Array((0..<103).reversed())), COBS_NO_MEMORY)
        XCTAssertEqual(batch.count, 103)
        var count = 0
        assertStatus(cobs_batch_finish(batch.raw, nil, 0, &count), COBS_BUFFER_TOO_SMALL, "cached result, no allocation")
        allocator.failing = false
        XCTAssertEqual(batch.finish(), before)
        assertStatus(batch.modify(50), COBS_OK)
        allocator.failing = true
        assertStatus(cobs_batch_finish(batch.raw, nil, 0, &count), COBS_NO_MEMORY, "composition needs scratch")
        allocator.failing = false
        XCTAssertEqual(batch.finish(), before + [.modify(50)])
    }

    func testTheBatchFreesEverythingItAllocated() {
        let allocator = CountingAllocator()
        do {
            let batch = TestBatch(oldCount: 50, allocator: allocator.cAllocator)
            for i in 0..<40 { batch.move(UInt64(i), UInt64(49 - i)) }
            for i in 0..<20 { batch.modify(UInt64(i * 2)) }
            _ = batch.finish()
        }
        XCTAssertGreaterThan(allocator.allocations, 2)
        XCTAssertEqual(allocator.liveBytes, 0)
        XCTAssertEqual(allocator.allocations, allocator.deallocations)
    }

    // MARK: Property: apply(change, old) == new

    func testRandomBatchesApplyToTheOldArrayAndValidate() {
        var rng = SplitMix64(seed: 0xBA7C_4ED1_7500_0001)
        for iteration in 0..<10_000 {
            let random = RandomBatch(using: &rng)
            let runs = composeChecking(random, iteration: iteration)
            let old = Array(0..<random.oldCount)
            let context = "iteration \(iteration): \(random.edits) -> \(runs)"
            assertStatus(validated(runs, old: UInt64(random.oldCount), new: UInt64(random.final.count)), COBS_OK, context)
            XCTAssertEqual(applyReference(runs, old: old, new: random.final), random.final, context)
            var moved = 0
            var modified: [Int] = []
            for run in runs {
                for t in 0..<Int(run.length) {
                    switch run.op {
                    case 2: XCTAssertGreaterThanOrEqual(random.final[Int(run.start) + t], RandomBatch.firstInserted, context)
                    case 3:
                        XCTAssertEqual(random.final[Int(run.to) + t], Int(run.start) + t, "a move names its element: \(context)")
                        moved += 1
                    case 4: modified.append(Int(run.start) + t)
                    default: break
                    }
                }
            }
            XCTAssertEqual(modified, random.expectedModifiedIndices, context)
            XCTAssertEqual(moved, random.minimumMoves, "fewest moves: \(context)")
            if testRun?.failureCount ?? 0 > 5 { return }
        }
    }

    /// Runs the edits through a cobs_batch, checking every removal's origins against a model.
    private func composeChecking(_ random: RandomBatch, iteration: Int) -> [Run] {
        let batch = TestBatch(oldCount: UInt64(random.oldCount))
        var model = Array(0..<random.oldCount)
        var next = RandomBatch.firstInserted
        for edit in random.edits {
            switch edit {
            case let .insert(index, count):
                assertStatus(batch.insert(UInt64(index), UInt64(count)), COBS_OK)
                model.insert(contentsOf: next..<next + count, at: index)
                next += count
            case let .remove(index, count):
                let (status, origins) = batch.remove(UInt64(index), UInt64(count))
                assertStatus(status, COBS_OK)
                let expected = model[index..<index + count].map { $0 < RandomBatch.firstInserted ? UInt64($0) : .max }
                XCTAssertEqual(origins, expected, "iteration \(iteration)")
                model.removeSubrange(index..<index + count)
            case let .move(from, to):
                assertStatus(batch.move(UInt64(from), UInt64(to)), COBS_OK)
                model.insert(model.remove(at: from), at: to)
            case let .modify(index):
                assertStatus(batch.modify(UInt64(index)), COBS_OK)
            case let .permute(permutation):
                assertStatus(batch.permute(permutation), COBS_OK)
                model = permutation.map { model[$0] }
            }
            XCTAssertEqual(batch.count, UInt64(model.count))
        }
        XCTAssertEqual(model, random.final)
        return batch.finish()
    }
}
