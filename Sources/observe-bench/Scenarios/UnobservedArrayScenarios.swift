@_spi(Testing) import ObserveCore
import SeededRandom

// What an `ObservableArray` costs when nobody observes it, against a plain Swift `Array` doing
// the same thing: `array.unobserved-append`, `array.unobserved-insert-middle`,
// `array.unobserved-subscript-set`, `array.iterate`, `array.unobserved-sort` and
// `array.unobserved-reverse`, each at every `--elements` size. The elements are `Int`s (no reference
// counting in either impl); the ObserveCore array takes its lock on every operation, the plain
// array is a local variable the optimiser sees whole.

/// One of the unobserved-array operations.
struct ArrayUnobservedScenario: ArrayScenario {
    enum Operation: String, CaseIterable {
        case append = "array.unobserved-append"
        case insertMiddle = "array.unobserved-insert-middle"
        case subscriptSet = "array.unobserved-subscript-set"
        case iterate = "array.iterate"
        case sort = "array.unobserved-sort"
        case reverse = "array.unobserved-reverse"
    }

    let operation: Operation
    let n: Int
    var name: String { operation.rawValue }
    var summary: String {
        switch operation {
        case .append: return "append one Int to an array nobody observes (grows from N; per element)"
        case .insertMiddle: return "insert(x, at: N/2) then remove(at: N/2) on an array of N nobody observes (one op = both)"
        case .subscriptSet: return "array[i] = x at a pseudo-random i of an array of N that nobody observes"
        case .iterate: return "for-in over an array of N that nobody observes (per element)"
        case .sort: return "sort(by: >) then sort(by: <) of an array of N that nobody observes (per element)"
        case .reverse: return "reverse() twice on an array of N that nobody observes (per element)"
        }
    }
    var unit: String { operation == .subscriptSet || operation == .insertMiddle ? "ns per op" : "ns per element" }
    var impls: [Impl] { [.c, .plain] }
    var peer: Impl? { .plain }
    var ratioStyle: RatioStyle { .costRelativeToPeer }
    var chartFamily: ChartFamily? { nil }
    var notes: [String] {
        switch operation {
        case .append:
            return ["one op = one append; every batch appends to an array of N and the batch's elements are removed "
                    + "afterwards (untimed); the contents are checked."]
        case .insertMiddle:
            return ["one op = one insertion in the middle and the removal of the same element (N stays fixed); both "
                    + "impls move the shorter side (the ring: half of N / 2, the Array: N / 2); the contents are checked."]
        case .subscriptSet:
            return ["the indices follow a fixed pseudo-random sequence of 4,096 (the same for both impls); the sum of "
                    + "the contents is checked."]
        case .iterate:
            return ["one op = one pass over all N elements (figures per element); the sum is checked."]
        case .sort:
            return ["one op = two sorts of all N elements, each of input in the opposite order (the standard "
                    + "library's sort finds one descending run and reverses it: O(N) comparisons), so the figure is "
                    + "mostly what ObservableArray adds around Array's algorithm (its lock, one bitwise copy, the "
                    + "install); figures per element; the contents are checked."]
        case .reverse:
            return ["one op = two reverse() calls (the order comes back); figures per element; the contents are "
                    + "checked."]
        }
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { cheapSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "\(name)/\(impl.rawValue)"
        var generator = SplitMix64(seed: 0x5E7_1D3A &+ UInt64(n))
        let order = (0..<4096).map { _ in Int.random(in: 0..<n, using: &generator) }
        let expectedSum = (0..<n).reduce(0, &+)

        switch (operation, impl) {
        case (.append, .c):
            let array = ObservableArray(0..<n, backend: .c)
            return Fixture(runBatch: { count in
                for i in 0..<count { array.append(i) }
            }, tearDown: {
                array.count == n && array.reduce(0, &+) == expectedSum ? nil : "\(label): contents changed"
            }, finishBatch: { count in array.removeLast(count) })
        case (.append, .plain):
            var array = Array(0..<n)
            return Fixture(runBatch: { count in
                for i in 0..<count { array.append(i) }
            }, tearDown: {
                array.count == n && array.reduce(0, &+) == expectedSum ? nil : "\(label): contents changed"
            }, finishBatch: { count in array.removeLast(count) })

        case (.insertMiddle, .c):
            let array = ObservableArray(0..<n, backend: .c)
            return Fixture(runBatch: { count in
                for i in 0..<count {
                    array.insert(-i, at: n / 2)
                    blackHole(array.remove(at: n / 2))
                }
            }, tearDown: {
                Array(array) == Array(0..<n) ? nil : "\(label): contents changed"
            })
        case (.insertMiddle, .plain):
            var array = Array(0..<n)
            return Fixture(runBatch: { count in
                for i in 0..<count {
                    array.insert(-i, at: n / 2)
                    blackHole(array.remove(at: n / 2))
                }
            }, tearDown: {
                array == Array(0..<n) ? nil : "\(label): contents changed"
            })

        case (.subscriptSet, .c):
            return subscriptSetFixture(ObservableArray(0..<n, backend: .c), order: order, label: label)
        case (.subscriptSet, .plain):
            return subscriptSetFixture(Array(0..<n), order: order, label: label)

        case (.iterate, .c):
            return iterationFixture(ObservableArray(0..<n, backend: .c), expectedSum: expectedSum, label: label)
        case (.iterate, .plain):
            return iterationFixture(Array(0..<n), expectedSum: expectedSum, label: label)

        // The sort and reverse fixtures are written out for each impl, not shared through a helper
        // taking closures: a plain array captured by an escaping closure lost the inlining of its
        // comparator (5.6 ns per element instead of 1.3), which would have flattered the ratio.
        case (.sort, .c):
            let array = ObservableArray(0..<n, backend: .c)
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    array.sort(by: >)
                    array.sort(by: <)
                }
            }, tearDown: {
                Array(array) == Array(0..<n) ? nil : "\(label): contents changed"
            }, itemsPerOp: n)
        case (.sort, .plain):
            var array = Array(0..<n)
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    array.sort(by: >)
                    array.sort(by: <)
                }
            }, tearDown: {
                array == Array(0..<n) ? nil : "\(label): contents changed"
            }, itemsPerOp: n)

        case (.reverse, .c):
            let array = ObservableArray(0..<n, backend: .c)
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    array.reverse()
                    array.reverse()
                }
            }, tearDown: {
                Array(array) == Array(0..<n) ? nil : "\(label): contents changed"
            }, itemsPerOp: n)
        case (.reverse, .plain):
            var array = Array(0..<n)
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    array.reverse()
                    array.reverse()
                }
            }, tearDown: {
                array == Array(0..<n) ? nil : "\(label): contents changed"
            }, itemsPerOp: n)

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }

    /// `array.iterate` for either impl: one op is a for-in pass summing all N elements (the same
    /// code, specialised for each sequence type); tear-down checks the sums.
    @inline(__always)
    private func iterationFixture<S: Sequence<Int>>(_ sequence: S, expectedSum: Int, label: String) -> Fixture {
        let sink = Sink()
        var passes = 0
        return Fixture(runBatch: { count in
            for _ in 0..<count {
                var sum = 0
                for element in sequence { sum &+= element }
                sink.add(sum)
            }
            passes += count
        }, tearDown: {
            let expected = expectedSum &* passes
            return sink.total == expected ? nil : "\(label): sum \(sink.total), expected \(expected)"
        }, itemsPerOp: n)
    }

    /// `array.unobserved-subscript-set` for either impl: `array[i] = x` along `order`; tear-down
    /// replays the same sets on a plain array and compares the contents.
    @inline(__always)
    private func subscriptSetFixture<C: MutableCollection<Int>>(_ collection: C, order: [Int], label: String) -> Fixture
    where C.Index == Int {
        var array = collection
        var batches: [Int] = []
        var cursor = 0
        return Fixture(runBatch: { count in
            var next = cursor
            for i in 0..<count {
                array[order[next & 4095]] = i
                next &+= 1
            }
            cursor = next
        }, tearDown: {
            var mirror = Array(0..<n), next = 0
            for count in batches {
                for i in 0..<count {
                    mirror[order[next & 4095]] = i
                    next &+= 1
                }
            }
            return Array(array) == mirror ? nil : "\(label): contents differ from the expected ones"
        }, finishBatch: { count in batches.append(count) })
    }
}
