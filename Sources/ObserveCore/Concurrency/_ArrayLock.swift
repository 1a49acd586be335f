// `public`: the lock's inline paths, inlined into callers of `ObservableArray`'s inlinable
// mutators, call two static inline C functions (the thread tag, a compiler fence).
public import CObserveCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock of an ``ObservableArray``: `_Lock`'s protocol (a compare-and-swap to take it, a
/// release store to drop it), biased towards a thread that uses the array alone.
///
/// Why. A compare-and-swap costs about 4.7 ns on this project's machines: most of an unobserved
/// append (6 ns, against 0.5 for `Array`) and of a subscript set. Most arrays are used by one
/// thread at a time for long stretches, so after a long enough stretch the lock lets that thread
/// in with plain loads and stores, and makes any other thread pay, once, to take that right back.
///
/// The protocol (the words below; the streak's fields are read and written only under `_word`):
/// - **Unbiased** (the start). Every section takes `_word`. Under it the lock counts the
///   consecutive sections taken by one thread; at `_biasThreshold` (16,384 unless
///   `OBSERVECORE_ARRAY_BIAS_AFTER` says otherwise) it stores that thread's tag in `_owner`.
/// - **Biased.** The owner enters by storing its tag in `_inside`, then loading `_owner` again:
///   still its own, it is in (no read-modify-write, no processor fence; `cobs_compiler_fence` keeps the
///   compiler from swapping the two). It leaves by storing 0 in `_inside` (release).
/// - **Revoked.** Any other thread takes `_word`, finds the bias and revokes it: it stores 0 in
///   `_owner`, runs the asymmetric barrier (`cobs_asymmetric_barrier`: membarrier), then waits
///   until `_inside` is 0. From then on every thread, the former owner too, takes `_word`, and
///   the array never biases again.
///
/// Why two threads are never inside at once. The owner stores `_inside`, then loads `_owner`;
/// the revoker stores `_owner`, then (after the barrier) loads `_inside`. The barrier makes the
/// owner's processor execute a full fence, so either the owner's store is visible to the
/// revoker's load (it waits for the owner to leave), or the owner's load comes after the fence
/// and sees 0 (it backs off, clears `_inside` and queues on `_word`, which the revoker holds).
/// Happens-before, as ThreadSanitizer checks it: the owner's leaving store releases, the
/// revoker's load of `_inside` acquires; after that, `_word` orders everything.
///
/// In-place sections (`lockRecordingHolder`, the subscript's `_modify`) always take `_word`: the
/// caller's code may suspend in them and resume on another thread, and only the owner can leave
/// a biased section. The owner gives its bias up there; another thread revokes it there, as in
/// any section. They are not counted in streaks.
///
/// What it costs. An unbiased section pays a compare and a decrement beside the compare-and-swap
/// (an unobserved append 6.45 ns instead of 5.98, a subscript set 6.23 instead of 6.03). A biased
/// one pays no atomic read-modify-write (append 1.94 ns, subscript set 2.47; release and acquire
/// are plain moves on x86, one-way barriers on ARM). A revocation is a system call that
/// interrupts every processor running a thread of the process: 7 µs measured here with another
/// thread running, 27 µs with three threads on two cores. It happens once per array, and only
/// after 16,384 sections of one thread (~100 µs of work at least), so it adds at most about 7%
/// (27%) to what the array cost its first owner. An array released on another thread than its owner's
/// pays nothing (`lockForDeinit`). Where the barrier does not exist (other systems, old
/// kernels) the lock never biases.
///
/// Thread tags. A tag is an address in the thread's static TLS block, which a thread created
/// after another exited may get again: it then inherits a bias the exited thread held. That is
/// sound (an exited thread is inside no section), but ThreadSanitizer sees no ordering from the
/// exited thread to the new one and may report a race there.
///
/// Re-entry. A thread taking the lock it holds traps: the in-place subscript records its thread,
/// so that the message names what the caller did, and a biased owner is recognised from
/// `_inside`. (A nested `lock()` inside the section that granted the bias, which still holds
/// `_word`, would not be recognised; the library never nests sections.)
///
/// Stored inline in its array (a noncopyable struct of atomic words: no allocation of its own,
/// and no pointer to follow on every section). The streak's fields are atomics only so that
/// they can change through a borrowed lock; they are read and written with relaxed loads and
/// stores (plain moves), under `_word` (which ThreadSanitizer therefore cannot check for them).
@usableFromInline
internal struct _ArrayLock: ~Copyable, @unchecked Sendable {
    @usableFromInline internal let _word = _LockWord()
    /// The tag of the thread the lock is biased to, or 0. Set and cleared under `_word`.
    @usableFromInline internal let _owner = Atomic<UInt>(0)
    /// The owner's tag while it is inside a biased section, else 0. Written only by the owner.
    @usableFromInline internal let _inside = Atomic<UInt>(0)
    /// The thread in a `lockRecordingHolder()` section, or 0 (for the re-entry message).
    @usableFromInline internal let _holder = Atomic<UInt>(0)

    /// The thread that took the last unbiased section, and how many more sections in a row it
    /// must take for the lock to bias to it (`Int.max` once the lock must never bias).
    @usableFromInline internal let _streakThreadWord = Atomic<UInt>(0)
    @usableFromInline internal let _streakLeftWord = Atomic<Int>(.max)
    /// Sections of one thread in a row after which the lock biases to it.
    internal let _biasThresholdWord = Atomic<Int>(_ArrayLock._defaultBiasThreshold)
    /// Set when a bias was revoked, or when it cannot exist (no asymmetric barrier).
    internal let _neverBiasWord = Atomic<Bool>(false)

    @inlinable internal var _streakThread: UInt {
        get { _streakThreadWord.load(ordering: .relaxed) }
        nonmutating set { _streakThreadWord.store(newValue, ordering: .relaxed) }
    }
    @inlinable internal var _streakLeft: Int {
        get { _streakLeftWord.load(ordering: .relaxed) }
        nonmutating set { _streakLeftWord.store(newValue, ordering: .relaxed) }
    }
    internal var _biasThreshold: Int {
        get { _biasThresholdWord.load(ordering: .relaxed) }
        nonmutating set { _biasThresholdWord.store(newValue, ordering: .relaxed) }
    }
    internal var _neverBias: Bool {
        get { _neverBiasWord.load(ordering: .relaxed) }
        nonmutating set { _neverBiasWord.store(newValue, ordering: .relaxed) }
    }

    /// 16,384, or `OBSERVECORE_ARRAY_BIAS_AFTER` (a positive count; CI runs the sanitizer and
    /// random suites with 1, so that every array biases at once and every cross-thread test
    /// revokes).
    internal static let _defaultBiasThreshold: Int = {
        if let text = getenv("OBSERVECORE_ARRAY_BIAS_AFTER"), let value = Int(String(cString: text)), value > 0 {
            return value
        }
        return 16_384
    }()

    @usableFromInline
    internal init() {}

    /// Takes the lock. Inlined: the owner's loads and stores, or the compare-and-swap and the
    /// streak's compare and decrement; everything rarer is one call (`_lockSlow`), so that the
    /// array's inlinable accessors stay small enough to be inlined.
    @inlinable @inline(__always)
    internal func lock() {
        let me = cobs_thread_tag()
        var holdingWord = false
        if _owner.load(ordering: .relaxed) == me {
            if _fastPath(_inside.load(ordering: .relaxed) != me) {   // (equal: a re-entry, which traps)
                _inside.store(me, ordering: .relaxed)
                cobs_compiler_fence()
                if _fastPath(_owner.load(ordering: .acquiring) == me) { return }
                _inside.store(0, ordering: .releasing)   // revoked meanwhile: queue on `_word`
            }
        } else if _fastPath(_word.tryLock()) {
            holdingWord = true
            // Under `_word`: the streak's compare and decrement.
            if _fastPath(_streakThread == me) {
                _streakLeft &-= 1
                if _fastPath(_streakLeft != 0) { return }
            }
        }
        _lockSlow(me, holdingWord: holdingWord)
    }

    @inlinable @inline(__always)
    internal func unlock() {
        _opaqueBarrier()   // see `_LockWord.unlock()`
        _release()
    }

    /// `unlock()` without the barrier when `T` holds no references (see `_Lock.unlock(movingOnly:)`).
    @inlinable @inline(__always)
    internal func unlock<T>(movingOnly _: T.Type) {
        if !_isPOD(T.self) { _opaqueBarrier() }
        _release()
    }

    @inlinable @inline(__always)
    internal func _release() {
        if _inside.load(ordering: .relaxed) == cobs_thread_tag() {
            _inside.store(0, ordering: .releasing)
        } else {
            _word._state.store(0, ordering: .releasing)
        }
    }

    @inline(__always)
    internal func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Takes the lock for a section that runs user code, recording the calling thread. Pair with
    /// `unlockRecordedHolder()`. Always through `_word`, never biased: user code may suspend in
    /// it (`await f(&array[i])`) and resume on another thread, which then unlocks, and a biased
    /// section can only be left by its owner. The owner gives its bias up here (no barrier:
    /// it is the one thread that could be inside); another thread revokes it, as any section of
    /// another thread does. Either way the section is not counted in a streak.
    @inlinable @inline(__always)
    internal func lockRecordingHolder() {
        let me = cobs_thread_tag()
        if _slowPath(_owner.load(ordering: .relaxed) == me) {
            _dropOwnBias(me)
        } else {
            if _slowPath(!_word.tryLock()) { _takeWord(me) }
            // Under `_word`: another thread's bias or streak is this section's to end.
            if _slowPath(_owner.load(ordering: .relaxed) != 0 || _streakThread != me) { _claimStreak(me) }
        }
        _holder.store(me, ordering: .relaxed)
    }

    @inlinable @inline(__always)
    internal func unlockRecordedHolder() {
        _holder.store(0, ordering: .relaxed)
        unlock()
    }

    /// Whether some thread holds the lock (for tests that check what runs under it).
    internal var isHeld: Bool {
        _word._state.load(ordering: .relaxed) != 0 || _inside.load(ordering: .relaxed) != 0
    }

    /// Whether locks can bias in this process (the asymmetric barrier exists).
    internal static var canBias: Bool { cobs_asymmetric_barrier_available() }

    /// Whether the lock is biased to the calling thread (for tests).
    internal var isBiasedToCurrentThread: Bool { _owner.load(ordering: .relaxed) == cobs_thread_tag() }

    /// Sets the bias threshold of this lock and restarts its streak with the calling thread,
    /// unbiased (tests). Through `_word`, like an in-place section, which gives this thread's
    /// bias up or revokes another's and leaves the streak this thread's.
    internal func _setBiasThreshold(_ sections: Int) {
        precondition(sections > 0, "a bias threshold counts sections: at least 1")
        lockRecordingHolder()
        _biasThreshold = sections
        if !_neverBias { _streakLeft = sections }
        unlockRecordedHolder()
    }

    // MARK: Slow paths (out of line)

    /// Everything `lock()` does not inline. Not holding `_word`: a re-entry (trap), a bias revoked
    /// between the owner's two loads, or `_word` taken by another thread; then takes `_word`.
    /// Holding it: the streak ran out (bias) or changed threads (revoke a bias, start a streak).
    @usableFromInline @inline(never)
    internal func _lockSlow(_ me: UInt, holdingWord: Bool) {
        if !holdingWord {
            if _inside.load(ordering: .relaxed) == me { _reentered(me) }
            _takeWord(me)
            if _streakThread == me {
                _streakLeft &-= 1
                if _streakLeft != 0 { return }
            }
        }
        if _streakThread == me { _bias(me) } else { _switchStreak(me) }
    }

    /// Takes `_word`, waiting if need be. Before waiting, reports a re-entry: from an in-place
    /// element mutation, or from a biased section whose bias a revoker (holding `_word`, waiting
    /// for this thread to leave) took meanwhile, which would otherwise wait forever.
    @usableFromInline @inline(never)
    internal func _takeWord(_ me: UInt) {
        if _word.tryLock() { return }
        if _holder.load(ordering: .relaxed) == me { _reenteredDuringInPlaceAccess() }
        if _inside.load(ordering: .relaxed) == me { _reentered(me) }
        _word.waitAndLock()
    }

    /// Under `_word`: a section by another thread than the last. Claims the streak (revoking a
    /// bias: only the last thread can hold one), then counts this section as its first.
    private func _switchStreak(_ me: UInt) {
        _claimStreak(me)
        if _neverBias { return }
        _streakLeft &-= 1
        if _streakLeft == 0 { _bias(me) }
    }

    /// Under `_word`: biases the lock to `me`, if the asymmetric barrier exists to revoke it.
    private func _bias(_ me: UInt) {
        guard cobs_asymmetric_barrier_available() else {
            _neverBias = true
            _streakLeft = .max
            return
        }
        _owner.store(me, ordering: .relaxed)
    }

    /// Under `_word`: revokes another thread's bias and restarts the streak with `me`, no section
    /// counted yet (an in-place section, which does not count, stops there).
    @usableFromInline @inline(never)
    internal func _claimStreak(_ me: UInt) {
        if _owner.load(ordering: .relaxed) != 0 { _revokeBias() }
        _streakThread = me
        if !_neverBias { _streakLeft = _biasThreshold }
    }

    /// The owner, outside any section, takes `_word` and gives up its bias; its streak restarts
    /// (this in-place section is not counted). If another thread revoked the bias meanwhile
    /// (between the owner's load of `_owner` and its taking `_word`), that revocation stands.
    @usableFromInline @inline(never)
    internal func _dropOwnBias(_ me: UInt) {
        if _slowPath(_inside.load(ordering: .relaxed) == me) { _reentered(me) }
        _takeWord(me)
        if _owner.load(ordering: .relaxed) == me { _owner.store(0, ordering: .relaxed) }
        _claimStreak(me)
    }

    /// For the array's deinit: takes `_word` and clears a bias without the barrier. Nobody can be
    /// inside a section of a dying array (every section runs on a thread holding a reference to
    /// it), so the system call a revocation costs would buy nothing. Pair with `unlock()`.
    internal func lockForDeinit() {
        let me = cobs_thread_tag()
        // Released from inside its own biased section (no library path does that): the deinit
        // would enter beside the section. Trap, as the lock's re-entry always did.
        if _inside.load(ordering: .relaxed) != 0 { _reentered(me) }
        _takeWord(me)
        _owner.store(0, ordering: .relaxed)
        _neverBias = true
    }

    /// Under `_word`: takes the bias back from its owner (see the type's comment) for good.
    private func _revokeBias() {
        _owner.store(0, ordering: .relaxed)
        let barrierRan = cobs_asymmetric_barrier()
        precondition(barrierRan, "ObserveCore: an array lock was biased without the asymmetric barrier")
        var spins = 0, waited = false
        while _inside.load(ordering: .acquiring) != 0 {
            waited = true
            _backOff(&spins)
        }
        _neverBias = true
        _streakLeft = .max
        _ArrayLock.revocations.add(1, ordering: .relaxed)
        if waited { _ArrayLock.revocationsThatWaited.add(1, ordering: .relaxed) }
    }

    /// Revocations in this process, and those that found the owner inside and waited (tests).
    internal static let revocations = Atomic<Int>(0)
    internal static let revocationsThatWaited = Atomic<Int>(0)

    /// The biased owner asked for the lock it holds.
    @usableFromInline @inline(never)
    internal func _reentered(_ me: UInt) -> Never {
        if _holder.load(ordering: .relaxed) == me { _reenteredDuringInPlaceAccess() }
        fatalError("ObserveCore: a thread took an ObservableArray's lock while holding it (a bug in ObserveCore; "
                   + "please report it with the stack trace)")
    }
}

/// The one user of `lockRecordingHolder()` is an ``ObservableArray`` element mutated in place
/// through its subscript, so the message speaks of that.
@usableFromInline @inline(never)
internal func _reenteredDuringInPlaceAccess() -> Never {
    fatalError("ObservableArray: the array was used while one of its elements was being mutated in place "
               + "through its subscript (for example `array[i].mutate { array.count }`, or "
               + "`swap(&array[i], &array[j])`: use `swapAt`). Nobody observes the array, so the element is "
               + "mutated where it is stored, with the array locked; read what the mutation needs before it, "
               + "or copy the element out, change it and assign it back.")
}
