// cobs_positions: insert / lookup / remove / move with duplicates, front insertion, rebuild after
// the ring is reallocated, growth, random churn against a Dictionary model, probe lengths and
// memory at 100,000 elements, and every status code.

import CObserveCore
import SeededRandom
import Testing

@Suite struct PositionIndexTests {
    /// Distinct, 16-byte-aligned, non-zero "element addresses".
    private func element(_ i: Int) -> UInt { 0x7F00_0000_0000 + UInt(i) * 16 }

    /// `count` distinct elements in slots 0..<count of a ring of 2^17, indexed by a rebuild.
    private func indexOfDistinctElements(_ count: Int) -> (TestRing, TestPositions) {
        let ring = TestRing(mask: (1 << 17) - 1), index = TestPositions()
        for i in 0..<count { ring[UInt32(i)] = element(i) }
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, 0, count), COBS_OK)
        return (ring, index)
    }

    /// Two indexes of the `count` elements in `ring` from `head` on: one rebuilt, one filled by
    /// inserting each pair on its own (the reference a rebuild must agree with).
    private func rebuiltAndInsertedOneByOne(_ ring: TestRing, head: UInt32, count: Int) -> (rebuilt: TestPositions, inserted: TestPositions) {
        let rebuilt = TestPositions(), inserted = TestPositions(capacityHint: count)
        assertStatus(cobs_positions_rebuild(rebuilt.raw, ring.pointer, ring.mask, head, count), COBS_OK)
        for i in 0..<count {
            let slot = (head &+ UInt32(i)) & ring.mask
            assertStatus(cobs_positions_insert(inserted.raw, ring.pointer, ring.mask, ring[slot], slot), COBS_OK)
        }
        return (rebuilt, inserted)
    }

    // MARK: Entries

    @Test func insertedElementIsFoundAtItsSlot() {
        let ring = TestRing(mask: 15), index = TestPositions()
        assertStatus(index.insert(ring, element(1), at: 5), COBS_OK)
        #expect(index.slots(ring, element(1)) == [5])
        #expect(index.slots(ring, element(2)) == [])
        #expect(index.count == 1)
        index.assertInvariants(ring)
    }

    @Test func elementInSeveralSlotsIsFoundInEach() {
        let ring = TestRing(mask: 31), index = TestPositions()
        for slot: UInt32 in [3, 9, 10, 30] { index.insert(ring, element(7), at: slot) }
        index.insert(ring, element(8), at: 4)
        #expect(index.slots(ring, element(7)) == [3, 9, 10, 30])
        #expect(index.slots(ring, element(8)) == [4])
        assertStatus(index.remove(ring, element(7), at: 9), COBS_OK)
        #expect(index.slots(ring, element(7)) == [3, 10, 30])
        #expect(index.count == 4)
        index.assertInvariants(ring)
    }

    @Test func removeForgetsOnlyThatSlotEvenAfterTheRingWasOverwritten() {
        let ring = TestRing(mask: 15), index = TestPositions()
        index.insert(ring, element(1), at: 2)
        index.insert(ring, element(1), at: 3)
        ring[2] = element(99)   // the array replaced the element first, then tells the index
        assertStatus(index.remove(ring, element(1), at: 2), COBS_OK)
        #expect(index.slots(ring, element(1)) == [3])
        assertStatus(index.remove(ring, element(1), at: 2), COBS_NOT_FOUND)
        index.assertInvariants(ring)
    }

    @Test func moveRewritesOneEntry() {
        let ring = TestRing(mask: 15), index = TestPositions()
        index.insert(ring, element(1), at: 2)
        index.insert(ring, element(1), at: 6)
        assertStatus(index.move(ring, element(1), from: 2, to: 11), COBS_OK)
        ring[2] = 0
        #expect(index.slots(ring, element(1)) == [6, 11])
        assertStatus(index.move(ring, element(1), from: 2, to: 12), COBS_NOT_FOUND)
        index.assertInvariants(ring)
    }

    @Test func lookupIgnoresStaleAddressesInSlotsWithoutAnEntry() {
        let ring = TestRing(mask: 15), index = TestPositions()
        index.insert(ring, element(1), at: 0)
        for slot: UInt32 in 1...15 { ring[slot] = element(1) }   // stale copies, never recorded
        #expect(index.slots(ring, element(1)) == [0])
    }

    @Test func insertingAtTheFrontOfTheRingNeedsNoUpdates() {
        // An array of 8 elements with head 4 in a ring of 16; inserting at index 0 puts the new
        // element in slot head - 1 = 3 and changes no other entry.
        let ring = TestRing(mask: 15), index = TestPositions()
        var head: UInt32 = 4
        for i in 0..<8 { index.insert(ring, element(i), at: (head + UInt32(i)) & ring.mask) }
        let before = (0..<8).map { index.slots(ring, element($0)) }
        head = (head &- 1) & ring.mask
        assertStatus(index.insert(ring, element(100), at: head), COBS_OK)   // the only call
        #expect((0..<8).map { index.slots(ring, element($0)) } == before)
        // Logical indices follow from the slots: (slot - head) & mask.
        #expect(index.slots(ring, element(100)).map { ($0 &- head) & ring.mask } == [0])
        #expect(index.slots(ring, element(5)).map { ($0 &- head) & ring.mask } == [6])
        index.assertInvariants(ring)
    }

    @Test func aBlockShiftIsRecordedWithoutTouchingEntriesAndLookupsFollowIt() {
        // A middle insertion of 3 elements into a ring of 60: the 20 elements after index 40 move
        // 3 slots up (as the array moves the shorter side), then 10 from the front move 2 down.
        let ring = TestRing(mask: 127)
        let index = TestPositions()
        for i in 0..<60 { assertStatus(index.insert(ring, element(i), at: UInt32(i)), COBS_OK) }
        for i in (40..<60).reversed() { ring[UInt32(i + 3)] = ring[UInt32(i)] }
        assertStatus(cobs_positions_shift(index.raw, ring.mask, 40, 20, 3), COBS_OK)
        for i in 0..<3 { assertStatus(index.insert(ring, element(100 + i), at: UInt32(40 + i)), COBS_OK) }
        for i in 0..<10 { ring[UInt32((i - 2) & 127)] = ring[UInt32(i)] }
        assertStatus(cobs_positions_shift(index.raw, ring.mask, 0, 10, -2), COBS_OK)
        for slot in [8, 9] as [UInt32] { ring[slot] = 0 }
        #expect(index.slots(ring, element(0)) == [126])
        #expect(index.slots(ring, element(9)) == [7])
        #expect(index.slots(ring, element(39)) == [39])
        #expect(index.slots(ring, element(40)) == [43])
        #expect(index.slots(ring, element(59)) == [62])
        #expect(index.slots(ring, element(101)) == [41])
        // Removing and moving take current slots, through the log.
        assertStatus(index.remove(ring, element(59), at: 62), COBS_OK)
        ring[62] = 0
        assertStatus(cobs_positions_move(index.raw, ring.mask, element(0), 126, 62), COBS_OK)
        ring[62] = element(0)
        ring[126] = 0
        #expect(index.slots(ring, element(0)) == [62])
        #expect(cobs_positions_count(index.raw) == 62)
        index.assertInvariants(ring)
        // While the log holds records the ring may not change size; a rebuild empties the log.
        assertStatus(cobs_positions_shift(index.raw, 255, 0, 1, 1), COBS_INVALID_ARGUMENT)
    }

    @Test func aFullShiftLogAsksForARebuild() {
        let ring = TestRing(mask: 255)
        let index = TestPositions()
        for i in 0..<100 { assertStatus(index.insert(ring, element(i), at: UInt32(i)), COBS_OK) }
        var head: UInt32 = 0
        var recorded = 0
        while true {
            // Move the last 50 elements one slot up each time (the ring has room above them).
            let first = (head + 50) & 255
            for k in (0..<50).reversed() { ring[(first + UInt32(k) + 1) & 255] = ring[(first + UInt32(k)) & 255] }
            ring[first] = 0
            let status = cobs_positions_shift(index.raw, ring.mask, first, 50, 1)
            // ...and close the gap from the front: the first 50 move up too.
            for k in (0..<50).reversed() { ring[(head + UInt32(k) + 1) & 255] = ring[(head + UInt32(k)) & 255] }
            ring[head] = 0
            if status == COBS_BUFFER_TOO_SMALL {
                head = (head + 1) & 255
                break
            }
            assertStatus(status, COBS_OK)
            recorded += 1
            assertStatus(cobs_positions_shift(index.raw, ring.mask, head, 50, 1), COBS_OK)
            recorded += 1
            head = (head + 1) & 255
            #expect(index.slots(ring, element(0)) == [head])
            #expect(index.slots(ring, element(99)) == [(head + 99) & 255])
        }
        #expect(recorded == 32, "the log of a small index holds 32 block moves")
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, head, 100), COBS_OK)
        #expect(index.slots(ring, element(50)) == [(head + 50) & 255])
        index.assertInvariants(ring)
    }

    @Test func theShiftLogOfALargeIndexHoldsMoreBlockMoves() {
        // 100,000 entries: a rebuild costs 100,000 probes, so the log takes 128 block moves.
        let count = 100_000, (ring, index) = indexOfDistinctElements(count)
        var end = UInt32(count), recorded = 0
        while true {
            // Move the last 10 elements one slot up (an insertion near the back).
            for k in (0..<10).reversed() { ring[end - 10 + UInt32(k) + 1] = ring[end - 10 + UInt32(k)] }
            ring[end - 10] = 0
            let status = cobs_positions_shift(index.raw, ring.mask, end - 10, 10, 1)
            if status == COBS_BUFFER_TOO_SMALL { break }
            assertStatus(status, COBS_OK)
            ring[end - 10] = element(count + recorded)   // the inserted element, indexed
            assertStatus(cobs_positions_insert(index.raw, ring.pointer, ring.mask, element(count + recorded), end - 10),
                         COBS_OK)
            recorded += 1
            end += 1
        }
        #expect(recorded == 128, "the log of a 100,000-entry index holds 128 block moves")
        // The refused move left the index behind the ring: the caller rebuilds.
        ring[end - 10] = element(count + recorded)
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, 0, count + recorded + 1), COBS_OK)
        #expect(index.slots(ring, element(count - 1)) == [end], "the last element followed every move")
        #expect(index.slots(ring, element(0)) == [0])
        index.assertInvariants(ring)
    }

    @Test func aFullShiftLogIsFoldedIntoTheEntries() {
        // 100 elements, ten of them present twice, and 400 block moves in both directions (the
        // log of a small index holds 32): every full log is folded into the entries, and after
        // every move the index answers, for each element, exactly the slots the ring holds it in
        // (insertions and removals between moves translate their slots through the log).
        let ring = TestRing(mask: 255)
        let index = TestPositions()
        for i in 0..<110 { assertStatus(index.insert(ring, element(i < 100 ? i : i - 100), at: UInt32(i)), COBS_OK) }
        var state: UInt64 = 0x5EED
        func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
        var nextElement = 200, moves = 0, folds = 0
        for step in 0..<400 {
            // A block of up to 60 slots moves 1-4 slots into free slots (as an array moves the
            // shorter side into its ring's spare room); the model rotates the region.
            let first = UInt32(next(256)), count = UInt32(1 + next(60)), e = UInt32(1 + next(4))
            let up = next(2) == 0
            let into = (0..<e).map { up ? (first + count + $0) & 255 : (first &- 1 &- $0) & 255 }
            if into.contains(where: { ring[$0] != 0 }) { continue }
            let region = up ? first : (first &- e) & 255
            let before = (0..<(count + e)).map { ring[(region + $0) & 255] }
            for k in 0..<(count + e) {
                let to = up ? (k < count ? k + e : k - count) : (k < e ? k + count : k - e)
                ring[(region + to) & 255] = before[Int(k)]
            }
            if index.shiftFoldingWhenFull(ring, first: first, count: count, delta: up ? Int64(e) : -Int64(e)) { folds += 1 }
            moves += 1
            // Insertions and removals between moves translate their slots through the log.
            if step % 7 == 0, let free = (0..<256).map(UInt32.init).first(where: { ring[$0] == 0 }) {
                assertStatus(index.insert(ring, element(nextElement), at: free), COBS_OK)
                nextElement += 1
            }
            if step % 11 == 0, let used = (0..<256).map(UInt32.init).first(where: { ring[$0] != 0 }) {
                assertStatus(index.remove(ring, ring[used], at: used), COBS_OK)
                ring[used] = 0
            }
            var expected: [UInt: [UInt32]] = [:]
            for slot in 0..<256 as Range<UInt32> where ring[slot] != 0 { expected[ring[slot], default: []].append(slot) }
            for (value, slots) in expected where index.slots(ring, value) != slots {
                Issue.record("step \(step): element \(value) at \(index.slots(ring, value)), ring has it at \(slots)")
                return
            }
            #expect(index.count == expected.values.reduce(0) { $0 + $1.count })
        }
        #expect(folds >= 3, "the log was folded several times")
        index.assertInvariants(ring)
    }

    @Test func aLargeIndexFoldsItsLogInsteadOfRebuilding() {
        // 100,000 entries and 1,000 insertions near the back, each moving the last 10 elements one
        // slot up: the log (128 block moves at this size) is folded whenever it is full.
        let count = 100_000, (ring, index) = indexOfDistinctElements(count)
        var end = UInt32(count), folds = 0
        for inserted in 0..<1_000 {
            for k in (0..<10).reversed() { ring[end - 10 + UInt32(k) + 1] = ring[end - 10 + UInt32(k)] }
            if index.shiftFoldingWhenFull(ring, first: end - 10, count: 10, delta: 1) { folds += 1 }
            ring[end - 10] = element(count + inserted)   // the inserted element, indexed
            assertStatus(cobs_positions_insert(index.raw, ring.pointer, ring.mask, element(count + inserted), end - 10),
                         COBS_OK)
            end += 1
        }
        #expect(folds == 1_000 / 128)
        #expect(index.slots(ring, element(count - 1)) == [end - 1], "the last element followed every move")
        #expect(index.slots(ring, element(count - 10)) == [end - 10])
        #expect(index.slots(ring, element(count - 11)) == [UInt32(count - 11)], "elements before the block stayed")
        #expect(index.slots(ring, element(count)) == [UInt32(count - 10)], "the first insertion moved 999 times")
        #expect(index.slots(ring, element(0)) == [0])
        index.assertInvariants(ring)
    }

    @Test func aFoldOfMovesSpanningTheWholeRingAgreesWithTheLog() {
        // A block and the slots it moves into can be the whole ring (count + |delta| == mask + 1:
        // `move(from: 0, to: count - 1)` on a full ring); the regions of such a record meet at
        // its origin. 10 elements (one twice) in a ring of 16.
        let ring = TestRing(mask: 15)
        let index = TestPositions()
        for i in 0..<10 { assertStatus(index.insert(ring, element(i == 7 ? 2 : i), at: UInt32(i)), COBS_OK) }
        func rotate(first: UInt32, count: UInt32, delta: Int) {
            let before = (0..<16).map { ring[UInt32($0)] }
            for k in 0..<count {
                let from = (first + k) & 15
                ring[UInt32((Int(from) + delta) & 15)] = before[Int(from)]
            }
            let into = (0..<UInt32(abs(delta))).map { delta > 0 ? (first + count + $0) & 15 : (first &- 1 &- $0) & 15 }
            let vacated = (0..<UInt32(abs(delta))).map { delta > 0 ? (first + $0) & 15 : (first + count - 1 - $0) & 15 }
            for (to, from) in zip(vacated, into) { ring[to] = before[Int(from)] }
            assertStatus(cobs_positions_shift(index.raw, ring.mask, first, count, Int64(delta)), COBS_OK)
        }
        rotate(first: 0, count: 12, delta: 4)     // [0, 12) up by 4 into the free 12..15
        rotate(first: 4, count: 13, delta: -3)    // [4, 17) down by 3 into the free 1..3
        rotate(first: 14, count: 9, delta: 7)     // wraps: [14, 23) up by 7
        func expectMatchesRing(_ what: String) {
            for i in 0..<10 where i != 7 {
                let slots = (0..<UInt32(16)).filter { ring[$0] == element(i) }
                #expect(index.slots(ring, element(i)) == slots, "\(what): element \(i)")
            }
            index.assertInvariants(ring)
        }
        expectMatchesRing("through the log")
        assertStatus(cobs_positions_fold(index.raw), COBS_OK)
        expectMatchesRing("folded")
    }

    @Test func aFoldOfManyScatteredMovesOfALargeIndexAgreesWithTheRing() {
        // 100,000 elements in a ring of 2^17 (the fold's cell table then covers 32 slots per
        // cell): the whole array moves one slot up 400 times, each time as two block moves split
        // at a random index, so the log composes into hundreds of runs before each fold.
        let count = 100_000, mask = UInt32((1 << 17) - 1), ring = TestRing(mask: mask), index = TestPositions()
        for i in 0..<count { ring[UInt32(i)] = element(i % 99_000) }   // 1,000 elements twice
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, 0, count), COBS_OK)
        var state: UInt64 = 0xF01D
        var head: UInt32 = 0, folds = 0
        func shiftUp(_ first: UInt32, _ length: UInt32) {
            for k in (0..<length).reversed() { ring[(first + k + 1) & mask] = ring[(first + k) & mask] }
            ring[first] = 0
            if index.shiftFoldingWhenFull(ring, first: first, count: length, delta: 1) { folds += 1 }
        }
        for _ in 0..<400 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let split = UInt32(1 + (state >> 33) % UInt64(count - 1))
            shiftUp((head + split) & mask, UInt32(count) - split)
            shiftUp(head, split)
            head = (head + 1) & mask
        }
        #expect(folds == 6)
        // check_invariants reads every entry's element back from the ring at its (translated) slot.
        index.assertInvariants(ring)
        assertStatus(cobs_positions_fold(index.raw), COBS_OK)
        index.assertInvariants(ring)
        #expect(index.slots(ring, element(0)) == [head, (head + 99_000) & mask].sorted())
        #expect(index.slots(ring, element(98_999)) == [(head + 98_999) & mask])
    }

    @Test func aFoldWithoutMemoryLeavesTheIndexAsItWas() {
        // Folding takes a little scratch memory; refused, the index and its log are unchanged, so
        // the caller can still rebuild from the ring (what the array does: it marks its index stale).
        let allocator = CountingAllocator()
        let ring = TestRing(mask: 255)
        let index = TestPositions(allocator: allocator.cAllocator)
        for i in 0..<100 { assertStatus(index.insert(ring, element(i), at: UInt32(i)), COBS_OK) }
        for k in (0..<UInt32(50)).reversed() { ring[50 + k + 1] = ring[50 + k] }
        ring[50] = 0
        assertStatus(cobs_positions_shift(index.raw, ring.mask, 50, 50, 1), COBS_OK)
        allocator.failing = true
        assertStatus(cobs_positions_fold(index.raw), COBS_NO_MEMORY)
        allocator.failing = false
        #expect(allocator.failures == 1)
        #expect(index.slots(ring, element(99)) == [100], "the log still translates")
        index.assertInvariants(ring)
        assertStatus(cobs_positions_fold(index.raw), COBS_OK)
        #expect(index.slots(ring, element(99)) == [100])
        #expect(index.slots(ring, element(49)) == [49])
        index.assertInvariants(ring)
        assertStatus(cobs_positions_fold(nil), COBS_INVALID_ARGUMENT)
    }

    @Test func aRunOfInsertionsAgreesWithInsertingOneByOne() {
        // 60,000 slots from near the end of a 2^17 ring (the run wraps) into an index that already
        // holds 20,000: the table grows during the run to 2^17 buckets, where the run prefetches. 499 elements
        // are in the run twice and one is already indexed, so copies join or start records.
        let ring = TestRing(mask: (1 << 17) - 1), first: UInt32 = (1 << 17) - 30_000
        let byRun = TestPositions(), oneByOne = TestPositions()
        for i in 0..<20_000 {
            let slot = UInt32(40_000 + i)
            ring[slot] = element(i)
            for index in [byRun, oneByOne] { assertStatus(cobs_positions_insert(index.raw, ring.pointer, ring.mask, element(i), slot), COBS_OK) }
        }
        for i in 0..<60_000 { ring[(first &+ UInt32(i)) & ring.mask] = element(i < 500 ? 100_000 + i : i == 500 ? 7 : 50_000 + i % 59_000) }
        assertStatus(cobs_positions_insert_run(byRun.raw, ring.pointer, ring.mask, first, 60_000), COBS_OK)
        for i in 0..<60_000 {
            let slot = (first &+ UInt32(i)) & ring.mask
            assertStatus(cobs_positions_insert(oneByOne.raw, ring.pointer, ring.mask, ring[slot], slot), COBS_OK)
        }
        #expect(byRun.count == 80_000 && oneByOne.count == 80_000)
        byRun.assertInvariants(ring)
        for probe in [0, 7, 19_999, 50_000, 50_999, 58_999, 100_000, 100_499, 108_999] {
            #expect(byRun.slots(ring, element(probe)).sorted() == oneByOne.slots(ring, element(probe)).sorted(),
                    "element \(probe)")
        }
        #expect(byRun.slots(ring, element(7)).count == 2, "indexed before, and in the run")
        #expect(byRun.slots(ring, element(50_600)).count == 2, "twice in the run")
        #expect(byRun.slots(ring, element(50_000)).count == 1)
    }

    @Test func aRefusedRunOfInsertionsLeavesTheIndexAsItWas() {
        let ring = TestRing(mask: 255), index = TestPositions()
        for i in 0..<100 { ring[UInt32(i)] = element(i) }
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 0, 60), COBS_OK)
        // Slots 200...255 are new: 20 hold copies of indexed elements 0..<10 (so records start,
        // some with three copies), the rest new elements. The run wraps to slot 0, recorded
        // already: refused after adding 56 pairs, which go again, records and all.
        for k in 0..<56 { ring[UInt32(200 + k)] = k < 20 ? element(k % 10) : element(1_000 + k) }
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 200, 58), COBS_INVALID_ARGUMENT)
        #expect(index.count == 60)
        #expect(index.slots(ring, element(3)) == [3], "the record the run started is gone")
        #expect(index.slots(ring, element(1_030)) == [] && index.slots(ring, element(59)) == [59])
        index.assertInvariants(ring)
        ring[120] = 0
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 100, 30), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 0, 257), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_insert_run(nil, ring.pointer, ring.mask, 0, 1), COBS_INVALID_ARGUMENT)
        #expect(index.count == 60)
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 60, 40), COBS_OK)
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 200, 56), COBS_OK)
        #expect(index.count == 156 && index.slots(ring, element(99)) == [99])
        #expect(index.slots(ring, element(3)).sorted() == [3, 203, 213])
        index.assertInvariants(ring)
    }

    @Test func aRunWhoseCopyFindsNoMemoryLeavesTheIndexAsItWas() {
        // The bulk path adds 40 new elements, then a copy of an indexed element needs a record:
        // the allocation fails, the call answers COBS_NO_MEMORY and takes the 40 out again.
        let allocator = CountingAllocator()
        let ring = TestRing(mask: 255), index = TestPositions(capacityHint: 200, allocator: allocator.cAllocator)
        for i in 0..<100 { ring[UInt32(i)] = element(i) }
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 0, 100), COBS_OK)
        for k in 0..<60 { ring[UInt32(100 + k)] = k == 40 ? element(5) : element(1_000 + k) }
        allocator.failing = true
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 100, 60), COBS_NO_MEMORY)
        allocator.failing = false
        #expect(allocator.failures >= 1)
        #expect(index.count == 100)
        #expect(index.slots(ring, element(1_000)) == [] && index.slots(ring, element(5)) == [5])
        index.assertInvariants(ring)
        assertStatus(cobs_positions_insert_run(index.raw, ring.pointer, ring.mask, 100, 60), COBS_OK)
        #expect(index.count == 160 && index.slots(ring, element(5)).sorted() == [5, 140])
        index.assertInvariants(ring)
    }

    @Test func aRebuildIntoAMillionBucketsAgreesWithInsertingOneByOne() {
        // 600,000 entries need 2^20 buckets: the size from which a rebuild inserts partition by
        // partition (positions.c, REBUILD IN PARTITIONS). The ring wraps; 49,700 elements are there
        // twice and one 302 times, so copies meet in the partitions and become records.
        let count = 600_000, ring = TestRing(mask: (1 << 20) - 1), head: UInt32 = (1 << 20) - 1_000
        for i in 0..<count { ring[(head &+ UInt32(i)) & ring.mask] = element(i < 599_700 ? i % 550_000 : 7) }
        let (rebuilt, inserted) = rebuiltAndInsertedOneByOne(ring, head: head, count: count)
        #expect(rebuilt.count == count)
        rebuilt.assertInvariants(ring)
        var random = SplitMix64(seed: 0xB0_1D)
        for probe in [0, 1, 7, 49_699, 49_700, 549_999] + (0..<2_000).map({ _ in Int.random(in: 0..<550_000, using: &random) }) {
            #expect(rebuilt.slots(ring, element(probe)).sorted() == inserted.slots(ring, element(probe)).sorted(),
                    "element \(probe)")
        }
        #expect(rebuilt.slots(ring, element(7)).count == 302)
        #expect(rebuilt.slots(ring, element(49_699)).count == 2 && rebuilt.slots(ring, element(49_700)).count == 1)
        #expect(rebuilt.slots(ring, element(count)).isEmpty)
    }

    @Test func aRebuildWithCopiesAgreesWithInsertingOneByOne() {
        // 50,000 entries (2^16 buckets: the plain loop, which adds new elements in bulk and joins
        // each copy to its element's bucket or record on the way). The ring wraps. Every 97th of the
        // first 29,100 slots holds one of elements 0..<300 (most of which are also in their own
        // slot, so there twice), and every 125th slot element 7 (400 times in all).
        let count = 50_000, ring = TestRing(mask: (1 << 16) - 1), head: UInt32 = (1 << 16) - 7_000
        for i in 0..<count {
            let id = i % 97 == 0 && i < 29_100 ? i % 300 : i % 125 == 1 ? 7 : i
            ring[(head &+ UInt32(i)) & ring.mask] = element(id)
        }
        let (rebuilt, inserted) = rebuiltAndInsertedOneByOne(ring, head: head, count: count)
        #expect(rebuilt.count == count)
        rebuilt.assertInvariants(ring)
        for probe in [0, 7, 150, 299, 1_000, 6_999, 7_000, 29_099, 49_999] {
            #expect(rebuilt.slots(ring, element(probe)).sorted() == inserted.slots(ring, element(probe)).sorted(),
                    "element \(probe)")
        }
        #expect(rebuilt.slots(ring, element(7)).count == 400)
        #expect(rebuilt.slots(ring, element(197)).count == 2 && rebuilt.slots(ring, element(150)).count == 2)
        #expect(rebuilt.slots(ring, element(97)).count == 1, "its own slot is the 97th")
    }

    @Test func aLargeRebuildWithoutScratchMemoryTakesThePlainLoop() {
        // The partitioned rebuild needs 8 bytes per element of scratch; refused, it inserts in
        // ring order, with the same result.
        let allocator = CountingAllocator()
        let count = 600_000, ring = TestRing(mask: (1 << 20) - 1)
        let index = TestPositions(capacityHint: count, allocator: allocator.cAllocator)
        for i in 0..<count { ring[UInt32(i)] = element(i) }
        allocator.failing = true
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, 0, count), COBS_OK)
        #expect(allocator.failures == 1, "the scratch was asked for, and only it")
        allocator.failing = false
        #expect(index.count == count)
        #expect(index.slots(ring, element(123_456)) == [123_456])
        index.assertInvariants(ring)
    }

    @Test func rebuildAfterTheRingIsReallocated() {
        let small = TestRing(mask: 7), index = TestPositions()
        var head: UInt32 = 6
        for i in 0..<8 { index.insert(small, element(i % 5), at: (head + UInt32(i)) & small.mask) }
        // Reallocate as an array does: elements to slots 0..<8 of a ring twice as large.
        let large = TestRing(mask: 15)
        for i in 0..<8 { large[UInt32(i)] = small[(head + UInt32(i)) & small.mask] }
        head = 0
        assertStatus(cobs_positions_rebuild(index.raw, large.pointer, large.mask, head, 8), COBS_OK)
        #expect(index.count == 8)
        for e in 0..<5 {
            #expect(index.slots(large, element(e)) == (0..<8).filter { $0 % 5 == e }.map(UInt32.init))
        }
        index.assertInvariants(large)
    }

    @Test func rebuildFromAWrappedRingAndAfterSorting() {
        let ring = TestRing(mask: 15), index = TestPositions()
        let head: UInt32 = 12
        for i in 0..<10 { ring[(head + UInt32(i)) & ring.mask] = element(9 - i) }
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, head, 10), COBS_OK)
        for i in 0..<10 { #expect(index.slots(ring, element(9 - i)) == [(head + UInt32(i)) & ring.mask]) }
        // "Sort": rewrite the ring in place, then rebuild.
        for i in 0..<10 { ring[(head + UInt32(i)) & ring.mask] = element(i) }
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, head, 10), COBS_OK)
        for i in 0..<10 { #expect(index.slots(ring, element(i)) == [(head + UInt32(i)) & ring.mask]) }
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, 0, 0), COBS_OK)
        #expect(index.count == 0)
        index.assertInvariants(ring)
    }

    @Test func clearForgetsEverythingAndKeepsTheAllocation() {
        let ring = TestRing(mask: 63), index = TestPositions()
        for i in 0..<40 { index.insert(ring, element(i), at: UInt32(i)) }
        let bytes = index.bytes
        cobs_positions_clear(index.raw)
        #expect(index.count == 0)
        #expect(index.bytes == bytes)
        #expect(index.slots(ring, element(3)) == [])
        index.assertInvariants(ring)
        cobs_positions_clear(nil)
        #expect(cobs_positions_count(nil) == 0)
        #expect(cobs_positions_bytes(nil) == 0)
    }

    // MARK: Growth

    @Test func indexGrowsPastItsCapacityHint() {
        let ring = TestRing(mask: 4095), index = TestPositions(capacityHint: 4)
        let initialBytes = index.bytes
        for i in 0..<3000 {
            assertStatus(index.insert(ring, element(i % 1000), at: UInt32(i)), COBS_OK)
        }
        #expect(index.bytes > initialBytes)
        #expect(index.count == 3000)
        #expect(index.slots(ring, element(7)) == [7, 1007, 2007])
        index.assertInvariants(ring)
    }

    @Test func capacityHintAvoidsGrowth() {
        let ring = TestRing(mask: 1023), index = TestPositions(capacityHint: 1000)
        let bytes = index.bytes
        for i in 0..<1000 { index.insert(ring, element(i), at: UInt32(i)) }
        #expect(index.bytes == bytes)
    }

    // MARK: Random churn against a model

    @Test func randomChurnAgreesWithADictionaryModelAndKeepsItsInvariants() {
        var rng = SplitMix64(seed: 0xC4_0C4_0C4)
        let ring = TestRing(mask: 511), index = TestPositions(seed: 0x1234_5678)
        var model: [UInt: Set<UInt32>] = [:]   // element -> slots
        var occupied: [UInt32: UInt] = [:]      // slot -> element (entries only)
        for step in 0..<20_000 {
            let e = element(Int.random(in: 0..<64, using: &rng))   // few elements: many duplicates
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                let slot = UInt32.random(in: 0...ring.mask, using: &rng)
                if occupied[slot] == nil {
                    assertStatus(index.insert(ring, e, at: slot), COBS_OK)
                    occupied[slot] = e
                    model[e, default: []].insert(slot)
                } else {
                    // A recorded pair cannot be inserted again.
                    assertStatus(index.insert(ring, occupied[slot]!, at: slot), COBS_INVALID_ARGUMENT)
                }
            case 4..<7:
                guard let pick = occupied.randomElement(using: &rng) else { break }
                let (slot, owner) = (pick.key, pick.value)
                if Bool.random(using: &rng) { ring[slot] = element(999) }   // overwritten first
                assertStatus(index.remove(ring, owner, at: slot), COBS_OK)
                occupied[slot] = nil
                model[owner]!.remove(slot)
            case 7..<9:
                guard let pick = occupied.randomElement(using: &rng) else { break }
                let (from, owner) = (pick.key, pick.value)
                let to = UInt32.random(in: 0...ring.mask, using: &rng)
                guard occupied[to] == nil else { break }
                assertStatus(index.move(ring, owner, from: from, to: to), COBS_OK)
                ring[from] = element(998)
                occupied[from] = nil
                occupied[to] = owner
                model[owner]!.remove(from)
                model[owner]!.insert(to)
            default:
                expectEqual(Set(index.slots(ring, e)), model[e] ?? [], "step \(step)")
            }
            if step % 500 == 0 { index.assertInvariants(ring) }
        }
        #expect(index.count == occupied.count)
        for i in 0..<64 { #expect(Set(index.slots(ring, element(i))) == (model[element(i)] ?? [])) }
        index.assertInvariants(ring)
    }

    // MARK: Many copies of one element

    @Test func twentyThousandCopiesOfOneElementShareOneBucketAndStayO1PerCopy() {
        var rng = SplitMix64(seed: 0xD0B1_E5)
        let ring = TestRing(mask: (1 << 15) - 1), index = TestPositions()
        let repeated = element(7)
        var slots: [UInt32] = []
        // Copies interleaved with 1,000 distinct elements, which must not queue behind them.
        for slot in 0..<21_000 as Range<UInt32> {
            if slot % 21 == 0 {
                assertStatus(index.insert(ring, element(1_000 + Int(slot)), at: slot), COBS_OK)
            } else {
                assertStatus(index.insert(ring, repeated, at: slot), COBS_OK)
                slots.append(slot)
            }
        }
        #expect(index.count == 21_000, "every copy is an entry")
        #expect(cobs_positions_max_displacement(index.raw, ring.pointer, ring.mask) < 32, "one bucket for all the copies: no cluster for the others to walk")
        #expect(index.lookup(ring, repeated, capacity: 32_768).slots == slots)
        assertStatus(index.insert(ring, repeated, at: slots[123]), COBS_INVALID_ARGUMENT, "a copy is recorded once")
        index.assertInvariants(ring)
        // Move some copies into free slots, remove most in random order, down to one and to none.
        for k in 0..<500 {
            let to = UInt32(21_000 + k)
            assertStatus(index.move(ring, repeated, from: slots[k], to: to), COBS_OK)
            ring[slots[k]] = 0
            slots[k] = to
        }
        slots.shuffle(using: &rng)
        while slots.count > 1 {
            let slot = slots.removeLast()
            assertStatus(index.remove(ring, repeated, at: slot), COBS_OK)
            ring[slot] = 0
            if slots.count % 4_999 == 0 { index.assertInvariants(ring) }
        }
        #expect(index.lookup(ring, repeated).slots == slots, "one copy left: a plain entry again")
        assertStatus(index.remove(ring, repeated, at: slots[0]), COBS_OK)
        #expect(index.lookup(ring, repeated).count == 0)
        #expect(index.count == 1_000)
        index.assertInvariants(ring)
    }

    @Test func noMemoryForADuplicateRecordLeavesTheIndexAsItWas() {
        let allocator = CountingAllocator()
        let ring = TestRing(mask: 63)
        let index = TestPositions(allocator: allocator.cAllocator)
        index.insert(ring, element(1), at: 1)
        allocator.failing = true
        assertStatus(index.insert(ring, element(1), at: 2), COBS_NO_MEMORY)   // a second copy needs a record
        ring[2] = 0
        #expect(index.count == 1)
        #expect(index.slots(ring, element(1)) == [1])
        index.assertInvariants(ring)
        allocator.failing = false
        assertStatus(index.insert(ring, element(1), at: 2), COBS_OK)
        #expect(index.slots(ring, element(1)) == [1, 2])
        index.assertInvariants(ring)
    }

    @Test func ringsAboveTwoToTheThirtyFirstSlotsAreRefused() {
        let ring = TestRing(mask: 15), index = TestPositions()
        // The mask is only checked, never used to read: a 16-slot ring stands in for a 2^32 one.
        assertStatus(cobs_positions_insert(index.raw, ring.pointer, UInt32.max, element(1), 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, UInt32.max, 0, 0), COBS_INVALID_ARGUMENT)
        #expect(index.count == 0)
    }

    // MARK: At 100,000 elements

    @Test func maxDisplacementIsBoundedForOneHundredThousandSequentialAlignedAddresses() {
        let ring = TestRing(mask: (1 << 17) - 1), index = TestPositions()
        for i in 0..<100_000 { index.insert(ring, element(i), at: UInt32(i)) }
        let longest = cobs_positions_max_displacement(index.raw, ring.pointer, ring.mask)
        // At load 100,000 / 131,072 = 0.76, a uniform hash gives a longest probe in the low
        // hundreds at most; sequential addresses must do no worse.
        #expect(longest < 300, "longest displacement \(longest)")
        #expect(longest > 0)
        assertStatus(cobs_positions_check_invariants(index.raw, ring.pointer, ring.mask), COBS_OK)
    }

    @Test func bytesPerElementAtOneHundredThousandEntriesIsAtMostSixteen() {
        let ring = TestRing(mask: (1 << 17) - 1), index = TestPositions()
        for i in 0..<100_000 { index.insert(ring, element(i), at: UInt32(i)) }
        let perElement = Double(index.bytes) / 100_000
        #expect(perElement <= 16, "\(perElement) bytes per element")
        #expect(perElement <= 7, "expected 131,072 buckets of 5 bytes: \(perElement)")
        // Worst case, just after a growth: 5 bytes / (7/16) = 11.4 bytes per element.
        let justGrown = TestPositions()
        for i in 0..<(1 << 16) * 7 / 8 + 1 { justGrown.insert(ring, element(i), at: UInt32(i)) }
        #expect(Double(justGrown.bytes) / Double((1 << 16) * 7 / 8 + 1) <= 16)
    }

    // MARK: Every status code

    /// The "already recorded" check rides on the insertion's own probe walk (positions.c,
    /// add_pair): a pair already in a duplicated element's record is refused too, and the index
    /// stays as it was.
    @Test func aPairAlreadyInARecordIsRefused() {
        let ring = TestRing(mask: 15), index = TestPositions()
        assertStatus(index.insert(ring, element(1), at: 4), COBS_OK)
        assertStatus(index.insert(ring, element(1), at: 9), COBS_OK)   // a second copy: the element gets a record
        assertStatus(index.insert(ring, element(2), at: 5), COBS_OK)
        assertStatus(cobs_positions_insert(index.raw, ring.pointer, 15, element(1), 9), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_insert(index.raw, ring.pointer, 15, element(1), 4), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_insert(index.raw, ring.pointer, 15, element(2), 5), COBS_INVALID_ARGUMENT)
        #expect(cobs_positions_count(index.raw) == 3)
        assertStatus(cobs_positions_check_invariants(index.raw, ring.pointer, 15), COBS_OK)
        assertStatus(index.insert(ring, element(1), at: 12), COBS_OK)   // a third copy still joins the record
        #expect(cobs_positions_count(index.raw) == 4)
        assertStatus(cobs_positions_check_invariants(index.raw, ring.pointer, 15), COBS_OK)
    }

    @Test func invalidArgumentsAreRejectedAndChangeNothing() {
        let ring = TestRing(mask: 15), index = TestPositions()
        index.insert(ring, element(1), at: 4)
        let r = ring.pointer
        var out = [UInt32](repeating: 0, count: 4)
        var count = 0
        // insert
        assertStatus(cobs_positions_insert(nil, r, 15, element(1), 4), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_insert(index.raw, nil, 15, element(1), 5), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_insert(index.raw, r, 15, 0, 5), COBS_INVALID_ARGUMENT)            // element 0
        assertStatus(cobs_positions_insert(index.raw, r, 15, element(1), 16), COBS_INVALID_ARGUMENT)  // slot > mask
        assertStatus(cobs_positions_insert(index.raw, r, 14, element(1), 5), COBS_INVALID_ARGUMENT)   // mask + 1 not 2^k
        assertStatus(cobs_positions_insert(index.raw, r, 15, element(2), 5), COBS_INVALID_ARGUMENT)   // ring[5] != element
        assertStatus(cobs_positions_insert(index.raw, r, 15, element(1), 4), COBS_INVALID_ARGUMENT)   // already recorded
        assertStatus(cobs_positions_insert(index.raw, r, 1, element(1), 1), COBS_INVALID_ARGUMENT)    // ring smaller than slot 4
        // remove / move
        assertStatus(cobs_positions_remove(nil, r, 15, element(1), 4), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_remove(index.raw, nil, 15, element(1), 4), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_remove(index.raw, r, 15, 0, 4), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_remove(index.raw, r, 15, element(1), 16), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_remove(index.raw, r, 3, element(1), 2), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_move(nil, 15, element(1), 4, 5), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_move(index.raw, 15, 0, 4, 5), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_move(index.raw, 15, element(1), 4, 16), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_move(index.raw, 15, element(1), 16, 4), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_move(index.raw, 12, element(1), 4, 5), COBS_INVALID_ARGUMENT)
        // lookup
        assertStatus(cobs_positions_lookup(nil, r, 15, element(1), &out, 4, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_lookup(index.raw, nil, 15, element(1), &out, 4, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_lookup(index.raw, r, 15, 0, &out, 4, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_lookup(index.raw, r, 15, element(1), nil, 4, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_lookup(index.raw, r, 15, element(1), &out, 4, nil), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_lookup(index.raw, r, 3, element(1), &out, 4, &count), COBS_INVALID_ARGUMENT)
        // rebuild
        assertStatus(cobs_positions_rebuild(nil, r, 15, 0, 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_rebuild(index.raw, nil, 15, 0, 0), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_rebuild(index.raw, r, 15, 16, 0), COBS_INVALID_ARGUMENT)   // head > mask
        assertStatus(cobs_positions_rebuild(index.raw, r, 15, 0, 17), COBS_INVALID_ARGUMENT)   // count > ring
        assertStatus(cobs_positions_rebuild(index.raw, r, 6, 0, 1), COBS_INVALID_ARGUMENT)     // bad mask
        assertStatus(cobs_positions_rebuild(index.raw, r, 15, 3, 2), COBS_INVALID_ARGUMENT)    // ring[3] == 0
        // create
        var created: OpaquePointer? = OpaquePointer(bitPattern: 0x10)
        assertStatus(cobs_positions_create(Int(UInt32.max) + 2, 1, nil, &created), COBS_INVALID_ARGUMENT)
        #expect(created == nil)
        // check_invariants
        assertStatus(cobs_positions_check_invariants(nil, r, 15), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_check_invariants(index.raw, nil, 15), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_positions_check_invariants(index.raw, r, 10), COBS_INVALID_ARGUMENT)
        #expect(cobs_positions_max_displacement(nil, r, 15) == 0)
        // Nothing changed.
        #expect(index.count == 1)
        #expect(index.slots(ring, element(1)) == [4])
        index.assertInvariants(ring)
    }

    @Test func absentEntriesAreNotFound() {
        let ring = TestRing(mask: 15), index = TestPositions()
        index.insert(ring, element(1), at: 4)
        assertStatus(index.remove(ring, element(1), at: 5), COBS_NOT_FOUND)
        assertStatus(index.remove(ring, element(2), at: 6), COBS_NOT_FOUND)
        assertStatus(cobs_positions_move(index.raw, 15, element(2), 4, 5), COBS_NOT_FOUND)
        #expect(index.lookup(ring, element(3)).count == 0)
        #expect(index.count == 1)
    }

    @Test func lookupIntoATooSmallBufferWritesWhatFitsAndTheFullCount() {
        let ring = TestRing(mask: 15), index = TestPositions()
        for slot: UInt32 in [1, 2, 3, 4, 5] { index.insert(ring, element(1), at: slot) }
        let (status, count, slots) = index.lookup(ring, element(1), capacity: 2)
        assertStatus(status, COBS_BUFFER_TOO_SMALL)
        #expect(count == 5)
        #expect(slots.count == 2)
        #expect(Set(slots).isSubset(of: [1, 2, 3, 4, 5]))
        var n = 0
        assertStatus(cobs_positions_lookup(index.raw, ring.pointer, ring.mask, element(1), nil, 0, &n), COBS_BUFFER_TOO_SMALL)
        #expect(n == 5)
    }

    @Test func noMemoryLeavesTheIndexAsItWas() {
        let allocator = CountingAllocator()
        let ring = TestRing(mask: 63)
        let index = TestPositions(allocator: allocator.cAllocator)   // 16 buckets: 14 entries fit
        for i in 0..<14 { index.insert(ring, element(i), at: UInt32(i)) }
        allocator.failing = true
        assertStatus(index.insert(ring, element(14), at: 14), COBS_NO_MEMORY)
        for i in 0..<20 { ring[UInt32(i)] = element(i) }
        assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, 0, 20), COBS_NO_MEMORY)
        for i in 14..<20 { ring[UInt32(i)] = 0 }
        #expect(index.count == 14)
        #expect(index.slots(ring, element(3)) == [3])
        index.assertInvariants(ring)
        allocator.failing = false
        assertStatus(index.insert(ring, element(14), at: 14), COBS_OK)
        index.assertInvariants(ring)

        var created: OpaquePointer? = OpaquePointer(bitPattern: 0x10)
        var alloc = allocator.cAllocator
        allocator.failing = true
        assertStatus(cobs_positions_create(0, 1, &alloc, &created), COBS_NO_MEMORY)
        #expect(created == nil)
        allocator.failing = false
        allocator.failAfter = 1
        assertStatus(cobs_positions_create(0, 1, &alloc, &created), COBS_NO_MEMORY)
        #expect(created == nil)
    }

    @Test func checkInvariantsReportsARingThatDisagreesWithTheIndex() {
        let ring = TestRing(mask: 15), index = TestPositions()
        index.insert(ring, element(1), at: 4)
        index.assertInvariants(ring)
        ring[4] = element(2)   // the ring changed behind the index's back
        // (The checker prints what is wrong to stderr.)
        assertStatus(cobs_positions_check_invariants(index.raw, ring.pointer, ring.mask), COBS_CORRUPT)
        ring[4] = 0
        assertStatus(cobs_positions_check_invariants(index.raw, ring.pointer, ring.mask), COBS_CORRUPT)
        ring[4] = element(1)
        assertStatus(cobs_positions_check_invariants(index.raw, ring.pointer, ring.mask), COBS_OK)
        let smaller = TestRing(mask: 3)
        assertStatus(cobs_positions_check_invariants(index.raw, smaller.pointer, smaller.mask), COBS_CORRUPT)
    }

    @Test func growthRefusesARingThatBreaksTheRingInvariant() {
        let ring = TestRing(mask: 31), index = TestPositions()
        for i in 0..<14 { index.insert(ring, element(i), at: UInt32(i)) }
        // The next insertion grows the table, which rehashes by reading the ring. Break one
        // entry's slot: growth notices the fingerprint mismatch and changes nothing.
        let saved = ring[5]
        ring[5] = element(500)
        assertStatus(index.insert(ring, element(20), at: 20), COBS_INVALID_ARGUMENT)
        ring[5] = saved
        #expect(index.count == 14)
        index.assertInvariants(ring)
    }

    @Test func seedZeroPicksARandomSeedAndStillWorks() {
        let ring = TestRing(mask: 15), index = TestPositions(seed: 0)
        index.insert(ring, element(1), at: 1)
        #expect(index.slots(ring, element(1)) == [1])
    }

    @Test func theIndexFreesEverythingItAllocated() {
        let allocator = CountingAllocator()
        do {
            let ring = TestRing(mask: 1023)
            let index = TestPositions(allocator: allocator.cAllocator)
            for i in 0..<1000 { index.insert(ring, element(i), at: UInt32(i)) }
            assertStatus(cobs_positions_rebuild(index.raw, ring.pointer, ring.mask, 0, 10), COBS_OK)
        }
        #expect(allocator.liveBytes == 0)
    }
}
