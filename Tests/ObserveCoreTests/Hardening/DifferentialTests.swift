// The C-backed and the pure-Swift-backed registries checked against each other: the same random
// operation sequences, run through a world of objects on each backend, must produce identical
// notification logs and identical introspection results.
//
// Size: OBSERVECORE_DIFF_SEQUENCES sequences (default 10,000) of OBSERVECORE_DIFF_OPS operations
// each (default 24). Seeds are sequence numbers, so a failure names the seed that replays it;
// OBSERVECORE_DIFF_DUMP=<seed> prints that sequence's log.

@_spi(Testing) import ObserveCore
import SeededRandom
import Testing

@Suite("Hardening: differential (C vs Swift)", .serialized)
struct DifferentialTests {
    @Test("random operation sequences give identical logs and introspection on both backends")
    func cAndSwiftBackendsAgree() {
        let sequences = environmentInt("OBSERVECORE_DIFF_SEQUENCES", default: 10_000)
        let length = environmentInt("OBSERVECORE_DIFF_OPS", default: 24)
        var compared = 0, lines = 0, failures = 0
        if let seed = Int(environmentString("OBSERVECORE_DIFF_DUMP") ?? "") {   // replay one sequence, printed
            print(DifferentialWorld(.c).run(seed: UInt64(seed), operations: length).joined(separator: "\n"))
        }
        expectNoLeaks("differential") { _ in
            for seed in 0..<UInt64(sequences) {
                let c = DifferentialWorld(.c).run(seed: seed, operations: length)
                let swift = DifferentialWorld(.swift).run(seed: seed, operations: length)
                compared += 1
                lines += c.count
                if c != swift {
                    failures += 1
                    let at = zip(c, swift).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(c.count, swift.count)
                    let context = max(0, at - 6)
                    Issue.record("""
                        seed \(seed): logs differ at line \(at) (C \(c.count) lines, Swift \(swift.count))
                        C:     \(c[context..<min(c.count, at + 3)].joined(separator: "\n       "))
                        Swift: \(swift[context..<min(swift.count, at + 3)].joined(separator: "\n       "))
                        """)
                    if failures >= 3 { break }
                }
            }
        }
        #expect(lines > compared, "the sequences produced notifications to compare")
        print("differential: \(compared) sequences of \(length) operations compared, \(lines) log lines each side, \(failures) differing")
    }
}

/// A small world of observable objects on one backend, driven by a seeded generator. Everything
/// it does depends only on the generator and on what the world has observed, so two worlds on
/// different backends stay in step exactly as long as the backends behave alike. Every
/// notification and every introspection result is appended to `log`, with objects named by
/// label (never by address).
final class DifferentialWorld {
    let backend: ObservationBackend
    private var rng = SplitMix64(seed: 0)
    private var log: [String] = []
    private var labels: [ObjectIdentifier: String] = [:]
    private var generation = 0

    private var people: [Person?] = []
    private var watchers: [AnyObject?] = []          // Watcher (plain) and ObservableWatcher
    private var tokens: [ObservationToken?] = Array(repeating: nil, count: 6)
    private var students: [Student] = []
    private var teacher: Teacher?
    private var loose: ObservableArray<Student>?     // an array observed directly, held by nobody else
    private var liveBaseline = 0

    nonisolated(unsafe) static let keyPaths: [PartialKeyPath<Person>] = [\.age, \.name, \.nickname, \.score, \.isActive, \.position]
    /// Readable names of the key paths that appear in logs (a computed key path prints its address).
    nonisolated(unsafe) static let keyNames: [AnyKeyPath: String] = [
        \Person.age: "age", \Person.name: "name", \Person.nickname: "nickname", \Person.score: "score",
        \Person.isActive: "isActive", \Person.position: "position", \Student.grade: "grade", \Student.name: "s.name",
    ]
    private func key(_ keyPath: AnyKeyPath?) -> String { keyPath.map { Self.keyNames[$0] ?? "\($0)" } ?? "-" }

    init(_ backend: ObservationBackend) { self.backend = backend }

    // MARK: Labels

    private func name(_ object: AnyObject?) -> String {
        guard let object else { return "nil" }
        return labels[ObjectIdentifier(object)] ?? "?\(type(of: object))"
    }

    @discardableResult
    private func label<T: AnyObject>(_ object: T, _ prefix: String) -> T {
        generation += 1
        labels[ObjectIdentifier(object)] = "\(prefix)#\(generation)"
        return object
    }

    private func describe<V>(_ value: V?) -> String { value.map { "\($0)" } ?? "-" }

    private func record<V>(_ registration: String, _ keyPath: AnyKeyPath, _ object: AnyObject, _ change: ObservedChange<V>) {
        log.append("  \(registration) \(name(object)) \(key(keyPath)) old=\(describe(change.oldValue)) new=\(describe(change.newValue))"
                   + (change.isPrior ? " prior" : "") + (change.isInitial ? " initial" : ""))
    }

    private func record(_ registration: String, _ change: ArrayChange<Student>) {
        var line = "  \(registration) \(change.kind) \(change.oldCount)->\(change.newCount) runs=\(change.runs.map { "\($0.kind)\($0.range)\($0.destination.map { ">\($0)" } ?? "")" })"
        line += " elements=\(change.elements.map { "\($0.element.name):\(describe($0.oldIndex))>\(describe($0.newIndex))" })"
        if let keyPath = change.elementKeyPath {
            line += " \(key(keyPath)) \(describe(change.elementOldValue)) -> \(describe(change.elementNewValue))"
        }
        if change.kind == .arrayReplaced { line += " arrays \(name(change.oldArray)) -> \(name(change.newArray))" }
        if change.isInitial { line += " initial" }
        log.append(line)
    }

    // MARK: Running

    func run(seed: UInt64, operations: Int) -> [String] {
        rng = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        liveBaseline = ObservationRuntime.liveRegistrationCount
        people = (0..<3).map { i in label(Person(backend, name: "p\(i)", age: i), "P") }
        watchers = (0..<4).map { i in i < 2 ? label(Watcher(), "W") : label(ObservableWatcher(backend), "OW") }
        students = (0..<5).map { i in label(Student(backend, "s\(i)"), "S") }
        teacher = label(Teacher(backend, students: Array(students.prefix(3))), "T")
        label(teacher!.students, "A")
        loose = label(ObservableArray(Array(students.suffix(2)), backend: backend), "A")
        for step in 0..<operations {
            let dice = rng.below(100)
            log.append("op \(step): \(dice)")
            perform(dice)
        }
        introspect()
        // Tear down: everything goes, and with it every registration.
        tokens = tokens.map { _ in nil }
        people = []
        watchers = []
        teacher = nil
        loose = nil
        students = []
        log.append("end: live registrations \(ObservationRuntime.liveRegistrationCount - liveBaseline)")
        return log
    }

    private func randomOptions(equatable: Bool = true) -> ObservationOptions {
        var options: ObservationOptions = []
        if rng.below(3) != 0 { options.insert(.new) }
        if rng.below(2) == 0 { options.insert(.old) }
        if rng.below(5) == 0 { options.insert(.initial) }
        if rng.below(5) == 0 { options.insert(.prior) }
        if equatable && rng.below(4) == 0 { options.insert(.skipEqualValues) }
        return options
    }

    private var anyPerson: Person? { people.isEmpty ? nil : people[rng.below(people.count)] }
    private var anyWatcher: AnyObject? { watchers.isEmpty ? nil : watchers[rng.below(watchers.count)] }

    private func perform(_ dice: Int) {
        switch dice {
        case 0..<30: setProperty()
        case 30..<40: observeWithToken()
        case 40..<50: addObserver()
        case 50..<56: removeSomething()
        case 56..<59:
            let slot = rng.below(tokens.count)
            if rng.below(2) == 0 { tokens[slot]?.cancel() } else { tokens[slot] = nil }
        case 59..<62: lifetimes()
        case 62..<65: reentrantObservers()
        case 65..<68: if let person = anyPerson { introspect(person) }
        case 68..<83: mutateArray()
        case 83..<90: students[rng.below(students.count)].grade = rng.below(3)
        case 90..<93: if rng.below(2) == 0 { students[rng.below(students.count)].name = "s\(rng.below(9))" } else { replaceArray() }
        case 93..<98: observeArray()
        default: introspect()
        }
    }

    /// A key index (into `keyPaths`), biased towards age and name so that registrations and
    /// sets meet often.
    private func anyKey() -> Int {
        let dice = rng.below(20)
        return dice < 7 ? 0 : dice < 12 ? 1 : 2 + (dice - 12) / 2
    }

    private func setProperty() {
        guard let person = anyPerson else { return }
        let value = rng.below(3)   // small range: equal values happen, so .skipEqualValues matters
        switch anyKey() {
        case 0: person.age = value
        case 1: person.name = "n\(value)"
        case 2: person.nickname = value == 0 ? nil : "k\(value)"
        case 3: person.score = Double(value) / 2
        case 4: person.isActive = value == 1
        default: person.position = Point(x: value, y: 0)
        }
    }

    /// A typed registration of `handler`'s kind for key `key` (0..<6) on `person`.
    private func observe(_ person: Person, key: Int, options: ObservationOptions, _ tag: String) -> ObservationToken {
        switch key {
        case 0: return person.observe(\.age, options: options) { [unowned self] p, c in record(tag, \Person.age, p, c) }
        case 1: return person.observe(\.name, options: options) { [unowned self] p, c in record(tag, \Person.name, p, c) }
        case 2: return person.observe(\.nickname, options: options) { [unowned self] p, c in record(tag, \Person.nickname, p, c) }
        case 3: return person.observe(\.score, options: options) { [unowned self] p, c in record(tag, \Person.score, p, c) }
        case 4: return person.observe(\.isActive, options: options) { [unowned self] p, c in record(tag, \Person.isActive, p, c) }
        default: return person.observe(\.position, options: options) { [unowned self] p, c in record(tag, \Person.position, p, c) }
        }
    }

    private func observeWithToken() {
        guard let person = anyPerson else { return }
        let slot = rng.below(tokens.count)
        let tag = "token\(slot)"
        let options = randomOptions()
        switch rng.below(4) {
        case 0:
            // Several key paths of one type, told which changed.
            tokens[slot] = person.observe([\.age], options: options) { [unowned self] p, keyPath, c in record(tag + "[]", keyPath, p, c) }
        case 1:
            let keyPaths = (0..<2).map { _ in Self.keyPaths[anyKey()] }
            tokens[slot] = person.observe(keyPaths, options: options.subtracting(.skipEqualValues)) { [unowned self] p, keyPath, c in
                record(tag + "[any]", keyPath, p, c)
            }
        default:
            tokens[slot] = observe(person, key: anyKey(), options: options, tag)
        }
    }

    private func addObserver() {
        guard let person = anyPerson, let watcher = anyWatcher else { return }
        // Typed observers (a generic parameter bound to the `AnyObject` existential crashes the
        // Swift 6.3.1 compiler in SILGen).
        if let watcher = watcher as? Watcher { addObserver(watcher, to: person) }
        if let watcher = watcher as? ObservableWatcher { addObserver(watcher, to: person) }
    }

    private func addObserver<W: AnyObject>(_ watcher: W, to person: Person) {
        let context = ObservationContext(rawValue: UInt(rng.below(3)))
        let options = randomOptions()
        let tag = "ctx\(context.rawValue)"
        switch rng.below(4) {
        case 0:
            person.addObserver(watcher, for: \.age, options: options, context: context) { [unowned self] w, p, c in
                record("\(name(w)) \(tag)", \Person.age, p, c)
            }
        case 1:
            person.addObserver(watcher, for: \.name, options: options, context: context) { [unowned self] w, p, c in
                record("\(name(w)) \(tag)", \Person.name, p, c)
            }
        case 2:
            person.addObserver(watcher, for: [\.score], options: options, context: context) { [unowned self] w, p, keyPath, c in
                record("\(name(w)) \(tag) []", keyPath, p, c)
            }
        default:
            person.addObserver(watcher, for: [\.nickname, \.isActive] as [PartialKeyPath<Person>],
                               options: options.subtracting(.skipEqualValues), context: context) { [unowned self] w, p, keyPath, c in
                record("\(name(w)) \(tag) [any]", keyPath, p, c)
            }
        }
    }

    private func removeSomething() {
        guard let person = anyPerson else { return }
        let keyPath = Self.keyPaths[anyKey()]
        let context = ObservationContext(rawValue: UInt(rng.below(3)))
        switch rng.below(7) {
        case 0: if let w = anyWatcher { person.removeObserver(w, for: keyPath) }
        case 1: if let w = anyWatcher { person.removeObserver(w, for: keyPath, context: context) }
        case 2: if let w = anyWatcher { person.removeObserver(w, for: [keyPath, Self.keyPaths[rng.below(6)]]) }
        case 3: person.removeObservers(watchers.compactMap { $0 }.filter { _ in rng.below(2) == 0 }, for: keyPath)
        case 4: person.removeAllObservers(for: keyPath)
        case 5: if rng.below(3) == 0 { person.removeAllObservers() }
        default: person.removeObserver(Watcher(), for: keyPath)   // not registered: a no-op
        }
    }

    private func lifetimes() {
        switch rng.below(4) {
        case 0: if !people.isEmpty { people[rng.below(people.count)] = nil }
        case 1: if !people.isEmpty { people[rng.below(people.count)] = label(Person(backend, name: "new"), "P") }
        case 2: if !watchers.isEmpty { watchers[rng.below(watchers.count)] = nil }
        default:
            if !watchers.isEmpty {
                let i = rng.below(watchers.count)
                watchers[i] = rng.below(2) == 0 ? label(Watcher(), "W") : label(ObservableWatcher(backend), "OW")
            }
        }
    }

    /// Handlers that change what is observed: one sets another object, one removes itself.
    private func reentrantObservers() {
        guard let person = anyPerson, let other = anyPerson, person !== other else { return }
        let slot = rng.below(tokens.count)
        if rng.below(2) == 0 {
            tokens[slot] = person.observe(\.age, options: [.new]) { [unowned self, weak other] p, c in
                record("relay\(slot)", \Person.age, p, c)
                other?.score = Double(c.newValue ?? 0)
            }
        } else {
            tokens[slot] = person.observe(\.age, options: [.old, .new]) { [unowned self] p, c in
                record("once\(slot)", \Person.age, p, c)
                tokens[slot]?.cancel()
            }
        }
    }

    // MARK: Arrays

    private func mutateArray() {
        guard let array = rng.below(3) == 0 ? loose : teacher?.students else { return }
        if rng.below(4) == 0 {
            let edits = 1 + rng.below(4)
            array.performBatchUpdates { a in for _ in 0..<edits { edit(a) } }
        } else {
            edit(array)
        }
    }

    private func edit(_ a: ObservableArray<Student>) {
        let n = a.count
        let pick = { [unowned self] in students[rng.below(students.count)] }
        switch rng.below(12) {
        case 0: a.append(pick())
        case 1: a.insert(pick(), at: rng.below(n + 1))
        case 2: if n > 0 { a.remove(at: rng.below(n)) }
        case 3: if n > 0 { a.removeLast() }
        case 4: if n > 0 { a.swapAt(rng.below(n), rng.below(n)) }
        case 5: if n > 0 { a[rng.below(n)] = pick() }
        case 6: if n > 1 { a.move(from: rng.below(n), to: rng.below(n)) }
        case 7: let s = pick(); a.removeAll(of: s)
        case 8: a.append(contentsOf: [pick(), pick()])
        case 9: if rng.below(2) == 0 { a.sort { $0.name < $1.name } } else { a.reverse() }
        case 10: if n > 0 { let i = rng.below(n); a.replaceSubrange(i..<min(n, i + 2), with: [pick()]) }
        default: if rng.below(3) == 0 { a.removeAll() } else { _ = a.popLast() }
        }
    }

    private func replaceArray() {
        guard let teacher else { return }
        teacher.students = label(ObservableArray((0..<rng.below(4)).map { _ in students[rng.below(students.count)] },
                                                 backend: backend), "A")
    }

    private func observeArray() {
        let slot = rng.below(tokens.count)
        let tag = "array\(slot)"
        let options: ArrayObservationOptions = [[], [.new], [.old, .new], [.initial, .new]][rng.below(4)]
        let elementKeys: [PartialKeyPath<Student>] = [[], [\.grade], [\.grade, \.name]][rng.below(3)]
        switch rng.below(4) {
        case 0:
            guard let teacher else { return }
            tokens[slot] = teacher.observeArray(\.students, options: options, elementKeyPaths: elementKeys) { [unowned self] t, c in
                record("\(tag) via \(name(t))", c)
            }
        case 1:
            guard let teacher else { return }
            tokens[slot] = teacher.observeArray(\.students, options: options) { [unowned self] t, c in record("\(tag) via \(name(t))", c) }
        case 2:
            guard let loose else { return }
            tokens[slot] = loose.observe(options: options, elementKeyPaths: elementKeys) { [unowned self] _, c in record(tag, c) }
        default:
            guard let loose, let watcher = anyWatcher else { return }
            let context = ObservationContext(rawValue: UInt(rng.below(2)))
            if let watcher = watcher as? Watcher { addArrayObserver(watcher, loose, options, elementKeys, context) }
            if let watcher = watcher as? ObservableWatcher { addArrayObserver(watcher, loose, options, elementKeys, context) }
        }
    }

    private func addArrayObserver<W: AnyObject>(_ watcher: W, _ array: ObservableArray<Student>, _ options: ArrayObservationOptions,
                                                _ elementKeys: [PartialKeyPath<Student>], _ context: ObservationContext) {
        array.addObserver(watcher, options: options, elementKeyPaths: elementKeys, context: context) { [unowned self] w, _, c in
            record("\(name(w)) on array", c)
        }
    }

    // MARK: Introspection

    private func introspect(_ person: Person) {
        var line = "introspect \(name(person)): count=\(person.observationCount)"
        line += " keys=\(person.observedKeyPaths.map { key($0) }.sorted())"
        for keyPath in Self.keyPaths {
            let observers = person.observers(for: keyPath).map(name).sorted()
            if !observers.isEmpty { line += " \(key(keyPath))=\(observers)" }
        }
        log.append(line)
    }

    private func introspect() {
        for person in people.compactMap({ $0 }) { introspect(person) }
        for watcher in watchers.compactMap({ $0 }) {
            let observed = ObservationRuntime.observations(of: watcher).map { observation in
                "\(labels[observation.object] ?? "?").\(key(observation.keyPath))"
            }
            log.append("observations of \(name(watcher)): \(observed.sorted())")
        }
        if let loose { log.append("loose array: count=\(loose.observationCount) \(loose.map(\.name))") }
        if let teacher { log.append("teacher: count=\(teacher.observationCount) students=\(teacher.students.map(\.name))") }
        log.append("live registrations: \(ObservationRuntime.liveRegistrationCount - liveBaseline)")
    }
}
