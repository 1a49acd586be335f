/*
** ObserveCore C core: a plain-C smoke test of every public function, error paths included, for
** scripts/c-sanitizers.sh (AddressSanitizer + UndefinedBehaviorSanitizer) and valgrind. The Swift
** suite in Tests/CObserveCoreTests is the main test; this one exists so the C core can be checked
** under sanitizers without Swift, and so the invariant checker can be shown to catch corruption
** (it includes the private layout header to corrupt a table on purpose).
**
** Exit status: 0 when every check passed, 1 otherwise (each failure is printed).
*/

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cobs_barrier.h"
#include "cobs_read_sections.h"
#include "cobs_registry.h"
#include "registry_layout.h" /* private: only for the corruption tests */

static int failures = 0;

/* The array core's smoke test, in c_smoke_arrays.c; returns its number of failed checks. */
int c_smoke_arrays(void);

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

static cobs_key make_key(uintptr_t object, uint32_t key, uintptr_t context) {
    cobs_key k = {object, context, key, 0};
    return k;
}

/* NULL through volatiles, so the compiler does not warn about passing NULL to _Nonnull. */
static void *volatile null_pointer = NULL;
static void *(*volatile null_allocate)(void *, size_t) = NULL;

/* ------------------------------------------------------------------------------------------- */
/* A counting allocator that fails on demand                                                   */
/* ------------------------------------------------------------------------------------------- */

typedef struct test_allocator_state {
    size_t allocations, deallocations;
    size_t bytes_live;
    long fail_after; /* fail once this many more allocations succeeded; -1 = never */
} test_allocator_state;

static void *test_allocate(void *user, size_t size) {
    test_allocator_state *s = user;
    if (s->fail_after == 0) return NULL;
    if (s->fail_after > 0) s->fail_after--;
    void *p = malloc(size);
    if (p != NULL) {
        s->allocations++;
        s->bytes_live += size;
    }
    return p;
}

static void test_deallocate(void *user, void *pointer, size_t size) {
    test_allocator_state *s = user;
    if (pointer == NULL) return;
    s->deallocations++;
    s->bytes_live -= size;
    free(pointer);
}

/* ------------------------------------------------------------------------------------------- */

static void test_status_names(void) {
    EXPECT(strcmp(cobs_status_name(COBS_OK), "COBS_OK") == 0);
    EXPECT(strcmp(cobs_status_name(COBS_EXISTS), "COBS_EXISTS") == 0);
    EXPECT(strcmp(cobs_status_name(COBS_NOT_FOUND), "COBS_NOT_FOUND") == 0);
    EXPECT(strcmp(cobs_status_name(COBS_NO_MEMORY), "COBS_NO_MEMORY") == 0);
    EXPECT(strcmp(cobs_status_name(COBS_INVALID_ARGUMENT), "COBS_INVALID_ARGUMENT") == 0);
    EXPECT(strcmp(cobs_status_name(COBS_BUFFER_TOO_SMALL), "COBS_BUFFER_TOO_SMALL") == 0);
    EXPECT(strcmp(cobs_status_name(COBS_CORRUPT), "COBS_CORRUPT") == 0);
    EXPECT(cobs_status_name((cobs_status)99) != NULL);
}

static void test_create_errors(void) {
    cobs_registry *reg = (cobs_registry *)&reg; /* must be reset to NULL on failure */
    EXPECT_STATUS(cobs_registry_create(0, null_pointer), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_create_with(0, 1, NULL, null_pointer), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_create(SIZE_MAX, &reg), COBS_INVALID_ARGUMENT);
    EXPECT(reg == NULL);

    cobs_allocator broken = {test_allocate, test_deallocate, NULL};
    broken.allocate = null_allocate;
    EXPECT_STATUS(cobs_registry_create_with(0, 1, &broken, &reg), COBS_INVALID_ARGUMENT);

    test_allocator_state s = {0, 0, 0, 0};
    cobs_allocator failing = {test_allocate, test_deallocate, &s};
    EXPECT_STATUS(cobs_registry_create_with(0, 1, &failing, &reg), COBS_NO_MEMORY);
    EXPECT(reg == NULL);
    s.fail_after = 1; /* the struct succeeds, the backing array fails */
    EXPECT_STATUS(cobs_registry_create_with(100, 1, &failing, &reg), COBS_NO_MEMORY);
    EXPECT(reg == NULL);
    EXPECT(s.bytes_live == 0 && s.allocations == s.deallocations);

    cobs_registry_destroy(NULL); /* no-op */
}

static void test_argument_validation(void) {
    cobs_registry *reg = NULL;
    EXPECT_STATUS(cobs_registry_create(0, &reg), COBS_OK);
    const cobs_key good = make_key(0x1000, 1, 0);
    const cobs_key zero_object = make_key(0, 1, 0);
    cobs_key reserved = good;
    reserved.reserved_ = 1;
    cobs_slot slot = 0;
    size_t count = 0;
    cobs_key keys[4];

    EXPECT_STATUS(cobs_registry_insert(NULL, good, 1, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_insert(reg, zero_object, 1, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_insert(reg, reserved, 1, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_find(NULL, good, &slot), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_find(reg, good, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_find(reg, zero_object, &slot), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_find(reg, reserved, &slot), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_remove(NULL, good, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_remove(reg, zero_object, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_remove(reg, reserved, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_lookup(NULL, 0x1000, 1, &slot, 1, &count), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_lookup(reg, 0, 1, &slot, 1, &count), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_lookup(reg, 0x1000, 1, NULL, 1, &count), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_lookup(reg, 0x1000, 1, &slot, 1, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_object_entries(NULL, 0x1000, keys, NULL, 4, &count),
                  COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_object_entries(reg, 0, keys, NULL, 4, &count),
                  COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_object_entries(reg, 0x1000, NULL, NULL, 4, &count),
                  COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_object_entries(reg, 0x1000, keys, NULL, 4, NULL),
                  COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_remove_object(NULL, 0x1000, &slot, 1, &count),
                  COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_remove_object(reg, 0, &slot, 1, &count), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_remove_object(reg, 0x1000, NULL, 1, &count),
                  COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_remove_object(reg, 0x1000, &slot, 1, NULL),
                  COBS_INVALID_ARGUMENT);
    cobs_registry_stats stats;
    EXPECT_STATUS(cobs_registry_stats_get(NULL, &stats), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_stats_get(reg, NULL), COBS_INVALID_ARGUMENT);
    EXPECT_STATUS(cobs_registry_check_invariants(NULL), COBS_INVALID_ARGUMENT);
    EXPECT(cobs_registry_count(NULL) == 0);
    EXPECT(cobs_registry_count(reg) == 0); /* none of the above changed anything */
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_OK);
    cobs_registry_destroy(reg);
}

static void test_entries(void) {
    cobs_registry *reg = NULL;
    EXPECT_STATUS(cobs_registry_create_with(0, 42, NULL, &reg), COBS_OK);
    cobs_slot slot = 0, slots[8];
    cobs_key keys[8];
    size_t count = 0;

    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x1000, 1, 0), 10, NULL), COBS_OK);
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x1000, 1, 7), 11, NULL), COBS_OK);
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x1000, 2, 0), 12, NULL), COBS_OK);
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x2000, 1, 0), 20, NULL), COBS_OK);
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x1000, 1, 7), 99, &slot), COBS_EXISTS);
    EXPECT(slot == 11);
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x1000, 1, 7), 99, NULL), COBS_EXISTS);
    EXPECT(cobs_registry_count(reg) == 4);

    EXPECT_STATUS(cobs_registry_find(reg, make_key(0x1000, 2, 0), &slot), COBS_OK);
    EXPECT(slot == 12);
    EXPECT_STATUS(cobs_registry_find(reg, make_key(0x1000, 2, 1), &slot), COBS_NOT_FOUND);
    EXPECT_STATUS(cobs_registry_find(reg, make_key(0x3000, 1, 0), &slot), COBS_NOT_FOUND);

    EXPECT_STATUS(cobs_registry_lookup(reg, 0x1000, 1, slots, 8, &count), COBS_OK);
    EXPECT(count == 2 && ((slots[0] == 10 && slots[1] == 11) || (slots[0] == 11 && slots[1] == 10)));
    EXPECT_STATUS(cobs_registry_lookup(reg, 0x1000, 1, slots, 1, &count), COBS_BUFFER_TOO_SMALL);
    EXPECT(count == 2 && (slots[0] == 10 || slots[0] == 11));
    EXPECT_STATUS(cobs_registry_lookup(reg, 0x1000, 1, NULL, 0, &count), COBS_BUFFER_TOO_SMALL);
    EXPECT(count == 2);
    EXPECT_STATUS(cobs_registry_lookup(reg, 0x1000, 3, NULL, 0, &count), COBS_OK);
    EXPECT(count == 0);

    EXPECT_STATUS(cobs_registry_object_entries(reg, 0x1000, keys, slots, 8, &count), COBS_OK);
    EXPECT(count == 3);
    for (size_t i = 0; i < count; i++) {
        EXPECT(keys[i].object == 0x1000);
        cobs_slot found = 0;
        EXPECT_STATUS(cobs_registry_find(reg, keys[i], &found), COBS_OK);
        EXPECT(found == slots[i]);
    }
    EXPECT_STATUS(cobs_registry_object_entries(reg, 0x1000, NULL, slots, 8, &count), COBS_OK);
    EXPECT_STATUS(cobs_registry_object_entries(reg, 0x1000, keys, NULL, 2, &count),
                  COBS_BUFFER_TOO_SMALL);
    EXPECT(count == 3);
    EXPECT_STATUS(cobs_registry_object_entries(reg, 0x9000, NULL, NULL, 0, &count), COBS_OK);
    EXPECT(count == 0);

    EXPECT_STATUS(cobs_registry_remove_object(reg, 0x1000, slots, 2, &count),
                  COBS_BUFFER_TOO_SMALL);
    EXPECT(count == 3 && cobs_registry_count(reg) == 4);
    EXPECT_STATUS(cobs_registry_remove_object(reg, 0x1000, NULL, 0, &count),
                  COBS_BUFFER_TOO_SMALL);
    EXPECT_STATUS(cobs_registry_remove_object(reg, 0x1000, slots, 3, &count), COBS_OK);
    EXPECT(count == 3 && cobs_registry_count(reg) == 1);
    EXPECT(slots[0] + slots[1] + slots[2] == 10 + 11 + 12);
    EXPECT_STATUS(cobs_registry_remove_object(reg, 0x1000, NULL, 0, &count), COBS_OK);
    EXPECT(count == 0);
    EXPECT_STATUS(cobs_registry_find(reg, make_key(0x2000, 1, 0), &slot), COBS_OK);
    EXPECT(slot == 20);

    EXPECT_STATUS(cobs_registry_remove(reg, make_key(0x2000, 1, 1), &slot), COBS_NOT_FOUND);
    slot = 0;
    EXPECT_STATUS(cobs_registry_remove(reg, make_key(0x2000, 1, 0), &slot), COBS_OK);
    EXPECT(slot == 20 && cobs_registry_count(reg) == 0);
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x2000, 1, 0), 21, NULL), COBS_OK);
    EXPECT_STATUS(cobs_registry_remove(reg, make_key(0x2000, 1, 0), NULL), COBS_OK);

    cobs_registry_stats stats;
    EXPECT_STATUS(cobs_registry_stats_get(reg, &stats), COBS_OK);
    EXPECT(stats.count == 0 && stats.capacity == 16 && reg->seed == 42);
    EXPECT(stats.max_displacement == 0 && stats.total_displacement == 0);
    cobs_registry_destroy(reg);
}

static void test_growth_shrink_and_allocation_failure(void) {
    test_allocator_state s = {0, 0, 0, -1};
    cobs_allocator allocator = {test_allocate, test_deallocate, &s};
    cobs_registry *reg = NULL;
    EXPECT_STATUS(cobs_registry_create_with(0, 7, &allocator, &reg), COBS_OK);
    enum { N = 3000 }; /* 3000 > 2048 * 3/4: capacity 4096 */
    for (uint32_t i = 0; i < N; i++) {
        EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x10000 + 16 * (uintptr_t)i, i % 3, i), i,
                                           NULL),
                      COBS_OK);
    }
    cobs_registry_stats stats;
    EXPECT_STATUS(cobs_registry_stats_get(reg, &stats), COBS_OK);
    EXPECT(stats.count == N && stats.capacity == 4096);
    EXPECT(stats.max_displacement < 64);
    for (uint32_t i = 0; i < N; i++) {
        cobs_slot slot = 0;
        EXPECT_STATUS(cobs_registry_find(reg, make_key(0x10000 + 16 * (uintptr_t)i, i % 3, i), &slot),
                      COBS_OK);
        EXPECT(slot == i);
    }

    /* Fill to the growth threshold, then make the growth fail. */
    while (cobs_registry_count(reg) < 3072) {
        const uint32_t i = (uint32_t)cobs_registry_count(reg);
        EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x10000 + 16 * (uintptr_t)i, i % 3, i), i,
                                           NULL),
                      COBS_OK);
    }
    s.fail_after = 0;
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x7777, 1, 1), 1, NULL), COBS_NO_MEMORY);
    EXPECT(cobs_registry_count(reg) == 3072);
    cobs_slot slot = 0;
    EXPECT_STATUS(cobs_registry_find(reg, make_key(0x7777, 1, 1), &slot), COBS_NOT_FOUND);
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x10000, 0, 0), 5, &slot), COBS_EXISTS);
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_OK);

    /* A failed shrink is silent: every removal still succeeds, the table just stays large. */
    for (uint32_t i = 0; i < 3072 - 100; i++) {
        EXPECT_STATUS(cobs_registry_remove(reg, make_key(0x10000 + 16 * (uintptr_t)i, i % 3, i),
                                           NULL),
                      COBS_OK);
    }
    EXPECT_STATUS(cobs_registry_stats_get(reg, &stats), COBS_OK);
    EXPECT(stats.count == 100 && stats.capacity == 4096);
    s.fail_after = -1;
    const uint32_t i = 3072 - 100;
    EXPECT_STATUS(cobs_registry_remove(reg, make_key(0x10000 + 16 * (uintptr_t)i, i % 3, i), NULL),
                  COBS_OK);
    EXPECT_STATUS(cobs_registry_stats_get(reg, &stats), COBS_OK);
    EXPECT(stats.count == 99 && stats.capacity == 512); /* halved while count < capacity / 8 */
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_OK);
    cobs_registry_destroy(reg);
    EXPECT(s.bytes_live == 0 && s.allocations == s.deallocations);
}

static void test_capacity_hint(void) {
    cobs_registry *reg = NULL;
    cobs_registry_stats stats;
    EXPECT_STATUS(cobs_registry_create_with(12, 1, NULL, &reg), COBS_OK);
    EXPECT_STATUS(cobs_registry_stats_get(reg, &stats), COBS_OK);
    EXPECT(stats.capacity == 16);
    cobs_registry_destroy(reg);
    EXPECT_STATUS(cobs_registry_create_with(13, 1, NULL, &reg), COBS_OK);
    EXPECT_STATUS(cobs_registry_stats_get(reg, &stats), COBS_OK);
    EXPECT(stats.capacity == 32);
    for (uint32_t i = 0; i < 13; i++) {
        EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x100 * ((uintptr_t)i + 1), 0, 0), i, NULL),
                      COBS_OK);
    }
    EXPECT_STATUS(cobs_registry_stats_get(reg, &stats), COBS_OK);
    EXPECT(stats.capacity == 32); /* the hint's entries fit without growing */
    cobs_registry_destroy(reg);
}

static void test_invariant_checker_detects_corruption(void) {
    cobs_registry *reg = NULL;
    EXPECT_STATUS(cobs_registry_create_with(0, 3, NULL, &reg), COBS_OK);
    for (uint32_t i = 0; i < 10; i++) {
        EXPECT_STATUS(cobs_registry_insert(reg, make_key(0x5000, i, 0), i, NULL), COBS_OK);
    }
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_OK);
    fprintf(stderr, "(the COBS_CORRUPT reports below are expected)\n");

    size_t full = 0, empty = 0;
    while (ctrl_is_empty(reg->ctrl[full])) full++;
    while (!ctrl_is_empty(reg->ctrl[empty])) empty++;

    uint8_t saved = reg->ctrl[full];
    reg->ctrl[full] = 0x81; /* neither empty nor a fingerprint */
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_CORRUPT);
    reg->ctrl[full] = (uint8_t)(saved ^ 0x01); /* wrong fingerprint */
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_CORRUPT);
    reg->ctrl[full] = saved;

    reg->count++;
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_CORRUPT);
    reg->count--;

    /* A duplicate of the entry at `full`, placed in the first empty bucket after its run, is
    ** reachable (or, if not, unreachable): the checker must object either way. */
    size_t after = full;
    while (!ctrl_is_empty(reg->ctrl[after])) after = (after + 1) & reg->mask;
    reg->ctrl[after] = reg->ctrl[full];
    reg->keys[after] = reg->keys[full];
    reg->slots[after] = 999;
    reg->count++;
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_CORRUPT);
    reg->ctrl[after] = (uint8_t)COBS_CTRL_EMPTY;
    reg->count--;

    /* An entry two buckets past its home, with the home and the bucket between empty, is
    ** unreachable: pick an object whose home and the next two buckets are all empty. */
    bool planted = false;
    for (uintptr_t object = 0x10; object < 0x10000 && !planted; object += 0x10) {
        const uint64_t ohash = object_hash(reg->seed, object);
        const size_t home = home_of(reg, ohash);
        const size_t at = (home + 2) & reg->mask;
        if (!ctrl_is_empty(reg->ctrl[home]) || !ctrl_is_empty(reg->ctrl[(home + 1) & reg->mask]) ||
            !ctrl_is_empty(reg->ctrl[at])) {
            continue;
        }
        reg->ctrl[at] = fingerprint_of(ohash, 1);
        reg->keys[at] = make_key(object, 1, 0);
        reg->count++;
        EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_CORRUPT);
        reg->ctrl[at] = (uint8_t)COBS_CTRL_EMPTY;
        reg->count--;
        planted = true;
    }
    EXPECT(planted);

    const size_t capacity = reg->capacity;
    reg->capacity = 24;
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_CORRUPT);
    reg->capacity = capacity;
    fprintf(stderr, "(end of expected reports)\n");
    EXPECT_STATUS(cobs_registry_check_invariants(reg), COBS_OK);
    cobs_registry_destroy(reg);
}

static void test_dump(void) {
    cobs_registry *reg = NULL;
    EXPECT_STATUS(cobs_registry_create_with(0, 9, NULL, &reg), COBS_OK);
    EXPECT_STATUS(cobs_registry_insert(reg, make_key(0xBEEF0, 4, 5), 6, NULL), COBS_OK);
    FILE *f = tmpfile();
    EXPECT(f != NULL);
    if (f == NULL) return;
    cobs_registry_dump(reg, f);
    cobs_registry_dump(NULL, f);
    rewind(f);
    char line[512];
    int lines = 0, entries = 0, nulls = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lines++;
        if (strstr(line, "object 0xbeef0") != NULL && strstr(line, "slot 6") != NULL) entries++;
        if (strstr(line, "(null)") != NULL) nulls++;
    }
    fclose(f);
    EXPECT(lines == 1 + 16 + 1);
    EXPECT(entries == 1 && nulls == 1);
    cobs_registry_destroy(reg);
}

static void test_determinism(void) {
    cobs_registry *a = NULL, *b = NULL, *c = NULL;
    EXPECT_STATUS(cobs_registry_create_with(0, 1234, NULL, &a), COBS_OK);
    EXPECT_STATUS(cobs_registry_create_with(0, 1234, NULL, &b), COBS_OK);
    EXPECT_STATUS(cobs_registry_create(0, &c), COBS_OK);
    for (uint32_t i = 0; i < 500; i++) {
        const cobs_key k = make_key(0x4000 + 32 * (uintptr_t)(i / 4), i % 4, 0);
        EXPECT_STATUS(cobs_registry_insert(a, k, i, NULL), COBS_OK);
        EXPECT_STATUS(cobs_registry_insert(b, k, i, NULL), COBS_OK);
        EXPECT_STATUS(cobs_registry_insert(c, k, i, NULL), COBS_OK);
    }
    EXPECT(memcmp(a->ctrl, b->ctrl, a->capacity) == 0);
    cobs_registry_stats sa, sc;
    EXPECT_STATUS(cobs_registry_stats_get(a, &sa), COBS_OK);
    EXPECT_STATUS(cobs_registry_stats_get(c, &sc), COBS_OK);
#ifdef COBS_DETERMINISTIC_HASHING
    EXPECT(c->seed == COBS_DETERMINISTIC_SEED);
#endif
    EXPECT(sa.count == sc.count && sa.capacity == sc.capacity);
    cobs_registry_destroy(a);
    cobs_registry_destroy(b);
    cobs_registry_destroy(c);
}

static void *thread_depth_worker(void *arg) {
    uint32_t *result = arg;
    result[0] = cobs_thread_depth_enter(); /* a new thread starts at 0 */
    result[1] = cobs_thread_depth_enter();
    result[2] = cobs_thread_depth_leave();
    result[3] = cobs_thread_depth_leave();
    result[4] = cobs_thread_depth_leave(); /* stays at 0 */
    return NULL;
}

static void test_thread_depth(void) {
    EXPECT(cobs_thread_depth_enter() == 1);
    EXPECT(cobs_thread_depth_enter() == 2);
    uint32_t result[5] = {0};
    pthread_t thread;
    EXPECT(pthread_create(&thread, NULL, thread_depth_worker, result) == 0);
    EXPECT(pthread_join(thread, NULL) == 0);
    EXPECT(result[0] == 1 && result[1] == 2 && result[2] == 1 && result[3] == 0 && result[4] == 0);
    EXPECT(cobs_thread_depth_leave() == 1);
    EXPECT(cobs_thread_depth_leave() == 0);
    EXPECT(cobs_thread_depth_leave() == 0);
}

/* A reader thread inside a section of the object at `state` until `release` is posted. */
struct reader_state {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int inside, release;
    bool drain_requested;
};

static void *reader_worker(void *arg) {
    struct reader_state *state = arg;
    cobs_read_enter((uintptr_t)state);
    pthread_mutex_lock(&state->lock);
    state->inside = 1;
    pthread_cond_broadcast(&state->cond);
    while (!state->release) pthread_cond_wait(&state->cond, &state->lock);
    pthread_mutex_unlock(&state->lock);
    state->drain_requested = cobs_read_leave((uintptr_t)state);
    return NULL;
}

static void test_read_sections(void) {
    struct reader_state state = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, false};
    pthread_t thread;
    EXPECT(pthread_create(&thread, NULL, reader_worker, &state) == 0);
    pthread_mutex_lock(&state.lock);
    while (!state.inside) pthread_cond_wait(&state.cond, &state.lock);
    pthread_mutex_unlock(&state.lock);
    const uintptr_t objects[2] = {(uintptr_t)&state, (uintptr_t)&thread};
    bool held[2] = {false, true};
    cobs_read_reclaimable(objects, 2, held);
    EXPECT(held[0] && !held[1]); /* the reader's object is held, the other is not */
    pthread_mutex_lock(&state.lock);
    state.release = 1;
    pthread_cond_broadcast(&state.cond);
    pthread_mutex_unlock(&state.lock);
    EXPECT(pthread_join(thread, NULL) == 0);
    EXPECT(state.drain_requested); /* it was marked: its leave asked for a drain */
    cobs_read_reclaimable(objects, 1, held);
    EXPECT(!held[0]); /* the section ended; the exited thread's record is gone */
    cobs_read_reclaimable(NULL, 0, NULL); /* nothing to do, no crash */
}

/* The thread tag: nonzero, stable on a thread, different on another live thread. */
static void *tag_worker(void *arg) {
    *(uintptr_t *)arg = cobs_thread_tag();
    return NULL;
}

static void test_thread_tag_and_asymmetric_barrier(void) {
    const uintptr_t mine = cobs_thread_tag();
    EXPECT(mine != 0 && mine == cobs_thread_tag());
    uintptr_t theirs = 0;
    pthread_t thread;
    EXPECT(pthread_create(&thread, NULL, tag_worker, &theirs) == 0);
    EXPECT(pthread_join(thread, NULL) == 0);
    EXPECT(theirs != 0 && theirs != mine);
    cobs_compiler_fence();
    /* Decided once; the barrier runs exactly when it is available, and never fails then. */
    const bool available = cobs_asymmetric_barrier_available();
    EXPECT(cobs_asymmetric_barrier_available() == available);
    EXPECT(cobs_asymmetric_barrier() == available);
    printf("c_smoke_test: asymmetric barrier (membarrier) %s\n", available ? "available" : "not available");
}

int main(void) {
    test_status_names();
    test_create_errors();
    test_argument_validation();
    test_entries();
    test_growth_shrink_and_allocation_failure();
    test_capacity_hint();
    test_invariant_checker_detects_corruption();
    test_dump();
    test_determinism();
    test_thread_depth();
    test_read_sections();
    test_thread_tag_and_asymmetric_barrier();
    failures += c_smoke_arrays();
    if (failures != 0) {
        fprintf(stderr, "c_smoke_test: %d check(s) FAILED\n", failures);
        return 1;
    }
    printf("c_smoke_test: all checks passed\n");
    return 0;
}
