@_spi(Testing) import ObserveCore
import OpenCombine

// MARK: - set.N

/// Why `c` and `swift` read alike on the set rows.
let setPathNote = "c and swift time the same code here: a set reads the object's dispatch cache (Swift) and calls "
    + "the handlers; the C registry is not on that path (only the same thread-depth counter call, for both). The "
    + "backends differ where the registry works: observe and cancel (register.remove), memory per registration, "
    + "rebuilding an object's dispatch cache after its registrations change, and the array rows."

/// `set.N`: one setter call on an object whose property has N inline observers; each observer
/// adds the new value to a counter (a side effect the compiler cannot drop). The values set come
/// from a runtime seed and change on every operation.
///
/// `set.N-macro` (`macroDeclared`): the same on `MacroCounter`, the class `@KeyValueObservable`
/// writes (Peers/MacroExpandedSubject.swift), c and swift only; its target compares it with set.N.
struct SetScenario: Scenario {
    let n: Int
    var macroDeclared = false
    var name: String { macroDeclared ? "set.\(n)-macro" : "set.\(n)" }
    var kind: ScenarioKind { .latency }
    var summary: String {
        if macroDeclared {
            return "set.\(n) on a class declared with @KeyValueObservable (its expansion, checked by a test)"
        }
        return n == 0 ? "set with no observer (cost of being observable; `plain` is the floor)"
                      : "set with \(n) inline observer\(n == 1 ? "" : "s"), each adding the new value to a counter"
    }
    var impls: [Impl] {
        if macroDeclared { return [.c, .swift] }
        return n == 0 ? [.plain, .c, .swift, .naive, .observation, .opencombine]
                      : [.c, .swift, .naive, .observation, .opencombine]
    }
    var peer: Impl? { macroDeclared ? nil : n == 0 ? .plain : .naive }
    var ratioStyle: RatioStyle { n == 0 ? .costRelativeToPeer : .speedupOverPeer }
    var chartFamily: ChartFamily? {
        macroDeclared ? nil : ChartFamily(title: "set.N — one property set with N inline observers", xLabel: "observers (N)")
    }
    var sharedPath: [Impl] { [.c, .swift] }
    var notes: [String] { [setPathNote] }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let sink = Sink()
        let n = self.n, name = self.name
        var base = runtimeSeed
        var operations = 0
        // Observers are called once per set each; OpenCombine's sinks and Observation's trackings
        // also run once when they are set up (the subscription's current value, the first arm).
        /// `counter` with `n` registrations made by `observe`: a batch runs `sets(count, base)`,
        /// which sets it `count` times with values from `base` (a loop written per counter type,
        /// so that each set is the same direct call of an `@inline(never)` setter as `plain`'s,
        /// not a call through a closure); tear-down cancels every registration and checks that
        /// each observer was called once per set (plus `setUpCalls`: OpenCombine's sinks and
        /// Observation's trackings also run once when they are set up).
        func fixture<Counter, Token>(_ counter: Counter, observe: (Counter, Sink) -> Token,
                                     cancel: @escaping (Token) -> Void, setUpCalls: Int = 0,
                                     sets: @escaping (_ count: Int, _ base: Int) -> Void,
                                     read: @escaping (Counter) -> Int) -> Fixture {
            var tokens = (0..<n).map { _ in observe(counter, sink) }
            return Fixture(runBatch: { count in
                sets(count, base)
                base &+= count
                operations += count
            }, tearDown: {
                for token in tokens { cancel(token) }
                tokens = []
                blackHole(read(counter))
                sink.consume()
                return sink.check(expected: n * operations + setUpCalls, "\(name)/\(impl.rawValue)")
            })
        }
        switch impl {
        case .c, .swift:
            let backend: ObservationBackend = impl == .c ? .c : .swift
            if macroDeclared {
                let counter = MacroCounter(backend: backend)
                return fixture(counter, observe: observeKVO, cancel: { $0.cancel() },
                               sets: { count, base in for i in 0..<count { set(counter, base &+ i) } }, read: { $0.value })
            }
            let counter = KVOCounter(backend: backend)
            return fixture(counter, observe: observeKVO, cancel: { $0.cancel() },
                           sets: { count, base in for i in 0..<count { set(counter, base &+ i) } }, read: { $0.value })
        case .naive:
            let counter = NaiveCounter()
            return fixture(counter, observe: observeNaive, cancel: { $0.cancel() },
                           sets: { count, base in for i in 0..<count { set(counter, base &+ i) } }, read: { $0.value })
        case .observation:
            // A tracking cannot be cancelled: it ends when it fires (and re-arms) or its object dies.
            let counter = ObservationCounter()
            return fixture(counter, observe: observeObservation, cancel: { _ in }, setUpCalls: n,
                           sets: { count, base in for i in 0..<count { set(counter, base &+ i) } }, read: { $0.value })
        case .opencombine:
            let counter = PublishedCounter()
            return fixture(counter, observe: observePublished, cancel: { $0.cancel() }, setUpCalls: n,
                           sets: { count, base in for i in 0..<count { set(counter, base &+ i) } }, read: { $0.value })
        case .plain:
            precondition(n == 0, "plain has no observers")
            let counter = PlainCounter()
            return Fixture(runBatch: { count in
                for i in 0..<count { set(counter, base &+ i) }
                base &+= count
            }, tearDown: {
                blackHole(counter.value)
                return nil
            })
        case .diff, .perElementNaive, .scan:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

// MARK: - register.remove

/// `register.remove`: register one observer on an object nobody else observes, then remove it
/// (token `cancel()` / `AnyCancellable.cancel()`). One operation is the pair. The handler
/// closure is created per registration, as in user code, so its allocation is part of the cost.
struct RegisterRemoveScenario: Scenario {
    var name: String { "register.remove" }
    var n: Int { 1 }
    var kind: ScenarioKind { .latency }
    var summary: String { "observe one property, then cancel/remove the registration (one op = both)" }
    var impls: [Impl] { [.c, .swift, .naive, .opencombine] }
    var peer: Impl? { .naive }
    var unsupported: [(Impl, String)] {
        [(.observation, "Observation has no way to remove a tracking: it ends only when it fires or its object dies")]
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let sink = Sink()
        var operations = 0
        switch impl {
        case .c, .swift:
            let counter = KVOCounter(backend: impl == .c ? .c : .swift)
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let token = observeKVO(counter, sink)
                    token.cancel()
                }
            }, tearDown: {
                blackHole(counter.value)
                sink.consume()
                return sink.check(expected: 0, "register.remove/\(impl.rawValue)")
            })
        case .naive:
            let counter = NaiveCounter()
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let token = observeNaive(counter, sink)
                    token.cancel()
                }
            }, tearDown: {
                blackHole(counter.value)
                sink.consume()
                return sink.check(expected: 0, "register.remove/naive")
            })
        case .opencombine:
            let counter = PublishedCounter()
            return Fixture(runBatch: { count in
                for _ in 0..<count {
                    let cancellable = observePublished(counter, sink)
                    cancellable.cancel()
                }
                operations += count
            }, tearDown: {
                blackHole(counter.value)
                sink.consume()
                // Each subscription receives the current value once.
                return sink.check(expected: operations, "register.remove/opencombine")
            })
        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
    }
}

// MARK: - register.memory

/// `register.memory`: heap bytes held per live registration. K fresh objects are created first
/// (not counted); then one observer is registered on each and the growth of the heap in use is
/// divided by K. What is counted: everything the registration allocates — the token or
/// cancellable the user keeps, the handler closure's context, the registry's entries.
struct RegisterMemoryScenario: Scenario {
    var name: String { "register.memory" }
    var n: Int { 1 }
    var kind: ScenarioKind { .memory }
    var summary: String { "heap bytes held per live registration (one observer on each of K objects)" }
    var impls: [Impl] { [.c, .swift, .naive, .observation, .opencombine] }
    var peer: Impl? { .naive }
    var ratioStyle: RatioStyle { .costRelativeToPeer }

    func measureBytes(_ impl: Impl, _ config: RunConfig) -> MemoryMeasurement {
        let count = config.memoryItems
        let sink = Sink()
        let bytes: Double
        switch impl {
        case .c, .swift:
            let backend: ObservationBackend = impl == .c ? .c : .swift
            let counters = (0..<count).map { _ in KVOCounter(backend: backend) }
            observeKVO(KVOCounter(backend: backend), sink).cancel()   // first-use initialisation, not counted
            var tokens: [ObservationToken] = []
            tokens.reserveCapacity(count)
            let before = HeapAccounting.bytesInUse()
            for counter in counters { tokens.append(observeKVO(counter, sink)) }
            let after = HeapAccounting.bytesInUse()
            bytes = Double(after - before) / Double(count)
            for token in tokens { token.cancel() }
            blackHole(counters.count &+ tokens.count)
        case .naive:
            let counters = (0..<count).map { _ in NaiveCounter() }
            observeNaive(NaiveCounter(), sink).cancel()
            var tokens: [NaiveToken] = []
            tokens.reserveCapacity(count)
            let before = HeapAccounting.bytesInUse()
            for counter in counters { tokens.append(observeNaive(counter, sink)) }
            let after = HeapAccounting.bytesInUse()
            bytes = Double(after - before) / Double(count)
            for token in tokens { token.cancel() }
            blackHole(counters.count &+ tokens.count)
        case .observation:
            let counters = (0..<count).map { _ in ObservationCounter() }
            let spare = ObservationCounter()
            observeObservation(spare, sink)
            set(spare, runtimeSeed)
            let before = HeapAccounting.bytesInUse()
            for counter in counters { observeObservation(counter, sink) }
            let after = HeapAccounting.bytesInUse()
            bytes = Double(after - before) / Double(count)
            blackHole(counters.count)
        case .opencombine:
            let counters = (0..<count).map { _ in PublishedCounter() }
            observePublished(PublishedCounter(), sink).cancel()
            var cancellables: [AnyCancellable] = []
            cancellables.reserveCapacity(count)
            let before = HeapAccounting.bytesInUse()
            for counter in counters { cancellables.append(observePublished(counter, sink)) }
            let after = HeapAccounting.bytesInUse()
            bytes = Double(after - before) / Double(count)
            for cancellable in cancellables { cancellable.cancel() }
            blackHole(counters.count &+ cancellables.count)
        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
        sink.consume()
        return MemoryMeasurement(bytesPerItem: bytes, items: count, method: HeapAccounting.method)
    }
}

// MARK: - threads.2-distinct

/// `threads.2-distinct`: each thread sets a property of its own object, which has one inline
/// observer (and its own counter). Two threads run concurrently, each doing M sets; one thread
/// does the same total work (2M sets, alternating between two such objects). `speedup` =
/// throughput with two threads / throughput with one. Each thread builds its own objects, so
/// they come from that thread's allocator arena and never share a cache line.
struct ThreadsScenario: Scenario {
    var name: String { "threads.2-distinct" }
    var n: Int { 2 }
    var kind: ScenarioKind { .threads }
    var summary: String {
        "2 threads each setting its own object (1 inline observer) vs 1 thread doing the same total work"
    }
    var impls: [Impl] { [.plain, .c, .swift, .naive, .observation, .opencombine] }
    var sharedPath: [Impl] { [.c, .swift] }
    var notes: [String] { [setPathNote] }

    func makeThreadFixture(_ impl: Impl, thread index: Int, _ config: RunConfig) -> Fixture {
        // Same fixture as set.1 (plain: set.0), built on the calling thread.
        SetScenario(n: impl == .plain ? 0 : 1).makeFixture(impl, config)
    }
}
