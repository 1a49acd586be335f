import Synchronization

/// Interns key paths into small integer ids, shared by every registry.
///
/// Ids start at 1 and are never reused or freed: a program declares a bounded number of
/// observable key paths. Two equal key paths (`==`) get the same id, whichever instance.
///
/// Registration resolves a key path on every call, and `KeyPath.hashValue` alone costs ~26 ns,
/// so two caches keyed by the key path object's identity answer the common case (the same
/// literal at the same call site yields the same instance):
/// - a lock-free direct-mapped cache of 1024 words, each `address << 16 | id`, read with one
///   acquire load (ids above 0xFFFF or addresses above 48 bits simply are not cached there);
/// - behind the lock, a dictionary by identity, then the dictionary by key path equality.
/// Both identity caches refer only to key paths this table retains forever, so an address in
/// them can never belong to a newer object.
@usableFromInline
internal final class _KeyTable: @unchecked Sendable {
    @usableFromInline static let shared = _KeyTable()

    private static let _cacheBits = 10
    private let _cache: UnsafeMutablePointer<Atomic<UInt64>>
    private let _lock = _Lock()
    @exclusivity(unchecked) private var _ids: [AnyKeyPath: UInt32] = [:]
    @exclusivity(unchecked) private var _keyPaths: [AnyKeyPath] = []              // index = id - 1
    @exclusivity(unchecked) private var _byIdentity: [ObjectIdentifier: UInt32] = [:]
    @exclusivity(unchecked) private var _retained: [AnyKeyPath] = []               // keeps identities valid
    private static let _identityLimit = 4096
    /// Ids of key paths that a type alone determines (`id(forKeyOf:_:)`), by the type's
    /// identity: types live for the whole process, so an identity here never changes meaning.
    @exclusivity(unchecked) private var _byType: [ObjectIdentifier: UInt32] = [:]

    private init() {
        let count = 1 << Self._cacheBits
        _cache = .allocate(capacity: count)
        for i in 0..<count { (_cache + i).initialize(to: Atomic<UInt64>(0)) }
    }

    /// The bit of key `id` in a registrar's observed masks (low half of the word).
    @inline(__always)
    static func bit(for id: UInt32) -> UInt64 { 1 &<< UInt64(id & 31) }

    /// The bit of key `id` in a registrar's membership word (high half; see `_membership`).
    @inline(__always)
    static func memberBit(for id: UInt32) -> UInt64 { 1 &<< UInt64(32 + (id & 31)) }

    @inline(__always)
    private static func _cacheIndex(_ address: UInt) -> Int {
        Int(truncatingIfNeeded: (UInt64(address) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - _cacheBits))
    }

    @inline(__always)
    private func _cached(_ keyPath: AnyKeyPath) -> UInt32? {
        let address = UInt(bitPattern: ObjectIdentifier(keyPath))
        let word = _cache[Self._cacheIndex(address)].load(ordering: .acquiring)
        if word != 0 && UInt(truncatingIfNeeded: word >> 16) == address { return UInt32(truncatingIfNeeded: word & 0xFFFF) }
        return nil
    }

    /// Under the lock: remembers `keyPath`'s identity for `id` (retaining it) if there is room.
    private func _rememberIdentity(_ keyPath: AnyKeyPath, _ id: UInt32) {
        guard _byIdentity.count < Self._identityLimit else { return }
        let identity = ObjectIdentifier(keyPath)
        if _byIdentity.updateValue(id, forKey: identity) == nil { _retained.append(keyPath) }
        let address = UInt(bitPattern: identity)
        if UInt64(address) >> 48 == 0 && id <= 0xFFFF {
            _cache[Self._cacheIndex(address)].store(UInt64(address) << 16 | UInt64(id), ordering: .releasing)
        }
    }

    /// The id of `keyPath`, assigning the next one on first sight.
    func id(for keyPath: AnyKeyPath) -> UInt32 {
        if let id = _cached(keyPath) { return id }
        _lock.lock()
        defer { _lock.unlock() }
        if let id = _byIdentity[ObjectIdentifier(keyPath)] {
            _rememberIdentity(keyPath, id)   // refresh the direct-mapped slot
            return id
        }
        let id: UInt32
        if let existing = _ids[keyPath] {
            id = existing
        } else {
            _require(_keyPaths.count < Int(UInt32.max - 1), "ObserveCore: too many distinct key paths")
            _keyPaths.append(keyPath)
            id = UInt32(_keyPaths.count)
            _ids[keyPath] = id
        }
        _rememberIdentity(keyPath, id)
        return id
    }

    /// The id of the key path `makeKeyPath` builds, which `type` alone determines (an
    /// `ObservableArray<Element>`'s contents key, `\ObservableArray<Element>.self`), remembered by
    /// the type: a generic key path literal is instantiated from mangled names every time it is
    /// evaluated, ~15,000 instructions (callgrind: most of creating an `ObservableArray`, and of
    /// each observation of one). Built and interned once per type.
    func id(forKeyOf type: Any.Type, _ makeKeyPath: () -> AnyKeyPath) -> UInt32 {
        let identity = ObjectIdentifier(type)
        if let id = _lock.withLock({ _byType[identity] }) { return id }
        let id = self.id(for: makeKeyPath())
        _lock.withLock { _byType[identity] = id }
        return id
    }

    /// The id of `keyPath` if it was ever interned (used by removal and introspection, which
    /// must not grow the table for key paths nobody observes).
    func existingID(for keyPath: AnyKeyPath) -> UInt32? {
        if let id = _cached(keyPath) { return id }
        _lock.lock()
        defer { _lock.unlock() }
        if let id = _byIdentity[ObjectIdentifier(keyPath)] { return id }
        return _ids[keyPath]
    }

    /// The key path interned as `id`.
    func keyPath(for id: UInt32) -> AnyKeyPath? {
        _lock.lock()
        defer { _lock.unlock() }
        let index = Int(id) - 1
        return _keyPaths.indices.contains(index) ? _keyPaths[index] : nil
    }

    /// Printable names of keys declared with one (`ObservableKey(_:name:)`), by id.
    @exclusivity(unchecked) private var _names: [UInt32: String] = [:]

    /// Names key `id` after its declaration (`\Person.age`); for ``ObservableKey/init(_:name:)``.
    @usableFromInline
    static func _setName(_ name: String, of root: Any.Type, for id: UInt32) {
        shared.setName("\\\(root).\(name)", for: id)
    }

    /// Records how key `id` prints: `\Root.property`.
    func setName(_ name: String, for id: UInt32) {
        _lock.withLock { _names[id] = name }
    }

    /// How key `id` prints in messages and listings: its declared name (`\Person.age`), else the
    /// key path as Swift prints it (on Linux a stored property with observers prints as
    /// `\Person.<computed 0x…>`), else its number.
    func displayName(for id: UInt32) -> String {
        if let name = _lock.withLock({ _names[id] }) { return name }
        return keyPath(for: id).map { "\($0)" } ?? "key #\(id)"
    }

    /// ``displayName(for:)`` of a key path's key, or the key path as Swift prints it.
    func displayName(for keyPath: AnyKeyPath) -> String {
        existingID(for: keyPath).map(displayName(for:)) ?? "\(keyPath)"
    }
}
