@_spi(Testing) import ObserveCore
import SeededRandom
import Synchronization

// `register.same-key.*`: N registrations on ONE property of ONE object, then all N removed in a
// seeded random order. One op is the whole cycle (N adds, N removes); figures are per
// registration (the op's time / N), so a registry whose add or remove costs O(1) whatever the
// key already holds shows the same figure at every N, and one that scans the key's list shows
// a figure that grows with N. Three rows, one per way of telling registrations of one key apart:
// - tokens: `observe(\.value)` N times, then the tokens cancelled;
// - observers: N distinct observer objects, `addObserver(observer, for: \.value)`, then
//   `removeObserver(observer, for: \.value)`;
// - contexts: one observer with N distinct contexts (1 ... N), then
//   `removeObserver(observer, for: \.value, context:)`.
// Sizes: `--registrations` (default 2,000 / 8,000 / 32,000). Target (C path): per registration
// at 32k at most 2.5x its cost at 8k (a scan of the key's list would read about 4x).

/// How the registrations of one `register.same-key.*` row are made and removed.
enum SameKeyShape: String, CaseIterable {
    case tokens
    case observers
    case contexts

    var name: String { "\(SameKeyScenario.family).\(rawValue)" }

    /// What one op does, for the table.
    var summary: String {
        switch self {
        case .tokens:
            return "N tokens from observe(\\.value) on one property of one object, then each cancelled (random order)"
        case .observers:
            return "N observers addObserver(_:for: \\.value) on one property of one object, then each "
                + "removeObserver(_:for:) (random order)"
        case .contexts:
            return "one observer, N contexts addObserver(_:for: \\.value, context:) on one property of one object, "
                + "then each removeObserver(_:for:context:) (random order)"
        }
    }
}

/// One `register.same-key.<shape>` row at one size N.
struct SameKeyScenario: Scenario {
    static let family = "register.same-key"
    /// Registrations per key in the default suite, and in `--quick`.
    static let defaultCounts = [2_000, 8_000, 32_000]
    static let quickCounts = [250, 1_000]

    let shape: SameKeyShape
    let n: Int
    var name: String { shape.name }
    var kind: ScenarioKind { .latency }
    var summary: String { shape.summary }
    var unit: String { "ns per registration" }
    var sizeLabel: String? { "N=\(groupThousands(n))" }
    var sizeOption: String { "--registrations N" }
    var impls: [Impl] { shape == .tokens ? [.c, .swift, .naive] : [.c, .swift] }
    /// Above this N, naive runs only when `--impls` names it: its removals scan the key's list,
    /// so an op costs O(N²) (about 180 ms at 32k, several of them per repetition).
    static let naiveDefaultLimit = 8_192
    var optInImpls: [Impl] { n > Self.naiveDefaultLimit ? [.naive] : [] }
    var peer: Impl? { shape == .tokens ? .naive : nil }
    var ratioStyle: RatioStyle { .speedupOverPeer }
    var unsupported: [(Impl, String)] {
        switch shape {
        case .tokens:
            return [(.observation, "Observation has no way to remove a tracking: it ends only when it fires or its "
                     + "object dies")]
        case .observers, .contexts:
            return [(.naive, "the naive registry has no observer-tagged registrations (service.churn keeps tokens "
                     + "by tag instead, which is register.same-key.tokens plus a Dictionary)")]
        }
    }
    var notes: [String] {
        var notes = ["one op = N registrations on one property of one object, then all N removed in a seeded random "
                     + "order (the same for every impl); figures are per registration (add + remove) = the op's "
                     + "time / N. Every handler is a closure made per registration. Target (c): per registration "
                     + "at N=32,000 at most 2.5x its cost at N=8,000 (a scan of the key's list would read ~4x).",
                     "checked: after every op the registry holds what it held before; at the first repetition's "
                     + "tear-down one more cycle, with sets, checks that the N registrations are N distinct ones and "
                     + "that after removing half of them exactly the other half is still called."]
        if shape == .tokens {
            notes.append("naive removes by scanning the key's list for the token's id and closing the gap: "
                         + "O(registrations left) per removal, so O(N²) per op; above N=\(groupThousands(Self.naiveDefaultLimit)) "
                         + "it runs only when --impls names it.")
        }
        return notes
    }

    /// Each op is N registrations and N removals: one op per timed batch, at least 3 per
    /// repetition, `--array-measure-ms` per cell per repetition; no warm-up after the first
    /// repetition (which warms up one op).
    func sampling(_ impl: Impl, _ config: RunConfig) -> Sampling {
        Sampling(measureNs: config.arrayMeasureNs, warmupNs: 0, minSamples: 3, fixedBatch: 1)
    }

    /// The (row, N, impl) cells whose checked cycle has run: once per process is enough, and at
    /// 32k the cycle costs as much as a timed op.
    private static let checked = Mutex<Set<String>>([])

    /// The removal order: a seeded permutation of 0 ..< N, the same for every impl at this N.
    static func order(shape: SameKeyShape, n: Int) -> [Int] {
        var generator = SplitMix64(seed: 0x5A3E_0C1E &+ UInt64(n) &* 7
                                       &+ UInt64(SameKeyShape.allCases.firstIndex(of: shape)!))
        return Array(0..<n).shuffled(using: &generator)
    }

    func makeFixture(_ impl: Impl, _ config: RunConfig) -> Fixture {
        let n = self.n, label = "\(name)/\(impl.rawValue)"
        let order = Self.order(shape: shape, n: n)
        let sink = Sink()
        let driver: SameKeyDriver
        switch impl {
        case .c, .swift:
            driver = kvoDriver(backend: backend(impl), n: n, sink: sink)
        case .naive:
            precondition(shape == .tokens, "naive has no \(shape.rawValue) registrations")
            driver = naiveDriver(n: n, sink: sink)
        default:
            preconditionFailure("\(impl) does not apply to \(name)")
        }
        let baseline = driver.live()
        var problem: String?

        return Fixture(runBatch: { count in
            for _ in 0..<count {
                for i in 0..<n { driver.add(i) }
                for i in order { driver.remove(i) }
                driver.endCycle()
            }
        }, tearDown: {
            guard Self.checked.withLock({ $0.insert("\(label)@\(n)").inserted }) else {
                driver.tearDown()
                return problem ?? mismatch("\(label) calls", sink.calls, 0)
            }
            // One checked cycle: N distinct registrations, each called once per set with its own
            // tag (i + 1); after removing the first half of the order, exactly the second half.
            sink.consume()
            let callsBefore = sink.calls, totalBefore = sink.total
            for i in 0..<n { driver.add(i) }
            let registered = driver.live() - baseline
            driver.set(runtimeSeed)
            let half = n / 2
            for i in order[..<half] { driver.remove(i) }
            driver.set(runtimeSeed &+ 1)
            for i in order[half...] { driver.remove(i) }
            driver.set(runtimeSeed &+ 2)
            driver.endCycle()
            let left = driver.live() - baseline
            driver.tearDown()
            sink.consume()
            let survivors = order[half...].reduce(0) { $0 + $1 + 1 }
            return problem
                ?? mismatch("\(label) registrations made", registered, n)
                ?? mismatch("\(label) calls", sink.calls - callsBefore, n + (n - half))
                ?? mismatch("\(label) sum of tags", sink.total &- totalBefore, n * (n + 1) / 2 + survivors)
                ?? mismatch("\(label) registrations left", left, 0)
        }, finishBatch: { _ in
            if problem == nil, case let left = driver.live() - baseline, left != 0 {
                problem = "\(label): \(left) registration(s) left after an op that removed every one"
            }
        }, itemsPerOp: n)
    }

    /// ObserveCore: a fresh object with the given backend; tokens, N observers or N contexts.
    private func kvoDriver(backend: ObservationBackend, n: Int, sink: Sink) -> SameKeyDriver {
        let counter = KVOCounter(backend: backend)
        let live = { ObservationRuntime.liveRegistrationCount }
        let assign: (Int) -> Void = { value in set(counter, value) }
        switch shape {
        case .tokens:
            var tokens: [ObservationToken] = []
            tokens.reserveCapacity(n)
            return SameKeyDriver(add: { i in
                tokens.append(counter.observe(\.value, options: [.new]) { _, _ in sink.add(i + 1) })
            }, remove: { i in
                tokens[i].cancel()
            }, endCycle: {
                tokens.removeAll(keepingCapacity: true)
            }, set: assign, live: live, tearDown: {
                tokens = []
                blackHole(counter.value)
            })
        case .observers:
            let observers = (0..<n).map { _ in SameKeyObserver() }
            return SameKeyDriver(add: { i in
                counter.addObserver(observers[i], for: \.value) { _, _, _ in sink.add(i + 1) }
            }, remove: { i in
                counter.removeObserver(observers[i], for: \.value)
            }, endCycle: {}, set: assign, live: live, tearDown: {
                blackHole(observers.count &+ counter.value)
            })
        case .contexts:
            let observer = SameKeyObserver()
            return SameKeyDriver(add: { i in
                counter.addObserver(observer, for: \.value, context: .init(rawValue: UInt(i + 1))) { _, _, _ in
                    sink.add(i + 1)
                }
            }, remove: { i in
                counter.removeObserver(observer, for: \.value, context: .init(rawValue: UInt(i + 1)))
            }, endCycle: {}, set: assign, live: live, tearDown: {
                withExtendedLifetime(observer) { blackHole(counter.value) }
            })
        }
    }

    /// The naive registry: N tokens on one (object, property).
    private func naiveDriver(n: Int, sink: Sink) -> SameKeyDriver {
        let counter = NaiveCounter()
        var tokens: [NaiveToken] = []
        tokens.reserveCapacity(n)
        return SameKeyDriver(add: { i in
            tokens.append(NaiveRegistry.shared.observe(counter, property: NaiveCounter.valueProperty) {
                (_: NaiveCounter, _: Int, _: Int) in sink.add(i + 1)
            })
        }, remove: { i in
            tokens[i].cancel()
        }, endCycle: {
            tokens.removeAll(keepingCapacity: true)
        }, set: { value in set(counter, value) },
        live: { NaiveRegistry.shared.count }, tearDown: {
            tokens = []
            blackHole(counter.value)
            NaiveRegistry.shared.releaseStorageIfEmpty()
        })
    }
}

/// What a `register.same-key.*` fixture does, per impl and shape. `add(i)` makes registration i
/// (its handler adds i + 1 to the sink), `remove(i)` removes it, `endCycle()` runs after the N
/// removals (drops the spent tokens).
private struct SameKeyDriver {
    var add: (Int) -> Void
    var remove: (Int) -> Void
    var endCycle: () -> Void
    var set: (Int) -> Void
    var live: () -> Int
    var tearDown: () -> Void
}

/// An observer of the observer-tagged rows (held weakly by ObserveCore; kept alive by the fixture).
private final class SameKeyObserver {}
