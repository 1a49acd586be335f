internal import CObserveCore

/// A reference that does not keep its object alive, and loads it as nil once the object began
/// to die: what `weak` gives, without the side table.
///
/// A `weak` reference moves its object's reference counts onto a side table, and from then on
/// every retain and release of that object takes the runtime's slow path
/// (`swift_weakLoadStrong` ~48 and `doDecrementSlow` ~75 instructions per element change, when
/// the element tracker held its array weakly: 15% of the change, perf). This holds an `unowned`
/// reference instead, which keeps only the object's memory (an unowned count in its header), and
/// loads with `swift_tryRetain`, which fails once deinitialization began.
///
/// `Object` must be a class type or `AnyObject` (one pointer), not a protocol existential.
/// Thread safety: `load()` may race with the object's last release on another thread; it then
/// answers nil or a strong reference taken before the deinit began (which delays that deinit).
///
/// ```swift
/// let array = _UnownedReference(observableArray)
/// if let array = array.load() { array._elementDidChange(…) }   // nil once it began to die
/// ```
internal struct _UnownedReference<Object: AnyObject>: @unchecked Sendable {
    /// Keeps the object's memory allocated (never loaded: a load of a dying object traps).
    private unowned(safe) let _keep: Object
    private let _address: UnsafeRawPointer

    init(_ object: Object) {
        _keep = object
        _address = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
    }

    /// The object, strongly, unless its deinitialization has begun.
    @inline(__always)
    func load() -> Object? {
        guard swift_tryRetain(_address) != nil else { return nil }
        return Unmanaged<Object>.fromOpaque(_address).takeRetainedValue()
    }
}
