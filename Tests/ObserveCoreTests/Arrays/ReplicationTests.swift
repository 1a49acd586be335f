import Foundation
@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

/// ArrayChangeRecord: a change as bytes, decoded and applied to a replica — in this process, and
/// in another one over a pipe.
@Suite("Replication: array changes as bytes", .serialized)
struct ReplicationTests {
    static func json(_ values: [Int]) -> Data { try! JSONEncoder().encode(values) }
    static func unjson(_ bytes: [UInt8]) throws -> [Int] { try JSONDecoder().decode([Int].self, from: Data(bytes)) }

    /// One random mutation of `array`, or a batch of several (which reports moves).
    static func mutate(_ array: ObservableArray<Int>, _ random: inout SplitMix64, next: inout Int) {
        func one(_ array: ObservableArray<Int>) {
            next += 1
            switch random.below(array.isEmpty ? 1 : 6) {
            case 0: array.insert(next, at: random.below(array.count + 1))
            case 1: array.remove(at: random.below(array.count))
            case 2: array[random.below(array.count)] = next
            case 3: array.move(from: random.below(array.count), to: random.below(array.count))
            case 4: array.append(contentsOf: [next, next + 1, next + 2])
            default: array.swapAt(random.below(array.count), random.below(array.count))
            }
        }
        if random.below(4) == 0 {
            array.performBatchUpdates { batch in for _ in 0..<(1 + random.below(20)) { one(batch) } }
        } else {
            one(array)
        }
    }

    @Test("every kind of change round-trips through bytes and applies to a replica", arguments: ObservationBackend.allCases)
    func roundTripInProcess(backend: ObservationBackend) throws {
        let source = ObservableArray(Array(0..<200), backend: backend)
        var replica = Array(source)
        let records = Log<[UInt8]>()
        let token = source.observe { _, change in
            records.append(ArrayChangeRecord(change).encoded { Self.json($0) })
        }
        var random = SplitMix64(seed: 7), next = 1_000
        for _ in 0..<400 { Self.mutate(source, &random, next: &next) }
        token.cancel()
        for bytes in records.events {
            let record = try ArrayChangeRecord<Int>(decoding: bytes, values: Self.unjson)
            replica = try record.applying(to: replica)
        }
        #expect(replica == Array(source))
        #expect(records.count > 300, "most mutations changed something (a swap of an index with itself does not)")
    }

    @Test("an element change carries the element's new value; a replaced array carries its contents")
    func elementChangesAndReplacements() throws {
        struct Row: Codable, Equatable { var id: Int; var status: String }
        final class Job: KeyValueObservable, Codable {
            let kvoRegistrar = KeyValueRegistrar()
            static let status = ObservableKey(\Job.status, name: "status")
            var status = "queued" {
                didSet { kvoRegistrar.didSet(Job.status, of: self, from: oldValue, to: status) }
            }
            let id: Int
            init(id: Int) { self.id = id }
            enum CodingKeys: String, CodingKey { case id, status }
        }
        let jobs = ObservableArray((0..<5).map { Job(id: $0) })
        var replica: [Row] = jobs.map { Row(id: $0.id, status: $0.status) }
        var records: [ArrayChangeRecord<Job>] = []
        let token = jobs.observe(elementKeyPaths: [\Job.status]) { _, change in records.append(ArrayChangeRecord(change)) }
        jobs[3].status = "done"
        jobs.insert(Job(id: 9), at: 0)
        token.cancel()
        // Through a Codable encoder, values decoded as plain rows on the other side.
        for record in records {
            let data = try JSONEncoder().encode(record)
            let decoded = try JSONDecoder().decode(ArrayChangeRecord<Row>.self, from: data)
            replica = try decoded.applying(to: replica)
        }
        #expect(replica == jobs.map { Row(id: $0.id, status: $0.status) })
        #expect(records.first?.runs.map(\.kind) == [.modify])
    }

    @Test("a property change of a Codable value round-trips through an encoder")
    func propertyChangeIsCodable() throws {
        let person = Person(.c, name: "Ada")
        var sent: [Data] = []
        let token = person.observe(\.nickname, options: [.old, .new]) { _, change in sent.append(try! JSONEncoder().encode(change)) }
        person.nickname = "Countess"
        person.nickname = nil
        token.cancel()
        let received = try sent.map { try JSONDecoder().decode(ObservedChange<String?>.self, from: $0) }
        #expect(received == [ObservedChange(oldValue: nil, newValue: "Countess"), ObservedChange(oldValue: "Countess", newValue: nil)])
    }

    @Test("malformed bytes throw; a replica that missed a change is told so")
    func malformedInput() throws {
        let empty = ObservableArray<Int>()
        var captured: ArrayChangeRecord<Int>?
        let token = empty.observe { _, change in captured = ArrayChangeRecord(change) }
        empty.append(contentsOf: [7, 8, 9])
        token.cancel()
        let record = try #require(captured)
        let good = record.encoded { Self.json($0) }
        #expect(try ArrayChangeRecord<Int>(decoding: good, values: Self.unjson).values == [7, 8, 9])
        for bad in [[], [2] + good.dropFirst(), Array(good.dropLast(2)), good + [0]] as [[UInt8]] {
            #expect(throws: ArrayChangeRecordError.self) { _ = try ArrayChangeRecord<Int>(decoding: bad, values: Self.unjson) }
        }
        let tooFew = record.encoded { _ in Self.json([7]) }
        #expect(throws: ArrayChangeRecordError.valueCountMismatch(expected: 3, found: 1)) {
            _ = try ArrayChangeRecord<Int>(decoding: tooFew, values: Self.unjson)
        }
        #expect(throws: ArrayChangeRecordError.countMismatch(expected: 0, found: 2)) { _ = try record.applying(to: [1, 2]) }
        let replica = ObservableArray([1, 2])
        #expect(throws: ArrayChangeRecordError.countMismatch(expected: 0, found: 2)) { try replica.apply(record) }
    }

    @Test("a 10,000-element array mutated at random is replicated in another process, equal after every change")
    func crossProcessReplica() throws {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("observe-replica")
        try #require(FileManager.default.isExecutableFile(atPath: executable.path),
                     "observe-replica was not built beside the tests (\(executable.path))")
        let child = Process()
        child.executableURL = executable
        let toChild = Pipe(), fromChild = Pipe()
        child.standardInput = toChild
        child.standardOutput = fromChild
        try child.run()
        defer { if child.isRunning { child.terminate() } }

        var replies = ReplyReader(fromChild.fileHandleForReading)
        let source = ObservableArray(Array(0..<10_000))
        var sent = 0, bytesSent = 0
        func send(_ change: ArrayChange<Int>) {
            let bytes = ArrayChangeRecord(change).encoded { Self.json($0) }
            var frame = withUnsafeBytes(of: UInt32(bytes.count).littleEndian) { Array($0) }
            frame += bytes
            toChild.fileHandleForWriting.write(Data(frame))
            sent += 1
            bytesSent += bytes.count
        }
        var mismatches: [String] = []
        let token = source.observe(options: [.initial]) { source, change in
            send(change)
            let expected = "\(source.count) \(fnv1a(source))"
            let reply = replies.nextLine()
            if reply != expected, mismatches.count < 3 { mismatches.append("change \(sent): replica said \(reply ?? "nothing"), expected \(expected)") }
        }
        var random = SplitMix64(seed: 2026), next = 100_000
        for _ in 0..<300 { Self.mutate(source, &random, next: &next) }
        token.cancel()
        try toChild.fileHandleForWriting.close()
        child.waitUntilExit()
        #expect(mismatches.isEmpty, "\(mismatches)")
        #expect(sent == 301, "the initial contents and every change were sent")
        #expect(child.terminationStatus == 0)
        print("replication: \(sent) changes, \(bytesSent) bytes (the whole array as JSON: \(Self.json(Array(source)).count) bytes)")
    }
}

/// Reads the replica's reply lines.
struct ReplyReader {
    let handle: FileHandle
    var buffer: [UInt8] = []
    init(_ handle: FileHandle) { self.handle = handle }

    mutating func nextLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeFirst(newline + 1)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(contentsOf: chunk)
        }
    }
}
