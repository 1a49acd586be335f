/// One declared key seen as a possible link of a key path chain: the typed operations a chain
/// driver needs on it, behind a non-generic face.
///
/// A hop is made once per declared key (by `_KeyCatalog.declare`), when the key's root class is
/// ``KeyValueObservable``. A hop whose value is a ``KeyValueObservable`` class, or an optional
/// one, is a *link*: a chain can continue through it. Every hop can be a chain's *leaf*.
internal class _AnyHop: @unchecked Sendable {
    let keyPath: AnyKeyPath
    let keyID: UInt32
    /// The class the value leads to, when the value is an observable object or an optional one.
    let linkType: (any KeyValueObservable.Type)?
    /// Whether the link's value is optional (`\.address?.city` rather than `\.home.city`).
    let linkIsOptional: Bool
    /// Whether the hop's value type is itself an `Optional`.
    let valueIsOptional: Bool
    /// The key path's components (see `_KeyPathComponent`), which chain resolution matches
    /// against a registered key path's; read once, when the key is declared. Nil when the key
    /// path could not be read: such a hop is never part of a chain.
    let components: [_KeyPathComponent]?

    init(keyPath: AnyKeyPath, keyID: UInt32, linkType: (any KeyValueObservable.Type)?, linkIsOptional: Bool,
         valueIsOptional: Bool) {
        self.keyPath = keyPath
        self.keyID = keyID
        self.linkType = linkType
        self.linkIsOptional = linkIsOptional
        self.valueIsOptional = valueIsOptional
        self.components = _KeyPathComponent.components(of: keyPath)
    }

    /// For a link: the object its value leads to on `object`, nil when the optional value is nil.
    func next(of object: AnyObject) -> AnyObject? { fatalError("abstract") }

    /// Whether a chain ending in this hop can have value type `chainValue`: the hop's value type,
    /// or its optional (a chain through an optional link).
    func fits(chainValue: Any.Type) -> Bool { fatalError("abstract") }

    /// For a link: registers for the link's changes on `object` (a token registration: the chain
    /// driver holds its root, see `_ChainDriver`). The handler gets the object, the object the link
    /// led to before the change (nil for a prior notification or a nil value), and whether this is
    /// the prior notification.
    func registerLink(on object: AnyObject, prior: Bool,
                      _ handler: @escaping (AnyObject, AnyObject?, Bool) -> Void) -> _AnyRegistration? {
        fatalError("abstract")
    }

    /// As the leaf of a chain whose value type is `ChainValue` (this hop's value, or its optional):
    /// registers for the hop's changes, delivered converted to `ChainValue` as (object, old value,
    /// new value, is prior); a prior notification repeats the old value as the new one.
    func registerLeaf<ChainValue>(on object: AnyObject, prior: Bool, as: ChainValue.Type,
                                  _ handler: @escaping (AnyObject, ChainValue, ChainValue, Bool) -> Void)
    -> _AnyRegistration? {
        fatalError("abstract")
    }

    /// As the leaf of a chain: the hop's value on `object` converted to `ChainValue`; nil (of the
    /// optional `ChainValue`) when `object` is nil because a link before it was nil.
    func leafValue<ChainValue>(of object: AnyObject?, as: ChainValue.Type) -> ChainValue { fatalError("abstract") }
}

internal final class _TypedHop<Object: KeyValueObservable, Value>: _AnyHop, @unchecked Sendable {
    let typedKeyPath: KeyPath<Object, Value>
    /// Made where the key was declared, specialised for `Value` (see `_LeafAdapters`).
    let leafAdapters: _LeafAdapters<Value>

    init(_ keyPath: KeyPath<Object, Value>, keyID: UInt32, leafAdapters: _LeafAdapters<Value>) {
        typedKeyPath = keyPath
        self.leafAdapters = leafAdapters
        var linkType: (any KeyValueObservable.Type)? = nil
        var linkIsOptional = false
        // Protocol casts only where they can succeed: the runtime answers the first
        // `as? any P.Type` for a type by scanning every conformance record of the process (about
        // 100,000 instructions), while "is it a class" and "is it an Optional" read its metadata.
        // Most keys hold an Int or a String and pay for neither scan.
        let optional = _isOptional(Value.self) ? Value.self as? any _OptionalProtocol.Type : nil
        if Value.self is AnyObject.Type, let observable = Value.self as? any KeyValueObservable.Type {
            linkType = observable
        } else if let optional, optional._wrappedType is AnyObject.Type,
                  let observable = optional._wrappedType as? any KeyValueObservable.Type {
            linkType = observable
            linkIsOptional = true
        }
        super.init(keyPath: keyPath, keyID: keyID, linkType: linkType, linkIsOptional: linkIsOptional,
                   valueIsOptional: optional != nil)
    }

    @inline(__always)
    private func _object(_ value: Value) -> AnyObject? {
        if linkIsOptional { return (value as! any _OptionalProtocol)._wrappedObject }
        return value as AnyObject
    }

    override func fits(chainValue: Any.Type) -> Bool {
        chainValue == Value.self || chainValue == Optional<Value>.self
    }

    override func next(of object: AnyObject) -> AnyObject? {
        _object(unsafeDowncast(object, to: Object.self)[keyPath: typedKeyPath])
    }

    override func registerLink(on object: AnyObject, prior: Bool,
                               _ handler: @escaping (AnyObject, AnyObject?, Bool) -> Void) -> _AnyRegistration? {
        let typed = unsafeDowncast(object, to: Object.self)
        return typed._register(typedKeyPath, options: prior ? [.old, .prior] : [.old], delivery: .inline,
                               tokenHandler: { object, change in
                                   if change.isPrior {
                                       handler(object, nil, true)
                                   } else {
                                       handler(object, self._object(change.oldValue!), false)
                                   }
                               })
    }

    /// Converts this hop's value into a chain value: the same type, or its optional.
    private func _lift<ChainValue>(_: ChainValue.Type) -> (Value) -> ChainValue {
        if Value.self == ChainValue.self {
            return { value in _identityCast(value, to: ChainValue.self) }
        }
        guard let optional = ChainValue.self as? any _OptionalProtocol.Type, optional._wrappedType == Value.self else {
            _misuse("ObserveCore internal error: chain value \(ChainValue.self) does not fit leaf \(Value.self)")
        }
        // Made through the metatype found once here, which carries `Optional<Value>`'s metadata:
        // naming `Optional<Value>` in this generic closure looked that metadata up on every change.
        return { value in _makeSome(optional, value, as: ChainValue.self) }
    }

    override func registerLeaf<ChainValue>(on object: AnyObject, prior: Bool, as: ChainValue.Type,
                                           _ handler: @escaping (AnyObject, ChainValue, ChainValue, Bool) -> Void)
    -> _AnyRegistration? {
        let typed = unsafeDowncast(object, to: Object.self)
        let options: ObservationOptions = prior ? [.old, .new, .prior] : [.old, .new]
        // The handler is the key's own adapter, specialised for `Value`: this method is generic code
        // no caller specialises, and a handler made here looked up `ObservedChange<Value>` and
        // `Optional<Value>` and copied values through their witnesses on every change (callgrind,
        // chain leaf set: 2,332 -> 832 instructions; 686 once the chain's registrations no longer
        // named the root weakly).
        let sink = _LeafSink(handler)
        let adapter: (AnyObject, ObservedChange<Value>) -> Void
        if Value.self == ChainValue.self {
            adapter = leafAdapters.same(sink)
        } else {
            guard ChainValue.self == Optional<Value>.self else {
                _misuse("ObserveCore internal error: chain value \(ChainValue.self) does not fit leaf \(Value.self)")
            }
            adapter = leafAdapters.optional(sink)
        }
        return typed._register(typedKeyPath, options: options, delivery: .inline,
                               tokenHandler: { object, change in adapter(object, change) })
    }

    override func leafValue<ChainValue>(of object: AnyObject?, as: ChainValue.Type) -> ChainValue {
        guard let object else { return _nilValue(ChainValue.self) }
        return _lift(ChainValue.self)(unsafeDowncast(object, to: Object.self)[keyPath: typedKeyPath])
    }
}

// MARK: - Chain leaves, specialised where the key is declared

/// How a chain whose leaf is a key of value `Value` hears the leaf change: two factories of the
/// registration handler, one for a chain of value `Value` and one for a chain of value `Value?`
/// (through an optional link). Each takes the chain's sink (a `_LeafSink<Value>` or a
/// `_LeafSink<Value?>`, as `AnyObject`) and returns the handler that converts the leaf's change
/// and hands it on.
///
/// Made by ``ObservableKey/init(_:)``, which is inlinable for this: the closures are compiled where
/// the key is declared, specialised for `Value`, so a leaf change moves its values as what they
/// are. (The chain driver and the hop are generic code no caller specialises: a handler made
/// there reads `ObservedChange<Value>`'s fields and makes `Optional<Value>` through runtime
/// metadata lookups and value witnesses.) A key made in generic code (a dependent key's
/// declaration) gets unspecialised adapters that do the same, slower.
@usableFromInline
internal struct _LeafAdapters<Value> {
    @usableFromInline let same: (_ sink: AnyObject) -> (AnyObject, ObservedChange<Value>) -> Void
    @usableFromInline let optional: (_ sink: AnyObject) -> (AnyObject, ObservedChange<Value>) -> Void

    @inlinable
    init(same: @escaping (AnyObject) -> (AnyObject, ObservedChange<Value>) -> Void,
         optional: @escaping (AnyObject) -> (AnyObject, ObservedChange<Value>) -> Void) {
        self.same = same
        self.optional = optional
    }

    /// A prior notification repeats the old value as the new one (the chain's contract; see
    /// `_AnyHop.registerLeaf`).
    @inlinable
    static func make() -> _LeafAdapters<Value> {
        _LeafAdapters(
            same: { sink in
                let sink = unsafeDowncast(sink, to: _LeafSink<Value>.self)
                return { object, change in
                    let oldValue = change.oldValue.unsafelyUnwrapped
                    sink.deliver(object, oldValue,
                                 change.isPrior ? oldValue : change.newValue.unsafelyUnwrapped, change.isPrior)
                }
            },
            optional: { sink in
                let sink = unsafeDowncast(sink, to: _LeafSink<Value?>.self)
                return { object, change in
                    let oldValue: Value? = change.oldValue.unsafelyUnwrapped
                    sink.deliver(object, oldValue,
                                 change.isPrior ? oldValue : change.newValue.unsafelyUnwrapped, change.isPrior)
                }
            })
    }
}

/// Where a chain's leaf adapter hands a change: the chain driver's handler (object, old value,
/// new value, is prior), in the chain's value type.
@usableFromInline
internal final class _LeafSink<ChainValue>: @unchecked Sendable {
    @usableFromInline let _handler: (AnyObject, ChainValue, ChainValue, Bool) -> Void

    init(_ handler: @escaping (AnyObject, ChainValue, ChainValue, Bool) -> Void) { _handler = handler }

    /// Calls the handler from the sink's own method, which takes no retain of the closure (a
    /// closure read from another object's field and called was retained around the call).
    @inlinable @inline(__always)
    final func deliver(_ object: AnyObject, _ oldValue: ChainValue, _ newValue: ChainValue, _ isPrior: Bool) {
        _handler(object, oldValue, newValue, isPrior)
    }
}

// MARK: - Helpers for generic optionals

/// Lets generic code ask whether a type is an `Optional`, and make or unwrap one.
internal protocol _OptionalProtocol {
    static var _wrappedType: Any.Type { get }
    static var _none: Self { get }
    var _wrappedObject: AnyObject? { get }
    /// `.some(value)`, where `value`'s type is `Wrapped` (checked by the caller).
    static func _some<T>(_ value: T) -> Self
}

/// `.some(value)` as `Target`, which is the optional type `optional` (checked by the caller):
/// opening the metatype passes `Optional<Wrapped>`'s metadata along instead of looking it up.
internal func _makeSome<Wrapping: _OptionalProtocol, Value, Target>(_ optional: Wrapping.Type, _ value: Value,
                                                                     as _: Target.Type) -> Target {
    _identityCast(Wrapping._some(value), to: Target.self)
}

extension Optional: _OptionalProtocol {
    static var _wrappedType: Any.Type { Wrapped.self }
    static var _none: Self { .none }
    var _wrappedObject: AnyObject? {
        switch self {
        case .some(let wrapped): return wrapped as AnyObject
        case .none: return nil
        }
    }
    static func _some<T>(_ value: T) -> Self { .some(_identityCast(value, to: Wrapped.self)) }
}

/// The nil of `Value`, which must be an `Optional` type (a chain through an optional link).
internal func _nilValue<Value>(_: Value.Type) -> Value {
    guard let optional = Value.self as? any _OptionalProtocol.Type else {
        _misuse("ObserveCore internal error: \(Value.self) is not optional but a link was nil")
    }
    return optional._none as! Value
}

/// `value` as `Target` when the two are the same type (checked by the caller), so no dynamic
/// cast runs on the notification path. A bit cast (a copy by `Target`'s value witness, after a
/// size check): the copy through a rebound pointer it replaced ran `withUnsafePointer` and
/// `withMemoryRebound` unspecialized, with two closure contexts, about 110 instructions a cast
/// (callgrind, chain leaf set: 2,814 -> 2,376 instructions).
@inline(__always)
internal func _identityCast<Source, Target>(_ value: Source, to: Target.Type) -> Target {
    unsafeBitCast(value, to: Target.self)
}
