internal import CObserveCore

/// The array core backed by the C core: the change encoder and batch composer
/// (`cobs_changes.h`) and the element-position index (`cobs_positions.h`). This file is the only
/// one that names their `cobs_*` functions, and every status code they return is turned into
/// Swift in ``_CArrayStatus`` and nowhere else:
/// - `COBS_NOT_FOUND` from the position index means the array's bookkeeping disagrees with its
///   index (an entry it recorded is missing): an internal error, so it traps;
/// - `COBS_BUFFER_TOO_SMALL` is part of the output protocol (grow the buffer, ask again);
/// - `COBS_NO_MEMORY` traps with a message (Swift itself traps on allocation failure);
/// - `COBS_INVALID_ARGUMENT` traps as an internal error: the only callers are the array's own
///   mutators, which have already checked the user's indices (the user-facing message, in the
///   style of `Array`'s "Index out of range", is theirs to give).
internal enum _CArrayStatus {
    @inline(__always)
    static func check(_ status: cobs_status, _ function: StaticString) {
        if status != COBS_OK { fail(status, function) }
    }

    @inline(never)
    static func fail(_ status: cobs_status, _ function: StaticString) -> Never {
        let name = String(cString: cobs_status_name(status))
        if status == COBS_NO_MEMORY {
            fatalError("ObserveCore: out of memory in \(function) (\(name))")
        }
        fatalError("ObserveCore internal error: \(function) returned \(name)")
    }

    /// An index or count from a trusted caller, as the C core's `uint64_t`.
    @inline(__always)
    static func u64(_ value: Int, _ function: StaticString) -> UInt64 {
        if value < 0 {
            fatalError("ObserveCore internal error: negative index or count \(value) for \(function)")
        }
        return UInt64(value)
    }
}

extension _ArrayRun {
    /// A run the C core wrote (ops and indices are valid by its contract).
    @inline(__always)
    init(_ run: cobs_run) {
        guard let op = _RunOp(rawValue: run.op) else {
            fatalError("ObserveCore internal error: the C core produced run op \(run.op)")
        }
        self.init(op, start: Int(run.start), length: Int(run.length), to: Int(run.to))
    }

    /// The C record, or nil when a field is negative (no C record can say that).
    @inline(__always)
    var _cRun: cobs_run? {
        guard start >= 0, length >= 0, to >= 0 else { return nil }
        return cobs_run(op: op.rawValue, reserved_: 0, start: UInt64(start), length: UInt64(length),
                        to: UInt64(to))
    }
}

// MARK: - Encoder

/// `cobs_changes_normalize` / `cobs_changes_validate`. The runs are converted into a temporary
/// buffer (on the stack for small changes) and back, so a call allocates nothing beyond what
/// the array of runs already holds.
internal enum _CRunEncoding: _RunEncoding {
    static func normalize(_ runs: inout [_ArrayRun]) {
        let n = runs.count
        if n == 0 { return }
        let kept: Int = withUnsafeTemporaryAllocation(of: cobs_run.self, capacity: n) { buffer in
            for i in 0..<n {
                guard let run = runs[i]._cRun else {
                    fatalError("ObserveCore internal error: malformed array change run \(runs[i])")
                }
                buffer[i] = run
            }
            var kept = 0
            _CArrayStatus.check(cobs_changes_normalize(buffer.baseAddress, n, &kept), "cobs_changes_normalize")
            for i in 0..<kept { runs[i] = _ArrayRun(buffer[i]) }
            return kept
        }
        runs.removeLast(n - kept)
    }

    static func validate(_ runs: [_ArrayRun], oldCount: Int, newCount: Int) -> Bool {
        guard oldCount >= 0, newCount >= 0 else { return false }
        let n = runs.count
        return withUnsafeTemporaryAllocation(of: cobs_run.self, capacity: max(n, 1)) { buffer in
            for i in 0..<n {
                guard let run = runs[i]._cRun else { return false }
                buffer[i] = run
            }
            return cobs_changes_validate(buffer.baseAddress, n, UInt64(oldCount), UInt64(newCount)) == COBS_OK
        }
    }
}

// MARK: - Batch composer

/// A `cobs_batch`. Not thread-safe (the array's lock serializes it, as for the array itself).
internal final class _CBatchComposer: _BatchComposing {
    private let _batch: OpaquePointer
    /// Output buffer for `finish`, kept between calls.
    private var _runs: UnsafeMutablePointer<cobs_run>
    private var _runsCapacity: Int

    init(oldCount: Int) {
        var batch: OpaquePointer? = nil
        _CArrayStatus.check(
            cobs_batch_create(_CArrayStatus.u64(oldCount, "cobs_batch_create"), nil, &batch), "cobs_batch_create")
        _batch = batch!
        _runsCapacity = 16
        _runs = .allocate(capacity: _runsCapacity)
    }

    deinit {
        cobs_batch_destroy(_batch)
        _runs.deallocate()
    }

    var count: Int { Int(cobs_batch_count(_batch)) }

    func insert(at index: Int, count: Int) {
        _CArrayStatus.check(
            cobs_batch_insert(
                _batch, _CArrayStatus.u64(index, "cobs_batch_insert"), _CArrayStatus.u64(count, "cobs_batch_insert")),
            "cobs_batch_insert")
    }

    func remove(at index: Int, count: Int) -> [Int?] {
        let n = Int(_CArrayStatus.u64(count, "cobs_batch_remove"))
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: max(n, 1)) { origins in
            _CArrayStatus.check(
                cobs_batch_remove(_batch, _CArrayStatus.u64(index, "cobs_batch_remove"), UInt64(n), origins.baseAddress),
                "cobs_batch_remove")
            return [Int?](unsafeUninitializedCapacity: n) { out, initialized in
                for i in 0..<n {
                    let origin = origins[i]
                    (out.baseAddress! + i).initialize(to: origin == .max ? nil : Int(origin))
                }
                initialized = n
            }
        }
    }

    func move(from: Int, to: Int) {
        _CArrayStatus.check(
            cobs_batch_move(_batch, _CArrayStatus.u64(from, "cobs_batch_move"), _CArrayStatus.u64(to, "cobs_batch_move")),
            "cobs_batch_move")
    }

    func permute(_ permutation: [Int]) {
        let status = permutation.map { UInt64(bitPattern: Int64($0)) }.withUnsafeBufferPointer {
            cobs_batch_permute(_batch, $0.baseAddress, $0.count)
        }
        _CArrayStatus.check(status, "cobs_batch_permute")
    }

    func modify(at index: Int) {
        _CArrayStatus.check(cobs_batch_modify(_batch, _CArrayStatus.u64(index, "cobs_batch_modify")), "cobs_batch_modify")
    }

    func finish() -> [_ArrayRun] {
        var n = 0
        var status = cobs_batch_finish(_batch, _runs, _runsCapacity, &n)
        if status == COBS_BUFFER_TOO_SMALL {
            _runs.deallocate()
            _runsCapacity = max(n, _runsCapacity * 2)
            _runs = .allocate(capacity: _runsCapacity)
            status = cobs_batch_finish(_batch, _runs, _runsCapacity, &n)
        }
        _CArrayStatus.check(status, "cobs_batch_finish")
        // Not `unsafeUninitializedCapacity: 0`: in Swift 6.3 that writes the count of the shared
        // empty-array singleton, a race ThreadSanitizer reports when two threads finish empty
        // batches at once (hardening: ThreadedRegressionTests).
        guard n > 0 else { return [] }
        return [_ArrayRun](unsafeUninitializedCapacity: n) { out, initialized in
            for i in 0..<n { (out.baseAddress! + i).initialize(to: _ArrayRun(_runs[i])) }
            initialized = n
        }
    }
}

// MARK: - Position index

/// A `cobs_positions`: element address -> slots of the array's ring, 5 bytes per bucket.
/// Every call that takes `ring` relies on the RING INVARIANT of `cobs_positions.h`.
internal final class _CPositionIndex: _PositionIndexing {
    private let _pos: OpaquePointer
    /// Output buffer for `lookup`, kept between calls so that a lookup allocates nothing.
    private var _scratch: UnsafeMutablePointer<UInt32>
    private var _scratchCapacity: Int

    /// - Parameter seed: the hash seed; 0 (the default) asks the C core for a random one.
    init(capacityHint: Int, seed: UInt64 = 0) {
        var pos: OpaquePointer? = nil
        _CArrayStatus.check(
            cobs_positions_create(Int(_CArrayStatus.u64(capacityHint, "cobs_positions_create")), seed, nil, &pos),
            "cobs_positions_create")
        _pos = pos!
        _scratchCapacity = 8
        _scratch = .allocate(capacity: _scratchCapacity)
    }

    deinit {
        cobs_positions_destroy(_pos)
        _scratch.deallocate()
    }

    func insert(ring: _RingAddresses, mask: UInt32, element: UInt, slot: UInt32) {
        _CArrayStatus.check(cobs_positions_insert(_pos, ring.raw, mask, element, slot), "cobs_positions_insert")
    }

    func insertRun(ring: _RingAddresses, mask: UInt32, first: UInt32, count: Int) {
        _CArrayStatus.check(cobs_positions_insert_run(_pos, ring.raw, mask, first, count), "cobs_positions_insert_run")
    }

    func remove(ring: _RingAddresses, mask: UInt32, element: UInt, slot: UInt32) {
        _CArrayStatus.check(cobs_positions_remove(_pos, ring.raw, mask, element, slot), "cobs_positions_remove")
    }

    func move(mask: UInt32, element: UInt, from: UInt32, to: UInt32) {
        _CArrayStatus.check(cobs_positions_move(_pos, mask, element, from, to), "cobs_positions_move")
    }

    func shift(ring: _RingAddresses, mask: UInt32, first: UInt32, count: Int, delta: Int) -> Bool {
        let status = cobs_positions_shift(_pos, mask, first, UInt32(_CArrayStatus.u64(count, "cobs_positions_shift")),
                                          Int64(delta))
        if status == COBS_BUFFER_TOO_SMALL { return false }
        _CArrayStatus.check(status, "cobs_positions_shift")
        return true
    }

    func fold() -> Bool {
        let status = cobs_positions_fold(_pos)
        if status == COBS_NO_MEMORY { return false }
        _CArrayStatus.check(status, "cobs_positions_fold")
        return true
    }

    func lookup(ring: _RingAddresses, mask: UInt32, element: UInt, into slots: inout [UInt32]) {
        slots._removeAllKeepingCapacity()
        var n = 0
        var status = cobs_positions_lookup(_pos, ring.raw, mask, element, _scratch, _scratchCapacity, &n)
        if status == COBS_BUFFER_TOO_SMALL {
            _growScratch(to: n)
            status = cobs_positions_lookup(_pos, ring.raw, mask, element, _scratch, _scratchCapacity, &n)
        }
        _CArrayStatus.check(status, "cobs_positions_lookup")
        for i in 0..<n { slots.append(_scratch[i]) }
    }

    func singleSlot(ring: _RingAddresses, mask: UInt32, element: UInt) -> UInt32? {
        var slot: UInt32 = 0, n = 0
        let status = cobs_positions_lookup(_pos, ring.raw, mask, element, &slot, 1, &n)
        if status == COBS_BUFFER_TOO_SMALL { return nil }
        _CArrayStatus.check(status, "cobs_positions_lookup")
        return n == 1 ? slot : nil
    }

    @inline(never)
    private func _growScratch(to count: Int) {
        _scratch.deallocate()
        _scratchCapacity = max(count, _scratchCapacity * 2)
        _scratch = .allocate(capacity: _scratchCapacity)
    }

    func rebuild(ring: _RingAddresses, mask: UInt32, head: UInt32, count: Int) {
        _CArrayStatus.check(
            cobs_positions_rebuild(_pos, ring.raw, mask, head, Int(_CArrayStatus.u64(count, "cobs_positions_rebuild"))),
            "cobs_positions_rebuild")
    }

    func clear() { cobs_positions_clear(_pos) }

    var count: Int { cobs_positions_count(_pos) }

    var bytes: Int { cobs_positions_bytes(_pos) }

    /// Longest probe from an entry's home bucket (for tests and the benchmark).
    func maxDisplacement(ring: _RingAddresses, mask: UInt32) -> Int {
        cobs_positions_max_displacement(_pos, ring.raw, mask)
    }

    func checkInvariants(ring: _RingAddresses, mask: UInt32) {
        let status = cobs_positions_check_invariants(_pos, ring.raw, mask)
        if status != COBS_OK {
            fatalError("ObserveCore: C position index invariants broken "
                + "(\(String(cString: cobs_status_name(status))); details on stderr)")
        }
    }
}
