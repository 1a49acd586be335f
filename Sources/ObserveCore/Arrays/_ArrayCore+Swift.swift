/// The pure-Swift twin of the array core: the same contracts as `cobs_changes.h` and
/// `cobs_positions.h`, and, for the encoder and the batch composer, the same algorithms, so that
/// the two backends produce identical runs for identical edits (the tests check it on random
/// batches). The design is explained in `Sources/CObserveCore/changes.c`; comments here say
/// only where the Swift code differs in form.
///
/// Where the C core would return `COBS_INVALID_ARGUMENT` or `COBS_NOT_FOUND` to the array's own
/// (trusted) mutators, the twin traps with an internal-error message, as the C wrapper does.

// MARK: - Encoder

/// `cobs_changes_normalize` / `cobs_changes_validate` in Swift: the same record rules, the same
/// sort key (op, start, length, to), the same merging of exactly-touching runs, and the same
/// consistency rules (MOVE destinations are sorted with `sorted(by:)` rather than by the C
/// core's pairwise-or-heapsort split; the answer is the same).
internal enum _SwiftRunEncoding: _RunEncoding {
    /// Everything that can be said about one run alone (as `run_is_well_formed` in changes.c).
    @inline(__always)
    static func _isWellFormed(_ r: _ArrayRun) -> Bool {
        guard r.start >= 0, r.length >= 1, r.to >= 0, r.start <= Int.max - r.length else { return false }
        return r.op == .move ? r.to <= Int.max - r.length : r.to == 0
    }

    /// Canonical sort key (op, start, length, to).
    @inline(__always)
    static func _less(_ a: _ArrayRun, _ b: _ArrayRun) -> Bool {
        if a.op != b.op { return a.op.rawValue < b.op.rawValue }
        if a.start != b.start { return a.start < b.start }
        if a.length != b.length { return a.length < b.length }
        return a.to < b.to
    }

    /// Whether `b`, which follows `a` in canonical order, continues it exactly.
    @inline(__always)
    static func _continues(_ a: _ArrayRun, _ b: _ArrayRun) -> Bool {
        guard a.op == b.op, a.start + a.length == b.start else { return false }
        return a.op != .move || a.to + a.length == b.to
    }

    static func normalize(_ runs: inout [_ArrayRun]) {
        for run in runs where !_isWellFormed(run) {
            fatalError("ObserveCore internal error: malformed array change run \(run)")
        }
        if runs.count < 2 { return }
        runs.sort(by: _less)
        var n = 1
        for i in 1..<runs.count {
            if _continues(runs[n - 1], runs[i]) {
                runs[n - 1].length += runs[i].length
            } else {
                runs[n] = runs[i]
                n += 1
            }
        }
        runs.removeLast(runs.count - n)
    }

    static func validate(_ runs: [_ArrayRun], oldCount: Int, newCount: Int) -> Bool {
        guard oldCount >= 0, newCount >= 0 else { return false }
        if runs.isEmpty { return oldCount == newCount }
        var removed = 0, inserted = 0
        var removes: [_ArrayRun] = [], inserts: [_ArrayRun] = [], moves: [_ArrayRun] = [], modifies: [_ArrayRun] = []
        for (i, r) in runs.enumerated() {
            guard _isWellFormed(r) else { return false }
            let limit = (r.op == .remove || r.op == .move) ? oldCount : newCount
            guard r.start + r.length <= limit else { return false }
            if r.op == .move, r.to + r.length > newCount { return false }
            if i > 0 {
                let p = runs[i - 1]
                if p.op.rawValue > r.op.rawValue { return false }
                if p.op == r.op {
                    let end = p.start + p.length
                    if end > r.start || (end == r.start && r.op != .move) || _continues(p, r) { return false }
                }
            }
            switch r.op {
            case .remove: removed += r.length; removes.append(r)
            case .insert: inserted += r.length; inserts.append(r)
            case .move: moves.append(r)
            case .modify: modifies.append(r)
            }
        }
        if _intersect(removes, moves, aDest: false, bDest: false) { return false }
        if _intersect(inserts, modifies, aDest: false, bDest: false) { return false }
        let byDestination = moves.sorted { $0.to < $1.to }
        for i in byDestination.indices.dropFirst() where byDestination[i - 1].to + byDestination[i - 1].length > byDestination[i].to {
            return false
        }
        if _intersect(byDestination, inserts, aDest: true, bDest: false) { return false }
        return oldCount - removed == newCount - inserted
    }

    /// Whether two sorted, internally disjoint span lists share an index.
    private static func _intersect(_ a: [_ArrayRun], _ b: [_ArrayRun], aDest: Bool, bDest: Bool) -> Bool {
        var i = 0, j = 0
        while i < a.count && j < b.count {
            let aStart = aDest ? a[i].to : a[i].start, aEnd = aStart + a[i].length
            let bStart = bDest ? b[j].to : b[j].start, bEnd = bStart + b[j].length
            if aEnd <= bStart {
                i += 1
            } else if bEnd <= aStart {
                j += 1
            } else {
                return true
            }
        }
        return false
    }
}

// MARK: - Batch composer

/// The segment model of `cobs_batch` (changes.c), in Swift arrays: maximal segments of original
/// and inserted elements, modified originals as sorted spans of old indices, and at finish the
/// heaviest increasing subsequence with the C core's tie-breaking (greater weight, then smaller
/// displacement, then smaller rank), so that both backends report the same runs.
/// - Complexity: each edit O(segments); finish O(segments log segments), cached until the next edit.
internal final class _SwiftBatchComposer: _BatchComposing {
    /// `origin == _inserted` marks elements inserted during the batch.
    private struct _Segment {
        var origin: Int
        var length: Int
    }

    /// Modified ORIGINAL elements, old indices `start ..< start + length`.
    private struct _Span {
        var start: Int
        var length: Int
    }

    private static let _inserted = -1

    private let _oldCount: Int
    private(set) var count: Int
    private var _segments: [_Segment] = []
    private var _modified: [_Span] = []
    private var _cached: [_ArrayRun]?

    init(oldCount: Int) {
        _require(oldCount >= 0, "ObserveCore internal error: negative old count \(oldCount)")
        _oldCount = oldCount
        count = oldCount
        if oldCount > 0 { _segments.append(_Segment(origin: 0, length: oldCount)) }
    }

    @inline(__always)
    private static func _mergeable(_ a: _Segment, _ b: _Segment) -> Bool {
        if a.origin == _inserted || b.origin == _inserted { return a.origin == b.origin }
        return a.origin + a.length == b.origin
    }

    private func _mergePair(_ i: Int) {
        guard i >= 0, i + 1 < _segments.count, Self._mergeable(_segments[i], _segments[i + 1]) else { return }
        _segments[i].length += _segments[i + 1].length
        _segments.remove(at: i + 1)
    }

    private func _mergeAround(_ i: Int) {
        _mergePair(i)
        _mergePair(i - 1)
    }

    /// Makes `position` a segment boundary; the index of the segment starting there.
    private func _split(at position: Int) -> Int {
        var at = 0
        for i in _segments.indices {
            if position == at { return i }
            let s = _segments[i]
            if position - at < s.length {
                let head = position - at
                _segments[i].length = head
                _segments.insert(
                    _Segment(origin: s.origin == Self._inserted ? Self._inserted : s.origin + head, length: s.length - head),
                    at: i + 1)
                return i + 1
            }
            at += s.length
        }
        _require(position == at, "ObserveCore internal error: batch segments do not add up")
        return _segments.count
    }

    @inline(__always)
    private func _requireValid(_ condition: Bool, _ function: StaticString) {
        if !condition { fatalError("ObserveCore internal error: invalid arguments to batch \(function)") }
    }

    func insert(at index: Int, count n: Int) {
        _requireValid(n >= 1 && index >= 0 && index <= count && n <= Int.max - count, "insert")
        let i = _split(at: index)
        _segments.insert(_Segment(origin: Self._inserted, length: n), at: i)
        _mergeAround(i)
        count += n
        _cached = nil
    }

    func remove(at index: Int, count n: Int) -> [Int?] {
        _requireValid(n >= 1 && index >= 0 && index <= count && n <= count - index, "remove")
        let from = _split(at: index)
        let to = _split(at: index + n)
        var origins: [Int?] = []
        origins.reserveCapacity(n)
        for s in _segments[from..<to] {
            for t in 0..<s.length { origins.append(s.origin == Self._inserted ? nil : s.origin + t) }
        }
        _segments.removeSubrange(from..<to)
        _mergePair(from - 1)
        count -= n
        _cached = nil
        return origins
    }

    func move(from: Int, to: Int) {
        _requireValid(from >= 0 && from < count && to >= 0 && to < count, "move")
        if from == to { return }
        let at = _split(at: from)
        _ = _split(at: from + 1)
        let moved = _segments.remove(at: at)
        _mergePair(at - 1)
        let i = _split(at: to)
        _segments.insert(moved, at: i)
        _mergeAround(i)
        _cached = nil
    }

    func permute(_ permutation: [Int]) {
        _requireValid(permutation.count == count, "permute")
        var origins: [Int] = []
        origins.reserveCapacity(count)
        for s in _segments {
            for t in 0..<s.length { origins.append(s.origin == Self._inserted ? Self._inserted : s.origin + t) }
        }
        var seen = [Bool](repeating: false, count: count)
        var segments: [_Segment] = []
        for from in permutation {
            _requireValid(from >= 0 && from < count && !seen[from], "permute")
            seen[from] = true
            let next = _Segment(origin: origins[from], length: 1)
            if let last = segments.last, Self._mergeable(last, next) { segments[segments.count - 1].length += 1 }
            else { segments.append(next) }
        }
        _segments = segments
        _cached = nil
    }

    func modify(at index: Int) {
        _requireValid(index >= 0 && index < count, "modify")
        var at = 0, i = 0
        while index - at >= _segments[i].length {
            at += _segments[i].length
            i += 1
        }
        if _segments[i].origin == Self._inserted { return }
        let origin = _segments[i].origin + (index - at)
        // p = the first span starting after `origin`.
        var lo = 0, hi = _modified.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if _modified[mid].start <= origin { lo = mid + 1 } else { hi = mid }
        }
        let p = lo
        if p > 0, origin < _modified[p - 1].start + _modified[p - 1].length { return }
        let joinsPrevious = p > 0 && _modified[p - 1].start + _modified[p - 1].length == origin
        let joinsNext = p < _modified.count && origin + 1 == _modified[p].start
        if joinsPrevious && joinsNext {
            _modified[p - 1].length += 1 + _modified[p].length
            _modified.remove(at: p)
        } else if joinsPrevious {
            _modified[p - 1].length += 1
        } else if joinsNext {
            _modified[p].start -= 1
            _modified[p].length += 1
        } else {
            _modified.insert(_Span(start: origin, length: 1), at: p)
        }
        _cached = nil
    }

    func finish() -> [_ArrayRun] {
        if let cached = _cached { return cached }
        let runs = _compose()
        _cached = runs
        return runs
    }

    /// One ORIGINAL segment as finish sees it.
    private struct _Item {
        var origin: Int
        var length: Int
        var newPosition: Int
        var rank: Int
    }

    private func _compose() -> [_ArrayRun] {
        // 1. ORIGINAL segments with their current position and rank, by origin.
        var items: [_Item] = []
        var position = 0
        for s in _segments {
            if s.origin != Self._inserted {
                items.append(_Item(origin: s.origin, length: s.length, newPosition: position, rank: items.count))
            }
            position += s.length
        }
        items.sort { $0.origin < $1.origin }
        let k = items.count

        // 4. Heaviest increasing subsequence of ranks; ties to the smaller displacement, then the
        //    smaller rank (see changes.c).
        var best = [Int](repeating: 0, count: k)
        var predecessor = [Int](repeating: -1, count: k)
        var tree = [Int](repeating: -1, count: k + 1)
        func beats(_ i: Int, _ j: Int) -> Bool {
            if j < 0 { return true }
            if best[i] != best[j] { return best[i] > best[j] }
            let di = abs(items[i].newPosition - items[i].origin), dj = abs(items[j].newPosition - items[j].origin)
            if di != dj { return di < dj }
            return items[i].rank < items[j].rank
        }
        var end = -1
        for i in 0..<k {
            var j = -1
            var p = items[i].rank
            while p > 0 {
                if tree[p] >= 0 && beats(tree[p], j) { j = tree[p] }
                p -= p & -p
            }
            best[i] = items[i].length + (j < 0 ? 0 : best[j])
            predecessor[i] = j
            p = items[i].rank + 1
            while p <= k {
                if beats(i, tree[p]) { tree[p] = i }
                p += p & -p
            }
            if beats(i, end) { end = i }
        }
        var stays = [Bool](repeating: false, count: k)
        var i = end
        while i >= 0 {
            stays[i] = true
            i = predecessor[i]
        }

        var runs: [_ArrayRun] = []
        func emit(_ op: _RunOp, _ start: Int, _ length: Int, _ to: Int = 0) {
            let run = _ArrayRun(op, start: start, length: length, to: to)
            if let last = runs.last, _SwiftRunEncoding._continues(last, run) {
                runs[runs.count - 1].length += length
            } else {
                runs.append(run)
            }
        }
        // 2. REMOVE: gaps between the surviving ORIGINAL segments.
        var covered = 0
        for item in items {
            if item.origin > covered { emit(.remove, covered, item.origin - covered) }
            covered = item.origin + item.length
        }
        if covered < _oldCount { emit(.remove, covered, _oldCount - covered) }
        // 3. INSERT.
        position = 0
        for s in _segments {
            if s.origin == Self._inserted { emit(.insert, position, s.length) }
            position += s.length
        }
        // MOVE: every ORIGINAL segment off the chain, by origin.
        for (index, item) in items.enumerated() where !stays[index] {
            emit(.move, item.origin, item.length, item.newPosition)
        }
        // 5. MODIFY, in current order.
        if !_modified.isEmpty {
            position = 0
            for s in _segments {
                if s.origin != Self._inserted {
                    let segmentEnd = s.origin + s.length
                    var lo = 0, hi = _modified.count  // first span ending after s.origin
                    while lo < hi {
                        let mid = (lo + hi) / 2
                        if _modified[mid].start + _modified[mid].length <= s.origin { lo = mid + 1 } else { hi = mid }
                    }
                    var m = lo
                    while m < _modified.count && _modified[m].start < segmentEnd {
                        let from = max(_modified[m].start, s.origin)
                        let until = min(_modified[m].start + _modified[m].length, segmentEnd)
                        emit(.modify, position + (from - s.origin), until - from)
                        m += 1
                    }
                }
                position += s.length
            }
        }
        return runs
    }
}

// MARK: - Position index

/// Element address -> slots, in two dictionaries: the first slot of every element, and the
/// further slots of elements that appear more than once (rare), so that the common case costs
/// one dictionary entry and no per-element array. `_morePosition` gives each further slot's
/// position in its element's array, so a copy is added, removed or moved in O(1) however many
/// copies there are (as in the C index's duplicate records). Unlike the C index it stores the
/// addresses and does not need the ring to answer; it reads the ring only where the contract
/// says the C index would check it (insert, checkInvariants), so both backends trap on the same
/// misuse.
internal final class _SwiftPositionIndex: _PositionIndexing {
    private var _first: [UInt: UInt32]
    private var _more: [UInt: [UInt32]] = [:]
    private var _morePosition: [UInt32: Int] = [:]
    private(set) var count = 0

    init(capacityHint: Int) {
        _first = Dictionary(minimumCapacity: max(capacityHint, 0))
    }

    @inline(__always)
    private static func _maskIsValid(_ mask: UInt32) -> Bool {
        (UInt64(mask) + 1) & UInt64(mask) == 0 && mask <= 0x7FFF_FFFF
    }

    @inline(never)
    private static func _fail(_ what: String) -> Never {
        fatalError("ObserveCore internal error: position index \(what)")
    }

    /// The position of `slot` among `element`'s further slots, if it is one of them.
    private func _position(of slot: UInt32, element: UInt) -> Int? {
        guard let position = _morePosition[slot], let more = _more[element],
              position < more.count, more[position] == slot else { return nil }
        return position
    }

    private func _appendMore(_ slot: UInt32, element: UInt) {
        _morePosition[slot] = _more[element]?.count ?? 0
        _more[element, default: []].append(slot)
    }

    /// Removes the further slot at `position` (swapping the last into its place).
    private func _removeMore(at position: Int, element: UInt) {
        let removed = _more[element]![position]
        let last = _more[element]!.removeLast()
        if last != removed {
            _more[element]![position] = last
            _morePosition[last] = position
        }
        _morePosition[removed] = nil
        if _more[element]!.isEmpty { _more[element] = nil }
    }

    func insert(ring: _RingAddresses, mask: UInt32, element: UInt, slot: UInt32) {
        if element == 0 || !Self._maskIsValid(mask) || slot > mask || ring[Int(slot)] != element {
            Self._fail("insert: invalid arguments (element \(element), slot \(slot), mask \(mask))")
        }
        if let first = _first[element] {
            if first == slot || _position(of: slot, element: element) != nil {
                Self._fail("insert: (element \(element), slot \(slot)) is already recorded")
            }
            _appendMore(slot, element: element)
        } else {
            _first[element] = slot
        }
        count += 1
    }

    func remove(ring: _RingAddresses, mask: UInt32, element: UInt, slot: UInt32) {
        if element == 0 || !Self._maskIsValid(mask) || slot > mask {
            Self._fail("remove: invalid arguments (element \(element), slot \(slot), mask \(mask))")
        }
        guard let first = _first[element] else { Self._fail("remove: (element \(element), slot \(slot)) not found") }
        if first == slot {
            if let more = _more[element] {
                // The last further slot becomes the first.
                let promoted = more[more.count - 1]
                _removeMore(at: more.count - 1, element: element)
                _first[element] = promoted
            } else {
                _first[element] = nil
            }
        } else {
            guard let position = _position(of: slot, element: element) else {
                Self._fail("remove: (element \(element), slot \(slot)) not found")
            }
            _removeMore(at: position, element: element)
        }
        count -= 1
    }

    func move(mask: UInt32, element: UInt, from: UInt32, to: UInt32) {
        if element == 0 || !Self._maskIsValid(mask) || from > mask || to > mask {
            Self._fail("move: invalid arguments (element \(element), \(from) -> \(to), mask \(mask))")
        }
        if _first[element] == from {
            _first[element] = to
        } else if let position = _position(of: from, element: element) {
            _more[element]![position] = to
            _morePosition[from] = nil
            _morePosition[to] = position
        } else {
            Self._fail("move: (element \(element), slot \(from)) not found")
        }
    }

    func lookup(ring: _RingAddresses, mask: UInt32, element: UInt, into slots: inout [UInt32]) {
        slots._removeAllKeepingCapacity()
        guard let first = _first[element] else { return }
        slots.append(first)
        if let more = _more[element] { slots.append(contentsOf: more) }
    }

    /// The twin rewrites each moved element's entry (it has no shift log: it is the reference
    /// the C index's log is checked against). Back to front for a move toward higher slots, front
    /// to back otherwise, so that no entry is rewritten onto a slot another still holds.
    func shift(ring: _RingAddresses, mask: UInt32, first: UInt32, count: Int, delta: Int) -> Bool {
        if !Self._maskIsValid(mask) || first > mask || count < 0 || count + abs(delta) > Int(mask) + 1 {
            Self._fail("shift: invalid arguments (first \(first), count \(count), delta \(delta), mask \(mask))")
        }
        let m = Int(mask)
        let order = delta > 0 ? Array((0..<count).reversed()) : Array(0..<count)
        for j in order {
            let from = (Int(first) + j) & m, to = (Int(first) + j + delta) & m
            if ring[to] != 0 { move(mask: mask, element: ring[to], from: UInt32(from), to: UInt32(to)) }
        }
        return true
    }

    /// The Swift twin records every move entry by entry: it has no log to fold.
    func fold() -> Bool { true }

    func singleSlot(ring: _RingAddresses, mask: UInt32, element: UInt) -> UInt32? {
        _more[element] == nil ? _first[element] : nil
    }

    func rebuild(ring: _RingAddresses, mask: UInt32, head: UInt32, count n: Int) {
        if !Self._maskIsValid(mask) || head > mask || n < 0 || UInt64(n) > UInt64(mask) + 1 {
            Self._fail("rebuild: invalid arguments (mask \(mask), head \(head), count \(n))")
        }
        for i in 0..<n where ring[(Int(head) + i) & Int(mask)] == 0 {
            Self._fail("rebuild: ring slot \((Int(head) + i) & Int(mask)) holds no element")
        }
        clear()
        _first.reserveCapacity(n)
        for i in 0..<n {
            let slot = UInt32((Int(head) + i) & Int(mask))
            let element = ring[Int(slot)]
            if _first[element] == nil {
                _first[element] = slot
            } else {
                _appendMore(slot, element: element)
            }
            count += 1
        }
    }

    func clear() {
        _first.removeAll(keepingCapacity: true)
        _more.removeAll(keepingCapacity: true)
        _morePosition.removeAll(keepingCapacity: true)
        count = 0
    }

    /// An estimate: the dictionaries' bucket storage (key, value, about a bit of metadata per
    /// bucket) plus the duplicate arrays' buffers (a 32-byte header and the slots).
    var bytes: Int {
        let firstBucket = MemoryLayout<UInt>.stride + MemoryLayout<UInt32>.stride
        let moreBucket = MemoryLayout<UInt>.stride + MemoryLayout<[UInt32]>.stride
        var total = _first.capacity * firstBucket + _first.capacity / 8
        total += _more.capacity * moreBucket + _more.capacity / 8
        total += _morePosition.capacity * (MemoryLayout<UInt32>.stride + MemoryLayout<Int>.stride) + _morePosition.capacity / 8
        for slots in _more.values { total += 32 + slots.capacity * MemoryLayout<UInt32>.stride }
        return total
    }

    func checkInvariants(ring: _RingAddresses, mask: UInt32) {
        _require(Self._maskIsValid(mask), "ObserveCore: position index checked with invalid mask \(mask)")
        var seen = Set<UInt32>()
        var total = 0
        func check(_ element: UInt, _ slot: UInt32) {
            _require(element != 0, "ObserveCore: position index holds element 0")
            _require(slot <= mask, "ObserveCore: position index slot \(slot) beyond mask \(mask)")
            _require(ring[Int(slot)] == element,
                     "ObserveCore: position index says slot \(slot) holds \(element), the ring says \(ring[Int(slot)])")
            _require(seen.insert(slot).inserted, "ObserveCore: position index records slot \(slot) twice")
            total += 1
        }
        for (element, slot) in _first { check(element, slot) }
        for (element, slots) in _more {
            _require(!slots.isEmpty && _first[element] != nil,
                     "ObserveCore: position index has further slots for \(element) but no first one")
            for (position, slot) in slots.enumerated() {
                check(element, slot)
                _require(_morePosition[slot] == position,
                         "ObserveCore: position index: further slot \(slot) of \(element) is not at its recorded position")
            }
        }
        _require(_morePosition.count == _more.values.reduce(0) { $0 + $1.count },
                 "ObserveCore: position index keeps positions of slots it no longer holds")
        _require(total == count, "ObserveCore: position index count \(count), but \(total) entries")
    }
}
