// Register/unregister churn, the workload the registry is built for: long random operation
// sequences checked against a Swift Dictionary model, and evidence that deletions leave nothing
// behind (backward shift, no tombstones): probe lengths after churn are those of a fresh table
// holding the same entries.

import CObserveCore
import SeededRandom
import Foundation
import Testing

@Suite struct RegistryChurnTests {
    /// 48 objects x 4 keys x 3 contexts = 576 possible keys. The objects mix consecutive
    /// 16-byte-aligned addresses with addresses that differ only in high bits.
    private static let objects: [UInt] =
        (0..<32).map { 0x7F00_0000_1000 + UInt($0) * 16 } + (1...16).map { 0x10 | (UInt($0) << 36) }

    private func randomKey(_ rng: inout SplitMix64) -> ModelKey {
        ModelKey(
            object: Self.objects.randomElement(using: &rng)!, key: UInt32.random(in: 0..<4, using: &rng),
            context: UInt.random(in: 0..<3, using: &rng))
    }

    @Test func oneHundredThousandRandomOperationsAgreeWithADictionaryModel() {
        let reg = TestRegistry(seed: 0xC0FFEE)
        var model: [ModelKey: cobs_slot] = [:]
        var rng = SplitMix64(seed: 42)
        var nextSlot: cobs_slot = 1
        var maxDisplacementSeen = 0

        for op in 1...100_000 {
            let k = randomKey(&rng)
            switch UInt8.random(in: 0..<100, using: &rng) {
            case 0..<45:  // insert
                var existing: cobs_slot = 0
                let status = cobs_registry_insert(reg.raw, k.cKey, nextSlot, &existing)
                if let old = model[k] {
                    assertStatus(status, COBS_EXISTS)
                    expectEqual(existing, old, "op \(op): existing slot")
                } else {
                    assertStatus(status, COBS_OK)
                    model[k] = nextSlot
                }
                nextSlot &+= 1
            case 45..<85:  // remove
                expectEqual(reg.remove(k.cKey), model.removeValue(forKey: k), "op \(op): remove")
            case 85..<95:  // find + lookup
                expectEqual(reg.find(k.cKey), model[k], "op \(op): find")
                let expected = model.filter { $0.key.object == k.object && $0.key.key == k.key }
                let result = reg.lookup(k.object, k.key)
                assertStatus(result.status, COBS_OK)
                expectEqual(result.slots.sorted(), expected.values.sorted(), "op \(op): lookup")
            default:  // remove_object (rarely, or the model would stay nearly empty)
                if op % 4 == 0 {
                    let expected = model.filter { $0.key.object == k.object }
                    let result = reg.removeObject(k.object)
                    assertStatus(result.status, COBS_OK)
                    expectEqual(result.slots.sorted(), expected.values.sorted(), "op \(op): remove_object")
                    for key in expected.keys { model.removeValue(forKey: key) }
                } else {
                    let expected = model.filter { $0.key.object == k.object }
                    let result = reg.objectEntries(k.object)
                    expectEqual(result.count, expected.count, "op \(op): object_entries count")
                    expectEqual(result.slots.sorted(), expected.values.sorted(), "op \(op): object_entries")
                }
            }
            expectEqual(reg.count, model.count, "op \(op): count")
            if op % 1000 == 0 {
                reg.assertInvariants()
                let stats = reg.stats
                maxDisplacementSeen = max(maxDisplacementSeen, stats.max_displacement)
                #expect(stats.count * 4 <= stats.capacity * 3)
            }
        }
        #expect(model.count > 100, "the churn kept a sizeable live set")
        for (k, slot) in model { #expect(reg.find(k.cKey) == slot) }
        #expect(maxDisplacementSeen < 64, "probe lengths stayed bounded throughout")
    }

    @Test func probeLengthsAfterChurnMatchAFreshTableWithTheSameEntries() {
        let seed: UInt64 = 0xBADC_0FFE
        let churned = TestRegistry(seed: seed)
        var live: [ModelKey: cobs_slot] = [:]
        var rng = SplitMix64(seed: 9)
        // Hold the live set near 300 while 60,000 insert/remove pairs pass through the table: with
        // tombstones, deleted markers would pile up in the clusters and lengthen every probe.
        for i in 0..<60_000 {
            let k = randomKey(&rng)
            if live[k] == nil, live.count < 300 || Bool.random(using: &rng) {
                churned.insert(k.cKey, cobs_slot(i))
                live[k] = cobs_slot(i)
            } else if let victim = live.keys.randomElement(using: &rng) {
                churned.remove(victim.cKey)
                live.removeValue(forKey: victim)
            }
        }
        churned.assertInvariants()
        #expect(live.count > 200)

        // A fresh table of the same capacity and seed, filled by insertion only.
        let a = churned.stats
        let fresh = TestRegistry(seed: seed, capacityHint: a.capacity * 3 / 4)
        for (k, slot) in live { fresh.insert(k.cKey, slot) }
        let b = fresh.stats
        #expect(a.count == b.count)
        #expect(a.capacity == b.capacity)
        // Under linear probing the set of full buckets, and so the total displacement, depends only
        // on which entries are present, not on the order they arrived in. Backward shift keeps the
        // churned table one that insertion alone could have built, so the totals are EQUAL; any
        // residue of deleted entries (a tombstone, a hole left in a run) would break the equality.
        #expect(a.total_displacement == b.total_displacement)
        #expect(a.capacity <= 1024, "churn did not inflate the table")
    }

    @Test func constantSizeChurnNeverGrowsTheTableNorLengthensProbes() {
        let reg = TestRegistry(seed: 77)
        var rng = SplitMix64(seed: 77)
        var queue: [cobs_key] = []
        for i in 0..<80 {
            let k = makeKey(0x9000_0000 + UInt(i) * 48, UInt32(i % 7), 0)
            reg.insert(k, cobs_slot(i))
            queue.append(k)
        }
        let capacity = reg.capacity
        #expect(capacity == 128, "80 entries: load 0.625")
        var worst = 0
        var meanSum = 0.0
        var samples = 0
        // 50,000 remove-one, insert-one cycles with always-new keys: the live count never moves,
        // and neither may the capacity or the probe lengths. With tombstones, deleted markers
        // would fill the table's empty buckets and every miss would walk the whole table.
        for i in 0..<50_000 {
            let victim = queue.remove(at: Int.random(in: 0..<queue.count, using: &rng))
            if reg.remove(victim) == nil { Issue.record("cycle \(i): \(victim) was not found") }
            let k = makeKey(0xA000_0000 + UInt(i) * 16, UInt32(i % 7), UInt(i % 3))
            assertStatus(reg.insert(k, cobs_slot(i)), COBS_OK)
            queue.append(k)
            if i % 500 == 0 {
                let stats = reg.stats
                worst = max(worst, stats.max_displacement)
                meanSum += Double(stats.total_displacement) / Double(stats.count)
                samples += 1
            }
        }
        #expect(reg.count == 80)
        #expect(reg.capacity == capacity)
        // At load 0.625 a random hash gives a mean displacement of ~0.83 (Knuth).
        #expect(meanSum / Double(samples) < 1.5)
        #expect(worst < 64, "no probe ever walked half the table")
        for (i, k) in queue.enumerated() where i % 10 == 0 { #expect(reg.find(k) != nil) }
        reg.assertInvariants()
    }
}
