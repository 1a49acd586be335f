@_spi(Testing) import ObserveCore

// The hand-written models most tests use. Tests/ObserveCoreMacroFormTests declares the same
// classes with @KeyValueObservable and runs the same suites over them.

final class Address: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, city: String = "") {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.city = city
    }

    static let city = ObservableKey(\Address.city)
    var city: String {
        willSet { kvoRegistrar.willSet(Address.city, of: self, from: city) }
        didSet { kvoRegistrar.didSet(Address.city, of: self, from: oldValue, to: city) }
    }
}

/// The observable class most tests use: one property of each kind of type.
final class Person: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    nonisolated(unsafe) static var liveInstances = 0

    init(_ backend: ObservationBackend, name: String = "", age: Int = 0) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.name = name
        self.age = age
    }

    static let name = ObservableKey(\Person.name)
    var name: String {
        willSet { kvoRegistrar.willSet(Person.name, of: self, from: name) }
        didSet { kvoRegistrar.didSet(Person.name, of: self, from: oldValue, to: name) }
    }

    static let age = ObservableKey(\Person.age)
    var age: Int {
        willSet { kvoRegistrar.willSet(Person.age, of: self, from: age) }
        didSet { kvoRegistrar.didSet(Person.age, of: self, from: oldValue, to: age) }
    }

    static let nickname = ObservableKey(\Person.nickname)
    var nickname: String? = nil {
        willSet { kvoRegistrar.willSet(Person.nickname, of: self, from: nickname) }
        didSet { kvoRegistrar.didSet(Person.nickname, of: self, from: oldValue, to: nickname) }
    }

    static let score = ObservableKey(\Person.score)
    var score: Double = 0 {
        willSet { kvoRegistrar.willSet(Person.score, of: self, from: score) }
        didSet { kvoRegistrar.didSet(Person.score, of: self, from: oldValue, to: score) }
    }

    static let isActive = ObservableKey(\Person.isActive)
    var isActive = false {
        willSet { kvoRegistrar.willSet(Person.isActive, of: self, from: isActive) }
        didSet { kvoRegistrar.didSet(Person.isActive, of: self, from: oldValue, to: isActive) }
    }

    static let position = ObservableKey(\Person.position)
    var position = Point(x: 0, y: 0) {
        willSet { kvoRegistrar.willSet(Person.position, of: self, from: position) }
        didSet { kvoRegistrar.didSet(Person.position, of: self, from: oldValue, to: position) }
    }

    static let blob = ObservableKey(\Person.blob)
    var blob = Blob(bytes: []) {
        willSet { kvoRegistrar.willSet(Person.blob, of: self, from: blob) }
        didSet { kvoRegistrar.didSet(Person.blob, of: self, from: oldValue, to: blob) }
    }

    static let address = ObservableKey(\Person.address)
    var address: Address? = nil {
        willSet { kvoRegistrar.willSet(Person.address, of: self, from: address) }
        didSet { kvoRegistrar.didSet(Person.address, of: self, from: oldValue, to: address) }
    }

    /// Read-only properties derived from stored ones (not announced by any setter).
    var firstName: String { name }
}

/// An observer that is itself observable: its registrations die the moment it does.
final class ObservableWatcher: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    var seen: [String] = []
    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }
}
