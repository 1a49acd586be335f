/*
** ObserveCore C core: the plain-C smoke test of the array core (cobs_changes.h and
** cobs_positions.h), every public function and its error paths, for scripts/c-sanitizers.sh. It is
** linked into c_smoke_test.c's program, whose main calls c_smoke_arrays(). The Swift suites
** (ChangesEncoderTests, BatchComposerTests, PositionIndexTests) are the main tests; this one runs
** the same paths under ASan/UBSan and valgrind, with exactly-sized heap buffers so that any read
** past the runs or the ring is reported.
*/

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cobserve.h"

int c_smoke_arrays(void);

static int failures = 0;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond);                     \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define EXPECT_STATUS(expr, expected)                                                              \
    do {                                                                                           \
        cobs_status got_ = (expr);                                                                 \
        if (got_ != (expected)) {                                                                  \
            fprintf(stderr, "%s:%d: FAILED: %s returned %s, expected %s\n", __FILE__, __LINE__,   \
                    #expr, cobs_status_name(got_), cobs_status_name(expected));                    \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* NULL through volatiles, so the compiler does not warn about passing NULL to _Nonnull. */
static void *volatile null_pointer = NULL;
static void *(*volatile null_allocate)(void *, size_t) = NULL;

typedef struct smoke_allocator {
    size_t live;
    long fail_after; /* fail once this many more allocations succeeded; -1 = never */
} smoke_allocator;

static void *smoke_allocate(void *user, size_t size) {
    smoke_allocator *s = user;
    if (s->fail_after == 0) return NULL;
    if (s->fail_after > 0) s->fail_after--;
    void *p = malloc(size);
    if (p != NULL) s->live += size;
    return p;
}

static void smoke_deallocate(void *user, void *pointer, size_t size) {
    smoke_allocator *s = user;
    if (pointer == NULL) return;
    s->live -= size;
    free(pointer);
}

static cobs_run run(uint32_t op, uint64_t start, uint64_t length, uint64_t to) {
    cobs_run r = {op, 0, start, length, to};
    return r;
}

/* validate on an exactly-sized heap copy, so ASan sees any read past `count`. */
static cobs_status validate_exact(const cobs_run *runs, size_t count, uint64_t old_count, uint64_t new_count) {
    cobs_run *copy = malloc(count ? count * sizeof *copy : 1);
    if (count) memcpy(copy, runs, count * sizeof *copy);
    const cobs_status st = cobs_changes_validate(count ? copy : NULL, count, old_count, new_count);
    free(copy);
    return st;
}

static void test_normalize_and_validate(void) {
    cobs_run runs[] = {run(4, 9, 1, 0), run(3, 2, 1, 0), run(2, 5, 1, 0), run(1, 9, 1, 0),
                       run(2, 6, 2, 0), run(1, 8, 1, 0)};
    size_t n = 0;
    EXPECT_STATUS(cobs_changes_normalize(runs, 6, &n), COBS_OK);
    EXPECT(n == 4);
    EXPECT(runs[0].op == 1 && runs[0].start == 8 && runs[0].length == 2);
    EXPECT(runs[1].op == 2 && runs[1].start == 5 && runs[1].length == 3);
    EXPECT(runs[2].op == 3 && runs[3].op == 4);
    EXPECT_STATUS(validate_exact(runs, n, 10, 11), COBS_OK);
    EXPECT_STATUS(validate_exact(runs, n, 10, 10), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_changes_normalize(null_pointer, 1, &n), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_changes_normalize(runs, 1, null_pointer), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_changes_validate(null_pointer, 1, 0, 0), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_changes_validate(null_pointer, 0, 3, 3), COBS_OK);

    /* Each malformed record, on its own. */
    const cobs_run bad[] = {run(0, 0, 1, 0), run(5, 0, 1, 0), run(1, 0, 0, 0), run(2, 0, 1, 1),
                            run(2, UINT64_MAX, 1, 0), run(3, 0, 2, UINT64_MAX)};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cobs_run copy = bad[i];
        EXPECT_STATUS(cobs_changes_normalize(&copy, 1, &n), COBS_INVALID_ARGUMENT);
        EXPECT(memcmp(&copy, &bad[i], sizeof copy) == 0);
        EXPECT_STATUS(validate_exact(&bad[i], 1, 10, 10), COBS_INVALID_ARGUMENT);
    }
    cobs_run reserved = run(4, 0, 1, 0);
    reserved.reserved_ = 1;
    EXPECT_STATUS(validate_exact(&reserved, 1, 1, 1), COBS_INVALID_ARGUMENT);

    /* Many moves: the sorted path of validate (more than it checks pairwise). */
    cobs_run moves[40];
    for (uint64_t i = 0; i < 40; i++) moves[i] = run(3, i, 1, 39 - i);
    EXPECT_STATUS(validate_exact(moves, 40, 40, 40), COBS_OK);
    moves[20].to = moves[21].to;
    EXPECT_STATUS(validate_exact(moves, 40, 40, 40), COBS_INVALID_ARGUMENT);
}

static void test_batch(void) {
    cobs_batch *b = NULL;
    EXPECT_STATUS(cobs_batch_create(10, NULL, &b), COBS_OK);
    EXPECT_STATUS(cobs_batch_insert(b, 3, 2), COBS_OK);    /* 0 1 2 a b 3 ... 9 */
    EXPECT_STATUS(cobs_batch_move(b, 11, 0), COBS_OK);      /* 9 0 1 2 a b 3 ... 8 */
    uint64_t origins[3] = {0, 0, 0};
    EXPECT_STATUS(cobs_batch_remove(b, 3, 3, origins), COBS_OK); /* 2 a b */
    EXPECT(origins[0] == 2 && origins[1] == UINT64_MAX && origins[2] == UINT64_MAX);
    EXPECT_STATUS(cobs_batch_modify(b, 1), COBS_OK);        /* old 0 */
    EXPECT(cobs_batch_count(b) == 9);
    size_t count = 0;
    EXPECT_STATUS(cobs_batch_finish(b, NULL, 0, &count), COBS_BUFFER_TOO_SMALL);
    EXPECT(count == 3);
    cobs_run *out = malloc(count * sizeof *out);
    EXPECT_STATUS(cobs_batch_finish(b, out, count, &count), COBS_OK);
    EXPECT(out[0].op == COBS_RUN_REMOVE && out[0].start == 2 && out[0].length == 1);
    EXPECT(out[1].op == COBS_RUN_MOVE && out[1].start == 9 && out[1].to == 0);
    EXPECT(out[2].op == COBS_RUN_MODIFY && out[2].start == 1);
    EXPECT_STATUS(validate_exact(out, count, 10, 9), COBS_OK);
    free(out);

    EXPECT_STATUS(cobs_batch_insert(b, 10, 1), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_batch_insert(b, 0, 0), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_batch_insert(b, 0, UINT64_MAX), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_batch_remove(b, 8, 2, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_batch_move(b, 9, 0), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_batch_modify(b, 9), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_batch_finish(b, NULL, 1, &count), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_batch_finish(b, NULL, 0, null_pointer), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_batch_insert(null_pointer, 0, 1), COBS_INVALID_ARGUMENT);
    EXPECT(cobs_batch_count(null_pointer) == 0);
    cobs_batch_destroy(b);
    cobs_batch_destroy(NULL);

    /* Allocator errors. */
    cobs_allocator broken = {null_allocate, smoke_deallocate, NULL};
    b = (cobs_batch *)&broken;
    EXPECT_STATUS(cobs_batch_create(1, &broken, &b), COBS_INVALID_ARGUMENT);
    EXPECT(b == NULL);
    smoke_allocator state = {0, 0};
    cobs_allocator counting = {smoke_allocate, smoke_deallocate, &state};
    EXPECT_STATUS(cobs_batch_create(1, &counting, &b), COBS_NO_MEMORY);
    state.fail_after = 1;
    EXPECT_STATUS(cobs_batch_create(1, &counting, &b), COBS_NO_MEMORY);
    EXPECT(state.live == 0);
    state.fail_after = -1;
    EXPECT_STATUS(cobs_batch_create(100, &counting, &b), COBS_OK);
    for (uint64_t i = 0; i < 3; i++) EXPECT_STATUS(cobs_batch_insert(b, 10 + 10 * i, 1), COBS_OK);
    state.fail_after = 0;
    EXPECT_STATUS(cobs_batch_insert(b, 50, 1), COBS_NO_MEMORY);
    EXPECT_STATUS(cobs_batch_modify(b, 50), COBS_NO_MEMORY);
    EXPECT_STATUS(cobs_batch_finish(b, NULL, 0, &count), COBS_NO_MEMORY);
    state.fail_after = -1;
    EXPECT_STATUS(cobs_batch_finish(b, NULL, 0, &count), COBS_BUFFER_TOO_SMALL);
    EXPECT(count == 3 && cobs_batch_count(b) == 103);
    cobs_batch_destroy(b);
    EXPECT(state.live == 0);
}

static void test_positions(void) {
    const uint32_t mask = 63;
    uintptr_t *ring = calloc((size_t)mask + 1, sizeof *ring); /* exactly the ring: ASan-checked */
    cobs_positions *pos = NULL;
    EXPECT_STATUS(cobs_positions_create(0, 42, NULL, &pos), COBS_OK);
    for (uint32_t s = 0; s < 40; s++) {
        ring[s] = 0x1000 + 16 * (s % 8);
        EXPECT_STATUS(cobs_positions_insert(pos, ring, mask, ring[s], s), COBS_OK);
    }
    EXPECT(cobs_positions_count(pos) == 40);
    EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_OK);
    uint32_t slots[8];
    size_t count = 0;
    EXPECT_STATUS(cobs_positions_lookup(pos, ring, mask, 0x1000, slots, 8, &count), COBS_OK);
    EXPECT(count == 5);
    EXPECT_STATUS(cobs_positions_lookup(pos, ring, mask, 0x1000, slots, 2, &count), COBS_BUFFER_TOO_SMALL);
    EXPECT(count == 5);
    ring[0] = 0x9999; /* overwritten before the removal: allowed */
    EXPECT_STATUS(cobs_positions_remove(pos, ring, mask, 0x1000, 0), COBS_OK);
    EXPECT_STATUS(cobs_positions_remove(pos, ring, mask, 0x1000, 0), COBS_NOT_FOUND);
    ring[50] = 0x1000;
    EXPECT_STATUS(cobs_positions_move(pos, mask, 0x1000, 8, 50), COBS_OK);
    ring[8] = 0;
    EXPECT_STATUS(cobs_positions_move(pos, mask, 0x1000, 8, 51), COBS_NOT_FOUND);
    EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_OK);
    EXPECT(cobs_positions_max_displacement(pos, ring, mask) < 64);

    EXPECT_STATUS(cobs_positions_insert(pos, ring, mask, 0, 60), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_positions_insert(pos, ring, mask, 0x1010, 64), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_positions_insert(pos, ring, 62, 0x1010, 1), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_positions_insert(pos, ring, 31, 0x1010, 1), COBS_INVALID_ARGUMENT); /* ring too small */
    EXPECT_STATUS(cobs_positions_lookup(pos, ring, 31, 0x1010, slots, 8, &count), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_positions_insert(null_pointer, ring, mask, 0x1010, 1), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_positions_rebuild(pos, ring, mask, 64, 0), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_positions_rebuild(pos, ring, mask, 0, 65), COBS_INVALID_ARGUMENT);

    /* The ring changed behind the index's back. */
    const uintptr_t saved = ring[9];
    ring[9] = 0x4444;
    fprintf(stderr, "(the next cobs_positions lines are expected)\n");
    EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_CORRUPT);
    ring[9] = saved;

    /* Rebuild from a wrapped range, then clear. */
    for (uint32_t i = 0; i < 64; i++) ring[i] = 0x2000 + 16 * i;
    EXPECT_STATUS(cobs_positions_rebuild(pos, ring, mask, 60, 10), COBS_OK);
    EXPECT(cobs_positions_count(pos) == 10);
    EXPECT_STATUS(cobs_positions_lookup(pos, ring, mask, 0x2000 + 16 * 2, slots, 8, &count), COBS_OK);
    EXPECT(count == 1 && slots[0] == 2);
    EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_OK);

    /* A run of insertions (slots 6..19, after the rebuilt 60..5); a run that meets a recorded
    ** pair (58 and 59 are new, 60 is recorded) removes what it added and leaves the index as it was. */
    EXPECT_STATUS(cobs_positions_insert_run(pos, ring, mask, 6, 14), COBS_OK);
    EXPECT(cobs_positions_count(pos) == 24);
    EXPECT_STATUS(cobs_positions_insert_run(pos, ring, mask, 58, 4), COBS_INVALID_ARGUMENT);
    EXPECT(cobs_positions_count(pos) == 24);
    EXPECT_STATUS(cobs_positions_lookup(pos, ring, mask, 0x2000 + 16 * 58, slots, 8, &count), COBS_OK);
    EXPECT(count == 0);
    EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_OK);
    EXPECT_STATUS(cobs_positions_insert_run(pos, ring, mask, 20, 65), COBS_INVALID_ARGUMENT); /* more than the ring */
    cobs_positions_clear(pos);
    EXPECT(cobs_positions_count(pos) == 0 && cobs_positions_bytes(pos) > 0);

    /* Two block moves into the log, then folded into the entries (slot 20's element is also in
    ** slot 5, so a duplicate record is folded too). */
    memset(ring, 0, ((size_t)mask + 1) * sizeof *ring);
    for (uint32_t i = 0; i < 30; i++) ring[i] = 0x3000 + 16 * (i == 20 ? 5 : i);
    EXPECT_STATUS(cobs_positions_rebuild(pos, ring, mask, 0, 30), COBS_OK);
    memmove(ring + 15, ring + 10, 20 * sizeof *ring);   /* [10, 30) up by 5 */
    for (uint32_t i = 10; i < 15; i++) ring[i] = 0;
    EXPECT_STATUS(cobs_positions_shift(pos, mask, 10, 20, 5), COBS_OK);
    memmove(ring + 3, ring, 10 * sizeof *ring);          /* [0, 10) up by 3 */
    for (uint32_t i = 0; i < 3; i++) ring[i] = 0;
    EXPECT_STATUS(cobs_positions_shift(pos, mask, 0, 10, 3), COBS_OK);
    EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_OK);
    EXPECT_STATUS(cobs_positions_fold(pos), COBS_OK);
    EXPECT_STATUS(cobs_positions_fold(pos), COBS_OK);   /* empty log: nothing to do */
    EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_OK);
    EXPECT_STATUS(cobs_positions_lookup(pos, ring, mask, 0x3000 + 16 * 29, slots, 8, &count), COBS_OK);
    EXPECT(count == 1 && slots[0] == 34);
    EXPECT_STATUS(cobs_positions_lookup(pos, ring, mask, 0x3000 + 16 * 5, slots, 8, &count), COBS_OK);
    EXPECT(count == 2 && ((slots[0] == 8 && slots[1] == 25) || (slots[0] == 25 && slots[1] == 8)));
    EXPECT_STATUS(cobs_positions_shift(pos, 127, 0, 1, 1), COBS_OK);   /* an empty log takes any ring */
    EXPECT_STATUS(cobs_positions_fold(NULL), COBS_INVALID_ARGUMENT);
    for (uint32_t i = 0; i < 64; i++) ring[i] = 0x2000 + 16 * i;   /* what the checks below expect */
    cobs_positions_destroy(pos);
    cobs_positions_destroy(NULL);

    /* Allocation failures leave the index unchanged. */
    smoke_allocator state = {0, 0};
    cobs_allocator counting = {smoke_allocate, smoke_deallocate, &state};
    EXPECT_STATUS(cobs_positions_create(0, 1, &counting, &pos), COBS_NO_MEMORY);
    EXPECT(pos == NULL);
    state.fail_after = -1;
    EXPECT_STATUS(cobs_positions_create(0, 1, &counting, &pos), COBS_OK);
    for (uint32_t s = 0; s < 14; s++) EXPECT_STATUS(cobs_positions_insert(pos, ring, mask, ring[s], s), COBS_OK);
    state.fail_after = 0;
    EXPECT_STATUS(cobs_positions_insert(pos, ring, mask, ring[14], 14), COBS_NO_MEMORY);
    EXPECT_STATUS(cobs_positions_rebuild(pos, ring, mask, 0, 64), COBS_NO_MEMORY);
    EXPECT(cobs_positions_count(pos) == 14);
    EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_OK);
    state.fail_after = -1;
    cobs_positions_destroy(pos);
    EXPECT(state.live == 0);

    cobs_allocator broken = {null_allocate, smoke_deallocate, NULL};
    EXPECT_STATUS(cobs_positions_create(0, 1, &broken, &pos), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_positions_create(0, 1, NULL, null_pointer), COBS_INVALID_ARGUMENT);
    free(ring);
}

/* A rebuild large enough (2^20 buckets) to insert partition by partition (positions.c, REBUILD IN
** PARTITIONS), from a wrapped ring with copies, and the same rebuild without its scratch memory. */
static void test_partitioned_rebuild(void) {
    const uint32_t mask = (1u << 20) - 1, head = mask - 4999;
    const size_t n = 700000;
    uintptr_t *ring = calloc((size_t)mask + 1, sizeof *ring);
    EXPECT(ring != NULL);
    if (ring == NULL) return;
    /* Elements 0..<600,000; 0..<50,000 twice; element 3 another 50,000 times. */
    for (size_t i = 0; i < n; i++) ring[(head + i) & mask] = 0x7f0000000000u + 16u * (i < 650000 ? i % 600000 : 3);
    uint32_t slots[4];
    size_t count = 0;
    smoke_allocator state = {0, -1};
    cobs_allocator counting = {smoke_allocate, smoke_deallocate, &state};
    for (int scratch = 1; scratch >= 0; scratch--) {
        cobs_positions *pos = NULL;
        EXPECT_STATUS(cobs_positions_create(n, 7, &counting, &pos), COBS_OK);
        if (pos == NULL) break;
        /* Without scratch: every allocation fails from here on, the scratch first, and the plain
        ** loop runs (over distinct elements: no record to allocate either). */
        if (!scratch) {
            for (uint32_t i = 0; i < n; i++) ring[(head + i) & mask] = 0x7f0000000000u + 16u * i;
            state.fail_after = 0;
        }
        EXPECT_STATUS(cobs_positions_rebuild(pos, ring, mask, head, n), COBS_OK);
        state.fail_after = -1;
        EXPECT(cobs_positions_count(pos) == n);
        EXPECT_STATUS(cobs_positions_check_invariants(pos, ring, mask), COBS_OK);
        EXPECT_STATUS(cobs_positions_lookup(pos, ring, mask, 0x7f0000000000u + 16u * 3, slots, 4, &count),
                      scratch ? COBS_BUFFER_TOO_SMALL : COBS_OK);
        EXPECT(count == (scratch ? 50002u : 1u));
        EXPECT_STATUS(cobs_positions_lookup(pos, ring, mask, 0x7f0000000000u + 16u * 599999u, slots, 4, &count), COBS_OK);
        EXPECT(count == 1 && slots[0] == ((head + 599999u) & mask));
        cobs_positions_destroy(pos);
    }
    EXPECT(state.live == 0);
    free(ring);
}

int c_smoke_arrays(void) {
    test_normalize_and_validate();
    test_batch();
    test_positions();
    test_partitioned_rebuild();
    return failures;
}
