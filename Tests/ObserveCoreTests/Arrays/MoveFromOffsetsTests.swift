// `move(fromOffsets:toOffset:)`: SwiftUI's semantics, one move run per moved element, the
// position index kept right by block shifts (no rebuild), and batches composing it either as
// single moves (few offsets) or as one reorder (many). Random cases against a reference built the
// obvious way, on both backends.

@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

@Suite("ObservableArray: move(fromOffsets:toOffset:)")
struct MoveFromOffsetsTests {
    /// What SwiftUI's `move(fromOffsets:toOffset:)` makes of `contents`.
    static func reference<T>(_ contents: [T], _ offsets: Set<Int>, _ destination: Int) -> [T] {
        let before = (0..<destination).filter { !offsets.contains($0) }.map { contents[$0] }
        let after = (destination..<contents.count).filter { !offsets.contains($0) }.map { contents[$0] }
        return before + offsets.sorted().map { contents[$0] } + after
    }

    @Test("the documented example: the moved elements keep their order, one move run each")
    func documentedExample() {
        for backend in ObservationBackend.allCases {
            let tasks = ObservableArray(["a", "b", "c", "d", "e"], backend: backend)
            var changes: [ArrayChange<String>] = []
            let token = tasks.observe { _, change in changes.append(change) }
            tasks.move(fromOffsets: [2, 0, 2], toOffset: 4)
            #expect(Array(tasks) == ["b", "d", "a", "c", "e"])
            #expect(changes.count == 1 && changes[0].kind == .move)
            #expect(changes[0].elements.map { "\($0.element) \($0.oldIndex!)->\($0.newIndex!)" } == ["a 0->2", "c 2->3"])
            #expect(changes[0].applying(to: ["a", "b", "c", "d", "e"]) == ["b", "d", "a", "c", "e"])
            changes.removeAll()
            tasks.move(fromOffsets: [2, 3], toOffset: 2)   // already there
            tasks.move(fromOffsets: [], toOffset: 0)
            #expect(changes.isEmpty, "a move that changes nothing reports nothing")
            withExtendedLifetime(token) {}
        }
    }

    @Test("random moves, alone and in batches, against the reference; element indices match a scan afterwards",
          arguments: ObservationBackend.allCases)
    func randomMoves(backend: ObservationBackend) {
        var rng = SplitMix64(seed: 0x30FF_5E75)
        // Few students for many places: elements present several times take the index's
        // duplicate records through the moves.
        let pool = (0..<90).map { Student(backend, "s\($0)") }
        for count in [6, 70, 300] {
            let array = ObservableArray((3..<count).map { pool[$0 % pool.count] }, backend: backend)
            for k in (0..<3).reversed() { array.insert(pool[k], at: 0) }   // the ring wraps around its allocation
            var changes: [ArrayChange<Student>] = []
            let token = array.observe(elementKeyPaths: [\Student.grade]) { _, change in changes.append(change) }
            for round in 0..<150 {
                let old = Array(array)
                // Mostly a few offsets (repeats allowed); sometimes more than 32, so that a batch
                // composes one reorder and the blocks between sources are short.
                let k = round % 7 == 6 ? min(count, 40) : 1 + Int(rng.next() % 4)
                let offsets = (0..<k).map { _ in Int(rng.next() % UInt64(count)) }
                let destination = Int(rng.next() % UInt64(count + 1))
                let inBatch = round % 3 == 0
                let expected = Self.reference(old, Set(offsets), destination)
                let context = "n=\(count) round \(round): \(offsets.sorted()) -> \(destination)\(inBatch ? " (batch)" : "")"
                changes.removeAll()
                if inBatch {
                    array.performBatchUpdates { $0.move(fromOffsets: offsets, toOffset: destination) }
                } else {
                    array.move(fromOffsets: offsets, toOffset: destination)
                }
                let new = Array(array)
                #expect(new.elementsEqual(expected, by: ===), "\(context)")
                if old.elementsEqual(new, by: ===) {
                    #expect(changes.isEmpty, "\(context): nothing moved, yet \(changes.count) changes")
                } else if changes.count != 1 {
                    Issue.record("\(context): \(changes.count) changes")
                } else {
                    let change = changes[0]
                    #expect(change.kind == (inBatch ? .batch : .move), "\(context)")
                    #expect(change.applying(to: old)?.elementsEqual(new, by: ===) == true, "\(context): \(change)")
                    for element in change.elements {
                        #expect(old[element.oldIndex!] === element.element && new[element.newIndex!] === element.element,
                                "\(context): \(element.element) listed \(element.oldIndex!) -> \(element.newIndex!)")
                    }
                    if !inBatch {
                        let sources = Set(offsets)
                        let notInPlace = sources.sorted().enumerated().filter { j, source in
                            source != destination - sources.filter { $0 < destination }.count + j
                        }.count
                        #expect(change.elements.count == notInPlace, "\(context): only the moved elements are listed")
                    }
                }
                // The position index followed: an element change reports exactly the indices a
                // scan finds.
                let probe = new[Int(rng.next() % UInt64(count))]
                changes.removeAll()
                probe.grade += 1
                let scanned = new.indices.filter { new[$0] === probe }
                #expect(changes.count == 1 && changes[0].elements.map(\.newIndex!) == scanned,
                        "\(context): \(probe) reported at \(changes.first?.elements.map(\.newIndex) ?? []), a scan finds \(scanned)")
                array._checkInvariants()
            }
            withExtendedLifetime(token) {}
        }
    }

    @Test("offsets or a destination out of range trap with the operation's name")
    func outOfRange() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ObservableArray([1, 2, 3], backend: .c).move(fromOffsets: [0, 3], toOffset: 1)
        }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ObservableArray([1, 2, 3], backend: .swift).move(fromOffsets: [1], toOffset: 4)
        }
        let message = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(message.contains("move(fromOffsets:toOffset:)") && message.contains("count 3"), "\(message)")
    }
}
