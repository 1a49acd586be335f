// cobs_changes_normalize and cobs_changes_validate: canonical order, merging, and every rule of
// the record format in include/cobs_changes.h, each malformed case on its own.

import CObserveCore
import Testing

@Suite struct ChangesEncoderTests {
    // MARK: normalize

    @Test func normalizeSortsRunsIntoCanonicalOrder() {
        let runs: [Run] = [.modify(7), .move(2, to: 0), .insert(5), .remove(9), .insert(1), .remove(0)]
        let (status, result) = normalized(runs)
        assertStatus(status, COBS_OK)
        #expect(result == [.remove(0), .remove(9), .insert(1), .insert(5), .move(2, to: 0), .modify(7)])
    }

    @Test func normalizeMergesTouchingRunsOfTheSameOp() {
        let (status, result) = normalized([.remove(3, 2), .remove(0, 3), .insert(10), .insert(11, 4), .modify(2), .modify(1)])
        assertStatus(status, COBS_OK)
        #expect(result == [.remove(0, 5), .insert(10, 5), .modify(1, 2)])
    }

    @Test func normalizeOfRunsAlreadyInOrderStillMergesAndOfRunsOutOfOrderOnlyAtTheEndStillSorts() {
        // Sorted input skips the sort (a reversal's 100,000 moves arrive in order), not the merge.
        let (status, merged) = normalized([.remove(0), .remove(1), .move(2, to: 9), .move(3, to: 10), .modify(4)])
        assertStatus(status, COBS_OK)
        #expect(merged == [.remove(0, 2), .move(2, 2, to: 9), .modify(4)])
        // In order but for the last pair: the check runs to the end.
        let inOrder: [Run] = (0..<200).map { (i: Int) -> Run in Run.move(UInt64(2 * i), to: UInt64(1_000 - 2 * i)) }
        var runs = inOrder
        runs.swapAt(198, 199)
        let (sortedStatus, sorted) = normalized(runs)
        assertStatus(sortedStatus, COBS_OK)
        #expect(sorted == inOrder)
    }

    @Test func normalizeKeepsTouchingRunsOfDifferentOpsApart() {
        let (status, result) = normalized([.remove(0, 2), .insert(2, 2)])
        assertStatus(status, COBS_OK)
        #expect(result == [.remove(0, 2), .insert(2, 2)])
    }

    @Test func normalizeMergesMovesOnlyWhenSourcesAndDestinationsAreBothContiguous() {
        let (status, result) = normalized([.move(4, to: 1), .move(3, to: 0), .move(5, to: 7)])
        assertStatus(status, COBS_OK)
        #expect(result == [.move(3, 2, to: 0), .move(5, to: 7)])
    }

    @Test func normalizeLeavesOverlappingRunsForValidateToReject() {
        let (status, result) = normalized([.remove(2, 3), .remove(0, 3)])
        assertStatus(status, COBS_OK)
        #expect(result == [.remove(0, 3), .remove(2, 3)])
        assertStatus(validated(result, old: 10, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func normalizeOfACanonicalChangeChangesNothing() {
        let canonical: [Run] = [.remove(0), .remove(4, 2), .insert(1), .move(2, to: 5), .move(3, to: 0), .modify(3)]
        assertStatus(validated(canonical, old: 8, new: 6), COBS_OK)
        let (status, result) = normalized(canonical)
        assertStatus(status, COBS_OK)
        #expect(result == canonical)
    }

    @Test func normalizeOfNothingIsNothing() {
        var count = 99
        assertStatus(cobs_changes_normalize(nil, 0, &count), COBS_OK)
        #expect(count == 0)
    }

    @Test func normalizeRejectsEachMalformedRunAndLeavesTheRunsUnchanged() {
        let malformed: [(String, Run)] = [
            ("unknown op 0", Run(op: 0, start: 0, length: 1)),
            ("unknown op 5", Run(op: 5, start: 0, length: 1)),
            ("zero length", .remove(0, 0)),
            ("reserved_ != 0", Run(op: 1, start: 0, length: 1, reserved: 1)),
            ("to outside MOVE", Run(op: 2, start: 0, length: 1, to: 3)),
            ("start + length overflows", .insert(.max, 2)),
            ("to + length overflows", .move(0, 2, to: .max)),
        ]
        for (name, bad) in malformed {
            let runs: [Run] = [.insert(4), bad, .remove(1)]
            let (status, result) = normalized(runs)
            assertStatus(status, COBS_INVALID_ARGUMENT, name)
            #expect(result == runs, "\(name): runs must be unchanged")
        }
    }

    @Test func normalizeRejectsNullArguments() {
        var count = 0
        assertStatus(cobs_changes_normalize(nil, 1, &count), COBS_INVALID_ARGUMENT)
        var run = Run.remove(0).c
        assertStatus(cobs_changes_normalize(&run, 1, nil), COBS_INVALID_ARGUMENT)
    }

    // MARK: validate accepts

    @Test func validateAcceptsTheEmptyChangeOnlyBetweenEqualCounts() {
        assertStatus(validated([], old: 0, new: 0), COBS_OK)
        assertStatus(validated([], old: 7, new: 7), COBS_OK)
        assertStatus(validated([], old: 7, new: 8), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_changes_validate(nil, 0, 3, 3), COBS_OK)
    }

    @Test func validateAcceptsAppendingOneHundredThousandElementsAsOneRun() {
        assertStatus(validated([.insert(5, 100_000)], old: 5, new: 100_005), COBS_OK)
    }

    @Test func validateAcceptsCanonicalChanges() {
        let cases: [([Run], UInt64, UInt64)] = [
            ([.remove(2)], 5, 4),
            ([.remove(0, 4)], 4, 0),
            ([.insert(0)], 0, 1),
            ([.remove(2), .insert(2)], 5, 5),                       // replace at 2
            ([.move(2, to: 3), .move(3, to: 2)], 5, 5),             // swap 2 and 3
            ([.move(0, to: 9)], 10, 10),                            // first to last
            ([.move(0, to: 1), .move(1, to: 0)], 2, 2),             // sources touch, destinations do not continue
            ([.modify(0, 3)], 3, 3),
            ([.move(1, to: 0), .modify(0)], 3, 3),                  // moved and changed
            ([.remove(0), .remove(5, 2), .insert(0, 2), .insert(6), .move(3, to: 4), .modify(3)], 8, 8),
        ]
        for (runs, old, new) in cases {
            assertStatus(validated(runs, old: old, new: new), COBS_OK, "\(runs) \(old)->\(new)")
        }
    }

    @Test func validateAcceptsManyMovesWhoseDestinationsAreDisjoint() {
        // 20 single moves (more than are checked pairwise): the first 20 elements reversed.
        let runs = (0..<20).map { Run.move(UInt64($0), to: UInt64(19 - $0)) }
        assertStatus(validated(runs, old: 20, new: 20), COBS_OK)
    }

    // MARK: validate rejects (one malformed case each)

    @Test func validateRejectsAnUnknownOp() {
        assertStatus(validated([Run(op: 0, start: 0, length: 1)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
        assertStatus(validated([Run(op: 9, start: 0, length: 1)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsAZeroLengthRun() {
        assertStatus(validated([.modify(1, 0)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsANonZeroReservedField() {
        assertStatus(validated([Run(op: 4, start: 1, length: 1, reserved: 0x8000_0000)], old: 5, new: 5),
                     COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsADestinationOutsideMove() {
        assertStatus(validated([Run(op: 4, start: 1, length: 1, to: 2)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsOverlappingRunsOfOneOp() {
        assertStatus(validated([.remove(0, 3), .remove(2, 3)], old: 10, new: 5), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.modify(0, 3), .modify(2)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsARemovalThatIsAlsoAMoveSource() {
        assertStatus(validated([.remove(2), .insert(0), .move(2, to: 4)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsAnInsertionThatIsAlsoAMoveDestination() {
        assertStatus(validated([.remove(4), .insert(1), .move(0, to: 1)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsMoveDestinationsThatOverlap() {
        assertStatus(validated([.move(0, to: 3), .move(1, to: 3)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
        // The same with more moves than are checked pairwise (the sorting path).
        var runs = (0..<20).map { Run.move(UInt64($0), to: UInt64(19 - $0)) }
        runs[7].to = runs[3].to
        assertStatus(validated(runs, old: 20, new: 20), COBS_INVALID_ARGUMENT)
        var overInsert = (0..<20).map { Run.move(UInt64($0 + 1), to: UInt64(20 - $0)) }
        overInsert.insert(.insert(5), at: 0)
        overInsert.insert(.remove(0), at: 0)
        assertStatus(validated(overInsert, old: 21, new: 21), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsAModificationOfAnInsertedIndex() {
        assertStatus(validated([.insert(2), .modify(2)], old: 5, new: 6), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsIndicesOutOfRange() {
        assertStatus(validated([.remove(4, 2)], old: 5, new: 3), COBS_INVALID_ARGUMENT)   // beyond old
        assertStatus(validated([.insert(5)], old: 4, new: 5), COBS_INVALID_ARGUMENT)      // beyond new
        assertStatus(validated([.move(5, to: 0)], old: 5, new: 5), COBS_INVALID_ARGUMENT) // source beyond old
        assertStatus(validated([.move(0, to: 5)], old: 5, new: 5), COBS_INVALID_ARGUMENT) // destination beyond new
        assertStatus(validated([.modify(5)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.remove(.max, 1)], old: .max, new: .max - 1), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.insert(.max, 2)], old: 0, new: 2), COBS_INVALID_ARGUMENT)  // overflow
    }

    @Test func validateRejectsInconsistentCounts() {
        assertStatus(validated([.remove(1)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.insert(1)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.remove(1), .insert(0, 2)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsNonCanonicalOrder() {
        // Ops out of order.
        assertStatus(validated([.insert(0), .remove(0)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.modify(0), .move(1, to: 2), .move(2, to: 1)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
        // Descending within an op.
        assertStatus(validated([.remove(3), .remove(1)], old: 5, new: 3), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.move(3, to: 2), .move(2, to: 3)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
        // Touching runs of one op that should have been one run.
        assertStatus(validated([.remove(1), .remove(2)], old: 5, new: 3), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.insert(0), .insert(1)], old: 0, new: 2), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.modify(0), .modify(1)], old: 2, new: 2), COBS_INVALID_ARGUMENT)
        assertStatus(validated([.move(0, to: 3), .move(1, to: 4)], old: 5, new: 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateRejectsNullRunsWithACount() {
        assertStatus(cobs_changes_validate(nil, 1, 5, 5), COBS_INVALID_ARGUMENT)
    }

    @Test func validateNeverLooksPastTheGivenCount() {
        // Only the first run counts; the second, which would break everything, is not read.
        let runs: [Run] = [.remove(0), Run(op: 77, start: .max, length: 0, reserved: 9)]
        let buffer = runs.map(\.c)
        let status = buffer.withUnsafeBufferPointer { cobs_changes_validate($0.baseAddress, 1, 5, 4) }
        assertStatus(status, COBS_OK)
    }
}
