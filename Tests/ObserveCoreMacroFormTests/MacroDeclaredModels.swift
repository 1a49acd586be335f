import ObserveCoreMacros
@_spi(Testing) import ObserveCore

// The models of Tests/ObserveCoreTests/Support (Models.swift, ArrayModels.swift,
// DerivedModels.swift), declared with @KeyValueObservable: same names, same initialisers, same
// properties and keys. The suites linked beside this file are the ObserveCoreTests suites
// themselves (symbolic links, not copies), so every property, array, chain, dependent, stream
// and binding test runs over both declaration forms.

@KeyValueObservable
final class Address {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, city: String = "") {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.city = city
    }

    var city: String
}

/// The observable class most tests use: one property of each kind of type.
@KeyValueObservable
final class Person {
    let kvoRegistrar: KeyValueRegistrar
    nonisolated(unsafe) static var liveInstances = 0

    init(_ backend: ObservationBackend, name: String = "", age: Int = 0) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.name = name
        self.age = age
    }

    var name: String
    var age: Int
    var nickname: String? = nil
    var score: Double = 0
    var isActive = false
    var position = Point(x: 0, y: 0)
    var blob = Blob(bytes: [])
    var address: Address? = nil

    /// Read-only properties derived from stored ones (not announced by any setter).
    var firstName: String { name }
}

/// An observer that is itself observable: its registrations die the moment it does.
@KeyValueObservable
final class ObservableWatcher {
    let kvoRegistrar: KeyValueRegistrar
    @KeyValueIgnored var seen: [String] = []
    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }
}

@KeyValueObservable
final class Student: CustomStringConvertible {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, _ name: String) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.name = name
    }

    var name: String
    var grade = 0

    var description: String { name }
}

@KeyValueObservable
final class Teacher {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, students: [Student] = []) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.students = ObservableArray(students, backend: backend)
    }

    var students: ObservableArray<Student>
}

@KeyValueObservable
final class Building {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, name: String, floors: Int = 1) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.name = name
        self.floors = floors
    }

    var name: String
    var floors: Int
}

@KeyValueObservable
final class Office {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, city: String, building: Building? = nil) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.city = city
        self.building = building
    }

    var city: String
    var building: Building?

    /// Dependent through an optional chain.
    @KeyValueDependent(on: \Office.city, \Office.building?.name)
    var label: String { "\(building?.name ?? "?"), \(city)" }
}

@KeyValueObservable
final class Employee {
    let kvoRegistrar: KeyValueRegistrar
    nonisolated(unsafe) static var fullNameReads = 0

    init(_ backend: ObservationBackend, first: String = "", last: String = "", office: Office) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        firstName = first
        lastName = last
        self.office = office
    }

    var firstName: String
    var lastName: String
    /// A non-optional link.
    var office: Office
    /// An optional link.
    var formerOffice: Office? = nil
    /// A link to the same class (chains may go through it several times).
    var mentor: Employee? = nil
    /// An optional leaf value.
    var note: String? = nil

    /// Dependent keys: on two stored keys, on a dependent key and a chain, and on a dependent key.
    @KeyValueDependent(on: \Employee.firstName, \Employee.lastName)
    var fullName: String {
        Employee.fullNameReads += 1
        return "\(firstName) \(lastName)"
    }

    @KeyValueDependent(on: \Employee.fullName, \Employee.office.city)
    var badge: String { "\(fullName) @ \(office.city)" }

    @KeyValueDependent(on: \Employee.fullName)
    var fullNameLength: Int { fullName.count }
}

/// A small observable class for bindings: one property of each shape the tests need.
@KeyValueObservable
final class Gauge {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend, level: Int = 0, text: String = "") {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.level = level
        self.text = text
    }

    var level: Int
    var text: String
    var opaque = Opaque(value: 0)
}

/// A base class for subclass key paths: `\Car.speed` names a property `Vehicle` declares.
@KeyValueObservable
class Vehicle {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }

    var speed = 0
    var owner: Building? = nil
}

/// A subclass with a key of its own (the macro goes on the base only).
final class Car: Vehicle {
    static let doors = ObservableKey(\Car.doors, name: "doors")
    @KeyValueObserved var doors = 4
}

/// A chain's link typed as the subclass: `\Garage.car?.speed` goes on through `Vehicle.speed`.
@KeyValueObservable
final class Garage {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }

    var car: Car? = nil
}
