/*
** ObserveCore C core: libFuzzer target for the change wire format's decoder (cobs_wire.h).
** Build and run with scripts/fuzz.sh.
**
** The input is decoded as one change. A decoder error must leave the out-parameters' promises
** intact (no crash, no read outside the input: AddressSanitizer watches). A success must give
** runs that validate, a consumed length within the input, and bytes that re-encode to exactly
** the consumed prefix (one encoding per change); and the runs, applied to a model array of
** old_count elements (when it is small enough to build), must index only inside it and give
** exactly new_count elements.
*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cobserve.h"

#define FUZZ_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "wire_fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

enum { MAX_RUNS = 256, MAX_MODEL = 4096 };

/* Applies runs the way cobs_changes.h defines it, on a model of old_count ids; returns the new length. */
static size_t apply(const cobs_run *runs, size_t count, uint64_t old_count, uint64_t new_count) {
    static uint64_t old[MAX_MODEL], out[MAX_MODEL];
    static unsigned char taken[MAX_MODEL], placed[MAX_MODEL];
    memset(taken, 0, (size_t)old_count);
    memset(placed, 0, (size_t)new_count);
    for (uint64_t i = 0; i < old_count; i++) old[i] = i;
    for (size_t r = 0; r < count; r++) {
        const cobs_run *run = &runs[r];
        for (uint64_t k = 0; k < run->length; k++) {
            switch (run->op) {
            case COBS_RUN_REMOVE:
            case COBS_RUN_MOVE:
                FUZZ_ASSERT(run->start + k < old_count && !taken[run->start + k]);
                taken[run->start + k] = 1;
                if (run->op == COBS_RUN_MOVE) {
                    FUZZ_ASSERT(run->to + k < new_count && !placed[run->to + k]);
                    placed[run->to + k] = 1;
                    out[run->to + k] = old[run->start + k];
                }
                break;
            case COBS_RUN_INSERT:
                FUZZ_ASSERT(run->start + k < new_count && !placed[run->start + k]);
                placed[run->start + k] = 1;
                out[run->start + k] = UINT64_MAX;
                break;
            case COBS_RUN_MODIFY:
                FUZZ_ASSERT(run->start + k < new_count);
                break;
            default:
                FUZZ_ASSERT(0);
            }
        }
    }
    /* The kept elements fill the unplaced slots in order. */
    uint64_t next = 0;
    size_t filled = 0;
    for (uint64_t i = 0; i < new_count; i++) {
        if (placed[i]) { filled++; continue; }
        while (next < old_count && taken[next]) next++;
        FUZZ_ASSERT(next < old_count);
        out[i] = old[next++];
        filled++;
    }
    while (next < old_count && taken[next]) next++;
    FUZZ_ASSERT(next == old_count);          /* every kept element found a place */
    return filled;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static cobs_run runs[MAX_RUNS];
    static uint8_t again[1 + 30 + MAX_RUNS * 31];
    size_t count = 0, consumed = 0;
    uint64_t old_count = 0, new_count = 0;
    cobs_status status = cobs_wire_decode_runs(data, size, runs, MAX_RUNS, &count, &old_count, &new_count, &consumed);
    if (status == COBS_BUFFER_TOO_SMALL) {
        FUZZ_ASSERT(count > MAX_RUNS);
        return 0;
    }
    if (status != COBS_OK) return 0;
    FUZZ_ASSERT(consumed <= size && count <= MAX_RUNS);
    FUZZ_ASSERT(cobs_changes_validate(runs, count, old_count, new_count) == COBS_OK);

    size_t written = 0;
    FUZZ_ASSERT(cobs_wire_encode_runs(runs, count, old_count, new_count, again, sizeof again, &written) == COBS_OK);
    FUZZ_ASSERT(written == consumed && memcmp(again, data, consumed) == 0);

    if (old_count <= MAX_MODEL && new_count <= MAX_MODEL) {
        FUZZ_ASSERT(apply(runs, count, old_count, new_count) == new_count);
    }
    return 0;
}
