import CObserveCore
import Testing

/// cobs_wire.h: the byte form of a change's runs.
@Suite struct WireFormatTests {
    private func run(_ op: cobs_run_op, _ start: UInt64, _ length: UInt64, to: UInt64 = 0) -> cobs_run {
        cobs_run(op: op.rawValue, reserved_: 0, start: start, length: length, to: to)
    }

    private func encode(_ runs: [cobs_run], _ old: UInt64, _ new: UInt64) -> [UInt8]? {
        var size = 0
        guard cobs_wire_encode_runs(runs, runs.count, old, new, nil, 0, &size) == COBS_BUFFER_TOO_SMALL else { return nil }
        var out = [UInt8](repeating: 0, count: size)
        guard cobs_wire_encode_runs(runs, runs.count, old, new, &out, out.count, &size) == COBS_OK else { return nil }
        #expect(size == out.count)
        #expect(size <= cobs_wire_max_size(runs.count))
        return out
    }

    private func decode(_ bytes: [UInt8]) -> (runs: [cobs_run], old: UInt64, new: UInt64, consumed: Int)? {
        var count = 0, consumed = 0
        var old: UInt64 = 0, new: UInt64 = 0
        var runs = [cobs_run](repeating: cobs_run(), count: 64)
        let status = cobs_wire_decode_runs(bytes, bytes.count, &runs, runs.count, &count, &old, &new, &consumed)
        guard status == COBS_OK else { return nil }
        return (Array(runs.prefix(count)), old, new, consumed)
    }

    @Test func anAppendOf10000IsEightBytesAndRoundTrips() throws {
        let bytes = try #require(encode([run(COBS_RUN_INSERT, 5, 10_000)], 5, 10_005))
        #expect(bytes == [1, 5, 0x95, 0x4E, 1, 2, 5, 0x90, 0x4E])
        let decoded = try #require(decode(bytes))
        #expect(decoded.old == 5)
        #expect(decoded.new == 10_005)
        #expect(decoded.consumed == bytes.count)
        #expect(decoded.runs.map(\.length) == [10_000])
    }

    @Test func everyOpRoundTripsAndTrailingBytesAreLeftToTheCaller() throws {
        let runs = [run(COBS_RUN_REMOVE, 0, 1), run(COBS_RUN_INSERT, 0, 2), run(COBS_RUN_MOVE, 3, 1, to: 5),
                    run(COBS_RUN_MODIFY, 3, 1)]
        let bytes = try #require(encode(runs, 8, 9))
        let decoded = try #require(decode(bytes + [0xAA, 0xBB]))
        #expect(decoded.consumed == bytes.count, "the caller's payload starts after the runs")
        #expect(decoded.runs.map(\.op) == runs.map(\.op))
        #expect(decoded.runs.map(\.to) == [0, 0, 5, 0])
    }

    @Test func inconsistentRunsAreNeitherWrittenNorRead() {
        #expect(encode([run(COBS_RUN_INSERT, 0, 3)], 0, 2) == nil, "inserting 3 into 0 cannot give 2")
        var size = 0
        #expect(cobs_wire_encode_runs(nil, 1, 0, 0, nil, 0, &size) == COBS_INVALID_ARGUMENT)
        // Hand-made: version 1, old 0, new 2, one INSERT of 3 at 0.
        #expect(decode([1, 0, 2, 1, 2, 0, 3]) == nil)
    }

    @Test func malformedBytesAreRejected() throws {
        let good = try #require(encode([run(COBS_RUN_INSERT, 0, 3)], 0, 3))
        #expect(decode(good) != nil)
        #expect(decode([]) == nil, "empty")
        #expect(decode([2] + good.dropFirst()) == nil, "unknown version")
        for cut in 1..<good.count { #expect(decode(Array(good.prefix(cut))) == nil, "truncated at \(cut)") }
        #expect(decode([1, 0x80, 0x00, 3, 1, 2, 0, 3]) == nil, "a non-minimal varint (0 written in two bytes)")
        #expect(decode([1] + [UInt8](repeating: 0xFF, count: 10) + [0x7F]) == nil, "a varint beyond 64 bits")
        #expect(decode([1, 0, 3, 1, 9, 0, 3]) == nil, "an unknown op")
        #expect(decode([1, 0, 0, 0x80, 0x80, 0x04]) == nil, "a run count the bytes cannot hold")
    }

    @Test func anEmptyChangeNeedsNoRunBuffer() throws {
        let bytes = try #require(encode([], 3, 3))
        #expect(bytes == [1, 3, 3, 0])
        var count = 99, consumed = 0
        var old: UInt64 = 0, new: UInt64 = 0
        #expect(cobs_wire_decode_runs(bytes, bytes.count, nil, 0, &count, &old, &new, &consumed) == COBS_OK)
        #expect(count == 0)
        #expect(UInt(bitPattern: cobs_wire_max_size(Int.max)) == UInt.max, "the bound saturates at SIZE_MAX instead of wrapping")
    }

    @Test func aRunCountBeyondTheBufferAsksForRoom() throws {
        let runs = (0..<5).map { run(COBS_RUN_INSERT, UInt64($0 * 2), 1) }
        let bytes = try #require(encode(runs, 4, 9), "4 kept elements, 5 inserted between them")
        var count = 0, consumed = 0
        var old: UInt64 = 0, new: UInt64 = 0
        var small = [cobs_run](repeating: cobs_run(), count: 2)
        #expect(cobs_wire_decode_runs(bytes, bytes.count, &small, 2, &count, &old, &new, &consumed) == COBS_BUFFER_TOO_SMALL)
        #expect(count == 5)
    }
}
