import Dispatch
@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

@Suite("Observable arrays: element properties and owners", .serialized)
struct ElementObservationTests {
    @Test("an element's property change is reported with the element and its index", arguments: ObservationBackend.allCases)
    func elementChangeWithIndex(backend: ObservationBackend) {
        let roster = students(backend, "ada", "bob", "cy")
        let array = ObservableArray(roster, backend: backend)
        var seen: [String] = []
        let token = array.observe(options: [.old, .new], elementKeyPaths: [\.name]) { _, change in
            guard change.kind == .elementChanged else { return }
            #expect(change.elementKeyPath == \Student.name)
            seen.append("\(change.elementOldValue as! String)->\(change.elementNewValue as! String) at \(change.elements.map(\.newIndex!))")
        }
        roster[1].name = "bobby"
        roster[1].grade = 3                  // not an observed element key
        #expect(seen == ["bob->bobby at [1]"])
        array.insert(Student(backend, "zed"), at: 0)
        roster[1].name = "robert"            // its index moved to 2
        #expect(seen.last == "bobby->robert at [2]")
        token.cancel()
        roster[0].name = "after cancel"
        #expect(seen.count == 2)
    }

    @Test("tracking a large array (setup on two threads) indexes every element, copies included; two arrays share the elements",
          arguments: ObservationBackend.allCases)
    func largeArraySetupOnTwoThreads(backend: ObservationBackend) {
        // 40,000 elements: above the 8,192 from which setup runs its index pass and its membership
        // pass on two threads (`_ElementTracker._parallelPassesThreshold`).
        var roster = (0..<40_000).map { Student(backend, "s\($0)") }
        let shared = roster[123]
        roster[39_000] = shared                          // one element at two indices
        let first = ObservableArray(roster, backend: backend)
        let second = ObservableArray(roster.reversed(), backend: backend)
        var firstSeen: [[Int]] = [], secondSeen: [[Int]] = []
        let firstToken = first.observe(elementKeyPaths: [\.name]) { _, change in
            if change.kind == .elementChanged { firstSeen.append(change.elements.map(\.newIndex!)) }
        }
        let secondToken = second.observe(elementKeyPaths: [\.name]) { _, change in
            if change.kind == .elementChanged { secondSeen.append(change.elements.map(\.newIndex!)) }
        }
        first._checkInvariants()
        second._checkInvariants()
        roster[20_000].name = "changed"
        shared.name = "shared"
        #expect(firstSeen == [[20_000], [123, 39_000]])
        #expect(secondSeen == [[19_999], [999, 39_876]])
        firstToken.cancel()
        roster[5].name = "after one cancel"
        #expect(firstSeen.count == 2 && secondSeen.last == [39_994])
        secondToken.cancel()
        shared.name = "after both"                       // no membership left: nothing reported, no trap
        #expect(firstSeen.count == 2 && secondSeen.count == 3)
    }

    /// The indices (sorted) that each element change of an array's `name` reports, until `stop()`.
    private final class ElementIndexLog {
        private(set) var seen: [[Int]] = []
        private var token: ObservationToken?
        init(_ array: ObservableArray<Student>) {
            token = array.observe(elementKeyPaths: [\.name]) { [unowned self] _, change in
                if change.kind == .elementChanged { self.seen.append(change.elements.map(\.newIndex!).sorted()) }
            }
        }
        func stop() { token?.cancel() }
    }

    @Test("appending a long run to a tracked array (both passes on two threads) indexes every new element, copies included",
          arguments: ObservationBackend.allCases)
    func longAppendOnTwoThreads(backend: ObservationBackend) {
        // 12,000 appended: above the 8,192 from which a run's index pass and membership pass run
        // on two threads (`_ElementTracker._parallelPassesThreshold`).
        let start = (0..<100).map { Student(backend, "s\($0)") }
        var run = (0..<12_000).map { Student(backend, "r\($0)") }
        run[11_000] = start[7]                           // already in the array: one more index
        run[5] = run[4]                                  // twice within the run
        let array = ObservableArray(start, backend: backend)
        let log = ElementIndexLog(array)
        array.append(contentsOf: run)
        #expect(array._sharedCopyCount == 1, "copied in on two threads")
        array._checkInvariants()
        run[9_000].name = "x"
        start[7].name = "y"
        run[4].name = "z"
        #expect(log.seen == [[9_100], [7, 11_100], [104, 105]])
        array.removeLast(12_000)
        array._checkInvariants()
        run[9_000].name = "gone"                         // its membership went with it: nothing reported
        start[7].name = "kept"
        #expect(log.seen.count == 4 && log.seen.last == [7])
        log.stop()
    }

    @Test("a long run inserted in the middle, across the end of the ring, is copied and indexed on two threads, copies included",
          arguments: ObservationBackend.allCases)
    func longMiddleInsertionOnTwoThreads(backend: ObservationBackend) {
        // 20,000 inserted (above `_ElementTracker._parallelPassesThreshold`): both threads copy
        // chunks of the run into the ring (`_ElementTracker.copyIn`), then one indexes it while
        // the other counts memberships. The front removal moves the ring's head forward, so the
        // gap opened at index 2,500 runs past the end of the allocation.
        let roster = (0..<20_000).map { Student(backend, "s\($0)") }
        var run = (0..<20_000).map { Student(backend, "r\($0)") }
        run[100] = roster[15_001]                        // already in the array: one more index
        run[19_000] = run[18_999]                        // twice within the run
        let array = ObservableArray(roster, backend: backend)
        array.removeFirst(15_000)
        let log = ElementIndexLog(array)
        array.insert(contentsOf: run, at: 2_500)
        #expect(array._sharedCopyCount == 1, "copied in on two threads")
        #expect(array._storageSlot(of: 2_500) > array._storageSlot(of: 22_499), "the run wraps around the end of the ring")
        array._checkInvariants()
        #expect(array.count == 25_000 && array[11_500] === run[9_000] && array[24_999] === roster[19_999])
        run[9_000].name = "x"
        roster[15_001].name = "y"
        run[18_999].name = "z"
        roster[19_999].name = "w"
        #expect(log.seen == [[11_500], [1, 2_600], [21_499, 21_500], [24_999]])
        array.removeSubrange(2_500..<22_500)
        array._checkInvariants()
        run[9_000].name = "gone"                         // its membership went with it: nothing reported
        roster[15_001].name = "kept"
        #expect(log.seen.count == 5 && log.seen.last == [1])
        log.stop()
    }

    @Test("removing a long run, a quarter of the array or more, leaves the index to be rebuilt by the next element change; a shorter one takes its entries out",
          arguments: ObservationBackend.allCases)
    func longRemovalLeavesTheIndexStale(backend: ObservationBackend) {
        // `_ElementTracker.leave(indices:ring:)`: more than 1,024 elements and a quarter of the
        // array make the index stale (a rebuild of what is left costs less than the removals).
        let roster = (0..<8_000).map { Student(backend, "s\($0)") }
        let array = ObservableArray(roster, backend: backend)
        let log = ElementIndexLog(array)
        array.removeSubrange(1_000..<2_500)              // 1,500 of 8,000: under a quarter
        var stale = array._isElementIndexStale
        #expect(!stale)
        array._checkInvariants()
        array.removeSubrange(0..<2_000)                  // 2,000 of 6,500: over a quarter
        stale = array._isElementIndexStale
        #expect(stale)
        roster[1_500].name = "gone"                      // left with the first run: nothing reported
        roster[3_000].name = "gone"                      // left with the second
        roster[5_000].name = "x"                         // now at 5,000 - 3,500
        #expect(log.seen == [[1_500]])
        stale = array._isElementIndexStale
        #expect(!stale, "the element change rebuilt it")
        array._checkInvariants()
        array.removeSubrange(0..<1_025)                  // 1,025 of 4,500: over 1,024, under a quarter
        stale = array._isElementIndexStale
        #expect(!stale)
        array.removeSubrange(0..<1_000)                  // 1,000 of 3,475: a quarter, but not over 1,024
        stale = array._isElementIndexStale
        #expect(!stale)
        array.removeSubrange(0..<1_100)                  // 1,100 of 2,475: both
        stale = array._isElementIndexStale
        #expect(stale)
        roster[7_999].name = "y"                         // now at 7,999 - 3,500 - 1,025 - 1,000 - 1,100
        #expect(log.seen == [[1_500], [1_374]])
        array._checkInvariants()
        array.removeFirst(1_000)                         // then the rest, in two steps
        array.removeAll()
        roster[7_999].name = "gone too"
        #expect(log.seen.count == 2)
        log.stop()
    }

    @Test("a change found through a tracker that a handler replaced is not reported to the replacement's observers",
          arguments: ObservationBackend.allCases)
    func changeFoundThroughAReplacedTrackerIsDropped(backend: ObservationBackend) {
        // The directory loads every array tracking the key before telling the first one. Here the
        // first array's handler stops the second array's tracking and starts it again with a new
        // observer: the new tracker (often at the freed one's address) must not take the change
        // that was found through the old one, which the new observer was registered after.
        let shared = Student(backend, "ada")
        let first = ObservableArray([shared], backend: backend), second = ObservableArray([shared], backend: backend)
        var secondToken: ObservationToken?
        var replacement: ObservationToken?
        var lateKinds: [ArrayChange<Student>.Kind] = []
        let firstToken = first.observe(elementKeyPaths: [\.grade]) { _, _ in
            guard replacement == nil else { return }
            secondToken?.cancel()            // the second array's tracker stops and goes
            replacement = second.observe(elementKeyPaths: [\.grade]) { _, change in lateKinds.append(change.kind) }
        }
        secondToken = second.observe(elementKeyPaths: [\.grade]) { _, _ in }
        shared.grade = 1
        #expect(lateKinds.isEmpty, "the replacement observer was registered after this change")
        shared.grade = 2
        #expect(lateKinds == [.elementChanged])
        first._checkInvariants()
        second._checkInvariants()
        firstToken.cancel()
        replacement?.cancel()
    }

    @Test("an array of a subclass tracks a key its superclass declares; objects outside the array are ignored",
          arguments: ObservationBackend.allCases)
    func superclassKeyOnSubclassElements(backend: ObservationBackend) {
        let cars = [Car(backend), Car(backend)]
        let array = ObservableArray(cars, backend: backend)
        var indices: [Int] = []
        var values: [Int] = []
        let token = array.observe(options: [.new], elementKeyPaths: [\Car.speed]) { _, change in
            guard change.kind == .elementChanged else { return }
            #expect(change.elementKeyPath == \Car.speed, "the key path the observer wrote")
            indices += change.elements.compactMap(\.newIndex)
            values += [change.elementChange(for: \Car.speed)?.new ?? nil].compactMap { $0 }
        }
        cars[1].speed = 50
        #expect(indices == [1] && values == [50])
        // Neither a plain Vehicle nor a Car outside the array is in it: nothing is reported (the
        // object that changed is looked up by address, never cast to the array's element type).
        let vehicle = Vehicle(backend), outsider = Car(backend)
        vehicle.speed = 10
        outsider.speed = 20
        #expect(indices == [1])
        cars[0].speed = 30
        #expect(indices == [1, 0])
        token.cancel()
    }

    @Test("changes of two element keys, one after the other, each name their own key path and value",
          arguments: ObservationBackend.allCases)
    func alternatingKeysNameTheirKeyPath(backend: ObservationBackend) {
        let roster = students(backend, "ada", "bob")
        let array = ObservableArray(roster, backend: backend)
        var seen: [String] = []
        let token = array.observe(options: [.new], elementKeyPaths: [\.name, \.grade]) { _, change in
            guard change.kind == .elementChanged else { return }
            // The change's storage is recycled from one element change to the next.
            if change.elementKeyPath == \Student.name { seen.append("name=\(change.elementNewValue as! String)") }
            else if change.elementKeyPath == \Student.grade { seen.append("grade=\(change.elementNewValue as! Int)") }
            else { seen.append("unexpected key path") }
        }
        roster[0].name = "ada2"
        roster[0].grade = 7
        roster[1].grade = 8
        roster[1].name = "bob2"
        token.cancel()
        #expect(seen == ["name=ada2", "grade=7", "grade=8", "name=bob2"])
    }

    @Test("element tracking follows membership: removed elements stop, inserted ones start", arguments: ObservationBackend.allCases)
    func trackingFollowsMembership(backend: ObservationBackend) {
        let (ada, bob) = (Student(backend, "ada"), Student(backend, "bob"))
        let array = ObservableArray([ada], backend: backend)
        var changes = 0
        let token = array.observe(elementKeyPaths: [\.name]) { _, change in
            if change.kind == .elementChanged { changes += 1 }
        }
        array.remove(at: 0)
        ada.name = "gone"
        #expect(changes == 0, "a removed element is no longer reported")
        array.append(bob)
        bob.name = "here"
        #expect(changes == 1, "an inserted element is reported")
        array[0] = ada
        bob.name = "replaced"
        ada.name = "back"
        #expect(changes == 2)
        array._checkInvariants()
        token.cancel()
    }

    @Test("after moves near and far, element changes report the elements' new indices", arguments: ObservationBackend.allCases)
    func elementIndicesFollowMoves(backend: ObservationBackend) {
        // 300 elements: moves across more than the index's per-element update limit too.
        let roster = (0..<300).map { Student(backend, "s\($0)") }
        let array = ObservableArray(roster, backend: backend)
        var reported: [Int] = []
        let token = array.observe(elementKeyPaths: [\.name]) { _, change in
            if change.kind == .elementChanged { reported += change.elements.map(\.newIndex!) }
        }
        var model = roster
        var rng = SplitMix64(seed: 0x3C0F_FEE5)
        for round in 0..<200 {
            let from = Int.random(in: 0..<300, using: &rng), to = Int.random(in: 0..<300, using: &rng)
            array.move(from: from, to: to)
            model.insert(model.remove(at: from), at: to)
            let probe = Int.random(in: 0..<300, using: &rng)
            reported.removeAll()
            model[probe].name = "r\(round)"
            #expect(reported == [probe], "round \(round): moved \(from) -> \(to)")
        }
        #expect(Array(array).map(\.name) == model.map(\.name))
        array._checkInvariants()
        array.performBatchUpdates { $0.move(from: 0, to: 299); $0.move(from: 10, to: 5) }
        model.insert(model.remove(at: 0), at: 299)
        model.insert(model.remove(at: 10), at: 5)
        #expect(Array(array).map(\.name) == model.map(\.name))
        array._checkInvariants()
        token.cancel()
    }

    @Test("an element change kept by a handler stays what it was while later changes are delivered",
          arguments: ObservationBackend.allCases)
    func keptElementChangesAreStable(backend: ObservationBackend) {
        // The array recycles the storage of an element change that nobody kept: a kept change,
        // or one waiting in a delivery queue, must never be refilled by the next change.
        let roster = students(backend, "ada", "bob", "cy")
        let array = ObservableArray(roster, backend: backend)
        var kept: [ArrayChange<Student>] = []
        var everyOther = false
        let token = array.observe(options: [.old, .new], elementKeyPaths: [\.name]) { _, change in
            everyOther.toggle()
            if everyOther { kept.append(change) }
        }
        let queue = DispatchQueue(label: "kept-element-changes")
        queue.suspend()
        var queued: [String] = []
        let queuedToken = array.observe(options: [.new], elementKeyPaths: [\.name], delivery: .queue(queue)) { _, change in
            queued.append("\(change.elementNewValue as! String)@\(change.elements.map(\.newIndex!))")
        }
        for round in 0..<6 { roster[round % 3].name = "n\(round)" }
        #expect(kept.count == 3)
        #expect(kept.map { $0.elementNewValue as? String } == ["n0", "n2", "n4"])
        #expect(kept.map { $0.elementOldValue as? String } == ["ada", "cy", "n1"])
        #expect(kept.map { $0.elements.map(\.newIndex!) } == [[0], [2], [1]])
        queue.resume()
        queue.sync {}
        #expect(queued == ["n0@[0]", "n1@[1]", "n2@[2]", "n3@[0]", "n4@[1]", "n5@[2]"])
        token.cancel()
        queuedToken.cancel()
    }

    @Test("element changes inside a batch join the batch's change; a replica applying changes in order stays right",
          arguments: ObservationBackend.allCases)
    func elementChangesInsideABatch(backend: ObservationBackend) {
        let roster = students(backend, "a", "b", "c", "d")
        let array = ObservableArray(roster, backend: backend)
        var replica = roster.map(\.name)
        var kinds: [ArrayChange<Student>.Kind] = []
        let token = array.observe(elementKeyPaths: [\.name]) { _, change in
            kinds.append(change.kind)
            // A replica of the names: structural runs through applying(to:), modifications by
            // reading the element at its new index.
            if change.kind != .elementChanged {
                replica = change.applying(to: replica.map { name in roster.first { $0.name == name } ?? Student(backend, name) })!
                    .map(\.name)
            }
            for element in change.elements where element.oldIndex != nil && element.newIndex != nil {
                if change.runs.contains(where: { $0.kind == .modify && $0.range.contains(element.newIndex!) }) {
                    replica[element.newIndex!] = element.element.name
                }
            }
        }
        array.performBatchUpdates { array in
            array.remove(at: 1)              // b goes; c is now at 1
            roster[2].name = "C"             // c changes, at index 1 of a state nobody was told about
        }
        #expect(kinds == [.batch], "nothing is delivered before the batch's one change")
        #expect(replica == ["a", "C", "d"])
        #expect(Array(array).map(\.name) == replica)
        roster[3].name = "D"                  // outside a batch: delivered at once
        #expect(kinds == [.batch, .elementChanged])
        #expect(replica == ["a", "C", "D"])
        token.cancel()
    }

    @Test("a same-length replaceSubrange overwrites in place: replace change, tracking follows",
          arguments: ObservationBackend.allCases)
    func sameLengthReplaceSubrange(backend: ObservationBackend) {
        let roster = students(backend, "a", "b", "c", "d", "e")
        let (x, y) = (Student(backend, "x"), Student(backend, "y"))
        let array = ObservableArray(roster, backend: backend)
        var changes: [ArrayChange<Student>] = []
        let token = array.observe(elementKeyPaths: [\.name]) { _, change in changes.append(change) }
        array.replaceSubrange(1..<3, with: [x, y])
        #expect(Array(array).map(\.name) == ["a", "x", "y", "d", "e"])
        #expect(changes.count == 1 && changes[0].kind == .replace)
        #expect(describe(changes[0]) == ["b 1->nil", "c 2->nil", "x nil->1", "y nil->2"])
        #expect(changes[0].applying(to: roster)!.map(\.name) == ["a", "x", "y", "d", "e"])
        changes.removeAll()
        roster[1].name = "gone"                   // b left the array
        y.name = "Y"
        roster[3].name = "D"                      // d did not move
        #expect(changes.map { $0.elements.map(\.newIndex!) } == [[2], [3]])
        array._checkInvariants()
        token.cancel()
    }

    @Test("an element present twice is reported with both indices; in two arrays, to each", arguments: ObservationBackend.allCases)
    func duplicatesAndSharedElements(backend: ObservationBackend) {
        let ada = Student(backend, "ada"), bob = Student(backend, "bob")
        let first = ObservableArray([ada, bob, ada], backend: backend)
        let second = ObservableArray([bob, ada], backend: backend)
        var indices: [String: [Int]] = [:]
        let t1 = first.observe(elementKeyPaths: [\.name]) { _, c in indices["first"] = c.elements.map(\.newIndex!) }
        let t2 = second.observe(elementKeyPaths: [\.name]) { _, c in indices["second"] = c.elements.map(\.newIndex!) }
        ada.name = "ada!"
        #expect(indices["first"] == [0, 2])
        #expect(indices["second"] == [1])
        t1.cancel(); t2.cancel()
    }

    @Test("element tracking survives front insertions, middle edits, growth and reordering", arguments: ObservationBackend.allCases)
    func trackingSurvivesEveryMutation(backend: ObservationBackend) {
        let pool = (0..<40).map { Student(backend, "s\($0)") }
        let array = ObservableArray(Array(pool.prefix(5)), backend: backend)
        var last: [Int] = []
        let token = array.observe(elementKeyPaths: [\.grade]) { _, c in
            if c.kind == .elementChanged { last = c.elements.map(\.newIndex!) }
        }
        var generator = SplitMix64(seed: 7)
        for step in 0..<400 {
            switch generator.next() % 8 {
            case 0: array.insert(pool[generator.below(40)], at: 0)
            case 1: if !array.isEmpty { array.remove(at: generator.below(array.count)) }
            case 2: array.append(pool[generator.below(40)])
            case 3: if array.count > 1 { array.swapAt(0, array.count - 1) }
            case 4: array.insert(pool[generator.below(40)], at: array.count / 2)
            case 5: if step % 50 == 0 { array.sort { $0.name < $1.name } }
            case 6: if !array.isEmpty { array[generator.below(array.count)] = pool[generator.below(40)] }
            default: if array.count > 3 { array.removeSubrange(1..<3) }
            }
            array._checkInvariants()
            let probe = pool[generator.below(40)]
            last = []
            probe.grade += 1
            let expected = array.indices.filter { array[$0] === probe }
            #expect(last == expected, "step \(step): indices of \(probe.name)")
        }
        token.cancel()
    }

    @Test("element indices stay right through large middle shifts (stale index rebuilt on demand)", arguments: ObservationBackend.allCases)
    func indicesSurviveLargeShifts(backend: ObservationBackend) {
        let pool = (0..<600).map { Student(backend, "s\($0)") }
        let array = ObservableArray(Array(pool.prefix(400)), backend: backend)
        var last: [Int] = []
        let token = array.observe(elementKeyPaths: [\.grade]) { _, c in
            if c.kind == .elementChanged { last = c.elements.map(\.newIndex!) }
        }
        var generator = SplitMix64(seed: 99)
        for step in 0..<120 {
            let middle = array.count / 3 + generator.below(array.count / 3)
            switch step % 4 {
            case 0: array.insert(pool[400 + generator.below(200)], at: middle)      // shifts > 64 elements
            case 1: array.remove(at: middle)
            case 2: array.performBatchUpdates { a in
                a.insert(pool[generator.below(600)], at: middle)
                a.remove(at: a.count / 2)
            }
            default: array.insert(contentsOf: pool[0..<3], at: middle)
            }
            let probe = pool[generator.below(600)]
            last = []
            probe.grade += 1
            #expect(last == array.indices.filter { array[$0] === probe }, "step \(step)")
        }
        array._checkInvariants()
        token.cancel()
    }

    @Test("a full shift log is folded while element changes interleave with middle edits, left stale when none do")
    func shiftLogFoldsWhenLookedUpAndGoesStaleOtherwise() {
        // 2,000 elements: every middle edit moves ~1,000 and takes one record of the C index's
        // shift log, which holds 32.
        let pool = (0..<2_200).map { Student(.c, "s\($0)") }
        let array = ObservableArray(Array(pool.prefix(2_000)), backend: .c)
        var reported: [Int] = []
        let token = array.observe(elementKeyPaths: [\.grade]) { _, c in
            if c.kind == .elementChanged { reported = c.elements.map(\.newIndex!) }
        }
        var generator = SplitMix64(seed: 7)
        func checkedChange(_ step: Int) {
            let probe = array[generator.below(array.count)]
            reported = []
            probe.grade += 1
            #expect(reported == array.indices.filter { array[$0] === probe }, "step \(step)")
        }
        // Interleaved: the log fills three times over, and is folded each time.
        for step in 0..<100 {
            if step % 2 == 0 { array.insert(pool[2_000 + step], at: array.count / 2) } else { array.remove(at: array.count / 2) }
            checkedChange(step)
            #expect(!array._isElementIndexStale, "step \(step): folded, not left behind")
            array._checkInvariants()   // every entry, through the log or folded, names its element
        }
        // A burst of edits with no element change between: the log, once folded (changes had looked
        // the index up since the last fold), fills again, and is left behind; the next element
        // change rebuilds the index.
        for step in 0..<80 {
            if step % 2 == 0 { array.insert(pool[2_100 + step], at: array.count / 2) } else { array.remove(at: array.count / 2) }
        }
        #expect(array._isElementIndexStale)
        checkedChange(100)
        #expect(!array._isElementIndexStale)
        array._checkInvariants()
        token.cancel()
    }

    @Test("reassigning the owner's array reports the replacement and re-targets observation", arguments: ObservationBackend.allCases)
    func ownerReassignment(backend: ObservationBackend) {
        let teacher = Teacher(backend, students: students(backend, "ada"))
        let oldArray = teacher.students
        var kinds: [ArrayChange<Student>.Kind] = []
        var replaced: (ObservableArray<Student>?, ObservableArray<Student>?) = (nil, nil)
        let token = teacher.observeArray(\.students, elementKeyPaths: [\.name]) { _, change in
            kinds.append(change.kind)
            if change.kind == .arrayReplaced { replaced = (change.oldArray, change.newArray) }
        }
        teacher.students.append(Student(backend, "bob"))
        let newArray = ObservableArray(students(backend, "cy"), backend: backend)
        teacher.students = newArray
        #expect(replaced.0 === oldArray && replaced.1 === newArray)
        oldArray.append(Student(backend, "ignored"))
        newArray.append(Student(backend, "dee"))
        newArray[0].name = "cyrus"
        oldArray[0].name = "ignored too"
        teacher.students = newArray           // the same array again: nothing
        #expect(kinds == [.append, .arrayReplaced, .append, .elementChanged])
        token.cancel()
    }

    @Test("one array shared by two owners notifies the observers of both", arguments: ObservationBackend.allCases)
    func sharedArrayNotifiesBothOwners(backend: ObservationBackend) {
        let shared = ObservableArray(students(backend, "ada"), backend: backend)
        let first = Teacher(backend), second = Teacher(backend)
        first.students = shared
        second.students = shared
        var heard: [String] = []
        let t1 = first.observeArray(\.students) { _, c in heard.append("first \(c.kind)") }
        let t2 = second.observeArray(\.students) { _, c in heard.append("second \(c.kind)") }
        shared.append(Student(backend, "bob"))
        #expect(heard.sorted() == ["first append", "second append"])
        t1.cancel(); t2.cancel()
    }

    @Test("array observations die with the owner, the array and the token", arguments: ObservationBackend.allCases)
    func lifetimes(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        var token: ObservationToken?
        let survivor = ObservableArray(students(backend, "x"), backend: backend)
        do {
            let teacher = tracker.track(Teacher(backend, students: students(backend, "ada", "bob")))
            tracker.track(teacher.students)
            token = teacher.observeArray(\.students, elementKeyPaths: [\.name]) { _, _ in }
            teacher.students[0].name = "ada!"
            teacher.students = survivor           // the new array now has a registration
        }
        #expect(tracker.survivors.isEmpty, "owner and its old array are released")
        #expect(ObservationRuntime.liveRegistrationCount == before, "the array registration died with its owner")
        survivor.append(Student(backend, "y"))
        token?.cancel()
        #expect(ObservationRuntime.liveRegistrationCount == before)
    }

    @Test("a handler that drops the last reference to its array: the change completes, the array dies, later sets are not reported",
          arguments: ObservationBackend.allCases)
    func handlerReleasesItsArray(backend: ObservationBackend) {
        // The tracker holds its array unowned (`_UnownedReference`), not weakly: the element
        // change holds a strong reference while it delivers, and a dead array loads as nil.
        // The array's death shows as its registration going (`liveRegistrationCount`): a weak
        // reference to it (`LifetimeTracker`) would give it the side table this avoids.
        let ada = Student(backend, "ada")
        let before = ObservationRuntime.liveRegistrationCount
        var holder: ObservableArray<Student>? = ObservableArray([ada, ada], backend: backend)
        var heard: [[Int]] = []
        let token = holder!.observe(elementKeyPaths: [\.name]) { array, change in
            heard.append(change.elements.map { $0.newIndex! })
            #expect(array.count == 2, "the array is alive while its handler runs")
            holder = nil                              // the last strong reference but the delivery's
        }
        ada.name = "ada!"
        #expect(heard == [[0, 1]])
        #expect(ObservationRuntime.liveRegistrationCount == before, "the array died once the change was delivered")
        ada.name = "ada!!"
        #expect(heard == [[0, 1]], "a dead array reports nothing")
        token.cancel()
    }

    @Test("cancelling the last element-key observer stops element tracking at once", arguments: ObservationBackend.allCases)
    func cancellingStopsTracking(backend: ObservationBackend) {
        let ada = Student(backend, "ada")
        let array = ObservableArray([ada, ada, Student(backend, "bob")], backend: backend)
        #expect(array._elementIndexBytes == 0, "no index before any element-key observer")
        let structural = array.observe { _, _ in }
        let first = array.observe(elementKeyPaths: [\.name]) { _, _ in }
        let observer = Watcher()
        array.addObserver(observer, elementKeyPaths: [\.grade]) { _, _, _ in }
        #expect(array._elementIndexBytes > 0)
        first.cancel()
        #expect(array._elementIndexBytes > 0, "another element-key registration remains")
        array.removeObserver(observer, for: \ObservableArray<Student>.self)
        #expect(array._elementIndexBytes == 0, "the index is freed when the last element-key registration goes")
        var heard = 0
        let again = array.observe(elementKeyPaths: [\.name]) { _, c in if c.kind == .elementChanged { heard += 1 } }
        ada.name = "ada!"
        #expect(heard == 1, "tracking restarts for a new element-key observer, with both occurrences in one change")
        again.cancel()
        structural.cancel()
        #expect(array._elementIndexBytes == 0)
    }

    @Test(".initial delivers the current array at once", arguments: ObservationBackend.allCases)
    func initialDeliversCurrentArray(backend: ObservationBackend) {
        let teacher = Teacher(backend, students: students(backend, "ada", "bob"))
        var initial: ArrayChange<Student>?
        let token = teacher.observeArray(\.students, options: [.initial]) { _, change in initial = change }
        #expect(initial?.isInitial == true && initial?.kind == .arrayReplaced)
        #expect(initial?.newArray === teacher.students && initial?.newCount == 2)
        token.cancel()
    }

    @Test("elementChange(for:) reads an element change's values typed, for its own key path only",
          arguments: ObservationBackend.allCases)
    func typedElementChange(backend: ObservationBackend) {
        let ada = Student(backend, "Ada")
        let students = ObservableArray([ada], backend: backend)
        var grades: [(old: Int?, new: Int?)] = [], names: [String?] = [], others = 0
        let token = students.observe(options: [.old, .new], elementKeyPaths: [\Student.grade, \Student.name]) { _, change in
            if let grade = change.elementChange(for: \Student.grade) { grades.append(grade) }
            else if let name = change.elementChange(for: \Student.name) { names.append(name.new) }
            else { others += 1 }
        }
        ada.grade = 4
        ada.name = "Ada L."
        students.append(Student(backend, "Grace"))
        #expect(grades.count == 1 && grades[0].old == 0 && grades[0].new == 4)
        #expect(names == ["Ada L."])
        #expect(others == 1, "a structural change is no element change of either key path")
        token.cancel()
    }

    @Test("by default an element change carries its new value, as a property change does",
          arguments: ObservationBackend.allCases)
    func defaultOptionsMatchProperties(backend: ObservationBackend) {
        let ada = Student(backend, "Ada")
        let students = ObservableArray([ada], backend: backend)
        var arrayValues: [(Any?, Any?)] = [], propertyValues: [(Int?, Int?)] = []
        let arrayToken = students.observe(elementKeyPaths: [\Student.grade]) { _, change in
            if change.kind == .elementChanged { arrayValues.append((change.elementOldValue, change.elementNewValue)) }
        }
        let propertyToken = ada.observe(\.grade) { _, change in propertyValues.append((change.oldValue, change.newValue)) }
        ada.grade = 9
        #expect(arrayValues.count == 1 && arrayValues[0].0 == nil && arrayValues[0].1 as? Int == 9)
        #expect(propertyValues.count == 1 && propertyValues[0].0 == nil && propertyValues[0].1 == 9)
        arrayToken.cancel()
        propertyToken.cancel()
    }

    @Test("an element change's values are its own: none when not asked for, kept by a change that is kept",
          arguments: ObservationBackend.allCases)
    func elementChangeValuesAreNeverStale(backend: ObservationBackend) {
        let ada = Student(backend, "Ada")
        let students = ObservableArray([ada], backend: backend)
        // An observer that asks for values but keeps no change: its change storage goes back to
        // the array, values and all (optimised builds recycle it — CI runs this in release too).
        var heard = 0
        var token = students.observe(options: [.old, .new], elementKeyPaths: [\Student.grade]) { _, change in
            if change.kind == .elementChanged { heard += 1 }
        }
        ada.grade = 1
        ada.grade = 2
        token.cancel()
        #expect(heard == 2)
        // A later change whose observer asked for no values must not show those values.
        var unasked: [(Any?, Any?, (old: Int?, new: Int?)?)] = []
        token = students.observe(options: [], elementKeyPaths: [\Student.grade]) { _, change in
            if change.kind == .elementChanged {
                unasked.append((change.elementOldValue, change.elementNewValue, change.elementChange(for: \Student.grade)))
            }
        }
        ada.grade = 3
        ada.grade = 4
        token.cancel()
        #expect(unasked.count == 2)
        for (old, new, typed) in unasked {
            #expect(old == nil && new == nil)
            #expect(typed != nil && typed?.old == nil && typed?.new == nil)
        }
        // A change a handler keeps is not recycled: its values stay its own.
        var kept: [ArrayChange<Student>] = []
        token = students.observe(options: [.old, .new], elementKeyPaths: [\Student.grade]) { _, change in
            if change.kind == .elementChanged { kept.append(change) }
        }
        ada.grade = 5
        ada.grade = 6
        token.cancel()
        #expect(kept.map { $0.elementChange(for: \Student.grade)?.old } == [4, 5])
        #expect(kept.map { $0.elementNewValue as? Int } == [5, 6])
    }

    @Test("a reference value of an element change is released once the change is delivered",
          arguments: ObservationBackend.allCases)
    func elementChangeReleasesReferenceValues(backend: ObservationBackend) {
        final class Payload {}
        final class Holder: KeyValueObservable {
            let kvoRegistrar: KeyValueRegistrar
            init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }
            static let payload = ObservableKey(\Holder.payload)
            var payload: Payload? {
                didSet { kvoRegistrar.didSet(Holder.payload, of: self, from: oldValue, to: payload) }
            }
        }
        let holder = Holder(backend)
        let array = ObservableArray([holder], backend: backend)
        var heard = 0
        let token = array.observe(options: [.old, .new], elementKeyPaths: [\Holder.payload]) { _, change in
            if change.elementChange(for: \Holder.payload) != nil { heard += 1 }
        }
        weak var first: Payload?
        do {
            let payload = Payload()
            first = payload
            holder.payload = payload
            holder.payload = nil
        }
        #expect(heard == 2)
        // (Optimised builds recycle the change storage — CI runs this suite in release too; a
        // debug build's temporaries keep the change referenced, so its storage is not reused.)
        #expect(first == nil, "the recycled change storage still holds a value of an earlier change")
        token.cancel()
    }

    // MARK: The recycled element-change box and the array's storage

    /// An array of new students, each watched by `lifetimes` (labelled with its name), held by
    /// nothing but the array.
    private static func trackedStudents(_ backend: ObservationBackend, _ names: [String],
                                        _ lifetimes: LifetimeTracker) -> ObservableArray<Student> {
        let array = ObservableArray<Student>(backend: backend)
        for name in names { array.append(lifetimes.track(Student(backend, name), name)) }
        return array
    }

    // The box an element change is delivered in is parked in its array afterwards and keeps
    // showing the array's storage, so that the next element change refills it without a retain
    // and a release. These tests fail if that reference makes a later write copy the storage, or
    // keeps storage (and so elements) alive that the array no longer holds. Boxes are reused in
    // optimized builds only: in a debug build these tests pass whatever the box does, and the
    // release run of the tests (CI's second step) is the one that can catch a mistake.

    @Test("a write after element changes updates the storage in place, without copying it",
          arguments: ObservationBackend.allCases)
    func writeAfterElementChangeDoesNotCopy(backend: ObservationBackend) {
        let roster = students(backend, "ada", "bob", "cy")
        let array = ObservableArray(roster, backend: backend)
        var heard = 0
        let token = array.observe(elementKeyPaths: [\.name]) { _, change in
            if change.kind == .elementChanged { heard += change.elements.count }
        }
        let storage = array._storageIdentity
        for round in 0..<3 {
            roster[round].name += "!"
            roster[round].name += "?"
            array.swapAt(0, 2)
            #expect(array._storageIdentity == storage, "round \(round): the write copied the storage")
        }
        array.append(Student(backend, "dee"))          // grows in place: the same storage object
        #expect(array._storageIdentity == storage)
        for student in array { _ = student.name }      // iteration shares the storage, then lets go
        array.remove(at: 0)
        #expect(array._storageIdentity == storage)
        #expect(heard == 6)
        // A ring that wraps is laid out contiguously in place for an iterator, unless shared.
        array.insert(Student(backend, "eve"), at: 0)   // the ring now wraps around its allocation
        array[1].name += "!"                            // the parked box shows the storage again
        for student in array { _ = student.name }
        #expect(array._storageIdentity == storage, "iterating copied the storage the box showed")
        #expect(heard == 7)
        token.cancel()
    }

    @Test("storage a handler's removeAll gave up while something else held it is released once that lets go",
          arguments: ObservationBackend.allCases)
    func storageGivenUpWhileSharedIsReleased(backend: ObservationBackend) {
        let lifetimes = LifetimeTracker()
        let array = Self.trackedStudents(backend, ["ada", "bob", "cy"], lifetimes)
        var pinned: ObservableArray<Student>.Iterator?
        var cleared = false
        let token = array.observe(elementKeyPaths: [\.name]) { array, change in
            guard change.kind == .elementChanged, !cleared else { return }
            cleared = true
            pinned = array.makeIterator()   // holds the storage the change's box shows
            array.removeAll()               // the array moves to new storage; the box parks with the old
        }
        array[1].name = "bob!"
        #expect(cleared && array.isEmpty)
        pinned = nil                        // now only the parked box holds the old storage
        array.append(Student(backend, "eve"))
        #expect(lifetimes.survivors.isEmpty, "kept alive by a parked change box: \(lifetimes.survivors)")
        token.cancel()
        withExtendedLifetime(pinned) {}
    }

    @Test("removals and replacements release the elements after dropping the array's lock, observed or not",
          arguments: ObservationBackend.allCases)
    func removeAllReleasesOutsideTheLock(backend: ObservationBackend) {
        final class Probe {
            let onDeinit: () -> Void
            init(_ onDeinit: @escaping () -> Void) { self.onDeinit = onDeinit }
            deinit { onDeinit() }
        }
        for observed in [false, true] {
            let array = ObservableArray<Probe>(backend: backend)
            var deinits = 0, underLock = 0
            for _ in 0..<3 {
                array.append(Probe { [unowned array] in
                    deinits += 1
                    if array._isLocked { underLock += 1 }   // an element's deinit may use the array
                })
            }
            let token = observed ? array.observe { _, _ in } : nil
            array.removeAll()
            #expect(deinits == 3 && underLock == 0, "observed \(observed): \(underLock) of \(deinits) deinits ran under the lock")
            // Every other way an element leaves: removals of several, a replace that changes the
            // length, a replace through the subscript's general path (the storage shared).
            func probe() -> Probe {
                Probe { [unowned array] in
                    deinits += 1
                    if array._isLocked { underLock += 1 }
                }
            }
            for _ in 0..<9 { array.append(probe()) }
            array.removeLast(2)
            array.removeFirst(2)
            array.removeSubrange(1..<2)
            array.replaceSubrange(0..<2, with: [probe()])
            array.removeAll { _ in true }
            for _ in 0..<2 { array.append(probe()) }
            do {
                let iterator = array.makeIterator()   // shares the storage: the setter's general path
                array[0] = probe()
                withExtendedLifetime(iterator) {}
            }
            array.removeAll()
            #expect(underLock == 0 && deinits == 3 + 13,
                    "observed \(observed): \(underLock) of \(deinits) deinits ran under the lock")
            token?.cancel()
        }
    }

    @Test("elements removed after element changes are released: remove, removeAll, a sort once unobserved",
          arguments: ObservationBackend.allCases)
    func removedAfterElementChangesAreReleased(backend: ObservationBackend) {
        let lifetimes = LifetimeTracker()
        let array = Self.trackedStudents(backend, ["ada", "bob", "cy", "dee"], lifetimes)
        var token: ObservationToken? = array.observe(elementKeyPaths: [\.name]) { _, _ in }
        array[0].name = "ada!"
        array.remove(at: 0)
        #expect(lifetimes.survivors.sorted() == ["bob", "cy", "dee"], "remove(at:) after an element change")
        array[0].name = "bob!"
        token = nil                                     // unobserved: a sort installs new storage
        array.sort { $0.name > $1.name }
        array.removeAll()
        #expect(lifetimes.survivors.isEmpty, "still alive after sort and removeAll: \(lifetimes.survivors)")
        withExtendedLifetime(token) {}
    }

    @Test("storage an element-change handler made the array give up is released with its elements",
          arguments: ObservationBackend.allCases)
    func storageReplacedDuringDeliveryIsReleased(backend: ObservationBackend) {
        let lifetimes = LifetimeTracker()
        let array = Self.trackedStudents(backend, ["ada", "bob", "cy"], lifetimes)
        var cleared = false
        let token = array.observe(elementKeyPaths: [\.name]) { array, change in
            // The change's box still shows the storage: removing everything copies it first,
            // and the box, parked afterwards, would be the old storage's last holder.
            if change.kind == .elementChanged && !cleared { cleared = true; array.removeAll() }
        }
        array[1].name = "bob!"
        #expect(cleared && array.isEmpty)
        #expect(lifetimes.survivors.isEmpty, "kept alive by a parked change box: \(lifetimes.survivors)")
        array.append(Student(backend, "eve"))
        array[0].name = "eve!"                          // the parked box is refilled and reused
        #expect(array.count == 1)
        token.cancel()
    }
}
