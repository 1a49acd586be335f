@_spi(Testing) import ObserveCore
import SeededRandom
import Observation

// `service.churn`: a service-shaped workload where registrations change as
// often as values do. 20,000 persons, each observed once to begin with; per tick, in a seeded
// random order: 2,000 sets on random persons, 300 token observations of random persons and 300
// cancellations of random live tokens, 100 observer-tagged adds (`addObserver` with one of 64
// observers and a context of its own) and 100 removals (`removeObserver`, oldest first), and 200
// persons released (their tokens cancelled with them) and 200 created in their place, each
// observed once on creation as the one it replaces was — so the number of live registrations
// stays about where it started. The same plan (generated untimed, before each tick, from one
// seed) runs against ObserveCore, the naive registry and Swift's Observation.

/// One operation of a tick's plan.
private struct ChurnOp {
    enum Kind: UInt8 { case set, observe, cancel, addTagged, removeTagged, replace }
    var kind: Kind
    var slot: Int32
    /// set: the value; addTagged / removeTagged: the context (its observer is `context % observers`).
    var argument: Int
}

/// What a tick does, and a model of the registrations it leaves: generates each tick's plan and
/// what the observers must be told.
private final class ChurnPlanner {
    static let persons = 20_000
    static let setsPerTick = 2_000
    static let observesPerTick = 300
    static let cancelsPerTick = 300
    static let taggedAddsPerTick = 100
    static let taggedRemovesPerTick = 100
    static let replacementsPerTick = 200
    static let observers = 64

    private var generator = SplitMix64(seed: 0x5E7_C4_0E)
    private var kinds: [ChurnOp.Kind]
    /// Live tokens and tagged registrations per person slot.
    private var tokens = [Int32](repeating: 1, count: ChurnPlanner.persons)
    private var tagged = [Int32](repeating: 0, count: ChurnPlanner.persons)
    private var taggedBySlot: [Int: [Int]] = [:]
    private var taggedSlot: [Int: Int] = [:]
    private var taggedQueue: [Int] = []
    private var queueHead = 0
    private var nextContext = 1
    private var base = runtimeSeed

    private(set) var liveTokens = ChurnPlanner.persons
    var liveTagged: Int { taggedSlot.count }
    private(set) var expectedCalls = 0
    private(set) var expectedTotal = 0
    private(set) var plan: [ChurnOp] = []

    init() {
        kinds = Array(repeating: .set, count: Self.setsPerTick)
            + Array(repeating: .observe, count: Self.observesPerTick)
            + Array(repeating: .cancel, count: Self.cancelsPerTick)
            + Array(repeating: .addTagged, count: Self.taggedAddsPerTick)
            + Array(repeating: .removeTagged, count: Self.taggedRemovesPerTick)
            + Array(repeating: .replace, count: Self.replacementsPerTick)
        plan.reserveCapacity(kinds.count + 64)
    }

    private func randomSlot() -> Int { Int(generator.next() % UInt64(Self.persons)) }

    /// Replaces `plan` with `ticks` ticks' operations and advances the model past them.
    func prepare(ticks: Int) {
        plan.removeAll(keepingCapacity: true)
        for _ in 0..<ticks {
            kinds.shuffle(using: &generator)
            for kind in kinds { append(kind) }
        }
        if queueHead > 4096 {
            taggedQueue.removeFirst(queueHead)
            queueHead = 0
        }
    }

    private func append(_ kind: ChurnOp.Kind) {
        switch kind {
        case .set:
            let slot = randomSlot()
            let listeners = Int(tokens[slot] + tagged[slot])
            expectedCalls += listeners
            expectedTotal &+= base &* listeners
            plan.append(ChurnOp(kind: .set, slot: Int32(slot), argument: base))
            base &+= 1
        case .observe:
            let slot = randomSlot()
            tokens[slot] += 1
            liveTokens += 1
            plan.append(ChurnOp(kind: .observe, slot: Int32(slot), argument: 0))
        case .cancel:
            guard liveTokens > 0 else { return }
            var slot = randomSlot()
            while tokens[slot] == 0 { slot = randomSlot() }
            tokens[slot] -= 1
            liveTokens -= 1
            plan.append(ChurnOp(kind: .cancel, slot: Int32(slot), argument: 0))
        case .addTagged:
            let slot = randomSlot()
            let context = nextContext
            nextContext += 1
            tagged[slot] += 1
            taggedSlot[context] = slot
            taggedBySlot[slot, default: []].append(context)
            taggedQueue.append(context)
            plan.append(ChurnOp(kind: .addTagged, slot: Int32(slot), argument: context))
        case .removeTagged:
            while queueHead < taggedQueue.count {
                let context = taggedQueue[queueHead]
                queueHead += 1
                guard let slot = taggedSlot[context] else { continue }   // went with its person
                removeTagged(context, slot: slot)
                return
            }
        case .replace:
            let slot = randomSlot()
            for context in taggedBySlot[slot] ?? [] { removeTagged(context, slot: slot) }
            liveTokens += 1 - Int(tokens[slot])
            tokens[slot] = 1
            plan.append(ChurnOp(kind: .replace, slot: Int32(slot), argument: 0))
        }
    }

    private func removeTagged(_ context: Int, slot: Int) {
        taggedSlot[context] = nil
        taggedBySlot[slot]?.removeAll { $0 == context }
        if taggedBySlot[slot]?.isEmpty == true { taggedBySlot[slot] = nil }
        tagged[slot] -= 1
        plan.append(ChurnOp(kind: .removeTagged, slot: Int32(slot), argument: context))
    }
}

/// One implementation's persons and registrations, driven by the plan.
private protocol ChurnWorld: AnyObject {
    func assign(_ slot: Int, _ value: Int)
    func observe(_ slot: Int)
    func cancel(_ slot: Int)
    func addTagged(_ slot: Int, context: Int)
    func removeTagged(_ slot: Int, context: Int)
    /// Releases the person (its tokens cancelled with it) and creates another, observed once.
    func replace(_ slot: Int)
    /// Cancels everything and releases the persons.
    func tearDown()
}

@inline(never)
private func run<World: ChurnWorld>(_ plan: [ChurnOp], on world: World) {
    for op in plan {
        let slot = Int(op.slot)
        switch op.kind {
        case .set: world.assign(slot, op.argument)
        case .observe: world.observe(slot)
        case .cancel: world.cancel(slot)
        case .addTagged: world.addTagged(slot, context: op.argument)
        case .removeTagged: world.removeTagged(slot, context: op.argument)
        case .replace: world.replace(slot)
        }
    }
}

/// An observer of the tagged registrations (held weakly by ObserveCore; kept alive here).
private final class ChurnObserver {}

/// ObserveCore: tokens from `observe`, tagged registrations with `addObserver`/`removeObserver`.
private final class KVOChurnWorld: ChurnWorld {
    let backend: ObservationBackend
    let sink: Sink
    var persons: [KVOCounter]
    var tokens: [[ObservationToken]]
    let observers = (0..<ChurnPlanner.observers).map { _ in ChurnObserver() }

    init(backend: ObservationBackend, sink: Sink) {
        self.backend = backend
        self.sink = sink
        persons = (0..<ChurnPlanner.persons).map { _ in KVOCounter(backend: backend) }
        tokens = persons.map { [observeKVO($0, sink)] }
    }

    func assign(_ slot: Int, _ value: Int) { set(persons[slot], value) }
    func observe(_ slot: Int) { tokens[slot].append(observeKVO(persons[slot], sink)) }
    func cancel(_ slot: Int) { tokens[slot].removeLast().cancel() }
    func addTagged(_ slot: Int, context: Int) {
        let sink = self.sink
        persons[slot].addObserver(observers[context % ChurnPlanner.observers], for: \.value,
                                  context: ObservationContext(rawValue: UInt(context))) { _, _, change in
            sink.add(change.newValue!)
        }
    }
    func removeTagged(_ slot: Int, context: Int) {
        persons[slot].removeObserver(observers[context % ChurnPlanner.observers], for: \.value,
                                     context: ObservationContext(rawValue: UInt(context)))
    }
    func replace(_ slot: Int) {
        for token in tokens[slot] { token.cancel() }
        tokens[slot].removeAll()
        persons[slot] = KVOCounter(backend: backend)
        tokens[slot].append(observeKVO(persons[slot], sink))
    }
    func tearDown() {
        for slotTokens in tokens { for token in slotTokens { token.cancel() } }
        tokens = []
        for person in persons { person.removeAllObservers() }
        persons = []
    }
}

/// The naive registry: tokens, and tagged registrations as tokens kept by context.
private final class NaiveChurnWorld: ChurnWorld {
    let sink: Sink
    var persons: [NaiveCounter]
    var tokens: [[NaiveToken]]
    var tagged: [Int: NaiveToken] = [:]

    init(sink: Sink) {
        self.sink = sink
        persons = (0..<ChurnPlanner.persons).map { _ in NaiveCounter() }
        tokens = persons.map { [observeNaive($0, sink)] }
    }

    func assign(_ slot: Int, _ value: Int) { set(persons[slot], value) }
    func observe(_ slot: Int) { tokens[slot].append(observeNaive(persons[slot], sink)) }
    func cancel(_ slot: Int) { tokens[slot].removeLast().cancel() }
    func addTagged(_ slot: Int, context: Int) { tagged[context] = observeNaive(persons[slot], sink) }
    func removeTagged(_ slot: Int, context: Int) { tagged.removeValue(forKey: context)?.cancel() }
    func replace(_ slot: Int) {
        for token in tokens[slot] { token.cancel() }
        tokens[slot].removeAll()
        persons[slot] = NaiveCounter()
        tokens[slot].append(observeNaive(persons[slot], sink))
    }
    func tearDown() {
        for slotTokens in tokens { for token in slotTokens { token.cancel() } }
        for token in tagged.values { token.cancel() }
        tokens = []
        tagged = [:]
        persons = []
    }
}

/// Observation has no cancellation: a subscription re-arms its tracking in `onChange` while it is
/// active, and a cancelled one stops re-arming (and counting) the next time it fires.
private final class TrackingSubscription: @unchecked Sendable {
    var active = true
    let sink: Sink
    init(_ sink: Sink) { self.sink = sink }
}

private func track(_ person: ObservationCounter, _ subscription: TrackingSubscription) {
    withObservationTracking {
        blackHole(person.value)
    } onChange: { [weak person] in
        guard subscription.active else { return }
        subscription.sink.calls &+= 1
        if let person { track(person, subscription) }
    }
}

private final class ObservationChurnWorld: ChurnWorld {
    let sink: Sink
    var persons: [ObservationCounter]
    var subscriptions: [[TrackingSubscription]]
    var tagged: [Int: TrackingSubscription] = [:]

    init(sink: Sink) {
        self.sink = sink
        persons = (0..<ChurnPlanner.persons).map { _ in ObservationCounter() }
        subscriptions = []
        subscriptions = persons.map { [subscribe($0)] }
    }

    private func subscribe(_ person: ObservationCounter) -> TrackingSubscription {
        let subscription = TrackingSubscription(sink)
        track(person, subscription)
        return subscription
    }

    func assign(_ slot: Int, _ value: Int) { set(persons[slot], value) }
    func observe(_ slot: Int) { subscriptions[slot].append(subscribe(persons[slot])) }
    func cancel(_ slot: Int) { subscriptions[slot].removeLast().active = false }
    func addTagged(_ slot: Int, context: Int) { tagged[context] = subscribe(persons[slot]) }
    func removeTagged(_ slot: Int, context: Int) { tagged.removeValue(forKey: context)?.active = false }
    func replace(_ slot: Int) {
        for subscription in subscriptions[slot] { subscription.active = false }
        subscriptions[slot].removeAll()
        persons[slot] = ObservationCounter()
        subscriptions[slot].append(subscribe(persons[slot]))
    }
    func tearDown() {
        for slotSubscriptions in subscriptions { for subscription in slotSubscriptions { subscription.active = false } }
        for subscription in tagged.values { subscription.active = false }
        subscriptions = []
        tagged = [:]
        persons = []
    }
}

/// `service.churn`: one op is one tick (see the top of this file).
struct ServiceChurnScenario: Scenario {
    var name: String { "service.churn" }
    var n: Int { ChurnPlanner.persons }
    var kind: ScenarioKind { .latency }
    var unit: String { "ns per tick" }
    var summary: String {
        "20,000 persons; per tick 2,000 sets, 300 observes + 300 cancels, 100 tagged adds + 100 removes, "
            + "200 persons released + 200 created"
    }
    var impls: [Impl] { [.c, .swift, .naive, .observation] }
    var peer: Impl? { .naive }
    var notes: [String] {
        ["in a seeded random order, the same for every impl: sets on random persons; token observations of random "
         + "persons and cancellations of random live tokens; observer-tagged adds (one of 64 observers, a context of "
         + "its own) and removals, oldest first (naive: tokens kept by context; observation: a subscription flag); "
         + "released persons' tokens are cancelled with them (their tagged registrations removed first), and each "
         + "new person is observed once, so about 20,000 tokens stay live. Every handler adds the new value to a "
         + "counter. Observation cannot cancel a tracking: a cancelled subscription stops re-arming when it next "
         + "fires, and since onChange runs before the store it counts calls only.",
         "verified at tear-down: every set was delivered to exactly the registrations live at that point (calls, and "
         + "for c, swift and naive the sum of the values), and the registry holds exactly the live tokens and tagged "
         + "registrations of the model (c, swift, naive)."]
    }

    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling {
        Sampling(measureNs: config.measureNs / 3, warmupNs: config.warmupNs / 3, minSamples: config.minSamples,
                 fixedBatch: 1)
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let sink = Sink()
        let planner = ChurnPlanner()
        let registrationsBefore: () -> Int
        let runBatch: (Int) -> Void
        let tearDownWorld: () -> Void
        switch impl {
        case .c, .swift:
            let before = ObservationRuntime.liveRegistrationCount
            registrationsBefore = { ObservationRuntime.liveRegistrationCount - before }
            let world = KVOChurnWorld(backend: backend(impl), sink: sink)
            runBatch = { _ in run(planner.plan, on: world) }
            tearDownWorld = { world.tearDown() }
        case .naive:
            freshNaiveTable()
            let before = NaiveRegistry.shared.count
            registrationsBefore = { NaiveRegistry.shared.count - before }
            let world = NaiveChurnWorld(sink: sink)
            runBatch = { _ in run(planner.plan, on: world) }
            tearDownWorld = {
                world.tearDown()
                freshNaiveTable()
            }
        case .observation:
            registrationsBefore = { -1 }
            let world = ObservationChurnWorld(sink: sink)
            runBatch = { _ in run(planner.plan, on: world) }
            tearDownWorld = { world.tearDown() }
        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
        return Fixture(runBatch: runBatch, tearDown: {
            let live = registrationsBefore()
            tearDownWorld()
            sink.consume()
            if let problem = mismatch("\(label) deliveries", sink.calls, planner.expectedCalls) { return problem }
            if impl == .observation { return nil }
            if let problem = mismatch("\(label) sum of delivered values", sink.total, planner.expectedTotal) {
                return problem
            }
            let expected = planner.liveTokens + planner.liveTagged
            return live == expected ? nil
                : "\(label): the registry holds \(live) registrations, the model \(expected) (tokens and tagged)"
        }, prepareBatch: { planner.prepare(ticks: $0) })
    }
}
