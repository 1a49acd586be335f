// The C-backed and pure-Swift array cores, run side by side on the same random inputs: the
// batch composers must produce identical runs (and origins), the encoders the same answers, and
// the position indexes the same lookups.

import SeededRandom
import Testing

@_spi(Testing) @testable import ObserveCore

@Suite("Array core: the C path and its Swift twin agree")
struct ArrayCoreTwinTests {
    // MARK: Batch composer

    @Test func cAndSwiftComposersProduceIdenticalRunsOnRandomBatches() {
        var failures = 0   // mismatches so far: a random test stops after a few
        var rng = SplitMix64(seed: 0x7717_0001)
        for iteration in 0..<10_000 {
            let oldCount = Int.random(in: 0...50, using: &rng)
            let c: any _BatchComposing = _CBatchComposer(oldCount: oldCount)
            let swift: any _BatchComposing = _SwiftBatchComposer(oldCount: oldCount)
            var model = Array(0..<oldCount)
            var next = 1000
            var log: [String] = []
            for _ in 0..<Int.random(in: 0...20, using: &rng) {
                let n = c.count
                switch Int.random(in: 0..<11, using: &rng) {
                case 0..<3:
                    let index = Int.random(in: 0...n, using: &rng), count = Int.random(in: 1...3, using: &rng)
                    log.append("insert(\(index), \(count))")
                    c.insert(at: index, count: count)
                    swift.insert(at: index, count: count)
                    model.insert(contentsOf: next..<next + count, at: index)
                    next += count
                case 3..<6 where n > 0:
                    let index = Int.random(in: 0..<n, using: &rng)
                    let count = Int.random(in: 1...min(3, n - index), using: &rng)
                    log.append("remove(\(index), \(count))")
                    let expected = model[index..<index + count].map { $0 < 1000 ? $0 : nil }
                    check(c.remove(at: index, count: count) == expected, "C origins, iteration \(iteration)", &failures)
                    check(swift.remove(at: index, count: count) == expected, "Swift origins, iteration \(iteration)", &failures)
                    model.removeSubrange(index..<index + count)
                case 6..<9 where n > 0:
                    let from = Int.random(in: 0..<n, using: &rng), to = Int.random(in: 0..<n, using: &rng)
                    log.append("move(\(from), \(to))")
                    c.move(from: from, to: to)
                    swift.move(from: from, to: to)
                    model.insert(model.remove(at: from), at: to)
                case 9 where n > 0:
                    let index = Int.random(in: 0..<n, using: &rng)
                    log.append("modify(\(index))")
                    c.modify(at: index)
                    swift.modify(at: index)
                case 10 where n > 0:
                    let permutation = Array(0..<n).shuffled(using: &rng)
                    log.append("permute(\(permutation))")
                    c.permute(permutation)
                    swift.permute(permutation)
                    model = permutation.map { model[$0] }
                default:
                    break
                }
                check(c.count == swift.count, "c.count == swift.count", &failures)
            }
            let cRuns = c.finish(), swiftRuns = swift.finish()
            check(cRuns == swiftRuns, "iteration \(iteration): \(log)", &failures)
            check(_CRunEncoding.validate(cRuns, oldCount: oldCount, newCount: model.count), "_CRunEncoding.validate(cRuns, oldCount: oldCount, newCount: model.count)", &failures)
            check(_SwiftRunEncoding.validate(swiftRuns, oldCount: oldCount, newCount: model.count), "_SwiftRunEncoding.validate(swiftRuns, oldCount: oldCount, newCount: model.count)", &failures)
            check(swift.finish() == swiftRuns, "finish is repeatable", &failures)
            if failures > 5 { return }
        }
    }

    @Test func composersAgreeOnABigArrayWithScatteredEdits() {
        var rng = SplitMix64(seed: 0xB16)
        let c = _CBatchComposer(oldCount: 100_000), swift = _SwiftBatchComposer(oldCount: 100_000)
        for _ in 0..<300 {
            let n = c.count
            switch Int.random(in: 0..<4, using: &rng) {
            case 0:
                let i = Int.random(in: 0...n, using: &rng)
                c.insert(at: i, count: 5)
                swift.insert(at: i, count: 5)
            case 1:
                let i = Int.random(in: 0..<n - 10, using: &rng)
                #expect(c.remove(at: i, count: 10) == swift.remove(at: i, count: 10))
            case 2:
                let from = Int.random(in: 0..<n, using: &rng), to = Int.random(in: 0..<n, using: &rng)
                c.move(from: from, to: to)
                swift.move(from: from, to: to)
            default:
                let i = Int.random(in: 0..<n, using: &rng)
                c.modify(at: i)
                swift.modify(at: i)
            }
        }
        let runs = c.finish()
        #expect(runs == swift.finish())
        #expect(_CRunEncoding.validate(runs, oldCount: 100_000, newCount: c.count))
    }

    // MARK: Encoder

    @Test func cAndSwiftEncodersAgreeOnRandomRuns() {
        var failures = 0   // mismatches so far: a random test stops after a few
        var rng = SplitMix64(seed: 0xE1C0_DE)
        let ops: [_RunOp] = [.remove, .insert, .move, .modify]
        var accepted = 0
        for iteration in 0..<20_000 {
            let oldCount = Int.random(in: 0..<24, using: &rng), newCount = Int.random(in: 0..<24, using: &rng)
            var runs: [_ArrayRun] = []
            for _ in 0..<Int.random(in: 0..<7, using: &rng) {
                let op = ops.randomElement(using: &rng)!
                runs.append(_ArrayRun(op, start: Int.random(in: 0..<24, using: &rng), length: Int.random(in: 1...4, using: &rng),
                                      to: op == .move ? Int.random(in: 0..<24, using: &rng) : 0))
            }
            // Both normalize identically (well-formed runs only: malformed ones trap, by contract).
            var cNormal = runs, swiftNormal = runs
            _CRunEncoding.normalize(&cNormal)
            _SwiftRunEncoding.normalize(&swiftNormal)
            check(cNormal == swiftNormal, "iteration \(iteration): \(runs)", &failures)
            for candidate in [runs, cNormal] {
                let c = _CRunEncoding.validate(candidate, oldCount: oldCount, newCount: newCount)
                check(c == _SwiftRunEncoding.validate(candidate, oldCount: oldCount, newCount: newCount), "iteration \(iteration): \(candidate) \(oldCount)->\(newCount)", &failures)
                if c { accepted += 1 }
            }
            if failures > 5 { return }
        }
        check(accepted > 100, "the generator must produce valid changes too", &failures)
    }

    @Test func encodersRejectNegativeFieldsAndCounts() {
        for encoding in [_CRunEncoding.self, _SwiftRunEncoding.self] as [any _RunEncoding.Type] {
            // Evaluated outside `#expect`, which cannot call a static member through `any _RunEncoding.Type`.
            let negativeStart = encoding.validate([_ArrayRun(.remove, start: -1, length: 1)], oldCount: 5, newCount: 4)
            let negativeCounts = encoding.validate([], oldCount: -1, newCount: -1)
            let bigInsert = encoding.validate([_ArrayRun(.insert, start: 0, length: 100_000)], oldCount: 0, newCount: 100_000)
            #expect(!negativeStart)
            #expect(!negativeCounts)
            #expect(bigInsert)
        }
    }

    // MARK: Position index

    @Test func cAndSwiftPositionIndexesAgreeOnRandomChurn() {
        var failures = 0   // mismatches so far: a random test stops after a few
        var rng = SplitMix64(seed: 0x9051_7105)
        let mask: UInt32 = 255
        let ring = UnsafeMutablePointer<UInt>.allocate(capacity: Int(mask) + 1)
        let addresses = _RingAddresses(raw: UnsafeRawPointer(ring))   // what the indexes read
        ring.initialize(repeating: 0, count: Int(mask) + 1)
        defer { ring.deallocate() }
        let indexes: [any _PositionIndexing] = [
            _CPositionIndex(capacityHint: 0),
            _SwiftPositionIndex(capacityHint: 0),
        ]
        var occupied: [UInt32: UInt] = [:]
        var cSlots: [UInt32] = [], swiftSlots: [UInt32] = []
        func element(_ i: Int) -> UInt { 0x6000_0000 + UInt(i) * 16 }
        /// Compacts the ring to logical order from a random head and rebuilds both indexes.
        func compactAndRebuild() {
            let head = UInt32.random(in: 0...mask, using: &rng)
            let elements = occupied.sorted { $0.key < $1.key }.map(\.value)
            for s in 0...Int(mask) { ring[s] = 0 }
            occupied = [:]
            for (i, e) in elements.enumerated() {
                let slot = (head + UInt32(i)) & mask
                ring[Int(slot)] = e
                occupied[slot] = e
            }
            for index in indexes { index.rebuild(ring: addresses, mask: mask, head: head, count: elements.count) }
        }
        for step in 0..<20_000 {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                let slot = UInt32.random(in: 0...mask, using: &rng)
                guard occupied[slot] == nil else { break }
                let e = element(Int.random(in: 0..<40, using: &rng))
                ring[Int(slot)] = e
                for index in indexes { index.insert(ring: addresses, mask: mask, element: e, slot: slot) }
                occupied[slot] = e
            case 4..<6:
                guard let pick = occupied.randomElement(using: &rng) else { break }
                for index in indexes { index.remove(ring: addresses, mask: mask, element: pick.value, slot: pick.key) }
                ring[Int(pick.key)] = 0
                occupied[pick.key] = nil
            case 6..<8:
                guard let pick = occupied.randomElement(using: &rng) else { break }
                let to = UInt32.random(in: 0...mask, using: &rng)
                guard occupied[to] == nil else { break }
                ring[Int(to)] = pick.value
                ring[Int(pick.key)] = 0
                for index in indexes { index.move(mask: mask, element: pick.value, from: pick.key, to: to) }
                occupied[pick.key] = nil
                occupied[to] = pick.value
            case 8 where step % 97 == 0:
                compactAndRebuild()
            case 8:
                // A block move into free slots: both indexes record it (the C one in its shift
                // log), or the C index's log is full and both are rebuilt.
                let first = UInt32.random(in: 0...mask, using: &rng)
                let count = Int.random(in: 1...40, using: &rng)
                let delta = Int.random(in: 1...4, using: &rng) * (Bool.random(using: &rng) ? 1 : -1)
                let block = (0..<count).map { (first + UInt32($0)) & mask }
                let targets = block.map { UInt32((Int($0) + delta) & Int(mask)) }
                // The |delta| slots the block moves over must be free, as beyond a ring's ends.
                let crossed = delta > 0 ? (0..<delta).map { (Int(first) + count + $0) & Int(mask) }
                                        : (1...(-delta)).map { (Int(first) - $0) & Int(mask) }
                guard crossed.allSatisfy({ occupied[UInt32($0)] == nil }) else { break }
                let moved = block.map { occupied[$0] }
                for slot in block { occupied[slot] = nil; ring[Int(slot)] = 0 }
                for (target, element) in zip(targets, moved) {
                    occupied[target] = element
                    ring[Int(target)] = element ?? 0
                }
                let recorded = indexes.map { $0.shift(ring: addresses, mask: mask, first: first, count: count, delta: delta) }
                check(recorded[1], "the Swift twin records every shift", &failures)
                if !recorded[0] { compactAndRebuild() }
            default:
                let e = element(Int.random(in: 0..<40, using: &rng))
                indexes[0].lookup(ring: addresses, mask: mask, element: e, into: &cSlots)
                indexes[1].lookup(ring: addresses, mask: mask, element: e, into: &swiftSlots)
                let expected = occupied.filter { $0.value == e }.map(\.key).sorted()
                check(cSlots.sorted() == expected, "C, step \(step)", &failures)
                check(swiftSlots.sorted() == expected, "Swift, step \(step)", &failures)
            }
            check(indexes[0].count == occupied.count, "indexes[0].count == occupied.count", &failures)
            check(indexes[1].count == occupied.count, "indexes[1].count == occupied.count", &failures)
            if step % 1000 == 0 { for index in indexes { index.checkInvariants(ring: addresses, mask: mask) } }
            if failures > 5 { return }
        }
        for index in indexes {
            index.checkInvariants(ring: addresses, mask: mask)
            check(index.bytes > 0, "index.bytes > 0", &failures)
            index.clear()
            check(index.count == 0, "index.count == 0", &failures)
        }
    }

    @Test func cPositionIndexLookupGrowsItsBufferForManyDuplicates() {
        let mask: UInt32 = 1023
        let ring = UnsafeMutablePointer<UInt>.allocate(capacity: Int(mask) + 1)
        let addresses = _RingAddresses(raw: UnsafeRawPointer(ring))   // what the indexes read
        defer { ring.deallocate() }
        let index = _CPositionIndex(capacityHint: 0)
        for slot in 0..<300 {
            ring[slot] = 0xABC0
            index.insert(ring: addresses, mask: mask, element: 0xABC0, slot: UInt32(slot))
        }
        var slots: [UInt32] = []
        index.lookup(ring: addresses, mask: mask, element: 0xABC0, into: &slots)
        #expect(slots.sorted() == (0..<300).map(UInt32.init))
        index.lookup(ring: addresses, mask: mask, element: 0xDEF0, into: &slots)
        #expect(slots == [])
        #expect(index.maxDisplacement(ring: addresses, mask: mask) == 0, "300 copies share one bucket: no cluster")
    }
}

/// `#expect(condition, comment)` that also counts the failure, so that a random test can stop
/// after a few instead of reporting thousands.
private func check(_ condition: Bool, _ comment: @autoclosure () -> Comment, _ failures: inout Int,
                   sourceLocation: SourceLocation = #_sourceLocation) {
    if condition { return }
    failures += 1
    Issue.record(comment(), sourceLocation: sourceLocation)
}
