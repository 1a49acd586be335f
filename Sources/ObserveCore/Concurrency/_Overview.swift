// The concurrency core: every primitive the library synchronises with, and the one place that
// says who may read what without a lock, in which order locks are taken, and when memory is
// freed. (This file holds no code.)
//
// Primitives (this folder)
// - `_Lock` (`_Lock.swift`): a compare-and-swap spinlock that yields. Not `pthread_mutex_t`: an
//   uncontended pair cost ~106 instructions on the notification path, more than the lookup it
//   guarded (measurement in the file). Not `Synchronization.Mutex`: its futex wait lives in an
//   uninstrumented library, so ThreadSanitizer could not check the callers (`_ActorMailbox.swift`).
// - `_ArrayLock` (`_ArrayLock.swift`): an `ObservableArray`'s lock, stored inline in the array.
//   `_Lock`'s word, biased: after 16,384 sections in a row by one thread, that thread enters
//   with plain loads and stores; the first other thread revokes the bias for good with an
//   asymmetric barrier (membarrier, `include/cobs_barrier.h`); an array's deinit clears a bias
//   without it (nobody else can be inside). It records an in-place access's thread, to report a
//   re-entry instead of spinning.
// - Read sections (`_ReadSections.swift`, with the per-thread records in C:
//   `include/cobs_read_sections.h`): a registrar publishes its object's immutable
//   `_DispatchCache` in one atomic word; a setter marks its own thread's record, reads the cache
//   with no lock and no read-modify-write, unmarks. A replaced cache is freed by the invalidation
//   when a fence and a scan of the records show no open section reads its object; otherwise
//   it waits in one retired list for the drain run by the threads that may hold it, when their
//   outermost section ends.
// - `_ThreadDepth` (`_ThreadDepth.swift`): the runaway-recursion depth, in the same C
//   thread-local record (inline accessors: no call).
// - `_ThreadLocal` (`_ThreadLocal.swift`): one object per thread (silence scopes, transactions).
// - `_UnownedReference` (`_UnownedReference.swift`): a reference that loads nil once its object
//   began to die, like `weak`, but without moving the object's counts to a side table (which
//   sends every later retain and release of it down the runtime's slow path). Used for the
//   array an element tracker and an element-key registration point back to, and for the object
//   a derived key's driver (chain or dependent key) serves. A plain `weak` reference on Darwin.
// - `_CopyOnWriteHandoff` (`_CopyOnWriteHandoff.swift`): an array's storage, shared as a
//   copy-on-write snapshot, is read on one thread, dropped, then found unique and written on
//   another; the reference count orders that, but inside the uninstrumented Swift runtime, so in
//   thread-sanitized builds the reader and the writer also state the order to ThreadSanitizer
//   (and change boxes are not recycled). Ordinary builds test one flag in the buffer.
// - `_SharedLoop` (`_SharedLoop.swift`): the chunks of a loop that two threads run together
//   (an atomic counter hands them out); `finish()` waits until every chunk taken has ended. An
//   element tracker's two threads copy a long run into the ring with it, under the array's lock
//   that the calling thread holds; one indexes the run once every chunk is in, the other counts
//   memberships (from the caller's buffer) as soon as no chunk is left to take.
//
// Locks and their order. While holding the lock on the left, a thread may take the one on the
// right, never the reverse:
//   array lock (`ObservableArray._lock`) → shard lock (`_Shard.lock`)   filling a dispatch cache,
//                                                                       reconciling element tracking
//   driver lock (`_DerivedDriver.lock`) → shard lock                   a chain or dependent key wiring
//   shard lock → retired-cache lock (`_RetiredCaches._lock`)           invalidating a cache
//   retired-cache lock → reclaimer lock → thread-records lock (C, `read_sections.c`)
//   array lock → element-tracker directory lock                         starting/stopping tracking
// The thread-records and directory locks are leaves. The other `_Lock`s (key table, key catalog,
// drivers, streams, actor mailbox, bindings, runtime settings) and the registrar's inline
// `_LockWord` (`_asObserverLock`) each guard one object's own state.
// Handlers run under no lock of this library: a handler may observe, cancel, mutate the array it
// was told about, or release the last reference to anything. Two consequences kept in the code:
// a read section left under an array lock never frees retired caches there
// (`_leaveReadSectionUnderLock`: a freed registration's captures could deinit and take that
// lock; the array frees them once unlocked), and values displaced under a lock are released
// after unlocking. The one exception is
// the in-place subscript (`array[i].append(x)`): the caller's mutation of the element runs with
// the array locked, and a re-entry into the same array is reported by `_ArrayLock`.
//
// Read without a lock, and why that is enough
// - `KeyValueRegistrar._observedMask` / `_priorMask` ("anyone observing this key?"): relaxed
//   loads. Bits are set under the shard lock before `observe` returns, so a set ordered after the
//   registration (happens-before) sees them; a set racing with the registration may or may not be
//   reported, as with any observer registered concurrently. A stale set bit costs one lookup.
// - `KeyValueRegistrar._membership` (arrays tracking this element's keys): written under the
//   tracking array's lock, with compare-and-swap when the count changes (so that the count
//   reaching zero clears the bits with it) and `bitwiseOr` when an array gains a key; read
//   relaxed by the element's setter, with the same contract as the masks.
// - `KeyValueRegistrar._objectAddress`: bound once by compare-and-swap, then only compared.
// - `_AnyRegistration._cancelled`: stored releasing under the shard lock by every removal
//   (`_Shard`), loaded acquiring before every delivery: a delivery ordered after the removal
//   never calls the handler. (An array registration's silence owner is a `let`, set by its init.)
// - `_Registry.openScopes` (silence scopes and transactions, any thread): relaxed; a scope only
//   concerns the thread that opened it, which sees its own increment in program order. This
//   needs scopes to be lexical: only `withoutNotifying` and `transaction` open one, and each
//   closes it in a `defer` on the same thread. A begin/end API without that shape would break it.
// - `_KeyTable`'s and `_KeyCatalog`'s lookup caches: entries published with release stores,
//   read acquiring; a miss falls back to the locked table.
// - `ObservableArray._spareChangeBox` / `_spareStructuralBox`: the recycled change boxes, taken
//   under the array's lock (an acquiring load, then a store of 0) and put back from any thread
//   by compare-and-swap from 0, which cannot fill a slot a locked take has seen full.
// - `_ChainDriver._leafStamp`: written under the driver's lock, before the leaf registration
//   it names is made (0 when unwired or detached); loaded by each leaf change, which is announced
//   only when the stamp it was registered with is still the current one. A stale load drops or
//   announces a change racing with a re-wiring, as the lock-taking check it replaced could.
// - `ObservationRuntime._maximumDepth`, `_BindingCore._cut`, `_ArrayLock._holder`:
//   single words, each documented where it is declared.
//
// Guarded by a lock other than the owner's: `KeyValueRegistrar._groupCount` (the object's
// non-empty registration groups) is written and read only under the object's registry shard lock.
//
// Borrowed references (used without a retain), each with the invariant that keeps it valid:
// - registrations inside a read section: the cache retains each one, the section keeps the cache;
// - `_AnyRegistration._registrar` (`Unmanaged`): valid under the shard lock while the
//   registration is not cancelled — the registrar's deinit cancels under that lock first;
// - the ring storage (`unowned(unsafe)` or `Unmanaged.passUnretained(_storage)`) and the elements
//   it holds (by address, in `_ElementTracker`): the array's `_storage` holds them while the
//   array's lock is held, and nothing under that lock replaces it (a tracker's second thread
//   works on them only inside `DispatchQueue.concurrentPerform`, which the lock holder waits
//   for; the elements of a run being copied in are kept alive by the caller's buffer);
// - the element-change box and its value cell while a change is prepared and delivered: held by
//   one `let`, then by the change built from it, which `_recycle` consumes;
// - the directory's trackers: each entry owns a retain of its tracker (taken by `register`,
//   dropped by `unregister`), read unretained under the directory's lock, where the only work
//   done is a try-retain of each tracker's array and a read of the tracker's serial; the tracker
//   is used again only under that array's lock, after checking that the array's tracker still
//   has that serial (a serial, because a freed tracker's address can be reused), and a tracker
//   stopped during that use is released only after the array's lock; `_registry.elementTrackers`
//   and the registry shards are immortal (registries live as long as the process);
// - a registration's registry (`_AnyRegistration._registryReference`, `_Registry.cReference` /
//   `swiftReference`): the two registries are immortal;
// - `ObservableKey._keyPath`: key paths are interned by `_KeyTable` for the life of the process;
// - thread objects (`_ThreadLocal.existing`, the binding re-entrancy guard): owned by the thread's
//   pthread-specific slot until the thread exits, and read only on that thread.
// Violations of the first three are what `DeathRaceTests`, `ConcurrencyTests` and `StressTests`
// exercise under ThreadSanitizer (the TSan step of `.ci/run`); the random drivers exercise the
// ring under AddressSanitizer (its ASan step), and the C core runs under ASan and UBSan
// (`scripts/c-sanitizers.sh`).
