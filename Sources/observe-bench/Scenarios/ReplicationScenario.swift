@_spi(Testing) import ObserveCore

// `replication.batch-100`: what it costs to send an array's change to a replica in another
// process. The change is array.batch-100's (100 seeded edits, one .batch change), made untimed
// on an observed ObservableArray<Int> of N; one op is ArrayChangeRecord(change), its bytes
// (runs in the C core's wire form + the inserted and modified values, 8 bytes each) and their
// decoding back into a record. `plain` sends the whole array instead: its N values as bytes and
// back. The bytes/item column is the bytes sent per op.

struct ReplicationScenario: ArrayScenario {
    let n: Int
    var name: String { "replication.batch-100" }
    var summary: String {
        "send array.batch-100's change to a replica: ArrayChangeRecord + encode + decode (bytes/item: bytes sent); "
            + "plain sends the whole array"
    }
    var unit: String { "ns per change" }
    var impls: [Impl] { [.c, .plain] }
    var peer: Impl? { .plain }
    var notes: [String] {
        ["values are 8-byte little-endian integers on both sides (the format leaves the values' encoding to the "
         + "caller); the decoded record's values and runs are checked against the change at tear-down."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { cheapSampling(config, measureFraction: 0.5) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "\(name)/\(impl.rawValue)"
        var script = EditScript(count: n)
        let array = ObservableArray(Array(0..<n), backend: .c)
        var change: ArrayChange<Int>?
        let token = array.observe { _, observed in change = observed }
        var sentBytes = 0, ops = 0
        var lastDecoded: ArrayChangeRecord<Int>?
        let prepare: (Int) -> Void = { _ in
            let edits = script.nextBatch()
            array.performBatchUpdates { array in
                for edit in edits {
                    switch edit {
                    case .insert(let index, let id): array.insert(id, at: index)
                    case .remove(let index): array.remove(at: index)
                    case .replace(let index, let id): array[index] = id
                    case .swap(let i, let j): array.swapAt(i, j)
                    }
                }
            }
        }
        switch impl {
        case .c:
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let bytes = ArrayChangeRecord(change!).encoded(values: littleEndianBytes)
                    lastDecoded = try! ArrayChangeRecord<Int>(decoding: bytes, values: integers(fromLittleEndian:))
                    sentBytes = bytes.count
                }
                ops += count
            }, tearDown: {
                token.cancel()
                guard let decoded = lastDecoded, let change else { return "\(label): nothing was sent" }
                if decoded != ArrayChangeRecord(change) { return "\(label): the decoded record differs from the change's" }
                return ops > 0 ? nil : "\(label): no op ran"
            }, prepareBatch: prepare, bytesPerItem: { sentBytes > 0 ? (Double(sentBytes), nil) : nil })
        case .plain:
            var received: [Int] = []
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let bytes = littleEndianBytes(Array(array))
                    received = integers(fromLittleEndian: bytes)
                    sentBytes = bytes.count
                }
            }, tearDown: {
                token.cancel()
                return received == Array(array) ? nil : "\(label): the received array differs"
            }, prepareBatch: prepare, bytesPerItem: { sentBytes > 0 ? (Double(sentBytes), nil) : nil })
        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

/// `values` as 8-byte little-endian integers.
func littleEndianBytes(_ values: [Int]) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: values.count * 8)
    bytes.withUnsafeMutableBytes { raw in
        for (i, value) in values.enumerated() { raw.storeBytes(of: Int64(value).littleEndian, toByteOffset: i * 8, as: Int64.self) }
    }
    return bytes
}

/// What `littleEndianBytes` wrote, read back.
func integers(fromLittleEndian bytes: [UInt8]) -> [Int] {
    bytes.withUnsafeBytes { raw in
        (0..<(bytes.count / 8)).map { Int(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: Int64.self))) }
    }
}
