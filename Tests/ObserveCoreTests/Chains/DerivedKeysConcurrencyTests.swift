import Dispatch
@_spi(Testing) import ObserveCore
import Testing

/// Chains, dependent keys and bindings driven from several threads at once, on thread-safe
/// models. Run under ThreadSanitizer by .ci/run (the filter matches "Concurrency").
@Suite("Derived keys and bindings across threads", .serialized)
struct DerivedKeysConcurrencyTests {
    @Test("a chain re-wires while other threads set links and leaves and come and go", arguments: ObservationBackend.allCases)
    func chainUnderConcurrentChanges(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let root = LockedNode(backend, name: "root")
        let nodes = (0..<4).map { LockedNode(backend, name: "n\($0)") }
        let last = Log<String?>()
        let anchor = root.observe(\.next?.name) { _, change in last.append(change.newValue) }
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<400 {
                switch t {
                case 0, 1: root.next = nodes[(i + t) % nodes.count]
                case 2: nodes[i % nodes.count].name = "n\(i % nodes.count) #\(i)"
                default:
                    let token = root.observe(\.next?.name) { _, _ in }
                    if i.isMultiple(of: 3) { root.next = nil }
                    token.cancel()
                }
            }
        }
        root.next = nodes[0]
        nodes[0].name = "final"
        #expect(last.events.last == "final", "the wiring follows the last link set")
        anchor.cancel()
        #expect(root.observationCount == 0)
        #expect(nodes.allSatisfy { $0.observationCount == 0 })
        #expect(ObservationRuntime.liveRegistrationCount == before)
        ObservationRuntime._checkInvariants()
    }

    @Test("chain roots die while another thread sets the link and the leaf they observe",
          arguments: ObservationBackend.allCases)
    func chainRootsDieWhileTheLeafChanges(backend: ObservationBackend) {
        // A chain's registrations on the objects along it do not name the root as observer: the
        // driver loads the root through an unowned reference on each change, and the root's death
        // detaches it. A change racing that death (of the leaf, or of a link, which re-wires) must
        // find the root gone (not deliver to it, not crash), and no registration may outlive it.
        let before = ObservationRuntime.liveRegistrationCount
        let leaf = LockedNode(backend, name: "leaf")
        let middle = LockedNode(backend, name: "middle", next: leaf)
        let liveRoots = AtomicCounter()
        let kept = Log<ObservationToken>()                    // tokens outlive their roots
        let rounds = 300
        DispatchQueue.concurrentPerform(iterations: 2) { t in
            if t == 0 {
                for i in 0..<rounds {
                    let root = LockedNode(backend, name: "root \(i)", next: middle)
                    liveRoots.increment()
                    let token = root.observe(\.next?.next?.name) { root, _ in
                        #expect(root.next === middle)
                    }
                    if i.isMultiple(of: 2) { token.cancel() } else { kept.append(token) }
                }   // the root dies here, observed in odd rounds (or on the other thread, if it holds it)
            } else {
                var i = 0
                while liveRoots.value < rounds || i < rounds {
                    if i.isMultiple(of: 3) { middle.next = i.isMultiple(of: 2) ? nil : leaf }   // a link
                    leaf.name = "set \(i)"                                                     // the leaf
                    i += 1
                }
                middle.next = leaf
            }
        }
        // Only now: the other thread may have held the last root when the loop ended.
        #expect(kept.events.allSatisfy { $0.isCancelled }, "a token of a dead root is inert")
        #expect(leaf.observationCount == 0 && middle.observationCount == 0,
                "every chain registration went with its root")
        #expect(ObservationRuntime.liveRegistrationCount == before)
        ObservationRuntime._checkInvariants()
    }

    @Test("a dependent key hears one change per set from every thread", arguments: ObservationBackend.allCases)
    func dependentKeyUnderConcurrentSets(backend: ObservationBackend) {
        let node = LockedNode(backend, name: "start", next: LockedNode(backend, name: "tail"))
        let changes = AtomicCounter()
        let token = node.observe(\.title) { _, _ in changes.increment() }
        let threads = 4, sets = 500
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<sets {
                if t == 0 { node.next!.name = "tail \(i)" } else { node.name = "t\(t) \(i)" }
            }
        }
        #expect(changes.value == threads * sets)
        node.name = "end"
        node.next!.name = "tail end"
        var final = ""
        let check = node.observe(\.title, options: [.initial, .new]) { _, change in final = change.newValue! }
        #expect(final == "end/tail end")
        token.cancel()
        check.cancel()
        #expect(node.observationCount == 0 && node.next!.observationCount == 0)
    }

    @Test("observers of derived keys come and go on many threads", arguments: ObservationBackend.allCases)
    func derivedObserversComeAndGo(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let node = LockedNode(backend, name: "a", next: LockedNode(backend, name: "b"))
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<300 {
                let title = node.observe(\.title) { _, _ in }
                let chain = node.observe(\.next?.name) { _, _ in }
                node.name = "\(t).\(i)"
                if t == 0 { node.next = LockedNode(backend, name: "\(i)") }
                if i.isMultiple(of: 2) { title.cancel() } else { chain.cancel() }
            }
        }
        #expect(node.observationCount == 0)
        #expect(ObservationRuntime.liveRegistrationCount == before)
        ObservationRuntime._checkInvariants()
    }

    @Test("bindings propagate sets from several threads, and are cut while they do", arguments: ObservationBackend.allCases)
    func bindingsUnderConcurrentSets(backend: ObservationBackend) {
        let before = ObservationRuntime.liveRegistrationCount
        let source = LockedNode(backend), mirror = LockedNode(backend)
        mirror.bind(\.value, to: source, \.value)
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<500 {
                source.value = t * 1_000 + i
                if t == 3 {
                    let target = LockedNode(backend)
                    let binding = target.bind(\.name, to: source.bindable(\.value).map { "\($0)" })
                    if i.isMultiple(of: 2) { binding.cancel() }
                }
            }
        }
        source.value = -1
        #expect(mirror.value == -1)
        #expect(ObservationRuntime.liveRegistrationCount == before + 1, "the mirror's binding is the only one left")
        ObservationRuntime._checkInvariants()
    }

    @Test("binding targets die while another thread sets their source", arguments: ObservationBackend.allCases)
    func bindingTargetsDieWhileTheSourceChanges(backend: ObservationBackend) {
        // A binding holds its target unowned and does not name it as the observer of its
        // registration; the target's death cuts the binding off. A set racing that death must
        // write nothing to the dying target, and no registration may outlive it.
        let before = ObservationRuntime.liveRegistrationCount
        let source = LockedNode(backend, name: "source")
        let created = AtomicCounter()
        let bindings = Log<KeyValueBinding>()                 // outlive their targets
        let rounds = 300
        DispatchQueue.concurrentPerform(iterations: 2) { t in
            if t == 0 {
                for i in 0..<rounds {
                    let target = LockedNode(backend, name: "target \(i)")
                    bindings.append(target.bind(\.value, to: source, \.value))
                    created.increment()
                }   // each target dies here, still bound (or on the other thread, if it holds it)
            } else {
                var i = 1
                while created.value < rounds || i < rounds {
                    source.value = i
                    i += 1
                }
            }
        }
        // Only now: the other thread may have held the last target (writing to it) when the loop ended.
        #expect(bindings.events.allSatisfy { !$0.isActive }, "a binding of a dead target is cut off")
        #expect(source.observationCount == 0, "every binding's registration went with its target")
        #expect(ObservationRuntime.liveRegistrationCount == before)
        ObservationRuntime._checkInvariants()
    }

    @Test("streams are made and cancelled on many threads while the property changes", arguments: ObservationBackend.allCases)
    func streamsComeAndGo(backend: ObservationBackend) async {
        let before = ObservationRuntime.liveRegistrationCount
        let node = LockedNode(backend)
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<300 {
                let stream = node.changes(for: \.value, buffering: i.isMultiple(of: 2) ? .unbounded : .latest)
                node.value = t * 1_000 + i
                _ = stream
            }
        }
        #expect(ObservationRuntime.liveRegistrationCount == before)
        ObservationRuntime._checkInvariants()
    }
}
