import Dispatch
@_spi(Testing) import ObserveCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// Every capability of the façade beyond a plain observed property: key path
// chains, dependent keys, change streams, bindings and post mode. Each row is ObserveCore on
// both registries (`c`, `swift`: the same one-line declaration with another backend) and is
// compared with `set.1` of the same impl (one set, one observer: the floor every capability
// adds to); the targets take the C path's ratio to `set.1`'s C path.
//
// As in `set.N`, every operation is one call through an @inline(never) function with a value
// from a runtime seed, different on every operation. Every fixture counts what its observers
// (or the binding's target) were told and adds up the values; tear-down compares both with
// what the operations run should have produced (computed untimed, in `finishBatch`), and checks
// that the capability's own registrations are gone once it is cancelled.

extension Scenario {
    /// The capability and scaling rows are cheap and many: a fifth of the measuring time and a
    /// third of the warm-up of the `set.N` rows per repetition (30 ms and 5 ms by default).
    func shortSampling(_ config: RunConfig) -> Sampling {
        Sampling(measureNs: config.measureNs / 5, warmupNs: config.warmupNs / 3, minSamples: config.minSamples,
                 fixedBatch: config.fixedBatch)
    }
}

/// base + (base + 1) + ... + (base + count - 1), wrapping like the observers' sums.
func wrappingSum(from base: Int, count: Int) -> Int {
    count &* base &+ (count &* (count &- 1)) / 2
}

/// What `set.N`-style fixtures share: values `base &+ i`, the batch's expectations folded in
/// after the batch (untimed), and the tear-down comparison.
private final class Tally {
    var base = runtimeSeed
    var operations = 0
    var expectedCalls = 0
    var expectedTotal = 0

    /// Folds a batch of `count` operations, each expecting one call with its value, into the
    /// expectations, then moves on to the next values.
    func finish(_ count: Int, extra: Int = 0) {
        expectedCalls += count
        expectedTotal &+= wrappingSum(from: base, count: count) &+ extra &* count
        base &+= count
        operations += count
    }

    func check(_ label: String, calls: Int, total: Int) -> String? {
        mismatch("\(label) deliveries", calls, expectedCalls)
            ?? mismatch("\(label) sum of delivered values", total, expectedTotal)
    }
}

/// Adds a chain's `Int?` new value to `sink` (a nil one is not added, so the count shows it).
@inline(__always)
private func addChainValue(_ change: ObservedChange<Int>, _ sink: Sink) {
    if let value = change.newValue { sink.add(value) }
}

// MARK: - chain.leaf-set.2 / chain.leaf-set.3

/// `chain.leaf-set.<depth>`: one observer of a key path chain through optional links,
/// `root.observe(\.middle?.value)` (depth 2) or `root.observe(\.middle?.leaf?.value)` (depth 3);
/// one op sets the last object's property, and the root's observer is told the new value.
struct ChainLeafSetScenario: Scenario {
    static let depths = [2, 3]
    let depth: Int
    var name: String { "chain.leaf-set.\(depth)" }
    var n: Int { depth }
    var kind: ScenarioKind { .latency }
    var summary: String {
        depth == 2 ? "set the leaf of an observed depth-2 chain, root.observe(\\.middle?.value); one observer"
                   : "set the leaf of an observed depth-3 chain, root.observe(\\.middle?.leaf?.value); one observer"
    }
    var impls: [Impl] { [.c, .swift] }
    var referenceScenario: String? { "set.1" }
    var notes: [String] {
        ["links are optional and declared with ObservableKeyListing (README \"Key path chains\"); the observer adds "
         + "the new value to a counter. Verified at tear-down: one delivery per set with the value set, and no "
         + "registration left on the links after the token is cancelled."]
    }
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { shortSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let backend = backend(impl)
        let leaf = ChainLeaf(backend: backend, value: 0)
        let middle = ChainMiddle(backend: backend, value: 0, leaf: leaf)
        let root = ChainRoot(backend: backend, middle: middle)
        let sink = Sink()
        let tally = Tally()
        let token: ObservationToken
        let runBatch: (Int) -> Void
        if depth == 2 {
            token = root.observe(\.middle?.value) { _, change in addChainValue(change, sink) }
            runBatch = { count in
                let base = tally.base
                for i in 0..<count { set(middle, base &+ i) }
            }
        } else {
            token = root.observe(\.middle?.leaf?.value) { _, change in addChainValue(change, sink) }
            runBatch = { count in
                let base = tally.base
                for i in 0..<count { set(leaf, base &+ i) }
            }
        }
        return Fixture(runBatch: runBatch, tearDown: {
            token.cancel()
            sink.consume()
            let left = root.observationCount + middle.observationCount + leaf.observationCount
            return tally.check(label, calls: sink.calls, total: sink.total)
                ?? (left == 0 ? nil : "\(label): \(left) registration(s) left on the chain's objects after cancel")
        }, finishBatch: { tally.finish($0) })
    }
}

// MARK: - chain.relink

/// `chain.relink`: one observer of `root.observe(\.middle?.value)`; one op links the root to
/// the other of two middle objects, whose value was just set to the op's value (the detached
/// middle is unobserved, so that set costs what an unobserved set costs). The observer is told
/// the new value, and observation moves to the new middle.
struct ChainRelinkScenario: Scenario {
    var name: String { "chain.relink" }
    var n: Int { 2 }
    var kind: ScenarioKind { .latency }
    var summary: String {
        "replace the middle object of an observed depth-2 chain (root.middle = other); the observer is told"
    }
    var impls: [Impl] { [.c, .swift] }
    var referenceScenario: String? { "set.1" }
    var notes: [String] {
        ["one op = set the detached middle's value (unobserved) + root.middle = that middle: the chain drops its "
         + "registration on the old middle and makes one on the new one. Verified at tear-down: one delivery per "
         + "relink with the new middle's value (a set on a middle still observed after it was detached would add "
         + "deliveries), nothing left registered on the detached middle, and a set on the linked one is delivered."]
    }
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { shortSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let backend = backend(impl)
        let middles = [ChainMiddle(backend: backend, value: 0), ChainMiddle(backend: backend, value: 0)]
        // Op k links middles[k & 1]; before the first op, the other one is linked.
        let root = ChainRoot(backend: backend, middle: middles[1])
        let sink = Sink()
        let tally = Tally()
        let token = root.observe(\.middle?.value) { _, change in addChainValue(change, sink) }
        return Fixture(runBatch: { count in
            let base = tally.base
            var k = tally.operations
            for i in 0..<count {
                let middle = middles[k & 1]
                set(middle, base &+ i)
                link(root, middle)
                k &+= 1
            }
        }, tearDown: {
            let linked = middles[(tally.operations &- 1) & 1], detached = middles[tally.operations & 1]
            var problem = tally.check(label, calls: sink.calls, total: sink.total)
            if problem == nil && detached.observationCount != 0 {
                problem = "\(label): the detached middle still has \(detached.observationCount) registration(s)"
            }
            if problem == nil {
                let calls = sink.calls
                set(detached, tally.base)
                set(linked, tally.base &+ 1)
                if sink.calls != calls + 1 {
                    problem = "\(label): after relinking, a set on each middle made \(sink.calls - calls) deliveries, "
                        + "expected 1 (the linked middle's)"
                }
            }
            token.cancel()
            sink.consume()
            let left = root.observationCount + middles[0].observationCount + middles[1].observationCount
            return problem ?? (left == 0 ? nil : "\(label): \(left) registration(s) left after cancel")
        }, finishBatch: { tally.finish($0) })
    }
}

// MARK: - dependent.set

/// `dependent.set`: `sum` depends on `first` and `second`; one observer of `sum`; one op sets
/// `first`, and the observer is told the recomputed sum.
struct DependentSetScenario: Scenario {
    var name: String { "dependent.set" }
    var n: Int { 1 }
    var kind: ScenarioKind { .latency }
    var summary: String {
        "set a property a dependent key depends on (sum dependsOn: first, second); the sum's observer is told"
    }
    var impls: [Impl] { [.c, .swift] }
    var referenceScenario: String? { "set.1" }
    var notes: [String] {
        ["the observer adds the new sum to a counter. Verified at tear-down: one delivery per set of `first`, with "
         + "first + second, and the dependency registrations gone with the last observer.",
         "`sum` is declared as `@KeyValueDependent` declares it: ObservableKey(\\.sum, dependsOn: [\\.first, "
         + "\\.second], read: { $0.sum }); declared with the key path alone, each change also applies the key path "
         + "(KeyPath._projectReadOnly) to read the sum."]
    }
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { shortSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let second = 7
        let subject = DependentSubject(backend: backend(impl), first: 0, second: second)
        let sink = Sink()
        let tally = Tally()
        let token = subject.observe(\.sum) { _, change in sink.add(change.newValue!) }
        return Fixture(runBatch: { count in
            let base = tally.base
            for i in 0..<count { set(subject, first: base &+ i) }
        }, tearDown: {
            token.cancel()
            sink.consume()
            let left = subject.observationCount
            return tally.check(label, calls: sink.calls, total: sink.total)
                ?? (left == 0 ? nil : "\(label): \(left) dependency registration(s) left after cancel")
        }, finishBatch: { tally.finish($0, extra: second) })
    }
}

// MARK: - stream.end-to-end

/// The consuming task's side: what it received, published to the setter's thread.
private final class StreamConsumer: @unchecked Sendable {
    let received = Atomic<Int>(0)
    /// Written by the consumer only; read after `received` is seen complete (acquire) or after `done`.
    var total = 0
    let done = DispatchSemaphore(value: 0)

    /// Waits (spinning, then yielding the core) until the consumer has received `count` changes.
    @inline(never)
    func waitUntilReceived(_ count: Int) {
        var spins = 0
        while received.load(ordering: .acquiring) < count {
            spins += 1
            if spins > 256 { sched_yield() }
        }
    }
}

/// `stream.end-to-end`: `changes(for: \.value)` (unbounded buffering) consumed by `for await`
/// in a detached task; the setter runs on the measuring thread. One timed batch is B sets and
/// then the wait until the consumer has received all B: the figure is ns per change, set to
/// received, at full throughput.
struct StreamEndToEndScenario: Scenario {
    /// Sets per timed batch: enough that the last change's hand-over is amortised.
    static let batch = 1024
    var name: String { "stream.end-to-end" }
    var n: Int { 1 }
    var kind: ScenarioKind { .latency }
    var summary: String {
        "set on one thread, `for await` over changes(for:) on a task: ns per change, set to consumer received"
    }
    var impls: [Impl] { [.c, .swift] }
    var referenceScenario: String? { "set.1" }
    var notes: [String] {
        ["one timed batch = \(Self.batch) sets, then waiting until the consumer has taken all of them (throughput: "
         + "batch time / \(Self.batch)). allocs/op counts the setter's thread only. Verified at tear-down: the "
         + "consumer received every change, in a total equal to the values set; cancelling its task ends the loop "
         + "and removes the registration."]
    }
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling {
        var sampling = shortSampling(config)
        sampling.fixedBatch = config.fixedBatch ?? Self.batch
        return sampling
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let counter = KVOCounter(backend: backend(impl))
        let consumer = StreamConsumer()
        let tally = Tally()
        let changes = counter.changes(for: \.value)
        let task = Task.detached {
            var total = 0
            for await change in changes {
                total &+= change.newValue!
                consumer.total = total
                consumer.received.add(1, ordering: .releasing)
            }
            consumer.done.signal()
        }
        return Fixture(runBatch: { count in
            let base = tally.base
            for i in 0..<count { set(counter, base &+ i) }
            consumer.waitUntilReceived(tally.operations + count)
        }, tearDown: {
            task.cancel()
            consumer.done.wait()
            blackHole(counter.value)
            return tally.check(label, calls: consumer.received.load(ordering: .acquiring), total: consumer.total)
                ?? (counter.observationCount == 0 ? nil : "\(label): the stream's registration outlived its task")
        }, finishBatch: { tally.finish($0) })
    }
}

// MARK: - binding.propagate / binding.filter-map / binding.reduce-2

/// The binding rows: a `BindingTarget`'s `value` follows one or two `KVOCounter`s (README
/// "Bindings and post mode"). One op sets a source; the binding writes the target.
struct BindingScenario: Scenario {
    enum Shape: String, CaseIterable {
        /// `target.bind(\.value, to: source, \.value)`.
        case propagate
        /// `target.bind(\.value, to: source.bindable(\.value).filter { $0 & 7 != 0 }.map { $0 &* 2 })`.
        case filterMap = "filter-map"
        /// `target.bind(\.value, to: a.bindable(\.value), b.bindable(\.value)) { $0 &+ $1 }`, sets alternating.
        case reduce2 = "reduce-2"
    }

    let shape: Shape
    var name: String { "binding.\(shape.rawValue)" }
    var n: Int { shape == .reduce2 ? 2 : 1 }
    var kind: ScenarioKind { .latency }
    var summary: String {
        switch shape {
        case .propagate: return "set a source property bound to a target (target.bind(\\.value, to: source, \\.value))"
        case .filterMap:
            return "set a source bound through .filter { v & 7 != 0 }.map { v * 2 } (1 value in 8 filtered out)"
        case .reduce2: return "set one of two sources bound with reduce { a + b } (the two alternate)"
        }
    }
    var impls: [Impl] { [.c, .swift] }
    var referenceScenario: String? { "set.1" }
    var notes: [String] {
        ["the target's value is a plain stored property whose didSet counts the writes and adds the value written. "
         + "Verified at tear-down: the target was written once per set "
         + (shape == .filterMap ? "that passed the filter, with the mapped value, "
            : shape == .reduce2 ? "with the sum of both sources' current values, " : "with the value set, ")
         + "and the binding's registrations are gone after cutOff()."]
    }
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { shortSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let backend = backend(impl)
        let target = BindingTarget(backend: backend)
        let a = KVOCounter(backend: backend), b = KVOCounter(backend: backend)
        let tally = Tally()
        let binding: KeyValueBinding
        let runBatch: (Int) -> Void
        var finishBatch: (Int) -> Void = { tally.finish($0) }
        switch shape {
        case .propagate:
            binding = target.bind(\.value, to: a, \.value)
            runBatch = { count in
                let base = tally.base
                for i in 0..<count { set(a, base &+ i) }
            }
        case .filterMap:
            binding = target.bind(\.value, to: a.bindable(\.value).filter { $0 & 7 != 0 }.map { $0 &* 2 })
            runBatch = { count in
                let base = tally.base
                for i in 0..<count { set(a, base &+ i) }
            }
            finishBatch = { count in
                for i in 0..<count {
                    let value = tally.base &+ i
                    if value & 7 != 0 {
                        tally.expectedCalls += 1
                        tally.expectedTotal &+= value &* 2
                    }
                }
                tally.base &+= count
                tally.operations += count
            }
        case .reduce2:
            binding = target.bind(\.value, to: a.bindable(\.value), b.bindable(\.value)) { $0 &+ $1 }
            runBatch = { count in
                let base = tally.base
                var k = tally.operations
                for i in 0..<count {
                    if k & 1 == 0 { set(a, base &+ i) } else { set(b, base &+ i) }
                    k &+= 1
                }
            }
            var sourceA = 0, sourceB = 0
            finishBatch = { count in
                var k = tally.operations
                for i in 0..<count {
                    if k & 1 == 0 { sourceA = tally.base &+ i } else { sourceB = tally.base &+ i }
                    tally.expectedCalls += 1
                    tally.expectedTotal &+= sourceA &+ sourceB
                    k &+= 1
                }
                tally.base &+= count
                tally.operations += count
            }
        }
        // The binding's first write (the current value, at bind time) is not an op.
        target.writes = 0
        target.total = 0
        return Fixture(runBatch: runBatch, tearDown: {
            binding.cancel()
            blackHole(a.value &+ b.value)
            let left = a.observationCount + b.observationCount + target.observationCount
            return tally.check(label, calls: target.writes, total: target.total)
                ?? (left == 0 ? nil : "\(label): \(left) registration(s) left after cutOff()")
        }, finishBatch: finishBatch)
    }
}

// MARK: - post

/// `post`: `counter.post(\.value) { _, change in sink.add(change.newValue!) }`; one op sets it.
struct PostScenario: Scenario {
    var name: String { "post" }
    var n: Int { 1 }
    var kind: ScenarioKind { .latency }
    var summary: String { "set a property the object posts (post mode: post(\\.value) { object, change in ... })" }
    var impls: [Impl] { [.c, .swift] }
    var referenceScenario: String? { "set.1" }
    var notes: [String] {
        ["the posted handler adds the new value to a counter. Verified at tear-down: one delivery per set with the "
         + "value set, and nothing registered after stopPosting(\\.value)."]
    }
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { shortSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let counter = KVOCounter(backend: backend(impl))
        let sink = Sink()
        let tally = Tally()
        counter.post(\.value) { _, change in sink.add(change.newValue!) }
        return Fixture(runBatch: { count in
            let base = tally.base
            for i in 0..<count { set(counter, base &+ i) }
        }, tearDown: {
            counter.stopPosting(\.value)
            sink.consume()
            return tally.check(label, calls: sink.calls, total: sink.total)
                ?? (counter.observationCount == 0 ? nil : "\(label): still registered after stopPosting")
        }, finishBatch: { tally.finish($0) })
    }
}
