/// The components of a key path, read from the key path object itself: what chain resolution
/// compares, so that `\Person.address?.city` is recognised as `Person.address`, an optional
/// chain, then `Address.city`.
///
/// Why read the object. Swift offers no public way to split a key path or to build
/// `\Root.link?.leaf` from `\Root.link` and `\Link.leaf` (`appending(path:)` composes only
/// non-optional links, and appending `\Link?.?.leaf` adds a wrap that the literal does not have).
/// Descriptions are no substitute: `debugDescription` prints a computed component by its getter's
/// address, and an optimised build emits one getter thunk per key path literal site, so two
/// literals naming the same property print differently in `-c release` (the chain-resolution
/// crash of release builds). Key path equality (`==`) compares what is read here instead: a
/// stored component's offset, a computed component's identifier, an optional component's kind.
///
/// The layout read is the instantiated key path object of the Swift runtime's key path ABI
/// (swift/docs/ABI/KeyPaths.md, `RawKeyPathComponent` in the standard library):
///
///     +0   heap object header (2 words)
///     +16  _kvcKeyPathStringPtr (1 word)
///     +24  buffer header: UInt32, bits 0..23 = size in bytes of what follows the padded header
///     +32  components, each:  UInt32 header (bits 24..30 kind, 0..23 payload)
///                             [UInt32 out-of-line stored offset]
///                             [computed: pad to a word; id, getter, setter if settable,
///                              argument size + witnesses + arguments if it has arguments]
///          and, between two components, padding to a word and the next component's type.
///
/// The reader checks itself: it must land exactly on the buffer's end, every kind must be one it
/// knows, and key paths of known shapes must read as expected (`_layoutIsReadable`, once). When any
/// check fails it returns nil and chain resolution reports the key path as unsupported with a
/// message — never a wrong match.
internal enum _KeyPathComponent: Hashable {
    /// A stored property at a byte offset (`isClass`: of a class instance, else of a struct).
    case stored(offset: UInt32, isClass: Bool)
    /// A computed property (or a stored one reached through its accessors), by identifier.
    case computed(id: UInt)
    /// A computed component with subscript arguments: never part of a chain ObserveCore resolves.
    case subscripted
    case optionalChain
    case optionalWrap
    case optionalForce

    /// The components of `keyPath`, or nil when its object does not have the expected layout.
    static func components(of keyPath: AnyKeyPath) -> [_KeyPathComponent]? {
        guard _layoutIsReadable else { return nil }
        return _read(keyPath)
    }

    // The layout's constants, shared with `_ComputedAccessors` below.
    fileprivate static let _kindShift: UInt32 = 24
    fileprivate static let _kindMask: UInt32 = 0x7F00_0000
    fileprivate static let _payloadMask: UInt32 = 0x00FF_FFFF
    private static let _storedOffsetMask: UInt32 = 0x007F_FFFF
    private static let _maximumInlineOffset: UInt32 = 0x007F_FFFC
    private static let _outOfLineOffset: UInt32 = 0x007F_FFFF
    fileprivate static let _computedKind: UInt32 = 2
    fileprivate static let _computedMutating: UInt32 = 0x0080_0000
    fileprivate static let _computedSettable: UInt32 = 0x0040_0000
    fileprivate static let _computedHasArguments: UInt32 = 0x0008_0000
    fileprivate static let _bufferSizeMask: UInt32 = 0x00FF_FFFF
    fileprivate static let _word = MemoryLayout<Int>.size

    private static func _read(_ keyPath: AnyKeyPath) -> [_KeyPathComponent]? {
        withExtendedLifetime(keyPath) {
            let object = UnsafeRawPointer(Unmanaged.passUnretained(keyPath).toOpaque())
            let header = object.load(fromByteOffset: 3 * _word, as: UInt32.self)
            let size = Int(header & _bufferSizeMask)
            let start = 3 * _word + _word        // the header is padded to a word
            let end = start + size
            var position = start
            var components: [_KeyPathComponent] = []
            while position < end {
                let raw = object.load(fromByteOffset: position, as: UInt32.self)
                position += 4
                let payload = raw & _payloadMask
                switch (raw & _kindMask) >> _kindShift {
                case 1, 3:                                          // struct, class stored
                    var offset = payload & _storedOffsetMask
                    if offset == _outOfLineOffset {
                        offset = object.load(fromByteOffset: position, as: UInt32.self)
                        position += 4
                    } else if offset > _maximumInlineOffset {
                        return nil                                  // unresolved: a pattern, not an object
                    }
                    components.append(.stored(offset: offset, isClass: (raw & _kindMask) >> _kindShift == 3))
                case _computedKind:                                 // computed
                    position = _align(position)
                    let id = object.load(fromByteOffset: position, as: UInt.self)
                    position += 2 * _word                           // id, getter
                    if payload & _computedSettable != 0 { position += _word }
                    if payload & _computedHasArguments != 0 {
                        let argumentSize = object.load(fromByteOffset: position, as: Int.self)
                        guard argumentSize >= 0, argumentSize <= size else { return nil }
                        position += 2 * _word + argumentSize        // size, witnesses, arguments
                        components.append(.subscripted)
                    } else {
                        components.append(.computed(id: id))
                    }
                case 4:
                    switch payload {
                    case 0: components.append(.optionalChain)
                    case 1: components.append(.optionalWrap)
                    case 2: components.append(.optionalForce)
                    default: return nil
                    }
                default:
                    return nil
                }
                if position < end {                                 // the next component's type
                    position = _align(position) + _word
                }
            }
            return position == end ? components : nil
        }
    }

    @inline(__always)
    fileprivate static func _align(_ position: Int) -> Int {
        (position + _word - 1) & ~(_word - 1)
    }

    /// Whether the reader understands this runtime's key paths: checked once, on key paths of a
    /// private class whose shapes are known, before anything relies on it.
    private static let _layoutIsReadable: Bool = {
        let shapes: [(AnyKeyPath, (([_KeyPathComponent]) -> Bool))] = [
            (\_LayoutProbe.plain, { $0.count == 1 }),
            (\_LayoutProbe.observed, { $0.count == 1 }),
            (\_LayoutProbe.next?.observed, {
                $0.count == 4 && $0[1] == .optionalChain && $0[3] == .optionalWrap
            }),
            (\_LayoutProbe.next?.next, { $0.count == 3 && $0[1] == .optionalChain }),
            (\_LayoutProbe.child.plain, { !$0.isEmpty }),
        ]
        for (keyPath, expected) in shapes {
            guard let components = _read(keyPath), expected(components) else { return false }
        }
        // Two literals of one property read the same; two properties read differently.
        return _read(_LayoutProbe.observedPath()) == _read(\_LayoutProbe.observed)
            && _read(\_LayoutProbe.plain) != _read(\_LayoutProbe.observedTwin)
            && _read(\_LayoutProbe.observed) != _read(\_LayoutProbe.observedTwin)
    }()
}

/// Key paths of known shapes for `_layoutIsReadable`.
private final class _LayoutProbe {
    var plain = 0
    var observed = 0 { didSet {} }
    var observedTwin = 0 { didSet {} }
    var next: _LayoutProbe?
    var child = _LayoutChild()

    @inline(never)
    static func observedPath() -> AnyKeyPath { \_LayoutProbe.observed }
}

private struct _LayoutChild {
    var plain = 0
}

// MARK: - Calling a computed component's accessors

/// The getter and setter of a key path that is one settable computed component without
/// arguments on a class (`\Target.title` where `title` has `didSet`, or is computed with a
/// setter): what a binding's writer calls instead of applying the key path.
///
/// Why. Applying such a key path (`target[keyPath: keyPath] = value`) allocates a writeback buffer,
/// looks up its generic metadata and retains and releases the target seven times; reading it
/// for the equal-value check costs a key path walk too (callgrind, read-compare-write of an `Int`
/// with `didSet`: 2,827 instructions, one allocation; through these accessors: 295, none).
///
/// How. The instantiated key path object holds, for a computed component, the addresses of its
/// getter and setter thunks (swift/docs/ABI/KeyPaths.md; `ComputedAccessorsPtr` in the standard
/// library). They are `@convention(thin)` functions taking the root and the value indirectly, the
/// component's arguments and their size: `(Value, Root, UnsafeRawPointer, Int) -> ()` for a
/// nonmutating setter, `(Root, UnsafeRawPointer, Int) -> Value` for the getter, the property's
/// type at its most general abstraction (passed indirectly). They are called here as the standard
/// library calls them: through function types written with the generic parameters `Root` and
/// `Value`, which are lowered at that abstraction whatever the optimiser later specialises (a type
/// written with concrete types would not be), with the getter word's address and size 0 as the
/// arguments of a component that has none.
///
/// Safety. Only that one shape is accepted (size, kind and flags checked before anything else is
/// read), and `_accessorsWork` checks once, before any call: that the layout reader above reads
/// the probe's key paths as one computed component each, then, on a private class, that a value
/// written through the setter is what the property then holds, that its `didSet` ran, and that
/// the getter reads it back — for a trivial and a reference-counted value. Anything else answers
/// nil, and the caller applies the key path. Not used where function pointers are signed
/// (arm64e), where a raw pointer could not be called.
///
/// One difference from applying the key path: the getter is not called before a write (applying
/// it filled a writeback buffer with the current value first), so a target whose value is not
/// `Equatable` is written without being read.
@usableFromInline
internal struct _ComputedAccessors: @unchecked Sendable {
    @usableFromInline let _getter: UnsafeRawPointer
    @usableFromInline let _setter: UnsafeRawPointer
    /// The address the standard library passes as the arguments of a component without any.
    @usableFromInline let _arguments: UnsafeRawPointer
    /// Keeps the key path object, which holds the accessor addresses and `_arguments`, alive.
    @usableFromInline let _keyPath: AnyKeyPath

    /// The accessors of `keyPath` when it has the one shape handled (see above), else nil.
    @usableFromInline
    static func of(_ keyPath: AnyKeyPath) -> _ComputedAccessors? {
        guard _accessorsWork else { return nil }
        return _read(keyPath)
    }

    private static func _read(_ keyPath: AnyKeyPath) -> _ComputedAccessors? {
        #if _ptrauth(_arm64e)
        return nil
        #else
        typealias Layout = _KeyPathComponent
        guard type(of: keyPath).rootType is AnyObject.Type else { return nil }
        return withExtendedLifetime(keyPath) {
            let word = Layout._word
            let object = UnsafeRawPointer(Unmanaged.passUnretained(keyPath).toOpaque())
            let size = Int(object.load(fromByteOffset: 3 * word, as: UInt32.self) & Layout._bufferSizeMask)
            let start = 4 * word                                   // the buffer header, padded to a word
            // Exactly one component: a header padded to a word, then identifier, getter, setter.
            guard size == Layout._align(4) + 3 * word else { return nil }
            let header = object.load(fromByteOffset: start, as: UInt32.self)
            guard (header & Layout._kindMask) >> Layout._kindShift == Layout._computedKind else { return nil }
            let flags = header & Layout._payloadMask
            guard flags & Layout._computedSettable != 0, flags & Layout._computedMutating == 0,
                  flags & Layout._computedHasArguments == 0 else { return nil }
            var position = Layout._align(start + 4)
            position += word                                       // the identifier
            let getter = object.load(fromByteOffset: position, as: UnsafeRawPointer?.self)
            let arguments = object.advanced(by: position)
            position += word
            let setter = object.load(fromByteOffset: position, as: UnsafeRawPointer?.self)
            position += word
            guard position == start + size, let getter, let setter else { return nil }   // one component
            return _ComputedAccessors(_getter: getter, _setter: setter, _arguments: arguments, _keyPath: keyPath)
        }
        #endif
    }

    /// Whether calling accessors read this way does what applying the key path does: checked once,
    /// on a private class, before any binding relies on it.
    private static let _accessorsWork: Bool = {
        let probe = _AccessorProbe()
        // The layout reader must agree that these are one computed component each (it checks
        // itself against known shapes), before any address read here is called.
        for keyPath in [\_AccessorProbe.count, \_AccessorProbe.name] as [AnyKeyPath] {
            guard let components = _KeyPathComponent.components(of: keyPath), components.count == 1,
                  case .computed = components[0] else { return false }
        }
        guard let count = _read(\_AccessorProbe.count), let name = _read(\_AccessorProbe.name),
              _read(\_AccessorProbe.plain) == nil, _read(\_AccessorProbe.child?.count) == nil
        else { return false }
        _callKeyPathSetter(count, probe, 41)
        _callKeyPathSetter(name, probe, String(repeating: "n", count: 40))   // a heap string
        return probe.count == 41 && probe.name == String(repeating: "n", count: 40) && probe.didSets == 2
            && _callKeyPathGetter(count, probe, as: Int.self) == 41
            && _callKeyPathGetter(name, probe, as: String.self) == probe.name
    }()
}

/// Calls the setter of `accessors` (see `_ComputedAccessors`) on `root`. The function type is
/// written with the generic parameters, so `Value` and `Root` pass indirectly, as the thunk takes
/// them, however this is specialised; it is kept unspecialised and out of line all the same.
@usableFromInline @inline(never) @_semantics("optimize.sil.specialize.generic.never")
internal func _callKeyPathSetter<Root, Value>(_ accessors: _ComputedAccessors, _ root: Root, _ value: Value) {
    typealias Setter = @convention(thin) (Value, Root, UnsafeRawPointer, Int) -> Void
    unsafeBitCast(accessors._setter, to: Setter.self)(value, root, accessors._arguments, 0)
}

/// Calls the getter of `accessors` on `root`; see `_callKeyPathSetter`.
@usableFromInline @inline(never) @_semantics("optimize.sil.specialize.generic.never")
internal func _callKeyPathGetter<Root, Value>(_ accessors: _ComputedAccessors, _ root: Root, as _: Value.Type) -> Value {
    typealias Getter = @convention(thin) (Root, UnsafeRawPointer, Int) -> Value
    return unsafeBitCast(accessors._getter, to: Getter.self)(root, accessors._arguments, 0)
}

/// Properties of known shapes for `_ComputedAccessors._accessorsWork`.
private final class _AccessorProbe {
    var didSets = 0
    var count = 0 { didSet { didSets += 1 } }
    var name = "" { didSet { didSets += 1 } }
    var plain = 0
    var child: _AccessorProbe?
}
