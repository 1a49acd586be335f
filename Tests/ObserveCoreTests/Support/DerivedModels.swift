@_spi(Testing) import ObserveCore

// Models for key path chains, dependent keys, streams and bindings. Each lists its keys
// (ObservableKeyListing), as the README recommends for classes that chains pass through.

final class Building: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [name, floors]
    init(_ backend: ObservationBackend, name: String, floors: Int = 1) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.name = name
        self.floors = floors
    }

    static let name = ObservableKey(\Building.name)
    var name: String {
        willSet { kvoRegistrar.willSet(Building.name, of: self, from: name) }
        didSet { kvoRegistrar.didSet(Building.name, of: self, from: oldValue, to: name) }
    }

    static let floors = ObservableKey(\Building.floors)
    var floors: Int {
        willSet { kvoRegistrar.willSet(Building.floors, of: self, from: floors) }
        didSet { kvoRegistrar.didSet(Building.floors, of: self, from: oldValue, to: floors) }
    }
}

final class Office: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [city, building, label]
    init(_ backend: ObservationBackend, city: String, building: Building? = nil) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.city = city
        self.building = building
    }

    static let city = ObservableKey(\Office.city)
    var city: String {
        willSet { kvoRegistrar.willSet(Office.city, of: self, from: city) }
        didSet { kvoRegistrar.didSet(Office.city, of: self, from: oldValue, to: city) }
    }

    static let building = ObservableKey(\Office.building)
    var building: Building? {
        willSet { kvoRegistrar.willSet(Office.building, of: self, from: building) }
        didSet { kvoRegistrar.didSet(Office.building, of: self, from: oldValue, to: building) }
    }

    /// Dependent through an optional chain.
    static let label = ObservableKey(\Office.label, dependsOn: \.city, \.building?.name)
    var label: String { "\(building?.name ?? "?"), \(city)" }
}

final class Employee: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [
        firstName, lastName, office, formerOffice, mentor, note, fullName, badge, fullNameLength,
    ]
    nonisolated(unsafe) static var fullNameReads = 0

    init(_ backend: ObservationBackend, first: String = "", last: String = "", office: Office) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        firstName = first
        lastName = last
        self.office = office
    }

    static let firstName = ObservableKey(\Employee.firstName)
    var firstName: String {
        willSet { kvoRegistrar.willSet(Employee.firstName, of: self, from: firstName) }
        didSet { kvoRegistrar.didSet(Employee.firstName, of: self, from: oldValue, to: firstName) }
    }

    static let lastName = ObservableKey(\Employee.lastName)
    var lastName: String {
        willSet { kvoRegistrar.willSet(Employee.lastName, of: self, from: lastName) }
        didSet { kvoRegistrar.didSet(Employee.lastName, of: self, from: oldValue, to: lastName) }
    }

    /// A non-optional link.
    static let office = ObservableKey(\Employee.office)
    var office: Office {
        willSet { kvoRegistrar.willSet(Employee.office, of: self, from: office) }
        didSet { kvoRegistrar.didSet(Employee.office, of: self, from: oldValue, to: office) }
    }

    /// An optional link.
    static let formerOffice = ObservableKey(\Employee.formerOffice)
    var formerOffice: Office? = nil {
        willSet { kvoRegistrar.willSet(Employee.formerOffice, of: self, from: formerOffice) }
        didSet { kvoRegistrar.didSet(Employee.formerOffice, of: self, from: oldValue, to: formerOffice) }
    }

    /// A link to the same class (chains may go through it several times).
    static let mentor = ObservableKey(\Employee.mentor)
    var mentor: Employee? = nil {
        willSet { kvoRegistrar.willSet(Employee.mentor, of: self, from: mentor) }
        didSet { kvoRegistrar.didSet(Employee.mentor, of: self, from: oldValue, to: mentor) }
    }

    /// An optional leaf value.
    static let note = ObservableKey(\Employee.note)
    var note: String? = nil {
        willSet { kvoRegistrar.willSet(Employee.note, of: self, from: note) }
        didSet { kvoRegistrar.didSet(Employee.note, of: self, from: oldValue, to: note) }
    }

    /// Dependent keys: on two stored keys, on a dependent key and a chain, and on a dependent key.
    static let fullName = ObservableKey(\Employee.fullName, dependsOn: \.firstName, \.lastName)
    var fullName: String {
        Employee.fullNameReads += 1
        return "\(firstName) \(lastName)"
    }

    static let badge = ObservableKey(\Employee.badge, dependsOn: \.fullName, \.office.city)
    var badge: String { "\(fullName) @ \(office.city)" }

    static let fullNameLength = ObservableKey(\Employee.fullNameLength, dependsOn: [\Employee.fullName])
    var fullNameLength: Int { fullName.count }
}

/// A small observable class for bindings: one property of each shape the tests need.
final class Gauge: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [level, text, opaque]
    init(_ backend: ObservationBackend, level: Int = 0, text: String = "") {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.level = level
        self.text = text
    }

    static let level = ObservableKey(\Gauge.level)
    var level: Int {
        willSet { kvoRegistrar.willSet(Gauge.level, of: self, from: level) }
        didSet { kvoRegistrar.didSet(Gauge.level, of: self, from: oldValue, to: level) }
    }

    static let text = ObservableKey(\Gauge.text)
    var text: String {
        willSet { kvoRegistrar.willSet(Gauge.text, of: self, from: text) }
        didSet { kvoRegistrar.didSet(Gauge.text, of: self, from: oldValue, to: text) }
    }

    static let opaque = ObservableKey(\Gauge.opaque)
    var opaque = Opaque(value: 0) {
        willSet { kvoRegistrar.willSet(Gauge.opaque, of: self, from: opaque) }
        didSet { kvoRegistrar.didSet(Gauge.opaque, of: self, from: oldValue, to: opaque) }
    }
}

/// A base class for subclass key paths: `\Car.speed` names a property `Vehicle` declares.
class Vehicle: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [speed, owner]
    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }

    static let speed = ObservableKey(\Vehicle.speed)
    var speed = 0 {
        willSet { kvoRegistrar.willSet(Vehicle.speed, of: self, from: speed) }
        didSet { kvoRegistrar.didSet(Vehicle.speed, of: self, from: oldValue, to: speed) }
    }

    static let owner = ObservableKey(\Vehicle.owner)
    var owner: Building? = nil {
        willSet { kvoRegistrar.willSet(Vehicle.owner, of: self, from: owner) }
        didSet { kvoRegistrar.didSet(Vehicle.owner, of: self, from: oldValue, to: owner) }
    }
}

/// A subclass with a key of its own.
final class Car: Vehicle {
    static let doors = ObservableKey(\Car.doors)
    var doors = 4 {
        willSet { kvoRegistrar.willSet(Car.doors, of: self, from: doors) }
        didSet { kvoRegistrar.didSet(Car.doors, of: self, from: oldValue, to: doors) }
    }
}

/// A chain's link typed as the subclass: `\Garage.car?.speed` goes on through `Vehicle.speed`.
final class Garage: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [car]
    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }

    static let car = ObservableKey(\Garage.car)
    var car: Car? = nil {
        willSet { kvoRegistrar.willSet(Garage.car, of: self, from: car) }
        didSet { kvoRegistrar.didSet(Garage.car, of: self, from: oldValue, to: car) }
    }
}
