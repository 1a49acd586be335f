import ObserveCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value type with value equality, for typed-change tests.
struct Point: Equatable, CustomStringConvertible {
    var x: Int, y: Int
    var description: String { "(\(x), \(y))" }
}

/// A value type without `Equatable`.
struct Blob { var bytes: [UInt8] }

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

/// A plain observer class with no registrar.
final class Watcher {
    var seen: [String] = []
    var count = 0
}

/// Records events from handlers (handlers may run on other threads in some tests).
final class Log<Event>: @unchecked Sendable {
    private let lock = TestLock()
    private var _events: [Event] = []
    func append(_ event: Event) { lock.locked { _events.append(event) } }
    var events: [Event] { lock.locked { _events } }
    var count: Int { lock.locked { _events.count } }
}

/// A pthread mutex for test bookkeeping. (Synchronization.Mutex's lock lives in an
/// uninstrumented library, so ThreadSanitizer cannot see it order accesses; pthread calls it can.)
final class TestLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        m.initialize(to: pthread_mutex_t())
        pthread_mutex_init(m, nil)
        return m
    }()
    deinit { pthread_mutex_destroy(mutex); mutex.deallocate() }
    func locked<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A thread-safe observable class: its storage is guarded by a lock, and changes are announced
/// after the lock is released (the pattern for objects that several threads set).
final class SharedCounter: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar: KeyValueRegistrar
    private let lock = TestLock()
    private var _value = 0
    private var _label = ""

    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }

    static let value = ObservableKey(\SharedCounter.value)
    var value: Int {
        get { lock.locked { _value } }
        set {
            let old = lock.locked {
                defer { _value = newValue }
                return _value
            }
            kvoRegistrar.didSet(SharedCounter.value, of: self, from: old, to: newValue)
        }
    }

    static let label = ObservableKey(\SharedCounter.label)
    var label: String {
        get { lock.locked { _label } }
        set {
            let old = lock.locked {
                defer { _label = newValue }
                return _label
            }
            kvoRegistrar.didSet(SharedCounter.label, of: self, from: old, to: newValue)
        }
    }
}
