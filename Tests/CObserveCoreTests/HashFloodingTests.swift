// Hash flooding: inputs chosen to pile entries into one probe chain — addresses that share their
// low bits or differ only in their high bits, addresses an adversary computed to collide under a
// known seed, one object with thousands of (key, context) entries, one element in thousands of
// ring slots — and what that costs the registry and the element-position index, measured as
// probe lengths (displacements read from the tables), never as time.
//
// What "bounded" means here:
// - A successful lookup of an entry probes (displacement + 1) buckets; `max_displacement` bounds
//   every successful lookup. An unsuccessful one walks to the end of its run of full buckets; the
//   longest run (read from the dump) bounds those.
// - For address patterns the bound is that of a uniform hash at the same load (tens of buckets):
//   the per-table seed from arc4random_buf makes a precomputed pattern useless.
// - One object's entries (one element's slots) share a home bucket by design, so they form one run
//   as long as their number N; what must hold is that this costs N once — entries of other
//   objects are displaced by at most N plus the ordinary tail — and that it disappears with them.

import CObserveCore
import Foundation
import Testing

/// MurmurHash3's fmix64, as the C core's `mix64` (cobs_internal.h): the model an adversary has.
private func fmix64(_ value: UInt64) -> UInt64 {
    var x = value
    x ^= x >> 33
    x &*= 0xFF51_AFD7_ED55_8CCD
    x ^= x >> 33
    x &*= 0xC4CE_B9FE_1A85_EC53
    x ^= x >> 33
    return x
}

/// The COBS_DETERMINISTIC_HASHING seed of the registry: public, so an adversary knows it.
private let publicSeed: UInt64 = 0x243F_6A88_85A3_08D3

/// `count` 16-byte-aligned addresses whose hash under `seed` has the same top `bits` bits: one
/// home bucket in any table of up to 2^bits buckets hashed with that seed.
private func collidingAddresses(count: Int, seed: UInt64, bits: Int) -> [UInt] {
    var found: [UInt] = []
    var candidate: UInt = 0x7F3A_0000_0000
    let target = fmix64(UInt64(candidate) ^ seed) >> UInt64(64 - bits)
    while found.count < count {
        if fmix64(UInt64(candidate) ^ seed) >> UInt64(64 - bits) == target { found.append(candidate) }
        candidate += 16
    }
    return found
}

/// One bucket of a registry dump: nil for an empty bucket.
private struct DumpedBucket { var object: UInt; var displacement: Int }

/// Parses `cobs_registry_dump` (one line per bucket).
private func buckets(of reg: TestRegistry) throws -> [DumpedBucket?] {
    try dumpText { cobs_registry_dump(reg.raw, $0) }.split(separator: "\n").dropFirst().map { line in
        if line.hasSuffix("empty") { return nil }
        let fields = line.split(separator: " ")
        func field(after name: String) -> Substring { fields[fields.firstIndex(of: Substring(name))! + 1] }
        return DumpedBucket(object: UInt(field(after: "object").dropFirst(2), radix: 16)!,
                            displacement: Int(field(after: "disp"))!)
    }
}

/// For every full bucket, how many buckets a probe starting there walks to reach the end of its
/// run: what `lookup(object, key)` (which collects every context, so it always runs to the next
/// empty bucket) costs an object whose home is that bucket.
private func walks(_ buckets: [DumpedBucket?]) -> [Int] {
    let n = buckets.count
    var walk = [Int](repeating: 0, count: n)
    guard let empty = buckets.firstIndex(where: { $0 == nil }) else { return [Int](repeating: n, count: n) }
    var next = 0   // buckets from here to the end of the run, inclusive
    for step in 0..<n {
        let i = (empty - step + n) % n   // walk backwards round the table from an empty bucket
        if buckets[i] == nil { next = 0 } else { next += 1; walk[i] = next }
    }
    return walk
}

/// The longest run of full buckets (cyclic): the most an unsuccessful probe can walk.
private func longestRun(_ buckets: [DumpedBucket?]) -> Int {
    guard buckets.contains(where: { $0 == nil }) else { return buckets.count }
    var longest = 0, run = 0
    for bucket in buckets + buckets {   // twice round, so a run that wraps is counted whole
        if bucket == nil { run = 0 } else { run += 1; longest = max(longest, run) }
    }
    return min(longest, buckets.count)
}

@Suite struct HashFloodingTests {
    /// Seeds for the tables under test: fixed ones (reproducible) and nil (arc4random_buf, as
    /// every real table gets).
    private let seeds: [UInt64?] = [1, 0xDEAD_BEEF, 0x0123_4567_89AB_CDEF, publicSeed ^ 1, nil, nil, nil]

    // MARK: The model of the hash

    @Test func theAdversarysModelOfTheHashMatchesTheCore() throws {
        // Without this, the "collide under a known seed" tests below would prove nothing.
        let reg = TestRegistry(seed: publicSeed)
        let object: UInt = 0x7F3A_0000_1230
        reg.insert(makeKey(object, 0, 0), 0)
        let home = try buckets(of: reg).firstIndex { $0 != nil }!
        #expect(UInt64(home) == fmix64(UInt64(object) ^ publicSeed) >> UInt64(64 - 4), "16 buckets: top 4 bits")
    }

    // MARK: Registry: address patterns

    /// Addresses an adversary computed to share one home bucket under a seed it knows: the attack
    /// works against a table that uses that seed (so the pattern is a real flood), and does
    /// nothing against any other seed.
    @Test func addressesThatCollideUnderAKnownSeedSpreadUnderEveryOther() throws {
        let objects = collidingAddresses(count: 1_000, seed: publicSeed, bits: 12)

        let attacked = TestRegistry(seed: publicSeed)
        for (n, object) in objects.enumerated() { assertStatus(attacked.insert(makeKey(object, 1), cobs_slot(n)), COBS_OK) }
        #expect(attacked.stats.max_displacement >= 999, "the flood is real under the known seed")
        attacked.assertInvariants()

        var worst = 0
        for seed in seeds {
            let reg = TestRegistry(seed: seed)
            for (n, object) in objects.enumerated() { reg.insert(makeKey(object, 1), cobs_slot(n)) }
            let stats = reg.stats
            // 1,000 entries in 2,048 buckets (load 0.49): a uniform hash gives a longest
            // displacement around 10-15 (36 at worst over 2,000 seeds, measured) and a longest run
            // around 30.
            #expect(stats.max_displacement < 64, "seed \(String(describing: seed))")
            let run = try longestRun(buckets(of: reg))
            #expect(run < 96, "seed \(String(describing: seed))")
            #expect(reg.find(makeKey(objects[500], 1)) == 500)
            reg.assertInvariants()
            worst = max(worst, stats.max_displacement)
        }
        print("hash flooding (registry, 1,000 addresses colliding under a known seed): "
              + "max probe \(attacked.stats.max_displacement + 1) under that seed, \(worst + 1) under any other")
    }

    /// Page-aligned objects (the low 12 bits equal), objects that differ only above bit 40, and
    /// page-aligned objects spread over 1 GiB strides, near the 3/4 load limit, under several seeds.
    /// (Sizes are kept where the debug build's per-mutation invariant check stays cheap: it is
    /// O(capacity) after every insert.)
    @Test func pageAlignedAndHighBitOnlyAddressesStayNearTheUniformBound() throws {
        let count = 6_000   // 8,192 buckets: load 0.73, just under 3/4
        let patterns: [(String, [UInt])] = [
            ("page-aligned", (0..<count).map { 0x7F00_0000_0000 + UInt($0) << 12 }),
            ("high bits only", (1...count).map { UInt($0) << 40 | 0x40 }),
            ("pages in 1 GiB strides", (0..<count).map { 0x5500_0000_0000 + UInt($0 % 64) << 30 + UInt($0 / 64) << 12 }),
        ]
        var report: [String] = []
        for (name, objects) in patterns {
            var worst = 0, worstRun = 0, sum = 0
            for seed in seeds.prefix(2) + seeds.suffix(2) {
                let reg = TestRegistry(seed: seed)
                for (n, object) in objects.enumerated() { reg.insert(makeKey(object, 0), cobs_slot(n)) }
                let stats = reg.stats
                #expect(stats.capacity == 8_192)
                let run = try longestRun(buckets(of: reg))
                // At load 0.73, linear probing with a uniform hash has a mean displacement of ~1.4
                // and a longest one of 64 on average (133 at worst over 200 seeds, measured for
                // page-aligned addresses): twice the worst is the bound for one table, and the
                // average over the four tables must stay near the average.
                #expect(stats.max_displacement < 260, "\(name), seed \(String(describing: seed))")
                #expect(Double(stats.total_displacement) / Double(stats.count) < 2.5, "\(name): mean")
                #expect(run < 400, "\(name), seed \(String(describing: seed)): longest run")
                for n in stride(from: 0, to: objects.count, by: 997) { #expect(reg.find(makeKey(objects[n], 0)) == cobs_slot(n)) }
                reg.assertInvariants()
                worst = max(worst, stats.max_displacement)
                worstRun = max(worstRun, run)
                sum += stats.max_displacement
            }
            #expect(sum / 4 < 120, "\(name): mean longest displacement over four seeds")
            report.append("\(name): max probe \(worst + 1), longest run \(worstRun)")
        }
        print("hash flooding (registry, \(count) objects at load 0.73, 4 seeds): " + report.joined(separator: "; "))
    }

    // MARK: Registry: one object with thousands of entries

    /// One object observed under 1,000 (key, context) pairs — contexts that are themselves
    /// page-aligned addresses, as `ObservationContext(object)` makes — among 8,000 ordinary objects.
    /// Its entries are one run by design, and `lookup(object, key)` of any object whose home falls
    /// in that run walks to its end: the cost is the run's length, paid only by the objects homed
    /// in it, and it goes away with the object. (1,000 rather than more: the debug build verifies
    /// the table after every insert, and a run of N makes that check O(N^2).)
    @Test func oneObjectWithThousandsOfKeysAndContextsCostsOneRunAndGoesAway() throws {
        let big: UInt = 0x7F00_1234_5670
        let bigEntries = 1_000
        let others = (0..<8_000).map { 0x7F80_0000_0000 + UInt($0) * 48 }
        for seed in seeds.prefix(2) + seeds.suffix(2) {
            let reg = TestRegistry(seed: seed)
            var slot: cobs_slot = 0
            for object in others { reg.insert(makeKey(object, 7), slot); slot += 1 }
            for key: UInt32 in 0..<25 {
                for context in 0..<UInt(bigEntries / 25) {
                    assertStatus(reg.insert(makeKey(big, key, 0x6000_0000_0000 + context << 12), slot), COBS_OK)
                    slot += 1
                }
            }
            reg.assertInvariants()

            let table = try buckets(of: reg)
            let walk = walks(table)
            let capacity = table.count
            var otherWalks: [Int] = [], bigWalk = 0
            for (i, bucket) in table.enumerated() {
                guard let bucket else { continue }
                let home = (i - bucket.displacement + capacity) % capacity
                if bucket.object == big { bigWalk = walk[home] } else { otherWalks.append(walk[home]) }
            }
            let ordinary = otherWalks.filter { $0 < 200 }.max() ?? 0
            // The big object's lookups walk its run: its N entries, plus the entries homed inside
            // the run, which can only join its end. At load a that is about N / (1 - a): here
            // 9,000 entries in 16,384 buckets (a = 0.55), about 2.2 N.
            let load = Double(reg.count) / Double(capacity)
            #expect(bigWalk >= bigEntries)
            #expect(Double(bigWalk) < 1.5 * Double(bigEntries) / (1 - load), "seed \(String(describing: seed))")
            // Others: at most that run plus an ordinary tail (runs do not compound), and only those
            // homed inside it (about a * run of them).
            #expect(otherWalks.max()! <= bigWalk + 400, "seed \(String(describing: seed))")
            let affected = otherWalks.filter { $0 >= 200 }.count
            #expect(affected < bigWalk, "only objects homed in the run pay for it")
            #expect(reg.lookup(big, 24, capacity: 4_096).count == bigEntries / 25)
            #expect(reg.find(makeKey(others[4_321], 7)) == 4_321)

            // Removing the object removes the flood: no tombstones, the tail is ordinary again.
            let removed = reg.removeObject(big, capacity: bigEntries)
            assertStatus(removed.status, COBS_OK)
            #expect(removed.count == bigEntries)
            let after = try longestRun(buckets(of: reg))
            #expect(after < 400, "after remove_object, seed \(String(describing: seed))")
            reg.assertInvariants()
            if seed == seeds.first! {
                print("hash flooding (registry, one object with \(bigEntries) (key, context) entries among \(others.count) "
                      + "objects): its lookups walk \(bigWalk) buckets; \(affected) other objects homed in its run walk up "
                      + "to \(otherWalks.max()!), the rest at most \(ordinary); after remove_object the longest run is \(after)")
            }
        }
    }

    // MARK: Position index

    private func positionSeeds() -> [UInt64] {
        // cobs_positions_create takes 0 for "random"; a few fixed seeds besides.
        [1, 0xDEAD_BEEF, 0x0123_4567_89AB_CDEF, 0, 0, 0]
    }

    /// Page-aligned element addresses (every element object of one size class on its own page)
    /// at the index's 7/8 limit, under several seeds.
    @Test func pageAlignedElementsStayNearTheUniformBoundInThePositionIndex() {
        let count = 114_000   // 131,072 buckets: load 0.87, just under 7/8
        let ring = TestRing(mask: (1 << 17) - 1)
        var worst = 0, sum = 0
        for seed in positionSeeds() {
            let index = TestPositions(capacityHint: count, seed: seed)
            for i in 0..<count { index.insert(ring, 0x7F00_0000_0000 + UInt(i) << 12, at: UInt32(i)) }
            let longest = cobs_positions_max_displacement(index.raw, ring.pointer, ring.mask)
            // Linear probing at load 0.87 with a uniform hash: a longest displacement of 414 on
            // average, 852 at worst over 200 seeds (measured); page alignment must not do worse.
            #expect(longest < 1_700, "seed \(seed)")
            #expect(index.slots(ring, 0x7F00_0000_0000 + UInt(54_321) << 12) == [54_321])
            index.assertInvariants(ring)
            worst = max(worst, longest)
            sum += longest
        }
        #expect(sum / positionSeeds().count < 700, "mean longest displacement over the seeds")
        print("hash flooding (position index, \(count) page-aligned elements at load 0.87): max probe \(worst + 1)")
    }

    /// Element addresses an adversary computed to share one home under a known index seed.
    @Test func elementsThatCollideUnderAKnownSeedSpreadUnderEveryOther() {
        let known: UInt64 = 0x2B7E_1516_28AE_D2A6   // the index's deterministic seed (digits of e)
        let elements = collidingAddresses(count: 1_000, seed: known, bits: 12)
        let ring = TestRing(mask: 1023)
        let attacked = TestPositions(seed: known)
        for (i, e) in elements.enumerated() { attacked.insert(ring, e, at: UInt32(i)) }
        let flooded = cobs_positions_max_displacement(attacked.raw, ring.pointer, ring.mask)
        #expect(flooded >= 999, "the flood is real under the known seed")
        var worst = 0
        for seed in positionSeeds() where seed != known {
            let index = TestPositions(seed: seed)
            for (i, e) in elements.enumerated() { index.insert(ring, e, at: UInt32(i)) }
            let longest = cobs_positions_max_displacement(index.raw, ring.pointer, ring.mask)
            #expect(longest < 80, "seed \(seed)")   // 1,000 in 2,048 buckets: ~15, 36 at worst
            #expect(index.slots(ring, elements[777]) == [777])
            index.assertInvariants(ring)
            worst = max(worst, longest)
        }
        print("hash flooding (position index, 1,000 elements colliding under a known seed): max probe \(flooded + 1) "
              + "under that seed, \(worst + 1) under any other")
    }

    /// One element in 1,500 ring slots among 5,500 distinct elements, at load 0.85. Its slots are
    /// one run by design (one lookup finds them all); entries homed inside the run join its end,
    /// so the run grows to about N / (1 - load), and every element homed in it pays that walk on
    /// each lookup, insertion and removal. The test pins that bound (nothing compounds beyond it)
    /// and that removing the duplicates removes the cost; the report compares it with the same
    /// number of distinct elements.
    @Test func oneElementInThousandsOfSlotsCostsOneBucket() {
        let ring = TestRing(mask: (1 << 13) - 1)
        let duplicate: UInt = 0x7F55_5555_0000
        let copies = 1_500, distinct = 5_500
        func element(_ i: Int) -> UInt { 0x7F00_0000_0000 + UInt(i) << 12 }
        for seed in positionSeeds() {
            // Sized up front: the debug build verifies indexes of up to 4,096 buckets after every call.
            let index = TestPositions(capacityHint: copies + distinct, seed: seed)
            for slot in 0..<copies { index.insert(ring, duplicate, at: UInt32(slot)) }
            for i in 0..<distinct { index.insert(ring, element(i), at: UInt32(copies + i)) }
            let capacity = (copies + distinct) * 8 / 7 < 8_192 ? 8_192 : 16_384   // buckets sized for the hint
            let load = Double(distinct + 1) / Double(capacity)
            let longest = cobs_positions_max_displacement(index.raw, ring.pointer, ring.mask)
            // The copies share one bucket (a record of their slots), so the distinct elements
            // see a table of distinct + 1 entries: no run of 1,500 to walk.
            #expect(longest < 300, "one bucket for every copy, seed \(seed)")
            #expect(index.lookup(ring, duplicate, capacity: copies).count == copies)
            #expect(index.slots(ring, element(4_321)) == [UInt32(copies + 4_321)])
            index.assertInvariants(ring)
            for slot in 0..<copies { assertStatus(index.remove(ring, duplicate, at: UInt32(slot)), COBS_OK) }
            let after = cobs_positions_max_displacement(index.raw, ring.pointer, ring.mask)
            #expect(after < 300, "after the duplicates left, seed \(seed)")
            index.assertInvariants(ring)
            if seed == 1 {
                // The same number of entries, all distinct, for comparison.
                let plain = TestPositions(capacityHint: copies + distinct, seed: seed), plainRing = TestRing(mask: (1 << 13) - 1)
                for i in 0..<(copies + distinct) { plain.insert(plainRing, element(10_000 + i), at: UInt32(i)) }
                let baseline = cobs_positions_max_displacement(plain.raw, plainRing.pointer, plainRing.mask)
                print("hash flooding (position index, one element in \(copies) slots among \(distinct) distinct, load "
                      + "\(String(format: "%.2f", load))): longest probe \(longest + 1) (the copies share one bucket), "
                      + "against \(baseline + 1) for \(copies + distinct) distinct elements; after removing the "
                      + "duplicates \(after + 1)")
            }
        }
    }
}
