import ObserveCoreMacros
@_spi(Testing) import ObserveCore

// Models declared with the macros: the same shapes as the hand-written models of
// Tests/ObserveCoreTests/Support (Person, Address, Student, Teacher), one line per property.

@KeyValueObservable
final class MPerson {
    var name = ""
    var age = 0
    var nickname: String?
    var address: MAddress?
    @KeyValueIgnored var renderCount = 0
    let id: Int

    /// A computed property with a dependent key declared by hand: the macro lists it too.
    var greeting: String { "Hello, \(name)" }
    static let greeting = ObservableKey(\MPerson.greeting, dependsOn: \.name)

    /// A computed property whose dependent key the macro declares.
    @KeyValueDependent(on: \MPerson.name, \MPerson.address?.city)
    var label: String { "\(name) of \(address?.city ?? "-")" }

    init(id: Int = 0, name: String = "") {
        self.id = id
        self.name = name
    }
}

@KeyValueObservable
final class MAddress {
    var city = ""
    init(city: String) { self.city = city }
}

@KeyValueObservable
final class MStudent: CustomStringConvertible {
    var name: String
    var grade = 0
    init(_ name: String) { self.name = name }
    var description: String { name }
}

@KeyValueObservable
final class MTeacher {
    var students = ObservableArray<MStudent>()
}

/// A registrar of the caller's choosing: the macro keeps it.
@KeyValueObservable
public final class MSwiftBacked {
    public let kvoRegistrar = KeyValueRegistrar(backend: .swift)
    public var value = 0
}

/// A base class for subclassing: the macro goes on the base only.
@KeyValueObservable
class MBase {
    var title = ""
}

/// A subclass declares its own keys by hand (the registrar and listing are inherited), with
/// `@KeyValueObserved` writing the accessors.
final class MDerived: MBase {
    static let extra = ObservableKey(\MDerived.extra, name: "extra")
    @KeyValueObserved var extra = 0
}
