@_spi(Testing) import ObserveCore

// The observed objects of the capability rows (chains, dependent keys, streams, bindings, post),
// declared as the README declares them: a `KeyValueRegistrar`, an `ObservableKey` per property,
// `willSet`/`didSet` announcing, and `ObservableKeyListing` wherever a chain passes through or a
// dependent key is declared. Every value is an `Int`, so observers can add it to a `Sink`.

/// The last link of a depth-3 chain: `\ChainRoot.middle?.leaf?.value`.
final class ChainLeaf: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [value]
    init(backend: ObservationBackend, value: Int) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.value = value
    }

    static let value = ObservableKey(\ChainLeaf.value)
    var value: Int {
        willSet { kvoRegistrar.willSet(ChainLeaf.value, of: self, from: value) }
        didSet { kvoRegistrar.didSet(ChainLeaf.value, of: self, from: oldValue, to: value) }
    }
}

/// The middle link: its `value` ends a depth-2 chain (`\ChainRoot.middle?.value`), its `leaf`
/// continues a depth-3 one.
final class ChainMiddle: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [value, leaf]
    init(backend: ObservationBackend, value: Int, leaf: ChainLeaf? = nil) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.value = value
        self.leaf = leaf
    }

    static let value = ObservableKey(\ChainMiddle.value)
    var value: Int {
        willSet { kvoRegistrar.willSet(ChainMiddle.value, of: self, from: value) }
        didSet { kvoRegistrar.didSet(ChainMiddle.value, of: self, from: oldValue, to: value) }
    }

    static let leaf = ObservableKey(\ChainMiddle.leaf)
    var leaf: ChainLeaf? {
        willSet { kvoRegistrar.willSet(ChainMiddle.leaf, of: self, from: leaf) }
        didSet { kvoRegistrar.didSet(ChainMiddle.leaf, of: self, from: oldValue, to: leaf) }
    }
}

/// The observed root of every chain: an optional link to a `ChainMiddle`.
final class ChainRoot: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [middle]
    init(backend: ObservationBackend, middle: ChainMiddle?) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.middle = middle
    }

    static let middle = ObservableKey(\ChainRoot.middle)
    var middle: ChainMiddle? {
        willSet { kvoRegistrar.willSet(ChainRoot.middle, of: self, from: middle) }
        didSet { kvoRegistrar.didSet(ChainRoot.middle, of: self, from: oldValue, to: middle) }
    }
}

/// `dependent.set`: `sum` depends on `first` and `second` (README "Dependent keys").
final class DependentSubject: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar: KeyValueRegistrar
    static let observableKeys: [any ObservableKeyProtocol] = [first, second, sum]
    init(backend: ObservationBackend, first: Int, second: Int) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.first = first
        self.second = second
    }

    static let first = ObservableKey(\DependentSubject.first)
    var first: Int {
        willSet { kvoRegistrar.willSet(DependentSubject.first, of: self, from: first) }
        didSet { kvoRegistrar.didSet(DependentSubject.first, of: self, from: oldValue, to: first) }
    }

    static let second = ObservableKey(\DependentSubject.second)
    var second: Int {
        willSet { kvoRegistrar.willSet(DependentSubject.second, of: self, from: second) }
        didSet { kvoRegistrar.didSet(DependentSubject.second, of: self, from: oldValue, to: second) }
    }

    /// Declared as `@KeyValueDependent(on: \DependentSubject.first, \DependentSubject.second)`
    /// declares it: the value is read by a closure written here, not through the key path.
    static let sum = ObservableKey(\DependentSubject.sum, dependsOn: [\.first, \.second], read: { $0.sum })
    var sum: Int { first &+ second }
}

/// The target of the binding rows: a property written by bindings, which counts its writes and
/// adds up the values written (a plain `didSet`, no observer of its own, so a write costs what
/// the binding's keyed write costs). Observable, as a binding target is in the README (its
/// registrations go with it when it dies).
final class BindingTarget: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    init(backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }

    var writes = 0
    var total = 0
    var value = 0 {
        didSet {
            writes &+= 1
            total &+= value
        }
    }
}

@inline(never) func set(_ object: ChainMiddle, _ value: Int) { object.value = value }
@inline(never) func set(_ object: ChainLeaf, _ value: Int) { object.value = value }
@inline(never) func set(_ object: DependentSubject, first value: Int) { object.first = value }
@inline(never) func link(_ root: ChainRoot, _ middle: ChainMiddle) { root.middle = middle }
