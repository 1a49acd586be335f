// The operations that read or rewrite many elements at once without one lock acquisition per
// element: `sort` (a bitwise copy whose references change hands), a same-length
// `replaceSubrange` when nobody observes (overwritten in place), `removeAll(where:)`, and the
// reads that go through one snapshot (`first`, `last`, `map`, `firstIndex`, `lastIndex`, `==`).
// Each must agree with `Array`, also when the ring wraps around its allocation, hold exactly one
// reference per element, and never release an element under the array's lock.

@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

@Suite("ObservableArray: bulk and snapshot operations")
struct BulkAndReadOperationTests {
    /// An element that counts its deinits and notes whether the array was locked then.
    final class Item {
        let key: Int
        let onDeinit: () -> Void
        init(_ key: Int, onDeinit: @escaping () -> Void) {
            self.key = key
            self.onDeinit = onDeinit
        }
        deinit { onDeinit() }
    }

    struct Stop: Error {}

    /// Makes items for `array` and counts their deinits, and those that ran while the array was
    /// locked (an element's deinit may use the array, whose lock is not reentrant).
    final class DeinitWatch {
        var deinits = 0, underLock = 0
        func item(_ key: Int, of array: ObservableArray<Item>) -> Item {
            Item(key) { [unowned array] in
                self.deinits += 1
                if array._isLocked { self.underLock += 1 }
            }
        }
    }

    @Test("sort hands the array's references to the sorted copy: each element released once, with an iterator reading the old order, after a throwing comparator, after a start-over, observed or not",
          arguments: ObservationBackend.allCases)
    func sortKeepsOneReferencePerElement(backend: ObservationBackend) throws {
        var deinits = 0
        var rng = SplitMix64(seed: 0x5047_0E1E)
        let count = 300
        var keys = Array(0..<count)
        keys.shuffle(using: &rng)
        do {
            let array = ObservableArray<Item>(backend: backend)
            for (n, key) in keys.enumerated() {
                let item = Item(key) { deinits += 1 }
                if n % 3 == 0 { array.insert(item, at: 0) } else { array.append(item) }   // the ring wraps
            }
            let ascending = Array(0..<count), descending = Array((0..<count).reversed())

            array.sort { $0.key < $1.key }   // nothing else holds the storage: references move
            #expect(array.map(\.key) == ascending)
            #expect(deinits == 0)

            var iterator: ObservableArray<Item>.Iterator? = array.makeIterator()   // shares the storage
            array.sort { $0.key > $1.key }   // the copy takes references of its own
            #expect(array.map(\.key) == descending)
            var seen: [Int] = []
            while let item = iterator!.next() { seen.append(item.key) }
            #expect(seen == ascending, "the iterator's snapshot is untouched")
            iterator = nil
            #expect(deinits == 0)

            #expect(throws: Stop.self) {
                try array.sort { a, b in
                    if a.key == count / 2 || b.key == count / 2 { throw Stop() }
                    return a.key < b.key
                }
            }
            #expect(array.map(\.key) == descending, "a throwing comparator changes nothing")

            var appended = false
            array.sort { a, b in
                if !appended {
                    appended = true
                    array.append(Item(count) { deinits += 1 })   // the first attempt is not installed
                }
                return a.key < b.key
            }
            #expect(array.map(\.key) == Array(0...count))

            let token = array.observe { _, _ in }   // observed: a permutation of the live storage
            array.sort { $0.key > $1.key }
            #expect(array.map(\.key) == Array((0...count).reversed()))
            #expect(throws: Stop.self) {
                try array.sort { a, b in
                    if a.key == count / 2 || b.key == count / 2 { throw Stop() }
                    return a.key < b.key
                }
            }
            #expect(array.map(\.key) == Array((0...count).reversed()), "observed: a throwing comparator changes nothing")
            var appendedWhileObserved = false
            array.sort { a, b in
                if !appendedWhileObserved {
                    appendedWhileObserved = true
                    array.append(Item(count + 1) { deinits += 1 })   // observed: the stale permutation is not applied
                }
                return a.key < b.key
            }
            #expect(array.map(\.key) == Array(0...(count + 1)))
            token.cancel()
            #expect(deinits == 0)
            withExtendedLifetime(iterator) {}
        }
        #expect(deinits == count + 2, "every element released exactly once with the array")
    }

    @Test("a same-length replaceSubrange nobody observes overwrites in place, across the ring's wrap, and releases the old elements after the lock",
          arguments: ObservationBackend.allCases)
    func sameLengthReplaceInPlace(backend: ObservationBackend) {
        let watch = DeinitWatch()
        let array = ObservableArray<Item>(backend: backend)
        func item(_ key: Int) -> Item { watch.item(key, of: array) }
        for key in 4..<8 { array.append(item(key)) }
        for key in (0..<4).reversed() { array.insert(item(key), at: 0) }   // slots wrap around
        var model = Array(0..<8)
        array.replaceSubrange(2..<6, with: (12..<16).map(item))
        model.replaceSubrange(2..<6, with: 12..<16)
        #expect(array.map(\.key) == model)
        #expect(watch.deinits == 4 && watch.underLock == 0, "\(watch.underLock) of \(watch.deinits) deinits ran under the lock")
        array.replaceSubrange(0..<8, with: (20..<28).map(item))
        #expect(array.map(\.key) == Array(20..<28) && watch.deinits == 12 && watch.underLock == 0)
        // Observed, the same call reports one replace (and nothing for the same elements).
        var changes: [ArrayChange<Item>] = []
        let token = array.observe { _, change in changes.append(change) }
        let same = Array(array[3..<5])
        array.replaceSubrange(3..<5, with: same)
        #expect(changes.isEmpty, "replacing elements with themselves reports nothing")
        array.replaceSubrange(3..<5, with: [item(40), item(41)])
        #expect(changes.count == 1 && changes[0].kind == .replace)
        token.cancel()
        array.removeAll()   // the elements' deinits read the array: they go while it lives
        #expect(watch.underLock == 0)
    }

    @Test("more than a few elements removed through the general path are moved out in bulk across the ring's wrap: reported when observed, released after the lock, kept whole by a snapshot",
          arguments: ObservationBackend.allCases)
    func bulkRemovalThroughTheGeneralPath(backend: ObservationBackend) {
        let watch = DeinitWatch()
        let array = ObservableArray<Item>(backend: backend)
        func items(_ keys: Range<Int>) -> [Item] { keys.map { watch.item($0, of: array) } }
        array.reserveCapacity(64)
        array.append(contentsOf: items(0..<40))
        array.removeFirst(30)                            // the ring now starts at slot 30
        array.append(contentsOf: items(40..<80))         // slots 40...63, then 0...15
        var model = Array(30..<80)
        #expect(watch.deinits == 30 && array.elements.map(\.key) == model)

        // Observed: the removed elements are captured for the change, in order.
        var removed: [[Int]] = []
        let token = array.observe { _, change in
            removed.append(change.elements.filter { $0.newIndex == nil }.map(\.element.key))
        }
        #expect(array._storageSlot(of: 20) == 50 && array._storageSlot(of: 39) == 5, "the run wraps")
        array.removeSubrange(20..<40)                    // slots 50...63, then 0...5
        model.removeSubrange(20..<40)
        #expect(removed == [Array(50..<70)])
        #expect(array.elements.map(\.key) == model)
        #expect(watch.deinits == 50 && watch.underLock == 0, "\(watch.underLock) of \(watch.deinits) deinits ran under the lock")
        token.cancel()

        // Storage an iterator shares takes the general path, nobody observing: more than a few
        // removed are moved out together and released after the lock; the snapshot keeps them.
        array.append(contentsOf: items(80..<100))
        model += 80..<100
        var iterator: ObservableArray<Item>.Iterator? = array.makeIterator()
        array.removeLast(25)
        let kept = model
        model.removeLast(25)
        #expect(array.elements.map(\.key) == model && watch.deinits == 50)
        var seen: [Int] = []
        while let item = iterator!.next() { seen.append(item.key) }
        #expect(seen == kept, "the snapshot is untouched")
        iterator = nil
        #expect(watch.deinits == 75 && watch.underLock == 0)
        array.removeAll()
        #expect(watch.deinits == 100 && watch.underLock == 0)
    }

    @Test("append(contentsOf:) and removeLast(k) nobody observes copy and move in bulk across the ring's wrap, and release after the lock",
          arguments: ObservationBackend.allCases)
    func bulkAppendAndRemoveLastUnobserved(backend: ObservationBackend) {
        let watch = DeinitWatch()
        let array = ObservableArray<Item>(backend: backend)
        func items(_ keys: Range<Int>) -> [Item] { keys.map { watch.item($0, of: array) } }
        array.reserveCapacity(16)
        array.append(contentsOf: items(0..<8))
        array.removeFirst(6)                             // the ring now starts at slot 6
        #expect(watch.deinits == 6 && watch.underLock == 0)
        // Read through `elements`, which copies run by run: iterating (`map`) would lay a wrapped
        // ring out contiguously first, and the next edit would not cross the wrap.
        array.append(contentsOf: items(8..<18))          // slots 8...15, then 0 and 1
        var model = Array(6..<18)
        #expect(array.elements.map(\.key) == model)
        array.removeLast(5)                              // slots 13...15, 0 and 1
        model.removeLast(5)
        #expect(array.elements.map(\.key) == model)
        #expect(watch.deinits == 11 && watch.underLock == 0, "\(watch.underLock) of \(watch.deinits) deinits ran under the lock")
        // Storage an iterator shares takes the general path: the iterator's snapshot is untouched.
        var iterator: ObservableArray<Item>.Iterator? = array.makeIterator()
        array.append(contentsOf: items(30..<32))
        array.removeLast(3)
        model += [30, 31]
        model.removeLast(3)
        var seen: [Int] = []
        while let item = iterator!.next() { seen.append(item.key) }
        iterator = nil
        #expect(seen == Array(6..<13) && array.map(\.key) == model)
        #expect(watch.deinits == 14, "30 and 31 with the array's copy, 12 with the snapshot")
        array.removeLast(0)
        #expect(array.count == model.count)
        array.removeAll()
        #expect(watch.deinits == 20 && watch.underLock == 0)
        // Values with no references take the same paths.
        let numbers = ObservableArray<Int>(backend: backend)
        numbers.reserveCapacity(8)
        numbers.append(contentsOf: 0..<6)
        numbers.removeFirst(5)
        numbers.append(contentsOf: [6, 7, 8, 9])         // slots 6 and 7, then 0 and 1
        numbers.removeLast(3)
        #expect(numbers.elements == [5, 6])
    }

    @Test("replaceSubrange of another length, insert(contentsOf:at:) and removeSubrange nobody observes move one side once, across the ring's wrap, and release after the lock",
          arguments: ObservationBackend.allCases)
    func lengthChangingReplaceUnobserved(backend: ObservationBackend) {
        var rng = SplitMix64(seed: 0x5EED_2E91)
        func random(_ bound: Int) -> Int { Int(rng.next() % UInt64(bound)) }
        let watch = DeinitWatch()
        var made = 0
        do {
            let array = ObservableArray<Item>(backend: backend)
            func items(_ count: Int) -> [Item] {
                defer { made += count }
                return (made..<(made + count)).map { watch.item($0, of: array) }
            }
            array.reserveCapacity(64)
            array.append(contentsOf: items(20))
            array.removeFirst(10)                        // the ring starts mid-allocation: edits wrap
            for _ in 0..<12 { array.insert(items(1)[0], at: 0) }
            var model = array.elements.map(\.key)       // not `map`: it would unwrap the ring
            for step in 0..<400 {
                let count = model.count
                let lower = random(count + 1), upper = lower + random(Swift.min(6, count - lower) + 1)
                let new = items(random(7))
                let countAfter: Int
                switch random(4) {
                case 0:
                    array.insert(contentsOf: new, at: lower)
                    model.insert(contentsOf: new.map(\.key), at: lower)
                    countAfter = count + new.count
                case 1:
                    array.removeSubrange(lower..<upper)
                    model.removeSubrange(lower..<upper)
                    countAfter = count - (upper - lower)
                default:
                    array.replaceSubrange(lower..<upper, with: new)
                    model.replaceSubrange(lower..<upper, with: new.map(\.key))
                    countAfter = count - (upper - lower) + new.count
                }
                #expect(array.elements.map(\.key) == model, "step \(step): \(lower)..<\(upper), \(new.count) new")
                if countAfter > 48 { array.removeLast(countAfter - 30); model.removeLast(countAfter - 30) }   // stays within the capacity
            }
            #expect(watch.underLock == 0, "\(watch.underLock) of \(watch.deinits) deinits ran under the lock")
            #expect(watch.deinits == made - model.count, "every element replaced was released, once")
            array.removeAll()
        }
        #expect(watch.deinits == made && watch.underLock == 0)
        // Values with no references: the same moves, nothing kept to release.
        let numbers = ObservableArray<Int>(backend: backend)
        numbers.reserveCapacity(16)
        numbers.append(contentsOf: 0..<12)
        numbers.removeFirst(10)                          // [10, 11] from slot 10
        numbers.append(contentsOf: 12..<18)              // slots 12...15, then 0 and 1
        var model = Array(10..<18)
        for (range, new) in [(5..<6, [20, 21, 22]), (4..<8, [23]), (2..<2, [24, 25]), (1..<5, []), (3..<3, [26])] {
            numbers.replaceSubrange(range, with: new)
            model.replaceSubrange(range, with: new)
            #expect(numbers.elements == model)
        }
        numbers.insert(contentsOf: [27, 28], at: 1)
        model.insert(contentsOf: [27, 28], at: 1)
        numbers.removeSubrange(0..<2)
        model.removeSubrange(0..<2)
        #expect(numbers.elements == model)
    }

    @Test("filter keeps the matching elements of a snapshot, in order, in a new array, and rethrows",
          arguments: ObservationBackend.allCases)
    func filterReadsASnapshot(backend: ObservationBackend) {
        let array = ObservableArray(Array(0..<10), backend: backend)
        var counts: [Int] = []
        let even = array.filter { value in
            counts.append(array.count)                   // the predicate may read the array: no lock is held
            if value == 4 { array.append(100) }          // a mutation meanwhile does not change the pass
            return value % 2 == 0
        }
        #expect(Array(even) == [0, 2, 4, 6, 8])
        #expect(counts == Array(repeating: 10, count: 5) + Array(repeating: 11, count: 5))
        even.append(10)
        #expect(Array(array) == Array(0..<10) + [100], "the result is an array of its own")
        #expect(throws: Stop.self) {
            _ = try array.filter { value in
                if value == 3 { throw Stop() }
                return true
            }
        }
    }

    @Test("first, last, map, firstIndex, lastIndex and == agree with Array's", arguments: ObservationBackend.allCases)
    func snapshotReadsAgreeWithArray(backend: ObservationBackend) {
        let empty = ObservableArray<Int>(backend: backend)
        #expect(empty.first == nil && empty.last == nil && empty.map { $0 }.isEmpty)
        #expect(empty.firstIndex(where: { _ in true }) == nil && empty.lastIndex(of: 0) == nil)
        #expect(empty.withContiguousStorageIfAvailable { _ in 0 } == nil,
                "no contiguous storage: Slice would cut it at bounds the array may have outgrown")

        let array = ObservableArray([5, 6, 7, 8, 9], backend: backend)
        for value in [4, 3, 2, 1, 0] { array.insert(value, at: 0) }   // the ring wraps
        array.append(contentsOf: [3, 1])
        let model = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 1]
        #expect(Array(array) == model)
        #expect(array.first == model.first && array.last == model.last)
        #expect(array.map { $0 * 2 } == model.map { $0 * 2 })
        #expect(array.firstIndex(of: 3) == model.firstIndex(of: 3) && array.lastIndex(of: 3) == model.lastIndex(of: 3))
        #expect(array.firstIndex(where: { $0 > 6 }) == 7 && array.lastIndex(where: { $0 > 6 }) == 9)
        #expect(array.firstIndex(of: 42) == nil && array.lastIndex(where: { $0 > 100 }) == nil)
        #expect(array == ObservableArray(model, backend: .swift) && array != ObservableArray(model.dropLast(), backend: backend))

        // A predicate that mutates the array still scans the contents it started with.
        var calls = 0
        let found = array.firstIndex { value in
            calls += 1
            if calls == 1 { array.removeAll() }
            return value == 9
        }
        #expect(found == 9 && array.isEmpty)
    }

    @Test("a slice the array has outgrown traps when read, rather than reading past the contents")
    func staleSliceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let array = ObservableArray([1, 2, 3, 4, 5], backend: .c)
            let tail = array[2..<5]
            array.removeAll()
            _ = Array(tail)
        }
        #if DEBUG
        // Release builds trap in the standard library's copy, whose check carries no message there.
        let message = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(message.contains("out of"), "\(message)")
        #else
        _ = result
        #endif
    }

    @Test("a decision taken again releases the stale snapshot's elements after the lock: removeAll(where:) and sort, observed or not",
          arguments: ObservationBackend.allCases)
    func retriesReleaseOutsideTheLock(backend: ObservationBackend) {
        for observed in [false, true] {
            let watch = DeinitWatch()
            let array = ObservableArray<Item>(backend: backend)
            func item(_ key: Int) -> Item { watch.item(key, of: array) }
            for key in [5, 3, 9, 1, 7] { array.append(item(key)) }
            let token = observed ? array.observe { _, _ in } : nil
            // The removed element's last reference is the decision's snapshot: the retry drops it.
            var first = true
            array.removeAll { element in
                if first { first = false; array.remove(at: 0) }
                return element.key == 9
            }
            #expect(array.map(\.key) == [3, 1, 7], "observed \(observed)")
            #expect(watch.deinits == 2 && watch.underLock == 0, "observed \(observed): \(watch.underLock) of \(watch.deinits) deinits under the lock")
            first = true
            array.sort { a, b in
                if first { first = false; array.remove(at: 0) }   // the first attempt is not installed
                return a.key < b.key
            }
            #expect(array.map(\.key) == [1, 7], "observed \(observed)")
            #expect(watch.deinits == 3 && watch.underLock == 0, "observed \(observed): \(watch.underLock) of \(watch.deinits) deinits under the lock")
            token?.cancel()
            array.removeAll()
            #expect(watch.deinits == 5 && watch.underLock == 0)
        }
    }

    @Test("an observed same-length replaceSubrange with equal values reports nothing; with other values, one replace",
          arguments: ObservationBackend.allCases)
    func equalValuesReplaceNothing(backend: ObservationBackend) {
        let array = ObservableArray(["a", "b", "c", "d"], backend: backend)
        array.insert("z", at: 0)   // the ring wraps
        var changes: [ArrayChange<String>] = []
        let token = array.observe { _, change in changes.append(change) }
        array.replaceSubrange(1..<4, with: ["a", "b", "c"])
        #expect(changes.isEmpty, "equal values: nothing changed")
        array.replaceSubrange(1..<4, with: ["a", "x", "c"])
        #expect(changes.count == 1 && changes[0].kind == .replace && Array(array) == ["z", "a", "x", "c", "d"])
        token.cancel()
    }
}
