import Dispatch
@_spi(Testing) import ObserveCore
import Synchronization
import Testing

@Suite("Reentrancy and runaway recursion", .serialized)
struct ReentrancyTests {
    @Test("a handler may cancel its own token", arguments: ObservationBackend.allCases)
    func handlerCancelsItsOwnToken(backend: ObservationBackend) {
        let person = Person(backend)
        var calls = 0
        var token: ObservationToken?
        token = person.observe(\.age) { _, _ in
            calls += 1
            token?.cancel()
        }
        person.age = 1
        person.age = 2
        #expect(calls == 1)
        #expect(person.observationCount == 0)
    }

    @Test("a handler that removes a later handler of the same change stops it at once", arguments: ObservationBackend.allCases)
    func handlerRemovesALaterHandler(backend: ObservationBackend) {
        let person = Person(backend)
        let first = Watcher(), second = Watcher()
        person.addObserver(first, for: \.age) { _, person, _ in
            first.count += 1
            person.removeObserver(second, for: \.age)
        }
        person.addObserver(second, for: \.age) { w, _, _ in w.count += 1 }
        person.age = 1
        #expect(first.count == 1)
        #expect(second.count == 0, "removed before its turn: not called")
    }

    @Test("a handler may add observers, which hear the next change", arguments: ObservationBackend.allCases)
    func handlerAddsObservers(backend: ObservationBackend) {
        let person = Person(backend)
        var added: [ObservationToken] = []
        var laterCalls = 0
        let token = person.observe(\.age) { person, _ in
            added.append(person.observe(\.age) { _, _ in laterCalls += 1 })
        }
        person.age = 1
        #expect(laterCalls == 0, "an observer added during a change does not hear that change")
        person.age = 2
        #expect(laterCalls == 1)
        token.cancel(); added.forEach { $0.cancel() }
    }

    @Test("a handler may mutate observed objects, nesting notifications", arguments: ObservationBackend.allCases)
    func handlerMutatesObservedObjects(backend: ObservationBackend) {
        let person = Person(backend)
        var events: [String] = []
        let mirror = person.observe(\.age) { person, change in
            events.append("age \(change.newValue!)")
            person.name = "age is \(change.newValue!)"          // another property: nested notification
            if change.newValue! < 3 { person.age += 1 }          // itself: bounded recursion
        }
        let names = person.observe(\.name) { _, change in events.append(change.newValue!) }
        person.age = 1
        #expect(events == ["age 1", "age is 1", "age 2", "age is 2", "age 3", "age is 3"])
        mirror.cancel(); names.cancel()
    }

    @Test("runaway recursion is caught with a message naming the key path", arguments: ObservationBackend.allCases)
    func runawayRecursionIsCaught(backend: ObservationBackend) {
        let messages = Mutex<[String]>([])
        let savedHandler = ObservationRuntime.runawayRecursionHandler
        let savedDepth = ObservationRuntime.maximumNotificationDepth
        ObservationRuntime.runawayRecursionHandler = { message in messages.withLock { $0.append(message) } }
        ObservationRuntime.maximumNotificationDepth = 32
        defer {
            ObservationRuntime.runawayRecursionHandler = savedHandler
            ObservationRuntime.maximumNotificationDepth = savedDepth
        }
        let person = Person(backend)
        var calls = 0
        let token = person.observe(\.age) { person, _ in
            calls += 1
            person.age += 1        // re-triggers itself forever
        }
        person.age = 1
        #expect(calls == 32)
        let reported = messages.withLock { $0 }
        #expect(reported.count == 1)
        #expect(reported.first?.contains("runaway recursion") == true)
        #expect(reported.first?.contains("Person") == true)
        #expect(reported.first?.contains("limit 32") == true)
        token.cancel()
        // The thread's depth is back to zero: a fresh change notifies normally.
        let again = person.observe(\.name) { _, _ in calls += 1 }
        person.name = "ok"
        #expect(calls == 33)
        again.cancel()
    }

    /// Runs `body` with the runaway-recursion handler collecting messages (and signalling
    /// `reported`) and the depth limit at `limit`; restores both.
    private func withRecursionLimit(_ limit: UInt32, _ body: (_ messages: borrowing Mutex<[String]>, _ reported: DispatchSemaphore) -> Void) {
        let messages = Mutex<[String]>([])
        let reported = DispatchSemaphore(value: 0)
        let savedHandler = ObservationRuntime.runawayRecursionHandler
        let savedDepth = ObservationRuntime.maximumNotificationDepth
        ObservationRuntime.runawayRecursionHandler = { message in
            messages.withLock { $0.append(message) }
            reported.signal()
        }
        ObservationRuntime.maximumNotificationDepth = limit
        defer {
            ObservationRuntime.runawayRecursionHandler = savedHandler
            ObservationRuntime.maximumNotificationDepth = savedDepth
        }
        body(messages, reported)
    }

    @Test("runaway recursion through queue delivery is caught: each queued round counts one level",
          arguments: ObservationBackend.allCases)
    func runawayRecursionThroughAQueueIsCaught(backend: ObservationBackend) {
        withRecursionLimit(16) { messages, reported in
            let person = Person(backend)
            let queue = DispatchQueue(label: "runaway")
            let calls = Mutex(0)
            let token = person.observe(\.age, delivery: .queue(queue)) { person, _ in
                calls.withLock { $0 += 1 }
                person.age += 1        // re-triggers itself forever, one queue hop at a time
            }
            person.age = 1
            // Without detection this loops forever; with it, the loop stops at the limit.
            #expect(reported.wait(timeout: .now() + 10) == .success, "the queue loop was never reported")
            queue.sync {}   // the round that hit the limit has returned
            let callsAtReport = calls.withLock { $0 }
            #expect(callsAtReport == 16)   // rounds at depths 1...16; the set in round 16 (depth 17) was dropped
            queue.sync {}
            #expect(calls.withLock { $0 } == callsAtReport, "the loop went on after the report")
            let reported = messages.withLock { $0 }
            #expect(reported.count == 1)
            #expect(reported.first?.contains("runaway recursion") == true)
            #expect(reported.first?.contains("Person") == true)
            #expect(reported.first?.contains("limit 16") == true)
            token.cancel()
            // Queued deliveries left this thread's depth alone: a fresh change notifies normally.
            var again = 0
            let inline = person.observe(\.name) { _, _ in again += 1 }
            person.name = "ok"
            #expect(again == 1)
            inline.cancel()
        }
    }

    @Test("an array observer that mutates its array through a queue is caught the same way",
          arguments: ObservationBackend.allCases)
    func runawayArrayRecursionThroughAQueueIsCaught(backend: ObservationBackend) {
        withRecursionLimit(8) { messages, reported in
            let array = ObservableArray<Int>([], backend: backend)
            let queue = DispatchQueue(label: "runaway-array")
            let token = array.observe(delivery: .queue(queue)) { array, _ in array.append(array.count) }
            array.append(0)
            #expect(reported.wait(timeout: .now() + 10) == .success, "the queue loop was never reported")
            queue.sync {}
            #expect(array.count == 9)   // 1 + the appends of rounds 1...8; round 8's was not delivered
            #expect(messages.withLock { $0.count } == 1)
            token.cancel()
        }
    }
}
