/*
** ObserveCore C core: the byte form of an array change's runs, for sending a change to a
** replica in another process (a file, a pipe, a message broker).
**
** FORMAT, version 1. Integers are unsigned LEB128 varints (7 bits per byte, low group first,
** high bit set on every byte but the last; at most 10 bytes for a 64-bit value, and no
** redundant trailing zero groups — a value has exactly one encoding):
**
**   version     1 byte    COBS_WIRE_VERSION (1)
**   old_count   varint    elements before the change
**   new_count   varint    elements after it
**   run_count   varint    number of runs that follow
**   run_count times:
**     op        1 byte    COBS_RUN_REMOVE (1) | INSERT (2) | MOVE (3) | MODIFY (4)
**     start     varint    as in cobs_changes.h: REMOVE/MOVE old index, INSERT/MODIFY new index
**     length    varint    >= 1
**     to        varint    MOVE only: the first new index of the moved elements
**
** The runs are canonical and consistent (cobs_changes_validate): a decoder accepts nothing else,
** so applying a decoded change never indexes outside an array of old_count elements. What the
** runs do not carry — the values of inserted and modified elements — follows the runs in the
** caller's own encoding (ObserveCore's Swift layer writes a varint byte length, then the bytes).
** A typical change is a few bytes: appending 10,000 elements to an empty array is 9 bytes of runs.
**
** Thread safety: no global state; the functions read and write only the caller's buffers.
** Failure atomicity: on error nothing is written but the out-parameters named in each contract.
*/
#ifndef COBS_WIRE_H
#define COBS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "cobs_changes.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnullability-extension"
#endif

/// The format version this core writes and reads.
#define COBS_WIRE_VERSION 1

/// The most bytes `cobs_wire_encode_runs` writes for `count` runs (a bound, for sizing a buffer).
size_t cobs_wire_max_size(size_t count);

/// Writes the change `runs[0..<count]` (from `old_count` to `new_count` elements) to
/// `out[0..<capacity]` and its length to `*written`. The runs must pass cobs_changes_validate.
/// Errors: COBS_INVALID_ARGUMENT (NULL pointers where count or capacity needs them, runs that do
/// not validate; nothing written), COBS_BUFFER_TOO_SMALL (`*written` = the size needed).
cobs_status cobs_wire_encode_runs(const cobs_run *_Nullable runs, size_t count, uint64_t old_count,
                                  uint64_t new_count, uint8_t *_Nullable out, size_t capacity,
                                  size_t *_Nullable written);

/// Reads one change's runs from `in[0..<length]`: writes the counts, up to `capacity` runs to
/// `runs_out`, the number of runs to `*run_count` and the bytes read to `*consumed` (the caller's
/// payload starts there). Never reads outside `in[0..<length]`; accepts only version 1,
/// well-formed minimal varints, known ops, `to` only on MOVE, and runs that pass
/// cobs_changes_validate.
/// Errors: COBS_INVALID_ARGUMENT (malformed, truncated, unknown version, inconsistent runs),
/// COBS_BUFFER_TOO_SMALL (`*run_count` = the number of runs; call again with room for them).
cobs_status cobs_wire_decode_runs(const uint8_t *_Nullable in, size_t length, cobs_run *_Nullable runs_out,
                                  size_t capacity, size_t *_Nullable run_count, uint64_t *_Nullable old_count,
                                  uint64_t *_Nullable new_count, size_t *_Nullable consumed);

#ifdef __clang__
#pragma clang diagnostic pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* COBS_WIRE_H */
