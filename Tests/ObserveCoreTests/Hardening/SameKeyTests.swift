@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

/// A tagged observer: records which registration (its tag) was called, in order.
private final class Listener {
    let tag: Int
    init(_ tag: Int) { self.tag = tag }
}

/// Many registrations on one (object, key) — tokens, tagged observers, contexts — share one
/// group whose add and remove do not scan it. These tests pin what that must keep: delivery in
/// registration order after arbitrary removals, the duplicate rule per (observer, context),
/// removal by observer (one context or all), and the registry's invariants throughout.
@Suite("Hardening: many registrations on one key", .serialized)
struct SameKeyTests {
    @Test("random removals keep the survivors in registration order", arguments: ObservationBackend.allCases)
    func removalsKeepOrder(backend: ObservationBackend) {
        let person = Person(backend)
        var calls: [Int] = []
        let count = 3_000
        var listeners: [Listener] = []
        var tokens: [Int: ObservationToken] = [:]
        for tag in 0..<count {
            if tag % 3 == 0 {
                tokens[tag] = person.observe(\.age) { _, _ in calls.append(tag) }
            } else {
                // Observers with several contexts: the even ones register twice.
                let listener = Listener(tag)
                listeners.append(listener)
                person.addObserver(listener, for: \.age, context: 1) { me, _, _ in calls.append(me.tag) }
                if tag % 2 == 0 {
                    person.addObserver(listener, for: \.age, context: 2) { me, _, _ in calls.append(-me.tag) }
                }
            }
        }
        var expected: [Int] = []
        for tag in 0..<count {
            expected.append(tag)
            if tag % 3 != 0 && tag % 2 == 0 { expected.append(-tag) }
        }
        var rng = SplitMix64(seed: 0x5A3E_0001)
        var alive = Set(expected)
        for round in 0..<6 {
            // Remove a random fifth of what is left, by every removal path.
            for value in alive.shuffled(using: &rng).prefix(alive.count / 5) {
                let tag = abs(value)
                if tag % 3 == 0 {
                    tokens.removeValue(forKey: tag)?.cancel()
                } else if let listener = listeners.first(where: { $0.tag == tag }) {
                    if value < 0 {
                        person.removeObserver(listener, for: \.age, context: 2)
                    } else if tag % 2 == 0 && round % 2 == 0 {
                        person.removeObserver(listener, for: \.age)   // every context of this observer
                        alive.remove(-tag)
                    } else {
                        person.removeObserver(listener, for: \.age, context: 1)
                    }
                }
                alive.remove(value)
            }
            calls = []
            person.age += 1
            #expect(calls == expected.filter { alive.contains($0) }, "round \(round)")
            #expect(person.observationCount == alive.count)
            ObservationRuntime._checkInvariants()
        }
        person.removeAllObservers()
        #expect(person.observationCount == 0)
        withExtendedLifetime(listeners) {}
        ObservationRuntime._checkInvariants()
    }

    @Test("one registration per (observer, context); another context is another registration",
          arguments: ObservationBackend.allCases)
    func duplicateRulePerContext(backend: ObservationBackend) {
        let person = Person(backend)
        let listener = Listener(7)
        var calls: [String] = []
        for context: ObservationContext in [0, 1, 0, 2, 1] {
            person.addObserver(listener, for: \.age, context: context) { _, _, _ in calls.append("c\(context.rawValue)") }
        }
        #expect(person.observationCount == 3, "the repeats of contexts 0 and 1 were refused")
        person.age = 1
        #expect(calls == ["c0", "c1", "c2"], "the first registration of each context is kept, in order")
        person.removeObserver(listener, for: \.age, context: 1)
        calls = []
        person.age = 2
        #expect(calls == ["c0", "c2"])
        person.removeObserver(listener, for: \.age)
        #expect(person.observationCount == 0)
        ObservationRuntime._checkInvariants()
    }
}
