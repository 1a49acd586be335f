@_spi(Testing) import ObserveCore
import Synchronization

// Objects that several threads set at once (`threads.2-same-object`). A stored Swift property set
// from two threads is a data race, so each keeps its value in an `Atomic<Int>` and announces the
// change after the exchange, with the value the exchange replaced — the README's pattern for an
// object several threads set (storage made thread-safe by the class, `didSet` announced without
// `willSet`). Every impl pays the same exchange on the same shared word; `plain` pays only that.

/// ObserveCore.
final class SharedKVOCounter: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar: KeyValueRegistrar
    private let storage = Atomic<Int>(0)
    init(backend: ObservationBackend) { kvoRegistrar = KeyValueRegistrar(backend: backend) }

    static let value = ObservableKey(\SharedKVOCounter.value)
    var value: Int {
        get { storage.load(ordering: .relaxed) }
        set {
            let old = storage.exchange(newValue, ordering: .relaxed)
            kvoRegistrar.didSet(SharedKVOCounter.value, of: self, from: old, to: newValue)
        }
    }
}

/// The hand-rolled registry.
final class SharedNaiveCounter: @unchecked Sendable {
    private let storage = Atomic<Int>(0)
    var value: Int {
        get { storage.load(ordering: .relaxed) }
        set {
            let old = storage.exchange(newValue, ordering: .relaxed)
            NaiveRegistry.shared.didChange(self, property: NaiveCounter.valueProperty, old: old, new: newValue)
        }
    }
}

/// No observation: what the shared word alone costs.
final class SharedPlainCounter: @unchecked Sendable {
    private let storage = Atomic<Int>(0)
    var value: Int {
        get { storage.load(ordering: .relaxed) }
        set { _ = storage.exchange(newValue, ordering: .relaxed) }
    }
}

@inline(never) func set(_ object: SharedKVOCounter, _ value: Int) { object.value = value }
@inline(never) func set(_ object: SharedNaiveCounter, _ value: Int) { object.value = value }
@inline(never) func set(_ object: SharedPlainCounter, _ value: Int) { object.value = value }

/// One observer's counters for two threads, each thread's on its own cache line: a value's low
/// bit says which thread set it (thread k sets values with low bit k), so each slot is written
/// only by the thread whose sets it counts (inline delivery runs on the setting thread).
final class ParitySinks: @unchecked Sendable {
    /// Two slots 128 bytes apart (adjacent-line prefetch included): total, then calls.
    private let slots = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 128)

    init() { slots.initializeMemory(as: UInt8.self, repeating: 0, count: 256) }
    deinit { slots.deallocate() }

    @inline(__always)
    func add(_ value: Int) {
        let slot = slots + (value & 1) &* 128
        slot.storeBytes(of: slot.load(as: Int.self) &+ value, as: Int.self)
        slot.storeBytes(of: slot.load(fromByteOffset: 8, as: Int.self) &+ 1, toByteOffset: 8, as: Int.self)
    }

    func total(_ thread: Int) -> Int { slots.load(fromByteOffset: thread * 128, as: Int.self) }
    func calls(_ thread: Int) -> Int { slots.load(fromByteOffset: thread * 128 + 8, as: Int.self) }
}
