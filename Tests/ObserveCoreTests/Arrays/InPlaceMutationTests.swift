import Dispatch
@_spi(Testing) import ObserveCore
import Testing

/// Mutating an element through the subscript (`array[i].append(x)`) happens where the element is
/// stored, as with `Array`, and is reported as one replace.
@Suite("Observable arrays: in-place element mutation through the subscript")
struct InPlaceMutationTests {
    /// The address of a copy-on-write array's element storage: unchanged while the array is
    /// mutated in place, new when a mutation had to copy it.
    func storageAddress(_ array: [Int]) -> UnsafeRawPointer? {
        array.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }

    @Test("an unobserved array mutates a copy-on-write element without copying it",
          arguments: ObservationBackend.allCases)
    func unobservedInPlace(backend: ObservationBackend) {
        let rows = ObservableArray<[Int]>(backend: backend)
        var row = [Int]()
        row.reserveCapacity(64)
        row.append(1)
        rows.append(row)
        row = []   // the array holds the only reference to the row's storage
        let before = rows.withFirstRowAddress(storageAddress)
        for value in 2...40 { rows[0].append(value) }
        #expect(rows.withFirstRowAddress(storageAddress) == before, "the row's storage was copied")
        #expect(rows[0] == Array(1...40))
    }

    @Test("an observed array reports one replace per in-place mutation, with the old and new element",
          arguments: ObservationBackend.allCases)
    func observedReportsReplace(backend: ObservationBackend) {
        let rows = ObservableArray<[Int]>([[1], [2, 3], [4]], backend: backend)
        var changes: [ArrayChange<[Int]>] = []
        var before = Array(rows)
        let token = rows.observe { rows, change in
            changes.append(change)
            #expect(change.applying(to: before) == Array(rows))
            before = Array(rows)
        }
        rows[1].append(9)
        rows[2][0] += 10
        token.cancel()
        #expect(Array(rows) == [[1], [2, 3, 9], [14]])
        #expect(changes.map(\.kind) == [.replace, .replace])
        let first = changes[0].elements.map { ($0.element, $0.oldIndex, $0.newIndex) }
        #expect(first.count == 2)
        #expect(first.contains { $0.0 == [2, 3] && $0.1 == 1 && $0.2 == nil })
        #expect(first.contains { $0.0 == [2, 3, 9] && $0.1 == nil && $0.2 == 1 })
    }

    @Test("an in-place mutation that changes nothing reports nothing", arguments: ObservationBackend.allCases)
    func unchangedReportsNothing(backend: ObservationBackend) {
        let values = ObservableArray([1, 2, 3], backend: backend)
        var calls = 0
        let token = values.observe { _, _ in calls += 1 }
        values[1] += 0
        token.cancel()
        #expect(calls == 0)
    }

    @Test("inside a batch, in-place mutations join the one coalesced change", arguments: ObservationBackend.allCases)
    func insideBatch(backend: ObservationBackend) {
        let values = ObservableArray([1, 2, 3], backend: backend)
        var changes: [ArrayChange<Int>] = []
        let token = values.observe { _, change in changes.append(change) }
        values.performBatchUpdates { values in
            values.remove(at: 0)
            values[0] += 100
            values[1] *= 2
        }
        token.cancel()
        #expect(Array(values) == [102, 6])
        #expect(changes.count == 1)
        #expect(changes.first?.applying(to: [1, 2, 3]) == [102, 6])
    }

    @Test("a mutation that throws halfway is still reported", arguments: ObservationBackend.allCases)
    func throwingMutation(backend: ObservationBackend) {
        struct Stop: Error {}
        let rows = ObservableArray<[Int]>([[1]], backend: backend)
        var changes: [ArrayChange<[Int]>] = []
        let token = rows.observe { _, change in changes.append(change) }
        #expect(throws: Stop.self) { try rows[0].appendThenThrow(2, Stop()) }
        token.cancel()
        #expect(rows[0] == [1, 2])
        #expect(changes.map(\.kind) == [.replace])
        // The lock was released: the array is usable from here on.
        rows.append([3])
        #expect(rows.count == 2)
    }

    @Test("replacing a tracked element through a generic in-place mutation moves element tracking to the new one",
          arguments: ObservationBackend.allCases)
    func genericReplaceOfTrackedElement(backend: ObservationBackend) {
        let ada = Student(backend, "Ada"), grace = Student(backend, "Grace")
        let students = ObservableArray([ada], backend: backend)
        var kinds: [ArrayChange<Student>.Kind] = []
        let token = students.observe(elementKeyPaths: [\.grade]) { _, change in kinds.append(change.kind) }
        mutateInPlace(students, at: 0) { $0 = grace }
        ada.grade = 1     // no longer in the array: not reported
        grace.grade = 2   // now at index 0: reported
        token.cancel()
        #expect(kinds == [.replace, .elementChanged])
        students._checkInvariants()
    }

    @Test("in-place mutations of an unobserved array from several threads lose nothing (each is atomic)")
    func concurrentInPlaceMutationsUnobserved() {
        let rows = ObservableArray<[Int]>(Array(repeating: [], count: 8), backend: .c)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for value in 0..<500 {
                rows[(thread + value) % 8].append(value)   // every thread touches every row
                if value % 50 == 0 { _ = rows.count }        // other operations interleave
            }
        }
        let contents = Array(rows)
        let elementCount: Int = contents.map(\.count).reduce(0, +)
        let total: Int = contents.map { $0.reduce(0, +) }.reduce(0, +)
        let expectedTotal: Int = 8 * (499 * 500 / 2)
        #expect(elementCount == 8 * 500)
        #expect(total == expectedTotal)
    }

    @Test("in-place mutations of an observed array from several threads are each reported as one replace")
    func concurrentInPlaceMutationsObserved() {
        // Observed, an in-place mutation is a read and a write (as `a[i] = f(a[i])`): two threads
        // may both read a row before either writes it back, and one update is lost, as with any
        // read-modify-write of a shared array. Each write that changed a row is reported.
        let rows = ObservableArray<[Int]>(Array(repeating: [], count: 8), backend: .c)
        let lock = NSLockLike()
        var kinds: [ArrayChange<[Int]>.Kind] = []
        let token = rows.observe { _, change in lock.withLock { kinds.append(change.kind) } }
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for value in 0..<500 { rows[(thread + value) % 8].append(value) }
        }
        token.cancel()
        let elementCount: Int = Array(rows).map(\.count).reduce(0, +)
        #expect(kinds.count == 8 * 500, "every write replaced a row by a longer one")
        #expect(kinds.allSatisfy { $0 == .replace })
        #expect(elementCount >= 500 && elementCount <= 8 * 500)
    }

    @Test("setting a tracked element's property through a generic in-place access is reported, not trapped",
          arguments: ObservationBackend.allCases)
    func trackedElementPropertySetInPlace(backend: ObservationBackend) {
        let ada = Student(backend, "Ada")
        let students = ObservableArray([ada], backend: backend)
        var kinds: [ArrayChange<Student>.Kind] = []
        let token = students.observe(elementKeyPaths: [\.grade]) { students, change in
            kinds.append(change.kind)
            _ = students.count   // a handler may read the array
        }
        mutateInPlace(students, at: 0) { $0.grade = 5 }   // the same object comes back: no replace
        token.cancel()
        #expect(kinds == [.elementChanged])
        #expect(ada.grade == 5)
    }

    @Test("swap(&a[i], &a[j]) works on an observed array (one replace per element)", arguments: ObservationBackend.allCases)
    func swapThroughSubscriptObserved(backend: ObservationBackend) {
        let values = ObservableArray([1, 2, 3], backend: backend)
        var kinds: [ArrayChange<Int>.Kind] = []
        let token = values.observe { _, change in kinds.append(change.kind) }
        swap(&values[0], &values[2])
        token.cancel()
        #expect(Array(values) == [3, 2, 1])
        #expect(kinds == [.replace, .replace])
    }

    @Test("swap(&a[i], &a[j]) on an unobserved array traps with a message that names swapAt")
    func swapThroughSubscriptUnobservedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let values = ObservableArray([1, 2, 3], backend: .c)
            swap(&values[0], &values[2])
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("use `swapAt`"))
    }

    @Test("using the array inside its own in-place mutation traps with a message")
    func reentrantUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let rows = ObservableArray<[Int]>([[1]], backend: .c)
            rows[0].appendComputed { rows.count }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("was used while one of its elements was being mutated in place"))
    }
}

/// A mutation through `inout Element` in generic code, which takes the subscript's `_modify`
/// whatever the element type.
private func mutateInPlace<Element>(_ array: ObservableArray<Element>, at index: Int, _ body: (inout Element) -> Void) {
    body(&array[index])
}

private extension Array where Element == Int {
    mutating func appendThenThrow(_ value: Int, _ error: some Error) throws {
        append(value)
        throw error
    }

    mutating func appendComputed(_ value: () -> Int) {
        append(value())
    }
}

private extension ObservableArray where Element == [Int] {
    func withFirstRowAddress<R>(_ body: ([Int]) -> R) -> R {
        // Reading through the subscript would copy the row (a retain): measure it through an
        // in-place access instead, so no extra reference exists while the address is taken.
        var result: R?
        mutateInPlace(self, at: 0) { row in result = body(row) }
        return result!
    }
}

/// A minimal lock for counting in handlers that run on several threads.
private final class NSLockLike: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 1)
    func withLock<R>(_ body: () -> R) -> R {
        semaphore.wait()
        defer { semaphore.signal() }
        return body()
    }
}
