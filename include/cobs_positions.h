/*
** ObserveCore C core: the element-position index of an observed array.
**
** Answers "at which indices of this array is element E?" in O(1) expected time, so that an
** element's property change is reported with its index without scanning the array, and keeps
** answering it cheaply while the array is mutated (inserting at index 0 touches nothing).
**
** The array stores its elements in a RING owned by the caller: `ring` points to `mask + 1` (a
** power of two) pointer-sized words, slot `s` holds the address of the element there (the
** caller's object references, read as `uintptr_t` through memcpy, never through a typed lvalue,
** so the ring may be typed any way on the caller's side), and the
** element at logical index i sits in slot (head + i) & mask. The index maps an element address
** to the SLOTS holding it (several when the element appears several times). It stores only a
** 32-bit slot and a 7-bit fingerprint per distinct element (5 bytes per bucket, at most 7/8
** full): the element's address is read back from `ring[slot]` when a candidate must be
** confirmed. An element present several times has one bucket naming a record of its slots, so
** each copy costs O(1) to add, remove, move or report, however many copies there are. That
** keeps the index near 6.5 bytes per element, but it makes the ring part of the contract:
**
**   RING INVARIANT: whenever a function below receives `ring`, every entry's slot must hold the
**   entry's element in `ring` (except the one entry being removed or moved by that call).
**
** Because logical indices derive from slots, inserting at the front (head - 1) or appending
** changes no entry; an insertion or removal in the middle moves the elements of the shorter side,
** reported either element by element (`cobs_positions_move`) or as one block
** (`cobs_positions_shift`, which records the move in a short log instead of touching entries;
** a full log is emptied by `cobs_positions_fold`, or the index is rebuilt);
** reallocating the ring needs `cobs_positions_rebuild`. Slots given to and returned by every
** function are always the elements' CURRENT slots: the log is invisible to callers, except that
** the ring must keep its size while the log holds records (rebuild empties it).
**
** Rings: `mask + 1` is a power of two of at most 2^31 (a bucket's top bit marks a record);
** every function answers COBS_INVALID_ARGUMENT for a larger or malformed mask.
**
** Thread safety: not thread-safe; the owning array serializes calls under its lock.
** Failure atomicity: an error leaves the index unchanged (except rebuild, see there).
*/
#ifndef COBS_POSITIONS_H
#define COBS_POSITIONS_H

#include <stddef.h>
#include <stdint.h>

#include "cobs_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Clang's -Wpedantic reports every nullability annotation as -Wnullability-extension; silence it
** for this header only, as cobs_registry.h does (which also defines the annotations away for
** compilers without them). */
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnullability-extension"
#endif

/// Element address -> slots of the caller's ring. Opaque.
typedef struct cobs_positions cobs_positions;

/// Creates an empty index with room for `capacity_hint` entries and a hash seed (from
/// `arc4random_buf` when `seed` is 0, else `seed` itself, for reproducible tests).
/// `allocator` may be NULL (malloc/free). Errors: COBS_INVALID_ARGUMENT, COBS_NO_MEMORY.
cobs_status cobs_positions_create(size_t capacity_hint, uint64_t seed, const cobs_allocator *_Nullable allocator,
                                  cobs_positions *_Nullable *_Nonnull out);

/// Frees the index. NULL is a no-op.
void cobs_positions_destroy(cobs_positions *_Nullable pos);

/// Records that `element` (non-zero) occupies `slot` (<= mask). The caller guarantees the pair
/// is not already recorded and that `ring[slot] == element`. Amortized O(1), also for the
/// thousandth copy of an element; may grow (reads `ring` to rehash). Errors: COBS_INVALID_ARGUMENT
/// (NULL, element 0, slot > mask, mask + 1 not a power of two or above 2^31, the pair already
/// recorded), COBS_NO_MEMORY.
cobs_status cobs_positions_insert(cobs_positions *_Nullable pos, const void *_Nullable ring, uint32_t mask,
                                  uintptr_t element, uint32_t slot);

/// Records the `count` elements in slots `first`, `first + 1`, … (mod `mask + 1`), as
/// `cobs_positions_insert` for each, in one call: one validation, and from 2^15 buckets the
/// buckets of later elements are prefetched while earlier ones are inserted. The caller
/// guarantees that `ring` holds the run's elements there (reads them; none may be 0).
/// O(count) expected. Errors: COBS_INVALID_ARGUMENT (as for insert, a 0 element in the run, or
/// `count > mask + 1`; a pair already recorded), COBS_NO_MEMORY. After an error the pairs this call
/// added are removed again: the entries are as before (the table may have grown).
cobs_status cobs_positions_insert_run(cobs_positions *_Nullable pos, const void *_Nullable ring, uint32_t mask,
                                      uint32_t first, size_t count);

/// Forgets that `element` occupies `slot`: O(1) expected, whatever the element's number of
/// copies. Backward-shift deletion (reads `ring` to find the home of entries it shifts).
/// Errors: COBS_NOT_FOUND, COBS_INVALID_ARGUMENT.
cobs_status cobs_positions_remove(cobs_positions *_Nullable pos, const void *_Nullable ring, uint32_t mask,
                                  uintptr_t element, uint32_t slot);

/// Records that `element` moved from slot `from` to slot `to` (one entry rewritten in place;
/// does not read `ring`). Errors: COBS_NOT_FOUND, COBS_INVALID_ARGUMENT, COBS_NO_MEMORY (a
/// duplicated element's slot beyond what its position table covers; index unchanged).
cobs_status cobs_positions_move(cobs_positions *_Nullable pos, uint32_t mask, uintptr_t element,
                                uint32_t from, uint32_t to);

/// Records that the `count` elements in slots `first`, `first + 1`, … (mod `mask + 1`) moved
/// `delta` slots (negative: toward lower slots), the caller having already moved them in its ring,
/// without touching any entry: the move goes into the index's shift log (see positions.c, SHIFT
/// LOG), and every later call translates slots through it. O(1); later lookups, insertions and
/// removals pay O(log length) per slot translated, until a rebuild empties the log.
/// Requires `count + |delta| <= mask + 1` and, while the log is not empty, the same `mask` as
/// the calls before. A no-op when `count` or `delta` is 0 or the index is empty.
/// Errors: COBS_BUFFER_TOO_SMALL when the log is full (it takes 32 block moves, up to 128 for an
/// index of 64k entries or more: one per 512 entries): nothing is recorded, so the caller either
/// calls `cobs_positions_fold` and then this function again (folding does not read the ring, so
/// the ring may already show the move), or leaves the index behind the ring and calls
/// `cobs_positions_rebuild` before any other call; COBS_INVALID_ARGUMENT (index unchanged).
cobs_status cobs_positions_shift(cobs_positions *_Nullable pos, uint32_t mask, uint32_t first, uint32_t count,
                                 int64_t delta);

/// Empties the shift log by rewriting every entry's stored slot to its current slot (see
/// positions.c, FOLDING THE LOG): afterwards every lookup answers what it did before (the table
/// keeps its size), the log is empty, and the next 32 to 128 block moves are recorded again.
/// Does not read the ring; O(buckets) plus O(log length x runs) to compose the log, about 1 ns
/// per bucket, where a rebuild probes once per element (about 9 ns each at 100,000 elements). A
/// no-op when the log is empty. Errors: COBS_INVALID_ARGUMENT (NULL), COBS_NO_MEMORY (scratch of
/// up to 14 KB, or a duplicated element's position table that must grow: the index is unchanged,
/// log included).
cobs_status cobs_positions_fold(cobs_positions *_Nullable pos);

/// Writes up to `capacity` slots holding `element` to `slots_out` (in no particular order) and
/// their number to `*count`. O(1) expected plus one step per copy. Errors: COBS_BUFFER_TOO_SMALL (first `capacity`
/// written, `*count` is the full number), COBS_INVALID_ARGUMENT.
cobs_status cobs_positions_lookup(const cobs_positions *_Nullable pos, const void *_Nullable ring,
                                  uint32_t mask, uintptr_t element, uint32_t *_Nullable slots_out,
                                  size_t capacity, size_t *_Nullable count);

/// Replaces the whole index with the `count` elements at logical indices 0..<count of the ring
/// (slots (head + i) & mask). Used after the ring is reallocated, sorted, or filled at once.
/// O(count). Errors: COBS_INVALID_ARGUMENT (index unchanged), COBS_NO_MEMORY (the table could not
/// be allocated: index unchanged; or a duplicate record could not: the index is left empty, so
/// the caller must rebuild again before relying on it).
cobs_status cobs_positions_rebuild(cobs_positions *_Nullable pos, const void *_Nullable ring, uint32_t mask,
                                   uint32_t head, size_t count);

/// Removes every entry (keeps the allocation). NULL is a no-op.
void cobs_positions_clear(cobs_positions *_Nullable pos);

/// Number of (element, slot) entries, copies counted. NULL gives 0.
size_t cobs_positions_count(const cobs_positions *_Nullable pos);

/// Bytes the index holds on the heap, duplicate records included (for the benchmark's memory
/// figures). NULL gives 0.
size_t cobs_positions_bytes(const cobs_positions *_Nullable pos);

/// Verifies the index against the ring: counts, reachability from home buckets, fingerprints,
/// and that every entry's slot holds its element. O(capacity). COBS_OK or COBS_CORRUPT.
cobs_status cobs_positions_check_invariants(const cobs_positions *_Nullable pos, const void *_Nullable ring,
                                            uint32_t mask);

/// Longest home-to-bucket distance of any entry (probe-length bound, for tests). NULL gives 0.
size_t cobs_positions_max_displacement(const cobs_positions *_Nullable pos, const void *_Nullable ring,
                                       uint32_t mask);

#ifdef __clang__
#pragma clang diagnostic pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* COBS_POSITIONS_H */
