/*
** ObserveCore C core: libFuzzer target for the element-position index. Build and run with
** scripts/fuzz.sh.
**
** The input is decoded as a configuration followed by an operation sequence:
**
**   bytes 0-7   hash seed (little-endian; missing bytes are 0, which asks for a random seed)
**   byte  8     log2 of the ring size, 4...10 (the ring has mask + 1 slots)
**   then        ops: one opcode byte, two operand bytes
**
** The model IS the ring: `ring[s]` is the element in slot s, and `present[s]` says whether the
** index records (ring[s], s). Elements come from a 16-address alphabet (neighbours 16 bytes
** apart, addresses differing only in high bits, an odd one), so duplicates, shared home buckets
** and fingerprint collisions are the rule. Slots that hold no entry keep stale addresses on
** purpose: the index must never report them. After every operation the index must agree with
** the model (count, every status, every lookup as a set) and pass check_invariants.
** Allocation failures are injected by the input (NO_MEMORY must change nothing).
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
            fprintf(stderr, "positions_fuzz: %s:%d: model mismatch: %s\n", __FILE__, __LINE__,    \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_RING 1024u

static const uintptr_t elements[16] = {
    0x1000,
    0x1010,
    0x1020,
    0x1030,
    (uintptr_t)0x7f0000001000u,
    (uintptr_t)0x7f0000001010u,
    (uintptr_t)0x10 | ((uintptr_t)1 << 32),
    (uintptr_t)0x10 | ((uintptr_t)2 << 32),
    (uintptr_t)0x10 | ((uintptr_t)1 << 63),
    (uintptr_t)0xfffffffffffffff0u,
    1, /* odd */
    (uintptr_t)0xdeadbeef0u,
    (uintptr_t)0xdeadbeef0u + 0x1000,
    0x20,
    0x30,
    0x40,
};

typedef struct fuzz_allocator {
    int fail_next; /* > 0: the allocation that many calls from now fails */
    size_t live_bytes;
} fuzz_allocator;

static void *fuzz_allocate(void *user, size_t size) {
    fuzz_allocator *a = user;
    if (a->fail_next > 0 && --a->fail_next == 0) return NULL;   /* fails the fail_next-th allocation */
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

typedef struct model {
    uintptr_t ring[MAX_RING];
    bool present[MAX_RING];
    uint32_t mask;
    size_t count;
} model;

/* The index's answer for `element` is exactly the model's set of slots. */
static void expect_lookup(const cobs_positions *pos, const model *m, uintptr_t element,
                          size_t capacity) {
    uint32_t got[MAX_RING];
    size_t count = SIZE_MAX;
    const cobs_status st =
        cobs_positions_lookup(pos, m->ring, m->mask, element, capacity ? got : NULL, capacity, &count);
    size_t want = 0;
    for (uint32_t s = 0; s <= m->mask; s++) want += m->present[s] && m->ring[s] == element;
    FUZZ_ASSERT(count == want);
    FUZZ_ASSERT(st == (want > capacity ? COBS_BUFFER_TOO_SMALL : COBS_OK));
    bool seen[MAX_RING] = {false};
    const size_t written = want < capacity ? want : capacity;
    for (size_t i = 0; i < written; i++) {
        FUZZ_ASSERT(got[i] <= m->mask && m->present[got[i]] && m->ring[got[i]] == element);
        FUZZ_ASSERT(!seen[got[i]]);
        seen[got[i]] = true;
    }
}

static void expect_agreement(const cobs_positions *pos, const model *m, bool full) {
    FUZZ_ASSERT(cobs_positions_check_invariants(pos, m->ring, m->mask) == COBS_OK);
    FUZZ_ASSERT(cobs_positions_count(pos) == m->count);
    FUZZ_ASSERT(cobs_positions_bytes(pos) >= 16 * 5);
    if (!full) return;
    for (unsigned e = 0; e < 16; e++) expect_lookup(pos, m, elements[e], MAX_RING);
}

/* A slot with no entry, searching from `hint`; returns false when every slot is taken. */
static bool free_slot(const model *m, uint32_t hint, uint32_t *out) {
    for (uint32_t k = 0; k <= m->mask; k++) {
        const uint32_t s = (hint + k) & m->mask;
        if (!m->present[s]) {
            *out = s;
            return true;
        }
    }
    return false;
}

static bool used_slot(const model *m, uint32_t hint, uint32_t *out) {
    for (uint32_t k = 0; k <= m->mask; k++) {
        const uint32_t s = (hint + k) & m->mask;
        if (m->present[s]) {
            *out = s;
            return true;
        }
    }
    return false;
}

enum {
    OP_INSERT,
    OP_REMOVE,  /* a: also overwrite the ring slot first (allowed for the entry being removed) */
    OP_MOVE,
    OP_LOOKUP,  /* b: buffer capacity */
    OP_REBUILD, /* a: head, b: count and whether to refill the ring */
    OP_GROW_RING,
    OP_CLEAR,
    OP_FAIL_NEXT,
    OP_INVALID,
    OP_SHIFT,   /* a: first slot, b: count, direction and distance of a block move */
    OP_INSERT_RUN, /* a: first slot and elements, b: count (a run over recorded slots is refused) */
    OP_COUNT
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t seed = 0;
    for (size_t i = 0; i < 8 && i < size; i++) seed |= (uint64_t)data[i] << (8 * i);
    const unsigned log2 = size > 8 ? 4 + data[8] % 7 : 4;
    static model m;
    memset(&m, 0, sizeof m);
    m.mask = (1u << log2) - 1;
    /* Stale addresses everywhere: no entry, so never reported. */
    for (uint32_t s = 0; s < MAX_RING; s++) m.ring[s] = elements[s % 16];

    fuzz_allocator alloc = {0, 0};
    const cobs_allocator allocator = {fuzz_allocate, fuzz_deallocate, &alloc};
    cobs_positions *pos = NULL;
    FUZZ_ASSERT(cobs_positions_create(0, seed, &allocator, &pos) == COBS_OK);
    bool fail = false;

    for (size_t at = 9; at + 3 <= size; at += 3) {
        const uint8_t op = data[at] % OP_COUNT, a = data[at + 1], b = data[at + 2];
        const uintptr_t element = elements[a & 15];
        bool full = false;
        alloc.fail_next = fail;
        switch (op) {
        case OP_INSERT: {
            uint32_t s;
            if (!free_slot(&m, (uint32_t)b * 7u, &s)) break;
            const uintptr_t stale = m.ring[s];
            m.ring[s] = element;
            const cobs_status st = cobs_positions_insert(pos, m.ring, m.mask, element, s);
            if (st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(fail);
                m.ring[s] = stale;
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            m.present[s] = true;
            m.count++;
            /* The same pair again is rejected. */
            FUZZ_ASSERT(cobs_positions_insert(pos, m.ring, m.mask, element, s) == COBS_INVALID_ARGUMENT);
            break;
        }
        case OP_INSERT_RUN: {
            const uint32_t first = ((uint32_t)a * 11u) & m.mask;
            if (b == 0xff) {   /* the edges: an empty run, and one longer than the ring */
                FUZZ_ASSERT(cobs_positions_insert_run(pos, m.ring, m.mask, first, 0) == COBS_OK);
                FUZZ_ASSERT(cobs_positions_insert_run(pos, m.ring, m.mask, first, (size_t)m.mask + 2) ==
                            COBS_INVALID_ARGUMENT);
                break;
            }
            const uint32_t count = 1 + (uint32_t)b % (m.mask + 1 < 24 ? m.mask + 1 : 24);
            bool overlaps = false;
            uintptr_t stale[24];
            for (uint32_t k = 0; k < count; k++) {
                const uint32_t s = (first + k) & m.mask;
                stale[k] = m.ring[s];
                if (m.present[s]) {
                    overlaps = true;   /* left as it is: the pair is recorded, so the run is refused */
                } else {
                    m.ring[s] = elements[(a + k * (b | 1)) & 15];
                }
            }
            /* An injected failure hits the first to the eighth allocation of the run: a growth, or a
            ** copy's record after pairs were added (then they must be removed again). */
            if (fail) alloc.fail_next = 1 + (b >> 5);
            const cobs_status st = cobs_positions_insert_run(pos, m.ring, m.mask, first, count);
            if (overlaps || st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(overlaps ? st == COBS_INVALID_ARGUMENT || (fail && st == COBS_NO_MEMORY) : fail);
                for (uint32_t k = 0; k < count; k++) m.ring[(first + k) & m.mask] = stale[k];
                full = true;   /* nothing recorded: every lookup as before */
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            for (uint32_t k = 0; k < count; k++) m.present[(first + k) & m.mask] = true;
            m.count += count;
            full = true;
            break;
        }
        case OP_REMOVE: {
            uint32_t s;
            if (!used_slot(&m, (uint32_t)b * 5u, &s)) {
                FUZZ_ASSERT(cobs_positions_remove(pos, m.ring, m.mask, element, b & m.mask) ==
                            COBS_NOT_FOUND);
                break;
            }
            const uintptr_t e = m.ring[s];
            /* A slot that no entry has is never found, whatever the element. */
            uint32_t unused;
            if (free_slot(&m, (uint32_t)a, &unused)) {
                FUZZ_ASSERT(cobs_positions_remove(pos, m.ring, m.mask, element, unused) == COBS_NOT_FOUND);
                FUZZ_ASSERT(cobs_positions_move(pos, m.mask, element, unused, s) == COBS_NOT_FOUND);
            }
            if (a & 0x80) m.ring[s] = elements[(a + 1) & 15]; /* the caller overwrote it first */
            FUZZ_ASSERT(cobs_positions_remove(pos, m.ring, m.mask, e, s) == COBS_OK);
            m.present[s] = false;
            m.count--;
            FUZZ_ASSERT(cobs_positions_remove(pos, m.ring, m.mask, e, s) == COBS_NOT_FOUND);
            break;
        }
        case OP_MOVE: {
            uint32_t from, to;
            if (!used_slot(&m, (uint32_t)a * 3u, &from)) break;
            if (!free_slot(&m, (uint32_t)b * 11u, &to)) to = from;
            const uintptr_t e = m.ring[from], stale = m.ring[to];
            m.present[from] = false;
            m.ring[to] = e;
            if (to != from) m.ring[from] = elements[b & 15]; /* stale */
            const cobs_status st = cobs_positions_move(pos, m.mask, e, from, to);
            if (st == COBS_NO_MEMORY) {
                /* A copy of a duplicated element moving beyond its position table: unchanged. */
                FUZZ_ASSERT(fail);
                m.ring[from] = e;
                if (to != from) m.ring[to] = stale;
                m.present[from] = true;
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            m.present[to] = true;
            FUZZ_ASSERT(to == from || cobs_positions_move(pos, m.mask, e, from, to) == COBS_NOT_FOUND);
            break;
        }
        case OP_LOOKUP:
            expect_lookup(pos, &m, element, b % 9);
            break;
        case OP_SHIFT: {
            /* A block of `count` slots moves `delta` slots over free slots (as an array moves the
            ** shorter side into its ring's free space); the model rotates the region, the index
            ** records the move in its log (or, log full, records nothing: the model is left as is; or folds
            ** the log first and records it). */
            const uint32_t first = ((uint32_t)a * 7u) & m.mask;
            const uint32_t count = 1 + (uint32_t)(b & 31) % ((m.mask + 1) / 2);
            /* Mostly 1 to 3 slots; sometimes as far as the ring allows (count + e == mask + 1: the
            ** block and the slots it moves into are the whole ring). */
            const uint32_t e = ((b >> 5) & 3) == 3 && (a & 2) ? m.mask + 1 - count : 1 + (uint32_t)((b >> 5) & 3);
            const int64_t delta = (b & 0x80) ? -(int64_t)e : (int64_t)e;
            if ((uint64_t)count + e > (uint64_t)m.mask + 1) break;
            bool crossed_free = true;
            for (uint32_t k = 0; k < e && crossed_free; k++) {
                const uint32_t s = delta > 0 ? (first + count + k) & m.mask : (first - 1 - k) & m.mask;
                crossed_free = !m.present[s];
            }
            if (!crossed_free) break;
            cobs_status st = cobs_positions_shift(pos, m.mask, first, count, delta);
            if (st == COBS_BUFFER_TOO_SMALL && (a & 1)) {
                /* Log full: fold it (entries brought up to date, without reading the ring) and move
                ** again; with no memory the fold changes nothing, and nothing is recorded. */
                const cobs_status folded = cobs_positions_fold(pos);
                if (folded == COBS_NO_MEMORY) {
                    FUZZ_ASSERT(fail);
                    break;
                }
                FUZZ_ASSERT(folded == COBS_OK);
                expect_agreement(pos, &m, true);
                st = cobs_positions_shift(pos, m.mask, first, count, delta);
            }
            if (st == COBS_BUFFER_TOO_SMALL) break;
            FUZZ_ASSERT(st == COBS_OK);
            uintptr_t ring[MAX_RING];
            bool present[MAX_RING];
            memcpy(ring, m.ring, sizeof ring);
            memcpy(present, m.present, sizeof present);
            const uint32_t region = delta > 0 ? first : (first - e) & m.mask;
            for (uint32_t k = 0; k < count + e; k++) {
                const uint32_t t = (region + k) & m.mask;
                uint32_t to;
                if (delta > 0) {
                    to = k < count ? (t + e) & m.mask : (t - count) & m.mask;
                } else {
                    to = k < e ? (t + count) & m.mask : (t - e) & m.mask;
                }
                ring[to] = m.ring[t];
                present[to] = m.present[t];
            }
            memcpy(m.ring, ring, sizeof ring);
            memcpy(m.present, present, sizeof present);
            full = true;
            break;
        }
        case OP_REBUILD: {
            const uint32_t head = ((uint32_t)a * 13u) & m.mask;
            const size_t n = ((size_t)b * 5u) % ((size_t)m.mask + 2);
            uintptr_t saved[MAX_RING];
            memcpy(saved, m.ring, sizeof saved);
            if (b & 1) {
                for (size_t i = 0; i < n; i++) m.ring[(head + i) & m.mask] = elements[(a + i * b) & 15];
            }
            const size_t before = cobs_positions_count(pos);
            const cobs_status st = cobs_positions_rebuild(pos, m.ring, m.mask, head, n);
            if (st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(fail);
                memcpy(m.ring, saved, sizeof saved);
                if (cobs_positions_count(pos) == 0 && before != 0) {
                    /* A duplicate record could not be allocated: the index was left empty. */
                    memset(m.present, 0, sizeof m.present);
                    m.count = 0;
                } else {
                    FUZZ_ASSERT(cobs_positions_count(pos) == before); /* the table itself: unchanged */
                }
                break;
            }
            FUZZ_ASSERT(st == COBS_OK);
            memset(m.present, 0, sizeof m.present);
            for (size_t i = 0; i < n; i++) m.present[(head + i) & m.mask] = true;
            m.count = n;
            full = true;
            break;
        }
        case OP_GROW_RING: {
            /* Reallocation as an array does it: the elements go to slots 0..<count of a ring
            ** twice as large, then the index is rebuilt. */
            if (m.mask + 1 >= MAX_RING) break;
            uintptr_t moved[MAX_RING];
            size_t n = 0;
            for (uint32_t s = 0; s <= m.mask; s++) {
                if (m.present[s]) moved[n++] = m.ring[s];
            }
            const uint32_t new_mask = 2 * m.mask + 1;
            for (size_t i = 0; i < n; i++) m.ring[i] = moved[i];
            const cobs_status st = cobs_positions_rebuild(pos, m.ring, new_mask, 0, n);
            if (st == COBS_NO_MEMORY) {
                FUZZ_ASSERT(fail);
                /* Not rebuilt: undo the ring change by rebuilding without failure injection. */
                alloc.fail_next = 0;
                FUZZ_ASSERT(cobs_positions_rebuild(pos, m.ring, new_mask, 0, n) == COBS_OK);
            } else {
                FUZZ_ASSERT(st == COBS_OK);
            }
            m.mask = new_mask;
            memset(m.present, 0, sizeof m.present);
            for (size_t i = 0; i < n; i++) m.present[i] = true;
            m.count = n;
            full = true;
            break;
        }
        case OP_CLEAR:
            cobs_positions_clear(pos);
            memset(m.present, 0, sizeof m.present);
            m.count = 0;
            break;
        case OP_FAIL_NEXT:
            fail = !fail;
            break;
        case OP_INVALID: {
            size_t count = 0;
            uint32_t out[1];
            const uint32_t s = b & m.mask;
            FUZZ_ASSERT(cobs_positions_insert(NULL, m.ring, m.mask, element, s) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_insert(pos, NULL, m.mask, element, s) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_insert(pos, m.ring, m.mask, 0, s) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_insert(pos, m.ring, m.mask, element, m.mask + 1 + a) ==
                        COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_insert(pos, m.ring, m.mask - 1, element, 0) == COBS_INVALID_ARGUMENT);
            if (!m.present[s] && m.ring[s] != element) {
                FUZZ_ASSERT(cobs_positions_insert(pos, m.ring, m.mask, element, s) == COBS_INVALID_ARGUMENT);
            }
            FUZZ_ASSERT(cobs_positions_remove(pos, m.ring, m.mask, 0, s) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_remove(pos, m.ring, m.mask, element, m.mask + 1) ==
                        COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_move(pos, m.mask, element, s, m.mask + 1) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_move(pos, m.mask, 0, s, s) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_lookup(pos, m.ring, m.mask, 0, out, 1, &count) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_lookup(pos, m.ring, m.mask, element, NULL, 1, &count) ==
                        COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_lookup(pos, m.ring, m.mask, element, out, 1, NULL) ==
                        COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_rebuild(pos, m.ring, m.mask, m.mask + 1, 0) == COBS_INVALID_ARGUMENT);
            FUZZ_ASSERT(cobs_positions_rebuild(pos, m.ring, m.mask, 0, (size_t)m.mask + 2) ==
                        COBS_INVALID_ARGUMENT);
            /* A ring too small for the slots recorded is refused before it is read. (check_invariants
            ** reports it as COBS_CORRUPT, on stderr: the smoke test and Swift tests cover that, so the
            ** fuzzer's log stays quiet.) */
            uint32_t used;
            if (used_slot(&m, 0, &used) && used > 0) {
                uint32_t small = 0;
                while (small < used) small = 2 * small + 1;
                small >>= 1; /* the largest mask below `used` */
                FUZZ_ASSERT(cobs_positions_lookup(pos, m.ring, small, element, out, 1, &count) ==
                            COBS_INVALID_ARGUMENT);
            }
            break;
        }
        }
        alloc.fail_next = 0;
        if (op != OP_FAIL_NEXT) fail = false;
        expect_agreement(pos, &m, full);
    }
    expect_agreement(pos, &m, true);
    FUZZ_ASSERT(cobs_positions_max_displacement(pos, m.ring, m.mask) < cobs_positions_bytes(pos) / 5);
    cobs_positions_destroy(pos);
    FUZZ_ASSERT(alloc.live_bytes == 0);
    return 0;
}
