/// A binding between a source property and a target property (see
/// ``KeyValueObservable/bind(_:to:after:)``), and the means to end it.
///
/// A binding lives as long as its objects: it ends when the target or any source dies, or when
/// it is cancelled. Releasing this object does **not** end it (unlike ``ObservationToken``), so
/// the result may be discarded:
///
/// ```swift
/// label.bind(\.text, to: person.bindable(\.name))            // lives as long as both
/// let binding = label.bind(\.text, to: person.bindable(\.name))
/// binding.cancel()                                            // or end it explicitly
/// ```
public final class KeyValueBinding: @unchecked Sendable {
    @usableFromInline internal let _core: _BindingCore

    @usableFromInline internal init(_ core: _BindingCore) { _core = core }

    /// Ends the binding: the target stops following its sources. Idempotent and thread-safe;
    /// allowed from inside an after-hook. The same verb as ``ObservationToken/cancel()``.
    ///
    /// ```swift
    /// binding.cancel()
    /// ```
    public func cancel() { _core.cutOff() }

    /// The binding's former name for ``cancel()``.
    @available(*, deprecated, renamed: "cancel()", message: "one verb ends every observation: cancel()")
    public func cutOff() { cancel() }

    /// Whether the binding still propagates: not cancelled, and its target and sources alive.
    ///
    /// ```swift
    /// if !binding.isActive { print("the label or the person is gone") }
    /// ```
    public var isActive: Bool { _core.isActive }
}

extension KeyValueObservable {
    /// Binds a property of this object (the target) to a source: the target takes the source's
    /// value at once and follows every change, through the source's pipeline.
    ///
    /// ```swift
    /// label.bind(\.text, to: person.bindable(\.name))
    /// label.bind(\.text, to: person.bindable(\.age).filter { $0 >= 0 }.map { "\($0) years" },
    ///            after: { label, text in label.needsLayout = true })
    /// ```
    ///
    /// - The target's property is written through its setter, so the target's own observers
    ///   (and bindings from it) hear it. A value equal to the target's current one (for
    ///   `Equatable` values) is not written, and then the after-hook does not run.
    /// - Propagation runs inline on the thread that set the source.
    /// - The binding ends when either object dies (it keeps neither alive) or when it is cut off.
    /// - Cycles (A bound to B bound to A, directly or through other bindings) settle: a binding
    ///   does not propagate while it is already propagating on the same thread, so a change goes
    ///   round the cycle once and stops. The values then agree when the pipelines round-trip
    ///   (as with plain bindings); otherwise each side keeps the last value written to it.
    ///
    /// - Parameters:
    ///   - keyPath: The target property (of this object).
    ///   - source: The source: `someObject.bindable(\.property)`, optionally filtered and mapped.
    ///   - after: Runs after each write with the target and the value written. It must not
    ///     capture the target strongly if the binding is not to keep it alive (it is handed in).
    /// - Returns: The binding, for cutting it off; discardable.
    ///
    /// Inlinable, like the sugar below and ``bindable(_:)``, so that the writer runs specialised
    /// for `Self` and `Value`.
    @inlinable @discardableResult
    public func bind<Value>(
        _ keyPath: ReferenceWritableKeyPath<Self, Value>,
        to source: BindingSource<Value>,
        after: ((Self, Value) -> Void)? = nil
    ) -> KeyValueBinding {
        let core = _BindingCore(target: self)
        let write = _BindingCore.writer(keyPath, after: after)
        core.add(source._attach(core.sink(to: self) { target, value in write(unsafeDowncast(target, to: Self.self), value) }))
        if let value = source._read() { core.propagate(self) { target in write(unsafeDowncast(target, to: Self.self), value) } }
        return KeyValueBinding(core)
    }

    /// Binds a property of this object to a property of another (sugar for
    /// `bind(keyPath, to: source.bindable(sourceKeyPath))`).
    ///
    /// ```swift
    /// mirror.bind(\.name, to: person, \.name)
    /// ```
    @inlinable @discardableResult
    public func bind<Source: KeyValueObservable, Value>(
        _ keyPath: ReferenceWritableKeyPath<Self, Value>,
        to source: Source, _ sourceKeyPath: KeyPath<Source, Value>,
        after: ((Self, Value) -> Void)? = nil
    ) -> KeyValueBinding {
        bind(keyPath, to: source.bindable(sourceKeyPath), after: after)
    }

    /// Binds a property of this object to several sources combined by `reduce` (YJSafeKVO's
    /// "flooded … converge"): the target takes the reduced value at once and again whenever any
    /// source changes.
    ///
    /// ```swift
    /// badge.bind(\.text, to: person.bindable(\.name), person.bindable(\.age), cart.bindable(\.count)) {
    ///     name, age, count in "\(name) (\(age)): \(count) items"
    /// }
    /// ```
    ///
    /// On each change, every source's current value is read through its pipeline and `reduce`
    /// combines them; when a source's value is filtered out, nothing is written. The sources may
    /// be different objects with different value types. The binding ends when the target or
    /// *any* source dies, or when it is cut off; cycles settle as for single bindings.
    ///
    /// - Parameters:
    ///   - keyPath: The target property (of this object).
    ///   - sources: One or more sources (`object.bindable(\.property)`, filtered or mapped).
    ///   - reduce: Combines the sources' values into the target's value.
    ///   - after: Runs after each write with the target and the value written.
    /// - Returns: The binding, for cutting it off; discardable.
    @discardableResult
    public func bind<Value, each Input>(
        _ keyPath: ReferenceWritableKeyPath<Self, Value>,
        to sources: repeat BindingSource<each Input>,
        reduce: @escaping (repeat each Input) -> Value,
        after: ((Self, Value) -> Void)? = nil
    ) -> KeyValueBinding {
        let core = _BindingCore(target: self)
        let write = _BindingCore.writer(keyPath, after: after)
        let combined: () -> Value? = {
            do {
                let values = (repeat try _bindingValue((each sources)._read()))
                return reduce(repeat each values)
            } catch {
                return nil
            }
        }
        for source in repeat each sources {
            if let object = source._object.object { core.watch(object) } else { core.cutOff() }
            core.add(source._attach(core.sink(to: self) { target, _ in
                if let value = combined() { write(unsafeDowncast(target, to: Self.self), value) }
            }))
        }
        if let value = combined() { core.propagate(self) { target in write(unsafeDowncast(target, to: Self.self), value) } }
        return KeyValueBinding(core)
    }
}

private struct _FilteredOut: Error {}

/// A source's value, or a throw that makes the combined binding skip this change.
private func _bindingValue<T>(_ value: T?) throws -> T {
    guard let value else { throw _FilteredOut() }
    return value
}
