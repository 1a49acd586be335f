/*
** ObserveCore C core: the observation registry.
**
** Prefix rule: every symbol this header exposes starts with `cobs_` (functions, types) or
** `COBS_` (macros, constants). Internal helpers are `static` in the .c files and carry no prefix.
**
** The registry maps a registration key (object address, key id, context) to one 32-bit slot, an
** index into a callback table that the caller owns. The core never dereferences `object`, never
** stores anything but integers, and never calls back into the caller. For the design (probing,
** deletion, load factor, hashing) see the essay at the top of Sources/CObserveCore/registry.c;
** the memory layout and the table's invariants are in registry_layout.h next to it.
**
** Thread safety: a `cobs_registry` is NOT thread-safe. Callers serialize every call on one
** registry (ObserveCore shards its registrations over several registries, each behind its own
** lock). Distinct registries may be used from distinct threads concurrently. Functions that only
** read (`find`, `lookup`, `object_entries`, `count`, `stats`, `check_invariants`, `dump`) may run
** concurrently with each other on one registry, never with a writer.
**
** Failure atomicity: every function that returns an error leaves the registry exactly as it was.
*/
#ifndef COBS_REGISTRY_H
#define COBS_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nullability annotations are a Clang extension. Two details matter for portability:
** - `__has_feature(x)` must not appear in the same `#if` as `defined(__has_feature)`: a compiler
**   without `__has_feature` (GCC < 14) still parses the whole expression and rejects `(`.
**   Nesting the test puts it in a skipped group, which is only tokenized.
** - Clang's -Wpedantic reports every annotation as -Wnullability-extension; the push/pop below
**   silences that for this header only (the annotations are what gives Swift non-optional
**   parameters, so they stay). */
#if defined(__has_feature)
#if __has_feature(nullability)
#define COBS_HAS_NULLABILITY_ 1
#endif
#endif
#ifndef COBS_HAS_NULLABILITY_
#define _Nonnull
#define _Nullable
#endif
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnullability-extension"
#endif

/* ------------------------------------------------------------------------------------------- */
/* Status codes                                                                                */
/* ------------------------------------------------------------------------------------------- */

/// The result of every fallible `cobs_` function.
typedef enum cobs_status {
    COBS_OK = 0,                /* the call did what it says */
    COBS_EXISTS = 1,            /* insert: the key is already present; nothing changed */
    COBS_NOT_FOUND = 2,         /* find/remove: the key is absent; nothing changed */
    COBS_NO_MEMORY = 3,         /* an allocation failed; nothing changed */
    COBS_INVALID_ARGUMENT = 4,  /* a NULL handle or out-pointer, object 0, or an impossible size */
    COBS_BUFFER_TOO_SMALL = 5,  /* an output buffer was too small; *count tells how many are needed */
    COBS_CORRUPT = 6            /* check_invariants found a broken invariant (a bug in the core) */
} cobs_status;

/// A short, static, human-readable name for a status ("COBS_OK", ...). Never NULL.
const char *_Nonnull cobs_status_name(cobs_status status);

/* ------------------------------------------------------------------------------------------- */
/* Keys, slots, allocator                                                                      */
/* ------------------------------------------------------------------------------------------- */

/// One registration key. `object` is an address used only as a number (never dereferenced) and
/// must not be 0. `key` is a small property id. `context` distinguishes registrations of the same
/// (object, key); 0 is an ordinary context value. `reserved_` must be 0.
typedef struct cobs_key {
    uintptr_t object;   /* observed object's address; 0 is invalid */
    uintptr_t context;  /* caller-defined; equality only */
    uint32_t key;       /* property id */
    uint32_t reserved_; /* must be 0 (keeps the struct 24 bytes with no padding) */
} cobs_key;

/// The value stored for a key: an index into a table the caller owns.
typedef uint32_t cobs_slot;

/// A pluggable allocator (tests inject failures through it). Both functions must be non-NULL.
/// `allocate` returns NULL on failure, and otherwise memory aligned as malloc's is; `deallocate`
/// receives what `allocate` returned and the size that was asked for. The registry allocates its
/// own struct and one backing array through it, nothing else.
typedef struct cobs_allocator {
    void *_Nullable (*_Nonnull allocate)(void *_Nullable user, size_t size);
    void (*_Nonnull deallocate)(void *_Nullable user, void *_Nullable pointer, size_t size);
    void *_Nullable user;
} cobs_allocator;

/// Statistics for tests and benchmarks. `max_displacement` is the longest distance (in slots)
/// from an entry's home bucket to where it sits: the worst probe length a lookup can take.
/// The hash seed is deliberately not reported (here or by `cobs_registry_dump`): a client that
/// could read it could compute addresses that all share one home bucket and flood the table.
typedef struct cobs_registry_stats {
    size_t count;             /* entries stored */
    size_t capacity;          /* buckets (a power of two) */
    size_t max_displacement;  /* longest home-to-position distance of any entry */
    size_t total_displacement;/* sum of all distances (mean = total / count) */
} cobs_registry_stats;

/* ------------------------------------------------------------------------------------------- */
/* Registry instance                                                                           */
/* ------------------------------------------------------------------------------------------- */

/// An open-addressed table from `cobs_key` to `cobs_slot`. Opaque.
typedef struct cobs_registry cobs_registry;

/// Creates an empty registry whose hash seed comes from `arc4random_buf` (libbsd), unless the
/// library was built with COBS_DETERMINISTIC_HASHING, in which case the seed is a fixed constant.
/// `capacity_hint` entries fit without growing (0 is fine). Writes the registry to `*out`; on
/// any error, `*out` is set to NULL (when `out` itself is not NULL).
/// Errors: COBS_INVALID_ARGUMENT (out NULL, hint beyond what a table can hold: more than 3/4 of
/// 2^58 on 64-bit targets), COBS_NO_MEMORY.
cobs_status cobs_registry_create(size_t capacity_hint, cobs_registry *_Nullable *_Nonnull out);

/// Like `cobs_registry_create`, with an explicit seed (deterministic, for tests and for
/// reproducible benchmarks) and an optional allocator (NULL means malloc/free). The allocator
/// struct is copied. Errors as `cobs_registry_create`, plus COBS_INVALID_ARGUMENT for an
/// allocator with a NULL function.
cobs_status cobs_registry_create_with(size_t capacity_hint, uint64_t seed,
                                      const cobs_allocator *_Nullable allocator,
                                      cobs_registry *_Nullable *_Nonnull out);

/// Frees the registry and everything it holds. NULL is a no-op.
void cobs_registry_destroy(cobs_registry *_Nullable reg);

/* ------------------------------------------------------------------------------------------- */
/* Entries                                                                                     */
/* ------------------------------------------------------------------------------------------- */

/// Inserts `key -> slot`. Amortized O(1); grows the table x2 (one allocation) when the entry would
/// take it past 3/4 full.
/// Errors: COBS_EXISTS (key present; `*existing` receives its slot if `existing` is non-NULL),
/// COBS_NO_MEMORY (growth failed), COBS_INVALID_ARGUMENT (reg NULL, key.object 0, reserved_ != 0).
cobs_status cobs_registry_insert(cobs_registry *_Nullable reg, cobs_key key, cobs_slot slot,
                                 cobs_slot *_Nullable existing);

/// Finds the slot stored for exactly `key`. O(1) expected.
/// Errors: COBS_NOT_FOUND, COBS_INVALID_ARGUMENT (reg or out NULL, key.object 0).
cobs_status cobs_registry_find(const cobs_registry *_Nullable reg, cobs_key key,
                               cobs_slot *_Nullable out);

/// Removes `key`, writing its slot to `*removed` if non-NULL. Backward-shift deletion: no
/// tombstones. May shrink the table (halving while it is under 1/8 full, never below 16
/// buckets); a failed shrink is not an error (the table stays larger).
/// Errors: COBS_NOT_FOUND, COBS_INVALID_ARGUMENT.
cobs_status cobs_registry_remove(cobs_registry *_Nullable reg, cobs_key key,
                                 cobs_slot *_Nullable removed);

/// Collects the slots of every entry for (object, key), whatever its context, in table order.
/// Writes up to `capacity` slots to `out` and the number of matches to `*count`.
/// Cost: O(entries of `object` + local cluster); never scans the table.
/// Errors: COBS_BUFFER_TOO_SMALL (more than `capacity` matches: the first `capacity` are written,
/// `*count` is the full number), COBS_INVALID_ARGUMENT (reg or count NULL, object 0, out NULL
/// with capacity > 0).
cobs_status cobs_registry_lookup(const cobs_registry *_Nullable reg, uintptr_t object, uint32_t key,
                                 cobs_slot *_Nullable out, size_t capacity,
                                 size_t *_Nullable count);

/// Lists every entry of `object` (keys and slots, in table order). `keys_out` / `slots_out` may be
/// NULL independently when the caller wants only the other (or, with capacity 0, only the count).
/// Cost: O(entries of `object` + local cluster). Errors: as `cobs_registry_lookup`, where "out
/// NULL with capacity > 0" means both outputs NULL with capacity > 0.
cobs_status cobs_registry_object_entries(const cobs_registry *_Nullable reg, uintptr_t object,
                                         cobs_key *_Nullable keys_out,
                                         cobs_slot *_Nullable slots_out, size_t capacity,
                                         size_t *_Nullable count);

/// Removes every entry of `object`, writing their slots to `slots_out` and the number removed to
/// `*count`. Cost: O(entries of `object` + local cluster); never scans the table.
/// Errors: COBS_BUFFER_TOO_SMALL (nothing removed; `*count` is how many would be),
/// COBS_INVALID_ARGUMENT (as lookup). Removing from an object with no entries is COBS_OK, count 0,
/// and changes nothing. After removing entries the table may shrink as with `cobs_registry_remove`
/// (one O(capacity) rehash, paid for by the removals that emptied it; a failed shrink is ignored).
cobs_status cobs_registry_remove_object(cobs_registry *_Nullable reg, uintptr_t object,
                                        cobs_slot *_Nullable slots_out, size_t capacity,
                                        size_t *_Nullable count);

/// The number of entries. NULL gives 0.
size_t cobs_registry_count(const cobs_registry *_Nullable reg);

/* ------------------------------------------------------------------------------------------- */
/* Checking and debugging                                                                      */
/* ------------------------------------------------------------------------------------------- */

/// Fills `*out` with statistics. O(capacity). Errors: COBS_INVALID_ARGUMENT.
cobs_status cobs_registry_stats_get(const cobs_registry *_Nullable reg,
                                    cobs_registry_stats *_Nullable out);

/// Verifies every structural invariant listed on `struct cobs_registry` in registry_layout.h (count
/// matches, no entry unreachable from its home bucket, fingerprints match, no duplicate keys,
/// load factor within bounds). O(capacity). Returns COBS_OK or COBS_CORRUPT (and prints what is
/// wrong to stderr), or COBS_INVALID_ARGUMENT for NULL.
cobs_status cobs_registry_check_invariants(const cobs_registry *_Nullable reg);

/// Prints the table's internal state (one line per bucket) to `stream` (stderr when NULL).
void cobs_registry_dump(const cobs_registry *_Nullable reg, FILE *_Nullable stream);

#ifdef __clang__
#pragma clang diagnostic pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* COBS_REGISTRY_H */
