import Dispatch
import Foundation
@_spi(Testing) import ObserveCore
import Testing

/// `ObservationRuntime.transaction`: several writes, one reaction per observer and key.
@Suite("Transactions", .serialized)
struct TransactionTests {
    @Test("each observer gets one change per key: the first old value, the last new one, at the end",
          arguments: ObservationBackend.allCases)
    func coalescedPerKey(backend: ObservationBackend) {
        let person = Person(backend, name: "a", age: 1)
        let log = Log<String>()
        let names = person.observe(\.name, options: [.old, .new]) { _, change in
            log.append("name \(change.oldValue!)->\(change.newValue!)")
        }
        let ages = person.observe(\.age, options: [.old, .new]) { _, change in
            log.append("age \(change.oldValue!)->\(change.newValue!)")
        }
        let result = ObservationRuntime.transaction {
            person.name = "b"
            person.age = 2
            person.name = "c"
            #expect(log.events.isEmpty, "nothing is delivered inside the transaction")
            return "done"
        }
        #expect(result == "done")
        #expect(log.events == ["name a->c", "age 1->2"], "in the order the keys were first set")
        person.name = "d"
        #expect(log.events.last == "name c->d", "after the transaction, sets are delivered as usual")
        names.cancel()
        ages.cancel()
    }

    @Test("a key set back to where it began reports nothing to an observer that skips equal values",
          arguments: ObservationBackend.allCases)
    func roundTripIsSkipped(backend: ObservationBackend) {
        let person = Person(backend, name: "a")
        let skipping = Log<String>(), all = Log<String>()
        let t1 = person.observe(\.name, options: [.new, .skipEqualValues]) { _, change in skipping.append(change.newValue!) }
        let t2 = person.observe(\.name, options: [.old, .new]) { _, change in all.append("\(change.oldValue!)->\(change.newValue!)") }
        ObservationRuntime.transaction {
            person.name = "b"
            person.name = "a"
        }
        #expect(skipping.events.isEmpty)
        #expect(all.events == ["a->a"], "without skipEqualValues the observer is told the key was set")
        t1.cancel()
        t2.cancel()
    }

    @Test("nested transactions deliver once, at the outermost end; prior is told once, at the first set",
          arguments: ObservationBackend.allCases)
    func nestingAndPrior(backend: ObservationBackend) {
        let person = Person(backend, age: 1)
        let log = Log<String>()
        let token = person.observe(\.age, options: [.old, .new, .prior]) { _, change in
            log.append(change.isPrior ? "prior \(change.oldValue!)" : "\(change.oldValue!)->\(change.newValue!)")
        }
        ObservationRuntime.transaction {
            person.age = 2
            ObservationRuntime.transaction { person.age = 3 }
            #expect(log.events == ["prior 1"], "the inner end delivers nothing")
            person.age = 4
        }
        #expect(log.events == ["prior 1", "1->4"])
        token.cancel()
    }

    @Test("an array's mutations and element changes make one batch change; a replica stays right",
          arguments: ObservationBackend.allCases)
    func arraysCoalesceIntoOneBatch(backend: ObservationBackend) {
        let ada = Student(backend, "Ada"), grace = Student(backend, "Grace")
        let array = ObservableArray([ada, grace], backend: backend)
        var replica = Array(array)
        var kinds: [ArrayChange<Student>.Kind] = []
        let token = array.observe(options: [.old, .new], elementKeyPaths: [\Student.grade]) { _, change in
            kinds.append(change.kind)
            replica = change.applying(to: replica)!
        }
        ObservationRuntime.transaction {
            array.append(Student(backend, "Alan"))
            ada.grade = 5
            array.swapAt(0, 2)
            array.remove(at: 1)
            grace.grade = 3
        }
        #expect(kinds == [.batch])
        #expect(replica.map(\.name) == array.map(\.name))
        // A sort and a move of offsets join the transaction too (the sort did not).
        kinds.removeAll()
        ObservationRuntime.transaction {
            array.sort { $0.name > $1.name }
            array.move(fromOffsets: [0], toOffset: 2)
            array.removeAll { $0.name == "Nobody" }
        }
        #expect(kinds == [.batch])
        #expect(replica.map(\.name) == array.map(\.name) && replica.map(\.name) == ["Ada", "Alan"])
        token.cancel()
    }

    @Test("an owner's array replaced, then mutated, in one transaction: one replacement holding the mutation",
          arguments: ObservationBackend.allCases)
    func replacedThenMutatedArray(backend: ObservationBackend) {
        let teacher = Teacher(backend, students: students(backend, "Ada"))
        var replica = teacher.students.map(\.name)
        var kinds: [ArrayChange<Student>.Kind] = []
        let token = teacher.observeArray(\.students, options: [.old, .new]) { _, change in
            kinds.append(change.kind)
            replica = change.applying(to: replica.map { Student(backend, $0) })!.map(\.name)
        }
        let replacement = ObservableArray(students(backend, "Grace"), backend: backend)
        var others: [ArrayChange<Student>.Kind] = []
        let other = replacement.observe { _, change in others.append(change.kind) }   // so the append joins a batch
        ObservationRuntime.transaction {
            teacher.students = replacement
            replacement.append(Student(backend, "Alan"))
        }
        #expect(kinds == [.arrayReplaced], "the append is in the replacement's contents, not told again")
        #expect(others == [.batch], "the array's own observer is told the append")
        other.cancel()
        #expect(replica == ["Grace", "Alan"])
        replacement.append(Student(backend, "Edsger"))
        #expect(kinds == [.arrayReplaced, .append], "the observation follows the new array")
        token.cancel()
    }

    @Test("a runaway transaction is reported and still closes its arrays' batches")
    func runawayClosesBatches() {
        let person = Person(.c)
        let numbers = ObservableArray([0], backend: .c)
        let watcher = numbers.observe { _, _ in }                              // observed: mutations join batches
        var reports: [String] = []
        let previous = ObservationRuntime.runawayRecursionHandler
        nonisolated(unsafe) var captured: [String] = []
        ObservationRuntime.runawayRecursionHandler = { captured.append($0) }
        defer { ObservationRuntime.runawayRecursionHandler = previous }
        let echo = person.observe(\.age) { person, _ in                       // sets what it observes, forever,
            person.age += 1                                                     // and touches the array every round
            numbers.append(person.age)
        }
        ObservationRuntime.transaction {
            person.age = 1
            numbers.append(1)
        }
        reports = captured
        echo.cancel()
        #expect(reports.count == 1 && reports[0].contains("runaway recursion"))
        var told = 0
        let token = numbers.observe { _, _ in told += 1 }
        numbers.append(2)
        #expect(told == 1, "the array's batch was closed: it notifies again")
        token.cancel()
        watcher.cancel()
    }

    @Test("chains, dependent keys and bindings react once, to the coalesced change", arguments: ObservationBackend.allCases)
    func derivedKeysReactOnce(backend: ObservationBackend) {
        let office = Office(backend, city: "Paris")
        let ada = Employee(backend, first: "Ada", last: "Byron", office: office)
        let log = Log<String>()
        let chain = ada.observe(\.office.city, options: [.new]) { _, change in log.append("city \(change.newValue!)") }
        let full = ada.observe(\.fullName, options: [.old, .new]) { _, change in
            log.append("\(change.oldValue!) -> \(change.newValue!)")
        }
        let gauge = Gauge(backend)
        let binding = gauge.bind(\.text, to: ada, \.lastName)
        ObservationRuntime.transaction {
            office.city = "Lyon"
            office.city = "Nice"
            ada.firstName = "Augusta"
            ada.lastName = "King"
            ada.lastName = "Lovelace"
            #expect(gauge.text == "Byron", "the binding waits for the end too")
        }
        #expect(log.events == ["city Nice", "Ada Byron -> Augusta Lovelace"], "the dependent key changes once")
        #expect(gauge.text == "Lovelace")
        chain.cancel()
        full.cancel()
        binding.cancel()
    }

    @Test("what handlers set while the transaction delivers is delivered after that round, coalesced",
          arguments: ObservationBackend.allCases)
    func handlersSetsAreCoalescedToo(backend: ObservationBackend) {
        let person = Person(backend)
        let log = Log<String>()
        let echo = person.observe(\.name) { person, _ in person.age += 1 }     // one age change per name change
        let ages = person.observe(\.age, options: [.old, .new]) { _, change in
            log.append("age \(change.oldValue!)->\(change.newValue!)")
        }
        let names = person.observe(\.name, options: [.new]) { _, change in log.append("name \(change.newValue!)") }
        ObservationRuntime.transaction {
            person.name = "a"
            person.name = "b"
        }
        #expect(log.events == ["name b", "age 0->1"], "the name changed once, so the echo set the age once")
        for token in [echo, ages, names] { token.cancel() }
    }

    @Test("another thread's sets during a transaction are delivered as usual", arguments: ObservationBackend.allCases)
    func otherThreadsAreNotHeld(backend: ObservationBackend) {
        let counter = SharedCounter(backend)
        let log = Log<Int>()
        let token = counter.observe(\.value, options: [.new]) { _, change in log.append(change.newValue!) }
        ObservationRuntime.transaction {
            counter.value = 1
            onAnotherThread { counter.value = 2 }
            #expect(log.events == [2])
        }
        #expect(log.events == [2, 1], "this thread's set is delivered at the end")
        token.cancel()
    }

    @Test("a transaction ends, and delivers, when its body throws; a silenced token stays silent",
          arguments: ObservationBackend.allCases)
    func throwingAndSilenced(backend: ObservationBackend) {
        struct Stop: Error {}
        let person = Person(backend)
        let heard = Log<String>(), silenced = Log<String>()
        let token = person.observe(\.name, options: [.new]) { _, change in heard.append(change.newValue!) }
        let quiet = person.observe(\.name, options: [.new]) { _, change in silenced.append(change.newValue!) }
        #expect(throws: Stop.self) {
            try ObservationRuntime.transaction {
                try withoutNotifying(quiet) {
                    person.name = "x"
                    throw Stop()
                }
            }
        }
        #expect(heard.events == ["x"])
        #expect(silenced.events.isEmpty)
        token.cancel()
        quiet.cancel()
    }
}
