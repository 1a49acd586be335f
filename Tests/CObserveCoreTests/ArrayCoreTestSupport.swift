// Helpers shared by the change-encoder, batch-composer and position-index tests: a comparable
// `Run`, wrappers that return C statuses unchanged, the reference application of a change to an
// array, and a generator of random edit sequences with a model of the edited array.

import CObserveCore
import Foundation
import Testing

/// A `cobs_run` that Swift can compare and print.
struct Run: Equatable, CustomStringConvertible {
    var op: UInt32
    var start: UInt64
    var length: UInt64
    var to: UInt64 = 0
    var reserved: UInt32 = 0

    static func remove(_ start: UInt64, _ length: UInt64 = 1) -> Run { Run(op: 1, start: start, length: length) }
    static func insert(_ start: UInt64, _ length: UInt64 = 1) -> Run { Run(op: 2, start: start, length: length) }
    static func move(_ start: UInt64, _ length: UInt64 = 1, to: UInt64) -> Run {
        Run(op: 3, start: start, length: length, to: to)
    }
    static func modify(_ start: UInt64, _ length: UInt64 = 1) -> Run { Run(op: 4, start: start, length: length) }

    init(op: UInt32, start: UInt64, length: UInt64, to: UInt64 = 0, reserved: UInt32 = 0) {
        self.op = op
        self.start = start
        self.length = length
        self.to = to
        self.reserved = reserved
    }

    init(_ c: cobs_run) {
        self.init(op: c.op, start: c.start, length: c.length, to: c.to, reserved: c.reserved_)
    }

    var c: cobs_run { cobs_run(op: op, reserved_: reserved, start: start, length: length, to: to) }

    var description: String {
        let name = ["?", "REMOVE", "INSERT", "MOVE", "MODIFY"][Int(min(op, 5) % 5)]
        return op == 3 ? "\(name)(\(start)+\(length)->\(to))" : "\(name)(\(start)+\(length))"
    }
}

/// `cobs_changes_normalize` on a copy: the status, and the runs afterwards.
func normalized(_ runs: [Run]) -> (status: cobs_status, runs: [Run]) {
    var buffer = runs.map(\.c)
    var count = Int.max
    let status = buffer.withUnsafeMutableBufferPointer {
        cobs_changes_normalize($0.baseAddress, $0.count, &count)
    }
    return (status, status == COBS_OK ? buffer.prefix(count).map(Run.init) : buffer.map(Run.init))
}

func validated(_ runs: [Run], old: UInt64, new: UInt64) -> cobs_status {
    let buffer = runs.map(\.c)
    return buffer.withUnsafeBufferPointer { cobs_changes_validate($0.baseAddress, $0.count, old, new) }
}

/// Applies `runs` to `old` the naive way the header describes: take REMOVE indices and MOVE
/// sources out from the highest index down, then put INSERT indices and MOVE destinations in from
/// the lowest up, reading the inserted and moved values from `new`.
func applyReference(_ runs: [Run], old: [Int], new: [Int]) -> [Int] {
    var array = old
    var out: [Int] = []
    var into: [Int] = []
    for run in runs {
        for t in 0..<Int(run.length) {
            switch run.op {
            case 1: out.append(Int(run.start) + t)
            case 2: into.append(Int(run.start) + t)
            case 3:
                out.append(Int(run.start) + t)
                into.append(Int(run.to) + t)
            default: break
            }
        }
    }
    for index in out.sorted(by: >) { array.remove(at: index) }
    for index in into.sorted() { array.insert(new[index], at: index) }
    return array
}

/// Owns one `cobs_batch`; every method returns the C status unchanged.
final class TestBatch {
    let raw: OpaquePointer

    init(oldCount: UInt64, allocator: cobs_allocator? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        var out: OpaquePointer?
        let status: cobs_status
        if var allocator {
            status = cobs_batch_create(oldCount, &allocator, &out)
        } else {
            status = cobs_batch_create(oldCount, nil, &out)
        }
        assertStatus(status, COBS_OK, "creating a test batch", sourceLocation: sourceLocation)
        raw = out!
    }

    deinit { cobs_batch_destroy(raw) }

    var count: UInt64 { cobs_batch_count(raw) }

    @discardableResult
    func insert(_ index: UInt64, _ count: UInt64 = 1) -> cobs_status { cobs_batch_insert(raw, index, count) }

    /// The status and the origins written (all `UInt64.max - 1` when nothing was written).
    @discardableResult
    func remove(_ index: UInt64, _ count: UInt64 = 1) -> (status: cobs_status, origins: [UInt64]) {
        // Counts too large for a buffer are only ever invalid in these tests: pass no buffer then.
        var origins = [UInt64](repeating: .max - 1, count: Int(min(count, 1 << 20)))
        let status = origins.withUnsafeMutableBufferPointer {
            cobs_batch_remove(raw, index, count, count <= 1 << 20 ? $0.baseAddress : nil)
        }
        return (status, origins)
    }

    @discardableResult
    func move(_ from: UInt64, _ to: UInt64) -> cobs_status { cobs_batch_move(raw, from, to) }

    @discardableResult
    func modify(_ index: UInt64) -> cobs_status { cobs_batch_modify(raw, index) }

    @discardableResult
    func permute(_ permutation: [Int]) -> cobs_status {
        permutation.map { UInt64(bitPattern: Int64($0)) }.withUnsafeBufferPointer {
            cobs_batch_permute(raw, $0.baseAddress, $0.count)
        }
    }

    /// Asks for the count, then the runs; fails the test on any status but OK.
    func finish(sourceLocation: SourceLocation = #_sourceLocation) -> [Run] {
        var count = 0
        let first = cobs_batch_finish(raw, nil, 0, &count)
        if first != COBS_OK && first != COBS_BUFFER_TOO_SMALL {
            Issue.record("finish (count): \(first)", sourceLocation: sourceLocation)
        }
        var runs = [cobs_run](repeating: cobs_run(), count: count)
        var written = 0
        let status = runs.withUnsafeMutableBufferPointer { cobs_batch_finish(raw, $0.baseAddress, count, &written) }
        assertStatus(status, COBS_OK, "finish", sourceLocation: sourceLocation)
        if written != count { Issue.record("finish wrote \(written) runs of \(count)", sourceLocation: sourceLocation) }
        return runs.map(Run.init)
    }
}

/// One edit of a random batch.
enum Edit: Equatable, CustomStringConvertible {
    case insert(index: Int, count: Int)
    case remove(index: Int, count: Int)
    case move(from: Int, to: Int)
    case modify(index: Int)
    /// The element now at i was at `permutation[i]`.
    case permute([Int])

    var description: String {
        switch self {
        case let .insert(i, n): return "insert(\(i), \(n))"
        case let .remove(i, n): return "remove(\(i), \(n))"
        case let .move(f, t): return "move(\(f), \(t))"
        case let .modify(i): return "modify(\(i))"
        case let .permute(p): return "permute(\(p))"
        }
    }
}

/// A random batch: the old array (0..<oldCount), the edits, and the array after them (original
/// elements are their old index; inserted ones are 1000, 1001, ...), with the modified originals.
struct RandomBatch {
    var oldCount: Int
    var edits: [Edit] = []
    var final: [Int]
    var modified: Set<Int> = []

    static let firstInserted = 1000

    init<G: RandomNumberGenerator>(using rng: inout G, maxElements: Int = 50, maxEdits: Int = 20) {
        oldCount = Int.random(in: 0...maxElements, using: &rng)
        final = Array(0..<oldCount)
        var next = Self.firstInserted
        let editCount = Int.random(in: 0...maxEdits, using: &rng)
        for _ in 0..<editCount {
            let n = final.count
            switch Int.random(in: 0..<11, using: &rng) {
            case 0..<3:
                let index = Int.random(in: 0...n, using: &rng)
                let count = Int.random(in: 1...3, using: &rng)
                edits.append(.insert(index: index, count: count))
                final.insert(contentsOf: (next..<next + count), at: index)
                next += count
            case 3..<6 where n > 0:
                let index = Int.random(in: 0..<n, using: &rng)
                let count = Int.random(in: 1...min(3, n - index), using: &rng)
                edits.append(.remove(index: index, count: count))
                final.removeSubrange(index..<index + count)
            case 6..<9 where n > 0:
                let from = Int.random(in: 0..<n, using: &rng), to = Int.random(in: 0..<n, using: &rng)
                edits.append(.move(from: from, to: to))
                final.insert(final.remove(at: from), at: to)
            case 9 where n > 0:
                let index = Int.random(in: 0..<n, using: &rng)
                edits.append(.modify(index: index))
                if final[index] < Self.firstInserted { modified.insert(final[index]) }
            case 10 where n > 0:
                // A whole reorder (sort, reverse, shuffle): reversed or shuffled.
                let permutation = Bool.random(using: &rng) ? Array((0..<n).reversed()) : Array(0..<n).shuffled(using: &rng)
                edits.append(.permute(permutation))
                final = permutation.map { final[$0] }
            default:
                break
            }
        }
    }

    /// The modified originals that survive, at their new indices.
    var expectedModifiedIndices: [Int] {
        final.indices.filter { final[$0] < Self.firstInserted && modified.contains(final[$0]) }
    }

    /// The fewest elements any correct change can report as moved: survivors minus the longest
    /// increasing subsequence of their old indices.
    var minimumMoves: Int {
        let origins = final.filter { $0 < Self.firstInserted }
        var tails: [Int] = []
        for origin in origins {
            var lo = 0, hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if tails[mid] < origin { lo = mid + 1 } else { hi = mid }
            }
            if lo == tails.count { tails.append(origin) } else { tails[lo] = origin }
        }
        return origins.count - tails.count
    }
}

/// Owns a ring of `mask + 1` words for position-index tests (zero-filled).
final class TestRing {
    let mask: UInt32
    let words: UnsafeMutablePointer<UInt>

    init(mask: UInt32) {
        self.mask = mask
        words = .allocate(capacity: Int(mask) + 1)
        words.initialize(repeating: 0, count: Int(mask) + 1)
    }

    deinit { words.deallocate() }

    subscript(slot: UInt32) -> UInt {
        get { words[Int(slot)] }
        set { words[Int(slot)] = newValue }
    }

    var pointer: UnsafePointer<UInt> { UnsafePointer(words) }
}

/// Owns one `cobs_positions`; methods return C statuses unchanged.
final class TestPositions {
    let raw: OpaquePointer

    init(capacityHint: Int = 0, seed: UInt64 = 0x5EED_5EED_5EED_5EED, allocator: cobs_allocator? = nil,
         sourceLocation: SourceLocation = #_sourceLocation) {
        var out: OpaquePointer?
        let status: cobs_status
        if var allocator {
            status = cobs_positions_create(capacityHint, seed, &allocator, &out)
        } else {
            status = cobs_positions_create(capacityHint, seed, nil, &out)
        }
        assertStatus(status, COBS_OK, "creating a test position index", sourceLocation: sourceLocation)
        raw = out!
    }

    deinit { cobs_positions_destroy(raw) }

    var count: Int { cobs_positions_count(raw) }
    var bytes: Int { cobs_positions_bytes(raw) }

    /// Stores `element` in `ring[slot]` and records it.
    @discardableResult
    func insert(_ ring: TestRing, _ element: UInt, at slot: UInt32) -> cobs_status {
        ring[slot] = element
        return cobs_positions_insert(raw, ring.pointer, ring.mask, element, slot)
    }

    @discardableResult
    func remove(_ ring: TestRing, _ element: UInt, at slot: UInt32) -> cobs_status {
        cobs_positions_remove(raw, ring.pointer, ring.mask, element, slot)
    }

    /// Moves `element` from `from` to `to` in the ring (leaving `from` stale) and in the index.
    @discardableResult
    func move(_ ring: TestRing, _ element: UInt, from: UInt32, to: UInt32) -> cobs_status {
        ring[to] = element
        return cobs_positions_move(raw, ring.mask, element, from, to)
    }

    /// The sorted slots of `element`, with the status and full count.
    func lookup(_ ring: TestRing, _ element: UInt, capacity: Int = 64) -> (status: cobs_status, count: Int, slots: [UInt32]) {
        var buffer = [UInt32](repeating: .max, count: capacity)
        var count = 0
        let status = buffer.withUnsafeMutableBufferPointer {
            cobs_positions_lookup(raw, ring.pointer, ring.mask, element, $0.baseAddress, capacity, &count)
        }
        return (status, count, buffer.prefix(min(count, capacity)).sorted())
    }

    func slots(_ ring: TestRing, _ element: UInt) -> [UInt32] { lookup(ring, element, capacity: 4096).slots }

    /// Records a block move the ring already shows (`cobs_positions_shift`); when the log is full,
    /// folds it (`cobs_positions_fold`, which does not read the ring) and records the move again,
    /// as the array does while element changes look the index up. Returns whether it folded.
    @discardableResult
    func shiftFoldingWhenFull(_ ring: TestRing, first: UInt32, count: UInt32, delta: Int64,
                              sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        var status = cobs_positions_shift(raw, ring.mask, first, count, delta)
        var folded = false
        if status == COBS_BUFFER_TOO_SMALL {
            assertStatus(cobs_positions_fold(raw), COBS_OK, "fold", sourceLocation: sourceLocation)
            folded = true
            status = cobs_positions_shift(raw, ring.mask, first, count, delta)
        }
        assertStatus(status, COBS_OK, "shift", sourceLocation: sourceLocation)
        return folded
    }

    func assertInvariants(_ ring: TestRing, sourceLocation: SourceLocation = #_sourceLocation) {
        assertStatus(cobs_positions_check_invariants(raw, ring.pointer, ring.mask), COBS_OK, "check_invariants",
                     sourceLocation: sourceLocation)
    }
}
