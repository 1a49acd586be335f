@_spi(Testing) import ObserveCore
import Testing

/// Streams fed from another thread. Run under ThreadSanitizer by .ci/run (the filter matches
/// "Concurrency").
@Suite("Change streams across threads", .serialized)
struct ChangeStreamConcurrencyTests {
    @Test("lossless: 100,000 changes set on another thread arrive, all and in order", arguments: ObservationBackend.allCases)
    func losslessHundredThousand(backend: ObservationBackend) async {
        let total = 100_000
        let node = LockedNode(backend)
        let stream = node.changes(for: \.value)
        let producer = TestThread { for i in 1...total { node.value = i } }
        var received: [Int] = []
        received.reserveCapacity(total)
        for await change in stream {
            received.append(change.newValue!)
            if received.count == total { break }
        }
        producer.join()
        #expect(received.count == total)
        #expect(received == Array(1...total), "every change, in order")
        #expect(node.observationCount == 0)
    }

    @Test("bounded: lossless, and the setter waits while the buffer is full", arguments: ObservationBackend.allCases)
    func boundedAppliesBackPressure(backend: ObservationBackend) async {
        let total = 5_000, capacity = 8
        let node = LockedNode(backend)
        let stream = node.changes(for: \.value, buffering: .bounded(capacity))
        let produced = AtomicCounter()
        let producer = TestThread {
            for i in 1...total {
                node.value = i
                produced.increment()
            }
        }
        var received: [Int] = []
        var worstLead = 0
        for await change in stream {
            received.append(change.newValue!)
            worstLead = max(worstLead, produced.value - received.count)
            if received.count % 250 == 0 { try? await Task.sleep(for: .milliseconds(2)) }   // a slow consumer
            if received.count == total { break }
        }
        producer.join()
        #expect(received == Array(1...total))
        #expect(worstLead <= capacity + 1, "the producer never ran more than the buffer ahead (lead \(worstLead))")
        #expect(worstLead >= capacity / 2, "the slow consumer did let the buffer fill (lead \(worstLead))")
    }

    @Test("latest value: a slow consumer skips values but always ends on the newest", arguments: ObservationBackend.allCases)
    func latestValueSkipsButEndsOnNewest(backend: ObservationBackend) async {
        let total = 20_000
        let node = LockedNode(backend)
        let stream = node.changes(for: \.value, buffering: .latest)
        let producer = TestThread { for i in 1...total { node.value = i } }
        var received: [Int] = []
        for await change in stream {
            received.append(change.newValue!)
            if change.newValue == total { break }
            try? await Task.sleep(for: .microseconds(300))
        }
        producer.join()
        #expect(received.last == total)
        #expect(received.count < total, "intermediate values were skipped (\(received.count) of \(total))")
        #expect(zip(received, received.dropFirst()).allSatisfy { $0 < $1 }, "in order, never repeated")
    }

    @Test("a cancelled consumer releases a producer blocked on a full buffer", arguments: ObservationBackend.allCases)
    func cancellationReleasesABlockedProducer(backend: ObservationBackend) async {
        let before = ObservationRuntime.liveRegistrationCount
        let node = LockedNode(backend)
        let stream = node.changes(for: \.value, buffering: .bounded(2))
        let produced = AtomicCounter()
        let producer = TestThread {
            for i in 1...1_000 {
                node.value = i
                produced.increment()
            }
        }
        while produced.value < 2 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(20))            // the producer now waits on the full buffer
        let consumer = Task { for await _ in stream { return 1 }; return 0 }
        _ = await consumer.value                                 // took one, then the iterator went away
        producer.join()                                          // would hang if the producer stayed blocked
        #expect(produced.value == 1_000)
        #expect(ObservationRuntime.liveRegistrationCount == before)
    }

    @Test("several producers, one consumer: each producer's changes arrive in its order", arguments: ObservationBackend.allCases)
    func severalProducers(backend: ObservationBackend) async {
        let threads = 4, each = 5_000
        let node = LockedNode(backend)
        let stream = node.changes(for: \.value)
        let producers = (0..<threads).map { t in
            TestThread { for i in 0..<each { node.value = t * each + i } }
        }
        var lastPerProducer = Array(repeating: -1, count: threads)
        var inOrder = true, count = 0
        for await change in stream {
            let value = change.newValue!
            let producer = value / each
            if value <= lastPerProducer[producer] { inOrder = false }
            lastPerProducer[producer] = value
            count += 1
            if count == threads * each { break }
        }
        producers.forEach { $0.join() }
        #expect(count == threads * each)
        #expect(inOrder)
    }
}
