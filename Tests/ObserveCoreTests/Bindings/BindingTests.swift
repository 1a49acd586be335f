@_spi(Testing) import ObserveCore
import Testing

@Suite("Bindings", .serialized)
struct BindingTests {
    @Test("the target takes the source's value at once and follows it", arguments: ObservationBackend.allCases)
    func targetTakesAndFollows(backend: ObservationBackend) {
        let source = Gauge(backend, text: "hello"), target = Gauge(backend)
        target.bind(\.text, to: source, \.text)
        #expect(target.text == "hello")
        source.text = "world"
        #expect(target.text == "world")
    }

    @Test("the target's own observers hear the writes", arguments: ObservationBackend.allCases)
    func targetObserversHearWrites(backend: ObservationBackend) {
        let source = Gauge(backend, level: 1), target = Gauge(backend)
        var heard: [Int?] = []
        let token = target.observe(\.level) { _, change in heard.append(change.newValue) }
        target.bind(\.level, to: source.bindable(\.level))
        source.level = 2
        source.level = 2                         // equal to the target's value: not written again
        #expect(heard == [1, 2])
        token.cancel()
    }

    @Test("a pipeline: filter, map to another type, after-hook", arguments: ObservationBackend.allCases)
    func pipelineFilterMapAfter(backend: ObservationBackend) {
        let source = Gauge(backend, level: -1), label = Gauge(backend, text: "unset")
        var hooks: [String] = []
        label.bind(\.text, to: source.bindable(\.level).filter { $0 >= 0 }.map { "\($0) %" },
                   after: { label, text in hooks.append("\(label.text)|\(text)") })
        #expect(label.text == "unset", "the current value -1 is filtered out")
        source.level = 40
        source.level = -5                        // filtered: the label keeps 40 %
        source.level = 90
        #expect(label.text == "90 %")
        #expect(hooks == ["40 %|40 %", "90 %|90 %"], "the hook runs after the write, once per write")
    }

    @Test("maps and filters compose in order", arguments: ObservationBackend.allCases)
    func pipelinesCompose(backend: ObservationBackend) {
        let source = Gauge(backend, level: 3), target = Gauge(backend)
        target.bind(\.level, to: source.bindable(\.level).map { $0 * 10 }.filter { $0 % 20 == 0 }.map { $0 + 1 })
        #expect(target.level == 0, "30 is filtered out")
        source.level = 4
        #expect(target.level == 41)
    }

    @Test("several sources combined through a reduce; fires when any changes", arguments: ObservationBackend.allCases)
    func combinedSources(backend: ObservationBackend) {
        let office = Office(backend, city: "Paris")
        let ada = Employee(backend, first: "Ada", last: "Lovelace", office: office)
        let gauge = Gauge(backend, level: 3)
        let badge = Gauge(backend)
        var writes = 0
        badge.bind(\.text, to: ada.bindable(\.fullName), gauge.bindable(\.level), ada.bindable(\.office.city),
                   reduce: { name, level, city in "\(name) L\(level) \(city)" },
                   after: { _, _ in writes += 1 })
        #expect(badge.text == "Ada Lovelace L3 Paris")
        gauge.level = 4
        #expect(badge.text == "Ada Lovelace L4 Paris")
        ada.firstName = "Augusta"               // through a dependent key
        #expect(badge.text == "Augusta Lovelace L4 Paris")
        office.city = "Lyon"                    // through a chain
        #expect(badge.text == "Augusta Lovelace L4 Lyon")
        #expect(writes == 4)
    }

    @Test("two sources of one combined binding on the same property share one registration",
          arguments: ObservationBackend.allCases)
    func combinedSourcesOnOneProperty(backend: ObservationBackend) {
        let gauge = Gauge(backend, level: 1)
        let target = Gauge(backend)
        var writes = 0
        let binding = target.bind(\.opaque, to: gauge.bindable(\.level), gauge.bindable(\.level).map { $0 * 10 },
                                  reduce: { a, b in Opaque(value: a + b) }, after: { _, _ in writes += 1 })
        #expect(target.opaque.value == 11 && writes == 1)
        gauge.level = 2
        #expect(target.opaque.value == 22)
        #expect(writes == 2, "one write per set (values that cannot be compared would show a second)")
        #expect(gauge.observationCount == 1 && binding.isActive)
        binding.cancel()
        #expect(gauge.observationCount == 0)
    }

    @Test("a binding's registration is not the target observing the source; cancel() ends it",
          arguments: ObservationBackend.allCases)
    func bindingRegistrationsInIntrospection(backend: ObservationBackend) {
        let source = Gauge(backend, level: 1), target = Gauge(backend)
        let binding = target.bind(\.level, to: source, \.level)
        #expect(source.observationCount == 1)
        #expect(source.observers(for: \.level).isEmpty, "a token registration, tagged with no observer")
        source.removeObserver(target, for: \.level)   // names no registration of the binding
        source.level = 2
        #expect(target.level == 2 && binding.isActive)
        binding.cancel()
        source.level = 3
        #expect(target.level == 2 && !binding.isActive && source.observationCount == 0)
    }

    @Test("the reduce may be a trailing closure", arguments: ObservationBackend.allCases)
    func reduceAsATrailingClosure(backend: ObservationBackend) {
        let name = Gauge(backend, text: "cart"), count = Gauge(backend, level: 2), badge = Gauge(backend)
        badge.bind(\.text, to: name.bindable(\.text), count.bindable(\.level)) { name, count in "\(name): \(count) items" }
        count.level = 3
        #expect(badge.text == "cart: 3 items")
    }

    @Test("a combined source filtered out holds the target", arguments: ObservationBackend.allCases)
    func combinedWithAFilteredSource(backend: ObservationBackend) {
        let a = Gauge(backend, level: 1), b = Gauge(backend, level: 2), sum = Gauge(backend)
        sum.bind(\.level, to: a.bindable(\.level), b.bindable(\.level).filter { $0 > 0 }, reduce: { $0 + $1 })
        #expect(sum.level == 3)
        b.level = -1
        a.level = 10                            // b's value is filtered out: nothing written
        #expect(sum.level == 3)
        b.level = 5
        #expect(sum.level == 15)
    }

    @Test("a binding from a key path chain follows re-wiring", arguments: ObservationBackend.allCases)
    func bindingFromAChain(backend: ObservationBackend) {
        let paris = Office(backend, city: "Paris"), rome = Office(backend, city: "Rome")
        let ada = Employee(backend, office: paris)
        let label = Gauge(backend)
        label.bind(\.text, to: ada.bindable(\.office.city))
        #expect(label.text == "Paris")
        ada.office = rome
        paris.city = "ignored"
        #expect(label.text == "Rome")
        rome.city = "Milan"
        #expect(label.text == "Milan")
    }

    @Test("cutting a binding off stops it; cutting twice does nothing", arguments: ObservationBackend.allCases)
    func cutOff(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let source = Gauge(backend, level: 1), other = Gauge(backend, level: 2), target = Gauge(backend)
        let single = target.bind(\.level, to: source, \.level)
        let combined = target.bind(\.text, to: source.bindable(\.level), other.bindable(\.level), reduce: { "\($0)+\($1)" })
        #expect(single.isActive && combined.isActive)
        single.cancel()
        combined.cancel()
        single.cancel()
        #expect(!single.isActive && !combined.isActive)
        source.level = 5
        other.level = 6
        #expect(target.level == 1 && target.text == "1+2")
        #expect(ObservationRuntime.liveRegistrationCount == before)
    }

    @Test("an after-hook may cut its own binding off", arguments: ObservationBackend.allCases)
    func afterHookCutsItself(backend: ObservationBackend) {
        let source = Gauge(backend, level: 0), target = Gauge(backend)
        var binding: KeyValueBinding?
        binding = target.bind(\.level, to: source.bindable(\.level), after: { _, level in
            if level >= 2 { binding?.cancel() }
        })
        source.level = 1
        source.level = 2
        source.level = 3
        #expect(target.level == 2)
        #expect(binding?.isActive == false)
    }

    @Test("two bindings between the same objects and keys are independent", arguments: ObservationBackend.allCases)
    func bindingsDoNotMerge(backend: ObservationBackend) {
        let source = Gauge(backend, level: 1), target = Gauge(backend)
        var hooks = 0
        let first = target.bind(\.text, to: source.bindable(\.level).map { "a\($0)" }, after: { _, _ in hooks += 1 })
        target.bind(\.level, to: source.bindable(\.level).map { $0 * 2 })
        first.cancel()
        source.level = 4
        #expect(target.text == "a1" && target.level == 8)
        #expect(hooks == 1)
    }
}

@Suite("Binding cycles", .serialized)
struct BindingCycleTests {
    @Test("A bound to B bound to A settles after one round", arguments: ObservationBackend.allCases)
    func twoWayBindingSettles(backend: ObservationBackend) {
        let a = Gauge(backend, level: 1), b = Gauge(backend, level: 2)
        var heardA: [Int?] = [], heardB: [Int?] = []
        let ta = a.observe(\.level) { _, change in heardA.append(change.newValue) }
        let tb = b.observe(\.level) { _, change in heardB.append(change.newValue) }
        b.bind(\.level, to: a, \.level)          // b takes 1
        a.bind(\.level, to: b, \.level)          // a already holds 1: nothing written
        #expect(a.level == 1 && b.level == 1)
        a.level = 5
        #expect(a.level == 5 && b.level == 5)
        b.level = 7
        #expect(a.level == 7 && b.level == 7)
        #expect(heardA == [5, 7] && heardB == [1, 5, 7], "each side changed once per round")
        ta.cancel(); tb.cancel()
    }

    @Test("a three-object cycle settles", arguments: ObservationBackend.allCases)
    func threeWayCycleSettles(backend: ObservationBackend) {
        let a = Gauge(backend), b = Gauge(backend), c = Gauge(backend)
        b.bind(\.text, to: a, \.text)
        c.bind(\.text, to: b, \.text)
        a.bind(\.text, to: c, \.text)
        c.text = "round"
        #expect(a.text == "round" && b.text == "round" && c.text == "round")
    }

    @Test("a cycle of values that cannot be compared settles through the re-entrancy guard", arguments: ObservationBackend.allCases)
    func nonEquatableCycleSettles(backend: ObservationBackend) {
        let a = Gauge(backend), b = Gauge(backend)
        var writesToA = 0, writesToB = 0
        b.bind(\.opaque, to: a.bindable(\.opaque), after: { _, _ in writesToB += 1 })
        a.bind(\.opaque, to: b.bindable(\.opaque), after: { _, _ in writesToA += 1 })
        writesToA = 0; writesToB = 0
        a.opaque = Opaque(value: 9)
        #expect(b.opaque.value == 9 && a.opaque.value == 9)
        #expect(writesToB == 1 && writesToA == 1, "A -> B -> A, then the guard stops A -> B")
    }

    @Test("a three-object cycle of values that cannot be compared settles, round after round, from any side",
          arguments: ObservationBackend.allCases)
    func nonEquatableThreeWayCycleSettlesEveryRound(backend: ObservationBackend) {
        // A -> B -> C -> A nests three propagations on one thread: the outermost sits in the thread
        // record, the two inside it on the per-thread stack. A guard left set by a round would stop
        // the next round early; one cleared too soon would let it run on.
        let a = Gauge(backend), b = Gauge(backend), c = Gauge(backend)
        var writes = [0, 0, 0]
        b.bind(\.opaque, to: a.bindable(\.opaque), after: { _, _ in writes[1] += 1 })
        c.bind(\.opaque, to: b.bindable(\.opaque), after: { _, _ in writes[2] += 1 })
        a.bind(\.opaque, to: c.bindable(\.opaque), after: { _, _ in writes[0] += 1 })
        for (round, start) in [a, b, c, a, c].enumerated() {
            writes = [0, 0, 0]
            start.opaque = Opaque(value: round)
            #expect([a, b, c].allSatisfy { $0.opaque.value == round }, "round \(round)")
            #expect(writes == [1, 1, 1], "round \(round): each binding wrote once, the guard stopped the fourth")
        }
    }

    @Test("a cycle whose maps never agree still terminates", arguments: ObservationBackend.allCases)
    func disagreeingCycleTerminates(backend: ObservationBackend) {
        let a = Gauge(backend, level: 0), b = Gauge(backend, level: 0)
        b.bind(\.level, to: a.bindable(\.level).map { $0 + 1 })
        a.bind(\.level, to: b.bindable(\.level).map { $0 + 1 })
        a.level = 10                              // b = 11, a = 12, then a -> b is already running: stop
        #expect(b.level == 11 && a.level == 12)
    }
}

@Suite("Binding lifetimes", .serialized)
struct BindingLifetimeTests {
    @Test("a binding dies with its target, which it does not keep alive", arguments: ObservationBackend.allCases)
    func diesWithTheTarget(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        let source = Gauge(backend, level: 1)
        var binding: KeyValueBinding?
        do {
            let target = tracker.track(Gauge(backend), "target")
            binding = target.bind(\.level, to: source.bindable(\.level).map { $0 * 2 }, after: { _, _ in })
            source.level = 2
            #expect(target.level == 4)
        }
        #expect(tracker.survivors.isEmpty)
        #expect(ObservationRuntime.liveRegistrationCount == before)
        #expect(binding?.isActive == false)
        source.level = 3                          // nothing to write to
    }

    @Test("a binding dies with its source, which it does not keep alive", arguments: ObservationBackend.allCases)
    func diesWithTheSource(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        let target = Gauge(backend)
        var binding: KeyValueBinding?
        do {
            let source = tracker.track(Gauge(backend, level: 1), "source")
            binding = target.bind(\.level, to: source, \.level)
            source.level = 2
        }
        #expect(tracker.survivors.isEmpty)
        #expect(ObservationRuntime.liveRegistrationCount == before)
        #expect(binding?.isActive == false)
        #expect(target.level == 2)
    }

    @Test("a combined binding dies when any source dies", arguments: ObservationBackend.allCases)
    func combinedDiesWithAnySource(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        let survivor = Gauge(backend, level: 1), target = Gauge(backend)
        var binding: KeyValueBinding?
        do {
            let doomed = tracker.track(Gauge(backend, level: 2), "doomed source")
            binding = target.bind(\.level, to: survivor.bindable(\.level), doomed.bindable(\.level), reduce: { $0 + $1 })
            #expect(target.level == 3)
        }
        #expect(tracker.survivors.isEmpty)
        #expect(ObservationRuntime.liveRegistrationCount == before, "the surviving source's registration went too")
        #expect(binding?.isActive == false)
        survivor.level = 10
        #expect(target.level == 3)
    }

    @Test("a combined binding dies with its target", arguments: ObservationBackend.allCases)
    func combinedDiesWithTheTarget(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        let a = Gauge(backend, level: 1), b = Gauge(backend, level: 2)
        do {
            let target = tracker.track(Gauge(backend), "target")
            target.bind(\.level, to: a.bindable(\.level), b.bindable(\.level), reduce: { $0 * $1 })
            a.level = 5
            #expect(target.level == 10)
        }
        #expect(tracker.survivors.isEmpty)
        #expect(ObservationRuntime.liveRegistrationCount == before)
        a.level = 6
    }

    @Test("a binding from a chain dies with either end", arguments: ObservationBackend.allCases)
    func chainBindingLifetimes(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        let office = Office(backend, city: "Paris")
        do {
            let ada = tracker.track(Employee(backend, office: office), "source")
            let label = Gauge(backend)
            label.bind(\.text, to: ada.bindable(\.office.city))
            do {
                let second = tracker.track(Gauge(backend), "target")
                second.bind(\.text, to: ada.bindable(\.office.city))
            }
            office.city = "Lyon"
            #expect(label.text == "Lyon")
        }
        #expect(tracker.survivors.isEmpty)
        #expect(office.observationCount == 0)
        #expect(ObservationRuntime.liveRegistrationCount == before)
    }
}

@Suite("Post mode", .serialized)
struct PostModeTests {
    @Test("an object posts a property's changes until stopped", arguments: ObservationBackend.allCases)
    func postsUntilStopped(backend: ObservationBackend) {
        let gauge = Gauge(backend)
        var posted: [String] = []
        gauge.post(\.level, options: [.old, .new]) { gauge, change in
            posted.append("\(change.oldValue!)->\(change.newValue!) now \(gauge.level)")
        }
        gauge.level = 1
        gauge.level = 2
        #expect(gauge.postedKeyPaths == [\Gauge.level])
        gauge.stopPosting(\.level)
        gauge.level = 3
        #expect(posted == ["0->1 now 1", "1->2 now 2"])
        #expect(gauge.observationCount == 0)
        gauge.stopPosting(\.level)               // not posted: nothing happens
    }

    @Test("posting again replaces the handler; stopPosting() stops every property", arguments: ObservationBackend.allCases)
    func repostReplacesAndStopAll(backend: ObservationBackend) {
        let gauge = Gauge(backend)
        var log: [String] = []
        gauge.post(\.level) { _, _ in log.append("first") }
        gauge.post(\.level) { _, change in log.append("second \(change.newValue!)") }
        gauge.post(\.text) { _, change in log.append("text \(change.newValue!)") }
        let token = gauge.observe(\.level) { _, _ in log.append("observer") }
        gauge.level = 1
        gauge.text = "t"
        #expect(log.sorted() == ["observer", "second 1", "text t"], "the first handler was replaced")
        gauge.stopPosting()
        log = []
        gauge.level = 2
        gauge.text = "u"
        #expect(log == ["observer"], "only posting stopped")
        token.cancel()
    }

    @Test("posting ends with the object and keeps nothing alive", arguments: ObservationBackend.allCases)
    func postingEndsWithTheObject(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let tracker = LifetimeTracker()
        var posted = 0
        do {
            let gauge = tracker.track(Gauge(backend))
            gauge.post(\.level) { _, _ in posted += 1 }
            gauge.level = 1
        }
        #expect(posted == 1)
        #expect(tracker.survivors.isEmpty)
        #expect(ObservationRuntime.liveRegistrationCount == before)
    }
}
