import Dispatch
import ObserveCoreMacros
import Testing

/// The README's snippets, run: what each says happens does.
@Suite("README snippets run as described", .serialized)
struct ReadmeSnippetTests {
    @Test("1: a macro-declared class's dependent key fires when a dependency changes")
    func macroDeclaration() {
        let person = Snippet1.Person()
        var labels: [String] = []
        let token = person.observe(\.label, options: [.new]) { _, change in labels.append(change.newValue!) }
        person.name = "Ada"
        person.address = Snippet1.Address(city: "Paris")
        person.cache = 1                               // ignored: announces nothing
        #expect(labels == ["Ada, -", "Ada, Paris"])
        token.cancel()
    }

    @Test("2: a subclass's key paths reach its own and its superclass's keys")
    func subclassing() {
        let (student, tokens) = Snippet2.run()
        var heard: [String] = []
        let more = [student.observe(\.name) { _, change in heard.append(change.newValue!) },
                    student.observe(\.school) { _, change in heard.append(change.newValue!) }]
        student.name = "Ada"
        student.school = "Cambridge"
        #expect(heard == ["Ada", "Cambridge"])
        for token in tokens + more { token.cancel() }
    }

    @Test("3: a token, and an observer-tagged registration that skips equal values")
    func handWritten() {
        let view = Snippet3.AgeView()
        let token = view.run()
        #expect(view.rendered == [36], "the equal second set is skipped")
        token.cancel()
    }

    @Test("4: an array's mutations and its elements' changes reach one observer")
    func arrays() {
        let (teacher, token) = Snippet4.run()
        #expect(teacher.students.count == 2)
        #expect(teacher.students[0].name == "Ada", "the insert moved Ada to index 1, the swap back to 0")
        token.cancel()
    }

    @Test("5: a chain through an optional link reports nil, then the city")
    func chains() {
        let (person, token) = Snippet5.run()
        var heard: [String?] = []
        let more = person.observe(\.address?.city, options: [.new]) { _, change in heard.append(change.newValue ?? nil) }
        person.address?.city = "Nice"
        person.address = nil
        #expect(heard == ["Nice", nil])
        token.cancel()
        more.cancel()
    }

    @Test("6: a dependent key declared by hand reports recomputed values")
    func dependentKeys() {
        let (person, token) = Snippet6.run()
        var heard: [String] = []
        let more = person.observe(\.fullName, options: [.old, .new]) { _, change in
            heard.append("\(change.oldValue!) -> \(change.newValue!)")
        }
        person.address?.city = "Lyon"
        #expect(heard == ["Ada Lovelace, Paris -> Ada Lovelace, Lyon"])
        token.cancel()
        more.cancel()
    }

    @Test("8: an array's change stream keeps a replica equal to the array, until every job is done")
    func replicaFromStream() async {
        let jobs = ObservableArray((0..<3).map { _ in Snippet8.Job() })
        let replica = Task { await Snippet8.run(jobs: jobs) }
        // The stream registers when the task starts: wait until it has.
        while jobs.observationCount == 0 { await Task.yield() }
        jobs.append(Snippet8.Job())
        jobs[0].status = "done"
        jobs.swapAt(0, 3)
        jobs.remove(at: 1)
        for job in jobs { job.status = "done" }          // the last of these ends the loop
        #expect(await replica.value == jobs.map(ObjectIdentifier.init))
    }

    @Test("9: delivery isolated to the main actor and to actors")
    @MainActor
    func isolatedDelivery() async {
        let thermometer = Snippet9.Thermometer()
        let model = Snippet9.ThermometerViewModel()
        model.show(thermometer)
        let log = Snippet9.TemperatureLog(), replica = Snippet9.Replica()
        let numbers = ObservableArray<Int>()
        let tokens = Snippet9.run(thermometer: thermometer, log: log, numbers: numbers, replica: replica)
        thermometer.celsius = 21
        numbers.append(contentsOf: [1, 2, 3])
        for _ in 0..<10_000 {                  // deliveries are asynchronous: wait for them, at most ~10 s
            if !model.text.isEmpty, await !log.readings.isEmpty, await !replica.contents.isEmpty { break }
            try? await Task.sleep(for: .milliseconds(1))
        }
        #expect(model.text == "21 °C")
        #expect(await log.readings == [21])
        #expect(await replica.contents == [1, 2, 3])
        for token in tokens { token.cancel() }
    }

    @Test("10: bindings write their targets; post mode announces, stopPosting ends it")
    func bindingsAndPosting() {
        let person = Snippet10.Person(), label = Snippet10.Label(), badge = Snippet10.Label()
        let cart = Snippet10.Cart(), mirror = Snippet10.Mirror()
        var logged: [String] = []
        Snippet10.run(person: person, label: label, badge: badge, cart: cart, mirror: mirror) { logged.append("\($0) \($1)") }
        person.age = 37
        #expect(label.text == "37 years" && label.needsLayout)
        cart.count = 2
        #expect(badge.text == "Ada: 2 items")
        #expect(mirror.age == 36, "a binding writes the current value at once; cancelled, it wrote no later change")
        person.name = "Grace"
        #expect(logged.isEmpty, "posting stopped")
    }

    @Test("11: a silenced writer does not hear its own change back; later changes reach it")
    func silentWriter() {
        let person = Snippet11.Person(), field = Snippet11.Field()
        field.text = "typed"
        var others: [String] = []
        let other = person.observe(\.name) { _, change in others.append(change.newValue!) }
        let token = Snippet11.run(person: person, field: field)
        #expect(field.text == "Ada", "the field heard only the change made outside the scope")
        #expect(others == ["typed", "Ada"], "other observers heard both")
        token.cancel()
        other.cancel()
    }

    @Test("12: a transaction tells each observer once: one property change, one batch per array")
    func transaction() {
        let order = Snippet12.Order(), existing = Snippet12.Item()
        order.items.append(existing)
        var quantities: [String] = [], kinds: [ArrayChange<Snippet12.Item>.Kind] = []
        let quantity = order.observe(\.quantity, options: [.old, .new]) { _, change in
            quantities.append("\(change.oldValue!) -> \(change.newValue!)")
        }
        let items = order.observeArray(\.items, elementKeyPaths: [\.price]) { _, change in kinds.append(change.kind) }
        Snippet12.run(order: order, item: Snippet12.Item())
        #expect(quantities == ["1 -> 4"])
        #expect(kinds == [.batch])
        #expect(order.items[0].price == 10)
        quantity.cancel()
        items.cancel()
    }

    @Test("13: a replica fed the source's records ends equal to the source")
    func replication() throws {
        let jobs = ObservableArray((0..<4).map { _ in Snippet13.Job() })
        let replica = ObservableArray(jobs.map { job in Snippet13.Job() })
        var sent: [[UInt8]] = []
        let token = Snippet13.source(jobs: jobs) { sent.append($0) }
        jobs[2].status = "done"
        jobs.append(Snippet13.Job())
        jobs.swapAt(0, 4)
        token.cancel()
        for bytes in sent { try Snippet13.replica(replica, bytes: bytes) }
        #expect(replica.map(\.status) == jobs.map(\.status))
        #expect(sent.count == 3)
    }
}
