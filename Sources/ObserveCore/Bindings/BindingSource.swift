/// The source end of a binding: a property of an object, followed by a pipeline of filters and
/// maps (YJSafeKVO's subscribe mode).
///
/// Make one with ``KeyValueObservable/bindable(_:)``, shape it with ``filter(_:)`` and
/// ``map(_:)``, and hand it to ``KeyValueObservable/bind(_:to:after:)``:
///
/// ```swift
/// label.bind(\.text, to: person.bindable(\.age).filter { $0 >= 0 }.map { "\($0) years" })
/// ```
///
/// A source holds its object weakly: keeping a `BindingSource` does not keep the object alive.
public struct BindingSource<Value> {
    /// The current value through the pipeline; nil when the object is gone or a filter rejects it.
    @usableFromInline internal let _read: () -> Value?
    /// Registers on the object (a token registration: the binding's target is not named as its
    /// observer, see `_BindingCore`); `sink` gets each new value that passes the pipeline.
    @usableFromInline internal let _attach: (_ sink: @escaping (Value) -> Void) -> _AnyRegistration?
    /// The observed object, weakly.
    @usableFromInline internal let _object: _WeakObject

    @usableFromInline
    internal init(read: @escaping () -> Value?,
                  attach: @escaping (@escaping (Value) -> Void) -> _AnyRegistration?,
                  object: _WeakObject) {
        _read = read
        _attach = attach
        _object = object
    }

    /// Passes on only the values for which `isIncluded` is true. The target keeps its value when
    /// a change is filtered out; at binding time, a current value filtered out is not applied.
    ///
    /// ```swift
    /// adultAge.bind(\.value, to: person.bindable(\.age).filter { $0 >= 18 })
    /// ```
    public func filter(_ isIncluded: @escaping (Value) -> Bool) -> BindingSource<Value> {
        let read = _read, attach = _attach
        return BindingSource(
            read: {
                guard let value = read(), isIncluded(value) else { return nil }
                return value
            },
            attach: { sink in
                attach { value in if isIncluded(value) { sink(value) } }
            },
            object: _object)
    }

    /// Transforms each value, possibly into another type.
    ///
    /// ```swift
    /// label.bind(\.text, to: person.bindable(\.age).map { "\($0) years" })     // Int -> String
    /// ```
    public func map<NewValue>(_ transform: @escaping (Value) -> NewValue) -> BindingSource<NewValue> {
        let read = _read, attach = _attach
        return BindingSource<NewValue>(
            read: { read().map(transform) },
            attach: { sink in
                attach { value in sink(transform(value)) }
            },
            object: _object)
    }
}

extension KeyValueObservable {
    /// This object's property as the source of a binding (see ``bind(_:to:after:)``).
    ///
    /// ```swift
    /// label.bind(\.text, to: person.bindable(\.name))
    /// label.bind(\.text, to: person.bindable(\.age).map { "\($0) years" })
    /// ```
    ///
    /// Key path chains work: `person.bindable(\.address?.city)` follows the person's current address.
    /// - Parameter keyPath: The property, rooted at the class that declares its ``ObservableKey``.
    ///
    /// Inlinable so that the source's closures are compiled where it is made, specialised for
    /// `Self` and `Value` (made here, generic, each change looked up `ObservedChange<Value>` and
    /// `Optional<Value>` metadata, about 660 instructions, callgrind).
    @inlinable
    public func bindable<Value>(_ keyPath: KeyPath<Self, Value>) -> BindingSource<Value> {
        BindingSource(
            read: { [weak self] in self.map { $0[keyPath: keyPath] } },
            attach: { [weak self] sink in
                guard let self else { return nil }
                return self._register(keyPath, options: [.new], delivery: .inline,
                                      tokenHandler: { _, change in sink(change.newValue!) })
            },
            object: _WeakObject(self))
    }
}

/// A weak reference, for arrays of them and for values that must not keep an object alive.
@usableFromInline
internal struct _WeakObject: @unchecked Sendable {
    @usableFromInline weak var object: AnyObject?
    @usableFromInline init(_ object: AnyObject?) { self.object = object }
}
