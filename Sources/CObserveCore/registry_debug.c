/*
** ObserveCore C core: registry statistics, the invariant checker and the dump. Read-only: nothing
** here changes a table. The invariants checked are those listed on `struct cobs_registry` in
** registry_layout.h.
**
** Prefix rule: every exported symbol starts with `cobs_`; helpers are `static` and unprefixed.
*/

#include "registry_layout.h"

#include <inttypes.h>
#include <stdarg.h>

cobs_status cobs_registry_stats_get(const cobs_registry *reg, cobs_registry_stats *out) {
    if (reg == NULL || out == NULL) return COBS_INVALID_ARGUMENT;
    size_t max_displacement = 0, total_displacement = 0;
    for (size_t i = 0; i < reg->capacity; i++) {
        if (ctrl_is_empty(reg->ctrl[i])) continue;
        const size_t home = home_of(reg, object_hash(reg->seed, reg->keys[i].object));
        const size_t displacement = (i - home) & reg->mask;
        total_displacement += displacement;
        if (displacement > max_displacement) max_displacement = displacement;
    }
    out->count = reg->count;
    out->capacity = reg->capacity;
    out->max_displacement = max_displacement;
    out->total_displacement = total_displacement;
    return COBS_OK;
}

/* ------------------------------------------------------------------------------------------- */
/* Invariant checker                                                                           */
/* ------------------------------------------------------------------------------------------- */

/* Reports at most this many broken buckets in detail; the rest are only counted. */
#define MAX_REPORTED_PROBLEMS 16

typedef struct checker {
    const struct cobs_registry *reg;
    size_t problems;
} checker;

static COBS_PRINTF_FORMAT(2, 3) void report(checker *ck, const char *format, ...) {
    ck->problems++;
    if (ck->problems > MAX_REPORTED_PROBLEMS) return;
    fprintf(stderr, "cobs_registry %p: ", (const void *)ck->reg);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
}

/* The first bucket in [home, at) that holds a key equal to keys[at] (compared only where the
** ctrl byte matches), or SIZE_MAX. A probe for the key stops at the first such bucket, so a stored
** entry with an earlier twin is a duplicate. Costs the entry's displacement. */
static size_t earlier_twin(const struct cobs_registry *reg, size_t home, size_t at) {
    const uint8_t fp = reg->ctrl[at];
    const cobs_key *key = &reg->keys[at];
    for (size_t i = home; i != at; i = (i + 1) & reg->mask) {
        if (reg->ctrl[i] == fp && key_equal(&reg->keys[i], key)) return i;
    }
    return SIZE_MAX;
}

cobs_status cobs_registry_check_invariants(const cobs_registry *reg) {
    if (reg == NULL) return COBS_INVALID_ARGUMENT;
    checker ck = {reg, 0};

    /* Geometry. Nothing below can be trusted if it is wrong, so stop here when it is. */
    const size_t capacity = reg->capacity;
    if (capacity < COBS_MIN_CAPACITY || capacity > COBS_MAX_CAPACITY ||
        (capacity & (capacity - 1)) != 0) {
        report(&ck, "capacity %zu is not a power of two in [%u, 2^%u]", capacity,
               COBS_MIN_CAPACITY, (unsigned)(sizeof(size_t) * 8 - 6));
    } else {
        unsigned log2 = 0;
        while (((size_t)1 << log2) < capacity) log2++;
        if (reg->mask != capacity - 1) report(&ck, "mask %zu != capacity - 1", reg->mask);
        if (reg->shift != 64u - log2) report(&ck, "shift %u != 64 - log2(capacity)", reg->shift);
    }
    if (reg->ctrl == NULL || (const void *)reg->keys != (const void *)(reg->ctrl + capacity) ||
        (const void *)reg->slots !=
            (const void *)(reg->ctrl + capacity + capacity * sizeof(cobs_key))) {
        report(&ck, "arrays do not follow the one-block layout");
    }
    if (ck.problems != 0) {
        fprintf(stderr, "cobs_registry %p: CORRUPT (geometry)\n", (const void *)reg);
        return COBS_CORRUPT;
    }

    /* One walk around the table, starting just after an empty bucket so that `run` (the number
    ** of consecutive full buckets ending at i) is exact even for a run that wraps past the end.
    ** (Under COBS_INTERNAL_CHECKS this runs after every mutation of every debug build, unoptimized:
    ** hence one pass, and the table's fields in locals.) */
    const uint8_t *const ctrl = reg->ctrl;
    const cobs_key *const keys = reg->keys;
    const size_t mask = reg->mask;
    const uint64_t seed = reg->seed;
    size_t empty_at = 0;
    while (empty_at < capacity && !ctrl_is_empty(ctrl[empty_at])) empty_at++;
    if (empty_at == capacity) {
        report(&ck, "no empty bucket: probe loops would not terminate");
        fprintf(stderr, "cobs_registry %p: CORRUPT (%zu problems)\n", (const void *)reg,
                ck.problems);
        return COBS_CORRUPT;
    }

    size_t full = 0, run = 0;
    for (size_t step = 1; step <= capacity; step++) {
        const size_t i = (empty_at + step) & mask;
        const uint8_t c = ctrl[i];
        if (c == COBS_CTRL_EMPTY) {
            run = 0;
            continue;
        }
        if (ctrl_is_empty(c)) {
            report(&ck, "bucket %zu: ctrl byte 0x%02x is neither empty (0x80) nor a fingerprint", i,
                   c);
            run = 0;
            continue;
        }
        full++;
        run++;
        const cobs_key *key = &keys[i];
        if (key->object == 0 || key->reserved_ != 0) {
            report(&ck, "bucket %zu: invalid key (object 0x%" PRIxPTR ", reserved_ %" PRIu32 ")", i,
                   key->object, key->reserved_);
            continue;
        }
        const uint64_t ohash = object_hash(seed, key->object);
        const uint8_t fp = fingerprint_of(ohash, key->key);
        if (c != fp) {
            report(&ck, "bucket %zu: ctrl byte 0x%02x != fingerprint 0x%02x of its key", i, c, fp);
        }
        const size_t home = home_of(reg, ohash);
        const size_t displacement = (i - home) & mask;
        if (displacement >= run) {
            report(&ck, "bucket %zu: unreachable, home %zu is %zu buckets back but the run of full "
                        "buckets before it is only %zu long",
                   i, home, displacement, run - 1);
            continue;
        }
        if (displacement != 0) {
            const size_t twin = earlier_twin(reg, home, i);
            if (twin != SIZE_MAX) {
                report(&ck, "bucket %zu: duplicate key, a probe for it stops at bucket %zu", i,
                       twin);
            }
        }
    }
    if (full != reg->count) report(&ck, "count %zu != %zu full buckets", reg->count, full);
    if (reg->count > max_load_of(capacity)) {
        report(&ck, "count %zu exceeds the maximum load %zu of capacity %zu", reg->count,
               max_load_of(capacity), capacity);
    }

    if (ck.problems == 0) return COBS_OK;
    if (ck.problems > MAX_REPORTED_PROBLEMS) {
        fprintf(stderr, "cobs_registry %p: ... and %zu more problems\n", (const void *)reg,
                ck.problems - MAX_REPORTED_PROBLEMS);
    }
    fprintf(stderr, "cobs_registry %p: CORRUPT (%zu problems)\n", (const void *)reg, ck.problems);
    return COBS_CORRUPT;
}

/* ------------------------------------------------------------------------------------------- */
/* Dump                                                                                        */
/* ------------------------------------------------------------------------------------------- */

void cobs_registry_dump(const cobs_registry *reg, FILE *stream) {
    if (stream == NULL) stream = stderr;
    if (reg == NULL) {
        fprintf(stream, "cobs_registry (null)\n");
        return;
    }
    fprintf(stream,
            "cobs_registry %p: count %zu, capacity %zu (max load %zu)\n",
            (const void *)reg, reg->count, reg->capacity, max_load_of(reg->capacity));
    for (size_t i = 0; i < reg->capacity; i++) {
        const uint8_t c = reg->ctrl[i];
        if (c == COBS_CTRL_EMPTY) {
            fprintf(stream, "  [%6zu] empty\n", i);
            continue;
        }
        const cobs_key *key = &reg->keys[i];
        const size_t home = home_of(reg, object_hash(reg->seed, key->object));
        fprintf(stream,
                "  [%6zu] ctrl 0x%02x  home %6zu  disp %4zu  object 0x%" PRIxPTR "  key %" PRIu32
                "  context 0x%" PRIxPTR "  slot %" PRIu32 "%s\n",
                i, c, home, (i - home) & reg->mask, key->object, key->key, key->context,
                reg->slots[i], ctrl_is_empty(c) ? "  (BAD CTRL BYTE)" : "");
    }
}
