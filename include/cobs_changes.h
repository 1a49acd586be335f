/*
** ObserveCore C core: array changes as runs of index ranges, and the batch composer.
**
** A change of an array is a list of runs (`cobs_run`). Appending 100,000 elements is one run.
**
** Record format (one `cobs_run` is 32 bytes, fixed layout, native endianness):
**
**   op        uint32  COBS_RUN_REMOVE | COBS_RUN_INSERT | COBS_RUN_MOVE | COBS_RUN_MODIFY
**   reserved_ uint32  must be 0
**   start     uint64  REMOVE: first OLD index;  INSERT: first NEW index;
**                     MOVE: first OLD index of the moved elements;  MODIFY: first NEW index
**   length    uint64  number of elements, >= 1
**   to        uint64  MOVE: first NEW index of the moved elements; must be 0 for other ops
**
** Canonical order (what `cobs_changes_normalize` produces and `cobs_changes_validate` checks):
**   1. every REMOVE run, ascending by start;
**   2. every INSERT run, ascending by start;
**   3. every MOVE run, ascending by start;
**   4. every MODIFY run, ascending by start.
**   (The full sort key is (op, start, length, to), which orders overlapping runs too, for validate
**   to reject.) Within each op, runs neither overlap nor touch (touching runs are merged); MOVE runs merge
**   only when both their sources and their destinations are contiguous.
**
** Meaning (the rule that makes naive application safe, as for CollectionDifference): take the
** removed elements and the moves' sources out of the OLD array (highest index first), then put
** the inserted elements and the moves' destinations in at their NEW indices (lowest first).
** MODIFY marks elements whose contents changed but that stayed (NEW coordinates); they are not
** taken out. Consistency: REMOVE and MOVE sources are disjoint subsets of [0, old_count);
** INSERT and MOVE destinations are disjoint subsets of [0, new_count); and
**   old_count - removed - moved == new_count - inserted - moved.
**
** Thread safety: these functions keep no global state; a `cobs_batch` must not be used from two
** threads at once. Failure atomicity: an error leaves the caller's buffers and the batch unchanged.
*/
#ifndef COBS_CHANGES_H
#define COBS_CHANGES_H

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

/// The four kinds of run.
typedef enum cobs_run_op {
    COBS_RUN_REMOVE = 1,
    COBS_RUN_INSERT = 2,
    COBS_RUN_MOVE = 3,
    COBS_RUN_MODIFY = 4
} cobs_run_op;

/// One run of a change; see the record format above.
typedef struct cobs_run {
    uint32_t op;        /* a cobs_run_op */
    uint32_t reserved_; /* must be 0 */
    uint64_t start;     /* first index (coordinates depend on op) */
    uint64_t length;    /* >= 1 */
    uint64_t to;        /* MOVE destination, else 0 */
} cobs_run;

/// Sorts `runs` into canonical order and merges touching runs of the same op, in place.
/// Writes the resulting number of runs to `*out_count` (<= count). O(count log count); O(count)
/// when `runs` is already in canonical order (the Swift twin, `_SwiftRunEncoding`, always sorts).
/// Errors: COBS_INVALID_ARGUMENT (runs NULL with count > 0, out_count NULL, an unknown op,
/// length 0, reserved_ != 0, `to` != 0 outside MOVE, index + length overflowing), with `runs`
/// unchanged. Normalizing does not check consistency; validate does.
cobs_status cobs_changes_normalize(cobs_run *_Nullable runs, size_t count, size_t *_Nullable out_count);

/// Checks that `runs` is a canonical, consistent change from an array of `old_count` elements to
/// one of `new_count` elements (every rule stated at the top of this header). Never reads outside
/// `runs[0..<count]`. O(count). Returns COBS_OK or COBS_INVALID_ARGUMENT.
cobs_status cobs_changes_validate(const cobs_run *_Nullable runs, size_t count, uint64_t old_count,
                                  uint64_t new_count);

/* ------------------------------------------------------------------------------------------- */
/* Batch composer                                                                              */
/* ------------------------------------------------------------------------------------------- */

/// Composes a sequence of edits on an array into one canonical change. Opaque.
///
/// The composer tracks the array as segments: runs of ORIGINAL elements (by old index) and runs
/// of elements INSERTED during the batch. An element inserted and removed inside the batch leaves
/// no trace; a kept original element whose relative order changed is reported as a MOVE (the
/// kept elements in a longest increasing subsequence of new positions stay put, the others move).
/// Cost: each edit is O(segments); finishing is O(segments log segments). Memory: O(segments).
typedef struct cobs_batch cobs_batch;

/// Starts a batch on an array of `old_count` elements. Errors: COBS_INVALID_ARGUMENT, COBS_NO_MEMORY.
cobs_status cobs_batch_create(uint64_t old_count, const cobs_allocator *_Nullable allocator,
                              cobs_batch *_Nullable *_Nonnull out);

/// Frees the batch. NULL is a no-op.
void cobs_batch_destroy(cobs_batch *_Nullable batch);

/// The array's current length inside the batch.
uint64_t cobs_batch_count(const cobs_batch *_Nullable batch);

/// Records that `count` elements were inserted at current index `index` (0 <= index <= current length).
/// Errors: COBS_INVALID_ARGUMENT (NULL, index out of range, count 0), COBS_NO_MEMORY.
cobs_status cobs_batch_insert(cobs_batch *_Nullable batch, uint64_t index, uint64_t count);

/// Records that the `count` elements at current indices [index, index + count) were removed.
/// For each removed element, in order, writes its ORIGINAL index to `origins_out[i]`, or
/// UINT64_MAX when the element had been inserted during the batch; `origins_out` may be NULL.
/// Errors: COBS_INVALID_ARGUMENT (range out of bounds, count 0), COBS_NO_MEMORY.
cobs_status cobs_batch_remove(cobs_batch *_Nullable batch, uint64_t index, uint64_t count,
                              uint64_t *_Nullable origins_out);

/// Records that the element at current index `from` was moved to current index `to` (the index
/// it has after the move, as in `array.insert(array.remove(at: from), at: to)`).
/// Errors: COBS_INVALID_ARGUMENT, COBS_NO_MEMORY.
cobs_status cobs_batch_move(cobs_batch *_Nullable batch, uint64_t from, uint64_t to);

/// Records that the array was reordered as a whole: the element now at current index i is the one
/// that was at current index `permutation[i]`, for every i < `count` (what sort, reverse and
/// shuffle do). `count` must be the current length and `permutation` a permutation of 0..<count.
/// O(count + segments) time and O(count) temporary memory, however scattered the elements end up
/// (a sequence of `cobs_batch_move` calls costs O(segments) each); the batch then holds memory for
/// the segments the reorder left. Errors: COBS_INVALID_ARGUMENT (NULL, wrong count, not a
/// permutation; nothing recorded), COBS_NO_MEMORY (nothing recorded; finding out that
/// `permutation` repeats an index needs memory too, so a bad permutation may be answered so).
cobs_status cobs_batch_permute(cobs_batch *_Nullable batch, const uint64_t *_Nullable permutation, size_t count);

/// Records that the element at current index `index` changed in place (it is reported as MODIFY
/// if it is an original element that survives the batch). Errors: COBS_INVALID_ARGUMENT, COBS_NO_MEMORY.
cobs_status cobs_batch_modify(cobs_batch *_Nullable batch, uint64_t index);

/// Writes the composed change in canonical order to `runs_out` (up to `capacity` runs) and the
/// number of runs to `*count`. The batch stays usable (finish may be called again).
/// Errors: COBS_BUFFER_TOO_SMALL (nothing written but `*count`), COBS_INVALID_ARGUMENT, COBS_NO_MEMORY.
cobs_status cobs_batch_finish(cobs_batch *_Nullable batch, cobs_run *_Nullable runs_out, size_t capacity,
                              size_t *_Nullable count);

#ifdef __clang__
#pragma clang diagnostic pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* COBS_CHANGES_H */
