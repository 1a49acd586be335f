@_spi(Testing) import ObserveCore
import SeededRandom
import Observation
import OpenCombine
import Synchronization

// The array scenarios' elements and the array-level peers.
//
// Every implementation observes arrays of "students" with one observed `Int` property, `grade`
// (the element pattern of Tests/ObserveCoreTests/Support/ArrayModels.swift: `name` and `grade`),
// declared the way that implementation's users declare it. Each element also carries its `id`,
// its position in the pool it came from, which the scenarios use to check reported indices and
// which the `diff` peer diffs by.

// MARK: - Elements

/// ObserveCore: the documented accessor form (as `Student` in the tests).
final class KVOStudent: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    let id: Int
    init(backend: ObservationBackend, id: Int) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.id = id
        self.name = "s\(id % 100_000)"   // short enough to be stored inline: no allocation
    }

    static let name = ObservableKey(\KVOStudent.name)
    var name: String {
        willSet { kvoRegistrar.willSet(KVOStudent.name, of: self, from: name) }
        didSet { kvoRegistrar.didSet(KVOStudent.name, of: self, from: oldValue, to: name) }
    }

    static let grade = ObservableKey(\KVOStudent.grade)
    var grade = 0 {
        willSet { kvoRegistrar.willSet(KVOStudent.grade, of: self, from: grade) }
        didSet { kvoRegistrar.didSet(KVOStudent.grade, of: self, from: oldValue, to: grade) }
    }
}

/// The naive registry's element: every set of `grade` reports to `NaiveRegistry.shared`.
final class NaiveStudent: @unchecked Sendable {
    static let gradeProperty = 1
    let id: Int
    var name: String
    init(id: Int) {
        self.id = id
        self.name = "s\(id % 100_000)"
    }
    var grade = 0 {
        didSet { NaiveRegistry.shared.didChange(self, property: NaiveStudent.gradeProperty, old: oldValue, new: grade) }
    }
}

/// Swift's Observation framework. (`@unchecked Sendable` only so that `onChange`, a `@Sendable`
/// closure, may capture it; no generated code on the measured path changes.)
@Observable
final class ObservationStudent: @unchecked Sendable {
    let id: Int
    var name: String
    var grade = 0
    init(id: Int) {
        self.id = id
        self.name = "s\(id % 100_000)"
    }
}

/// OpenCombine's `@Published`.
final class PublishedStudent {
    let id: Int
    @Published var name: String
    @Published var grade = 0
    init(id: Int) {
        self.id = id
        self.name = "s\(id % 100_000)"
    }
}

@inline(never) func setGrade(_ student: KVOStudent, _ value: Int) { student.grade = value }
@inline(never) func setGrade(_ student: NaiveStudent, _ value: Int) { student.grade = value }
@inline(never) func setGrade(_ student: ObservationStudent, _ value: Int) { student.grade = value }
@inline(never) func setGrade(_ student: PublishedStudent, _ value: Int) { student.grade = value }

// MARK: - Element pools

/// Elements are not what the array scenarios measure, so each kind is created once per process
/// (ids 0..<count, allocated in order, as a fresh array's would be) and lent to one fixture at a
/// time. An array of N uses elements 0..<N; elements from `spareBase` on are the ones a scenario
/// inserts or appends. Observation's elements are not pooled: a tracking cannot be removed, so a
/// fixture that leaves trackings armed gets fresh elements (see `ObservationArrayPeer`).
enum StudentPool {
    /// Elements 0..<maxElements are array contents; spares follow.
    nonisolated(unsafe) static var maxElements = 100_000
    /// Spares for append-10k (10,000) and the batches' inserts.
    static let spareCount = 10_240
    static var spareBase: Int { maxElements }
    static var size: Int { maxElements + spareCount }

    nonisolated(unsafe) private static var kvo: [ObservationBackend: [KVOStudent]] = [:]
    nonisolated(unsafe) private static var naive: [NaiveStudent]?
    nonisolated(unsafe) private static var published: [PublishedStudent]?

    static func kvoStudents(_ backend: ObservationBackend) -> [KVOStudent] {
        if let pool = kvo[backend] { return pool }
        let pool = (0..<size).map { KVOStudent(backend: backend, id: $0) }
        kvo[backend] = pool
        return pool
    }

    static func naiveStudents() -> [NaiveStudent] {
        if let naive { return naive }
        let pool = (0..<size).map { NaiveStudent(id: $0) }
        naive = pool
        return pool
    }

    static func publishedStudents() -> [PublishedStudent] {
        if let published { return published }
        let pool = (0..<size).map { PublishedStudent(id: $0) }
        published = pool
        return pool
    }
}

// MARK: - The seeds' approach: one naive registration per element

/// What the per-element peers tell their one array observer (no allocation: a plain value).
struct NaiveArrayChange {
    enum Kind { case insert, append, remove, removeLast, elementChanged }
    var kind: Kind
    /// First index concerned (element changes: the element's index).
    var index: Int
    var count: Int
    /// Element changes: the property's new value; single insertions: the element's id.
    var value = 0
}

/// The seeds' approach to observing an array's elements, written plainly: an array wrapper that
/// registers one observer per element in the naive registry (`NaiveRegistry.shared`, a
/// Mutex-guarded Dictionary of closures). Each element's handler captures the element and
/// reports it with its index to the array's observer.
///
/// The index comes from a `Dictionary` from element to index maintained on every mutation (the
/// better naive option: O(1) per change, paid for by an O(N) shift on an insertion or removal
/// anywhere but the end, done in place over `Dictionary.values` without re-hashing), or, with
/// `.scan`, from `firstIndex(where: ===)` on each change. Elements are distinct (the map
/// cannot hold an element twice). The wrapper's state has its own Mutex, as the registry does.
final class NaiveObservedArray: @unchecked Sendable {
    enum Indexing { case map, scan }

    struct Entry {
        var index: Int
        let token: NaiveToken
    }

    private struct State {
        var elements: [NaiveStudent] = []
        /// Element -> (index, its registration); empty with `.scan`.
        var entries: [ObjectIdentifier: Entry] = [:]
        /// With `.scan`, the registrations in element order.
        var tokens: [NaiveToken] = []
    }

    let indexing: Indexing
    private let state = Mutex(State())
    /// The array's one observer.
    private let observer: (NaiveArrayChange) -> Void

    /// Observes `elements` (one registration each): the setup being measured by `array.setup`.
    init(_ elements: some Collection<NaiveStudent>, indexing: Indexing, observer: @escaping (NaiveArrayChange) -> Void) {
        self.indexing = indexing
        self.observer = observer
        let tokens = elements.map { register($0) }
        state.withLock { state in
            state.elements = Array(elements)
            switch indexing {
            case .map:
                state.entries.reserveCapacity(tokens.count)
                for (index, (element, token)) in zip(elements, tokens).enumerated() {
                    state.entries[ObjectIdentifier(element)] = Entry(index: index, token: token)
                }
            case .scan:
                state.tokens = tokens
            }
        }
    }

    private func register(_ element: NaiveStudent) -> NaiveToken {
        NaiveRegistry.shared.observe(element, property: NaiveStudent.gradeProperty) {
            [unowned self] (element: NaiveStudent, _: Int, new: Int) in
            self.elementDidChange(element, new)
        }
    }

    private func elementDidChange(_ element: NaiveStudent, _ value: Int) {
        let index: Int? = state.withLock { state in
            switch indexing {
            case .map: return state.entries[ObjectIdentifier(element)]?.index
            case .scan: return state.elements.firstIndex { $0 === element }
            }
        }
        guard let index else { return }
        observer(NaiveArrayChange(kind: .elementChanged, index: index, count: 1, value: value))
    }

    /// Adds `delta` to every recorded index >= `from`, in place (no re-hashing).
    private static func shift(_ entries: inout [ObjectIdentifier: Entry], from: Int, by delta: Int) {
        var position = entries.values.startIndex
        let end = entries.values.endIndex
        while position != end {
            if entries.values[position].index >= from { entries.values[position].index += delta }
            entries.values.formIndex(after: &position)
        }
    }

    var count: Int { state.withLock { $0.elements.count } }
    var elements: [NaiveStudent] { state.withLock { $0.elements } }

    func insert(_ element: NaiveStudent, at index: Int) {
        let token = register(element)
        state.withLock { state in
            state.elements.insert(element, at: index)
            switch indexing {
            case .map:
                Self.shift(&state.entries, from: index, by: 1)
                state.entries[ObjectIdentifier(element)] = Entry(index: index, token: token)
            case .scan:
                state.tokens.insert(token, at: index)
            }
        }
        observer(NaiveArrayChange(kind: .insert, index: index, count: 1, value: element.id))
    }

    func append(contentsOf elements: [NaiveStudent]) {
        guard !elements.isEmpty else { return }
        let tokens = elements.map { register($0) }
        let start: Int = state.withLock { state in
            let start = state.elements.count
            state.elements.append(contentsOf: elements)
            switch indexing {
            case .map:
                for (offset, (element, token)) in zip(elements, tokens).enumerated() {
                    state.entries[ObjectIdentifier(element)] = Entry(index: start + offset, token: token)
                }
            case .scan:
                state.tokens.append(contentsOf: tokens)
            }
            return start
        }
        observer(NaiveArrayChange(kind: .append, index: start, count: elements.count))
    }

    @discardableResult
    func remove(at index: Int) -> NaiveStudent {
        let (element, token): (NaiveStudent, NaiveToken) = state.withLock { state in
            let element = state.elements.remove(at: index)
            switch indexing {
            case .map:
                let entry = state.entries.removeValue(forKey: ObjectIdentifier(element))!
                Self.shift(&state.entries, from: index + 1, by: -1)
                return (element, entry.token)
            case .scan:
                return (element, state.tokens.remove(at: index))
            }
        }
        token.cancel()
        observer(NaiveArrayChange(kind: .remove, index: index, count: 1))
        return element
    }

    @discardableResult
    func removeLast() -> NaiveStudent {
        let (element, token, index): (NaiveStudent, NaiveToken, Int) = state.withLock { state in
            let element = state.elements.removeLast()
            switch indexing {
            case .map:
                return (element, state.entries.removeValue(forKey: ObjectIdentifier(element))!.token, state.elements.count)
            case .scan:
                return (element, state.tokens.removeLast(), state.elements.count)
            }
        }
        token.cancel()
        observer(NaiveArrayChange(kind: .removeLast, index: index, count: 1))
        return element
    }

    func removeLast(_ k: Int) {
        let (tokens, start): ([NaiveToken], Int) = state.withLock { state in
            let start = state.elements.count - k
            var tokens: [NaiveToken] = []
            tokens.reserveCapacity(k)
            switch indexing {
            case .map:
                for i in start..<state.elements.count {
                    tokens.append(state.entries.removeValue(forKey: ObjectIdentifier(state.elements[i]))!.token)
                }
            case .scan:
                tokens.append(contentsOf: state.tokens[start...])
                state.tokens.removeLast(k)
            }
            state.elements.removeLast(k)
            return (tokens, start)
        }
        for token in tokens { token.cancel() }
        observer(NaiveArrayChange(kind: .removeLast, index: start, count: k))
    }

    /// Removes every registration (tear-down).
    func cancelAll() {
        let tokens: [NaiveToken] = state.withLock { state in
            defer { state.entries = [:]; state.tokens = []; state.elements = [] }
            return state.entries.values.map(\.token) + state.tokens
        }
        for token in tokens { token.cancel() }
    }

    /// For the tear-down check: whether the map agrees with the elements.
    func mapIsConsistent() -> Bool {
        state.withLock { state in
            guard indexing == .map else { return true }
            guard state.entries.count == state.elements.count else { return false }
            for (index, element) in state.elements.enumerated() where state.entries[ObjectIdentifier(element)]?.index != index {
                return false
            }
            return true
        }
    }
}

// MARK: - The seeds' approach with several parties or repeated elements

/// The seeds' approach on the two element-change rows `NaiveObservedArray` cannot express:
/// several interested parties (`array.element-change-10`) and an element present at several
/// indices (`array.element-change-repeated`). Those rows make no structural edit, so this has
/// no mutators; its set-up and its cost per change are what a wrapper with mutators pays.
///
/// - `.map`: every party registers once per element (k parties: k registrations per element,
///   what k independent users of per-element observation would make); a handler finds its
///   element's index in the element -> index Dictionary, one for all parties, under the
///   wrapper's Mutex: `NaiveObservedArray`'s `.map` path, once per party. Elements are distinct.
/// - `.slot`: every party registers once per array slot (an element at 1,000 indices gets 1,000
///   registrations per party, all called on each set of it), and a handler reads its slot's
///   current index from a slot -> index table under the wrapper's Mutex. The map cannot hold an
///   element twice; the table can, and a wrapper with mutators would renumber it on insertion
///   and removal (O(N), as the map is shifted), so reading it is the O(1) per callback a user
///   would get.
final class NaiveElementChangePeer: @unchecked Sendable {
    enum Indexing { case map, slot }

    private struct State {
        /// `.map`: element -> index.
        var indexOfElement: [ObjectIdentifier: Int] = [:]
        /// `.slot`: registration's slot -> current index.
        var indexOfSlot: [Int] = []
    }

    private let state = Mutex(State())
    private var tokens: [NaiveToken] = []

    /// Registers every party on every element (`.map`) or slot (`.slot`): the set-up.
    init(_ elements: some Collection<NaiveStudent>, indexing: Indexing, parties: [(NaiveArrayChange) -> Void]) {
        state.withLock { state in
            switch indexing {
            case .map:
                state.indexOfElement.reserveCapacity(elements.count)
                for (index, element) in elements.enumerated() {
                    let previous = state.indexOfElement.updateValue(index, forKey: ObjectIdentifier(element))
                    precondition(previous == nil, "NaiveElementChangePeer(.map): elements must be distinct")
                }
            case .slot:
                state.indexOfSlot = Array(0..<elements.count)
            }
        }
        tokens.reserveCapacity(elements.count * parties.count)
        for party in parties {
            // Each handler calls its party's closure directly (wrapped only to cross the
            // registry's @Sendable boundary, as the harness's other values are).
            let observer = Unchecked(party)
            for (slot, element) in elements.enumerated() {
                switch indexing {
                case .map:
                    tokens.append(NaiveRegistry.shared.observe(element, property: NaiveStudent.gradeProperty) {
                        [unowned self] (element: NaiveStudent, _: Int, new: Int) in
                        guard let index = self.state.withLock({ $0.indexOfElement[ObjectIdentifier(element)] }) else { return }
                        observer.value(NaiveArrayChange(kind: .elementChanged, index: index, count: 1, value: new))
                    })
                case .slot:
                    tokens.append(NaiveRegistry.shared.observe(element, property: NaiveStudent.gradeProperty) {
                        [unowned self] (_: NaiveStudent, _: Int, new: Int) in
                        let index = self.state.withLock { $0.indexOfSlot[slot] }
                        observer.value(NaiveArrayChange(kind: .elementChanged, index: index, count: 1, value: new))
                    })
                }
            }
        }
    }

    /// Removes every registration (tear-down).
    func cancelAll() {
        for token in tokens { token.cancel() }
        tokens = []
    }
}

// MARK: - Observation and OpenCombine: one observation per element

/// Swift's Observation framework observing an array's elements: one `withObservationTracking`
/// per element, re-armed in `onChange` (as users do to keep observing), whose handler reports
/// the element with its index, found through a Dictionary map (the better naive option).
/// `onChange` runs before the new value is stored (a will-set). Observation cannot cancel a
/// tracking: `retire()` makes the armed trackings inert (they end when they next fire or their
/// element dies), and fixtures use fresh elements.
final class ObservationArrayPeer: @unchecked Sendable {
    let elements: [ObservationStudent]
    private let index: Mutex<[ObjectIdentifier: Int]>
    private let observer: (NaiveArrayChange) -> Void
    private let retired = Atomic<Bool>(false)

    /// Arms one tracking per element and builds the map: the setup being measured.
    init(_ elements: [ObservationStudent], observer: @escaping (NaiveArrayChange) -> Void) {
        self.elements = elements
        self.observer = observer
        var map: [ObjectIdentifier: Int] = [:]
        map.reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() { map[ObjectIdentifier(element)] = i }
        self.index = Mutex(map)
        for element in elements { arm(element) }
    }

    private func arm(_ element: ObservationStudent) {
        withObservationTracking {
            _ = element.grade
        } onChange: { [self] in
            if retired.load(ordering: .relaxed) { return }
            if let i = index.withLock({ $0[ObjectIdentifier(element)] }) {
                observer(NaiveArrayChange(kind: .elementChanged, index: i, count: 1))
            }
            arm(element)
        }
    }

    func retire() { retired.store(true, ordering: .relaxed) }
}

/// OpenCombine observing an array's elements: one `sink` on each element's `$grade`, reporting
/// the element with its index from a Dictionary map. The publisher emits before the property is
/// stored (a will-set) and sends the current value once on subscription.
final class PublishedArrayPeer: @unchecked Sendable {
    private let index: Mutex<[ObjectIdentifier: Int]>
    private var cancellables: [AnyCancellable] = []
    private let observer: (NaiveArrayChange) -> Void

    init(_ elements: some Collection<PublishedStudent>, observer: @escaping (NaiveArrayChange) -> Void) {
        self.observer = observer
        var map: [ObjectIdentifier: Int] = [:]
        map.reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() { map[ObjectIdentifier(element)] = i }
        self.index = Mutex(map)
        cancellables = elements.map { element in
            element.$grade.sink { [unowned self] _ in
                if let i = self.index.withLock({ $0[ObjectIdentifier(element)] }) {
                    self.observer(NaiveArrayChange(kind: .elementChanged, index: i, count: 1))
                }
            }
        }
    }

    func cancelAll() {
        for cancellable in cancellables { cancellable.cancel() }
        cancellables = []
    }
}

// MARK: - Seeded randomness and the batches' edit scripts

/// One edit of `array.batch-100`, with the pool ids it involves.
enum ArrayEdit {
    case insert(index: Int, id: Int)
    case remove(index: Int)
    case replace(index: Int, id: Int)
    case swap(Int, Int)
}

/// Generates the batches' edits and keeps a plain mirror of the contents (pool ids), so that
/// every impl applies exactly the same edits to the same contents. Each batch has 25 insertions,
/// 25 removals, 25 replacements and 25 swaps at uniformly random indices, in random order; the
/// array's length is back to N after each batch. Inserted and replacing elements come from the
/// spares; removed and replaced ones return to them.
struct EditScript {
    static let editsPerBatch = 100
    private(set) var mirror: [Int]
    private var spares: [Int]
    private var generator: SplitMix64

    init(count: Int, seed: UInt64 = 0x0B5E_2C0E) {
        mirror = Array(0..<count)
        spares = Array((StudentPool.spareBase..<(StudentPool.spareBase + 256)).reversed())
        generator = SplitMix64(seed: seed &+ UInt64(count))
    }

    /// The next batch's edits (already applied to the mirror).
    mutating func nextBatch() -> [ArrayEdit] {
        var kinds = [Int](repeating: 0, count: 25) + [Int](repeating: 1, count: 25)
            + [Int](repeating: 2, count: 25) + [Int](repeating: 3, count: 25)
        kinds.shuffle(using: &generator)
        var edits: [ArrayEdit] = []
        edits.reserveCapacity(kinds.count)
        for kind in kinds {
            let n = mirror.count
            switch kind {
            case 0:
                let index = Int.random(in: 0...n, using: &generator)
                let id = spares.removeLast()
                mirror.insert(id, at: index)
                edits.append(.insert(index: index, id: id))
            case 1:
                let index = Int.random(in: 0..<n, using: &generator)
                spares.append(mirror.remove(at: index))
                edits.append(.remove(index: index))
            case 2:
                let index = Int.random(in: 0..<n, using: &generator)
                let id = spares.removeLast()
                spares.append(mirror[index])
                mirror[index] = id
                edits.append(.replace(index: index, id: id))
            default:
                let i = Int.random(in: 0..<n, using: &generator)
                var j = Int.random(in: 0..<(n - 1), using: &generator)
                if j >= i { j += 1 }
                mirror.swapAt(i, j)
                edits.append(.swap(i, j))
            }
        }
        return edits
    }
}
