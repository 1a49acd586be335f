/*
** ObserveCore C core: the observation registry (create, insert, find, remove, lookup,
** object_entries, remove_object). Statistics, the invariant checker and the dump are in
** registry_debug.c; the memory layout, constants and hash functions in registry_layout.h.
**
** Prefix rule: every exported symbol starts with `cobs_`; everything else in this file is `static`
** and unprefixed.
**
** ============================================================================================
** Design
** ============================================================================================
**
** What the table is for. The registry maps (object address, key, context) to a 32-bit slot. Its
** workload is observation: views and controllers appear and disappear all the time, so insert and
** remove are as frequent as lookup (register/unregister churn), and an object's entries are
** usually read or dropped together: "who observes key K of object O" on every set, "drop
** everything of O" when O dies.
**
** WHY LINEAR PROBING. Open addressing keeps the table in one allocation with no per-entry nodes
** (DESIGN.md: no per-registration heap allocation), and linear probing is the variant whose probe
** sequence is contiguous memory, so a probe that misses the first bucket usually stays in the
** same cache line of ctrl[]. It is also the family (plain, or with Robin Hood ordering) in which
** deletion needs no tombstones (below). Robin Hood ordering would shorten the longest probes at
** the price of a swap chain on every insert; it is not used until a benchmark asks for it.
**
** WHY THE HOME BUCKET DEPENDS ON THE OBJECT ONLY. The home bucket is taken from a hash of the
** object address alone (mixed with the table's seed), not of the whole key. Under linear probing,
** every entry lies in the run of full buckets that starts at its home bucket, so all entries of
** one object lie in ONE run. lookup(object, key), object_entries(object) and
** remove_object(object) therefore probe from that one bucket to the next empty one and never scan
** the table: O(entries of the object + the rest of its cluster). The price is that an object's
** own entries always collide with each other; the 7-bit fingerprint in ctrl[] (below) makes those
** collisions cheap to skip.
**
** WHY A FINGERPRINT OF (OBJECT, KEY). Each full bucket's ctrl byte holds 7 bits of
** mix(object, key, seed), the Swiss-table "H2" idea. find and lookup compare ctrl bytes first and
** read keys[] only on a match, so 127 of 128 non-matching entries cost one byte compare. The
** context is left out of the fingerprint so that lookup(object, key), which must return every
** context, can still filter by ctrl byte; insert, find and remove then compare the full key
** (object, key, context).
**
** HASHING. Object addresses are aligned, so their low four bits carry no information and
** consecutive objects differ in a few middle bits; addresses from different arenas may differ only
** in bits 32-47. The address is xor-ed with a per-table 64-bit seed and run through MurmurHash3's
** fmix64 (mix64 in cobs_internal.h), which spreads every input bit over the whole word; the home
** bucket is the top log2(capacity) bits. The seed comes from arc4random_buf (libbsd on Linux) for every
** table, so an adversary, or an unlucky allocator, cannot arrange addresses that pile into one
** cluster in every process; under COBS_DETERMINISTIC_HASHING it is a fixed constant, and
** cobs_registry_create_with takes it explicitly, so tests can reproduce a layout exactly.
**
** DELETION: BACKWARD SHIFT, NO TOMBSTONES (tombstones never have to be purged). When an entry is
** removed, the entries after it in its run are examined in order, and each one whose home bucket
** is not between the hole and itself is moved back into the hole, which then moves to where that
** entry was; the final hole becomes empty. The table after any sequence of inserts and removes is
** thus exactly a table that the same live entries could have produced by insertion alone: no
** tombstones accumulate under churn, probe lengths depend only on the live load, and no periodic
** "rehash to purge deleted markers" is needed (the alternatives, Swiss-table kDeleted markers with
** growth_left accounting, or F14's overflow counts, both pay for deletions long after they
** happen). Removal costs one extra pass over the rest of the cluster, recomputing each entry's
** home bucket.
**
** FAILURE MODE: LONG CLUSTERS. Linear probing degrades through primary clustering: runs of full
** buckets merge, and a probe that starts inside a long run walks all of it. At load 3/4 the
** expected successful probe is about 2.5 buckets and an unsuccessful one about 8.5 (Knuth), but
** the tail grows quickly above that, which is why the load factor is capped at 3/4. The object-only
** home bucket adds a failure mode of its own: ONE object with N entries is a cluster of at least
** N buckets, and any object whose home falls inside it pays to walk past them. ObserveCore keeps N
** small (one entry per (observer registration, key), and arrays register once per (array, key),
** never once per element), and cobs_registry_stats_get reports max_displacement so tests and
** benchmarks can watch the tail. Measured with this hash (20 seeds, one entry per object):
** 10,000 objects in 16,384 buckets (load 0.61) give a mean displacement of 0.78, the textbook
** value for a uniform hash, and a longest one of ~35 (75 at worst); at load 3/4 the mean is ~1.5
** and the longest ~90. Consecutive 16-byte-aligned addresses and addresses that differ only in
** bits 32-47 measure the same as random ones (RegistryCollisionTests pin this).
**
** LOAD FACTOR AND RESIZING. Capacity is a power of two, at least 16. Insert grows the table x2
** when the entry would make count exceed capacity * 3/4 (khashl's and swift-collections' ratio;
** cwisstable's 7/8 needs 1/7 fewer buckets but relies on SIMD group probing, which a linear probe
** over a clustered table does not have). A removal that removed something shrinks the table, by
** halving, while count < capacity / 8 and capacity > 16; halving a table below 1/8 leaves it
** below 1/4, far from the growth threshold, so a workload that hovers around one size does not
** resize back and forth. A resize allocates the new array first and frees the old one last: if growth fails,
** insert reports COBS_NO_MEMORY with the table untouched; if a shrink fails, the removal has
** already succeeded and the table just stays larger (no error).
**
** ALLOCATION. Everything (this struct and the backing array) comes from the registry's allocator,
** malloc/free unless the caller passed one; tests inject failures through it.
*/

#include "registry_layout.h"

#include <string.h>

#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
#include <stdlib.h> /* arc4random_buf is in the BSD libcs */
#else
#include <bsd/stdlib.h> /* libbsd (Debian: libbsd-dev) */
#endif

/* Under COBS_INTERNAL_CHECKS, debug builds re-verify the whole table after every mutating call,
** successful or not (a failed call must leave a valid, unchanged table too). O(capacity) each. */
#if defined(COBS_INTERNAL_CHECKS) && !defined(NDEBUG)
#define VERIFY_AFTER_MUTATION(reg)                                                                 \
    COBS_CHECK(cobs_registry_check_invariants(reg) == COBS_OK,                                     \
               "registry invariants broken after a mutating call (details above)")
#else
#define VERIFY_AFTER_MUTATION(reg) ((void)0)
#endif

/* ------------------------------------------------------------------------------------------- */
/* Allocation                                                                                  */
/* ------------------------------------------------------------------------------------------- */

/* default_allocator (malloc/free) is in cobs_internal.h, shared with the other tables. */

/* The smallest capacity that holds `hint` entries without growing, or 0 if none is possible. */
static size_t capacity_for_hint(size_t hint) {
    if (hint > max_load_of(COBS_MAX_CAPACITY)) return 0;
    size_t capacity = COBS_MIN_CAPACITY;
    while (max_load_of(capacity) < hint) capacity *= 2;
    return capacity;
}

static unsigned log2_of(size_t power_of_two) {
    unsigned k = 0;
    while (((size_t)1 << k) < power_of_two) k++;
    return k;
}

/* Points `reg`'s arrays into `block` (capacity * COBS_BUCKET_BYTES bytes) and marks every
** bucket empty. Does not touch count or free anything. */
static void install_block(struct cobs_registry *reg, uint8_t *block, size_t capacity) {
    reg->ctrl = block;
    reg->keys = (cobs_key *)(void *)(block + capacity);
    reg->slots = (cobs_slot *)(void *)(block + capacity + capacity * sizeof(cobs_key));
    reg->capacity = capacity;
    reg->mask = capacity - 1;
    reg->shift = 64u - log2_of(capacity);
    memset(reg->ctrl, COBS_CTRL_EMPTY, capacity);
}

static void free_block(struct cobs_registry *reg) {
    reg->allocator.deallocate(reg->allocator.user, reg->ctrl, reg->capacity * COBS_BUCKET_BYTES);
}

/* ------------------------------------------------------------------------------------------- */
/* Probing                                                                                     */
/* ------------------------------------------------------------------------------------------- */

#define NO_POSITION SIZE_MAX

/* The bucket holding exactly `key`, or NO_POSITION. */
static size_t find_position(const struct cobs_registry *reg, const cobs_key *key, uint64_t ohash) {
    const uint8_t fp = fingerprint_of(ohash, key->key);
    size_t i = home_of(reg, ohash);
    for (;;) {
        const uint8_t c = reg->ctrl[i];
        if (c == fp && key_equal(&reg->keys[i], key)) return i;
        if (ctrl_is_empty(c)) return NO_POSITION;
        i = (i + 1) & reg->mask;
    }
}

/* Stores an entry known to be absent, into the first empty bucket at or after its home. The
** caller has made room (count < max load). */
static void place(struct cobs_registry *reg, uint64_t ohash, uint8_t fp, const cobs_key *key,
                  cobs_slot slot) {
    COBS_DCHECK(reg->count < reg->capacity);
    size_t i = home_of(reg, ohash);
    while (!ctrl_is_empty(reg->ctrl[i])) i = (i + 1) & reg->mask;
    reg->ctrl[i] = fp;
    reg->keys[i] = *key;
    reg->slots[i] = slot;
    reg->count++;
}

/* Empties bucket `hole` by backward shift (see the essay). Entries after the hole in its run move
** back when their home bucket lies cyclically outside (hole, j]: then the hole is on their probe
** path and filling it keeps them reachable. Bucket `hole` may afterwards hold another entry. */
static void erase_at(struct cobs_registry *reg, size_t hole) {
    COBS_DCHECK(!ctrl_is_empty(reg->ctrl[hole]));
    const size_t mask = reg->mask;
    size_t j = hole;
    for (;;) {
        j = (j + 1) & mask;
        const uint8_t c = reg->ctrl[j];
        if (ctrl_is_empty(c)) break;
        const size_t home = home_of(reg, object_hash(reg->seed, reg->keys[j].object));
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            reg->ctrl[hole] = c;
            reg->keys[hole] = reg->keys[j];
            reg->slots[hole] = reg->slots[j];
            hole = j;
        }
    }
    reg->ctrl[hole] = (uint8_t)COBS_CTRL_EMPTY;
    reg->count--;
}

/* ------------------------------------------------------------------------------------------- */
/* Resizing                                                                                    */
/* ------------------------------------------------------------------------------------------- */

/* Moves every entry into a new array of `new_capacity` buckets. On allocation failure returns
** COBS_NO_MEMORY and leaves the table exactly as it was. Fingerprints do not depend on the
** capacity, so ctrl bytes are copied, not recomputed. */
static cobs_status resize(struct cobs_registry *reg, size_t new_capacity) {
    COBS_DCHECK(new_capacity >= COBS_MIN_CAPACITY && new_capacity <= COBS_MAX_CAPACITY);
    COBS_DCHECK(reg->count <= max_load_of(new_capacity));
    uint8_t *block = reg->allocator.allocate(reg->allocator.user, new_capacity * COBS_BUCKET_BYTES);
    if (block == NULL) return COBS_NO_MEMORY;

    struct cobs_registry old = *reg;
    install_block(reg, block, new_capacity);
    reg->count = 0;
    for (size_t i = 0; i < old.capacity; i++) {
        const uint8_t c = old.ctrl[i];
        if (ctrl_is_empty(c)) continue;
        place(reg, object_hash(reg->seed, old.keys[i].object), c, &old.keys[i], old.slots[i]);
    }
    COBS_CHECK(reg->count == old.count, "resize: entries lost or duplicated while rehashing");
    free_block(&old);
    return COBS_OK;
}

/* Halves the table while it is below 1/8 full, in one resize. Failure is not an error: the
** removal that called this has already succeeded, and a larger table is still a valid one. */
static void maybe_shrink(struct cobs_registry *reg) {
    size_t target = reg->capacity;
    while (target > COBS_MIN_CAPACITY && reg->count < target / COBS_SHRINK_DEN) target /= 2;
    if (target != reg->capacity) (void)resize(reg, target);
}

/* ------------------------------------------------------------------------------------------- */
/* Registry instance                                                                           */
/* ------------------------------------------------------------------------------------------- */

const char *cobs_status_name(cobs_status status) {
    switch (status) {
    case COBS_OK: return "COBS_OK";
    case COBS_EXISTS: return "COBS_EXISTS";
    case COBS_NOT_FOUND: return "COBS_NOT_FOUND";
    case COBS_NO_MEMORY: return "COBS_NO_MEMORY";
    case COBS_INVALID_ARGUMENT: return "COBS_INVALID_ARGUMENT";
    case COBS_BUFFER_TOO_SMALL: return "COBS_BUFFER_TOO_SMALL";
    case COBS_CORRUPT: return "COBS_CORRUPT";
    }
    return "COBS_UNKNOWN_STATUS";
}

cobs_status cobs_registry_create_with(size_t capacity_hint, uint64_t seed,
                                      const cobs_allocator *allocator, cobs_registry **out) {
    if (out == NULL) return COBS_INVALID_ARGUMENT;
    *out = NULL;
    if (allocator == NULL) allocator = &default_allocator;
    if (allocator->allocate == NULL || allocator->deallocate == NULL) return COBS_INVALID_ARGUMENT;
    const size_t capacity = capacity_for_hint(capacity_hint);
    if (capacity == 0) return COBS_INVALID_ARGUMENT;

    struct cobs_registry *reg = allocator->allocate(allocator->user, sizeof *reg);
    if (reg == NULL) return COBS_NO_MEMORY;
    uint8_t *block = allocator->allocate(allocator->user, capacity * COBS_BUCKET_BYTES);
    if (block == NULL) {
        allocator->deallocate(allocator->user, reg, sizeof *reg);
        return COBS_NO_MEMORY;
    }
    reg->allocator = *allocator;
    reg->seed = seed;
    reg->count = 0;
    install_block(reg, block, capacity);
    VERIFY_AFTER_MUTATION(reg);
    *out = reg;
    return COBS_OK;
}

cobs_status cobs_registry_create(size_t capacity_hint, cobs_registry **out) {
    uint64_t seed;
#ifdef COBS_DETERMINISTIC_HASHING
    seed = COBS_DETERMINISTIC_SEED;
#else
    arc4random_buf(&seed, sizeof seed);
#endif
    return cobs_registry_create_with(capacity_hint, seed, NULL, out);
}

void cobs_registry_destroy(cobs_registry *reg) {
    if (reg == NULL) return;
    const cobs_allocator allocator = reg->allocator;
    free_block(reg);
    allocator.deallocate(allocator.user, reg, sizeof *reg);
}

/* ------------------------------------------------------------------------------------------- */
/* Entries                                                                                     */
/* ------------------------------------------------------------------------------------------- */

static bool key_is_valid(const cobs_key *key) {
    return key->object != 0 && key->reserved_ == 0;
}

cobs_status cobs_registry_insert(cobs_registry *reg, cobs_key key, cobs_slot slot,
                                 cobs_slot *existing) {
    if (reg == NULL || !key_is_valid(&key)) return COBS_INVALID_ARGUMENT;
    const uint64_t ohash = object_hash(reg->seed, key.object);
    cobs_status status = COBS_OK;

    const size_t at = find_position(reg, &key, ohash);
    if (at != NO_POSITION) {
        if (existing != NULL) *existing = reg->slots[at];
        status = COBS_EXISTS;
    } else if (reg->count + 1 > max_load_of(reg->capacity) &&
               (reg->capacity > COBS_MAX_CAPACITY / COBS_GROWTH_FACTOR ||
                resize(reg, reg->capacity * COBS_GROWTH_FACTOR) != COBS_OK)) {
        status = COBS_NO_MEMORY;
    } else {
        place(reg, ohash, fingerprint_of(ohash, key.key), &key, slot);
    }
    VERIFY_AFTER_MUTATION(reg);
    return status;
}

cobs_status cobs_registry_find(const cobs_registry *reg, cobs_key key, cobs_slot *out) {
    if (reg == NULL || out == NULL || !key_is_valid(&key)) return COBS_INVALID_ARGUMENT;
    const size_t at = find_position(reg, &key, object_hash(reg->seed, key.object));
    if (at == NO_POSITION) return COBS_NOT_FOUND;
    *out = reg->slots[at];
    return COBS_OK;
}

cobs_status cobs_registry_remove(cobs_registry *reg, cobs_key key, cobs_slot *removed) {
    if (reg == NULL || !key_is_valid(&key)) return COBS_INVALID_ARGUMENT;
    cobs_status status = COBS_NOT_FOUND;
    const size_t at = find_position(reg, &key, object_hash(reg->seed, key.object));
    if (at != NO_POSITION) {
        if (removed != NULL) *removed = reg->slots[at];
        erase_at(reg, at);
        maybe_shrink(reg);
        status = COBS_OK;
    }
    VERIFY_AFTER_MUTATION(reg);
    return status;
}

cobs_status cobs_registry_lookup(const cobs_registry *reg, uintptr_t object, uint32_t key,
                                 cobs_slot *out, size_t capacity, size_t *count) {
    if (reg == NULL || count == NULL || object == 0 || (out == NULL && capacity > 0)) {
        return COBS_INVALID_ARGUMENT;
    }
    const uint64_t ohash = object_hash(reg->seed, object);
    const uint8_t fp = fingerprint_of(ohash, key);
    size_t n = 0;
    for (size_t i = home_of(reg, ohash);; i = (i + 1) & reg->mask) {
        const uint8_t c = reg->ctrl[i];
        if (ctrl_is_empty(c)) break;
        if (c != fp || reg->keys[i].object != object || reg->keys[i].key != key) continue;
        if (n < capacity) out[n] = reg->slots[i];
        n++;
    }
    *count = n;
    return n > capacity ? COBS_BUFFER_TOO_SMALL : COBS_OK;
}

cobs_status cobs_registry_object_entries(const cobs_registry *reg, uintptr_t object,
                                         cobs_key *keys_out, cobs_slot *slots_out,
                                         size_t capacity, size_t *count) {
    if (reg == NULL || count == NULL || object == 0 ||
        (keys_out == NULL && slots_out == NULL && capacity > 0)) {
        return COBS_INVALID_ARGUMENT;
    }
    size_t n = 0;
    for (size_t i = home_of(reg, object_hash(reg->seed, object));; i = (i + 1) & reg->mask) {
        if (ctrl_is_empty(reg->ctrl[i])) break;
        if (reg->keys[i].object != object) continue;
        if (n < capacity) {
            if (keys_out != NULL) keys_out[n] = reg->keys[i];
            if (slots_out != NULL) slots_out[n] = reg->slots[i];
        }
        n++;
    }
    *count = n;
    return n > capacity ? COBS_BUFFER_TOO_SMALL : COBS_OK;
}

cobs_status cobs_registry_remove_object(cobs_registry *reg, uintptr_t object, cobs_slot *slots_out,
                                        size_t capacity, size_t *count) {
    if (reg == NULL || count == NULL || object == 0 || (slots_out == NULL && capacity > 0)) {
        return COBS_INVALID_ARGUMENT;
    }
    const size_t home = home_of(reg, object_hash(reg->seed, object));

    /* Count first, so that a short buffer removes nothing. */
    size_t n = 0;
    for (size_t i = home; !ctrl_is_empty(reg->ctrl[i]); i = (i + 1) & reg->mask) {
        if (reg->keys[i].object == object) n++;
    }
    *count = n;
    if (n > capacity) {
        VERIFY_AFTER_MUTATION(reg);
        return COBS_BUFFER_TOO_SMALL;
    }

    /* Remove. Backward shift may move a later entry (possibly another of this object's) into the
    ** bucket just emptied, so after a removal the same bucket is examined again. The run from
    ** `home` stays intact up to the scan position: erase_at only empties a bucket at or after it,
    ** and by the reachability invariant no entry of the object lies beyond the first empty one. */
    size_t removed = 0;
    size_t i = home;
    while (!ctrl_is_empty(reg->ctrl[i])) {
        if (reg->keys[i].object == object) {
            COBS_CHECK(removed < n, "remove_object: more entries than counted");
            slots_out[removed++] = reg->slots[i];
            erase_at(reg, i);
        } else {
            i = (i + 1) & reg->mask;
        }
    }
    COBS_CHECK(removed == n, "remove_object: fewer entries than counted");
    if (n != 0) maybe_shrink(reg); /* a no-op call must not undo a capacity hint */
    VERIFY_AFTER_MUTATION(reg);
    return COBS_OK;
}

size_t cobs_registry_count(const cobs_registry *reg) {
    return reg == NULL ? 0 : reg->count;
}
