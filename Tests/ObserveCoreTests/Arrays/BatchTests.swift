@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

@Suite("Observable arrays: batches")
struct BatchTests {
    @Test("every element a batch change lists sits at its old index before and its new index after",
          arguments: ObservationBackend.allCases)
    func batchElementsNameTheirIndices(backend: ObservationBackend) {
        var rng = SplitMix64(seed: 0xBA7C_0001)
        let pool = (0..<400).map { Student(backend, "s\($0)") }
        let array = ObservableArray(pool[0..<200], backend: backend)
        var spare = 200
        var checked = 0
        let token = array.observe(elementKeyPaths: [\.grade]) { _, _ in }
        for round in 0..<40 {
            let before = Array(array)
            var changes: [ArrayChange<Student>] = []
            let watcher = array.observe(elementKeyPaths: [\.grade]) { _, change in changes.append(change) }
            array.performBatchUpdates { a in
                for _ in 0..<20 {
                    let n = a.count
                    switch rng.below(5) {
                    case 0 where spare < pool.count: a.insert(pool[spare], at: rng.below(n + 1)); spare += 1
                    case 1 where n > 1: a.remove(at: rng.below(n))
                    case 2 where n > 1: a.move(from: rng.below(n), to: rng.below(n))
                    default: if n > 0 { a[rng.below(n)].grade = round }   // a modification
                    }
                }
            }
            watcher.cancel()
            let after = Array(array)
            #expect(changes.count <= 1)
            for change in changes {
                for element in change.elements {
                    if let old = element.oldIndex { #expect(before[old] === element.element, "round \(round): old \(old)") }
                    if let new = element.newIndex { #expect(after[new] === element.element, "round \(round): new \(new)") }
                    checked += 1
                }
            }
        }
        token.cancel()
        #expect(checked > 100)
    }

    @Test("a batch is delivered once, coalesced, and maps old to new", arguments: ObservationBackend.allCases)
    func batchIsDeliveredOnce(backend: ObservationBackend) {
        let array = ObservableArray(Array(0..<10), backend: backend)
        let before = Array(array)
        var changes: [ArrayChange<Int>] = []
        let token = array.observe { _, change in changes.append(change) }
        array.performBatchUpdates { a in
            a.remove(at: 3)
            a.insert(99, at: 0)
            a.swapAt(1, 2)
            a.append(100)
        }
        #expect(changes.count == 1)
        #expect(changes[0].kind == .batch)
        #expect(changes[0].applying(to: before) == Array(array))
        token.cancel()
    }

    @Test("an element inserted and removed inside a batch reports nothing", arguments: ObservationBackend.allCases)
    func insertedAndRemovedReportsNothing(backend: ObservationBackend) {
        let array = ObservableArray([1, 2, 3], backend: backend)
        var changes: [ArrayChange<Int>] = []
        let token = array.observe { _, change in changes.append(change) }
        array.performBatchUpdates { a in
            a.insert(42, at: 1)
            a.remove(at: 1)
        }
        #expect(changes.isEmpty)
        array.performBatchUpdates { a in
            a.append(7)
            a.insert(8, at: 0)
            a.removeLast()
        }
        #expect(changes.count == 1)
        #expect(describe(changes[0]) == ["8 nil->0"])
        token.cancel()
    }

    @Test("reordering inside a batch reports real moves", arguments: ObservationBackend.allCases)
    func reorderingReportsMoves(backend: ObservationBackend) {
        let array = ObservableArray([0, 1, 2, 3, 4], backend: backend)
        var changes: [ArrayChange<Int>] = []
        let token = array.observe { _, change in changes.append(change) }
        array.performBatchUpdates { a in a.move(from: 4, to: 0) }
        #expect(changes.count == 1)
        #expect(changes[0].runs.map(\.kind) == [.move])
        #expect(describe(changes[0]) == ["4 4->0"])
        #expect(changes[0].removedCount == 0 && changes[0].insertedCount == 0)
        token.cancel()
    }

    @Test("batches nest; the outermost delivers", arguments: ObservationBackend.allCases)
    func batchesNest(backend: ObservationBackend) {
        let array = ObservableArray([1], backend: backend)
        var count = 0
        let token = array.observe { _, _ in count += 1 }
        array.performBatchUpdates { a in
            a.append(2)
            a.performBatchUpdates { $0.append(3) }
            #expect(count == 0)
        }
        #expect(count == 1)
        #expect(Array(array) == [1, 2, 3])
        token.cancel()
    }

    @Test("the change converts to CollectionDifference", arguments: ObservationBackend.allCases)
    func convertsToCollectionDifference(backend: ObservationBackend) {
        let array = ObservableArray(["a", "b", "c"], backend: backend)
        var difference: CollectionDifference<String>?
        let token = array.observe { _, change in difference = change.difference }
        array.performBatchUpdates { a in a.remove(at: 0); a.append("d") }
        #expect(difference.map { ["a", "b", "c"].applying($0) } == ["b", "c", "d"])
        token.cancel()
    }
}

@Suite("Observable arrays: random mutation sequences")
struct ArrayPropertyTests {
    /// Random single mutations and batches; every reported change must map the contents before
    /// it to the contents after it, and element-change indices must match a scan.
    @Test("apply(change, old) == new and element indices match, on random sequences", arguments: ObservationBackend.allCases)
    func randomSequences(backend: ObservationBackend) {
        let rounds = 300
        var generator = SplitMix64(seed: 0xC0FFEE)
        let pool = (0..<12).map { Student(backend, "s\($0)") }
        for _ in 0..<rounds {
            let array = ObservableArray((0..<generator.below(8)).map { _ in pool[generator.below(12)] }, backend: backend)
            var model = Array(array)
            var failures: [String] = []
            var lastElementIndices: [Int]?
            let token = array.observe(elementKeyPaths: [\.grade]) { array, change in
                if change.kind == .elementChanged {
                    lastElementIndices = change.elements.map(\.newIndex!)
                    return
                }
                let applied = change.applying(to: model)
                if applied.map({ $0.map(ObjectIdentifier.init) }) != Array(array).map(ObjectIdentifier.init) {
                    failures.append("\(change)")
                }
                model = Array(array)
            }
            for _ in 0..<20 {
                let edit = { (a: ObservableArray<Student>, g: inout SplitMix64) in
                    switch g.below(7) {
                    case 0: a.insert(pool[g.below(12)], at: g.below(a.count + 1))
                    case 1: if !a.isEmpty { a.remove(at: g.below(a.count)) }
                    case 2: a.append(pool[g.below(12)])
                    case 3: if !a.isEmpty { a.swapAt(g.below(a.count), g.below(a.count)) }
                    case 4: if !a.isEmpty { a[g.below(a.count)] = pool[g.below(12)] }
                    case 5: if a.count > 1 { a.move(from: g.below(a.count), to: g.below(a.count)) }
                    default: if !a.isEmpty { let i = g.below(a.count); a.removeSubrange(i..<min(a.count, i + 2)) }
                    }
                }
                if generator.below(3) == 0 {
                    array.performBatchUpdates { a in
                        for _ in 0..<(1 + generator.below(6)) { edit(a, &generator) }
                    }
                } else {
                    edit(array, &generator)
                }
                let probe = pool[generator.below(12)]
                lastElementIndices = nil
                probe.grade += 1
                let expected = array.indices.filter { array[$0] === probe }
                #expect((lastElementIndices ?? []) == expected)
            }
            #expect(failures.isEmpty, "changes that did not map old to new: \(failures)")
            array._checkInvariants()
            token.cancel()
        }
    }
}
