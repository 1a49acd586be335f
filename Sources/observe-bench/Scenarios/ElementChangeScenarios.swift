@_spi(Testing) import ObserveCore

// Two variations of `array.element-change` that change what one set has to tell: ten interested
// parties instead of one (`array.element-change-10`), and one element present at many indices
// (`array.element-change-repeated`). Both run at every `--elements` size and check, as the
// original row does, that every observer was told every set with the right indices.

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
        let sets = ElementChangeSequence(n: n)
        let order = sets.order
        func check() -> String? {
            for (party, sink) in sinks.enumerated() {
                sink.consume()
                if let warning = mismatch("\(label) observer \(party) calls", sink.calls, sets.cursor)
                    ?? mismatch("\(label) observer \(party) sum of indices", sink.total, sets.expectedIndexSum) {
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
            return Fixture(runBatch: { count in sets.run(count, targets, setGrade) }, tearDown: {
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
            return Fixture(runBatch: { count in sets.run(count, targets, setGrade) }, tearDown: {
                peer.cancelAll()
                freshNaiveTable()
                return check()
            })

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

// MARK: - array.element-change-repeated

/// `array.element-change-repeated`: one element sits at `repeats` indices of an array of N (1,000
/// indices, every N/1,000-th slot from 0; N/10 of them below N = 10,000), the other slots hold
/// distinct elements, and one op sets the repeated element's `grade`. Every observer must be told
/// every index: the fixture checks `repeats` reports per set and their sum.
/// - c, swift: one array observer; the element-position index maps the element to its slots,
///   and one change lists every index (`change.elements`).
/// - per-element-naive: one naive registration per array slot (the repeated element holds
///   `repeats` of them, all called on each set), each reading its slot's index from the
///   wrapper's slot -> index table (`NaiveElementChangePeer`, `.slot`): per-element observation
///   as a user would write it once an element may repeat (an element -> index map cannot say
///   "at these 1,000 indices"; keeping a list of indices per element in it would be a position
///   index of its own).
struct ArrayElementChangeRepeatedScenario: ArrayScenario {
    static let maxRepeats = 1_000
    let n: Int
    /// Indices holding the repeated element.
    var repeats: Int { min(Self.maxRepeats, n / 10) }
    var name: String { "array.element-change-repeated" }
    var summary: String {
        "set the observed property of one element present at 1,000 indices (N/10 below N=10,000); the observer "
            + "is told every index"
    }
    var impls: [Impl] { [.c, .swift, .perElementNaive] }
    var peer: Impl? { .perElementNaive }
    var chartFamily: ChartFamily? {
        ChartFamily(title: "array.element-change-repeated — an element at 1,000 indices set, every index reported",
                    xLabel: "elements (N)", yLabel: "ns per change")
    }
    var notes: [String] {
        ["one op = one set of the repeated element, which sits at 1,000 indices (N/10 below N=10,000: 100 at N=1,000), "
         + "evenly spread from index 0; the other slots hold distinct elements. c/swift: one observer told one change "
         + "listing every index (change.elements); per-element-naive: one naive registration per array slot (so all "
         + "of the element's 1,000 registrations are called), each reading its slot's index from the wrapper's slot "
         + "-> index table (a map keyed by element cannot hold it twice). The number of indices reported and their "
         + "sum are checked."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { cheapSampling(config) }

    /// The array's contents: `repeated` at every `n / repeats`-th slot from 0 (`repeats` of them),
    /// `pool[slot]` elsewhere.
    private func contents<Element>(_ pool: [Element], repeated: Element) -> (elements: [Element], indices: [Int]) {
        let stride = n / repeats
        let indices = (0..<repeats).map { $0 * stride }
        var elements = Array(pool[0..<n])
        for index in indices { elements[index] = repeated }
        return (elements, indices)
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let repeats = self.repeats, label = "\(name)/\(impl.rawValue)"
        let sink = Sink()
        var base = runtimeSeed
        var ops = 0
        func check(_ indices: [Int]) -> String? {
            sink.consume()
            return mismatch("\(label) indices reported", sink.calls, ops &* repeats)
                ?? mismatch("\(label) sum of indices", sink.total, ops &* indices.reduce(0, &+))
        }

        switch impl {
        case .c, .swift:
            let backend = backend(impl)
            let pool = StudentPool.kvoStudents(backend)
            let repeated = pool[StudentPool.spareBase]
            let (elements, indices) = contents(pool, repeated: repeated)
            let array = ObservableArray(elements, backend: backend)
            let token = observeArray(array) { readElementChange($0, sink) }
            return Fixture(runBatch: { count in
                for i in 0..<count { setGrade(repeated, base &+ i) }
                base &+= count
                ops += count
            }, tearDown: {
                token.cancel()
                array._checkInvariants()
                return check(indices)
            })

        case .perElementNaive:
            freshNaiveTable()
            let pool = StudentPool.naiveStudents()
            let repeated = pool[StudentPool.spareBase]
            let (elements, indices) = contents(pool, repeated: repeated)
            let peer = NaiveElementChangePeer(elements, indexing: .slot, parties: [{ change in sink.add(change.index) }])
            return Fixture(runBatch: { count in
                for i in 0..<count { setGrade(repeated, base &+ i) }
                base &+= count
                ops += count
            }, tearDown: {
                peer.cancelAll()
                freshNaiveTable()
                return check(indices)
            })

        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}
