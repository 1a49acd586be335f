@_spi(Testing) import ObserveCore
import Testing

/// A class-bound protocol, as a service's listeners often are.
private protocol AgeListener: AnyObject {
    func ageChanged(to age: Int)
}

private final class AgeLog: AgeListener {
    var ages: [Int] = []
    func ageChanged(to age: Int) { ages.append(age) }
}

/// Observers passed as `AnyObject` and as `any AgeListener`: the forms the generic
/// `addObserver` cannot take (Swift 6.3.1 crashes compiling `AnyObject` through it).
private func attach(_ listener: AnyObject, to person: Person) {
    person.addObserver(listener, for: \.age) { listener, _, change in
        (listener as! AgeLog).ageChanged(to: change.newValue!)
    }
}

private func attach(_ listener: any AgeListener, to person: Person) {
    person.addObserver(listener, for: \.age, context: 2) { listener, _, change in
        (listener as! any AgeListener).ageChanged(to: change.newValue! * 100)
    }
}

private func attach(_ listener: AnyObject, to array: ObservableArray<Int>) {
    array.addObserver(listener) { listener, _, change in
        (listener as! AgeLog).ageChanged(to: change.newCount)
    }
}

@Suite("Observer-tagged registration and removal")
struct ObserverRegistrationTests {
    @Test("observers typed AnyObject or as a class-bound protocol existential register and are handed back",
          arguments: ObservationBackend.allCases)
    func existentialObservers(backend: ObservationBackend) {
        let person = Person(backend)
        let log = AgeLog()
        attach(log as AnyObject, to: person)
        attach(log as any AgeListener, to: person)
        person.age = 3
        #expect(log.ages.sorted() == [3, 300], "two registrations (two contexts), each handed the observer")
        person.removeObserver(log, for: \.age)
        person.age = 4
        #expect(log.ages.count == 2)

        let array = ObservableArray<Int>(backend: backend)
        attach(log as AnyObject, to: array)
        array.append(1)
        #expect(log.ages.last == 1)
        array.removeObserver(log, for: \ObservableArray<Int>.self)
        array.append(2)
        #expect(log.ages.last == 1)
    }

    @Test("the observer is handed back to the handler and not retained", arguments: ObservationBackend.allCases)
    func observerIsHandedBackAndNotRetained(backend: ObservationBackend) {
        let person = Person(backend)
        let tracker = LifetimeTracker()
        var watcher: Watcher? = tracker.track(Watcher())
        person.addObserver(watcher!, for: \.name, options: [.new]) { watcher, person, change in
            watcher.seen.append(change.newValue!)
        }
        person.name = "a"
        #expect(watcher?.seen == ["a"])
        watcher = nil
        #expect(tracker.survivors.isEmpty, "the registration must hold its observer weakly")
        #expect(person.observationCount == 0, "a dead observer's registration is not counted, even before a change")
        person.name = "b"   // never messages the dead observer; drops the registration instead
        #expect(person.observationCount == 0)
    }

    @Test("context 0 is a context of its own, distinct from none; a handler can be told its context",
          arguments: ObservationBackend.allCases)
    func contextZeroAndToldContext(backend: ObservationBackend) {
        let person = Person(backend)
        let watcher = Watcher()
        person.addObserver(watcher, for: \.age) { watcher, _, _ in watcher.seen.append("none") }
        person.addObserver(watcher, for: \.age, context: 0) { watcher, _, _, context in
            watcher.seen.append("told \(context.rawValue)")
        }
        person.addObserver(watcher, for: \.age, context: 7) { watcher, _, _, context in
            watcher.seen.append("told \(context.rawValue)")
        }
        #expect(person.observationCount == 3, "no context, context 0 and context 7 are three registrations")
        person.age = 1
        #expect(watcher.seen == ["none", "told 0", "told 7"])
        person.removeObserver(watcher, for: \.age, context: 0)
        person.age = 2
        #expect(watcher.seen.suffix(2) == ["none", "told 7"])
        person.removeObserver(watcher, for: \.age, context: .none)
        person.age = 3
        #expect(watcher.seen.last == "told 7")
        #expect(ObservationContext.none != 0)
        person.removeObserver(watcher, for: \.age)
        #expect(person.observationCount == 0)
    }

    @Test("the same observer, key path and context twice keeps one registration", arguments: ObservationBackend.allCases)
    func duplicateRegistrationKeepsOne(backend: ObservationBackend) {
        let person = Person(backend)
        let watcher = Watcher()
        for _ in 0..<3 {
            person.addObserver(watcher, for: \.age, context: 7) { watcher, _, _ in watcher.count += 1 }
        }
        person.age = 1
        #expect(watcher.count == 1)
        #expect(person.observationCount == 1)
        person.addObserver(watcher, for: \.age, context: 8) { watcher, _, _ in watcher.count += 10 }
        person.age = 2
        #expect(watcher.count == 12, "a different context makes a second registration")
        person.removeObserver(watcher, for: \.age)
        #expect(person.observationCount == 0)
    }

    @Test("removing by observer, key path and context leaves the other contexts", arguments: ObservationBackend.allCases)
    func removingByContextLeavesOthers(backend: ObservationBackend) {
        let person = Person(backend)
        let watcher = Watcher()
        person.addObserver(watcher, for: \.age, context: 1) { w, _, _ in w.seen.append("ctx1") }
        person.addObserver(watcher, for: \.age, context: 2) { w, _, _ in w.seen.append("ctx2") }
        person.removeObserver(watcher, for: \.age, context: 1)
        person.age = 1
        #expect(watcher.seen == ["ctx2"])
        person.removeObserver(watcher, for: \.age, context: 1)   // not registered any more: no-op
        person.removeObserver(watcher, for: \.age, context: 2)
        #expect(person.observationCount == 0)
    }

    @Test("removing an observer for several key paths, and several observers for one key path", arguments: ObservationBackend.allCases)
    func removingForSeveralKeyPathsAndObservers(backend: ObservationBackend) {
        let person = Person(backend)
        let w1 = Watcher(), w2 = Watcher(), w3 = Watcher()
        for w in [w1, w2, w3] {
            person.addObserver(w, for: \.age) { w, _, _ in w.seen.append("age") }
            person.addObserver(w, for: \.name) { w, _, _ in w.seen.append("name") }
            person.addObserver(w, for: \.score) { w, _, _ in w.seen.append("score") }
        }
        person.removeObserver(w1, for: [\.age, \.name])
        person.removeObservers([w2, w3], for: \.age)
        person.age = 1; person.name = "n"; person.score = 1
        #expect(w1.seen == ["score"])
        #expect(w2.seen == ["name", "score"])
        #expect(w3.seen == ["name", "score"])
        #expect(person.observationCount == 5)
    }

    @Test("removing everything for a key path also makes its tokens inert", arguments: ObservationBackend.allCases)
    func removingEverythingForAKeyPath(backend: ObservationBackend) {
        let person = Person(backend)
        let watcher = Watcher()
        var calls = 0
        let token = person.observe(\.age) { _, _ in calls += 1 }
        person.addObserver(watcher, for: \.age) { w, _, _ in w.count += 1 }
        person.addObserver(watcher, for: \.name) { w, _, _ in w.count += 100 }
        person.removeAllObservers(for: \.age)
        person.age = 1
        #expect(calls == 0 && watcher.count == 0)
        #expect(token.isCancelled)
        person.name = "x"
        #expect(watcher.count == 100)
        token.cancel()   // already removed: no-op
    }

    @Test("removing everything on an object", arguments: ObservationBackend.allCases)
    func removingEverythingOnAnObject(backend: ObservationBackend) {
        let person = Person(backend)
        let watcher = Watcher()
        let token = person.observe(\.name) { _, _ in watcher.count += 1 }
        person.addObserver(watcher, for: [\.age, \.score] as [PartialKeyPath<Person>]) { w, _, _, _ in w.count += 1 }
        #expect(person.observationCount == 3)
        person.removeAllObservers()
        #expect(person.observationCount == 0)
        person.name = "a"; person.age = 1; person.score = 2
        #expect(watcher.count == 0)
        #expect(token.isCancelled)
    }

    @Test("removing what was never registered is a no-op", arguments: ObservationBackend.allCases)
    func removingWhatWasNeverRegisteredIsANoOp(backend: ObservationBackend) {
        let person = Person(backend)
        let watcher = Watcher()
        person.removeObserver(watcher, for: \.age)
        person.removeObserver(watcher, for: \.age, context: 5)
        person.removeObserver(watcher, for: [\.name, \.blob])
        person.removeObservers([watcher], for: \.firstName)   // a key path nobody ever observed
        person.removeAllObservers(for: \.age)
        person.removeAllObservers()
        #expect(person.observationCount == 0)
    }

    @Test("observer-tagged registration for several key paths reports the key path", arguments: ObservationBackend.allCases)
    func observerTaggedSeveralKeyPaths(backend: ObservationBackend) {
        let person = Person(backend)
        let watcher = Watcher()
        person.addObserver(watcher, for: [\.age, \.age]) { w, _, keyPath, change in
            w.seen.append("\(keyPath == \Person.age) \(change.newValue!)")
        }
        person.age = 4
        #expect(watcher.seen == ["true 4"], "the duplicate (observer, key path, context) is kept once")
        person.addObserver(watcher, for: [\.name, \.position] as [PartialKeyPath<Person>], options: [.old]) {
            w, _, keyPath, change in
            w.seen.append("\(keyPath == \Person.name ? "name" : keyPath == \Person.position ? "position" : "?") old=\(change.oldValue!)")
        }
        person.name = "z"
        person.position = Point(x: 9, y: 9)
        #expect(watcher.seen.dropFirst().elementsEqual(["name old=", "position old=(0, 0)"]))
    }

    @Test("prior, initial and skip-equal work for observer-tagged registrations", arguments: ObservationBackend.allCases)
    func observerTaggedOptions(backend: ObservationBackend) {
        let person = Person(backend, age: 1)
        let watcher = Watcher()
        person.addObserver(watcher, for: \.age, options: [.initial, .prior, .new, .skipEqualValues]) { w, p, change in
            w.seen.append(change.isInitial ? "initial \(change.newValue!)" : change.isPrior ? "prior \(p.age)" : "new \(change.newValue!)")
        }
        person.age = 1   // equal: the after-notification is skipped (the prior one cannot know yet)
        person.age = 2
        #expect(watcher.seen == ["initial 1", "prior 1", "prior 1", "new 2"])
    }
}
