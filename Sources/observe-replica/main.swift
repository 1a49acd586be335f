// observe-replica: the other process of the replication test (Tests/ObserveCoreTests/Arrays/
// ReplicationTests.swift). It keeps an ObservableArray<Int> replica and reads, from standard
// input, frames of a 4-byte little-endian length and an ArrayChangeRecord's bytes (values as a
// JSON array); after applying each one it writes "<count> <hash>" on a line of standard output,
// so the sender can check that the replica equals the source after every change. A record that
// does not decode or apply is reported as "error <description>" and ends the process with
// status 1. End of input ends it with status 0.

import Foundation
import ObserveCore
import SeededRandom

/// One line to the sender, unbuffered (it waits for each).
func reply(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func readExactly(_ count: Int) -> [UInt8]? {
    var bytes: [UInt8] = []
    while bytes.count < count {
        guard let chunk = try? FileHandle.standardInput.read(upToCount: count - bytes.count), !chunk.isEmpty else {
            return nil
        }
        bytes.append(contentsOf: chunk)
    }
    return bytes
}

let replica = ObservableArray<Int>()
var applied = 0
let observed = replica.observe { _, _ in applied += 1 }   // the replica's own observers hear each change

while let header = readExactly(4) {
    let length = Int(UInt32(header[0]) | UInt32(header[1]) << 8 | UInt32(header[2]) << 16 | UInt32(header[3]) << 24)
    guard let frame = readExactly(length) else { break }
    do {
        let record = try ArrayChangeRecord<Int>(decoding: frame) { try JSONDecoder().decode([Int].self, from: Data($0)) }
        try replica.apply(record)
        reply("\(replica.count) \(fnv1a(replica))")
    } catch {
        reply("error \(error)")
        exit(1)
    }
}
observed.cancel()
