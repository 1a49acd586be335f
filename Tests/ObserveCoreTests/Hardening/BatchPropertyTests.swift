// Property test of the array-change encoder through the public API, at full size: random batches
// of random edits on both backends. For every batch, the one change it reports must turn the
// contents before it into the contents after it (`apply(change, old) == new`, also through
// `CollectionDifference`), every element it lists must sit at the indices it gives, and element
// property changes (inside batches and after them) must carry exactly the indices a naive scan
// finds.
//
// Size: OBSERVECORE_PROPERTY_BATCHES batches per backend (default 10,000).

@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

@Suite("Hardening: batch properties", .serialized)
struct BatchPropertyTests {
    @Test("random batches: apply(change, old) == new, listed indices hold their elements, element indices match a scan",
          arguments: ObservationBackend.allCases)
    func randomBatches(backend: ObservationBackend) {
        let batches = environmentInt("OBSERVECORE_PROPERTY_BATCHES", default: 10_000)
        var failures: [String] = []
        var checked = 0, changes = 0, elementChanges = 0, moves = 0
        expectNoLeaks("batch properties[\(backend)]") { tracker in
            var rng = SplitMix64(seed: 0xBA7C_4E5)   // the same on both backends: the figures must agree too
            let pool = (0..<12).map { tracker.track(Student(backend, "s\($0)")) }
            var array = tracker.track(ObservableArray<Student>(backend: backend))
            var reported: [ArrayChange<Student>] = []
            var token: ObservationToken?

            func fail(_ message: @autoclosure () -> String) {
                if failures.count < 10 { failures.append(message()) }
            }
            /// The indices a naive scan finds for `student`.
            func positions(of student: Student, in contents: [Student]) -> [Int] {
                contents.indices.filter { contents[$0] === student }
            }
            /// Students whose grade was set inside the open batch.
            var probedInside: [Student] = []
            /// Sets `student`'s grade and checks the element change that reaches the observer.
            func probe(_ student: Student, expecting contents: [Student], _ context: String, insideBatch: Bool = false) {
                reported.removeAll()
                student.grade += 1
                let expected = positions(of: student, in: contents)
                let heard = reported.filter { $0.kind == .elementChanged }
                if insideBatch {
                    // Joins the batch's change (checked when it is delivered); nothing now.
                    if !reported.isEmpty { fail("\(context): \(student): \(reported.count) changes before the batch ended") }
                    if !expected.isEmpty { probedInside.append(student) }
                } else if expected.isEmpty {
                    if !heard.isEmpty { fail("\(context): \(student) is not in the array, yet \(heard.count) element changes") }
                } else if heard.count != 1 {
                    fail("\(context): \(student) at \(expected): \(heard.count) element changes")
                } else {
                    let indices = heard[0].elements.map(\.newIndex)
                    if indices != expected.map(Optional.some) || heard[0].elements.contains(where: { $0.element !== student }) {
                        fail("\(context): \(student) reported at \(indices), a scan finds \(expected)")
                    }
                    if heard[0].elementNewValue as? Int != student.grade { fail("\(context): wrong new value") }
                    elementChanges += 1
                }
                reported.removeAll()
            }

            for batch in 0..<batches {
                probedInside.removeAll()
                // A fresh array now and then, so that sizes and ring layouts vary.
                if batch % 200 == 0 {
                    token = nil
                    array = tracker.track(ObservableArray((0..<rng.below(24)).map { _ in pool[rng.below(pool.count)] },
                                                          backend: backend))
                    token = array.observe(options: [.new], elementKeyPaths: [\Student.grade]) { _, change in
                        reported.append(change)
                    }
                }
                let old = Array(array)
                reported.removeAll()
                var edits: [String] = []
                array.performBatchUpdates { a in
                    for _ in 0..<(1 + rng.below(8)) {
                        edits.append(Self.edit(a, &rng, pool))
                        if rng.below(8) == 0 {
                            // Element changes inside a batch join its change as modifications.
                            probe(pool[rng.below(pool.count)], expecting: Array(a), "batch \(batch), inside after \(edits)",
                                  insideBatch: true)
                        }
                        if rng.below(12) == 0 {
                            a.performBatchUpdates { inner in edits.append("nested " + Self.edit(inner, &rng, pool)) }
                        }
                    }
                }
                let new = Array(array)
                let structural = reported.filter { $0.kind != .elementChanged }
                checked += 1
                if structural.count > 1 { fail("batch \(batch): \(structural.count) changes for one batch: \(edits)") }
                if let change = structural.first {
                    changes += 1
                    Self.check(change, old: old, new: new, "batch \(batch) \(edits)", fail)
                    let modified = change.runs.filter { $0.kind == .modify }.flatMap { Array($0.range) }
                    for index in modified where !probedInside.contains(where: { $0 === new[index] }) {
                        fail("batch \(batch) \(edits): \(new[index]) listed as modified at \(index), but no property of it changed")
                    }
                    moves += change.runs.filter { $0.kind == .move }.count
                } else if !old.elementsEqual(new, by: ===) {
                    fail("batch \(batch): contents changed without a notification: \(edits)")
                }
                probe(pool[rng.below(pool.count)], expecting: new, "batch \(batch), after \(edits)")
                if batch % 97 == 0 { array._checkInvariants() }
                if failures.count >= 10 { break }
            }
            token = nil
            _ = token
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(checked == batches || !failures.isEmpty)
        print("batch properties[\(backend)]: \(checked) batches checked, \(changes) changes (\(moves) move runs), "
              + "\(elementChanges) element changes")
    }

    /// One random edit; returns its description.
    static func edit(_ a: ObservableArray<Student>, _ rng: inout SplitMix64, _ pool: [Student]) -> String {
        let n = a.count
        let pick = pool[rng.below(pool.count)]
        switch rng.below(14) {
        case 0: let i = rng.below(n + 1); a.insert(pick, at: i); return "insert(\(pick), \(i))"
        case 1: a.append(pick); return "append(\(pick))"
        case 2 where n > 0: let i = rng.below(n); a.remove(at: i); return "remove(\(i))"
        case 3 where n > 1: let (i, j) = (rng.below(n), rng.below(n)); a.swapAt(i, j); return "swap(\(i), \(j))"
        case 4 where n > 0: let i = rng.below(n); a[i] = rng.below(3) == 0 ? a[i] : pick; return "set(\(i))"
        case 5 where n > 1: let (i, j) = (rng.below(n), rng.below(n)); a.move(from: i, to: j); return "move(\(i), \(j))"
        case 6 where n > 0:
            let i = rng.below(n), k = 1 + rng.below(min(3, n - i))
            a.removeSubrange(i..<(i + k)); return "removeSubrange(\(i)..<\(i + k))"
        case 7 where n > 0:
            let i = rng.below(n), k = rng.below(min(3, n - i) + 1)
            let replacement = (0..<rng.below(3)).map { _ in pool[rng.below(pool.count)] }
            a.replaceSubrange(i..<(i + k), with: replacement); return "replaceSubrange(\(i)..<\(i + k), \(replacement.count))"
        case 8: a.removeAll(of: pick); return "removeAll(of: \(pick))"
        case 9: let k = rng.below(4); a.append(contentsOf: (0..<k).map { _ in pool[rng.below(pool.count)] }); return "append(contentsOf: \(k))"
        case 10 where n > 1:
            if rng.below(2) == 0 { a.reverse(); return "reverse" }
            a.sort { $0.name < $1.name }; return "sort"
        case 11 where n > 0: _ = a.popLast(); return "popLast"
        case 12 where n > 2:
            let offsets = Set((0..<2).map { _ in rng.below(n) }), to = rng.below(n + 1)
            a.move(fromOffsets: offsets, toOffset: to); return "move(fromOffsets: \(offsets.sorted()), to: \(to))"
        case 13 where rng.below(6) == 0: a.removeAll(); return "removeAll"
        default: let i = rng.below(n + 1); a.insert(contentsOf: [pick, pick], at: i); return "insert(contentsOf: 2, \(i))"
        }
    }

    /// The properties one structural change must have.
    static func check(_ change: ArrayChange<Student>, old: [Student], new: [Student], _ context: String,
                      _ fail: (@autoclosure () -> String) -> Void) {
        if change.kind != .batch { fail("\(context): kind \(change.kind), not .batch") }
        if change.oldCount != old.count || change.newCount != new.count {
            fail("\(context): counts \(change.oldCount)->\(change.newCount), actual \(old.count)->\(new.count)")
        }
        if change.newCount - change.oldCount != change.insertedCount - change.removedCount {
            fail("\(context): +\(change.insertedCount) -\(change.removedCount) does not give the count change")
        }
        guard let applied = change.applying(to: old), applied.elementsEqual(new, by: ===) else {
            fail("\(context): \(change) maps \(old) to \(change.applying(to: old) ?? []), not \(new)")
            return
        }
        if let difference = change.difference {
            if let viaDifference = old.applying(difference), !viaDifference.elementsEqual(new, by: ===) {
                fail("\(context): CollectionDifference maps to \(viaDifference), not \(new)")
            }
        } else {
            fail("\(context): a batch change has no CollectionDifference")
        }
        // Canonical runs: removals ascending in old indices, insertions ascending in new indices,
        // none overlapping; every element listed where it says.
        var lastRemoval = -1, lastInsertion = -1
        for run in change.runs {
            switch run.kind {
            case .remove:
                if run.range.lowerBound <= lastRemoval || run.range.upperBound > old.count { fail("\(context): removal run \(run.range) out of order") }
                lastRemoval = run.range.upperBound - 1
            case .insert:
                if run.range.lowerBound <= lastInsertion || run.range.upperBound > new.count { fail("\(context): insertion run \(run.range) out of order") }
                lastInsertion = run.range.upperBound - 1
            case .move, .modify:
                break
            }
        }
        for element in change.elements {
            if element.oldIndex == nil && element.newIndex == nil { fail("\(context): an element with neither index") }
            if let i = element.oldIndex, i >= old.count || old[i] !== element.element {
                fail("\(context): \(element.element) is not at old index \(i) of \(old)")
            }
            if let i = element.newIndex, i >= new.count || new[i] !== element.element {
                fail("\(context): \(element.element) is not at new index \(i) of \(new)")
            }
        }
    }
}
