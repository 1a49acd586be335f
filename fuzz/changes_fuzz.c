/*
** ObserveCore C core: libFuzzer target for the change encoder (normalize, validate) and the batch
** composer. Build and run with scripts/fuzz.sh.
**
** The first byte picks one of three decodings of the rest of the input:
**
**   0  RAW RECORDS. bytes 1-2: old_count, new_count (0...255); then 32-byte `cobs_run` records
**      exactly as they lie in memory (any bit pattern, including huge indices that overflow).
**      validate must not crash; normalize must either reject or produce sorted, merged runs.
**   1  COMPACT RUNS. bytes 1-2: old and new count (0...63); then 4 bytes per run: op (low 3 bits,
**      so invalid ops 0 and 5-7 occur; bit 7 sets reserved_), start (0...63), length (0...15),
**      to (0...63; for ops other than MOVE only when the byte's bit 6 is set). validate must agree
**      with a brute-force reference validator that uses bitmaps instead of sorting.
**   2  EDIT SEQUENCE. byte 1: old_count (0...47); then 3 bytes per edit (opcode, two operands)
**      applied to a cobs_batch and to a model array (original elements are their old index,
**      inserted ones get ids >= 1000). After every edit the batch's count and remove's origins
**      must match the model; at each FINISH edit and at the end the composed change must
**      validate, apply to the old array to give exactly the model, pair every MOVE with the
**      element it names, report exactly the modified survivors, and move as few elements as
**      possible (survivors minus the longest increasing subsequence of their origins).
**      Allocation failures are injected by the input (NO_MEMORY must change nothing).
**
** In every mode: a change that validates is a fixed point of normalize, and normalize is
** idempotent. Any disagreement aborts, which libFuzzer reports with the input that caused it.
*/

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cobserve.h"

#define FUZZ_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "changes_fuzz: %s:%d: model mismatch: %s\n", __FILE__, __LINE__,      \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_RUNS 512

/* ------------------------------------------------------------------------------------------- */
/* Properties shared by the modes                                                              */
/* ------------------------------------------------------------------------------------------- */

static int run_key_less(const cobs_run *a, const cobs_run *b) {
    if (a->op != b->op) return a->op < b->op;
    if (a->start != b->start) return a->start < b->start;
    if (a->length != b->length) return a->length < b->length;
    return a->to < b->to;
}

/* normalize on a copy: rejects exactly the malformed records; otherwise sorted, merged, lengths
** per op preserved, idempotent. A change that validates is left exactly as it was. */
static void check_normalize(const cobs_run *runs, size_t n, bool valid) {
    cobs_run copy[MAX_RUNS];
    memcpy(copy, runs, n * sizeof *runs);
    size_t out = SIZE_MAX;
    const cobs_status st = cobs_changes_normalize(n ? copy : NULL, n, &out);
    if (st != COBS_OK) {
        FUZZ_ASSERT(st == COBS_INVALID_ARGUMENT && !valid);
        FUZZ_ASSERT(out == SIZE_MAX && (n == 0 || memcmp(copy, runs, n * sizeof *runs) == 0));
        return;
    }
    FUZZ_ASSERT(out <= n);
    if (valid) FUZZ_ASSERT(out == n && (n == 0 || memcmp(copy, runs, n * sizeof *runs) == 0));
    /* Sums modulo 2^64 (raw records may hold huge lengths); merging preserves them exactly. */
    uint64_t before[5] = {0}, after[5] = {0};
    for (size_t i = 0; i < n; i++) before[runs[i].op] += runs[i].length;
    for (size_t i = 0; i < out; i++) {
        after[copy[i].op] += copy[i].length;
        if (i > 0) {
            FUZZ_ASSERT(!run_key_less(&copy[i], &copy[i - 1]));
            const bool continues = copy[i - 1].op == copy[i].op &&
                                   copy[i - 1].start + copy[i - 1].length == copy[i].start &&
                                   (copy[i].op != COBS_RUN_MOVE ||
                                    copy[i - 1].to + copy[i - 1].length == copy[i].to);
            FUZZ_ASSERT(!continues);
        }
    }
    FUZZ_ASSERT(memcmp(before, after, sizeof before) == 0);
    cobs_run again[MAX_RUNS];
    memcpy(again, copy, out * sizeof *copy);
    size_t out2 = 0;
    FUZZ_ASSERT(cobs_changes_normalize(out ? again : NULL, out, &out2) == COBS_OK);
    FUZZ_ASSERT(out2 == out && (out == 0 || memcmp(again, copy, out * sizeof *copy) == 0));
}

/* ------------------------------------------------------------------------------------------- */
/* Mode 1: the reference validator                                                             */
/* ------------------------------------------------------------------------------------------- */

/* Brute force over indices < 256: bitmaps instead of sorted sweeps. */
static bool reference_validate(const cobs_run *runs, size_t n, uint64_t old_count, uint64_t new_count) {
    bool taken_old[256] = {false}, taken_new[256] = {false}, inserted[256] = {false};
    uint64_t removed = 0, added = 0;
    for (size_t i = 0; i < n; i++) {
        const cobs_run *r = &runs[i];
        if (r->op < 1 || r->op > 4 || r->reserved_ != 0 || r->length == 0) return false;
        if (r->op != COBS_RUN_MOVE && r->to != 0) return false;
        if (r->start + r->length > (r->op == COBS_RUN_REMOVE || r->op == COBS_RUN_MOVE ? old_count
                                                                                       : new_count)) {
            return false;
        }
        if (r->op == COBS_RUN_MOVE && r->to + r->length > new_count) return false;
        if (i > 0) {
            const cobs_run *p = &runs[i - 1];
            if (p->op > r->op) return false;
            if (p->op == r->op) {
                if (p->start + p->length > r->start) return false;
                if (p->start + p->length == r->start &&
                    (r->op != COBS_RUN_MOVE || p->to + p->length == r->to)) {
                    return false;
                }
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        const cobs_run *r = &runs[i];
        for (uint64_t t = 0; t < r->length; t++) {
            switch (r->op) {
            case COBS_RUN_REMOVE:
                if (taken_old[r->start + t]) return false;
                taken_old[r->start + t] = true;
                removed++;
                break;
            case COBS_RUN_INSERT:
                if (taken_new[r->start + t]) return false;
                taken_new[r->start + t] = inserted[r->start + t] = true;
                added++;
                break;
            case COBS_RUN_MOVE:
                if (taken_old[r->start + t] || taken_new[r->to + t]) return false;
                taken_old[r->start + t] = taken_new[r->to + t] = true;
                break;
            default: /* MODIFY: not an inserted index (runs of one op cannot overlap) */
                if (inserted[r->start + t]) return false;
                break;
            }
        }
    }
    return old_count - removed == new_count - added;
}

static void run_compact(const uint8_t *data, size_t size) {
    if (size < 2) return;
    const uint64_t old_count = data[0] & 63, new_count = data[1] & 63;
    cobs_run runs[MAX_RUNS];
    size_t n = 0;
    for (size_t at = 2; at + 4 <= size && n < MAX_RUNS; at += 4) {
        cobs_run r;
        r.op = data[at] & 7;
        r.reserved_ = (data[at] & 0x80) ? 1 : 0;
        r.start = data[at + 1] & 63;
        r.length = data[at + 2] & 15;
        r.to = (r.op == COBS_RUN_MOVE || (data[at + 3] & 0x40)) ? (data[at + 3] & 63) : 0;
        runs[n++] = r;
    }
    const bool valid = cobs_changes_validate(n ? runs : NULL, n, old_count, new_count) == COBS_OK;
    FUZZ_ASSERT(valid == reference_validate(runs, n, old_count, new_count));
    check_normalize(runs, n, valid);
    /* After normalizing, validate and the reference must still agree. */
    cobs_run copy[MAX_RUNS];
    memcpy(copy, runs, n * sizeof *runs);
    size_t out = 0;
    if (cobs_changes_normalize(n ? copy : NULL, n, &out) == COBS_OK) {
        const bool v = cobs_changes_validate(out ? copy : NULL, out, old_count, new_count) == COBS_OK;
        FUZZ_ASSERT(v == reference_validate(copy, out, old_count, new_count));
    }
}

/* ------------------------------------------------------------------------------------------- */
/* Mode 0: raw records                                                                         */
/* ------------------------------------------------------------------------------------------- */

static void run_raw(const uint8_t *data, size_t size) {
    if (size < 2) return;
    const uint64_t old_count = data[0], new_count = data[1];
    size_t n = (size - 2) / sizeof(cobs_run);
    if (n > MAX_RUNS) n = MAX_RUNS;
    cobs_run runs[MAX_RUNS];
    memcpy(runs, data + 2, n * sizeof *runs);
    /* Exactly n records: ASan catches any read past them in a heap copy of that size. */
    cobs_run *heap = malloc(n ? n * sizeof *heap : 1);
    FUZZ_ASSERT(heap != NULL);
    memcpy(heap, runs, n * sizeof *runs);
    const bool valid = cobs_changes_validate(n ? heap : NULL, n, old_count, new_count) == COBS_OK;
    (void)cobs_changes_validate(n ? heap : NULL, n, UINT64_MAX, UINT64_MAX);
    FUZZ_ASSERT(n == 0 || memcmp(heap, runs, n * sizeof *runs) == 0);
    size_t out = 0;
    if (cobs_changes_normalize(n ? heap : NULL, n, &out) == COBS_OK) {
        (void)cobs_changes_validate(out ? heap : NULL, out, old_count, new_count);
    }
    free(heap);
    check_normalize(runs, n, valid);
}

/* ------------------------------------------------------------------------------------------- */
/* Mode 2: edit sequences against a model                                                      */
/* ------------------------------------------------------------------------------------------- */

typedef struct fuzz_allocator {
    int fail_next; /* the next allocation fails (then resets) */
    size_t live_bytes;
} fuzz_allocator;

static void *fuzz_allocate(void *user, size_t size) {
    fuzz_allocator *a = user;
    if (a->fail_next) {
        a->fail_next = 0;
        return NULL;
    }
    void *p = malloc(size);
    if (p != NULL) a->live_bytes += size;
    return p;
}

static void fuzz_deallocate(void *user, void *pointer, size_t size) {
    fuzz_allocator *a = user;
    if (pointer == NULL) return;
    FUZZ_ASSERT(a->live_bytes >= size);
    a->live_bytes -= size;
    free(pointer);
}

#define MAX_ELEMENTS 1024
#define FIRST_INSERTED 1000u

typedef struct model {
    uint64_t old_count;
    uint64_t values[MAX_ELEMENTS]; /* < FIRST_INSERTED: the element's old index */
    size_t count;
    bool modified[MAX_ELEMENTS];   /* by old index */
    uint64_t next_id;
} model;

static int compare_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The reference application: remove REMOVE indices and MOVE sources from the old array from the
** highest index down; insert INSERT indices and MOVE destinations from the lowest up, reading the
** inserted and moved values from the final array. */
static void check_change(const cobs_run *runs, size_t n, const model *m) {
    FUZZ_ASSERT(cobs_changes_validate(n ? runs : NULL, n, m->old_count, m->count) == COBS_OK);
    check_normalize(runs, n, true);
    uint64_t array[MAX_ELEMENTS];
    size_t len = (size_t)m->old_count;
    for (size_t i = 0; i < len; i++) array[i] = i;

    uint64_t out[MAX_ELEMENTS], in[MAX_ELEMENTS];
    size_t nout = 0, nin = 0, moved = 0;
    bool reported_modified[MAX_ELEMENTS] = {false};
    for (size_t r = 0; r < n; r++) {
        for (uint64_t t = 0; t < runs[r].length; t++) {
            switch (runs[r].op) {
            case COBS_RUN_REMOVE:
                out[nout++] = runs[r].start + t;
                break;
            case COBS_RUN_INSERT:
                in[nin++] = runs[r].start + t;
                FUZZ_ASSERT(m->values[runs[r].start + t] >= FIRST_INSERTED); /* really new */
                break;
            case COBS_RUN_MOVE:
                out[nout++] = runs[r].start + t;
                in[nin++] = runs[r].to + t;
                FUZZ_ASSERT(m->values[runs[r].to + t] == runs[r].start + t); /* the same element */
                moved++;
                break;
            case COBS_RUN_MODIFY: {
                const uint64_t v = m->values[runs[r].start + t];
                FUZZ_ASSERT(v < FIRST_INSERTED && m->modified[v]);
                reported_modified[v] = true;
                break;
            }
            default:
                FUZZ_ASSERT(!"unknown op in a composed change");
            }
        }
    }
    qsort(out, nout, sizeof *out, compare_u64);
    for (size_t i = nout; i-- > 0;) {
        memmove(&array[out[i]], &array[out[i] + 1], (len - out[i] - 1) * sizeof *array);
        len--;
    }
    qsort(in, nin, sizeof *in, compare_u64);
    for (size_t i = 0; i < nin; i++) {
        FUZZ_ASSERT(in[i] <= len);
        memmove(&array[in[i] + 1], &array[in[i]], (len - in[i]) * sizeof *array);
        array[in[i]] = m->values[in[i]];
        len++;
    }
    FUZZ_ASSERT(len == m->count);
    FUZZ_ASSERT(len == 0 || memcmp(array, m->values, len * sizeof *array) == 0);

    /* Every modified original that survives is reported, and nothing else. */
    for (size_t i = 0; i < m->count; i++) {
        const uint64_t v = m->values[i];
        if (v < FIRST_INSERTED) FUZZ_ASSERT(reported_modified[v] == m->modified[v]);
    }

    /* Fewest moves: survivors - longest increasing subsequence of their origins (O(n^2)). */
    size_t lis[MAX_ELEMENTS], best = 0, survivors = 0;
    uint64_t origins[MAX_ELEMENTS];
    for (size_t i = 0; i < m->count; i++) {
        if (m->values[i] < FIRST_INSERTED) origins[survivors++] = m->values[i];
    }
    for (size_t i = 0; i < survivors; i++) {
        lis[i] = 1;
        for (size_t j = 0; j < i; j++) {
            if (origins[j] < origins[i] && lis[j] + 1 > lis[i]) lis[i] = lis[j] + 1;
        }
        if (lis[i] > best) best = lis[i];
    }
    FUZZ_ASSERT(moved == survivors - best);
}

static void finish_and_check(cobs_batch *batch, const model *m, fuzz_allocator *alloc, bool fail) {
    static cobs_run runs[4 * MAX_ELEMENTS];
    size_t count = 0;
    alloc->fail_next = fail;
    cobs_status st = cobs_batch_finish(batch, NULL, 0, &count);
    if (st == COBS_NO_MEMORY) {
        FUZZ_ASSERT(fail);
        st = cobs_batch_finish(batch, NULL, 0, &count);
    }
    alloc->fail_next = 0;
    FUZZ_ASSERT(st == COBS_OK || st == COBS_BUFFER_TOO_SMALL);
    FUZZ_ASSERT(count <= 4 * MAX_ELEMENTS);
    if (count > 0) {
        size_t again = 0;
        runs[0].op = 99; /* must stay untouched by a too-small finish */
        FUZZ_ASSERT(cobs_batch_finish(batch, runs, count - 1, &again) == COBS_BUFFER_TOO_SMALL);
        FUZZ_ASSERT(again == count && runs[0].op == 99);
    }
    size_t written = 0;
    FUZZ_ASSERT(cobs_batch_finish(batch, runs, 4 * MAX_ELEMENTS, &written) == COBS_OK);
    FUZZ_ASSERT(written == count);
    check_change(runs, written, m);
}

enum { E_INSERT, E_REMOVE, E_MOVE, E_MODIFY, E_FINISH, E_FAIL_NEXT, E_INVALID, E_REMOVE_NO_ORIGINS, E_PERMUTE, E_COUNT };

static void run_edits(const uint8_t *data, size_t size) {
    if (size < 1) return;
    fuzz_allocator alloc = {0, 0};
    const cobs_allocator allocator = {fuzz_allocate, fuzz_deallocate, &alloc};
    static model m;
    memset(&m, 0, sizeof m);
    m.old_count = data[0] % 48;
    m.count = (size_t)m.old_count;
    m.next_id = FIRST_INSERTED;
    for (size_t i = 0; i < m.count; i++) m.values[i] = i;

    cobs_batch *batch = NULL;
    FUZZ_ASSERT(cobs_batch_create(m.old_count, &allocator, &batch) == COBS_OK);
    bool fail = false; /* the next edit runs with a failing allocator */
    for (size_t at = 1; at + 3 <= size; at += 3) {
        const uint8_t op = data[at] % E_COUNT, a = data[at + 1], c = data[at + 2];
        alloc.fail_next = fail;
        switch (op) {
        case E_INSERT: {
            const size_t index = a % (m.count + 1), n = 1 + c % 4;
            if (m.count + n > MAX_ELEMENTS) break; /* keep the model bounded */
            const cobs_status st = cobs_batch_insert(batch, index, n);
            if (st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(fail);
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            memmove(&m.values[index + n], &m.values[index], (m.count - index) * sizeof *m.values);
            for (size_t i = 0; i < n; i++) m.values[index + i] = m.next_id++;
            m.count += n;
            break;
        }
        case E_REMOVE:
        case E_REMOVE_NO_ORIGINS: {
            if (m.count == 0) break;
            const size_t index = a % m.count, room = m.count - index;
            const size_t n = 1 + c % (room < 4 ? room : 4);
            uint64_t origins[4] = {7, 7, 7, 7};
            const cobs_status st =
                cobs_batch_remove(batch, index, n, op == E_REMOVE ? origins : NULL);
            if (st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(fail && origins[0] == 7);
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            for (size_t i = 0; i < n && op == E_REMOVE; i++) {
                const uint64_t v = m.values[index + i];
                FUZZ_ASSERT(origins[i] == (v < FIRST_INSERTED ? v : UINT64_MAX));
            }
            memmove(&m.values[index], &m.values[index + n], (m.count - index - n) * sizeof *m.values);
            m.count -= n;
            break;
        }
        case E_MOVE: {
            if (m.count == 0) break;
            const size_t from = a % m.count, to = c % m.count;
            const cobs_status st = cobs_batch_move(batch, from, to);
            if (st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(fail && from != to);
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            const uint64_t v = m.values[from];
            memmove(&m.values[from], &m.values[from + 1], (m.count - from - 1) * sizeof *m.values);
            memmove(&m.values[to + 1], &m.values[to], (m.count - 1 - to) * sizeof *m.values);
            m.values[to] = v;
            break;
        }
        case E_MODIFY: {
            if (m.count == 0) break;
            const size_t index = a % m.count;
            const cobs_status st = cobs_batch_modify(batch, index);
            if (st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(fail);
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            if (m.values[index] < FIRST_INSERTED) m.modified[m.values[index]] = true;
            break;
        }
        case E_PERMUTE: {
            /* A shuffle seeded by (a, c), reversed when c is odd. */
            uint64_t permutation[MAX_ELEMENTS];
            for (size_t i = 0; i < m.count; i++) permutation[i] = i;
            uint32_t state = (uint32_t)a << 8 | c;
            for (size_t i = m.count; i > 1; i--) {
                state = state * 1664525u + 1013904223u;
                const size_t j = (state >> 8) % i;
                const uint64_t t = permutation[i - 1];
                permutation[i - 1] = permutation[j];
                permutation[j] = t;
            }
            if (c & 1) {
                for (size_t i = 0; i < m.count; i++) permutation[i] = m.count - 1 - i;
            }
            const cobs_status st = cobs_batch_permute(batch, permutation, m.count);
            if (st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(fail && m.count > 0);
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            uint64_t before[MAX_ELEMENTS];
            memcpy(before, m.values, m.count * sizeof *m.values);
            for (size_t i = 0; i < m.count; i++) m.values[i] = before[permutation[i]];
            break;
        }
        case E_FINISH:
            finish_and_check(batch, &m, &alloc, fail);
            break;
        case E_FAIL_NEXT:
            fail = !fail;
            break;
        case E_INVALID: {
            const uint64_t n = m.count;
            FUZZ_ASSERT(cobs_batch_insert(batch, n + 1 + a, 1) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_insert(batch, 0, 0) == COBS_INVALID_ARGUMENT);
            /* one more than fits (for n == 0 this is 0 elements, also invalid) */
            FUZZ_ASSERT(cobs_batch_insert(batch, 0, UINT64_MAX - n + 1) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_remove(batch, n, 1, NULL) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_remove(batch, 0, n + 1, NULL) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_remove(batch, 1, UINT64_MAX, NULL) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_remove(batch, 0, 0, NULL) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_move(batch, n, 0) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_move(batch, 0, n + c) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_modify(batch, n + a) == COBS_INVALID_ARGUMENT);
            uint64_t repeated[MAX_ELEMENTS + 1] = {0};   /* all zeros: a repeat once n >= 2 */
            FUZZ_ASSERT(cobs_batch_permute(batch, repeated, n + 1) == COBS_INVALID_ARGUMENT);
            if (n >= 2) {
                /* Finding the repeat needs scratch memory: a failing allocator answers first. */
                const cobs_status st = cobs_batch_permute(batch, repeated, n);
                FUZZ_ASSERT(st == COBS_INVALID_ARGUMENT || (fail && st == COBS_NO_MEMORY));
            }
            if (n >= 1) FUZZ_ASSERT(cobs_batch_permute(batch, NULL, n) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_finish(batch, NULL, 1, NULL) == COBS_INVALID_ARGUMENT);
            size_t count = 0;
            FUZZ_ASSERT(cobs_batch_finish(batch, NULL, 1, &count) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_batch_finish(NULL, NULL, 0, &count) == COBS_INVALID_ARGUMENT);
            break;
        }
        }
        alloc.fail_next = 0;
        if (op != E_FAIL_NEXT) fail = false;
        FUZZ_ASSERT(cobs_batch_count(batch) == m.count);
    }
    finish_and_check(batch, &m, &alloc, false);
    cobs_batch_destroy(batch);
    FUZZ_ASSERT(alloc.live_bytes == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    switch (data[0] % 3) {
    case 0: run_raw(data + 1, size - 1); break;
    case 1: run_compact(data + 1, size - 1); break;
    default: run_edits(data + 1, size - 1); break;
    }
    return 0;
}
