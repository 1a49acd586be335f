/// The old and new values of one element property change, kept typed.
///
/// An element change travels from the element's setter, which knows the property's type, to
/// array observers, which see `ArrayChange<Element>` and may ask for the values as `Any?`
/// (``ArrayChange/elementOldValue``) or typed (``ArrayChange/elementChange(for:)``). Storing them
/// as `Any?` in the change made every change copy, assign and destroy two existentials through
/// the runtime's value witnesses (~500 instructions of a ~2,200-instruction element change, measured
/// with callgrind); this cell stores them as `Value?` and boxes only when `Any?` is asked for.
///
/// A recycled change box (`_ArrayChangeBox`) keeps its cell from one change to the next: the
/// setter refills it in place when the property has the same type (`store(_:_:in:)`).
@usableFromInline
internal class _ElementValuesBase {
    /// `ObjectIdentifier(Value.self)` of the concrete cell.
    @usableFromInline final let valueType: ObjectIdentifier
    /// Whether values of this type may hold references (then `clear()` must drop them).
    final let holdsReferences: Bool

    @usableFromInline
    init(valueType: ObjectIdentifier, holdsReferences: Bool) {
        self.valueType = valueType
        self.holdsReferences = holdsReferences
    }

    /// The old value boxed, nil when absent.
    var anyOld: Any? { nil }
    /// The new value boxed, nil when absent.
    var anyNew: Any? { nil }
    /// Drops the values (a recycled box must not keep referenced objects alive). Trivial values
    /// need not be dropped: the next change overwrites them, and the box says whether values are
    /// present, so stale ones are never read.
    func clear() {}
}

@usableFromInline
internal final class _ElementValues<Value>: _ElementValuesBase {
    @usableFromInline @exclusivity(unchecked) var old: Value?
    @usableFromInline @exclusivity(unchecked) var new: Value?

    @usableFromInline
    init(old: Value?, new: Value?) {
        self.old = old
        self.new = new
        super.init(valueType: ObjectIdentifier(Value.self), holdsReferences: !_isPOD(Value.self))
    }

    override var anyOld: Any? { old.flatMap(_unwrappingOneLevel) }
    override var anyNew: Any? { new.flatMap(_unwrappingOneLevel) }

    override func clear() {
        old = nil
        new = nil
    }

    /// Puts `old` and `new` in `cell`, reusing it when it holds values of this type.
    @inlinable
    static func store(_ old: Value?, _ new: Value?, in cell: inout _ElementValuesBase?) {
        if let existing = cell, existing.valueType == ObjectIdentifier(Value.self) {
            let typed = unsafeDowncast(existing, to: _ElementValues<Value>.self)
            typed.old = old
            typed.new = new
        } else {
            cell = _ElementValues(old: old, new: new)
        }
    }
}

/// What an element's setter hands to the arrays that track it: fills a change's value cell with
/// the values an observer asked for (old, new), typed. Non-escaping; called under an array's lock.
@usableFromInline
internal typealias _ElementValueStore = (_ cell: inout _ElementValuesBase?, _ wantsOld: Bool, _ wantsNew: Bool) -> Void

/// An optional's payload, one level down (`nil` for `.none`), for values boxed as `Any`.
private protocol _OptionalPayload {
    var _payload: Any? { get }
}

extension Optional: _OptionalPayload {
    fileprivate var _payload: Any? { map { $0 as Any } }
}

/// `value` boxed as `Any`, an optional unwrapped one level: an optional property's element change
/// reads as `String?` (nil when the property is nil), like its typed form, not `String??`.
private func _unwrappingOneLevel<Value>(_ value: Value) -> Any? {
    if let optional = value as? any _OptionalPayload { return optional._payload }
    return value
}
