@_spi(Testing) import ObserveCore
import Observation
import OpenCombine

// The observed objects, one class per implementation, each with one observable `Int` property
// `value`, declared the way that implementation's users declare it. Every class is `final`.
//
// Every set in every scenario goes through one of the `set(_:_:)` functions below. They are
// `@inline(never)`, so each operation is one real call that stores a runtime value into an
// object the optimiser cannot see through; `plain` is measured through exactly the same kind of
// call, which makes "ObserveCore set / plain set" a fair ratio (a plain set inlined into a loop
// is merged into one store by the optimiser and measures nothing).

/// ObserveCore: the documented accessor form (no macro).
final class KVOCounter: KeyValueObservable {
    let kvoRegistrar: KeyValueRegistrar
    init(backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }

    static let value = ObservableKey(\KVOCounter.value)
    var value = 0 {
        willSet { kvoRegistrar.willSet(KVOCounter.value, of: self, from: value) }
        didSet { kvoRegistrar.didSet(KVOCounter.value, of: self, from: oldValue, to: value) }
    }
}

/// The hand-rolled registry's object: every set reports to the registry.
final class NaiveCounter {
    static let valueProperty = 0
    var value = 0 {
        didSet { NaiveRegistry.shared.didChange(self, property: NaiveCounter.valueProperty, old: oldValue, new: value) }
    }
}

/// Swift's Observation framework.
/// (`@unchecked Sendable` only so that `onChange`, a `@Sendable` closure, may capture it weakly;
/// it changes no generated code on the measured path.)
@Observable
final class ObservationCounter: @unchecked Sendable {
    var value = 0
}

/// OpenCombine.
final class PublishedCounter {
    @Published var value = 0
}

/// No observation at all: the floor.
final class PlainCounter {
    var value = 0
}

@inline(never) func set(_ object: KVOCounter, _ value: Int) { object.value = value }
@inline(never) func set(_ object: NaiveCounter, _ value: Int) { object.value = value }
@inline(never) func set(_ object: ObservationCounter, _ value: Int) { object.value = value }
@inline(never) func set(_ object: PublishedCounter, _ value: Int) { object.value = value }
@inline(never) func set(_ object: PlainCounter, _ value: Int) { object.value = value }

// MARK: - Registering one observer, the way each implementation's users do

/// ObserveCore: a token-based observation whose handler adds the new value to `sink`.
func observeKVO(_ counter: KVOCounter, _ sink: Sink) -> ObservationToken {
    counter.observe(\.value, options: [.new]) { _, change in
        sink.add(change.newValue!)
    }
}

/// The naive registry: same handler.
func observeNaive(_ counter: NaiveCounter, _ sink: Sink) -> NaiveToken {
    NaiveRegistry.shared.observe(counter, property: NaiveCounter.valueProperty) { (_: NaiveCounter, _: Int, new: Int) in
        sink.add(new)
    }
}

/// OpenCombine: a sink subscriber (it also receives the current value once, on subscription).
func observePublished(_ counter: PublishedCounter, _ sink: Sink) -> AnyCancellable {
    counter.$value.sink { value in sink.add(value) }
}

/// Observation: track `value` and re-arm the tracking when it fires, as users do to keep
/// observing. `onChange` runs before the new value is stored (it is a will-set), so the
/// handler's side effect reads the value inside the tracking closure, on each re-arm.
/// Observation has no cancellation: an armed tracking ends when it fires or its object dies.
func observeObservation(_ counter: ObservationCounter, _ sink: Sink) {
    withObservationTracking {
        sink.add(counter.value)
    } onChange: { [weak counter] in
        if let counter { observeObservation(counter, sink) }
    }
}
