/// Interns key paths into small integer ids, shared by every registry.
///
/// Ids start at 1 and are never reused or freed: a program declares a bounded number of
/// observable key paths. Two equal key paths (`==`) get the same id, whichever instance.
///
/// Registration resolves a key path on every call, and `KeyPath.hashValue` alone costs ~26 ns,
/// so a first-level cache keyed by the key path object's identity answers the common case (the
/// same literal at the same call site yields the same instance). The cache holds its key paths
/// strongly, so an identity in it can never be a reused address.
@usableFromInline
internal final class _KeyTable: @unchecked Sendable {
    @usableFromInline static let shared = _KeyTable()

    private let _lock = _Lock()
    private var _ids: [AnyKeyPath: UInt32] = [:]
    private var _keyPaths: [AnyKeyPath] = []              // index = id - 1
    private var _byIdentity: [ObjectIdentifier: (AnyKeyPath, UInt32)] = [:]
    private static let _identityCacheLimit = 4096

    @inline(__always)
    static func bit(for id: UInt32) -> UInt64 { 1 &<< UInt64(id & 63) }

    /// The id of `keyPath`, assigning the next one on first sight.
    func id(for keyPath: AnyKeyPath) -> UInt32 {
        _lock.lock()
        defer { _lock.unlock() }
        if let hit = _byIdentity[ObjectIdentifier(keyPath)] { return hit.1 }
        let id: UInt32
        if let existing = _ids[keyPath] {
            id = existing
        } else {
            precondition(_keyPaths.count < Int(UInt32.max - 1), "ObserveCore: too many distinct key paths")
            _keyPaths.append(keyPath)
            id = UInt32(_keyPaths.count)
            _ids[keyPath] = id
        }
        if _byIdentity.count < Self._identityCacheLimit {
            _byIdentity[ObjectIdentifier(keyPath)] = (keyPath, id)
        }
        return id
    }

    /// The id of `keyPath` if it was ever interned (used by removal and introspection, which
    /// must not grow the table for key paths nobody observes).
    func existingID(for keyPath: AnyKeyPath) -> UInt32? {
        _lock.lock()
        defer { _lock.unlock() }
        if let hit = _byIdentity[ObjectIdentifier(keyPath)] { return hit.1 }
        return _ids[keyPath]
    }

    /// The key path interned as `id`.
    func keyPath(for id: UInt32) -> AnyKeyPath? {
        _lock.lock()
        defer { _lock.unlock() }
        let index = Int(id) - 1
        return _keyPaths.indices.contains(index) ? _keyPaths[index] : nil
    }
}
