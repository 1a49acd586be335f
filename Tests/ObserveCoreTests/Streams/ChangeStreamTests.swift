@_spi(Testing) import ObserveCore
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Change streams", .serialized)
struct ChangeStreamTests {
    @Test("a stream delivers every change in order, including those before iteration starts", arguments: ObservationBackend.allCases)
    func deliversEveryChangeInOrder(backend: ObservationBackend) async {
        let node = LockedNode(backend)
        let stream = node.changes(for: \.value, options: [.old, .new])
        for i in 1...5 { node.value = i }
        var seen: [String] = []
        for await change in stream {
            seen.append("\(change.oldValue!)->\(change.newValue!)")
            if seen.count == 5 { break }
        }
        #expect(seen == ["0->1", "1->2", "2->3", "3->4", "4->5"])
    }

    @Test(".initial makes the current value the first element", arguments: ObservationBackend.allCases)
    func initialIsTheFirstElement(backend: ObservationBackend) async {
        let node = LockedNode(backend, name: "start")
        var iterator = node.changes(for: \.name, options: [.initial, .new]).makeAsyncIterator()
        node.name = "next"
        let first = await iterator.next(), second = await iterator.next()
        #expect(first?.isInitial == true && first?.newValue == "start")
        #expect(second?.isInitial == false && second?.newValue == "next")
    }

    @Test("prior notifications are elements too", arguments: ObservationBackend.allCases)
    func priorNotificationsAreElements(backend: ObservationBackend) async {
        let gauge = Gauge(backend, level: 1)
        var iterator = gauge.changes(for: \.level, options: [.prior, .old, .new]).makeAsyncIterator()
        gauge.level = 2
        let prior = await iterator.next(), after = await iterator.next()
        #expect(prior?.isPrior == true && prior?.oldValue == 1 && prior?.newValue == nil)
        #expect(after?.isPrior == false && after?.newValue == 2)
    }

    @Test("latest-value mode coalesces waiting changes: old from the first, new from the last", arguments: ObservationBackend.allCases)
    func latestModeCoalesces(backend: ObservationBackend) async {
        let node = LockedNode(backend)
        var iterator = node.changes(for: \.value, options: [.old, .new], buffering: .latest).makeAsyncIterator()
        node.value = 1
        node.value = 2
        node.value = 3
        let change = await iterator.next()
        #expect(change?.oldValue == 0 && change?.newValue == 3)
        node.value = 4
        #expect(await iterator.next()?.newValue == 4)
    }

    @Test("cancelling the consuming task removes the registration", arguments: ObservationBackend.allCases)
    func cancellingTheTaskRemovesTheRegistration(backend: ObservationBackend) async {
        let before = ObservationRuntime.liveRegistrationCount
        let node = LockedNode(backend)
        let stream = node.changes(for: \.value)
        #expect(ObservationRuntime.liveRegistrationCount == before + 1)
        let started = AtomicCounter()
        let task = Task {
            var count = 0
            for await _ in stream {
                count += 1
                started.increment()
            }
            return count
        }
        node.value = 1
        while started.value == 0 { await Task.yield() }
        task.cancel()
        let count = await task.value
        #expect(count >= 1)
        #expect(ObservationRuntime.liveRegistrationCount == before)
        #expect(node.observationCount == 0)
        node.value = 2                            // nobody listens any more
    }

    @Test("the iterator going away ends the stream; so does dropping an unused stream", arguments: ObservationBackend.allCases)
    func iteratorGoingAwayEndsTheStream(backend: ObservationBackend) async {
        let before = ObservationRuntime.liveRegistrationCount
        let node = LockedNode(backend)
        let stream = node.changes(for: \.value)
        node.value = 1
        for await _ in stream { break }
        #expect(ObservationRuntime.liveRegistrationCount == before, "breaking out of the loop removed the registration")
        var again = stream.makeAsyncIterator()
        #expect(await again.next() == nil, "a stream is iterated once")

        do { _ = node.changes(for: \.name) }
        #expect(ObservationRuntime.liveRegistrationCount == before)
    }

    @Test("ending the stream drops every buffered change, including those its consumer had taken in bulk",
          arguments: ObservationBackend.allCases)
    func endingDropsWhatTheConsumerTook(backend: ObservationBackend) async {
        let tracker = LifetimeTracker()
        let person = Person(backend)
        let stream = person.changes(for: \.address, options: [.old, .new])
        for city in ["Paris", "Rome", "Oslo"] { person.address = tracker.track(Address(backend, city: city), city) }
        // The first next() takes all three changes at once (unbounded streams take in bulk) and
        // hands out the first; breaking ends the stream with two still taken.
        for await change in stream {
            #expect(change.newValue?.city == "Paris")
            break
        }
        var again = stream.makeAsyncIterator()
        #expect(await again.next() == nil, "no change outlives the end of the stream")
        #expect(tracker.survivors == ["Oslo"], "Paris and Rome were held only by dropped changes")
    }

    @Test("the observed object dying ends the stream after what was buffered", arguments: ObservationBackend.allCases)
    func objectDyingEndsTheStream(backend: ObservationBackend) async {
        let before = ObservationRuntime.liveRegistrationCount
        var iterator: ObservedChanges<Int>.Iterator
        do {
            let node = LockedNode(backend)
            iterator = node.changes(for: \.value).makeAsyncIterator()
            node.value = 1
            node.value = 2
        }
        #expect(ObservationRuntime.liveRegistrationCount == before)
        #expect(await iterator.next()?.newValue == 1)
        #expect(await iterator.next()?.newValue == 2)
        #expect(await iterator.next() == nil)
    }

    @Test("a consumer waiting for a change is woken when the object dies", arguments: ObservationBackend.allCases)
    func waitingConsumerIsWokenOnDeath(backend: ObservationBackend) async {
        var node: LockedNode? = LockedNode(backend)
        let stream = node!.changes(for: \.value)
        let waiting = AtomicCounter()
        let task = Task {
            var count = 0
            waiting.increment()
            for await _ in stream { count += 1 }
            return count
        }
        while waiting.value == 0 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(20))   // let it park
        node = nil
        #expect(await task.value == 0)
    }

    @Test("removing all observers of the object ends its streams", arguments: ObservationBackend.allCases)
    func removeAllObserversEndsStreams(backend: ObservationBackend) async {
        let node = LockedNode(backend)
        var iterator = node.changes(for: \.value).makeAsyncIterator()
        node.value = 1
        node.removeAllObservers()
        node.value = 2
        #expect(await iterator.next()?.newValue == 1)
        #expect(await iterator.next() == nil)
    }
}

/// A pthread of its own (not a Dispatch or Swift-concurrency worker), so that a producer that
/// blocks cannot starve the consumer's executor.
final class TestThread: @unchecked Sendable {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    private var thread = pthread_t()

    init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        let status = pthread_create(&thread, nil, { argument in
            Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, box)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    func join() { pthread_join(thread, nil) }
}
