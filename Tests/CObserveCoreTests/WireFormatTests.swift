import CObserveCore
import XCTest

/// cobs_wire.h: the byte form of a change's runs.
final class WireFormatTests: XCTestCase {
    private func run(_ op: cobs_run_op, _ start: UInt64, _ length: UInt64, to: UInt64 = 0) -> cobs_run {
        cobs_run(op: op.rawValue, reserved_: 0, start: start, length: length, to: to)
    }

    private func encode(_ runs: [cobs_run], _ old: UInt64, _ new: UInt64) -> [UInt8]? {
        var size = 0
        guard cobs_wire_encode_runs(runs, runs.count, old, new, nil, 0, &size) == COBS_BUFFER_TOO_SMALL else { return nil }
        var out = [UInt8](repeating: 0, count: size)
        guard cobs_wire_encode_runs(runs, runs.count, old, new, &out, out.count, &size) == COBS_OK else { return nil }
        XCTAssertEqual(size, out.count)
        XCTAssertLessThanOrEqual(size, cobs_wire_max_size(runs.count))
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

    func testAnAppendOf10000IsEightBytesAndRoundTrips() throws {
        let bytes = try XCTUnwrap(encode([run(COBS_RUN_INSERT, 5, 10_000)], 5, 10_005))
        XCTAssertEqual(bytes, [1, 5, 0x95, 0x4E, 1, 2, 5, 0x90, 0x4E])
        let decoded = try XCTUnwrap(decode(bytes))
        XCTAssertEqual(decoded.old, 5)
        XCTAssertEqual(decoded.new, 10_005)
        XCTAssertEqual(decoded.consumed, bytes.count)
        XCTAssertEqual(decoded.runs.map(\.length), [10_000])
    }

    func testEveryOpRoundTripsAndTrailingBytesAreLeftToTheCaller() throws {
        let runs = [run(COBS_RUN_REMOVE, 0, 1), run(COBS_RUN_INSERT, 0, 2), run(COBS_RUN_MOVE, 3, 1, to: 5),
                    run(COBS_RUN_MODIFY, 3, 1)]
        let bytes = try XCTUnwrap(encode(runs, 8, 9))
        let decoded = try XCTUnwrap(decode(bytes + [0xAA, 0xBB]))
        XCTAssertEqual(decoded.consumed, bytes.count, "the caller's payload starts after the runs")
        XCTAssertEqual(decoded.runs.map(\.op), runs.map(\.op))
        XCTAssertEqual(decoded.runs.map(\.to), [0, 0, 5, 0])
    }

    func testInconsistentRunsAreNeitherWrittenNorRead() {
        XCTAssertNil(encode([run(COBS_RUN_INSERT, 0, 3)], 0, 2), "inserting 3 into 0 cannot give 2")
        var size = 0
        XCTAssertEqual(cobs_wire_encode_runs(nil, 1, 0, 0, nil, 0, &size), COBS_INVALID_ARGUMENT)
        // Hand-made: version 1, old 0, new 2, one INSERT of 3 at 0.
        XCTAssertNil(decode([1, 0, 2, 1, 2, 0, 3]))
    }

    func testMalformedBytesAreRejected() throws {
        let good = try XCTUnwrap(encode([run(COBS_RUN_INSERT, 0, 3)], 0, 3))
        XCTAssertNotNil(decode(good))
        XCTAssertNil(decode([]), "empty")
        XCTAssertNil(decode([2] + good.dropFirst()), "unknown version")
        for cut in 1..<good.count { XCTAssertNil(decode(Array(good.prefix(cut))), "truncated at \(cut)") }
        XCTAssertNil(decode([1, 0x80, 0x00, 3, 1, 2, 0, 3]), "a non-minimal varint (0 written in two bytes)")
        XCTAssertNil(decode([1] + [UInt8](repeating: 0xFF, count: 10) + [0x7F]), "a varint beyond 64 bits")
        XCTAssertNil(decode([1, 0, 3, 1, 9, 0, 3]), "an unknown op")
        XCTAssertNil(decode([1, 0, 0, 0x80, 0x80, 0x04]), "a run count the bytes cannot hold")
    }

    func testAnEmptyChangeNeedsNoRunBuffer() throws {
        let bytes = try XCTUnwrap(encode([], 3, 3))
        XCTAssertEqual(bytes, [1, 3, 3, 0])
        var count = 99, consumed = 0
        var old: UInt64 = 0, new: UInt64 = 0
        XCTAssertEqual(cobs_wire_decode_runs(bytes, bytes.count, nil, 0, &count, &old, &new, &consumed), COBS_OK)
        XCTAssertEqual(count, 0)
        XCTAssertEqual(UInt(bitPattern: cobs_wire_max_size(Int.max)), UInt.max, "the bound saturates at SIZE_MAX instead of wrapping")
    }

    func testARunCountBeyondTheBufferAsksForRoom() throws {
        let runs = (0..<5).map { run(COBS_RUN_INSERT, UInt64($0 * 2), 1) }
        let bytes = try XCTUnwrap(encode(runs, 4, 9), "4 kept elements, 5 inserted between them")
        var count = 0, consumed = 0
        var old: UInt64 = 0, new: UInt64 = 0
        var small = [cobs_run](repeating: cobs_run(), count: 2)
        XCTAssertEqual(cobs_wire_decode_runs(bytes, bytes.count, &small, 2, &count, &old, &new, &consumed), COBS_BUFFER_TOO_SMALL)
        XCTAssertEqual(count, 5)
    }
}
