import Dispatch
@_spi(Testing) import ObserveCore
import Testing

@Suite("Delivery")
struct DeliveryTests {
    @Test("inline delivery runs on the mutating thread before the setter returns", arguments: ObservationBackend.allCases)
    func inlineDeliveryIsSynchronous(backend: ObservationBackend) {
        let person = Person(backend)
        var seen = -1
        let token = person.observe(\.age) { _, change in seen = change.newValue! }
        person.age = 42
        #expect(seen == 42)
        token.cancel()
    }

    @Test("queue delivery runs on the queue, in order", arguments: ObservationBackend.allCases)
    func queueDeliveryRunsOnTheQueueInOrder(backend: ObservationBackend) {
        let person = Person(backend)
        let queue = DispatchQueue(label: "observe-core.delivery-test")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 1)
        let log = Log<(Int, Bool)>()
        let token = person.observe(\.age, delivery: .queue(queue)) { _, change in
            log.append((change.newValue!, DispatchQueue.getSpecific(key: key) == 1))
        }
        for i in 1...100 { person.age = i }
        queue.sync {}
        #expect(log.events.map(\.0) == Array(1...100))
        #expect(log.events.allSatisfy { $0.1 })
        token.cancel()
    }

    @Test("queue delivery skips an observer that died before its turn", arguments: ObservationBackend.allCases)
    func queueDeliverySkipsDeadObserver(backend: ObservationBackend) {
        let person = Person(backend)
        let queue = DispatchQueue(label: "observe-core.delivery-test.dead")
        let log = Log<Int>()
        var watcher: Watcher? = Watcher()
        queue.suspend()
        person.addObserver(watcher!, for: \.age, delivery: .queue(queue)) { _, _, change in log.append(change.newValue!) }
        person.age = 1
        watcher = nil
        queue.resume()
        queue.sync {}
        #expect(log.count == 0)
    }

    @Test("queue delivery keeps the object alive until the handler ran", arguments: ObservationBackend.allCases)
    func queueDeliveryKeepsObjectAlive(backend: ObservationBackend) {
        let queue = DispatchQueue(label: "observe-core.delivery-test.alive")
        let log = Log<String>()
        queue.suspend()
        var token: ObservationToken?
        do {
            let person = Person(backend)
            token = person.observe(\.name, delivery: .queue(queue)) { person, change in
                log.append("\(person.age) \(change.newValue!)")
            }
            person.name = "last words"
        }
        queue.resume()
        queue.sync {}
        #expect(log.events == ["0 last words"])
        _ = token
    }
}
