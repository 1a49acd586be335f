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

    private static let _kindShift: UInt32 = 24
    private static let _kindMask: UInt32 = 0x7F00_0000
    private static let _payloadMask: UInt32 = 0x00FF_FFFF
    private static let _storedOffsetMask: UInt32 = 0x007F_FFFF
    private static let _maximumInlineOffset: UInt32 = 0x007F_FFFC
    private static let _outOfLineOffset: UInt32 = 0x007F_FFFF
    private static let _computedSettable: UInt32 = 0x0040_0000
    private static let _computedHasArguments: UInt32 = 0x0008_0000
    private static let _bufferSizeMask: UInt32 = 0x00FF_FFFF
    private static let _word = MemoryLayout<Int>.size

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
                case 2:                                             // computed
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
    private static func _align(_ position: Int) -> Int {
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
