import Dispatch
import Foundation
@_spi(Testing) import ObserveCore
import Synchronization

// Values, observers, locks and thread-safe models the suites share, whichever way the models
// of Models.swift, ArrayModels.swift and DerivedModels.swift are declared.
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

    /// Stores `newValue` in `object[keyPath: storage]` under the lock; returns what it held (the
    /// old value a lock-guarded setter announces after unlocking). A key path, not an `inout`
    /// argument: an inout access to the property would begin before the lock is taken, and two
    /// threads' overlapping modify accesses are an exclusivity violation (ThreadSanitizer reports
    /// it as a Swift access race).
    func exchange<Root: AnyObject, T>(_ object: Root, _ storage: ReferenceWritableKeyPath<Root, T>, _ newValue: T) -> T {
        locked {
            let old = object[keyPath: storage]
            object[keyPath: storage] = newValue
            return old
        }
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
            kvoRegistrar.didSet(SharedCounter.value, of: self, from: lock.exchange(self, \._value, newValue), to: newValue)
        }
    }

    static let label = ObservableKey(\SharedCounter.label)
    var label: String {
        get { lock.locked { _label } }
        set {
            kvoRegistrar.didSet(SharedCounter.label, of: self, from: lock.exchange(self, \._label, newValue), to: newValue)
        }
    }
}

/// A compact, comparable rendering of a change's elements: "name old->new".
func describe(_ change: ArrayChange<Student>) -> [String] {
    change.elements.map { "\($0.element.name) \($0.oldIndex.map(String.init) ?? "nil")->\($0.newIndex.map(String.init) ?? "nil")" }
}

func describe(_ change: ArrayChange<Int>) -> [String] {
    change.elements.map { "\($0.element) \($0.oldIndex.map(String.init) ?? "nil")->\($0.newIndex.map(String.init) ?? "nil")" }
}

func students(_ backend: ObservationBackend, _ names: String...) -> [Student] {
    names.map { Student(backend, $0) }
}

/// A value type without `Equatable`, for binding cycles that cannot compare values.
struct Opaque { var value: Int }

/// A thread-safe observable node: storage behind a lock, changes announced after unlocking (the
/// pattern for objects that several threads set). Chains go through `next`; `title` depends on
/// a chain.
final class LockedNode: KeyValueObservable, ObservableKeyListing, @unchecked Sendable {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [name, value, next, title]
    private let lock = TestLock()
    private var _name: String
    private var _value = 0
    private var _next: LockedNode?

    init(_ backend: ObservationBackend, name: String = "", next: LockedNode? = nil) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        _name = name
        _next = next
    }

    static let name = ObservableKey(\LockedNode.name)
    var name: String {
        get { lock.locked { _name } }
        set {
            kvoRegistrar.didSet(LockedNode.name, of: self, from: lock.exchange(self, \._name, newValue), to: newValue)
        }
    }

    static let value = ObservableKey(\LockedNode.value)
    var value: Int {
        get { lock.locked { _value } }
        set {
            kvoRegistrar.didSet(LockedNode.value, of: self, from: lock.exchange(self, \._value, newValue), to: newValue)
        }
    }

    static let next = ObservableKey(\LockedNode.next)
    var next: LockedNode? {
        get { lock.locked { _next } }
        set {
            kvoRegistrar.didSet(LockedNode.next, of: self, from: lock.exchange(self, \._next, newValue), to: newValue)
        }
    }

    static let title = ObservableKey(\LockedNode.title, dependsOn: \.name, \.next?.name)
    var title: String { "\(name)/\(next?.name ?? "-")" }
}

/// A counter that handlers on several threads may bump.
final class AtomicCounter: Sendable {
    private let _value = Atomic<Int>(0)
    func increment() { _value.add(1, ordering: .relaxed) }
    var value: Int { _value.load(ordering: .relaxed) }
}

/// Runs `body` on a new thread (never this one, as `DispatchQueue.sync` may) and waits for it.
func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.start()
    done.wait()
}
