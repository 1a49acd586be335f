@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

/// Records every change an array reports, and checks each against the contents before and after.
final class ChangeRecorder<Element> {
    var changes: [ArrayChange<Element>] = []
    var token: ObservationToken?
}

@Suite("Observable arrays: every mutation reports its exact change")
struct ObservableArrayTests {
    /// Observes `array`, runs `mutation`, and returns the changes (also checking that each change
    /// maps the contents before it to the contents after it).
    func changes(of array: ObservableArray<Int>, _ mutation: (ObservableArray<Int>) -> Void) -> [ArrayChange<Int>] {
        var recorded: [ArrayChange<Int>] = []
        var before = Array(array)
        let token = array.observe { array, change in
            recorded.append(change)
            #expect(change.applying(to: before) == Array(array), "apply(change, old) == new for \(change)")
            before = Array(array)
        }
        mutation(array)
        token.cancel()
        return recorded
    }

    @Test("append reports the new element at the tail", arguments: ObservationBackend.allCases)
    func append(backend: ObservationBackend) {
        let array = ObservableArray([1, 2], backend: backend)
        let c = changes(of: array) { $0.append(3) }
        #expect(c.count == 1 && c[0].kind == .append)
        #expect(describe(c[0]) == ["3 nil->2"])
    }

    @Test("append(contentsOf:) of 100,000 elements is one run", arguments: ObservationBackend.allCases)
    func appendManyIsOneRun(backend: ObservationBackend) {
        let array = ObservableArray<Int>(backend: backend)
        let c = changes(of: array) { $0.append(contentsOf: 0..<100_000) }
        #expect(c.count == 1 && c[0].kind == .append)
        #expect(c[0].runs == [ArrayChange<Int>.Run(kind: .insert, range: 0..<100_000, destination: nil)])
        #expect(c[0].insertedCount == 100_000)
    }

    @Test("insert at an index reports it", arguments: ObservationBackend.allCases)
    func insertAt(backend: ObservationBackend) {
        let array = ObservableArray([1, 2, 3], backend: backend)
        let c = changes(of: array) { $0.insert(9, at: 1); $0.insert(8, at: 0); $0.insert(contentsOf: [6, 7], at: 5) }
        #expect(c.map(\.kind) == [.insert, .insert, .insert])
        #expect(describe(c[0]) == ["9 nil->1"])
        #expect(describe(c[1]) == ["8 nil->0"])
        #expect(describe(c[2]) == ["6 nil->5", "7 nil->6"])
        #expect(Array(array) == [8, 1, 9, 2, 3, 6, 7])
    }

    @Test("remove at an index and remove last", arguments: ObservationBackend.allCases)
    func removeAtAndRemoveLast(backend: ObservationBackend) {
        let array = ObservableArray([10, 11, 12, 13], backend: backend)
        var removed: [Int] = []
        let c = changes(of: array) {
            removed.append($0.remove(at: 1))
            removed.append($0.removeLast())
            removed.append($0.popLast()!)
        }
        #expect(removed == [11, 13, 12])
        #expect(c.map(\.kind) == [.remove, .removeLast, .removeLast])
        #expect(describe(c[0]) == ["11 1->nil"])
        #expect(describe(c[1]) == ["13 2->nil"])
        #expect(describe(c[2]) == ["12 1->nil"])
    }

    @Test("a change nobody kept lends its storage to the next, without keeping its removed elements; a kept one stays whole",
          arguments: ObservationBackend.allCases)
    func recycledChangeStorage(backend: ObservationBackend) {
        final class Payload: Sendable {}
        let array = ObservableArray([Payload(), Payload(), Payload()], backend: backend)
        var kept: [ArrayChange<Payload>] = []
        var heard = 0
        let token = array.observe { _, change in
            heard += 1
            if heard == 3 { kept.append(change) }
        }
        weak var first: Payload?
        weak var third: Payload?
        do { first = array[0]; _ = array.remove(at: 0) }   // change 1: nobody keeps it
        // (Optimised builds recycle the change storage — CI runs this suite in release too; a
        // debug build's temporaries keep each change referenced a little longer.)
        #expect(first == nil, "a delivered change's recycled storage still holds the element it removed")
        do {
            array.append(Payload())          // change 2: may reuse change 1's storage
            third = array[1]
            _ = array.remove(at: 1)          // change 3: kept
            array.insert(Payload(), at: 0)   // change 4: must not reuse the kept one's
        }
        #expect(heard == 4)
        #expect(third != nil, "the kept change keeps the element it removed")
        #expect(kept.count == 1 && kept[0].kind == .remove && kept[0].oldCount == 3 && kept[0].newCount == 2)
        #expect(kept[0].elements.map(\.oldIndex) == [1] && kept[0].elements.map(\.newIndex) == [nil])
        #expect(kept[0].elements.first.map { $0.element === third } == true)
        kept.removeAll()
        #expect(third == nil)
        token.cancel()
    }

    @Test("replacing index 2 reports the removed element at old 2 and the inserted one at new 2", arguments: ObservationBackend.allCases)
    func replaceAtIndex(backend: ObservationBackend) {
        let array = ObservableArray([0, 1, 2, 3], backend: backend)
        let c = changes(of: array) { $0[2] = 20 }
        #expect(c.count == 1 && c[0].kind == .replace)
        #expect(describe(c[0]) == ["2 2->nil", "20 nil->2"])
    }

    @Test("setting an element to itself reports nothing, to another one a replace: objects, AnyObject, class-bound existentials, values",
          arguments: ObservationBackend.allCases)
    func subscriptSetOfTheSameElementReportsNothing(backend: ObservationBackend) {
        /// Counts the changes `array[1] = same` then `array[1] = other` report.
        func reported<Element>(_ array: ObservableArray<Element>, same: Element, other: Element) -> [Int] {
            var counts: [Int] = []
            let token = array.observe { _, change in counts.append(change.insertedCount) }
            array[1] = same
            counts.append(-1)   // the separator: nothing before it
            array[1] = other
            token.cancel()
            return counts
        }
        let objects = [NamedBox("a"), NamedBox("b"), NamedBox("c")]
        #expect(reported(ObservableArray(objects, backend: backend), same: objects[1], other: objects[2]) == [-1, 1])
        let anyObjects: [AnyObject] = objects
        #expect(reported(ObservableArray(anyObjects, backend: backend), same: anyObjects[1], other: anyObjects[0]) == [-1, 1])
        #expect(reported(ObservableArray(anyObjects, backend: backend), same: anyObjects[1], other: NamedBox("b")) == [-1, 1],
                "an equal name is not the same object")
        // `any P` with `P: AnyObject`: two words (the object and a witness table), the same object.
        let named: [any NamedObject] = objects
        #expect(reported(ObservableArray(named, backend: backend), same: named[1], other: named[2]) == [-1, 1])
        #expect(reported(ObservableArray(named, backend: backend), same: named[1], other: NamedBox("b")) == [-1, 1],
                "an equal name is not the same object")
        // Existentials that are not class-bound compare as values: `any Error` of a class is never
        // the same, an `Int` in an `Any` neither (`Any` is not `Equatable`).
        let errors: [any Error] = [ErrorBox(), ErrorBox(), ErrorBox()]
        #expect(reported(ObservableArray(errors, backend: backend), same: errors[1], other: errors[2]) == [1, -1, 1])
        #expect(reported(ObservableArray([1, 2, 3] as [Any], backend: backend), same: 2, other: 3) == [1, -1, 1])
        #expect(reported(ObservableArray([1, 2, 3], backend: backend), same: 2, other: 3) == [-1, 1])
        // A replace of the same length with the same objects reports nothing either.
        func replacesOfTheSame<Element>(_ elements: [Element]) -> Int {
            let array = ObservableArray(elements, backend: backend)
            var calls = 0
            let token = array.observe { _, _ in calls += 1 }
            array.replaceSubrange(0..<2, with: elements[0..<2])
            // Not the same at 2, the second element compared: reading by the wrong stride would
            // compare a witness-table word there, the same for both.
            array.replaceSubrange(1..<3, with: [elements[1], elements[0]])
            token.cancel()
            return calls
        }
        #expect(replacesOfTheSame(anyObjects) == 1)
        #expect(replacesOfTheSame(named) == 1)
        #expect(replacesOfTheSame(objects) == 1)
    }

    @Test("each element type has its own contents key, the same for every array of that type, and introspection names it",
          arguments: ObservationBackend.allCases)
    func contentsKeyPerElementType(backend: ObservationBackend) {
        // The key is interned once per element type (building the generic key path on every
        // array and every observation cost more than the rest of either): check it still is the
        // key path `\ObservableArray<Element>.self` of the right type, for each type.
        let ints = ObservableArray([1, 2], backend: backend), otherInts = ObservableArray([3], backend: backend)
        let names = ObservableArray(["a"], backend: backend)
        var heard: [String] = []
        let tokens = [ints.observe { _, _ in heard.append("ints") }, otherInts.observe { _, _ in heard.append("other") },
                      names.observe { _, _ in heard.append("names") }]
        #expect(ints.observedKeyPaths == [\ObservableArray<Int>.self])
        #expect(otherInts.observedKeyPaths == [\ObservableArray<Int>.self])
        #expect(names.observedKeyPaths == [\ObservableArray<String>.self])
        ints.append(3)
        names.append("b")
        otherInts.removeAll()
        #expect(heard == ["ints", "names", "other"])
        let watcher = NamedBox("w")
        ints.addObserver(watcher) { _, _, _ in heard.append("watcher") }
        ints.append(4)
        ints.removeObserver(watcher, for: \ObservableArray<Int>.self)   // found by the key path a user writes
        ints.append(5)
        #expect(heard.suffix(3) == ["ints", "watcher", "ints"])
        tokens.forEach { $0.cancel() }
    }

    @Test("swapping 2 and 3 reports both with old and new indices", arguments: ObservationBackend.allCases)
    func swapReportsBoth(backend: ObservationBackend) {
        let array = ObservableArray([0, 1, 2, 3, 4], backend: backend)
        let c = changes(of: array) { $0.swapAt(2, 3) }
        #expect(c.count == 1 && c[0].kind == .move)
        #expect(describe(c[0]) == ["2 2->3", "3 3->2"])
        #expect(Array(array) == [0, 1, 3, 2, 4])
    }

    @Test("removeAll on four elements reports four removals at old indices 0...3", arguments: ObservationBackend.allCases)
    func removeAllReportsEach(backend: ObservationBackend) {
        let array = ObservableArray([5, 6, 7, 8], backend: backend)
        let c = changes(of: array) { $0.removeAll() }
        #expect(c.count == 1 && c[0].kind == .remove)
        #expect(describe(c[0]) == ["5 0->nil", "6 1->nil", "7 2->nil", "8 3->nil"])
        #expect(array.isEmpty)
    }

    @Test("removing an object present twice reports both occurrences", arguments: ObservationBackend.allCases)
    func removingAnObjectPresentTwice(backend: ObservationBackend) {
        let ada = Student(backend, "ada"), bob = Student(backend, "bob")
        let array = ObservableArray([ada, bob, ada], backend: backend)
        var recorded: [ArrayChange<Student>] = []
        let token = array.observe { _, change in recorded.append(change) }
        array.removeAll(of: ada)
        #expect(recorded.count == 1 && recorded[0].kind == .remove)
        #expect(describe(recorded[0]) == ["ada 0->nil", "ada 2->nil"])
        #expect(array.map(\.name) == ["bob"])
        token.cancel()
    }

    @Test("removeAll(where:) reports every removed index in one change", arguments: ObservationBackend.allCases)
    func removeAllWhere(backend: ObservationBackend) {
        let array = ObservableArray(Array(0..<10), backend: backend)
        let c = changes(of: array) { $0.removeAll { $0 % 3 == 0 } }
        #expect(c.count == 1)
        #expect(c[0].runs.map(\.range) == [0..<1, 3..<4, 6..<7, 9..<10])
        #expect(Array(array) == [1, 2, 4, 5, 7, 8])
    }

    @Test("removeAll(where:) reads a wrapped ring in order, and decides again when its predicate mutates the array",
          arguments: ObservationBackend.allCases)
    func removeAllWhereWrappedAndRetried(backend: ObservationBackend) {
        let array = ObservableArray([4, 5, 6, 7, 8], backend: backend)
        for value in [3, 2, 1] { array.insert(value, at: 0) }   // the front wraps around the ring
        let c = changes(of: array) { $0.removeAll { $0.isMultiple(of: 2) } }
        #expect(Array(array) == [1, 3, 5, 7])
        #expect(c.count == 1 && c[0].runs.map(\.range) == [1..<2, 3..<4, 5..<6, 7..<8])

        var calls = 0
        let d = changes(of: array) { array in
            array.removeAll { value in
                calls += 1
                if calls == 1 { array.append(9) }   // no lock is held: the decision is retried
                return value > 4
            }
        }
        #expect(Array(array) == [1, 3])
        #expect(calls == 4 + 5, "the old contents once, then the new ones")
        #expect(d.map(\.kind) == [.append, .remove])
    }

    @Test("removeAll(of:) finds the object's copies through the position index while elements are observed",
          arguments: ObservationBackend.allCases)
    func removeAllOfThroughTheIndex(backend: ObservationBackend) {
        let ada = Student(backend, "ada"), bob = Student(backend, "bob"), cy = Student(backend, "cy")
        let array = ObservableArray([ada, bob, ada, cy, ada, bob], backend: backend)
        var recorded: [ArrayChange<Student>] = []
        let token = array.observe(elementKeyPaths: [\Student.grade]) { _, change in recorded.append(change) }
        array.insert(cy, at: 1)   // ada's entries are now 0, 3, 5
        recorded.removeAll()
        array.removeAll(of: ada)
        #expect(recorded.count == 1 && describe(recorded[0]) == ["ada 0->nil", "ada 3->nil", "ada 5->nil"])
        #expect(array.map(\.name) == ["cy", "bob", "cy", "bob"])
        recorded.removeAll()
        array.removeAll(of: ada)
        #expect(recorded.isEmpty, "an absent object: nothing removed, nothing reported")
        array.performBatchUpdates { $0.removeAll(of: bob); $0.append(ada) }
        #expect(recorded.count == 1 && recorded[0].kind == .batch)
        #expect(recorded[0].applying(to: [cy, bob, cy, bob])?.map(\.name) == ["cy", "cy", "ada"])
        recorded.removeAll()
        ada.grade += 1
        #expect(recorded.count == 1 && recorded[0].elements.map(\.newIndex) == [2], "the index followed the removals")
        array._checkInvariants()
        token.cancel()
    }

    @Test("mutations that change nothing report nothing", arguments: ObservationBackend.allCases)
    func noOpMutationsReportNothing(backend: ObservationBackend) {
        let ada = Student(backend, "ada")
        let objects = ObservableArray([ada], backend: backend)
        var objectChanges = 0
        let token = objects.observe { _, _ in objectChanges += 1 }
        objects[0] = ada            // the same object
        objects.swapAt(0, 0)        // an index with itself
        objects.removeAll { _ in false }
        #expect(objectChanges == 0)
        token.cancel()

        let c = changes(of: ObservableArray([1, 2], backend: backend)) { array in
            array[1] = 2            // an equal value
            array.append(contentsOf: [])
            array.sort()            // already sorted
        }
        #expect(c.isEmpty)
        #expect(changes(of: ObservableArray<Int>(backend: backend)) { $0.removeAll() }.isEmpty)
    }

    @Test("sort, reverse and move report moves", arguments: ObservationBackend.allCases)
    func reorderingReportsMoves(backend: ObservationBackend) {
        let array = ObservableArray([3, 1, 2], backend: backend)
        let c = changes(of: array) { array in
            array.sort()
            array.reverse()
            array.move(from: 0, to: 2)
            array.move(fromOffsets: [0], toOffset: 2)
        }
        #expect(c.map(\.kind) == [.move, .move, .move, .move])
        #expect(describe(c[0]) == ["3 0->2", "1 1->0", "2 2->1"], "moves are listed by old index")
        #expect(Array(array) == [1, 2, 3])
    }

    @Test("removeFirst(k) on a let array: reported as one removal, inside batches too", arguments: ObservationBackend.allCases)
    func removeFirstK(backend: ObservationBackend) {
        let array = ObservableArray([1, 2, 3, 4, 5], backend: backend)
        var changes: [ArrayChange<Int>] = []
        let token = array.observe { _, change in changes.append(change) }
        array.removeFirst(2)
        #expect(Array(array) == [3, 4, 5])
        #expect(changes.count == 1 && changes[0].kind == .remove && changes[0].removedCount == 2)
        #expect(changes[0].applying(to: [1, 2, 3, 4, 5]) == [3, 4, 5])
        array.removeFirst(0)
        #expect(changes.count == 1, "removing nothing reports nothing")
        array.performBatchUpdates { $0.removeFirst(1); $0.append(6) }
        #expect(Array(array) == [4, 5, 6])
        #expect(changes.last?.applying(to: [3, 4, 5]) == [4, 5, 6])
        token.cancel()
    }

    @Test("for-in walks both runs of a wrapped ring, and an iterator keeps the contents it started with",
          arguments: ObservationBackend.allCases)
    func iterationAcrossWrapAround(backend: ObservationBackend) {
        let array = ObservableArray<Int>(backend: backend)
        var model: [Int] = []
        var iterated: [Int] = []
        for _ in array { iterated.append(0) }
        #expect(iterated.isEmpty, "an empty array yields nothing")
        for value in 0..<40 {
            if value % 2 == 0 { array.insert(value, at: 0); model.insert(value, at: 0) }   // the head wraps
            else { array.append(value); model.append(value) }
            iterated = []
            for element in array { iterated.append(element) }
            #expect(iterated == model, "after \(value + 1) insertions")
        }
        var iterator = array.makeIterator()
        array.removeAll()
        array.append(99)
        iterated = []
        while let element = iterator.next() { iterated.append(element) }
        #expect(iterated == model, "the iterator reads its snapshot, not later contents")
        #expect(iterator.next() == nil, "and stays at its end")
    }

    @Test("iterating a wrapped ring lays it out contiguously when nothing shares it, tracked elements included",
          arguments: ObservationBackend.allCases)
    func iterationOfWrappedRing(backend: ObservationBackend) {
        // Unshared, untracked: relaid out in place by the first iteration; the array is unchanged
        // and goes on wrapping afterwards.
        let numbers = ObservableArray([1, 2, 3], backend: backend)
        numbers.insert(0, at: 0)
        #expect(Array(numbers) == [0, 1, 2, 3])
        numbers.insert(-1, at: 0)
        #expect(Array(numbers) == [-1, 0, 1, 2, 3] && Array(numbers) == [-1, 0, 1, 2, 3])
        // Shared with a live iterator: that iterator keeps the contents it started with.
        let held = numbers.makeIterator()
        _ = numbers.removeLast()
        #expect(Array(IteratorSequence(held)) == [-1, 0, 1, 2, 3])
        // Shared with a change that an observer kept, while wrapped: iterated from a copy.
        final class Kept: @unchecked Sendable { var change: ArrayChange<Int>? }
        let kept = Kept()
        let keeper = numbers.observe { _, change in kept.change = change }
        numbers.insert(-2, at: 0)   // wraps again; the kept change shares the storage
        #expect(Array(numbers) == [-2, -1, 0, 1, 2])
        #expect(kept.change?.applying(to: [-1, 0, 1, 2]) == [-2, -1, 0, 1, 2])
        keeper.cancel()
        #expect(Array(numbers) == [-2, -1, 0, 1, 2])

        // Tracked elements (their positions are slots): relaid out with the position index rebuilt,
        // so a later element change still reports the right index.
        let people = (0..<4).map { Student(backend, "s\($0)") }
        let array = ObservableArray(Array(people[1...]), backend: backend)
        var reported: [Int] = []
        let token = array.observe(elementKeyPaths: [\Student.grade]) { _, change in
            if change.kind == .elementChanged { reported += change.elements.compactMap(\.newIndex) }
        }
        array.insert(people[0], at: 0)   // wraps the ring
        var names: [String] = []
        for student in array { names.append(student.name) }   // makeIterator: relaid out, index rebuilt
        #expect(names == ["s0", "s1", "s2", "s3"])
        array._checkInvariants()   // the position index agrees with the slots
        people[3].grade += 1
        people[0].grade += 1
        #expect(reported == [3, 0])
        token.cancel()
    }

    @Test("sort agrees with Array's, keeps equal elements in order, observed or not, across ring wrap-around",
          arguments: ObservationBackend.allCases)
    func sortAgreesWithArray(backend: ObservationBackend) {
        var rng = SplitMix64(seed: 0x5027_5027)
        for observed in [false, true] {
            // Values key * 10_000 + serial, sorted by key only: stability shows in the serials.
            let array = ObservableArray<Int>(backend: backend)
            var model: [Int] = []
            for serial in 0..<3_000 {
                let value = rng.below(40) * 10_000 + serial
                if serial % 3 == 0 { array.insert(value, at: 0); model.insert(value, at: 0) }   // wraps the ring
                else { array.append(value); model.append(value) }
            }
            let byKey: (Int, Int) -> Bool = { $0 / 10_000 < $1 / 10_000 }
            if observed {
                let c = changes(of: array) { $0.sort(by: byKey) }
                #expect(c.map(\.kind) == [.move])
            } else {
                array.sort(by: byKey)
            }
            model.sort(by: byKey)
            #expect(Array(array) == model, "observed: \(observed)")
            // A comparator may read the array it sorts (it never runs under the array's lock).
            array.sort { a, b in array.count > 0 && a > b }
            #expect(Array(array) == model.sorted(by: >))
        }
    }

    @Test("a sort whose comparator changes the array starts over on the new contents, observed or not",
          arguments: ObservationBackend.allCases)
    func sortStartsOverWhenTheArrayChanges(backend: ObservationBackend) {
        for observed in [false, true] {
            let array = ObservableArray([5, 3, 9, 1], backend: backend)
            var calls = 0
            let token = observed ? array.observe { _, _ in calls += 1 } : nil
            var appended = false
            array.sort { a, b in
                if !appended {
                    appended = true
                    array.append(0)   // the first attempt's result is stale: it is not installed
                }
                return a < b
            }
            token?.cancel()
            #expect(Array(array) == [0, 1, 3, 5, 9], "observed: \(observed)")
            if observed { #expect(calls == 2, "the append, then one move change") }
        }
    }

    @Test("move(from:to:) reports one move run, in either direction", arguments: ObservationBackend.allCases)
    func moveReportsOneRun(backend: ObservationBackend) {
        let array = ObservableArray(Array(0..<10), backend: backend)
        let c = changes(of: array) { array in
            array.move(from: 2, to: 7)
            array.move(from: 9, to: 0)
            array.move(from: 4, to: 4)                      // nothing
        }
        #expect(c.map(\.kind) == [.move, .move])
        #expect(c.map(\.runs.count) == [1, 1], "the elements between shift implicitly")
        #expect(describe(c[0]) == ["2 2->7"])
        #expect(describe(c[1]) == ["9 9->0"])
        #expect(Array(array) == [9, 0, 1, 3, 4, 5, 6, 7, 2, 8])
    }

    @Test("replaceSubrange reports removals and insertions", arguments: ObservationBackend.allCases)
    func replaceSubrange(backend: ObservationBackend) {
        let array = ObservableArray([0, 1, 2, 3], backend: backend)
        let c = changes(of: array) { array in
            array.replaceSubrange(1..<3, with: [7, 8, 9])
            array.removeSubrange(0..<1)
            array.removeFirst()
            array.removeLast(2)
        }
        #expect(c.map(\.kind) == [.replace, .remove, .remove, .removeLast])
        #expect(describe(c[0]) == ["1 1->nil", "2 2->nil", "7 nil->1", "8 nil->2", "9 nil->3"])
        #expect(Array(array) == [8])
    }

    @Test("generic algorithms through the protocols are reported too", arguments: ObservationBackend.allCases)
    func genericAlgorithmsAreReported(backend: ObservationBackend) {
        var array = ObservableArray([4, 3, 2, 1], backend: backend)
        var count = 0
        let token = array.observe { _, _ in count += 1 }
        _ = array.partition { $0 > 2 }                       // MutableCollection default: swapAt
        array += [9]                                        // RangeReplaceableCollection default
        array.removeFirst(1)
        #expect(count >= 3)
        #expect(array.count == 4)
        token.cancel()
    }

    @Test("unobserved fast paths: an iterator or a kept change keeps its snapshot", arguments: ObservationBackend.allCases)
    func unobservedMutationsCopyShared(backend: ObservationBackend) {
        let array = ObservableArray([1, 2, 3], backend: backend)
        var iterator = array.makeIterator()          // shares the storage
        array.append(4)
        array[0] = 9
        #expect(array.popLast() == 4)
        #expect(array.removeLast() == 3)
        var seen: [Int] = []
        while let element = iterator.next() { seen.append(element) }
        #expect(seen == [1, 2, 3], "the iterator's snapshot is untouched")
        #expect(Array(array) == [9, 2])
        // A change kept from an observation holds the storage too: later unobserved mutations
        // must not write into it.
        var kept: ArrayChange<Int>?
        let token = array.observe { _, change in kept = change }
        array.append(7)
        token.cancel()
        array[0] = 100
        array.append(8)
        #expect(kept.map { $0.elements.map(\.element) } == [7])
        array.reverse()                              // unobserved, storage shared with `kept`
        #expect(kept.map { $0.elements.map(\.element) } == [7])
        array.reverse()
        #expect(Array(array) == [100, 2, 7, 8])
        #expect(array.popLast() == 8)
        while array.popLast() != nil {}
        #expect(array.isEmpty && array.popLast() == nil)
        array.append(contentsOf: 1...5)
        array.reverse()
        #expect(Array(array) == [5, 4, 3, 2, 1])
    }

    @Test("random unobserved mutations agree with Array, across ring wrap-around, growth and snapshots",
          arguments: ObservationBackend.allCases)
    func unobservedFastPathsAgreeWithArray(backend: ObservationBackend) {
        var rng = SplitMix64(seed: 0xFA57_FA57)
        let array = ObservableArray<Int>(backend: backend)
        var model: [Int] = []
        var snapshots: [(ObservableArray<Int>.Iterator, [Int])] = []
        for step in 0..<5_000 {
            let n = model.count
            switch rng.below(10) {
            case 0, 1: array.append(step); model.append(step)
            case 2, 3: let i = rng.below(n + 1); array.insert(step, at: i); model.insert(step, at: i)
            case 4 where n > 0, 5 where n > 0: let i = rng.below(n); #expect(array.remove(at: i) == model.remove(at: i))
            case 6 where n > 0: #expect(array.popLast() == model.popLast())
            case 7 where n > 0: let i = rng.below(n); array[i] = -step; model[i] = -step
            case 8: array.reverse(); model.reverse()
            case 9 where rng.below(20) == 0:
                // A snapshot (the storage becomes shared) or a brief observation (the general path).
                if rng.below(2) == 0 {
                    snapshots.append((array.makeIterator(), model))
                } else {
                    var seen = 0
                    let token = array.observe { _, _ in seen += 1 }
                    array.insert(step, at: 0)
                    model.insert(step, at: 0)
                    token.cancel()
                    #expect(seen == 1)
                }
            default: break
            }
            if step % 50 == 0 { #expect(Array(array) == model, "step \(step)") }
        }
        #expect(Array(array) == model)
        for (iterator, contents) in snapshots {
            var iterator = iterator
            var seen: [Int] = []
            while let element = iterator.next() { seen.append(element) }
            #expect(seen == contents, "an iterator's snapshot never changes")
        }
    }

    @Test("out-of-range indices trap like Array's")
    func outOfRangeTraps() async {
        await #expect(processExitsWith: .failure) {
            let array = ObservableArray([1], backend: .c)
            _ = array.remove(at: 5)
        }
        await #expect(processExitsWith: .failure) {
            let array = ObservableArray([1], backend: .swift)
            array[1] = 2
        }
    }

    @Test("an out-of-range subscript names the index and the count, in release builds too")
    func outOfRangeMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let array = ObservableArray([1, 2], backend: .c)
            _ = array[5]
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("ObservableArray.subscript: index 5 out of range for count 2"))
    }

    @Test("misuse messages name the operation, in release builds too")
    func misuseMessages() async {
        let removeSubrange = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let array = ObservableArray([1, 2], backend: .c)
            array.removeSubrange(1..<5)
        }
        let removeSubrangeMessage = String(decoding: removeSubrange?.standardErrorContent ?? [], as: UTF8.self)
        #expect(removeSubrangeMessage.contains("ObservableArray.removeSubrange: range 1..<5 out of range for count 2"))
        let removeLast = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let array = ObservableArray([1, 2], backend: .swift)
            array.removeLast(3)
        }
        let removeLastMessage = String(decoding: removeLast?.standardErrorContent ?? [], as: UTF8.self)
        #expect(removeLastMessage.contains("ObservableArray.removeLast: cannot remove 3 of 2 elements"))
        let removeFirst = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let array = ObservableArray<Int>(backend: .c)
            array.removeFirst()
        }
        let removeFirstMessage = String(decoding: removeFirst?.standardErrorContent ?? [], as: UTF8.self)
        #expect(removeFirstMessage.contains("ObservableArray.removeFirst: the array is empty"))
    }
}

/// An object with a name: equal names, different objects.
final class NamedBox: NamedObject {
    let name: String
    init(_ name: String) { self.name = name }
}

/// A class-bound protocol: `any NamedObject` is an object reference and a witness table.
protocol NamedObject: AnyObject {
    var name: String { get }
}

/// An error that is an object: `any Error` of it is not class-bound.
final class ErrorBox: Error {}
