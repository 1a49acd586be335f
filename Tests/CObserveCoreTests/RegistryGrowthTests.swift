// Load-factor boundaries (grow x2 past 3/4, halve below 1/8, never below 16), capacity hints,
// and allocation failure: a failed growth reports COBS_NO_MEMORY and leaves the table exactly as
// it was; a failed shrink is silent.

import CObserveCore
import SeededRandom
import Foundation
import Testing

@Suite struct RegistryGrowthTests {
    /// Distinct 16-byte-aligned objects, one entry each.
    private func key(_ i: Int) -> cobs_key { makeKey(0x10_0000 + UInt(i) * 16, UInt32(i % 5), 0) }

    @Test func theThirteenthEntryDoublesASixteenBucketTable() {
        let reg = TestRegistry()
        for i in 0..<12 { assertStatus(reg.insert(key(i), cobs_slot(i)), COBS_OK) }
        #expect(reg.capacity == 16, "12 entries is exactly 3/4 of 16")
        assertStatus(reg.insert(key(12), 12), COBS_OK)
        #expect(reg.capacity == 32)
        for i in 0..<13 { #expect(reg.find(key(i)) == cobs_slot(i)) }
        reg.assertInvariants()
    }

    @Test func capacityDoublesEachTimeTheLoadWouldPassThreeQuarters() {
        let reg = TestRegistry()
        var capacities: [Int] = [reg.capacity]
        var overloaded: [Int] = []   // counts at which the load was above 3/4
        for i in 0..<1600 {
            reg.insert(key(i), cobs_slot(i))
            if reg.capacity != capacities.last! {
                capacities.append(reg.capacity)
                #expect(reg.count == capacities[capacities.count - 2] * 3 / 4 + 1)
            }
            if reg.count * 4 > reg.capacity * 3 { overloaded.append(reg.count) }
        }
        #expect(overloaded.isEmpty, "load above 3/4 at counts \(overloaded)")
        #expect(capacities == [16, 32, 64, 128, 256, 512, 1024, 2048, 4096])
    }

    @Test func growthKeepsEveryEntryFindable() {
        let reg = TestRegistry()
        for i in 0..<3000 { reg.insert(key(i), cobs_slot(i)) }
        #expect(reg.count == 3000)
        let misplaced = (0..<3000).filter { reg.find(key($0)) != cobs_slot($0) }
        #expect(misplaced.isEmpty, "entries not found with their slot: \(misplaced)")
        reg.assertInvariants()
    }

    @Test func aCapacityHintIsHonouredWithoutGrowing() {
        let reg = TestRegistry(capacityHint: 1000)
        let initial = reg.capacity
        #expect(initial == 2048, "the smallest power of two whose 3/4 holds 1000")
        for i in 0..<1000 { reg.insert(key(i), cobs_slot(i)) }
        #expect(reg.capacity == initial)
        reg.insert(key(1000), 1000)
        #expect(reg.capacity == initial, "1001 still fits under 1536")
    }

    @Test func removeObjectThatRemovesNothingKeepsTheCapacityHint() {
        let reg = TestRegistry(capacityHint: 1000)
        reg.insert(key(0), 0)
        #expect(reg.removeObject(0xDEAD_0000).count == 0)
        #expect(reg.remove(key(1)) == nil)
        #expect(reg.capacity == 2048, "calls that removed nothing did not shrink the table")
        #expect(reg.remove(key(0)) == 0)
        #expect(reg.capacity == 16, "the first real removal applies the shrink policy")
    }

    @Test func removingBelowOneEighthHalvesTheTableButNeverBelowSixteen() {
        let reg = TestRegistry()
        for i in 0..<1000 { reg.insert(key(i), cobs_slot(i)) }
        #expect(reg.capacity == 2048)
        var previous = reg.capacity
        var wrongSlots: [Int] = [], underloaded: [(count: Int, capacity: Int)] = []
        for i in (0..<1000).reversed() {
            if reg.remove(key(i)) != cobs_slot(i) { wrongSlots.append(i) }
            let capacity = reg.capacity
            if capacity != previous {
                #expect(capacity == previous / 2, "shrinks one halving at a time here")
                #expect(reg.count < previous / 8)
                previous = capacity
            }
            if reg.count < capacity / 8 - (capacity == 16 ? 2 : 0) { underloaded.append((reg.count, capacity)) }
        }
        #expect(wrongSlots.isEmpty, "remove returned a wrong slot for \(wrongSlots)")
        #expect(underloaded.isEmpty, "below 1/8 without shrinking: \(underloaded)")
        #expect(reg.capacity == 16)
        #expect(reg.count == 0)
        reg.assertInvariants()
    }

    @Test func removeObjectShrinksAnEmptiedTableInOneStep() {
        let reg = TestRegistry()
        for k: UInt32 in 0..<600 { reg.insert(makeKey(0x5000, k, 0), k) }
        reg.insert(makeKey(0x6000, 0, 0), 1)
        #expect(reg.capacity == 1024)
        let result = reg.removeObject(0x5000)
        assertStatus(result.status, COBS_OK)
        #expect(result.count == 600)
        #expect(reg.capacity == 16)
        #expect(reg.find(makeKey(0x6000, 0, 0)) == 1)
        reg.assertInvariants()
    }

    @Test func capacityFollowsTheLiveCountUnderChurnInsteadOfTheHighWaterMark() {
        let reg = TestRegistry()
        for i in 0..<4000 { reg.insert(key(i), cobs_slot(i)) }
        #expect(reg.capacity == 8192)
        for i in 0..<3960 { reg.remove(key(i)) }  // 40 left
        #expect(reg.capacity <= 512)
        // Churn at ~40 live entries: the table stays small and does not oscillate.
        var rng = SplitMix64(seed: 7)
        var live = Set(3960..<4000)
        var next = 4000
        var capacities = Set<Int>()
        for _ in 0..<4000 {
            if Bool.random(using: &rng), let victim = live.randomElement(using: &rng) {
                reg.remove(key(victim))
                live.remove(victim)
            } else {
                reg.insert(key(next), cobs_slot(next))
                live.insert(next)
                next += 1
            }
            capacities.insert(reg.capacity)
        }
        #expect(reg.count == live.count)
        #expect(capacities.max()! <= max(64, live.count * 8))
        for i in live { #expect(reg.find(key(i)) == cobs_slot(i)) }
        reg.assertInvariants()
    }

    // MARK: Allocation failure

    @Test func aFailedGrowthReportsNoMemoryAndLeavesTheTableUnchanged() {
        let allocator = CountingAllocator()
        let reg = TestRegistry(allocator: allocator)
        for i in 0..<12 { reg.insert(key(i), cobs_slot(i)) }
        let before = reg.stats
        let entriesBefore = (0..<12).map { reg.find(key($0)) }

        allocator.failing = true
        assertStatus(reg.insert(key(12), 12), COBS_NO_MEMORY)
        #expect(allocator.failures == 1, "the growth was attempted")
        let after = reg.stats
        #expect(after.count == before.count)
        #expect(after.capacity == before.capacity)
        #expect(after.total_displacement == before.total_displacement)
        #expect((0..<12).map { reg.find(key($0)) } == entriesBefore)
        #expect(reg.find(key(12)) == nil)
        reg.assertInvariants()

        // A key that is present is still reported as present: no allocation is needed for that.
        var existing: cobs_slot = 0
        assertStatus(cobs_registry_insert(reg.raw, key(3), 99, &existing), COBS_EXISTS)
        #expect(existing == 3)

        allocator.failing = false
        assertStatus(reg.insert(key(12), 12), COBS_OK)
        #expect(reg.capacity == 32)
        #expect(reg.find(key(12)) == 12)
    }

    @Test func aFailedGrowthOfALargeTableKeepsEveryEntry() {
        let allocator = CountingAllocator()
        let reg = TestRegistry(allocator: allocator)
        for i in 0..<1536 { reg.insert(key(i), cobs_slot(i)) }  // exactly 3/4 of 2048
        #expect(reg.capacity == 2048)
        allocator.failing = true
        for i in 1536..<1540 { assertStatus(reg.insert(key(i), cobs_slot(i)), COBS_NO_MEMORY) }
        #expect(reg.count == 1536)
        let misplaced = (0..<1536).filter { reg.find(key($0)) != cobs_slot($0) }
        #expect(misplaced.isEmpty, "entries not found with their slot: \(misplaced)")
        // Removal and lookup need no memory and keep working.
        #expect(reg.remove(key(0)) == 0)
        assertStatus(reg.insert(key(1536), 1536), COBS_OK, "room freed by the removal")
        reg.assertInvariants()
    }

    @Test func aFailedShrinkIsSilentAndTheTableStaysValid() {
        let allocator = CountingAllocator()
        let reg = TestRegistry(allocator: allocator)
        for i in 0..<500 { reg.insert(key(i), cobs_slot(i)) }
        #expect(reg.capacity == 1024)
        allocator.failing = true
        for i in 0..<495 { #expect(reg.remove(key(i)) == cobs_slot(i)) }
        #expect(allocator.failures > 0, "shrinks were attempted")
        #expect(reg.capacity == 1024, "every shrink failed, so the table kept its size")
        #expect(reg.count == 5)
        for i in 495..<500 { #expect(reg.find(key(i)) == cobs_slot(i)) }
        reg.assertInvariants()
        allocator.failing = false
        reg.remove(key(495))
        #expect(reg.capacity == 32, "the next removal halves until 4 entries >= capacity / 8")
        reg.assertInvariants()
    }

    @Test func createReportsNoMemoryAndLeaksNothingWhenEitherAllocationFails() {
        for succeedingAllocations in 0..<2 {
            let allocator = CountingAllocator()
            allocator.failAfter = succeedingAllocations
            var alloc = allocator.cAllocator
            var out: OpaquePointer? = OpaquePointer(bitPattern: 0x1)
            assertStatus(cobs_registry_create_with(100, 1, &alloc, &out), COBS_NO_MEMORY)
            #expect(out == nil)
            #expect(allocator.liveBytes == 0)
            #expect(allocator.allocations == allocator.deallocations)
        }
    }

    @Test func everyByteAllocatedIsFreedWithTheSizeItWasAllocatedWith() {
        let allocator = CountingAllocator()
        do {
            let reg = TestRegistry(allocator: allocator)
            for i in 0..<2000 { reg.insert(key(i), cobs_slot(i)) }
            for i in 0..<1990 { reg.remove(key(i)) }
            #expect(allocator.allocations > 10, "grew and shrank several times")
            #expect(allocator.liveBytes > 0)
        }
        #expect(allocator.liveBytes == 0, "destroy returned everything, sizes matched")
        #expect(allocator.allocations == allocator.deallocations)
    }
}
