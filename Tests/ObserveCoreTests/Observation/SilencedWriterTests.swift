import Dispatch
import Foundation
@_spi(Testing) import ObserveCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `withoutNotifying`: the writer that caused a change does not hear it back; everyone else does.
@Suite("Silenced writers: withoutNotifying", .serialized)
struct SilencedWriterTests {
    @Test("a silenced token misses the scope's changes; other observers hear them; afterwards it hears again",
          arguments: ObservationBackend.allCases)
    func silencedTokenOnly(backend: ObservationBackend) {
        let person = Person(backend)
        let mine = Log<String>(), theirs = Log<String>()
        let myToken = person.observe(\.name, options: [.new]) { _, change in mine.append(change.newValue!) }
        let theirToken = person.observe(\.name, options: [.new]) { _, change in theirs.append(change.newValue!) }
        let result = withoutNotifying(myToken) {
            person.name = "typed"
            return 42
        }
        person.name = "from elsewhere"
        #expect(result == 42, "the scope returns the body's value")
        #expect(mine.events == ["from elsewhere"])
        #expect(theirs.events == ["typed", "from elsewhere"])
        myToken.cancel()
        theirToken.cancel()
    }

    @Test("scopes nest, several tokens at once, and an outer scope's token stays silenced inside",
          arguments: ObservationBackend.allCases)
    func nestedScopes(backend: ObservationBackend) {
        let person = Person(backend)
        let log = Log<String>()
        let a = person.observe(\.age, options: [.new]) { _, change in log.append("a\(change.newValue!)") }
        let b = person.observe(\.age, options: [.new]) { _, change in log.append("b\(change.newValue!)") }
        let c = person.observe(\.age, options: [.new]) { _, change in log.append("c\(change.newValue!)") }
        withoutNotifying(a) {
            person.age = 1                                   // b, c
            withoutNotifying(b, c) {
                person.age = 2                               // nobody
            }
            person.age = 3                                   // b, c again
        }
        person.age = 4                                       // all
        #expect(log.events == ["b1", "c1", "b3", "c3", "a4", "b4", "c4"])
        for token in [a, b, c] { token.cancel() }
    }

    @Test("a change another thread makes during the scope is delivered", arguments: ObservationBackend.allCases)
    func otherThreadsAreNotSilenced(backend: ObservationBackend) {
        let counter = SharedCounter(backend)
        let log = Log<Int>()
        let token = counter.observe(\.value, options: [.new]) { _, change in log.append(change.newValue!) }
        withoutNotifying(token) {
            counter.value = 1                                // this thread: silenced
            onAnotherThread { counter.value = 2 }            // another thread: delivered
        }
        #expect(log.events == [2])
        token.cancel()
    }

    @Test("a silenced change is never queued: queue delivery decides on the writer's thread",
          arguments: ObservationBackend.allCases)
    func queuedDeliveryIsDecidedAtTheSet(backend: ObservationBackend) {
        let person = Person(backend)
        let queue = DispatchQueue(label: "silenced")
        let log = Log<String>()
        let token = person.observe(\.name, options: [.new], delivery: .queue(queue)) { _, change in
            log.append(change.newValue!)
        }
        withoutNotifying(token) { person.name = "quiet" }
        person.name = "loud"
        queue.sync {}
        #expect(log.events == ["loud"])
        token.cancel()
    }

    @Test("an array's observation: mutations and element changes in the scope are not delivered",
          arguments: ObservationBackend.allCases)
    func arrayTokens(backend: ObservationBackend) {
        let ada = Student(backend, "Ada")
        let array = ObservableArray([ada], backend: backend)
        let mine = Log<String>(), theirs = Log<String>()
        let myToken = array.observe(elementKeyPaths: [\Student.grade]) { _, change in mine.append("\(change.kind)") }
        let theirToken = array.observe(elementKeyPaths: [\Student.grade]) { _, change in theirs.append("\(change.kind)") }
        withoutNotifying(myToken) {
            array.append(Student(backend, "Grace"))
            ada.grade = 1
        }
        array.removeLast()
        #expect(mine.events == ["removeLast"])
        #expect(theirs.events == ["append", "elementChanged", "removeLast"])
        myToken.cancel()
        theirToken.cancel()
    }

    @Test("an owner's array property: a replacement in the scope is silent, and the observation still moves",
          arguments: ObservationBackend.allCases)
    func ownerArrayReplacement(backend: ObservationBackend) {
        let teacher = Teacher(backend, students: students(backend, "Ada"))
        let log = Log<String>()
        let token = teacher.observeArray(\.students, elementKeyPaths: [\.grade]) { _, change in log.append("\(change.kind)") }
        let replacement = ObservableArray(students(backend, "Grace", "Alan"), backend: backend)
        withoutNotifying(token) {
            teacher.students = replacement                  // silent
            replacement.append(Student(backend, "Edsger"))  // silent: the observation moved, silenced
        }
        replacement[0].grade = 5                            // heard, on the new array
        replacement.removeLast()
        #expect(log.events == ["elementChanged", "removeLast"])
        token.cancel()
    }

    @Test("chains and dependent keys are silenced like plain keys", arguments: ObservationBackend.allCases)
    func derivedKeys(backend: ObservationBackend) {
        let office = Office(backend, city: "Paris", building: Building(backend, name: "North"))
        let ada = Employee(backend, first: "Ada", last: "Byron", office: office)
        let log = Log<String>()
        let chain = ada.observe(\.office.building?.name, options: [.new]) { _, change in
            log.append("building \(change.newValue ?? "nil")")
        }
        let dependent = ada.observe(\.fullName, options: [.new]) { _, change in log.append("full \(change.newValue!)") }
        withoutNotifying(chain, dependent) {
            office.building?.name = "South"
            ada.lastName = "Lovelace"
        }
        office.building?.name = "East"
        ada.firstName = "Augusta"
        #expect(log.events == ["building East", "full Augusta Lovelace"])
        chain.cancel()
        dependent.cancel()
    }

    @Test("the scope ends when its body throws", arguments: ObservationBackend.allCases)
    func throwingBody(backend: ObservationBackend) {
        struct Stop: Error {}
        let person = Person(backend)
        let log = Log<String>()
        let token = person.observe(\.name, options: [.new]) { _, change in log.append(change.newValue!) }
        #expect(throws: Stop.self) {
            try withoutNotifying(token) {
                person.name = "quiet"
                throw Stop()
            }
        }
        person.name = "loud"
        #expect(log.events == ["loud"])
        token.cancel()
    }
}
