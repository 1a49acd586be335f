@_spi(Testing) @testable import ObserveCore
import Testing

/// How a binding writes its target: through the property's own accessors when the key path is
/// one settable computed component (a property with observers, or computed with a setter), else
/// by applying the key path. Both must behave the same: the setter runs (so `didSet` and the
/// target's observers hear the write), values equal to the current one are skipped, the
/// after-hook runs after each write.
@Suite("Binding writers", .serialized)
struct BindingWriterTests {
    @Test("which key paths are written through their accessors")
    func accessorShapes() {
        #if !_ptrauth(_arm64e)   // signed function pointers: never through the accessors
        #expect(_ComputedAccessors.of(\WriterTarget.count) != nil, "didSet: computed component")
        #expect(_ComputedAccessors.of(\WriterTarget.name) != nil)
        #expect(_ComputedAccessors.of(\WriterTarget.nickname) != nil, "an optional value")
        #expect(_ComputedAccessors.of(\WriterTarget.doubled) != nil, "computed with a setter")
        #expect(_ComputedAccessors.of(\GenericTarget<Int>.value) != nil, "a literal in concrete code")
        #endif
        #expect(_ComputedAccessors.of(genericKeyPath(Int.self)) == nil, "written in generic code: arguments")
        #expect(_ComputedAccessors.of(\WriterTarget.plain) == nil, "stored: the key path is applied")
        #expect(_ComputedAccessors.of(\WriterTarget.readOnly) == nil, "not settable")
        #expect(_ComputedAccessors.of(\WriterTarget.child?.count) == nil, "several components")
        #expect(_ComputedAccessors.of(\WriterTarget.[0]) == nil, "a subscript: it has arguments")
        #expect(_ComputedAccessors.of(\WriterValue.count) == nil, "a struct root")
    }

    @Test("every shape of target property is written through its setter, equal values skipped",
          arguments: ObservationBackend.allCases)
    func everyShapeWrites(backend: ObservationBackend) {
        let source = Gauge(backend, level: 1, text: "a")
        let target = WriterTarget(backend)
        var after: [String] = []
        var bindings: [KeyValueBinding] = []
        bindings.append(target.bind(\.count, to: source, \.level, after: { _, v in after.append("count \(v)") }))
        bindings.append(target.bind(\.name, to: source.bindable(\.text).map { String(repeating: $0, count: 30) }))
        let nickname: BindingSource<String?> = source.bindable(\.text).map { $0 == "b" ? nil : $0 }
        bindings.append(target.bind(\.nickname, to: nickname))
        bindings.append(target.bind(\.doubled, to: source, \.level))
        bindings.append(target.bind(\.plain, to: source, \.level))
        bindings.append(target.bind(\.opaque, to: source.bindable(\.level).map { Opaque(value: $0) }))
        bindings.append(target.bind(\.transform, to: source.bindable(\.level).map { level in { $0 + level } }))
        bindings.append(target.bind(\.wide, to: source.bindable(\.level).map { Wide(repeating: $0) }))
        #expect(target.count == 1 && target.name == String(repeating: "a", count: 30) && target.nickname == "a")
        #expect(target.doubled == 1 && target.storage == 2 && target.plain == 1 && target.opaque.value == 1)
        let setsAtStart = target.didSets
        source.level = 1                               // equal: Equatable targets are not written
        #expect(target.didSets == setsAtStart + 1, "only the Opaque target (not Equatable) was written")
        source.level = 5
        #expect(target.count == 5 && target.doubled == 5 && target.storage == 10 && target.plain == 5)
        #expect(target.transform(1) == 6 && target.wide == Wide(repeating: 5), "a function value, a wide struct")
        #expect(target.opaque.value == 5)
        source.text = "b"
        #expect(target.name == String(repeating: "b", count: 30) && target.nickname == nil)
        #expect(after == ["count 1", "count 5"])
        // A property of a generic class (through the accessors: the literal is in concrete code).
        let generic = GenericTarget<Int>(backend, 0)
        let genericBinding = generic.bind(\.value, to: source, \.level)
        source.level = 6
        #expect(generic.value == 6 && generic.didSets == 2)
        genericBinding.cancel()
        #expect(target.didSets == setsAtStart + 1 + 3 + 2 + 3, "count, doubled, opaque; name, nickname; level 6")
        for binding in bindings { binding.cancel() }
    }
}

private final class WriterTarget: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    init(_ backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }
    var didSets = 0
    var count = 0 { didSet { didSets += 1 } }
    var name = "" { didSet { didSets += 1 } }
    var nickname: String? = "x" { didSet { didSets += 1 } }
    var opaque = Opaque(value: 0) { didSet { didSets += 1 } }
    var transform: (Int) -> Int = { $0 } { didSet { transforms += 1 } }
    var wide = Wide(repeating: 0) { didSet { transforms += 1 } }
    var transforms = 0
    var storage = 0
    var doubled: Int {
        get { storage / 2 }
        set { storage = newValue * 2; didSets += 1 }
    }
    var plain = 0
    var readOnly: Int { plain }
    var child: WriterTarget?
    subscript(index: Int) -> Int {
        get { index }
        set { plain = newValue }
    }
}

private final class GenericTarget<Value>: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    var didSets = 0
    var value: Value { didSet { didSets += 1 } }
    init(_ backend: ObservationBackend, _ value: Value) {
        kvoRegistrar = KeyValueRegistrar(backend: backend)
        self.value = value
    }
}

/// A key path to a generic class's property written in generic code: it carries the generic
/// argument as a component argument.
private func genericKeyPath<T>(_: T.Type) -> AnyKeyPath { \GenericTarget<T>.value }

/// A value wider than the registers that would carry it directly.
private struct Wide: Equatable {
    var a, b, c, d, e, f: Int
    init(repeating value: Int) { (a, b, c, d, e, f) = (value, value, value, value, value, value) }
}

private struct WriterValue {
    var count = 0 { didSet {} }
}
