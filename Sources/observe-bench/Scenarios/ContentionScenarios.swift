import Foundation
@_spi(Testing) import ObserveCore
import Synchronization

// Scaling rows next to threads.2-distinct: two threads on the *same* object.
// `threads.2-same-object` sets it from both; `threads.2-observe-churn` sets it from one while the
// other registers and cancels observers on it.

// MARK: - threads.2-same-object

/// What the two fixtures of one `threads.2-same-object` run share: the object, its observer and
/// the observer's per-thread counters. The last fixture to tear down cancels the observer.
private final class SharedTarget: @unchecked Sendable {
    let set: (Int) -> Void
    let cancel: () -> Void
    let sinks: ParitySinks
    let users = Atomic<Int>(1)

    init(set: @escaping (Int) -> Void, cancel: @escaping () -> Void, sinks: ParitySinks) {
        self.set = set
        self.cancel = cancel
        self.sinks = sinks
    }

    func release() {
        if users.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { cancel() }
    }
}

/// Hands the object made by thread 0's fixture to thread 1's (which may be built first, on
/// another thread: it waits).
private final class SharedTargetExchange: @unchecked Sendable {
    static let shared = SharedTargetExchange()
    private let pending = Mutex<SharedTarget?>(nil)

    func publish(_ target: SharedTarget) { pending.withLock { $0 = target } }

    func take() -> SharedTarget {
        while true {
            if let target = pending.withLock({ state -> SharedTarget? in
                defer { state = nil }
                return state
            }) {
                target.users.add(1, ordering: .acquiringAndReleasing)
                return target
            }
            sched_yield()
        }
    }

    /// Calibration builds thread 0's fixture alone: its object is never taken.
    func withdraw(_ target: SharedTarget) { pending.withLock { if $0 === target { $0 = nil } } }
}

/// `threads.2-same-object`: two threads set the same observed object (one inline observer), each
/// M sets; one thread does the same total work (2M sets on that object). `speedup` = throughput
/// with two threads / throughput with one.
struct ThreadsSameObjectScenario: Scenario {
    var name: String { "threads.2-same-object" }
    var n: Int { 2 }
    var kind: ScenarioKind { .threads }
    var summary: String {
        "2 threads setting the same observed object (1 inline observer) vs 1 thread doing the same total work"
    }
    var impls: [Impl] { [.plain, .c, .swift, .naive] }
    var sharedPath: [Impl] { [.c, .swift] }
    var notes: [String] {
        ["the object keeps its value in an Atomic<Int> and announces the change after the exchange (a stored "
         + "property set from two threads would be a data race); plain is that exchange alone, so its speedup is what "
         + "sharing the object's cache line costs by itself. Verified at tear-down: the observer was told every set "
         + "of each thread with its value (each thread sets values of its own parity, counted apart).",
         "target (c): speedup >= 0.5. Two threads on one object cannot scale — they take turns on the lines they "
         + "share (the value; the registrar's dispatch-cache word is only read) — but together they must keep at "
         + "least half the one-thread throughput: a collapse below that means queueing (a lock, a retry loop), not "
         + "the cost of a shared line, which plain shows.", setPathNote]
    }

    func makeThreadFixture(_ impl: Impl, thread index: Int, _ config: RunConfig) -> Fixture {
        let exchange = SharedTargetExchange.shared
        let target: SharedTarget
        if index == 0 {
            let sinks = ParitySinks()
            switch impl {
            case .c, .swift:
                let object = SharedKVOCounter(backend: backend(impl))
                let token = object.observe(\.value) { _, change in sinks.add(change.newValue!) }
                target = SharedTarget(set: { set(object, $0) }, cancel: { token.cancel() }, sinks: sinks)
            case .naive:
                let object = SharedNaiveCounter()
                let token = NaiveRegistry.shared.observe(object, property: NaiveCounter.valueProperty) {
                    (_: SharedNaiveCounter, _: Int, new: Int) in sinks.add(new)
                }
                target = SharedTarget(set: { set(object, $0) }, cancel: { token.cancel() }, sinks: sinks)
            case .plain:
                let object = SharedPlainCounter()
                target = SharedTarget(set: { set(object, $0) }, cancel: { blackHole(object.value) }, sinks: sinks)
            default:
                preconditionFailure("\(impl) does not apply to \(name)")
            }
            exchange.publish(target)
        } else {
            target = exchange.take()
        }
        let label = "\(name)/\(impl.rawValue) thread \(index)"
        let setValue = target.set
        var base = runtimeSeed &+ index &* 0x1_0000
        var operations = 0
        var expectedTotal = 0
        return Fixture(runBatch: { count in
            // Thread k sets values whose low bit is k.
            for i in 0..<count { setValue((base &+ i) &<< 1 | index) }
            expectedTotal &+= wrappingSum(from: base, count: count) &* 2 &+ index &* count
            base &+= count
            operations += count
        }, tearDown: {
            exchange.withdraw(target)
            let problem = impl == .plain ? nil
                : mismatch("\(label) deliveries", target.sinks.calls(index), operations)
                    ?? mismatch("\(label) sum of delivered values", target.sinks.total(index), expectedTotal)
            target.release()
            return problem
        })
    }
}

// MARK: - threads.2-observe-churn

/// A thread that runs `body` whenever it is allowed to, until `finish()`: `allow(_:)` raises the
/// number of runs allowed so far, and the thread yields its core while it has done that many.
private final class PacedLoop: @unchecked Sendable {
    private let stop = Atomic<Bool>(false)
    private let allowed = Atomic<Int>(0)
    private let cycles = Atomic<Int>(0)
    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the thread and returns once it runs.
    init(_ body: @escaping () -> Void) {
        let work = Unchecked(body)
        let thread = Thread { [self] in
            started.signal()
            var done = 0
            while !stop.load(ordering: .relaxed) {
                if done < allowed.load(ordering: .relaxed) {
                    work.value()
                    done += 1
                    cycles.store(done, ordering: .relaxed)
                } else {
                    sched_yield()
                }
            }
            finished.signal()
        }
        thread.start()
        started.wait()
    }

    func allow(_ runs: Int) { allowed.store(runs, ordering: .relaxed) }

    /// Waits (yielding the core) until `body` has run `runs` times, or for at most `limitNs`.
    func wait(until runs: Int, limitNs: UInt64 = 20_000_000) {
        let end = monotonicNanoseconds() + limitNs
        while cycles.load(ordering: .relaxed) < runs && monotonicNanoseconds() < end { sched_yield() }
    }

    /// Stops the loop, waits for the thread to leave it, and returns how many times `body` ran.
    func finish() -> Int {
        stop.store(true, ordering: .relaxed)
        finished.wait()
        return cycles.load(ordering: .relaxed)
    }
}

/// `threads.2-observe-churn`: the measuring thread sets a property that one observer watches,
/// while a second thread registers another observer on the same object and cancels it, in a loop,
/// for the whole life of the fixture. The figure is ns per set on the measuring thread.
struct ThreadsObserveChurnScenario: Scenario {
    /// Sets per observe + cancel of the churning thread.
    static let setsPerChurn = 32
    var name: String { "threads.2-observe-churn" }
    var n: Int { 2 }
    var kind: ScenarioKind { .latency }
    var summary: String {
        "one thread sets an observed property while another observes/cancels on the same object: ns per set"
    }
    var impls: [Impl] { [.c, .swift, .naive] }
    var peer: Impl? { .naive }
    var referenceScenario: String? { "set.1" }
    var notes: [String] {
        ["the setter's object has one permanent observer (as in set.1); the other thread observes the same property "
         + "with a second observer and cancels it, once per \(Self.setsPerChurn) sets (it may run one batch's share "
         + "ahead, during the next timed batch, and is given time to catch up between batches, untimed). Each "
         + "registration change invalidates what the setter's next set reads. The figure is what a set costs while "
         + "the other thread churns as far as the machine lets both run at once: with no spare core, the churn "
         + "happens between batches and the figure drops toward set.1's. Verified at tear-down: the permanent observer was "
         + "told every set with its value (nothing lost to the churn), the churning observers no more sets than "
         + "were made, the churning thread did register, and nothing is left registered."]
    }
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling { shortSampling(config) }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let label = "\(name)/\(impl.rawValue)"
        let sink = Sink()
        // Called on the setting thread only (inline delivery).
        let churnSink = Sink()
        var base = runtimeSeed
        var operations = 0
        var expectedTotal = 0
        let runBatch: (Int) -> Void
        let loop: PacedLoop
        let cancel: () -> Void
        let leftOn: () -> Int
        /// The timed sets, the same for every impl (`set` is the impl's @inline(never) setter).
        func sets<Counter>(_ counter: Counter, _ set: @escaping (Counter, Int) -> Void) -> (Int) -> Void {
            { count in
                for i in 0..<count { set(counter, base &+ i) }
                expectedTotal &+= wrappingSum(from: base, count: count)
                base &+= count
                operations += count
            }
        }
        switch impl {
        case .c, .swift:
            let counter = KVOCounter(backend: backend(impl))
            let token = observeKVO(counter, sink)
            let shared = Unchecked(counter), churn = Unchecked(churnSink)
            loop = PacedLoop {
                let token = shared.value.observe(\.value) { _, change in churn.value.add(change.newValue!) }
                token.cancel()
            }
            runBatch = sets(counter, set)
            cancel = { token.cancel() }
            leftOn = { counter.observationCount }
        case .naive:
            let counter = NaiveCounter()
            let token = observeNaive(counter, sink)
            let shared = Unchecked(counter), churn = Unchecked(churnSink)
            loop = PacedLoop {
                let token = NaiveRegistry.shared.observe(shared.value, property: NaiveCounter.valueProperty) {
                    (_: NaiveCounter, _: Int, new: Int) in churn.value.add(new)
                }
                token.cancel()
            }
            runBatch = sets(counter, set)
            cancel = { token.cancel() }
            leftOn = { 0 }
        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
        // The churning thread is allowed one batch's share ahead: it runs while the next batch is
        // timed; after each batch (untimed) it is given time to catch up, so the pace holds even
        // when the machine has no spare core for it (then its work is not concurrent with the sets).
        let pace = ThreadsObserveChurnScenario.setsPerChurn
        loop.allow(8)
        let finishBatch: (Int) -> Void = { count in
            let owed = operations / pace
            loop.wait(until: owed)
            loop.allow(owed + max(1, count / pace))
        }
        return Fixture(runBatch: runBatch, tearDown: {
            let cycles = loop.finish()
            cancel()
            sink.consume()
            churnSink.consume()
            if let problem = mismatch("\(label) deliveries to the permanent observer", sink.calls, operations)
                ?? mismatch("\(label) sum of values delivered to the permanent observer", sink.total, expectedTotal) {
                return problem
            }
            if churnSink.calls > operations {
                return "\(label): the churning observers were told \(churnSink.calls) sets, more than the \(operations) made"
            }
            if cycles == 0 { return "\(label): the churning thread made no registration while the sets ran" }
            let left = leftOn()
            return left == 0 ? nil : "\(label): \(left) registration(s) left on the object"
        }, finishBatch: finishBatch)
    }
}
