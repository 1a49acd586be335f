@_spi(Testing) import ObserveCore
import Testing

/// An observable class whose registrar the test chooses: two of them sharing one registrar is
/// the misuse `KeyValueRegistrar` must name.
private final class Borrower: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    init(_ registrar: KeyValueRegistrar) { kvoRegistrar = registrar }
    static let value = ObservableKey(\Borrower.value)
    var value = 0 {
        willSet { kvoRegistrar.willSet(Borrower.value, of: self, from: value) }
        didSet { kvoRegistrar.didSet(Borrower.value, of: self, from: oldValue, to: value) }
    }
}

/// A hand-written class whose key listing says it is complete: `unlisted` has no key.
private final class Listed: KeyValueObservable, ObservableKeyListing {
    let kvoRegistrar = KeyValueRegistrar()
    static let observableKeys: [any ObservableKeyProtocol] = [value]
    static let observableKeysAreComplete = true
    static let value = ObservableKey(\Listed.value, name: "value")
    var value = 0 {
        willSet { kvoRegistrar.willSet(Listed.value, of: self, from: value) }
        didSet { kvoRegistrar.didSet(Listed.value, of: self, from: oldValue, to: value) }
    }
    var unlisted = 0
}

/// Misuse outside arrays traps with a message that names what was wrong, in release builds too
/// (CI runs this suite with `-c release`, where a `precondition`'s message would be dropped).
@Suite("Misuse messages survive release builds")
struct MisuseMessageTests {
    @Test("a notification depth of 0 is refused by name")
    func zeroDepth() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ObservationRuntime.maximumNotificationDepth = 0
        }
        #expect(Self.stderr(result).contains("ObserveCore: maximumNotificationDepth must be at least 1"))
    }

    @Test("array options holding a bit that is no array option (.prior's) are refused by name")
    func arrayOptionsWithForeignBits() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let numbers = ObservableArray([1, 2])
            _ = numbers.observe(options: ArrayObservationOptions(rawValue: 1 << 3)) { _, _ in }
        }
        #expect(Self.stderr(result).contains("arrays support .new, .old and .initial"))
    }

    @Test("a bounded change stream of capacity 0 names the capacity")
    func zeroCapacityStream() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ChangeStreamBuffering.bounded(0)
        }
        #expect(Self.stderr(result).contains("a bounded change stream needs a capacity of at least 1, not 0"))
    }

    @Test("two tasks iterating one change stream at once are refused by name")
    func twoConsumersOfOneStream() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let listed = Listed()
            let changes = listed.changes(for: \.value)
            // Nothing is ever set: whichever task asks second finds the other inside next().
            let first = Task { for await _ in changes {} }
            for await _ in changes {}
            first.cancel()
            withExtendedLifetime(listed) {}
        }
        #expect(Self.stderr(result).contains("two tasks are iterating one change stream at once"))
    }

    @Test("one registrar shared by two objects is refused, naming the fix")
    func sharedRegistrar() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let shared = KeyValueRegistrar(backend: .c)
            let first = Borrower(shared), second = Borrower(shared)
            let a = first.observe(\.value) { _, _ in }
            let b = second.observe(\.value) { _, _ in }
            a.cancel()
            b.cancel()
        }
        let stderr = Self.stderr(result)
        #expect(stderr.contains("this KeyValueRegistrar already serves another object"))
        #expect(stderr.contains("let kvoRegistrar = KeyValueRegistrar()"))
    }

    @Test("observing a key path a complete listing does not declare stops, naming the property and the fix")
    func undeclaredKey() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let object = Listed()
            _ = object.observe(\.value) { _, _ in }     // declared: fine
            _ = object.observe(\.unlisted) { _, _ in }  // would never fire
        }
        let stderr = Self.stderr(result)
        #expect(stderr.contains("ObserveCore: cannot observe \\Listed.unlisted on Listed: Listed declares no ObservableKey"))
        #expect(stderr.contains("dependent key"))
    }

    @Test("tracking a key path chain as an element key path stops, naming the key path and the fix")
    func chainAsElementKeyPath() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let garages = ObservableArray([Garage(.c)])
            _ = garages.observe(elementKeyPaths: [\Garage.car?.speed]) { _, _ in }   // no setter announces it
        }
        let stderr = Self.stderr(result)
        #expect(stderr.contains("ObserveCore: cannot track \\Garage."))
        #expect(stderr.contains("as an element key path of Garage"))
        #expect(stderr.contains("observe the element's own keys"))
    }

    @Test("the raw value reserved for ObservationContext.none is refused as a tag")
    func reservedContext() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ObservationContext(rawValue: UInt.max)
        }
        #expect(Self.stderr(result).contains("UInt.max is the raw value of ObservationContext.none"))
    }

    private static func stderr(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }
}
