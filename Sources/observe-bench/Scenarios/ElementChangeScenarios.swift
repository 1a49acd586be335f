import ObserveCore

// Variations of `array.element-change` that change what one set has to tell: ten interested
// parties instead of one (`array.element-change-10`). It runs at every `--elements` size and
// checks, as the original row does, that every observer was told every set with the right indices.

// MARK: - array.element-change-10

/// `array.element-change-10`: `array.element-change` with ten observers. c/swift: ten
/// `observe(elementKeyPaths: [\.grade])` registrations on the array, each reading the index from
/// `change.elements`; per-element-naive: ten parties, each with one naive registration per
/// element (ten per element), each finding the index in the wrapper's element -> index map
/// (`NaiveElementChangePeer`, `.map`). The elements set follow `array.element-change`'s sequence.
struct ArrayElementChangeTenScenario: ArrayScenario {
    static let observers = 10
    let n: Int
    var name: String { "array.element-change-10" }
    var summary: String { "set one element's observed property; 10 observers each read the element's index" }
    var impls: [Impl] { [.c, .swift, .perElementNaive] }
    var peer: Impl? { .perElementNaive }
    var chartFamily: ChartFamily? {
        ChartFamily(title: "array.element-change-10 — an element's property set, 10 observers told its index",
                    xLabel: "elements (N)", yLabel: "ns per change")
    }
    var notes: [String] {
        ["as array.element-change (same elements set, in the same order), with 10 observers: c/swift register 10 "
         + "array observers, each reading the index from change.elements; per-element-naive registers 10 naive "
         + "observers per element (10 parties, each observing every element), each reading the index from the "
         + "wrapper's element -> index map. Every observer's calls and sum of indices are checked."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { cheapSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "\(name)/\(impl.rawValue)"
        let sinks = (0..<Self.observers).map { _ in Sink() }
        let order = ArrayElementChangeScenario.order(n: n)
        let mask = ArrayElementChangeScenario.sequenceLength - 1
        var base = runtimeSeed
        var cursor = 0
        func expectedIndexSum(_ ops: Int) -> Int {
            let whole = order.reduce(0, &+)
            return (ops / order.count) &* whole &+ order[0..<(ops % order.count)].reduce(0, &+)
        }
        func check() -> String? {
            for (party, sink) in sinks.enumerated() {
                sink.consume()
                if let warning = mismatch("\(label) observer \(party) calls", sink.calls, cursor)
                    ?? mismatch("\(label) observer \(party) sum of indices", sink.total, expectedIndexSum(cursor)) {
                    return warning
                }
            }
            return nil
        }

        switch impl {
        case .c, .swift:
            let backend = backend(impl)
            let pool = StudentPool.kvoStudents(backend)
            let array = ObservableArray(pool[0..<n], backend: backend)
            let tokens = sinks.map { sink in observeArray(array) { readElementChange($0, sink) } }
            let targets = order.map { pool[$0] }
            return Fixture(runBatch: { count in
                var next = cursor
                for i in 0..<count {
                    setGrade(targets[next & mask], base &+ i)
                    next &+= 1
                }
                cursor = next
                base &+= count
            }, tearDown: {
                for token in tokens { token.cancel() }
                array._checkInvariants()
                return check()
            })

        case .perElementNaive:
            freshNaiveTable()
            let pool = StudentPool.naiveStudents()
            let peer = NaiveElementChangePeer(pool[0..<n], indexing: .map, parties: sinks.map { sink in
                { change in sink.add(change.index) }
            })
            let targets = order.map { pool[$0] }
            return Fixture(runBatch: { count in
                var next = cursor
                for i in 0..<count {
                    setGrade(targets[next & mask], base &+ i)
                    next &+= 1
                }
                cursor = next
                base &+= count
            }, tearDown: {
                peer.cancelAll()
                freshNaiveTable()
                return check()
            })

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}
