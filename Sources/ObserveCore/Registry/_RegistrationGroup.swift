/// Every live registration of one (object, key), all contexts together, in registration order.
///
/// Each operation costs O(1) expected in the number of registrations on the key, so that one
/// object with tens of thousands of observers (or contexts) on one property does not turn their
/// registration and removal quadratic:
/// - a member knows its position (`_AnyRegistration._groupIndex`); removing it leaves a hole
///   (`nil`), and the holes are squeezed out once they outnumber the live members (amortized
///   O(1), and the order stays registration order, which is delivery order);
/// - observer-tagged members are indexed by observer address and context (`_byObserver`), which
///   answers the duplicate check of `addObserver` and `removeObserver` without a scan, even for
///   one observer with thousands of contexts;
/// - `.prior` members are counted, so the object's prior mask needs no scan either.
///
/// Position 0 is stored inline (`_first`), later positions in `_rest`: a group of one member,
/// which is what most (object, key) pairs have, allocates nothing (an array was 48 bytes of
/// every such registration, `register.memory`).
///
/// Invariants (checked by `checkInvariants`; every access is under the owning shard's lock):
/// - positions are `0 ..< _positionCount`; position 0 is `_first`, position `i > 0` is
///   `_rest[i - 1]`, so `_rest.count == max(_positionCount - 1, 0)`, and `_first` is nil when
///   `_positionCount == 0`;
/// - `_liveCount` == the number of non-nil positions; each member `m` at position `i` has
///   `m._groupIndex == i`;
/// - `_byObserver[a]` maps each context `c` to the position of the live member with observer
///   address `a` (a != 0) and context `c`, and lists no other (one per (observer, context): the
///   shard refuses duplicates);
/// - `_priorCount` == the number of live members whose options contain `.prior`.
internal struct _RegistrationGroup {
    private var _first: _AnyRegistration?
    private var _rest: ContiguousArray<_AnyRegistration?> = []
    private var _positionCount: UInt32 = 0
    private var _liveCount: UInt32 = 0
    private var _priorCount: UInt32 = 0
    private var _byObserver: [UInt: _ObserverEntry] = [:]

    /// Number of live members.
    var liveCount: Int { Int(_liveCount) }
    /// Number of live members whose options contain `.prior`.
    var priorCount: Int { Int(_priorCount) }

    /// The member at `position` (nil: a hole left by a removal).
    @inline(__always)
    private func _member(at position: Int) -> _AnyRegistration? {
        position == 0 ? _first : _rest[position &- 1]
    }

    /// One observer's members by context: almost always one (no dictionary to allocate).
    private enum _ObserverEntry {
        case one(context: UInt, position: Int)
        case many([UInt: Int])

        var positions: [Int] {
            switch self {
            case .one(_, let position): return [position]
            case .many(let byContext): return Array(byContext.values)
            }
        }

        func position(context: UInt) -> Int? {
            switch self {
            case .one(let only, let position): return only == context ? position : nil
            case .many(let byContext): return byContext[context]
            }
        }
    }

    var isEmpty: Bool { _liveCount == 0 }

    /// The live members, in registration order.
    var live: ContiguousArray<_AnyRegistration> {
        var result = ContiguousArray<_AnyRegistration>()
        result.reserveCapacity(liveCount)
        forEachLive { result.append($0.takeUnretainedValue()) }
        return result
    }

    /// Calls `body` with each live member, in registration order, unretained: no allocation and
    /// no reference counting (the caller holds the shard's lock, so every member stays alive).
    func forEachLive(_ body: (Unmanaged<_AnyRegistration>) -> Void) {
        guard _positionCount > 0 else { return }
        if let first = _first { body(Unmanaged.passUnretained(first)) }
        _rest.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            // An `_AnyRegistration?` is one word: the reference, or 0 for nil. Read as bits so
            // that iterating retains nothing.
            let words = UnsafeRawPointer(base).assumingMemoryBound(to: UInt.self)
            for i in 0..<buffer.count where words[i] != 0 {
                body(Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: words[i]).unsafelyUnwrapped))
            }
        }
    }

    /// Appends `registration` to the group.
    mutating func append(_ registration: _AnyRegistration) {
        _require(_positionCount < UInt32.max, "ObserveCore: 2^32 registrations on one key of one object")
        let position = Int(_positionCount)
        registration._groupIndex = _positionCount
        if registration.hasObserver { _index(registration, at: position) }
        if registration.options.contains(.prior) { _priorCount += 1 }
        if position == 0 { _first = registration } else { _rest.append(registration) }
        _positionCount += 1
        _liveCount += 1
    }

    /// Removes a member (which must be in this group).
    mutating func remove(_ registration: _AnyRegistration) {
        let position = Int(registration._groupIndex)
        guard position < Int(_positionCount), _member(at: position) === registration else { _missingMember() }
        if position == 0 { _first = nil } else { _rest[position &- 1] = nil }
        _liveCount -= 1
        if registration.options.contains(.prior) { _priorCount -= 1 }
        if registration.hasObserver { _unindex(registration) }
        if _liveCount == 0 {
            // `_rest` keeps its storage for the next group to use this slot: churn allocates
            // nothing.
            _positionCount = 0
            _rest._removeAllKeepingCapacity()
            if !_byObserver.isEmpty { _byObserver.removeAll(keepingCapacity: true) }
        } else if Int(_positionCount - _liveCount) > max(16, liveCount) {
            _compact()
        }
    }

    /// The live members registered by the observer at `address` (every context).
    func members(observer address: UInt) -> [_AnyRegistration] {
        guard let entry = _byObserver[address] else { return [] }
        return entry.positions.map { _member(at: $0).unsafelyUnwrapped }
    }

    /// The live member registered by the observer at `address` with `context`, if any.
    func member(observer address: UInt, context: UInt) -> _AnyRegistration? {
        guard let position = _byObserver[address]?.position(context: context) else { return nil }
        return _member(at: position).unsafelyUnwrapped
    }

    /// Empties the group, returning its live members.
    mutating func removeAll() -> ContiguousArray<_AnyRegistration> {
        let removed = live
        _first = nil
        _rest._removeAllKeepingCapacity()
        if !_byObserver.isEmpty { _byObserver.removeAll(keepingCapacity: true) }
        _positionCount = 0
        _liveCount = 0
        _priorCount = 0
        return removed
    }

    private mutating func _index(_ member: _AnyRegistration, at position: Int) {
        let address = member.observerAddress, context = member.context
        switch _byObserver[address] {
        case nil:
            _byObserver[address] = .one(context: context, position: position)
        case .one(let first, let firstPosition):
            _byObserver[address] = .many([first: firstPosition, context: position])
        case .many(var byContext):
            _byObserver[address] = nil   // keeps `byContext` uniquely referenced while it grows
            byContext[context] = position
            _byObserver[address] = .many(byContext)
        }
    }

    private mutating func _unindex(_ member: _AnyRegistration) {
        let address = member.observerAddress
        switch _byObserver[address] {
        case .one: _byObserver[address] = nil
        case .many(var byContext):
            _byObserver[address] = nil
            byContext[member.context] = nil
            if byContext.count == 1, let (context, position) = byContext.first {
                _byObserver[address] = .one(context: context, position: position)
            } else {
                _byObserver[address] = .many(byContext)
            }
        case nil: _missingMember()
        }
    }

    /// Squeezes out the holes, renumbering members and the observer index (O(members)).
    private mutating func _compact() {
        let members = live
        _first = nil
        _rest.removeAll(keepingCapacity: true)
        _byObserver.removeAll(keepingCapacity: true)
        for (position, member) in members.enumerated() {
            member._groupIndex = UInt32(truncatingIfNeeded: position)
            if member.hasObserver { _index(member, at: position) }
            if position == 0 { _first = member } else { _rest.append(member) }
        }
        _positionCount = UInt32(truncatingIfNeeded: members.count)
    }

    @inline(never)
    private func _missingMember() -> Never {
        fatalError("ObserveCore internal error: a live registration is missing from its shard group")
    }

    /// Traps if an invariant above is broken.
    func checkInvariants(_ where: String) {
        _require(_rest.count == max(Int(_positionCount) - 1, 0) && (_positionCount > 0 || _first == nil),
                 "\(`where`): \(_positionCount) positions but \(_rest.count) beyond the first")
        var live = 0, prior = 0
        var expected: [UInt: [UInt: Int]] = [:]
        for position in 0..<Int(_positionCount) {
            guard let member = _member(at: position) else { continue }
            live += 1
            if member.options.contains(.prior) { prior += 1 }
            _require(Int(member._groupIndex) == position, "\(`where`): member at \(position) thinks it is at \(member._groupIndex)")
            if member.hasObserver {
                _require(expected[member.observerAddress, default: [:]].updateValue(position, forKey: member.context) == nil,
                         "\(`where`): two members for one (observer, context)")
            }
        }
        _require(live == liveCount, "\(`where`): \(live) live members, liveCount \(liveCount)")
        _require(prior == priorCount, "\(`where`): \(prior) .prior members, priorCount \(priorCount)")
        let indexed = _byObserver.mapValues { entry -> [UInt: Int] in
            switch entry {
            case .one(let context, let position): return [context: position]
            case .many(let byContext): return byContext
            }
        }
        _require(indexed == expected, "\(`where`): the observer index does not match the members")
    }
}
