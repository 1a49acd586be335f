@_spi(Testing) import ObserveCore

// The `set.1-macro` row's object: the class `@KeyValueObservable` writes for the declaration
// below. observe-bench must not depend on swift-syntax (a clean release build of it takes
// minutes), so it carries the macro's output instead of the macro:
//
//     @KeyValueObservable
//     final class MacroCounter {
//         let kvoRegistrar: KeyValueRegistrar
//         init(backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }
//         var value = 0
//     }
//
// Tests/ObserveCoreMacrosTests/BenchSubjectExpansionTests.swift expands that declaration with
// the macro and fails unless the result is the code between the two markers, character for
// character: the row measures what macro users get.

// BEGIN EXPANSION
final class MacroCounter {
    let kvoRegistrar: KeyValueRegistrar
    init(backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }
    var value = 0 {
        willSet {
            kvoRegistrar.willSet(MacroCounter.value, of: self, from: self.value)
        }
        didSet {
            kvoRegistrar.didSet(MacroCounter.value, of: self, from: oldValue, to: self.value)
        }
    }

    static let value = ObservableKey(\MacroCounter.value, name: "value")

    static let observableKeys: [any ObservableKeyProtocol] = [MacroCounter.value]

    static let observableKeysAreComplete = true
}

extension MacroCounter: KeyValueObservable, ObservableKeyListing {
}
// END EXPANSION

@inline(never) func set(_ object: MacroCounter, _ value: Int) { object.value = value }

/// The same registration as `observeKVO`, on the macro-declared class.
func observeKVO(_ counter: MacroCounter, _ sink: Sink) -> ObservationToken {
    counter.observe(\.value, options: [.new]) { _, change in
        sink.add(change.newValue!)
    }
}
