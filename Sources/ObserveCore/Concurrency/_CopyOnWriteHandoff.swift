internal import CObserveCore

/// What ThreadSanitizer needs to be told about copy-on-write storage handed between threads.
///
/// An ``ObservableArray`` shares its storage (`_RingBuffer`) as a snapshot: inside every
/// ``ArrayChange``, with iterators, with `==`, `hash` and `encode`. A reader on another thread
/// reads the snapshot and drops its reference; the array, finding the storage uniquely referenced
/// again, mutates it in place (or frees it). That is ordered — the reader's release is a
/// release-ordered decrement, the writer's uniqueness check an acquiring load, as for the standard
/// library's `Array` — but both happen inside the Swift runtime, which ThreadSanitizer does not
/// instrument: it would see the read and the later write with nothing between them and report a
/// race that cannot happen, in our tests and in any sanitized program that uses the library.
///
/// So, in a thread-sanitized build only, each side states its half of the ordering:
/// - a reader calls `readerDone` on the storage once it has read it (`_RingBuffer.readerDone()`:
///   the change accessors, the iterator at its end, the conformances);
/// - the writer calls `writerFoundUnique` once `isKnownUniquelyReferenced` said yes, before it
///   writes (`_RingBuffer.writerFoundUnique()`: `ObservableArray._makeUnique`, the unobserved fast
///   paths, the buffer's `deinit`).
/// A reader that reads, stops without calling `readerDone` (an iteration left with `break`) and
/// drops the snapshot can still draw a report; every path inside the library calls it.
///
/// In ordinary builds `isActive` is false and each call site costs one load of a flag stored in
/// the buffer and a branch never taken.
@usableFromInline
internal enum _CopyOnWriteHandoff {
    /// Whether the C core was compiled with ThreadSanitizer (`swift build --sanitize=thread`).
    static var isActive: Bool { cobs_tsan_enabled }

    /// Everything this thread did to `storage` so far happens before a later `writerFoundUnique`.
    @usableFromInline
    static func readerDone(_ storage: AnyObject) {
        cobs_tsan_release(UnsafeRawPointer(Unmanaged.passUnretained(storage).toOpaque()))
    }

    /// What every reader did before its `readerDone` happens before what this thread does next.
    @usableFromInline
    static func writerFoundUnique(_ storage: AnyObject) {
        cobs_tsan_acquire(UnsafeRawPointer(Unmanaged.passUnretained(storage).toOpaque()))
    }
}
