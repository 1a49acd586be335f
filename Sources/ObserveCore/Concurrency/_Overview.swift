// The concurrency core: every primitive the library synchronises with, and the one place that
// says who may read what without a lock and when memory is freed. (This file holds no code.)
//
// Primitives (this folder)
// - `_Lock` (`_Lock.swift`): a compare-and-swap spinlock that yields. Guards each registry shard,
//   each `ObservableArray`, the element-tracker directory and each registrar's retire list. Not
//   `Synchronization.Mutex`: an uncontended pthread mutex pair cost ~106 instructions on the
//   notification path, more than the lookup it guarded (measurement in the file).
// - Read sections (`_ReadSections.swift`): a registrar publishes its object's immutable
//   `_DispatchCache` in one atomic word; a setter counts itself in, reads it with no lock, counts
//   itself out. A replaced cache is freed by whoever sees the reader count at zero.
// - `_ThreadDepth` (`_ThreadDepth.swift`): the runaway-recursion depth, in C thread-local storage.
// - `_ThreadLocal` (`_ThreadLocal.swift`): one object per thread (silence scopes, transactions).
//
// Read without a lock, and why that is enough
// - `KeyValueRegistrar._observedMask` / `_priorMask` ("anyone observing this key?"): relaxed
//   loads. A bit is set under the shard lock before `observe` returns, so a set ordered after the
//   registration (happens-before) sees it; a set racing with the registration may or may not be
//   reported, as with any observer registered concurrently. A stale set bit costs one lookup.
// - `KeyValueRegistrar._membership` (arrays tracking this element's keys): the same contract,
//   written with compare-and-swap so that a count reaching zero clears the bits with it.
// - `_AnyRegistration._cancelled`: acquiring load before every delivery; `cancel()` stores it
//   releasing, so a delivery that starts after `cancel()` returns never calls the handler.
// - `_Registry.openScopes` (silence scopes and transactions, any thread): relaxed; a scope only
//   concerns the thread that opened it, which sees its own increment in program order.
// - `ObservableArray._spareChangeBox`: the recycled change box, handed over by exchange.
//
// Lock order: an array's lock, then a shard lock or a registrar's words; never the reverse.
// Handlers never run under any lock of this library: a handler may observe, cancel, mutate the
// array it was told about, or release the last reference to anything.
//
// Borrowed references (no retain), each with its invariant at the site:
// - registrations inside a read section (the cache retains each one; the section keeps the cache);
// - the ring storage `unowned(unsafe)` in array fast paths (the array's `_storage` holds it while
//   the array's lock is held, and nothing under that lock replaces it);
// - `ObservableKey._keyPath` (key paths are interned by `_KeyTable` for the life of the process);
// - the registry shards (immortal: registries live as long as the process).
// Violations of the first two are what `DeathRaceTests`, `ConcurrencyTests` and `StressTests`
// exercise under ThreadSanitizer (the TSan step of `.ci/run`); the random drivers exercise the ring
// under AddressSanitizer (its ASan step), and the C core runs under ASan and UBSan
// (`scripts/c-sanitizers.sh`).
