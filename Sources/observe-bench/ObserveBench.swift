import ArgumentParser
import Foundation

@main
struct ObserveBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "observe-bench",
        abstract: "Measure ObserveCore (C and pure-Swift registries) side by side with a naive registry, "
            + "Swift's Observation, OpenCombine and a plain stored property, in one process.",
        discussion: """
            Implementations (--impls):
              c            ObserveCore, KeyValueRegistrar(backend: .c)
              swift        ObserveCore, KeyValueRegistrar(backend: .swift):
                           the same registry in plain Swift
              naive        a Mutex-guarded Dictionary keyed by
                           (object, property id) of closures
              observation  Swift's Observation: @Observable and
                           withObservationTracking re-armed in onChange
              opencombine  OpenCombine's @Published and sink (in
                           array.element-change only when --impls names it)
              plain        a plain stored Int property set the same way
                           (the floor for set.0); in array scenarios, a
                           plain Swift Array nobody observes
              per-element-naive
                           arrays: one naive registration per element (the
                           seeds' approach), index from a Dictionary map
                           maintained on every mutation
              scan         array.element-change: one naive registration per
                           element, index by firstIndex(where: ===)
              diff         array.batch-100: the edits on a plain [Int] of
                           ids, then after.difference(from: before)

            Scenarios (--scenarios; default: set.0, set.1, set.10, set.100, set.1-macro,
            register.remove, the register.same-key.* rows at each
            --registrations size, register.memory, the threads.2-* rows, the
            capability rows, and the array scenarios below at each
            --elements size):
              set.N               one property set with N inline observers
                                  (any N); each observer adds the new value
                                  to a counter
              set.N-macro         the same on a class declared with
                                  @KeyValueObservable (c and swift; default:
                                  set.1-macro). The bench carries the macro's
                                  expansion, checked by a test, so it does
                                  not depend on swift-syntax. Target: within
                                  10% of set.N
              register.remove     observe one property, then cancel the
                                  registration (one op = both)
              register.same-key.tokens, register.same-key.observers,
              register.same-key.contexts (or register.same-key: all three)
                                  N registrations on ONE property of ONE
                                  object, then all removed in a seeded random
                                  order; one op = the N adds and N removes,
                                  figures in ns per registration (add +
                                  remove). tokens: observe(\\.value) N times,
                                  tokens cancelled; observers: N distinct
                                  observers addObserver(_:for:), then
                                  removeObserver(_:for:); contexts: one
                                  observer, N contexts 1...N,
                                  removeObserver(_:for:context:). c and swift;
                                  naive on tokens (its removal scans the key's
                                  list: above N=8,192 only when --impls names
                                  it). Targets (c): per registration at 32k
                                  <= 2.5x its cost at 8k
              register.memory     heap bytes held per live registration
                                  (malloc accounting: glibc mallinfo2(),
                                  uordblks + hblkhd; RSS where unavailable)
              threads.2-distinct  two threads each setting its own observed
                                  object vs one thread doing the same total
                                  work; speedup = throughput(2)/throughput(1)
              threads.2-same-object
                                  the same with both threads setting one object
                                  (target: speedup >= 0.5, no collapse)
              threads.2-observe-churn
                                  one thread sets an observed property while
                                  another observes/cancels on the same object
                                  (ns per set)
              chain.leaf-set.2, chain.leaf-set.3 (or chain.leaf-set: both)
                                  set the leaf of an observed key path chain
                                  through optional links, depth 2 / 3
              chain.relink        replace the middle object of an observed
                                  depth-2 chain; the observer is told
              dependent.set       set a dependency of an observed dependent key
              stream.end-to-end   sets on this thread, `for await` over
                                  changes(for:) on a task: ns per change until
                                  the consumer has it
              binding.propagate, binding.filter-map, binding.reduce-2
                                  set a source of a binding (plain, through
                                  filter + map, two sources reduced); the
                                  target is written
              sets.10-plain, transaction.10-sets
                                  10 sets of one observed key, without and
                                  inside ObservationRuntime.transaction (one
                                  delivery per op instead of 10)
              post                set a property the object posts (post mode)
                                  (capability rows: c and swift, compared with
                                  set.1 of the same impl)
              array.setup         observe an existing array of N elements with
                                  one element key path: ns and heap bytes per
                                  element (c/swift: also the position index's)
              array.element-change
                                  one element's property set; the observer
                                  reads its index (ns per change)
              array.element-change-10
                                  the same with 10 observers, each checked
                                  (per-element-naive: 10 registrations per
                                  element, one per observer)
              array.element-change-repeated
                                  set one element present at 1,000 indices
                                  (N/10 below N=10,000); the observer is told
                                  every index (per-element-naive: one
                                  registration per array slot, index from a
                                  slot -> index table)
              array.insert-front  removeLast() + insert(it, at: 0), both
                                  observed; N stays fixed (ns per pair)
              array.append-10k    append(contentsOf:) 10,000 elements (ns per
                                  appended element; one change, one run)
              array.remove-10k    removeLast(10,000) from N + 10,000 (ns per
                                  removed element; one change, one run)
              array.batch-100     100 seeded random edits delivered as one
                                  coalesced change (ns per batch); vs diff
              replication.batch-100
                                  array.batch-100's change sent to a replica:
                                  ArrayChangeRecord + bytes + decoding (c) vs
                                  the whole array as bytes and back (plain);
                                  bytes/item = bytes sent per change
              array.ops-scaling   one row per observed-array operation, c only:
                                  array.ops-scaling.insert-middle,
                                  .remove-middle, .move-adjacent, .move-far,
                                  .move-offsets, .replace-10, .swap,
                                  .append-removeLast,
                                  .insert-0-removeFirst; one op = the
                                  operation, then one random element's
                                  property set (N fixed; batches of
                                  min(256, N/8) ops so that the position
                                  index's periodic rebuilds are amortized in);
                                  targets: cost at 100k <= 3x cost at 1k
              service.churn       20,000 persons; per tick 2,000 sets, 300
                                  observes + 300 cancels, 100 tagged adds +
                                  100 removes, 200 persons released + 200
                                  created (ns per tick); vs naive and
                                  observation
            Array sizes N: --elements (default 1000,10000,100000).
            Registrations on one key N: --registrations (default
            2000,8000,32000; --quick: 250,1000).

            How it measures: every operation is one call through an
            @inline(never) function (plain too, so "c / plain" is a fair
            ratio); values come from a runtime seed; results are consumed.
            Each (scenario, impl) is warmed up, then timed in batches of B
            operations with a monotonic clock (B a power of two, 1...4096,
            sized so that a batch takes about --batch-target-ns). Figures are
            per operation: median = median over repetitions of each
            repetition's median batch; spread = min-max of the repetition
            medians. PERCENTILES (p50/p99/p999) ARE OF PER-BATCH MEANS,
            recorded in an HDR histogram, not of single operations.
            Repetitions interleave the impls, so a slow phase of the machine
            shows up as spread rather than as a bias against one impl; CPU
            used by other processes meanwhile is measured (/proc/stat) and
            reported.

            Allocations per op (the allocs/op column, JSON
            allocations_per_op): observe-bench replaces malloc, calloc,
            realloc, posix_memalign, aligned_alloc and memalign in its own
            process (Sources/BenchAllocCounter) and counts their calls per
            thread. After each repetition's timed batches, untimed batches
            (at least 256 ops or 1 ms) count what one op allocates; an op is
            the row's op (a whole setup, append or batch). A probe at start-up
            (1,000 Swift objects must count as 1,000 allocations) decides
            whether the figures are shown at all.

            Array and register.same-key scenarios sample for
            --array-measure-ms per cell per repetition; an op that is a whole
            setup, append, batch or same-key cycle is timed one per batch (its
            untimed preparation — building the array to observe, generating
            the edits — outside the clock), at least once per repetition
            (same-key: at least 3 times).

            A default run takes about two minutes on 2 cores; --quick takes a few
            seconds (its figures mean nothing). Progress goes to stderr, the
            table to stdout.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Comma-separated scenarios to run (default: all available).",
                                            valueName: "list"))
    var scenarios: String?

    @Option(name: .long, help: ArgumentHelp("Comma-separated impls to run (default: all).", valueName: "list"))
    var impls: String?

    @Option(name: .long, help: "Repetitions of every (scenario, impl), interleaved (default 7; --quick: 2).")
    var repetitions: Int?

    @Option(name: .customLong("measure-ms"),
            help: "Milliseconds of timed batches per (scenario, impl) per repetition (default 150; --quick: 8).")
    var measureMilliseconds: Double?

    @Option(name: .long,
            help: "Timed batches per (scenario, impl) per repetition, instead of sampling for --measure-ms.")
    var iterations: Int?

    @Option(name: .customLong("warmup-ms"),
            help: "Milliseconds of warm-up per (scenario, impl) per repetition (default 15; --quick: 2).")
    var warmupMilliseconds: Double?

    @Option(name: .customLong("batch-target-ns"), help: "Target duration of one timed batch, in ns.")
    var batchTargetNanoseconds: Int = 5000

    @Option(name: .long, help: "Use this batch size for every latency scenario instead of calibrating one.")
    var batch: Int?

    @Option(name: .long, help: ArgumentHelp("Observer counts N of set.N in the default suite.",
                                            valueName: "list"))
    var observers: String = "0,1,10,100"

    @Option(name: .long, help: ArgumentHelp("Array sizes N for the array scenarios (default 1000,10000,100000; "
                                            + "--quick: 100,1000).", valueName: "list"))
    var elements: String?

    @Option(name: .long, help: ArgumentHelp("Registrations N on one key for the register.same-key.* rows (default "
                                            + "2000,8000,32000; --quick: 250,1000).", valueName: "list"))
    var registrations: String?

    @Option(name: .customLong("array-measure-ms"),
            help: "Milliseconds of timed batches per array and same-key cell per repetition (default 15; --quick: 3).")
    var arrayMeasureMilliseconds: Double?

    @Option(name: .customLong("memory-items"),
            help: "Registrations per register.memory measurement (default 10000; --quick: 1000).")
    var memoryItems: Int?

    @Option(name: .long, help: ArgumentHelp("Write every figure as JSON to this file.", valueName: "file"))
    var json: String?

    @Option(name: .long, help: ArgumentHelp("Draw cost per op against size (log scale) as SVG to this file.",
                                            valueName: "file.svg"))
    var chart: String?

    @Flag(name: .long, help: "Smallest configuration: every scenario, in seconds (proves it works; not for figures).")
    var quick = false

    @Flag(name: .long, help: "List scenarios and impls, then exit.")
    var list = false

    mutating func validate() throws {
        if let repetitions, repetitions < 1 { throw ValidationError("--repetitions must be at least 1") }
        if let measureMilliseconds, measureMilliseconds <= 0 { throw ValidationError("--measure-ms must be positive") }
        if let warmupMilliseconds, warmupMilliseconds < 0 { throw ValidationError("--warmup-ms must not be negative") }
        if batchTargetNanoseconds < 1 { throw ValidationError("--batch-target-ns must be positive") }
        if let batch, batch < 1 { throw ValidationError("--batch must be at least 1") }
        if let iterations, iterations < 1 { throw ValidationError("--iterations must be at least 1") }
        if let memoryItems, memoryItems < 1 { throw ValidationError("--memory-items must be at least 1") }
        if let arrayMeasureMilliseconds, arrayMeasureMilliseconds <= 0 {
            throw ValidationError("--array-measure-ms must be positive")
        }
        _ = try elementCounts()
        _ = try selectedScenarios()
        _ = try selectedImpls()
    }

    private func observerCounts() throws -> [Int] {
        try observers.split(separator: ",").map {
            guard let n = Int($0.trimmingCharacters(in: .whitespaces)), n >= 0 else {
                throw ValidationError("--observers: '\($0)' is not a count")
            }
            return n
        }
    }

    private func elementCounts() throws -> [Int] {
        guard let elements else { return quick ? [100, 1_000] : [1_000, 10_000, 100_000] }
        let counts = try elements.split(separator: ",").map {
            guard let n = Int($0.trimmingCharacters(in: .whitespaces)), n >= 64, n <= 1 << 24 else {
                throw ValidationError("--elements: '\($0)' is not an array size from 64 to 16,777,216")
            }
            return n
        }
        if counts.isEmpty { throw ValidationError("--elements: no size given") }
        var unique: [Int] = []
        for n in counts.sorted() where !unique.contains(n) { unique.append(n) }
        return unique
    }

    private func registrationCounts() throws -> [Int] {
        guard let registrations else { return quick ? SameKeyScenario.quickCounts : SameKeyScenario.defaultCounts }
        let counts = try registrations.split(separator: ",").map {
            guard let n = Int($0.trimmingCharacters(in: .whitespaces)), n >= 2, n <= 1 << 22 else {
                throw ValidationError("--registrations: '\($0)' is not a count from 2 to 4,194,304")
            }
            return n
        }
        if counts.isEmpty { throw ValidationError("--registrations: no count given") }
        var unique: [Int] = []
        for n in counts.sorted() where !unique.contains(n) { unique.append(n) }
        return unique
    }

    private func selectedScenarios() throws -> [any Scenario] {
        let elementCounts = try elementCounts()
        let registrationCounts = try registrationCounts()
        guard let scenarios else {
            return ScenarioCatalog.defaultScenarios(observerCounts: try observerCounts(), elementCounts: elementCounts,
                                                    registrationCounts: registrationCounts)
        }
        var result: [any Scenario] = []
        for name in scenarios.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            do {
                for scenario in try ScenarioCatalog.parse(name, elementCounts: elementCounts,
                                                           registrationCounts: registrationCounts)
                where !result.contains(where: { $0.name == scenario.name && $0.n == scenario.n }) {
                    result.append(scenario)
                }
            } catch {
                throw ValidationError("--scenarios: \(error)")
            }
        }
        if result.isEmpty { throw ValidationError("--scenarios: no scenario named") }
        return result
    }

    private func selectedImpls() throws -> [Impl] {
        guard let impls else { return Impl.allCases }
        return try impls.split(separator: ",").map {
            let name = $0.trimmingCharacters(in: .whitespaces)
            guard let impl = Impl(rawValue: name) else {
                throw ValidationError("--impls: unknown impl '\(name)'; known: "
                                      + Impl.allCases.map(\.rawValue).joined(separator: ", "))
            }
            return impl
        }
    }

    func run() throws {
        let scenarios = try selectedScenarios()
        let impls = try selectedImpls()
        if list {
            print("scenarios:")
            var listed: [String] = []
            for scenario in ScenarioCatalog.defaultScenarios(observerCounts: try observerCounts(),
                                                             elementCounts: try elementCounts(),
                                                             registrationCounts: try registrationCounts())
            where !listed.contains(scenario.name) {
                listed.append(scenario.name)
                print("  \(scenario.name.padded(20)) \(scenario.summary)  [\(scenario.impls.map(\.rawValue).joined(separator: ", "))]")
            }
            print("  (array scenarios run at N = \(try elementCounts().map(groupThousands).joined(separator: ", ")); "
                  + "\(SameKeyScenario.family).* at N = \(try registrationCounts().map(groupThousands).joined(separator: ", ")))")
            print("impls:")
            for impl in Impl.allCases { print("  \(impl.rawValue.padded(20)) \(impl.summary)") }
            return
        }

        var config = RunConfig()
        if quick {
            config.isQuick = true
            config.repetitions = 2
            config.measureNs = 8_000_000
            config.warmupNs = 2_000_000
            config.memoryItems = 1_000
            config.arrayMeasureNs = 3_000_000
            config.arrayWarmupNs = 1_000_000
        }
        config.elementCounts = try elementCounts()
        if let arrayMeasureMilliseconds { config.arrayMeasureNs = UInt64(arrayMeasureMilliseconds * 1e6) }
        StudentPool.maxElements = config.elementCounts.max()!
        if let repetitions { config.repetitions = repetitions }
        if let measureMilliseconds { config.measureNs = UInt64(measureMilliseconds * 1e6) }
        if let warmupMilliseconds { config.warmupNs = UInt64(warmupMilliseconds * 1e6) }
        if let memoryItems { config.memoryItems = memoryItems }
        config.targetBatchNs = UInt64(batchTargetNanoseconds)
        config.fixedBatch = batch
        config.fixedIterations = iterations

        var cells: [Cell] = []
        for scenario in scenarios {
            for impl in scenario.impls where impls.contains(impl) {
                // Opt-in impls run only when --impls names them.
                if self.impls == nil, scenario.optInImpls.contains(impl) { continue }
                cells.append(Cell(scenario: scenario, impl: impl))
            }
        }
        if cells.isEmpty { throw ValidationError("no selected impl runs in the selected scenarios") }

        let machine = MachineInfo.current()
        if machine.build != "release" {
            FileHandle.standardError.write("warning: observe-bench was built in debug; use `swift run -c release observe-bench`\n"
                .data(using: .utf8)!)
        }
        FileHandle.standardError.write(("observe-bench: \(cells.count) (scenario, impl) cells × \(config.repetitions) "
            + "repetitions, \(Int(Double(config.measureNs) / 1e6)) ms timed each\n").data(using: .utf8)!)
        FileHandle.standardError.write(("allocations: " + AllocationCounter.method + "\n").data(using: .utf8)!)

        let runner = Runner(cells: cells, config: config)
        runner.run()
        let elapsed = runner.elapsedSeconds

        let rows = cells.map(ResultRow.init)
        var targets = Target.all()
        for i in targets.indices { targets[i].evaluate(rows) }

        print(TableReport(machine: machine, config: config, scenarios: scenarios, rows: rows, targets: targets,
                          elapsedSeconds: elapsed, backgroundCores: runner.backgroundCores).render())

        if let json {
            let document = JSONReport(machine: machine, config: config, rows: rows, targets: targets, elapsedSeconds: elapsed,
                                      backgroundCores: runner.backgroundCores)
            try write(document.render(), to: json)
            FileHandle.standardError.write("wrote \(json)\n".data(using: .utf8)!)
        }
        if let chart {
            try write(ChartReport(rows: rows, machine: machine).render(), to: chart)
            FileHandle.standardError.write("wrote \(chart)\n".data(using: .utf8)!)
        }
    }

    private func write(_ text: String, to path: String) throws {
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw ValidationError("cannot write \(path): \(error.localizedDescription)")
        }
    }
}
