/*
** ObserveCore C core: the registry's private memory layout, hash functions and table constants,
** shared by registry.c (operations) and registry_debug.c (stats, checker, dump). Private: it is
** outside include/, and nothing in it is API. The design essay is at the top of registry.c.
**
** Naming: table constants are COBS_-prefixed macros; helpers are `static inline` with no prefix,
** so none of them is an exported symbol.
*/
#ifndef COBS_REGISTRY_LAYOUT_H
#define COBS_REGISTRY_LAYOUT_H

#include <assert.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cobs_internal.h"
#include "cobs_registry.h"

/* ------------------------------------------------------------------------------------------- */
/* Table mechanics                                                                             */
/* ------------------------------------------------------------------------------------------- */

#define COBS_CTRL_EMPTY 0x80u       /* ctrl byte of an empty bucket */
#define COBS_MIN_CAPACITY 16u       /* smallest table; also the shrink floor */
#define COBS_MAX_LOAD_NUM 3u        /* grow when count would exceed capacity * 3/4 ... */
#define COBS_MAX_LOAD_DEN 4u
#define COBS_SHRINK_DEN 8u          /* ... shrink (halving) while count < capacity / 8 */
#define COBS_GROWTH_FACTOR 2u
/* Largest capacity whose backing array size (capacity * COBS_BUCKET_BYTES) cannot overflow
** size_t, with a factor of two to spare: 2^58 buckets on 64-bit targets, 2^26 on 32-bit ones. */
#define COBS_MAX_CAPACITY ((size_t)1 << (sizeof(size_t) * 8 - 6))
#define COBS_BUCKET_BYTES (sizeof(uint8_t) + sizeof(cobs_key) + sizeof(cobs_slot))
/* Seed of cobs_registry_create under COBS_DETERMINISTIC_HASHING (digits of pi). */
#define COBS_DETERMINISTIC_SEED UINT64_C(0x243F6A8885A308D3)

/* ------------------------------------------------------------------------------------------- */
/* Backing array                                                                               */
/* ------------------------------------------------------------------------------------------- */

/* One allocation of capacity * 29 bytes, capacity = 2^k with k >= 4:
**
**   offset 0              uint8_t   ctrl[capacity];   0x80 = empty | 0b0fffffff = full,
**                                                     f = 7-bit fingerprint of (object, key)
**   offset capacity       cobs_key  keys[capacity];   (object, context, key, reserved_ = 0)
**   offset 25 * capacity  cobs_slot slots[capacity];  the caller's 32-bit index
**   end    29 * capacity
**
**   +----+----+--...--+----+----------+----------+--...--+----+----+--...--+
**   | c0 | c1 |       | cN | keys[0]  | keys[1]  |       | s0 | s1 |       |
**   +----+----+--...--+----+----------+----------+--...--+----+----+--...--+
**   ^ ctrl               ^ keys = ctrl + capacity         ^ slots = keys + capacity
**
** Bucket i is (ctrl[i], keys[i], slots[i]). The three arrays are parallel rather than one array
** of 32-byte records because probing reads ctrl[] almost exclusively: sixty-four ctrl bytes share
** a cache line, and keys[] is touched only on a fingerprint match. The key and slot of an empty
** bucket are never read; they hold whatever was there before.
*/
static_assert(COBS_CTRL_EMPTY == 0x80, "the high bit marks empty, so (c & 0x80) tests emptiness "
                                       "and every 7-bit fingerprint is a valid full byte");
static_assert(sizeof(cobs_key) == 24, "keys[] stride; the struct has no padding, so copying and "
                                      "field-wise comparison see every byte");
static_assert(sizeof(cobs_slot) == 4, "slots[] stride and COBS_BUCKET_BYTES assume 32-bit slots");
static_assert(COBS_BUCKET_BYTES == 29, "the diagram above: 1 + 24 + 4 bytes per bucket");
static_assert((COBS_MIN_CAPACITY & (COBS_MIN_CAPACITY - 1)) == 0,
              "capacities are powers of two so that `& mask` wraps the probe sequence");
static_assert(COBS_MIN_CAPACITY % alignof(cobs_key) == 0,
              "ctrl[] is capacity bytes long and must leave keys[] aligned");
static_assert((COBS_MIN_CAPACITY * sizeof(cobs_key)) % alignof(cobs_slot) == 0,
              "keys[] must leave slots[] aligned");
static_assert(COBS_MIN_CAPACITY % COBS_MAX_LOAD_DEN == 0 && COBS_MIN_CAPACITY % COBS_SHRINK_DEN == 0,
              "capacity * 3/4 and capacity / 8 are exact for every capacity");
static_assert(COBS_MAX_LOAD_NUM < COBS_MAX_LOAD_DEN,
              "a full table would make probe loops endless: at least one bucket must stay empty");
static_assert(COBS_MAX_LOAD_NUM * COBS_SHRINK_DEN > 2 * COBS_MAX_LOAD_DEN,
              "after halving, a table just under the shrink threshold is under the growth one");
static_assert(sizeof(uintptr_t) <= sizeof(uint64_t), "addresses are hashed as uint64_t");

/* A registry. Opaque outside the core: the public header only declares `struct cobs_registry`.
**
** Invariants (cobs_registry_check_invariants verifies each; builds with COBS_INTERNAL_CHECKS and
** without NDEBUG run it after every mutating call):
**   - capacity is a power of two in [COBS_MIN_CAPACITY, COBS_MAX_CAPACITY], mask == capacity - 1,
**     shift == 64 - log2(capacity); keys and slots point into the block that starts at ctrl.
**   - count == the number of full buckets (ctrl byte != COBS_CTRL_EMPTY).
**   - count <= capacity * 3/4; so at least a quarter of the buckets are empty, and every probe
**     loop, which stops at the first empty bucket, ends.
**   - every ctrl byte is COBS_CTRL_EMPTY or a 7-bit fingerprint (0x00...0x7f), and a full
**     bucket's byte equals fingerprint_of(object_hash(seed, object), key) for the key it holds.
**   - a full bucket holds a key with object != 0 and reserved_ == 0.
**   - reachability: every bucket from an entry's home bucket up to the entry's own position
**     (cyclically) is full. Since the home depends on the object only, all entries of one object
**     lie in the single run of full buckets that starts at the object's home bucket.
**   - no two full buckets hold equal keys (equal object, key and context).
** There is deliberately no lower bound on the load: a failed shrink, or a large capacity_hint,
** leaves a table sparser than 1/8, which costs memory and nothing else.
*/
struct cobs_registry {
    uint8_t *ctrl;            /* ctrl[capacity]; also the start of the one backing allocation */
    cobs_key *keys;           /* keys[capacity], inside the same allocation */
    cobs_slot *slots;         /* slots[capacity], inside the same allocation */
    size_t capacity;          /* number of buckets, a power of two */
    size_t mask;              /* capacity - 1 */
    size_t count;             /* number of full buckets */
    uint64_t seed;            /* per-table hash seed (arc4random_buf, or the caller's) */
    unsigned shift;           /* 64 - log2(capacity): home bucket = object hash >> shift */
    cobs_allocator allocator; /* copied at creation; used for the block and this struct */
};

/* ------------------------------------------------------------------------------------------- */
/* Hashing                                                                                     */
/* ------------------------------------------------------------------------------------------- */

/* mix64 (MurmurHash3's fmix64) is in cobs_internal.h, shared with the position index. */

/* The hash of an object address alone, under the table's seed. It decides the home bucket, so
** every entry of one object starts probing at the same bucket. */
static COBS_ALWAYS_INLINE uint64_t object_hash(uint64_t seed, uintptr_t object) {
    return mix64((uint64_t)object ^ seed);
}

/* Home bucket: the TOP log2(capacity) bits of the mixed hash. (Masking the low bits would work
** equally well after mix64; the high bits are used so that doubling the table splits bucket b into
** buckets 2b and 2b + 1, keeping clusters in order through a resize.) */
static COBS_ALWAYS_INLINE size_t home_of(const struct cobs_registry *reg, uint64_t ohash) {
    return (size_t)(ohash >> reg->shift);
}

/* 7-bit fingerprint of (object, key) under the seed; the context is deliberately left out, so
** that lookup(object, key), which matches every context, can skip other keys by ctrl byte alone.
** Re-mixing the object hash with the key makes these bits independent of the home bits. */
static COBS_ALWAYS_INLINE uint8_t fingerprint_of(uint64_t ohash, uint32_t key) {
    return (uint8_t)(mix64(ohash ^ ((uint64_t)key * UINT64_C(0x9e3779b97f4a7c15))) >> 57);
}

static COBS_ALWAYS_INLINE bool ctrl_is_empty(uint8_t c) {
    return (c & COBS_CTRL_EMPTY) != 0;
}

static COBS_ALWAYS_INLINE bool key_equal(const cobs_key *a, const cobs_key *b) {
    return a->object == b->object && a->key == b->key && a->context == b->context;
}

/* The most entries a table of `capacity` buckets may hold. */
static COBS_ALWAYS_INLINE size_t max_load_of(size_t capacity) {
    return capacity / COBS_MAX_LOAD_DEN * COBS_MAX_LOAD_NUM;
}

#endif /* COBS_REGISTRY_LAYOUT_H */
