internal import CObserveCore

/// An array change as data: its runs and the values of the elements it inserted or modified —
/// what a replica in another process needs to apply it, and nothing that ties it to this one.
///
/// Make one from an ``ArrayChange`` in a handler, send its bytes (``encoded(values:)``, or any
/// `Encoder` when `Element` is `Codable`), and apply the decoded record to the replica:
///
/// ```swift
/// // The source process:
/// let token = jobs.observe(elementKeyPaths: [\.status]) { _, change in
///     let bytes = ArrayChangeRecord(change).encoded { try! JSONEncoder().encode($0) }
///     publish(bytes)                                // a pipe, a file, a message broker
/// }
/// // The replica's process:
/// let record = try ArrayChangeRecord<Job>(decoding: bytes) { try JSONDecoder().decode([Job].self, from: Data($0)) }
/// try replica.apply(record)                         // an ObservableArray: observers get one .batch change
/// ```
///
/// The byte form is the C core's (`include/cobs_wire.h`, version 1): the runs in a few varints,
/// then a varint byte length and the values in the caller's encoding. A decoder accepts only
/// canonical, consistent runs and the exact number of values they need, so a malformed input
/// throws ``ArrayChangeRecordError`` and never applies out of range.
public struct ArrayChangeRecord<Element> {
    /// Elements before the change.
    public let oldCount: Int
    /// Elements after it.
    public let newCount: Int
    /// The runs, canonical (removals, insertions, moves, modifications, each ascending).
    internal let _runs: [_ArrayRun]
    /// The inserted elements (ascending new index), then the modified ones (ascending new index).
    public let values: [Element]

    /// The runs, as ``ArrayChange/runs`` gives them.
    public var runs: [ArrayChange<Element>.Run] { ArrayChange<Element>._publicRuns(_runs) }

    /// The record of `change`. An ``ArrayChange/Kind/arrayReplaced`` change becomes the removal
    /// of every old element and the insertion of every new one.
    public init(_ change: ArrayChange<Element>) {
        if change.kind == .arrayReplaced {
            let contents = change.applying(to: []) ?? []
            var runs: [_ArrayRun] = []
            if change.oldCount > 0 { runs.append(_ArrayRun(.remove, start: 0, length: change.oldCount)) }
            if !contents.isEmpty { runs.append(_ArrayRun(.insert, start: 0, length: contents.count)) }
            self.init(oldCount: change.oldCount, newCount: contents.count, runs: runs, values: contents)
            return
        }
        var values: [Element] = []
        let runs = change._runs
        for run in runs where run.op == .insert || run.op == .modify {
            for index in run.start..<(run.start + run.length) { values.append(change._snapshot.unsafelyUnwrapped[index]) }
        }
        change._snapshot?.readerDone()
        self.init(oldCount: change.oldCount, newCount: change.newCount, runs: runs, values: values)
    }

    private init(oldCount: Int, newCount: Int, runs: [_ArrayRun], values: [Element]) {
        self.oldCount = oldCount
        self.newCount = newCount
        self._runs = runs
        self.values = values
    }

    /// How many values the runs need: one per inserted and per modified element.
    private static func _valueCount(_ runs: [_ArrayRun]) -> Int {
        runs.reduce(0) { $0 + ($1.op == .insert || $1.op == .modify ? $1.length : 0) }
    }

    // MARK: Applying

    /// `old` turned into the new contents. `old` must be the replica's contents before the change.
    ///
    /// ```swift
    /// replica = try record.applying(to: replica)
    /// ```
    /// - Throws: ``ArrayChangeRecordError/countMismatch(expected:found:)`` when `old` does not have
    ///   ``oldCount`` elements (the replica missed or repeated a change).
    public func applying(to old: [Element]) throws -> [Element] {
        guard old.count == oldCount else { throw ArrayChangeRecordError.countMismatch(expected: oldCount, found: old.count) }
        var taken = [Bool](repeating: false, count: oldCount)
        var slots = [Element?](repeating: nil, count: newCount)
        var next = values.startIndex
        for run in _runs {
            for k in 0..<run.length {
                switch run.op {
                case .remove: taken[run.start + k] = true
                case .move:
                    taken[run.start + k] = true
                    slots[run.to + k] = old[run.start + k]
                case .insert:
                    slots[run.start + k] = values[next]
                    next += 1
                case .modify: break
                }
            }
        }
        // The kept elements fill the other slots in order; then the modifications land.
        var kept = old.indices.lazy.filter { !taken[$0] }.makeIterator()
        for index in slots.indices where slots[index] == nil { slots[index] = old[kept.next()!] }
        for run in _runs where run.op == .modify {
            for k in 0..<run.length {
                slots[run.start + k] = values[next]
                next += 1
            }
        }
        return slots.map { $0! }
    }

    // MARK: Bytes

    /// The record's bytes: the runs in the C core's form (`cobs_wire.h`), a varint byte length,
    /// then `encode(values)`.
    ///
    /// ```swift
    /// let bytes = record.encoded { values in try JSONEncoder().encode(values) }
    /// ```
    public func encoded<Bytes: Collection<UInt8>>(values encode: ([Element]) throws -> Bytes) rethrows -> [UInt8] {
        var bytes = _encodedRuns()
        let payload = try encode(values)
        _appendVarint(UInt64(payload.count), to: &bytes)
        bytes.append(contentsOf: payload)
        return bytes
    }

    /// Decodes what ``encoded(values:)`` wrote; `decode` turns the value bytes back into the
    /// values.
    ///
    /// ```swift
    /// let record = try ArrayChangeRecord<Int>(decoding: bytes) { try JSONDecoder().decode([Int].self, from: Data($0)) }
    /// ```
    /// - Throws: ``ArrayChangeRecordError`` for malformed bytes (and whatever `decode` throws).
    public init(decoding bytes: some Collection<UInt8>, values decode: ([UInt8]) throws -> [Element]) throws {
        let bytes = Array(bytes)
        let (oldCount, newCount, runs, consumed) = try Self._decodeRuns(bytes)
        var position = consumed
        guard let length = _readVarint(bytes, &position), length <= UInt64(bytes.count - position) else {
            throw ArrayChangeRecordError.malformed("the values' length is missing or longer than the bytes")
        }
        let end = position + Int(length)
        guard end == bytes.count else {
            throw ArrayChangeRecordError.malformed("\(bytes.count - end) bytes after the values")
        }
        let values = try decode(Array(bytes[position..<end]))
        try self.init(checking: oldCount, newCount, runs, values)
    }

    private init(checking oldCount: Int, _ newCount: Int, _ runs: [_ArrayRun], _ values: [Element]) throws {
        let needed = Self._valueCount(runs)
        guard values.count == needed else { throw ArrayChangeRecordError.valueCountMismatch(expected: needed, found: values.count) }
        self.init(oldCount: oldCount, newCount: newCount, runs: runs, values: values)
    }

    /// The runs in the C core's byte form.
    internal func _encodedRuns() -> [UInt8] {
        let cRuns = _runs.map { cobs_run(op: $0.op.rawValue, reserved_: 0, start: UInt64($0.start),
                                         length: UInt64($0.length), to: UInt64($0.to)) }
        var size = 0
        _ = cRuns.withUnsafeBufferPointer {
            cobs_wire_encode_runs($0.baseAddress, $0.count, UInt64(oldCount), UInt64(newCount), nil, 0, &size)
        }
        var bytes = [UInt8](repeating: 0, count: size)
        let status = cRuns.withUnsafeBufferPointer { runs in
            bytes.withUnsafeMutableBufferPointer { out in
                cobs_wire_encode_runs(runs.baseAddress, runs.count, UInt64(oldCount), UInt64(newCount),
                                      out.baseAddress, out.count, &size)
            }
        }
        _require(status == COBS_OK, "ObserveCore internal error: an array change's runs do not encode (\(status.rawValue))")
        return bytes
    }

    /// Reads the runs at the start of `bytes`; throws for anything the C decoder rejects.
    internal static func _decodeRuns(_ bytes: [UInt8]) throws -> (Int, Int, [_ArrayRun], Int) {
        var count = 0, consumed = 0
        var oldCount: UInt64 = 0, newCount: UInt64 = 0
        var status = bytes.withUnsafeBufferPointer {
            cobs_wire_decode_runs($0.baseAddress, $0.count, nil, 0, &count, &oldCount, &newCount, &consumed)
        }
        var cRuns: [cobs_run] = []
        if status == COBS_BUFFER_TOO_SMALL {
            cRuns = [cobs_run](repeating: cobs_run(), count: count)
            status = bytes.withUnsafeBufferPointer { input in
                cRuns.withUnsafeMutableBufferPointer { out in
                    cobs_wire_decode_runs(input.baseAddress, input.count, out.baseAddress, out.count, &count,
                                          &oldCount, &newCount, &consumed)
                }
            }
        }
        guard status == COBS_OK, oldCount <= UInt64(Int.max), newCount <= UInt64(Int.max) else {
            throw ArrayChangeRecordError.malformed("the runs are not a well-formed, consistent change (cobs_wire.h)")
        }
        let runs = cRuns.prefix(count).map {
            _ArrayRun(_RunOp(rawValue: $0.op)!, start: Int($0.start), length: Int($0.length), to: Int($0.to))
        }
        return (Int(oldCount), Int(newCount), runs, consumed)
    }
}

/// Why bytes could not become an ``ArrayChangeRecord``, or a record could not be applied.
public enum ArrayChangeRecordError: Error, Equatable, CustomStringConvertible {
    /// The bytes are not a change in the format of `cobs_wire.h` (the reason says where).
    case malformed(String)
    /// The runs need `expected` values; the value bytes held `found`.
    case valueCountMismatch(expected: Int, found: Int)
    /// The replica has `found` elements; the change applies to `expected`.
    case countMismatch(expected: Int, found: Int)

    public var description: String {
        switch self {
        case .malformed(let reason): return "ArrayChangeRecord: malformed bytes: \(reason)"
        case .valueCountMismatch(let expected, let found):
            return "ArrayChangeRecord: the runs need \(expected) values, the bytes hold \(found)"
        case .countMismatch(let expected, let found):
            return "ArrayChangeRecord: the change applies to \(expected) elements, the replica has \(found) "
                + "(it missed or repeated a change)"
        }
    }
}

extension ArrayChangeRecord: Sendable where Element: Sendable {}
extension ArrayChangeRecord: Equatable where Element: Equatable {}

extension ArrayChangeRecord: Codable where Element: Codable {
    private enum CodingKeys: String, CodingKey { case runs, values }

    /// The runs as their bytes (`cobs_wire.h`), the values as `[Element]` in the encoder's own form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(_encodedRuns(), forKey: .runs)
        try container.encode(values, forKey: .values)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let bytes = try container.decode([UInt8].self, forKey: .runs)
        let (oldCount, newCount, runs, consumed) = try Self._decodeRuns(bytes)
        guard consumed == bytes.count else {
            throw ArrayChangeRecordError.malformed("\(bytes.count - consumed) bytes after the runs")
        }
        try self.init(checking: oldCount, newCount, runs, try container.decode([Element].self, forKey: .values))
    }
}

extension ObservableArray {
    /// Applies a change recorded from another array with the same contents (a replica): one
    /// ``ArrayChange/Kind/batch`` change for this array's observers. The replica's observers see
    /// the source's moves and modifications as removals and insertions (the contents are the
    /// same; the edit is applied one element at a time, O(changed elements × count)).
    ///
    /// ```swift
    /// try replica.apply(record)
    /// ```
    /// - Throws: ``ArrayChangeRecordError/countMismatch(expected:found:)`` when this array does not
    ///   have the record's ``ArrayChangeRecord/oldCount`` elements. Apply records to an array
    ///   nothing else mutates meanwhile.
    public func apply(_ record: ArrayChangeRecord<Element>) throws {
        try performBatchUpdates { array in
            // Checked inside the batch, so that the count cannot change between check and edits
            // through this array's own batch (another thread's mutation would still join it).
            let count = array.count
            guard count == record.oldCount else {
                throw ArrayChangeRecordError.countMismatch(expected: record.oldCount, found: count)
            }
            // Removals and moves' sources out, highest first; then insertions and moves'
            // destinations in, lowest first; then the modified elements replaced.
            var moved: [Int: Element] = [:]
            var outs: [(index: Int, moveTo: Int?)] = []
            for run in record._runs where run.op == .remove || run.op == .move {
                for k in 0..<run.length { outs.append((run.start + k, run.op == .move ? run.to + k : nil)) }
            }
            for out in outs.sorted(by: { $0.index > $1.index }) {
                let element = array.remove(at: out.index)
                if let destination = out.moveTo { moved[destination] = element }
            }
            var next = 0
            var ins: [(index: Int, element: Element)] = []
            for run in record._runs where run.op == .insert {
                for k in 0..<run.length {
                    ins.append((run.start + k, record.values[next]))
                    next += 1
                }
            }
            for (destination, element) in moved { ins.append((destination, element)) }
            for insertion in ins.sorted(by: { $0.index < $1.index }) { array.insert(insertion.element, at: insertion.index) }
            for run in record._runs where run.op == .modify {
                for k in 0..<run.length {
                    array[run.start + k] = record.values[next]
                    next += 1
                }
            }
        }
    }
}

// MARK: - Varints (the value length after the runs)

private func _appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
    var v = value
    while v >= 0x80 {
        bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
        v >>= 7
    }
    bytes.append(UInt8(v))
}

private func _readVarint(_ bytes: [UInt8], _ position: inout Int) -> UInt64? {
    var value: UInt64 = 0
    for i in 0..<10 {
        guard position < bytes.count else { return nil }
        let byte = bytes[position]
        position += 1
        let group = UInt64(byte & 0x7F)
        if i == 9 && group > 1 { return nil }
        value |= group << UInt64(7 * i)
        if byte & 0x80 == 0 { return i > 0 && group == 0 ? nil : value }
    }
    return nil
}

// MARK: - Property changes

extension ObservedChange: Codable where Value: Codable {
    private enum CodingKeys: String, CodingKey { case oldValue, newValue, isPrior, isInitial }

    /// The values present (an absent one is omitted) and the two flags, so that a property
    /// change of a `Codable` value can be sent like an ``ArrayChangeRecord``.
    ///
    /// ```swift
    /// let data = try JSONEncoder().encode(change)   // {"oldValue":"Ada","newValue":"Grace",…}
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(oldValue, forKey: .oldValue)
        try container.encodeIfPresent(newValue, forKey: .newValue)
        try container.encode(isPrior, forKey: .isPrior)
        try container.encode(isInitial, forKey: .isInitial)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(oldValue: try container.decodeIfPresent(Value.self, forKey: .oldValue),
                  newValue: try container.decodeIfPresent(Value.self, forKey: .newValue),
                  isPrior: try container.decode(Bool.self, forKey: .isPrior),
                  isInitial: try container.decode(Bool.self, forKey: .isInitial))
    }
}
