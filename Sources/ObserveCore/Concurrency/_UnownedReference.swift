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
/// The price: the memory of a dead object (its allocation, not what it referred to) stays
/// allocated while this reference exists. Holders drop it when they learn of the death (see each).
///
/// Where Objective-C interoperability exists (Darwin), an object may be an Objective-C one, whose
/// counts `swift_tryRetain` cannot read and whose memory an unowned reference does not keep: there
/// this is a plain `weak` reference.
///
/// `Object` must be a class type or `AnyObject` (one pointer), not a protocol existential.
/// Thread safety: `load()` may race with the object's last release on another thread; it then
/// answers nil or a strong reference taken before the deinit began (which delays that deinit).
///
/// ```swift
/// let array = _UnownedReference(observableArray)
/// if let array = array.load() { … }   // nil once it began to die (trackers: under the directory's lock)
/// ```
internal struct _UnownedReference<Object: AnyObject>: @unchecked Sendable {
    #if _runtime(_ObjC)
    private weak var _object: Object?

    init(_ object: Object) { _object = object }

    /// The object, strongly, unless its deinitialization has begun.
    func load() -> Object? { _object }

    /// Whether the object's deinitialization has begun (a weak load here: it takes and drops
    /// a strong reference, as the `weak` reference this replaced did).
    var isDead: Bool { _object == nil }

    /// Whether this refers to `object`.
    func refers(to object: AnyObject) -> Bool { _object === object }
    #else
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

    /// Whether the object's deinitialization has begun. Takes no strong reference, so a caller
    /// holding a lock the object's deinit takes can ask (a load's release could be the last one,
    /// and run that deinit under the lock).
    var isDead: Bool { swift_isDeallocating(_address) }

    /// Whether this refers to `object`. By address, without a load: the memory this reference
    /// keeps cannot be reused, so an equal address is the same object.
    func refers(to object: AnyObject) -> Bool {
        _address == UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
    }
    #endif
}
