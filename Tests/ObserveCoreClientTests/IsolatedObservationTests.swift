import ObserveCore
import Testing

// Written as a Swift 6 client would write it: no `@unchecked`, no `nonisolated(unsafe)`. The
// target builds in Swift 6 language mode (complete strict concurrency); the compiler checks
// every hop below.

/// A model that is not `Sendable`: it lives inside `Station`, which alone mutates it.
final class Thermometer: KeyValueObservable {
    let kvoRegistrar = KeyValueRegistrar()
    static let celsius = ObservableKey(\Thermometer.celsius)
    var celsius = 0 {
        willSet { kvoRegistrar.willSet(Thermometer.celsius, of: self, from: celsius) }
        didSet { kvoRegistrar.didSet(Thermometer.celsius, of: self, from: oldValue, to: celsius) }
    }
}

/// Owns the thermometer; observers register through it, so the model never leaves the actor.
actor Station {
    private let thermometer = Thermometer()

    func set(_ celsius: Int) { thermometer.celsius = celsius }

    /// A main-actor observation of the confined model: only the token and the changes leave.
    func observeCelsius(_ handler: @escaping @MainActor @Sendable (ObservedChange<Int>) -> Void) -> ObservationToken {
        thermometer.observe(\.celsius, on: MainActor.shared, handler)
    }

    /// An observation isolated to another actor.
    func observeCelsius(on log: TemperatureLog) -> ObservationToken {
        thermometer.observe(\.celsius, options: [.old, .new], on: log) { log, change in
            log.record(change.oldValue!, change.newValue!)
        }
    }
}

/// A view model: main-actor state updated by the observation without any hop written by hand.
@MainActor
final class ThermometerViewModel {
    private(set) var texts: [String] = []
    private var token: ObservationToken?

    func show(_ station: Station) async {
        token = await station.observeCelsius { [weak self] change in
            self?.texts.append("\(change.newValue!) °C")
        }
    }

    func stop() { token?.cancel() }
}

actor TemperatureLog {
    private(set) var steps: [String] = []
    func record(_ old: Int, _ new: Int) { steps.append("\(old)->\(new)") }
}

/// Keeps a replica of an observed array by applying every change it is told, in order.
actor Replica {
    private(set) var contents: [Int]
    private(set) var applied = 0

    init(_ contents: [Int]) { self.contents = contents }

    func apply(_ change: ArrayChange<Int>) {
        contents = change.applying(to: contents) ?? contents
        applied += 1
    }

    /// Applies every change of the stream until it ends or the task is cancelled.
    func consume(_ changes: ArrayChanges<Int>) async {
        for await change in changes { apply(change) }
    }
}

/// Waits, a millisecond at a time and for at most about ten seconds, until `condition` holds
/// (deliveries here are asynchronous); false if it never did. Bounded so that a lost delivery
/// fails the test instead of hanging the run.
func eventually(isolation: isolated (any Actor)? = #isolation, _ condition: () async -> Bool) async -> Bool {
    for _ in 0..<10_000 {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return await condition()
}

@Suite("Swift 6 client: observation isolated to the main actor and to actors")
struct IsolatedObservationTests {
    @Test("a main-actor view model observes a model confined to another actor, in order")
    @MainActor
    func mainActorViewModel() async {
        let station = Station()
        let viewModel = ThermometerViewModel()
        await viewModel.show(station)
        for celsius in [18, 19, 21] { await station.set(celsius) }
        #expect(await eventually { viewModel.texts.count == 3 })
        #expect(viewModel.texts == ["18 °C", "19 °C", "21 °C"])
        viewModel.stop()
        await station.set(31)
        #expect(viewModel.texts == ["18 °C", "19 °C", "21 °C"])
    }

    @Test("a handler isolated to an actor receives every change, one at a time, in order")
    func actorHandler() async {
        let station = Station()
        let log = TemperatureLog()
        let token = await station.observeCelsius(on: log)
        for celsius in 1...50 { await station.set(celsius) }
        #expect(await eventually { await log.steps.count == 50 })
        #expect(await log.steps == (1...50).map { "\($0 - 1)->\($0)" })
        token.cancel()
        #expect(token.isCancelled)
    }

    @Test("changes already made are not delivered once the token is cancelled on the main actor")
    @MainActor
    func cancelOnTheMainActorDropsWhatIsPending() async {
        let thermometer = Thermometer()          // confined to the main actor here
        var heard: [Int] = []
        let token = thermometer.observe(\.celsius, on: MainActor.shared) { change in heard.append(change.newValue!) }
        thermometer.celsius = 1
        thermometer.celsius = 2                  // both posted; delivery needs the main actor, which is busy here
        token.cancel()
        for _ in 0..<20 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(20))
        #expect(heard.isEmpty)
    }

    @Test("a main-actor observation silenced by its writer hears only the changes made outside the scope")
    @MainActor
    func silencedWriterOnTheMainActor() async {
        let thermometer = Thermometer()
        var heard: [Int] = []
        let token = thermometer.observe(\.celsius, on: MainActor.shared) { change in heard.append(change.newValue!) }
        withoutNotifying(token) { thermometer.celsius = 1 }      // the view's own edit: never posted
        thermometer.celsius = 2
        #expect(await eventually { heard == [2] })
        try? await Task.sleep(for: .milliseconds(20))
        #expect(heard == [2])
        token.cancel()
    }

    @Test("a handler that cancels its observation on its actor is not called again, pending changes included")
    func cancelOnTheActor() async {
        let observer = SelfObserver()
        await observer.run(changes: 20)
        #expect(await eventually { await observer.calls >= 1 })
        try? await Task.sleep(for: .milliseconds(20))
        #expect(await observer.calls == 1)
    }

    @Test("an actor keeps a replica of an observed array from its change stream")
    func actorConsumesArrayStream() async {
        let numbers = ObservableArray(Array(0..<100))
        let replica = Replica(Array(numbers))
        let changes = numbers.changes()
        let consumer = Task { await replica.consume(changes) }
        for step in 0..<200 {
            switch step % 4 {
            case 0: numbers.insert(1_000 + step, at: Int.random(in: 0...numbers.count))
            case 1: numbers.remove(at: Int.random(in: 0..<numbers.count))
            case 2: numbers[Int.random(in: 0..<numbers.count)] = -step
            default:
                let from = Int.random(in: 0..<numbers.count)
                numbers.move(from: from, to: (from + Int.random(in: 1..<numbers.count)) % numbers.count)
            }
        }
        #expect(await eventually { await replica.applied == 200 })
        #expect(await replica.contents == Array(numbers))
        consumer.cancel()
    }

    @Test("an array observed with a handler isolated to an actor: the replica ends equal")
    func arrayObservedOnActor() async {
        let numbers = ObservableArray(Array(0..<50))
        let replica = Replica(Array(numbers))
        let token = numbers.observe(on: replica) { replica, change in replica.apply(change) }
        numbers.performBatchUpdates { numbers in
            numbers.append(contentsOf: [7, 8, 9])
            numbers.remove(at: 3)
            numbers.swapAt(0, 10)
        }
        numbers.reverse()
        numbers.removeAll { $0 % 3 == 0 }
        #expect(await eventually { await replica.applied == 3 })
        #expect(await replica.contents == Array(numbers))
        token.cancel()
    }

    @Test("an array observed on the main actor")
    @MainActor
    func arrayObservedOnMainActor() async {
        let numbers = ObservableArray([1, 2, 3])
        let kinds = Kinds()
        let token = numbers.observe(on: MainActor.shared) { change in kinds.all.append(change.kind) }
        numbers.append(4)
        numbers.removeFirst()
        #expect(await eventually { kinds.all.count == 2 })
        #expect(kinds.all == [.append, .remove])
        token.cancel()
    }
}

@MainActor
final class Kinds {
    var all: [ArrayChange<Int>.Kind] = []
}

/// Owns a thermometer and observes it on itself: the changes it makes pile up in the mailbox
/// while it is busy, and its handler cancels the observation at the first call.
actor SelfObserver {
    private let thermometer = Thermometer()
    private var token: ObservationToken?
    private(set) var calls = 0

    func run(changes: Int) {
        token = thermometer.observe(\.celsius, on: self) { me, _ in me.heard() }
        for celsius in 1...changes { thermometer.celsius = celsius }
    }

    private func heard() {
        calls += 1
        token?.cancel()
    }
}
