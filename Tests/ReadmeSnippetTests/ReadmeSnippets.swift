import Foundation
import ObserveCoreMacros

// Every ```swift block of README.md, verbatim, between "// README snippet N" and
// "// end README snippet N" markers (a block may be split over several marked regions, read in
// order; `import` lines and blank lines are not compared). Around the regions: the context a
// reader's program would have (the classes a snippet uses, a function body for statements).
// ReadmeSnippetSyncTests fails when a README block and its regions differ, so the README cannot
// drift from what compiles; ReadmeSnippetTests runs the snippets that terminate.
//
// Each snippet lives in its own namespace (`enum SnippetN`), since several declare a `Person`.

// MARK: - 1. Observing properties (the macro form)

enum Snippet1 {
    @KeyValueObservable final class Address { var city = ""; init(city: String) { self.city = city } }

    // README snippet 1
    @KeyValueObservable
    final class Person {
        var name = ""
        var age = 0
        var address: Address?              // chains: person.observe(\.address?.city)
        @KeyValueIgnored var cache = 0     // not observable
        @KeyValueDependent(on: \Person.name, \Person.address?.city)
        var label: String { "\(name), \(address?.city ?? "-")" }   // announced when a dependency changes
    }
    // end README snippet 1
}

// MARK: - 2. Subclassing a macro-declared class

enum Snippet2 {
    // README snippet 2
    @KeyValueObservable
    class Member {                                      // not final: it has subclasses
        var name = ""
    }
    final class Student: Member {
        static let school = ObservableKey(\Student.school, name: "school")
        @KeyValueObserved var school = ""
    }
    // end README snippet 2

    static func run() -> (Student, [ObservationToken]) {
        // README snippet 2
        let student = Student()
        let nameToken = student.observe(\.name) { _, change in print("name:", change.newValue!) }      // Member's key
        let schoolToken = student.observe(\.school) { _, change in print("school:", change.newValue!) }
        // end README snippet 2
        return (student, [nameToken, schoolToken])
    }
}

// MARK: - 3. Declaring by hand; tokens and observer-tagged registration

enum Snippet3 {
    // README snippet 3
    final class Person: KeyValueObservable {
        let kvoRegistrar = KeyValueRegistrar()

        static let name = ObservableKey(\Person.name)
        var name = "" {
            willSet { kvoRegistrar.willSet(Person.name, of: self, from: name) }
            didSet { kvoRegistrar.didSet(Person.name, of: self, from: oldValue, to: name) }
        }

        static let age = ObservableKey(\Person.age)
        var age = 0 {
            willSet { kvoRegistrar.willSet(Person.age, of: self, from: age) }
            didSet { kvoRegistrar.didSet(Person.age, of: self, from: oldValue, to: age) }
        }
    }
    // end README snippet 3

    /// The `self` of the observer-tagged registration.
    final class AgeView {
        var rendered: [Int] = []
        func render(_ age: Int) { rendered.append(age) }

        func run() -> ObservationToken {
            // README snippet 3
            let person = Person()

            // A token, like NSKeyValueObservation: cancel it or let it go.
            let token = person.observe(\.name, options: [.old, .new]) { person, change in
                print(change.oldValue!, "->", change.newValue!)      // typed: String?, String?
            }

            // Observer-tagged, in the style of the Objective-C KVO helpers: the observer is held weakly and
            // handed back, so no [weak self]. Same (observer, key path, context) twice keeps one.
            person.addObserver(self, for: \.age, options: [.new, .skipEqualValues], context: 1) { me, person, change in
                me.render(change.newValue!)
            }
            person.removeObserver(self, for: \.age, context: 1)
            // end README snippet 3
            person.addObserver(self, for: \.age, options: [.new, .skipEqualValues], context: 1) { me, _, change in
                me.render(change.newValue!)
            }
            person.age = 36
            person.age = 36                                  // equal: skipped
            person.name = "Ada"
            return token
        }
    }
}

// MARK: - 4. Observing arrays

enum Snippet4 {
    typealias Person = Snippet3.Person

    // README snippet 4
    final class Teacher: KeyValueObservable {
        let kvoRegistrar = KeyValueRegistrar()
        static let students = ObservableKey(\Teacher.students)
        var students = ObservableArray<Person>() {
            willSet { kvoRegistrar.willSet(Teacher.students, of: self, from: students) }
            didSet { kvoRegistrar.didSet(Teacher.students, of: self, from: oldValue, to: students) }
        }
    }
    // end README snippet 4

    static func run() -> (Teacher, ObservationToken) {
        let person = Person()
        // README snippet 4
        let teacher = Teacher()
        let arrayToken = teacher.observeArray(\.students, options: [.old, .new], elementKeyPaths: [\.name]) { teacher, change in
            switch change.kind {
            case .elementChanged:
                if let (old, new) = change.elementChange(for: \.name) { print(old!, "->", new!) }   // typed: String?
            case .arrayReplaced: print("now", change.newArray!.count, "students")
            default: break
            }
            for e in change.elements { print(change.kind, e.element.name, e.oldIndex as Any, e.newIndex as Any) }
        }
        teacher.students.append(person)                       // .append, new index 0
        teacher.students.performBatchUpdates { s in           // one .batch change, coalesced
            s.insert(Person(), at: 0); s.swapAt(0, 1)
        }
        person.name = "Ada"                                   // .elementChanged, with her current index
        // end README snippet 4
        return (teacher, arrayToken)
    }
}

// MARK: - 5. Key path chains

enum Snippet5 {
    // README snippet 5
    @KeyValueObservable final class Address { var city = ""; init(city: String) { self.city = city } }
    @KeyValueObservable final class Person { var address: Address? }   // the macro lists the keys chains read
    // end README snippet 5

    static func run() -> (Person, ObservationToken) {
        // README snippet 5
        let person = Person()
        let cityToken = person.observe(\.address?.city, options: [.old, .new]) { person, change in
            print(change.oldValue ?? "nil", "->", change.newValue ?? "nil")  // String?: nil while there is no address
        }
        person.address = Address(city: "Paris")             // nil -> Paris
        person.address?.city = "Lyon"                       // Paris -> Lyon
        // end README snippet 5
        return (person, cityToken)
    }
}

// MARK: - 6. Dependent keys, by hand

enum Snippet6 {
    typealias Address = Snippet5.Address

    final class Person: KeyValueObservable, ObservableKeyListing {
        let kvoRegistrar = KeyValueRegistrar()
        static let observableKeys: [any ObservableKeyProtocol] = [firstName, lastName, address, fullName]

        static let firstName = ObservableKey(\Person.firstName)
        var firstName = "Ada" {
            willSet { kvoRegistrar.willSet(Person.firstName, of: self, from: firstName) }
            didSet { kvoRegistrar.didSet(Person.firstName, of: self, from: oldValue, to: firstName) }
        }
        static let lastName = ObservableKey(\Person.lastName)
        var lastName = "Byron" {
            willSet { kvoRegistrar.willSet(Person.lastName, of: self, from: lastName) }
            didSet { kvoRegistrar.didSet(Person.lastName, of: self, from: oldValue, to: lastName) }
        }
        static let address = ObservableKey(\Person.address)
        var address: Address? = Address(city: "Paris") {
            willSet { kvoRegistrar.willSet(Person.address, of: self, from: address) }
            didSet { kvoRegistrar.didSet(Person.address, of: self, from: oldValue, to: address) }
        }

        // README snippet 6
        static let fullName = ObservableKey(\Person.fullName, dependsOn: \.firstName, \.lastName, \.address?.city)
        var fullName: String { "\(firstName) \(lastName), \(address?.city ?? "-")" }   // list it in observableKeys
        // end README snippet 6
    }

    static func run() -> (Person, ObservationToken) {
        let person = Person()
        // README snippet 6
        let nameToken = person.observe(\.fullName, options: [.old, .new]) { _, change in
            print(change.oldValue!, "->", change.newValue!)
        }
        person.lastName = "Lovelace"                         // "Ada Byron, Paris" -> "Ada Lovelace, Paris"
        // end README snippet 6
        return (person, nameToken)
    }
}

// MARK: - 7. Change streams (compiled; the last loop runs as long as the slider lives)

enum Snippet7 {
    typealias Person = Snippet3.Person
    @KeyValueObservable final class Slider { var value = 0.0 }

    static func run(person: Person, slider: Slider, render: (Double) -> Void) async {
        // README snippet 7
        let ages = person.changes(for: \.age, options: [.old, .new])        // lossless, unbounded buffer
        Task {
            for await change in ages { print(change.oldValue!, "->", change.newValue!) }
            print("done")                                   // the person died, or the task was cancelled
        }
        for await change in slider.changes(for: \.value, buffering: .latest) { render(change.newValue!) }
        // end README snippet 7
    }
}

// MARK: - 8. An array's change stream keeps a replica

enum Snippet8 {
    @KeyValueObservable final class Job { var status = "queued" }

    /// The replica's elements' identities (a `Job` is not `Sendable`; the identities leave the task).
    static func run(jobs: ObservableArray<Job>) async -> [ObjectIdentifier] {
        // README snippet 8
        var replica = Array(jobs)
        for await change in jobs.changes(elementKeyPaths: [\.status], buffering: .bounded(256)) {
            replica = change.applying(to: replica)!          // equal to `jobs` after each change
            if replica.allSatisfy({ $0.status == "done" }) { break }
        }
        // end README snippet 8
        return replica.map(ObjectIdentifier.init)
    }
}

// MARK: - 9. Isolated delivery

enum Snippet9 {
    @KeyValueObservable final class Thermometer { var celsius = 0 }
    actor TemperatureLog {
        private(set) var readings: [Int] = []
        func record(_ celsius: Int) { readings.append(celsius) }
    }
    actor Replica {
        private(set) var contents: [Int] = []
        func apply(_ change: ArrayChange<Int>) { contents = change.applying(to: contents) ?? contents }
    }

    // README snippet 9
    @MainActor final class ThermometerViewModel {
        private(set) var text = ""
        private var token: ObservationToken?
        func show(_ thermometer: Thermometer) {
            token = thermometer.observe(\.celsius, on: MainActor.shared) { [weak self] change in
                self?.text = "\(change.newValue!) °C"             // main-actor state: checked, no hop by hand
            }
        }
    }
    // end README snippet 9

    static func run(thermometer: Thermometer, log: TemperatureLog, numbers: ObservableArray<Int>, replica: Replica)
    -> [ObservationToken] {
        // README snippet 9
        let logToken = thermometer.observe(\.celsius, on: log) { log, change in log.record(change.newValue!) }  // `log`: an actor
        let replicaToken = numbers.observe(on: replica) { replica, change in replica.apply(change) }          // arrays too
        // end README snippet 9
        return [logToken, replicaToken]
    }
}

// MARK: - 10. Bindings and post mode

enum Snippet10 {
    @KeyValueObservable final class Person { var name = "Ada"; var age = 36 }
    @KeyValueObservable final class Label { var text = ""; @KeyValueIgnored var needsLayout = false }
    @KeyValueObservable final class Cart { var count = 0 }
    @KeyValueObservable final class Mirror { var age = 0 }

    static func run(person: Person, label: Label, badge: Label, cart: Cart, mirror: Mirror,
                    log: @escaping (String, String) -> Void) {
        // README snippet 10
        label.bind(\.text, to: person, \.name)
        label.bind(\.text, to: person.bindable(\.age).filter { $0 >= 0 }.map { "\($0) years" },
                   after: { label, text in label.needsLayout = true })
        badge.bind(\.text, to: person.bindable(\.name), cart.bindable(\.count)) { name, count in
            "\(name): \(count) items"                      // several sources, reduced; fires when any changes
        }
        let binding = mirror.bind(\.age, to: person, \.age)
        binding.cancel()

        person.post(\.name) { person, change in log("renamed", change.newValue!) }   // post mode
        person.stopPosting(\.name)
        // end README snippet 10
    }
}

// MARK: - 11. Silent writers

enum Snippet11 {
    @KeyValueObservable final class Person { var name = "" }
    final class Field { var text = "" }

    static func run(person: Person, field: Field) -> ObservationToken {
        // README snippet 11
        let token = person.observe(\.name) { _, change in field.text = change.newValue! }
        withoutNotifying(token) {
            person.name = field.text          // the field's own edit: `token` is not told
        }
        person.name = "Ada"                   // told as usual
        // end README snippet 11
        return token
    }
}

// MARK: - 12. Transactions

enum Snippet12 {
    @KeyValueObservable final class Item { var price = 0 }
    @KeyValueObservable final class Order {
        var quantity = 1
        var items = ObservableArray<Item>()
    }

    static func run(order: Order, item: Item) {
        // README snippet 12
        ObservationRuntime.transaction {
            order.quantity = 3
            order.quantity = 4                  // observers of quantity: one change, old → 4
            order.items.append(item)            // observers of items: one .batch change
            order.items[0].price = 10           //   …which lists this element as modified
        }
        // end README snippet 12
    }
}

// MARK: - 13. Replicating changes to another process (both sides in one function here)

enum Snippet13 {
    @KeyValueObservable final class Job: Codable {
        var status = "queued"
        init() {}
        enum CodingKeys: String, CodingKey { case status }
        required init(from decoder: any Decoder) throws {
            status = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .status)
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(status, forKey: .status)
        }
    }

    static func source(jobs: ObservableArray<Job>, publish: @escaping ([UInt8]) -> Void) -> ObservationToken {
        // README snippet 13
        // The source process:
        let token = jobs.observe(elementKeyPaths: [\.status]) { _, change in
            let bytes = ArrayChangeRecord(change).encoded { try! JSONEncoder().encode($0) }
            publish(bytes)                                      // a pipe, a file, a message broker
        }
        // end README snippet 13
        return token
    }

    static func replica(_ replica: ObservableArray<Job>, bytes: [UInt8]) throws {
        // README snippet 13
        // The replica's process:
        let record = try ArrayChangeRecord<Job>(decoding: bytes) { try JSONDecoder().decode([Job].self, from: Data($0)) }
        try replica.apply(record)                               // observers of the replica get one .batch change
        // end README snippet 13
    }
}

// MARK: - 14. Forwarding the bytes with Redis's own client (compiled; needs a Redis server to run)

enum Snippet14 {
    // README snippet 14
    func publish(_ bytes: [UInt8]) {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        cli.arguments = ["-x", "XADD", "jobs:changes", "*", "change"]   // -x: the last argument is standard input
        let input = Pipe()
        cli.standardInput = input
        guard (try? cli.run()) != nil else { return }
        input.fileHandleForWriting.write(Data(bytes))
        try? input.fileHandleForWriting.close()
        cli.waitUntilExit()
    }
    // end README snippet 14
}
