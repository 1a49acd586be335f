/*
** ObserveCore C core: libFuzzer target for the registry. Build and run with scripts/fuzz.sh.
**
** The input is decoded as a table configuration followed by an operation sequence:
**
**   bytes 0-7   hash seed (little-endian; missing bytes are 0)
**   byte  8     capacity hint
**   then        ops: one opcode byte, then one operand byte, then (some ops) one extra byte
**
** Every key comes from ONE operand byte, so the alphabet is small enough for collisions to be
** the rule rather than the exception: bits 0-3 pick one of 16 objects (aligned neighbours,
** addresses that differ only in bits 32-47 or in the top bit, an odd address), bits 4-5 one of 4
** keys, bits 6-7 one of 4 contexts. The byte is also the key's index in the model, a plain array
** of 256 (present, slot) pairs. After every operation the registry must agree with the model
** (count, and each result the operation returned) and pass cobs_registry_check_invariants; any
** disagreement aborts, which libFuzzer reports as a crash with the input that caused it.
**
** The registry allocates through an allocator the input controls (opcode ALLOC_MODE), so growth
** failures (COBS_NO_MEMORY, table unchanged) and silent shrink failures are fuzzed too.
*/

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cobs_registry.h"

#define FUZZ_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "registry_fuzz: %s:%d: model mismatch: %s\n", __FILE__, __LINE__,     \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------------------------------------- */
/* Alphabet                                                                                    */
/* ------------------------------------------------------------------------------------------- */

static const uintptr_t objects[16] = {
    0x10,
    0x20,
    0x30,
    0x40,
    (uintptr_t)0x7f0000001000u,
    (uintptr_t)0x7f0000001010u,
    (uintptr_t)0x10 | ((uintptr_t)1 << 32),
    (uintptr_t)0x10 | ((uintptr_t)2 << 32),
    (uintptr_t)0x10 | ((uintptr_t)0x8000 << 32),
    (uintptr_t)0x10 | ((uintptr_t)0xffff << 32),
    (uintptr_t)0x10 | ((uintptr_t)1 << 63),
    (uintptr_t)0x10 | ((uintptr_t)1 << 62),
    1, /* odd, unaligned */
    (uintptr_t)0xfffffffffffffff0u,
    (uintptr_t)0xdeadbeef0u,
    (uintptr_t)0xdeadbeef0u + 0x1000,
};
static const uint32_t keys[4] = {0, 1, 2, UINT32_MAX};
static const uintptr_t contexts[4] = {0, 1, 0x10, UINTPTR_MAX};

static cobs_key key_of(uint8_t id) {
    cobs_key k = {objects[id & 15], contexts[(id >> 6) & 3], keys[(id >> 4) & 3], 0};
    return k;
}

/* ------------------------------------------------------------------------------------------- */
/* Allocator under the input's control                                                         */
/* ------------------------------------------------------------------------------------------- */

typedef struct fuzz_allocator {
    uint8_t mode;     /* 0: never fail, 1: always fail, 2: fail the next allocation only */
    size_t live_bytes;
    size_t failures;
} fuzz_allocator;

static void *fuzz_allocate(void *user, size_t size) {
    fuzz_allocator *a = user;
    if (a->mode == 1 || a->mode == 2) {
        if (a->mode == 2) a->mode = 0;
        a->failures++;
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

/* ------------------------------------------------------------------------------------------- */
/* Model                                                                                       */
/* ------------------------------------------------------------------------------------------- */

typedef struct model {
    bool present[256];
    cobs_slot slot[256];
    size_t count;
} model;

/* Model ids of the live entries matching (object index, key index or -1 for any key). */
static size_t model_matches(const model *m, unsigned object, int key, uint8_t *ids) {
    size_t n = 0;
    for (unsigned id = 0; id < 256; id++) {
        if (!m->present[id] || (id & 15) != object) continue;
        if (key >= 0 && (int)((id >> 4) & 3) != key) continue;
        ids[n++] = (uint8_t)id;
    }
    return n;
}

static int compare_slots(const void *a, const void *b) {
    const cobs_slot x = *(const cobs_slot *)a, y = *(const cobs_slot *)b;
    return (x > y) - (x < y);
}

/* `got` (n slots) is exactly the multiset of the model's slots for `ids`. */
static void expect_same_slots(const model *m, const uint8_t *ids, size_t n, cobs_slot *got) {
    cobs_slot want[256];
    for (size_t i = 0; i < n; i++) want[i] = m->slot[ids[i]];
    qsort(want, n, sizeof *want, compare_slots);
    qsort(got, n, sizeof *got, compare_slots);
    FUZZ_ASSERT(n == 0 || memcmp(want, got, n * sizeof *want) == 0);
}

/* Every slot in `got` (n of them, possibly a prefix of the matches) belongs to a distinct match. */
static void expect_subset(const model *m, const uint8_t *ids, size_t matches, const cobs_slot *got,
                          size_t n) {
    bool used[256] = {false};
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < matches && !found; j++) {
            if (!used[j] && m->slot[ids[j]] == got[i]) used[j] = found = true;
        }
        FUZZ_ASSERT(found);
    }
}

static void expect_agreement(const cobs_registry *reg, const model *m, bool full) {
    FUZZ_ASSERT(cobs_registry_check_invariants(reg) == COBS_OK);
    FUZZ_ASSERT(cobs_registry_count(reg) == m->count);
    cobs_registry_stats stats;
    FUZZ_ASSERT(cobs_registry_stats_get(reg, &stats) == COBS_OK);
    FUZZ_ASSERT(stats.count == m->count);
    FUZZ_ASSERT(stats.capacity >= 16 && (stats.capacity & (stats.capacity - 1)) == 0);
    FUZZ_ASSERT(stats.count * 4 <= stats.capacity * 3);
    if (!full) return;
    for (unsigned id = 0; id < 256; id++) {
        cobs_slot slot = 0;
        const cobs_status status = cobs_registry_find(reg, key_of((uint8_t)id), &slot);
        if (m->present[id]) {
            FUZZ_ASSERT(status == COBS_OK && slot == m->slot[id]);
        } else {
            FUZZ_ASSERT(status == COBS_NOT_FOUND);
        }
    }
}

/* ------------------------------------------------------------------------------------------- */
/* Operations                                                                                  */
/* ------------------------------------------------------------------------------------------- */

enum {
    OP_INSERT,
    OP_REMOVE,
    OP_FIND,
    OP_LOOKUP,         /* extra byte: buffer capacity */
    OP_OBJECT_ENTRIES, /* extra byte: buffer capacity and which outputs */
    OP_REMOVE_OBJECT,  /* extra byte: buffer capacity */
    OP_GROW,           /* insert all 16 (key, context) pairs of one object */
    OP_ALLOC_MODE,
    OP_INVALID,        /* calls that must be rejected, changing nothing */
    OP_COUNT
};

static size_t capacity_of(const cobs_registry *reg) {
    cobs_registry_stats stats;
    FUZZ_ASSERT(cobs_registry_stats_get(reg, &stats) == COBS_OK);
    return stats.capacity;
}

/* Inserts model id `id`, predicting the status from the model, the capacity and the allocator. */
static void do_insert(cobs_registry *reg, model *m, fuzz_allocator *alloc, uint8_t id,
                      cobs_slot slot) {
    const size_t capacity = capacity_of(reg);
    const bool needs_growth = m->count + 1 > capacity / 4 * 3;
    const bool will_fail = alloc->mode != 0;
    cobs_slot existing = 0;
    const cobs_status status = cobs_registry_insert(reg, key_of(id), slot, &existing);
    if (m->present[id]) {
        FUZZ_ASSERT(status == COBS_EXISTS && existing == m->slot[id]);
    } else if (needs_growth && will_fail) {
        FUZZ_ASSERT(status == COBS_NO_MEMORY);
        FUZZ_ASSERT(capacity_of(reg) == capacity);
    } else {
        FUZZ_ASSERT(status == COBS_OK);
        FUZZ_ASSERT(capacity_of(reg) == (needs_growth ? capacity * 2 : capacity));
        m->present[id] = true;
        m->slot[id] = slot;
        m->count++;
    }
}

/* After a successful removal with a working allocator, the capacity is the shrink policy's:
** halved from `before` while count < capacity / 8, never below 16. */
static void expect_shrink_policy(const cobs_registry *reg, const fuzz_allocator *alloc,
                                 uint8_t mode_before, size_t before) {
    if (mode_before != 0) return; /* a failed shrink is allowed to leave any larger capacity */
    FUZZ_ASSERT(alloc->mode == 0);
    size_t target = before;
    while (target > 16 && cobs_registry_count(reg) < target / 8) target /= 2;
    FUZZ_ASSERT(capacity_of(reg) == target);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t seed = 0;
    for (size_t i = 0; i < 8 && i < size; i++) seed |= (uint64_t)data[i] << (8 * i);
    const size_t hint = size > 8 ? data[8] : 0;
    size_t pos = size > 9 ? 9 : size;

    fuzz_allocator alloc = {0, 0, 0};
    const cobs_allocator allocator = {fuzz_allocate, fuzz_deallocate, &alloc};
    cobs_registry *reg = NULL;
    FUZZ_ASSERT(cobs_registry_create_with(hint, seed, &allocator, &reg) == COBS_OK);

    static model m; /* 1.3 KB; static to keep the fuzzer's stack small */
    memset(&m, 0, sizeof m);
    cobs_slot next_slot = 1;

    while (pos + 1 < size) {
        const uint8_t op = data[pos] % OP_COUNT;
        const uint8_t id = data[pos + 1];
        const uint8_t extra = pos + 2 < size ? data[pos + 2] : 0;
        pos += 2;
        bool full_check = false;

        switch (op) {
        case OP_INSERT:
            do_insert(reg, &m, &alloc, id, next_slot++);
            break;

        case OP_REMOVE: {
            cobs_slot removed = 0;
            const uint8_t mode_before = alloc.mode;
            const size_t capacity_before = capacity_of(reg);
            const cobs_status status = cobs_registry_remove(reg, key_of(id), &removed);
            if (m.present[id]) {
                FUZZ_ASSERT(status == COBS_OK && removed == m.slot[id]);
                m.present[id] = false;
                m.count--;
                expect_shrink_policy(reg, &alloc, mode_before, capacity_before);
            } else {
                FUZZ_ASSERT(status == COBS_NOT_FOUND);
            }
            break;
        }

        case OP_FIND: {
            cobs_slot slot = 0;
            const cobs_status status = cobs_registry_find(reg, key_of(id), &slot);
            FUZZ_ASSERT(status == (m.present[id] ? COBS_OK : COBS_NOT_FOUND));
            if (m.present[id]) FUZZ_ASSERT(slot == m.slot[id]);
            break;
        }

        case OP_LOOKUP: {
            pos++;
            uint8_t ids[256];
            const size_t matches = model_matches(&m, id & 15, (id >> 4) & 3, ids);
            const size_t capacity = extra % 6;
            cobs_slot out[8];
            size_t count = 99;
            const cobs_status status =
                cobs_registry_lookup(reg, objects[id & 15], keys[(id >> 4) & 3],
                                     capacity ? out : NULL, capacity, &count);
            FUZZ_ASSERT(count == matches);
            if (matches > capacity) {
                FUZZ_ASSERT(status == COBS_BUFFER_TOO_SMALL);
                expect_subset(&m, ids, matches, out, capacity);
            } else {
                FUZZ_ASSERT(status == COBS_OK);
                expect_same_slots(&m, ids, matches, out);
            }
            break;
        }

        case OP_OBJECT_ENTRIES: {
            pos++;
            uint8_t ids[256];
            const size_t matches = model_matches(&m, id & 15, -1, ids);
            size_t capacity = extra % 20;
            const bool want_keys = (extra & 0x40) != 0, want_slots = (extra & 0x80) != 0;
            if (!want_keys && !want_slots) capacity = 0;
            cobs_key keys_out[20];
            cobs_slot slots_out[20];
            size_t count = 99;
            const cobs_status status = cobs_registry_object_entries(
                reg, objects[id & 15], want_keys ? keys_out : NULL, want_slots ? slots_out : NULL,
                capacity, &count);
            FUZZ_ASSERT(count == matches);
            FUZZ_ASSERT(status == (matches > capacity ? COBS_BUFFER_TOO_SMALL : COBS_OK));
            const size_t written = matches < capacity ? matches : capacity;
            for (size_t i = 0; i < written && want_keys; i++) {
                FUZZ_ASSERT(keys_out[i].object == objects[id & 15] && keys_out[i].reserved_ == 0);
                cobs_slot slot = 0;
                FUZZ_ASSERT(cobs_registry_find(reg, keys_out[i], &slot) == COBS_OK);
                if (want_slots) FUZZ_ASSERT(slot == slots_out[i]);
            }
            if (want_slots) {
                if (written == matches) {
                    expect_same_slots(&m, ids, matches, slots_out);
                } else {
                    expect_subset(&m, ids, matches, slots_out, written);
                }
            }
            break;
        }

        case OP_REMOVE_OBJECT: {
            pos++;
            uint8_t ids[256];
            const size_t matches = model_matches(&m, id & 15, -1, ids);
            const size_t capacity = extra % 20;
            cobs_slot out[20];
            size_t count = 99;
            const uint8_t mode_before = alloc.mode;
            const size_t capacity_before = capacity_of(reg);
            const cobs_status status = cobs_registry_remove_object(
                reg, objects[id & 15], capacity ? out : NULL, capacity, &count);
            FUZZ_ASSERT(count == matches);
            if (matches > capacity) {
                FUZZ_ASSERT(status == COBS_BUFFER_TOO_SMALL); /* and nothing removed: */
                FUZZ_ASSERT(cobs_registry_count(reg) == m.count);
            } else {
                FUZZ_ASSERT(status == COBS_OK);
                expect_same_slots(&m, ids, matches, out);
                for (size_t i = 0; i < matches; i++) m.present[ids[i]] = false;
                m.count -= matches;
                if (matches != 0) {
                    expect_shrink_policy(reg, &alloc, mode_before, capacity_before);
                } else {
                    FUZZ_ASSERT(capacity_of(reg) == capacity_before);
                }
            }
            full_check = true;
            break;
        }

        case OP_GROW:
            for (unsigned pair = 0; pair < 16; pair++) {
                do_insert(reg, &m, &alloc, (uint8_t)((id & 15) | (pair << 4)), next_slot++);
            }
            full_check = true;
            break;

        case OP_ALLOC_MODE:
            alloc.mode = id % 3;
            break;

        case OP_INVALID: {
            cobs_key bad = key_of(id);
            if (id & 1) {
                bad.object = 0;
            } else {
                bad.reserved_ = 1u + extra;
            }
            cobs_slot slot = 0;
            size_t count = 0;
            FUZZ_ASSERT(cobs_registry_insert(reg, bad, 1, NULL) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_registry_find(reg, bad, &slot) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_registry_remove(reg, bad, NULL) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_registry_find(reg, key_of(id), NULL) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_registry_lookup(reg, 0, 0, NULL, 0, &count) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_registry_remove_object(reg, objects[id & 15], NULL, 1, &count) ==
                        COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_registry_object_entries(reg, objects[id & 15], NULL, NULL, 1,
                                                     &count) == COBS_INVALID_ARGUMENT);
            break;
        }
        }
        expect_agreement(reg, &m, full_check);
    }

    alloc.mode = 0;
    expect_agreement(reg, &m, true);
    cobs_registry_destroy(reg);
    FUZZ_ASSERT(alloc.live_bytes == 0);
    return 0;
}
