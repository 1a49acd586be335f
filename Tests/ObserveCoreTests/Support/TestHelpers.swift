import Dispatch
import Foundation
@_spi(Testing) import ObserveCore
@_exported import ObserveCoreTestSupport
import Synchronization

// Thread-safe models and helpers the suites share, whichever way the models of Models.swift,
// ArrayModels.swift and DerivedModels.swift are declared. (Fixtures that do not speak of those
// models live in the ObserveCoreTestSupport target.)
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
