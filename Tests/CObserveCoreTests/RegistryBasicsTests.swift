// Insert / find / remove / lookup / object_entries / remove_object, every status code, and the
// argument validation of every entry point, driven through the C API.

import CObserveCore
import Foundation
import Testing

@Suite struct RegistryBasicsTests {
    // MARK: Insert, find, remove

    @Test func insertedKeyIsFoundWithItsSlot() {
        let reg = TestRegistry()
        assertStatus(reg.insert(makeKey(0x1000, 7, 3), 42), COBS_OK)
        #expect(reg.find(makeKey(0x1000, 7, 3)) == 42)
        #expect(reg.count == 1)
        reg.assertInvariants()
    }

    @Test func findOfAbsentKeyReportsNotFoundAndLeavesOutUntouched() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 7, 3), 42)
        for absent in [makeKey(0x2000, 7, 3), makeKey(0x1000, 8, 3), makeKey(0x1000, 7, 4)] {
            var slot: cobs_slot = 99
            assertStatus(cobs_registry_find(reg.raw, absent, &slot), COBS_NOT_FOUND)
            #expect(slot == 99)
        }
    }

    @Test func insertingAnExistingKeyReportsExistsAndKeepsTheOriginalSlot() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        var existing: cobs_slot = 0
        assertStatus(cobs_registry_insert(reg.raw, makeKey(0x1000, 1, 0), 11, &existing), COBS_EXISTS)
        #expect(existing == 10)
        assertStatus(cobs_registry_insert(reg.raw, makeKey(0x1000, 1, 0), 12, nil), COBS_EXISTS)
        #expect(reg.find(makeKey(0x1000, 1, 0)) == 10)
        #expect(reg.count == 1)
    }

    @Test func sameObjectAndKeyWithDifferentContextsAreDistinctEntries() {
        let reg = TestRegistry()
        for context: UInt in 0..<5 {
            assertStatus(reg.insert(makeKey(0x1000, 1, context), cobs_slot(100 + context)), COBS_OK)
        }
        #expect(reg.count == 5)
        for context: UInt in 0..<5 {
            #expect(reg.find(makeKey(0x1000, 1, context)) == cobs_slot(100 + context))
        }
        #expect(reg.remove(makeKey(0x1000, 1, 2)) == 102)
        #expect(reg.find(makeKey(0x1000, 1, 2)) == nil)
        #expect(reg.find(makeKey(0x1000, 1, 3)) == 103)
        reg.assertInvariants()
    }

    @Test func removeReturnsTheSlotAndForgetsTheKey() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        reg.insert(makeKey(0x1000, 2, 0), 20)
        var removed: cobs_slot = 0
        assertStatus(cobs_registry_remove(reg.raw, makeKey(0x1000, 1, 0), &removed), COBS_OK)
        #expect(removed == 10)
        #expect(reg.find(makeKey(0x1000, 1, 0)) == nil)
        #expect(reg.find(makeKey(0x1000, 2, 0)) == 20)
        #expect(reg.count == 1)
        assertStatus(cobs_registry_remove(reg.raw, makeKey(0x1000, 2, 0), nil), COBS_OK)
        #expect(reg.count == 0)
    }

    @Test func removingAnAbsentKeyReportsNotFoundAndChangesNothing() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        var removed: cobs_slot = 77
        assertStatus(cobs_registry_remove(reg.raw, makeKey(0x1000, 1, 1), &removed), COBS_NOT_FOUND)
        #expect(removed == 77)
        #expect(reg.count == 1)
        #expect(reg.find(makeKey(0x1000, 1, 0)) == 10)
    }

    @Test func aKeyCanBeInsertedAgainAfterRemoval() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        reg.remove(makeKey(0x1000, 1, 0))
        assertStatus(reg.insert(makeKey(0x1000, 1, 0), 11), COBS_OK)
        #expect(reg.find(makeKey(0x1000, 1, 0)) == 11)
    }

    // MARK: Lookup across contexts

    @Test func lookupReturnsTheSlotsOfEveryContextOfThatObjectAndKeyOnly() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        reg.insert(makeKey(0x1000, 1, 0xAAAA), 11)
        reg.insert(makeKey(0x1000, 1, .max), 12)
        reg.insert(makeKey(0x1000, 2, 0), 20)  // other key
        reg.insert(makeKey(0x2000, 1, 0), 30)  // other object
        let result = reg.lookup(0x1000, 1)
        assertStatus(result.status, COBS_OK)
        #expect(result.count == 3)
        #expect(Set(result.slots) == [10, 11, 12])
        #expect(reg.lookup(0x1000, 2).slots == [20])
        #expect(reg.lookup(0x2000, 1).slots == [30])
    }

    @Test func lookupWithNoMatchesReportsZeroAndOK() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        let missingKey = reg.lookup(0x1000, 9)
        assertStatus(missingKey.status, COBS_OK)
        #expect(missingKey.count == 0)
        let missingObject = reg.lookup(0x3000, 1)
        assertStatus(missingObject.status, COBS_OK)
        #expect(missingObject.count == 0)
    }

    @Test func lookupIntoAShortBufferWritesAPrefixAndReportsTheFullCount() {
        let reg = TestRegistry()
        for context: UInt in 0..<6 { reg.insert(makeKey(0x1000, 1, context), cobs_slot(context)) }
        let short = reg.lookup(0x1000, 1, capacity: 4)
        assertStatus(short.status, COBS_BUFFER_TOO_SMALL)
        #expect(short.count == 6)
        #expect(short.slots.count == 4)
        #expect(Set(short.slots).isSubset(of: Set(0..<6)))
        #expect(Set(short.slots).count == 4, "the prefix holds distinct matches")
        let exact = reg.lookup(0x1000, 1, capacity: 6)
        assertStatus(exact.status, COBS_OK)
        #expect(Set(exact.slots) == Set(0..<6))
    }

    @Test func lookupWithZeroCapacityAndNullBufferOnlyCounts() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        reg.insert(makeKey(0x1000, 1, 1), 11)
        var count = 0
        assertStatus(cobs_registry_lookup(reg.raw, 0x1000, 1, nil, 0, &count), COBS_BUFFER_TOO_SMALL)
        #expect(count == 2)
        assertStatus(cobs_registry_lookup(reg.raw, 0x1000, 5, nil, 0, &count), COBS_OK)
        #expect(count == 0)
    }

    // MARK: Object entries

    @Test func objectEntriesListsEveryKeyAndSlotOfTheObjectAndNothingElse() {
        let reg = TestRegistry()
        var expected: [ModelKey: cobs_slot] = [:]
        for key: UInt32 in 0..<4 {
            for context: UInt in 0..<3 {
                let k = ModelKey(object: 0x1000, key: key, context: context)
                expected[k] = cobs_slot(key * 10) + cobs_slot(context)
                reg.insert(k.cKey, expected[k]!)
            }
        }
        reg.insert(makeKey(0x2000, 0, 0), 999)
        let result = reg.objectEntries(0x1000)
        assertStatus(result.status, COBS_OK)
        #expect(result.count == 12)
        var seen: [ModelKey: cobs_slot] = [:]
        for (k, slot) in zip(result.keys, result.slots) {
            #expect(k.reserved_ == 0)
            seen[ModelKey(object: k.object, key: k.key, context: k.context)] = slot
        }
        #expect(seen == expected)
    }

    @Test func objectEntriesAcceptsKeysOnlySlotsOnlyOrCountOnly() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        reg.insert(makeKey(0x1000, 2, 0), 20)
        var keys = [cobs_key](repeating: cobs_key(), count: 4)
        var slots = [cobs_slot](repeating: 0, count: 4)
        var count = 0
        assertStatus(cobs_registry_object_entries(reg.raw, 0x1000, &keys, nil, 4, &count), COBS_OK)
        #expect(count == 2)
        #expect(Set(keys.prefix(2).map(\.key)) == [1, 2])
        assertStatus(cobs_registry_object_entries(reg.raw, 0x1000, nil, &slots, 4, &count), COBS_OK)
        #expect(Set(slots.prefix(2)) == [10, 20])
        assertStatus(
            cobs_registry_object_entries(reg.raw, 0x1000, nil, nil, 0, &count), COBS_BUFFER_TOO_SMALL)
        #expect(count == 2)
        assertStatus(cobs_registry_object_entries(reg.raw, 0x5000, nil, nil, 0, &count), COBS_OK)
        #expect(count == 0)
    }

    @Test func objectEntriesIntoAShortBufferReportsTheFullCount() {
        let reg = TestRegistry()
        for key: UInt32 in 0..<5 { reg.insert(makeKey(0x1000, key, 0), key) }
        let result = reg.objectEntries(0x1000, capacity: 3)
        assertStatus(result.status, COBS_BUFFER_TOO_SMALL)
        #expect(result.count == 5)
        #expect(result.slots.count == 3)
        for (k, slot) in zip(result.keys, result.slots) { #expect(k.key == slot) }
    }

    // MARK: Remove object

    @Test func removeObjectRemovesEveryEntryOfThatObjectAndReturnsTheirSlots() {
        let reg = TestRegistry()
        for key: UInt32 in 0..<3 {
            for context: UInt in 0..<2 { reg.insert(makeKey(0x1000, key, context), key * 2 + cobs_slot(context)) }
        }
        reg.insert(makeKey(0x2000, 0, 0), 100)
        reg.insert(makeKey(0x1010, 0, 0), 101)
        let result = reg.removeObject(0x1000)
        assertStatus(result.status, COBS_OK)
        #expect(result.count == 6)
        #expect(Set(result.slots) == Set(0..<6))
        #expect(reg.count == 2)
        #expect(reg.objectEntries(0x1000).count == 0)
        #expect(reg.find(makeKey(0x2000, 0, 0)) == 100)
        #expect(reg.find(makeKey(0x1010, 0, 0)) == 101)
        reg.assertInvariants()
    }

    @Test func removeObjectIntoAShortBufferRemovesNothingAndReportsTheCountNeeded() {
        let reg = TestRegistry()
        for key: UInt32 in 0..<5 { reg.insert(makeKey(0x1000, key, 0), key) }
        let short = reg.removeObject(0x1000, capacity: 4)
        assertStatus(short.status, COBS_BUFFER_TOO_SMALL)
        #expect(short.count == 5)
        #expect(reg.count == 5)
        for key: UInt32 in 0..<5 { #expect(reg.find(makeKey(0x1000, key, 0)) == key) }
        var count = 0
        assertStatus(cobs_registry_remove_object(reg.raw, 0x1000, nil, 0, &count), COBS_BUFFER_TOO_SMALL)
        #expect(count == 5)
        #expect(reg.count == 5)
        reg.assertInvariants()
    }

    @Test func removeObjectOfAnObjectWithNoEntriesIsOKWithCountZero() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        var count = 12345
        assertStatus(cobs_registry_remove_object(reg.raw, 0x2000, nil, 0, &count), COBS_OK)
        #expect(count == 0)
        #expect(reg.count == 1)
    }

    // MARK: Argument validation

    @Test func everyEntryPointRejectsANullRegistry() {
        var slot: cobs_slot = 0
        var count = 0
        var key = cobs_key()
        var stats = cobs_registry_stats()
        let k = makeKey(0x1000, 1, 0)
        assertStatus(cobs_registry_insert(nil, k, 1, &slot), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_find(nil, k, &slot), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_remove(nil, k, &slot), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_lookup(nil, 0x1000, 1, &slot, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(
            cobs_registry_object_entries(nil, 0x1000, &key, &slot, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_remove_object(nil, 0x1000, &slot, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_stats_get(nil, &stats), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_check_invariants(nil), COBS_INVALID_ARGUMENT)
        #expect(cobs_registry_count(nil) == 0)
        cobs_registry_destroy(nil)  // a no-op, not a crash
    }

    @Test func everyEntryPointRejectsObjectZeroWithoutChangingTheTable() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        var slot: cobs_slot = 0
        var count = 0
        var key = cobs_key()
        let zero = makeKey(0, 1, 0)
        assertStatus(cobs_registry_insert(reg.raw, zero, 1, nil), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_find(reg.raw, zero, &slot), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_remove(reg.raw, zero, nil), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_lookup(reg.raw, 0, 1, &slot, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(
            cobs_registry_object_entries(reg.raw, 0, &key, &slot, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_remove_object(reg.raw, 0, &slot, 1, &count), COBS_INVALID_ARGUMENT)
        #expect(reg.count == 1)
        reg.assertInvariants()
    }

    @Test func keyedEntryPointsRejectANonZeroReservedField() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        var reserved = makeKey(0x1000, 1, 0)
        reserved.reserved_ = 1
        var slot: cobs_slot = 0
        assertStatus(cobs_registry_insert(reg.raw, reserved, 1, nil), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_find(reg.raw, reserved, &slot), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_remove(reg.raw, reserved, nil), COBS_INVALID_ARGUMENT)
        #expect(reg.count == 1)
        #expect(reg.find(makeKey(0x1000, 1, 0)) == 10)
    }

    @Test func nullOutputPointersAreRejectedWhereAResultMustBeWritten() {
        let reg = TestRegistry()
        reg.insert(makeKey(0x1000, 1, 0), 10)
        var slot: cobs_slot = 0
        assertStatus(cobs_registry_find(reg.raw, makeKey(0x1000, 1, 0), nil), COBS_INVALID_ARGUMENT)
        // count is required
        assertStatus(cobs_registry_lookup(reg.raw, 0x1000, 1, &slot, 1, nil), COBS_INVALID_ARGUMENT)
        assertStatus(
            cobs_registry_object_entries(reg.raw, 0x1000, nil, &slot, 1, nil), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_remove_object(reg.raw, 0x1000, &slot, 1, nil), COBS_INVALID_ARGUMENT)
        // a NULL buffer with a non-zero capacity
        var count = 0
        assertStatus(cobs_registry_lookup(reg.raw, 0x1000, 1, nil, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(
            cobs_registry_object_entries(reg.raw, 0x1000, nil, nil, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_remove_object(reg.raw, 0x1000, nil, 1, &count), COBS_INVALID_ARGUMENT)
        assertStatus(cobs_registry_stats_get(reg.raw, nil), COBS_INVALID_ARGUMENT)
        #expect(reg.count == 1, "no rejected call removed anything")
    }

    @Test func anImpossibleCapacityHintIsAnInvalidArgumentAndYieldsNoRegistry() {
        var out: OpaquePointer? = OpaquePointer(bitPattern: 0x1)
        assertStatus(cobs_registry_create(Int.max, &out), COBS_INVALID_ARGUMENT)
        #expect(out == nil)
        out = OpaquePointer(bitPattern: 0x1)
        assertStatus(cobs_registry_create_with(Int.max, 1, nil, &out), COBS_INVALID_ARGUMENT)
        #expect(out == nil)
    }

    // MARK: Creation, statistics, names, dump

    @Test func createGivesAnEmptyValidRegistryWithTheMinimumCapacity() {
        var out: OpaquePointer?
        assertStatus(cobs_registry_create(0, &out), COBS_OK)
        guard let raw = out else { Issue.record("no registry"); return }
        defer { cobs_registry_destroy(raw) }
        var stats = cobs_registry_stats()
        assertStatus(cobs_registry_stats_get(raw, &stats), COBS_OK)
        #expect(stats.count == 0)
        #expect(stats.capacity == 16)
        #expect(stats.max_displacement == 0)
        assertStatus(cobs_registry_check_invariants(raw), COBS_OK)
    }

    @Test func statsReportCountCapacityAndDisplacements() {
        let reg = TestRegistry(seed: 0xFEED)
        for i: UInt in 1...10 { reg.insert(makeKey(i * 0x40, 0, 0), cobs_slot(i)) }
        let stats = reg.stats
        #expect(stats.count == 10)
        #expect(stats.capacity == 16)
        #expect(stats.max_displacement <= stats.total_displacement)
        #expect(stats.max_displacement < 10)
    }

    @Test func statusNamesAreDistinctAndNameTheirCode() {
        let all = [
            COBS_OK, COBS_EXISTS, COBS_NOT_FOUND, COBS_NO_MEMORY, COBS_INVALID_ARGUMENT,
            COBS_BUFFER_TOO_SMALL, COBS_CORRUPT,
        ]
        let names = all.map { String(cString: cobs_status_name($0)) }
        #expect(names == [
                "COBS_OK", "COBS_EXISTS", "COBS_NOT_FOUND", "COBS_NO_MEMORY", "COBS_INVALID_ARGUMENT",
                "COBS_BUFFER_TOO_SMALL", "COBS_CORRUPT",
            ])
        #expect(!String(cString: cobs_status_name(cobs_status(rawValue: 1234))).isEmpty)
    }

    @Test func dumpWritesAHeaderAndOneLinePerBucket() throws {
        let reg = TestRegistry(seed: 1)
        reg.insert(makeKey(0xABCD0, 3, 0x77), 5)
        let text = try dumpText { cobs_registry_dump(reg.raw, $0) }
        let lines = text.split(separator: "\n")
        #expect(lines.count == 1 + 16)
        #expect(lines[0].contains("count 1"), "\(String(lines[0]))")
        #expect(lines.filter { $0.contains("empty") }.count == 15)
        #expect(lines.filter { $0.contains("object 0xabcd0") && $0.contains("key 3") && $0.contains("slot 5") }
                .count == 1)
        let null = try dumpText { cobs_registry_dump(nil, $0) }
        #expect(null.contains("(null)"))
    }
}
