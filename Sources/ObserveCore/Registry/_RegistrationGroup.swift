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
/// Invariants (checked by `checkInvariants`; every access is under the owning shard's lock):
/// - `liveCount` == the number of non-nil `members`; each member `m` at position `i` has
///   `m._groupIndex == i`;
/// - `_byObserver[a]` maps each context `c` to the position of the live member with observer
///   address `a` (a != 0) and context `c`, and lists no other (one per (observer, context): the
///   shard refuses duplicates);
/// - `priorCount` == the number of live members whose options contain `.prior`.
internal struct _RegistrationGroup {
    private(set) var members: ContiguousArray<_AnyRegistration?> = []
    private(set) var liveCount = 0
    private(set) var priorCount = 0
    private var _byObserver: [UInt: _ObserverEntry] = [:]

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

    var isEmpty: Bool { liveCount == 0 }

    /// The live members, in registration order.
    var live: ContiguousArray<_AnyRegistration> {
        var result = ContiguousArray<_AnyRegistration>()
        result.reserveCapacity(liveCount)
        for member in members { if let member { result.append(member) } }
        return result
    }

    /// Calls `body` with each live member, in registration order, unretained: no allocation and
    /// no reference counting (the caller holds the shard's lock, so every member stays alive).
    func forEachLive(_ body: (Unmanaged<_AnyRegistration>) -> Void) {
        members.withUnsafeBufferPointer { buffer in
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
        _require(members.count < Int(UInt32.max), "ObserveCore: 2^32 registrations on one key of one object")
        registration._groupIndex = UInt32(truncatingIfNeeded: members.count)
        if registration.hasObserver { _index(registration, at: members.count) }
        if registration.options.contains(.prior) { priorCount += 1 }
        members.append(registration)
        liveCount += 1
    }

    /// Removes a member (which must be in this group).
    mutating func remove(_ registration: _AnyRegistration) {
        let position = Int(registration._groupIndex)
        guard position < members.count, members[position] === registration else { _missingMember() }
        members[position] = nil
        liveCount -= 1
        if registration.options.contains(.prior) { priorCount -= 1 }
        if registration.hasObserver { _unindex(registration) }
        if liveCount == 0 {
            // The storage is kept for the next group to use this slot: churn allocates nothing.
            // One member (observe, then cancel) is the common case: `removeLast` is a few
            // instructions where `removeAll(keepingCapacity:)` runs the generic replaceSubrange
            // (180, callgrind).
            if members.count == 1 { members.removeLast() } else { members.removeAll(keepingCapacity: true) }
            if !_byObserver.isEmpty { _byObserver.removeAll(keepingCapacity: true) }
        } else if members.count - liveCount > max(16, liveCount) {
            _compact()
        }
    }

    /// The live members registered by the observer at `address` (every context).
    func members(observer address: UInt) -> [_AnyRegistration] {
        guard let entry = _byObserver[address] else { return [] }
        return entry.positions.map { members[$0].unsafelyUnwrapped }
    }

    /// The live member registered by the observer at `address` with `context`, if any.
    func member(observer address: UInt, context: UInt) -> _AnyRegistration? {
        guard let position = _byObserver[address]?.position(context: context) else { return nil }
        return members[position].unsafelyUnwrapped
    }

    /// Empties the group, returning its live members.
    mutating func removeAll() -> ContiguousArray<_AnyRegistration> {
        let removed = live
        members.removeAll(keepingCapacity: true)
        _byObserver.removeAll(keepingCapacity: true)
        liveCount = 0
        priorCount = 0
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
        var packed = ContiguousArray<_AnyRegistration?>()
        packed.reserveCapacity(liveCount)
        _byObserver.removeAll(keepingCapacity: true)
        for member in members {
            guard let member else { continue }
            member._groupIndex = UInt32(truncatingIfNeeded: packed.count)
            if member.hasObserver { _index(member, at: packed.count) }
            packed.append(member)
        }
        members = packed
    }

    @inline(never)
    private func _missingMember() -> Never {
        fatalError("ObserveCore internal error: a live registration is missing from its shard group")
    }

    /// Traps if an invariant above is broken.
    func checkInvariants(_ where: String) {
        var live = 0, prior = 0
        var expected: [UInt: [UInt: Int]] = [:]
        for (position, member) in members.enumerated() {
            guard let member else { continue }
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
