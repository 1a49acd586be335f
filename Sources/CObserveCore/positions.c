/*
** ObserveCore C core: the element-position index (element address -> slots of the caller's ring).
** The contract, including the RING INVARIANT, is include/cobs_positions.h; this block is the why.
**
** Prefix rule: every exported symbol starts with `cobs_`; everything else in this file is `static`
** and unprefixed.
**
** ============================================================================================
** Design
** ============================================================================================
**
** What it is for. An observed array with element key paths must report "element E changed, at
** index i" without scanning the array, for arrays of 100,000 elements, and must keep doing so
** while the array is mutated, without re-indexing on an insertion at the front. The array keeps
** its elements in a ring (slot (head + i) & mask holds logical index i); the index maps an
** element's address to the SLOTS that hold it, and the caller turns a slot into an index with
** (slot - head) & mask. Front insertions and appends change no slot, so they touch nothing here.
**
** WHY ONLY SLOT + FINGERPRINT. The memory target is at most 16 bytes per element at 100,000
** elements (at least 17x less than one naive observer per element). A bucket that stored the
** element's address (8 bytes) next to its slot (4) and a control byte would cost 13 bytes, and
** 13 / load-factor is over 16 for any load factor a linear probe tolerates. But the address is
** redundant: the caller's ring already holds it at ring[slot]. So a bucket is a 32-bit slot and
** a 1-byte control: 5 bytes. Confirming a candidate costs one read of ring[slot] (the ring the
** caller passes in), which happens only when the 7-bit fingerprint matches, i.e. for the
** element's own entries and for 1 in 128 of the others. The price is the RING INVARIANT (every
** entry's slot holds its element whenever a call receives the ring) and that rehashing and
** backward-shift deletion read the ring to recompute an entry's home.
**
** Bucket layout, capacity = 2^k buckets (k >= 4), ONE allocation of 5 * capacity bytes:
**
**   offset 0          uint8_t  ctrl[capacity];   0x80 = empty | 0b0fffffff = full, f = fingerprint
**   offset capacity   uint32_t slots[capacity];  the ring slot of the entry (empty: garbage)
**
**   +----+----+--...--+----+----------+----------+--...--+
**   | c0 | c1 |       | cN |  slot 0  |  slot 1  |       |
**   +----+----+--...--+----+----------+----------+--...--+
**   ^ ctrl               ^ slots = ctrl + capacity (4-aligned: capacity is a multiple of 16)
**
** Parallel arrays, as in the registry: a probe reads ctrl[] (64 buckets per cache line) and
** touches slots[] only on a fingerprint match.
**
** LOAD FACTOR 7/8. Bytes per element = 5 / load. The table grows x2 when an insertion would pass
** 7/8, so right after growth it is just over 7/16 full: the load stays in (7/16, 7/8], i.e.
** 5.7 to 11.4 bytes per element, under the 16-byte target even in the worst case (3/4 would also
** fit, 6.7 to 13.3 bytes, but with less margin for the struct and the Swift side). At exactly
** 100,000 elements the table has 131,072 buckets (load 0.76): 655,360 bytes, 6.55 B/element.
** The cost is probe length: linear probing at load a expects (1 + 1/(1-a)^2) / 2 buckets for a
** probe that runs to an empty bucket, about 9 at 0.76 and 32 at 7/8. Every lookup is such a probe
** (an element may sit in several slots, so a lookup continues to the end of the cluster), but
** it reads only ctrl bytes, 64 to a cache line, so even 32 buckets are one or two lines; the
** ring is read only on fingerprint matches.
**
** HASHING. The element address is xor-ed with a 64-bit per-index seed (arc4random_buf unless the
** caller passes one) and mixed with MurmurHash3's fmix64 (mix64 in cobs_internal.h). The HOME
** bucket is the top k bits of the hash, the FINGERPRINT its low 7 bits: disjoint bits of one hash,
** independent for every capacity up to 2^57. Aligned addresses (16-byte steps, a few middle bits
** varying) spread as well as random ones (PositionIndexTests pins the longest displacement for
** 100,000 consecutive 16-byte-aligned addresses). Every entry of one element has the same home
** and the same fingerprint, so an element's duplicates sit in one cluster and one lookup finds
** them all.
**
** DELETION: BACKWARD SHIFT, NO TOMBSTONES (tombstones never have to be purged). An array under
** edit churns its index constantly; tombstones would pile up exactly there. When an entry is
** removed, each later entry of its cluster whose home is not cyclically inside (hole, j] moves
** back into the hole, so the table is always one that insertions alone could have produced and
** probe lengths depend only on the live load. The entry to remove is found by (fingerprint,
** slot) in the element's cluster, without reading the ring (the caller may already have
** overwritten ring[slot]); a slot identifies an entry, because each slot holds one element. The
** entries shifted are homed by reading the ring. A consequence of storing no address: a WRONG
** pair, naming a slot recorded for ANOTHER element, is reported COBS_NOT_FOUND unless that
** element shares the fingerprint and the cluster (about 1 in 128 of such calls, fewer when
** clusters are short), in which case the other element's entry is the one forgotten. That is
** a caller bug the index cannot see without the 8 bytes per bucket it exists to save; a pair
** with a slot that no entry has is always COBS_NOT_FOUND. move identifies its entry the same way. FAILURE MODE: a long cluster makes every
** lookup, insertion and removal in it walk it all; at 7/8 load clusters are long (see above),
** which is the price paid for 5-byte buckets. cobs_positions_max_displacement reports the tail.
**
** DUPLICATES: ONE BUCKET PER ELEMENT, A RECORD FOR ITS COPIES. An element present k times must
** not cost k buckets: they would share one home, so they would form one cluster of k that every
** insertion, removal and lookup of the element (and of its neighbours) walks — appending 65,536
** copies of one element took 6.4 s. So a bucket holds either a plain slot (the element's only
** copy) or, with POS_RECORD_BIT set, the index of a DUPLICATE RECORD: the element's address and
** the stored slots of all its copies, unordered, in one array. `dup_pos[slot]` gives a copy's
** position in its record, so a copy is removed (swap with the record's last), moved or checked in
** O(1); dup_pos is read only after checking `record->slots[dup_pos[slot]] == slot`, so stale
** values are harmless. A record is made when a second copy arrives and dissolved when one copy is
** left. The price: stored slots must leave the top bit free, so rings hold at most 2^31 slots.
** Records are few (one per duplicated element) and come from the caller's allocator.
**
** MOVE. Moving an element from slot a to slot b rewrites one bucket's slot in place (or one slot
** of its record): the home depends on the element, not on the slot, so nothing is rehashed and
** the ring is not read.
**
** SHIFT LOG. An insertion or removal in the middle of the ring moves a whole block of elements
** (the shorter side) by a few slots. Rewriting each moved element's entry costs a probe per
** element; marking the index stale and rebuilding it costs a probe per element of the ARRAY, paid
** by the next lookup — so a service that interleaves middle edits with element changes paid a
** full rebuild per edit. Instead, cobs_positions_shift records the block move in a small log
** (POS_LOG_MIN to POS_LOG_CAPACITY records, more for larger indexes: log_limit) and touches no
** entry. Entries then hold STORED slots, the slots their
** elements had when the log was last empty; a record (a block move, kept as (origin, a, b): see
** shift_record) is a rotation of the slot range it covers (the block moves by delta, the delta
** slots it moved into take its place), so the log is a permutation of slot numbers: forward() maps a stored slot to the element's
** current slot (every ring read and every slot a lookup returns goes through it), to_stored()
** maps a current slot back (insert, remove and move translate the slot they are given). With an
** empty log both are the identity and cost one compare. A lookup pays O(log length) per matching
** candidate; when the log is full, cobs_positions_shift answers COBS_BUFFER_TOO_SMALL and the
** caller either folds the log into the entries (cobs_positions_fold, FOLDING THE LOG below: about
** 1 ns per bucket, without reading the ring) or lets the index fall behind and rebuilds it later
** (a probe per element). The Swift side folds when element changes look the index up between
** edits, and otherwise marks the index stale and rebuilds it at the next lookup, so a burst of
** edits that nobody looks up between skips index upkeep. Either way the cost is paid once per
** log_limit() bulk moves at most, not once per move. While the log is not empty the ring must
** keep its size (log_mask): a ring that grows is re-indexed anyway.
**
** SAFETY AGAINST A BAD RING. The index cannot know the ring's real size, but it remembers an
** upper bound of every slot it has stored (slot_bound); every call that reads the ring first
** checks that mask + 1 >= slot_bound, so it never reads outside ring[0...mask] as long as the ring
** really has mask + 1 words. A ring that breaks the ring invariant in other ways can make answers
** wrong, never make a read go out of bounds or a loop run forever (at least 1/8 of the buckets
** are always empty). Insertion checks ring[slot] == element and that the pair is new (its probe
** passes every entry of the element anyway); growth checks each rehashed entry's fingerprint
** against its ring element and, on a mismatch, abandons the new table and reports
** COBS_INVALID_ARGUMENT.
**
** ALLOCATION. The struct and the bucket block come from the caller's allocator (malloc/free by
** default). Growth allocates the new block before touching the old one, so COBS_NO_MEMORY leaves
** the index as it was. Removal never shrinks; rebuild sizes the table for its count (reusing the
** block when it is no more than 4x too large, and also when a smaller one cannot be allocated).
*/

#include "cobs_internal.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cobs_positions.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ------------------------------------------------------------------------------------------- */
/* Table mechanics                                                                             */
/* ------------------------------------------------------------------------------------------- */

#define POS_CTRL_EMPTY 0x80u  /* ctrl byte of an empty bucket */
#define POS_FP_MASK 0x7fu     /* fingerprint = the low 7 bits of the hash */
#define POS_MIN_CAPACITY 16u
#define POS_MAX_LOAD_NUM 7u   /* grow when count would exceed capacity * 7/8 */
#define POS_MAX_LOAD_DEN 8u
#define POS_REBUILD_SLACK 4u  /* rebuild keeps a block up to 4x larger than needed */
#define POS_BUCKET_BYTES (sizeof(uint8_t) + sizeof(uint32_t))
#define POS_LOG_CAPACITY 128u /* most block moves remembered before a fold or rebuild is needed */
#define POS_LOG_MIN 32u        /* ... and the fewest (small indexes: a fold or rebuild is cheap) */
#define POS_LOG_ENTRIES_PER_RECORD 512u /* the log may hold one record per this many entries */
/* A bucket's slot field with this bit set holds a duplicate record's index, not a slot; so stored
** slots are below 2^31 and a ring has at most 2^31 slots (mask <= POS_MAX_MASK). */
#define POS_RECORD_BIT 0x80000000u
#define POS_MAX_MASK 0x7fffffffu
#define POS_NO_RECORD UINT32_MAX /* end of the free-record list */
/* One bucket per distinct element, at most 2^31 of them, which fit in 2^32 buckets at 7/8. On
** 32-bit targets the block size must fit size_t: 2^28 * 5 < 2^32. */
#define POS_MAX_CAPACITY ((size_t)1 << (sizeof(size_t) >= 8 ? 32 : 28))
/* Seed used for seed 0 under COBS_DETERMINISTIC_HASHING (digits of e). */
#define POS_DETERMINISTIC_SEED UINT64_C(0x2B7E151628AED2A6)
/* Debug builds with COBS_INTERNAL_CHECKS verify the whole index after every successful call that
** receives the ring, but only up to this capacity: the check is O(capacity), and tests build
** indexes of 100,000 entries. */
#define POS_VERIFY_MAX_CAPACITY 4096u

static_assert(POS_CTRL_EMPTY == 0x80 && POS_FP_MASK == 0x7f,
              "the high bit marks empty, so every 7-bit fingerprint is a valid full byte");
static_assert(POS_BUCKET_BYTES == 5, "the layout diagram: 1 ctrl byte + a 32-bit slot per bucket");
static_assert(POS_MIN_CAPACITY % sizeof(uint32_t) == 0,
              "ctrl[] is capacity bytes long and must leave slots[] 4-aligned");
static_assert(POS_MIN_CAPACITY % POS_MAX_LOAD_DEN == 0, "capacity * 7/8 is exact");
static_assert(POS_MAX_LOAD_NUM < POS_MAX_LOAD_DEN,
              "at least one bucket stays empty, so every probe loop ends");
static_assert(POS_BUCKET_BYTES * POS_MAX_LOAD_DEN * 2 <= 16 * POS_MAX_LOAD_NUM,
              "just after growth (load 7/16) a bucket costs at most 16 bytes per element");
static_assert(sizeof(uintptr_t) <= sizeof(uint64_t), "addresses are hashed as uint64_t");
static_assert(POS_LOG_MIN >= 1 && POS_LOG_MIN <= POS_LOG_CAPACITY, "log_limit's bounds");

/* An index. Opaque outside this file.
**
** Invariants (cobs_positions_check_invariants verifies each against the caller's ring):
**   - capacity is a power of two in [POS_MIN_CAPACITY, POS_MAX_CAPACITY], mask == capacity - 1,
**     shift == 64 - log2(capacity), slots == (uint32_t *)(ctrl + capacity);
**   - count == the number of full buckets <= capacity * 7/8; entries == the number of (element,
**     slot) pairs: one per plain bucket, plus each record's count;
**   - a full bucket's ELEMENT is ring[slot] (plain) or its record's element; its ctrl byte is
**     hash(element) & 0x7f, and no other full bucket has the same element;
**   - a record named by a bucket is in use (element != 0), named by that bucket only, holds
**     count >= 2 distinct slots, each holding the element in the ring, and dup_pos[s] is the
**     position of each of its slots s; free records are chained through `count` from
**     free_record;
**   - reachability: every bucket from an entry's home to the entry is full;
**   - every stored slot (plain or in a record) is < slot_bound <= 2^31, and no two are equal;
**   - log_count <= POS_LOG_CAPACITY; with log_count > 0, slot_bound == log_mask + 1 and the ring
**     read through forward() is what the points above speak of. */
/* A block move, normalised so that it and its inverse are one function (step()): seen from
** `origin`, the first slot it affects, it moves slots [origin, origin + a) up by b and slots
** [origin + a, origin + a + b) down by a; its inverse is the same with a and b swapped. A block
** [start, start + length) moving up by d is (origin start, a length, b d); moving down by e, it is
** (origin start - e, a e, b length): the e slots it moves into go up by length, the block down by e. */
typedef struct shift_record {
    uint32_t origin;
    uint32_t a;
    uint32_t b; /* a + b <= log_mask + 1; neither is 0 */
} shift_record;

/* The copies of an element present more than once (see DUPLICATES above). */
typedef struct dup_record {
    uintptr_t element; /* 0 while the record is free */
    uint32_t *slots;   /* stored slots of every copy, unordered; capacity words */
    uint32_t count;    /* copies (>= 2) while in use; the next free record while free */
    uint32_t capacity;
} dup_record;

struct cobs_positions {
    uint8_t *ctrl;            /* ctrl[capacity]; start of the one block */
    uint32_t *slots;          /* slots[capacity], inside the block */
    size_t capacity;          /* buckets, a power of two */
    size_t mask;              /* capacity - 1 */
    size_t count;             /* full buckets: distinct elements */
    size_t entries;           /* (element, slot) pairs */
    dup_record *records;      /* records[record_count], record_capacity allocated */
    uint32_t record_count;
    uint32_t record_capacity;
    uint32_t free_record;     /* first free record, or POS_NO_RECORD */
    uint32_t *dup_pos;        /* dup_pos[dup_pos_length]: stored slot -> position in its record */
    size_t dup_pos_length;
    uint64_t seed;            /* hash seed */
    uint64_t slot_bound;      /* every stored slot is < slot_bound (0 when empty after clear) */
    unsigned shift;           /* 64 - log2(capacity): home = hash >> shift */
    cobs_allocator allocator; /* copied at creation */
    uint32_t log_count;       /* block moves recorded since the log was last empty */
    uint32_t log_mask;        /* the ring's mask while log_count > 0 */
    shift_record log[POS_LOG_CAPACITY];
};

/* One record (origin, a, b) applied to slot t (see shift_record). Slot arithmetic is mod mask + 1, a
** power of two dividing 2^32, so uint32_t wrap-around followed by `& mask` is exact. With branches
** on purpose: a branch-free step (two conditional moves) puts about six cycles per record on the
** chain through the log, and a lookup through a 128-record log went from 92 to 143 ns (C driver,
** 100,000 elements); predicted branches leave the chain at an add. */
static inline uint32_t step(uint32_t t, uint32_t origin, uint32_t a, uint32_t b, uint32_t mask) {
    const uint32_t o = (t - origin) & mask;
    if (o < a) return (t + b) & mask;
    if (o < a + b) return (t - a) & mask;
    return t;
}

/* The current slot of an entry that stores `stored`. */
static inline uint32_t forward(const struct cobs_positions *pos, uint32_t stored) {
    uint32_t t = stored;
    for (uint32_t i = 0; i < pos->log_count; i++) {
        const shift_record *r = &pos->log[i];
        t = step(t, r->origin, r->a, r->b, pos->log_mask);
    }
    return t;
}

/* The stored slot of the entry whose element is now in slot `current` (forward's inverse). */
static inline uint32_t to_stored(const struct cobs_positions *pos, uint32_t current) {
    uint32_t t = current;
    for (uint32_t i = pos->log_count; i-- > 0;) {
        const shift_record *r = &pos->log[i];
        t = step(t, r->origin, r->b, r->a, pos->log_mask);
    }
    return t;
}

/* How many block moves the log takes before it must be folded or the index rebuilt: either costs
** O(entries) and every slot translation walks the whole log, so the log grows with the index (one
** record per POS_LOG_ENTRIES_PER_RECORD entries), between POS_LOG_MIN and POS_LOG_CAPACITY
** records. At 100k entries (128 records) a middle insertion then pays a quarter of the fold or
** rebuild it paid with 32. */
static inline uint32_t log_limit(const struct cobs_positions *pos) {
    const size_t wanted = pos->count / POS_LOG_ENTRIES_PER_RECORD;
    return wanted < POS_LOG_MIN ? POS_LOG_MIN : wanted > POS_LOG_CAPACITY ? POS_LOG_CAPACITY : (uint32_t)wanted;
}

/* Whether `mask` is the ring the log speaks of (any ring while the log is empty). */
static inline bool log_accepts(const struct cobs_positions *pos, uint32_t mask) {
    return pos->log_count == 0 || mask == pos->log_mask;
}

static inline uint64_t hash_of(const struct cobs_positions *pos, uintptr_t element) {
    return mix64((uint64_t)element ^ pos->seed);
}

static inline size_t home_of(const struct cobs_positions *pos, uint64_t h) {
    return (size_t)(h >> pos->shift);
}

static inline uint8_t fingerprint_of(uint64_t h) {
    return (uint8_t)(h & POS_FP_MASK);
}

static inline bool is_empty(uint8_t c) {
    return (c & POS_CTRL_EMPTY) != 0;
}

static inline size_t max_load_of(size_t capacity) {
    return capacity / POS_MAX_LOAD_DEN * POS_MAX_LOAD_NUM;
}

/* mask + 1 is a power of two, at most 2^31 (see POS_RECORD_BIT). */
static inline bool mask_is_valid(uint32_t mask) {
    return (((uint64_t)mask + 1) & (uint64_t)mask) == 0 && mask <= POS_MAX_MASK;
}

static inline bool is_record(uint32_t field) {
    return (field & POS_RECORD_BIT) != 0;
}

static inline dup_record *record_of(const struct cobs_positions *pos, uint32_t field) {
    return &pos->records[field & ~POS_RECORD_BIT];
}

/* The element bucket `i` (full) stands for: its record's, or the ring's at its slot. */
/* The element address in ring slot `slot`. The ring is the caller's storage of object
 * references: it is read through memcpy, not through a uintptr_t lvalue, so that how the caller
 * typed that memory does not matter to C's aliasing rules. Compiles to one load. */
static inline uintptr_t ring_at(const void *ring, size_t slot) {
    uintptr_t element;
    memcpy(&element, (const unsigned char *)ring + slot * sizeof element, sizeof element);
    return element;
}

static inline uintptr_t bucket_element(const struct cobs_positions *pos, const void *ring, size_t i) {
    const uint32_t field = pos->slots[i];
    return is_record(field) ? record_of(pos, field)->element : ring_at(ring, forward(pos, field));
}

/* Whether `record` holds stored slot `slot`, and where. */
static inline bool record_holds(const struct cobs_positions *pos, const dup_record *record, uint32_t slot,
                                uint32_t *position) {
    if ((size_t)slot >= pos->dup_pos_length) return false;
    const uint32_t p = pos->dup_pos[slot];
    if (p >= record->count || record->slots[p] != slot) return false;
    *position = p;
    return true;
}

/* Whether a ring of mask + 1 words can hold every slot the index has stored. */
static inline bool ring_covers(const struct cobs_positions *pos, uint32_t mask) {
    return pos->slot_bound <= (uint64_t)mask + 1;
}

static size_t capacity_for(size_t entries) {
    size_t capacity = POS_MIN_CAPACITY;
    while (max_load_of(capacity) < entries) {
        if (capacity >= POS_MAX_CAPACITY) return 0;
        capacity *= 2;
    }
    return capacity;
}

static unsigned log2_of(size_t power_of_two) {
    unsigned k = 0;
    while (((size_t)1 << k) < power_of_two) k++;
    return k;
}

/* Points the index at `block` of `capacity` buckets, all empty. Leaves count alone. */
static void install(struct cobs_positions *pos, uint8_t *block, size_t capacity) {
    pos->ctrl = block;
    pos->slots = (uint32_t *)(void *)(block + capacity);
    pos->capacity = capacity;
    pos->mask = capacity - 1;
    pos->shift = 64u - log2_of(capacity);
    memset(block, POS_CTRL_EMPTY, capacity);
}

static void free_block(struct cobs_positions *pos) {
    pos->allocator.deallocate(pos->allocator.user, pos->ctrl, pos->capacity * POS_BUCKET_BYTES);
}

/* Stores an entry into the first empty bucket from its home. Room is guaranteed by the caller. */
static void place(struct cobs_positions *pos, uint64_t h, uint8_t fp, uint32_t slot) {
    COBS_DCHECK(pos->count < pos->capacity);
    size_t i = home_of(pos, h);
    while (!is_empty(pos->ctrl[i])) i = (i + 1) & pos->mask;
    pos->ctrl[i] = fp;
    pos->slots[i] = slot;
    pos->count++;
}

/* The bucket of the entry (element, slot), or SIZE_MAX; for a duplicated element also the
** slot's position in the record (*position, else POS_NO_RECORD). Does not read the ring. */
static size_t find_entry(const struct cobs_positions *pos, uintptr_t element, uint32_t slot, uint32_t *position) {
    const uint64_t h = hash_of(pos, element);
    const uint8_t fp = fingerprint_of(h);
    *position = POS_NO_RECORD;
    for (size_t i = home_of(pos, h);; i = (i + 1) & pos->mask) {
        const uint8_t c = pos->ctrl[i];
        if (is_empty(c)) return SIZE_MAX;
        if (c != fp) continue;
        const uint32_t field = pos->slots[i];
        if (!is_record(field)) {
            if (field == slot) return i;
            continue;
        }
        const dup_record *record = record_of(pos, field);
        if (record->element == element) return record_holds(pos, record, slot, position) ? i : SIZE_MAX;
    }
}

/* Makes dup_pos cover stored slot `slot` (new words zeroed: stale values are checked anyway, but
** never left uninitialised). COBS_NO_MEMORY leaves it as it was. */
static cobs_status cover_dup_pos(struct cobs_positions *pos, uint32_t slot) {
    if ((size_t)slot < pos->dup_pos_length) return COBS_OK;
    size_t length = pos->dup_pos_length < 64 ? 64 : pos->dup_pos_length;
    while (length <= (size_t)slot) length *= 2;
    uint32_t *grown = pos->allocator.allocate(pos->allocator.user, length * sizeof *grown);
    if (grown == NULL) return COBS_NO_MEMORY;
    if (pos->dup_pos_length > 0) memcpy(grown, pos->dup_pos, pos->dup_pos_length * sizeof *grown);
    memset(grown + pos->dup_pos_length, 0, (length - pos->dup_pos_length) * sizeof *grown);
    if (pos->dup_pos != NULL) {
        pos->allocator.deallocate(pos->allocator.user, pos->dup_pos, pos->dup_pos_length * sizeof *grown);
    }
    pos->dup_pos = grown;
    pos->dup_pos_length = length;
    return COBS_OK;
}

/* Adds stored slot `slot` to `record` (which must not hold it). COBS_NO_MEMORY: unchanged. */
static cobs_status record_add(struct cobs_positions *pos, dup_record *record, uint32_t slot) {
    cobs_status st = cover_dup_pos(pos, slot);
    if (st != COBS_OK) return st;
    if (record->count == record->capacity) {
        const uint32_t capacity = record->capacity * 2;
        uint32_t *grown = pos->allocator.allocate(pos->allocator.user, (size_t)capacity * sizeof *grown);
        if (grown == NULL) return COBS_NO_MEMORY;
        memcpy(grown, record->slots, (size_t)record->count * sizeof *grown);
        pos->allocator.deallocate(pos->allocator.user, record->slots, (size_t)record->capacity * sizeof *grown);
        record->slots = grown;
        record->capacity = capacity;
    }
    pos->dup_pos[slot] = record->count;
    record->slots[record->count++] = slot;
    return COBS_OK;
}

/* A new record of `element` holding stored slots `a` and `b`; its index in *out. COBS_NO_MEMORY
** leaves the index as it was. */
static COBS_NOINLINE cobs_status record_new(struct cobs_positions *pos, uintptr_t element, uint32_t a, uint32_t b, uint32_t *out) {
    const uint32_t larger = a > b ? a : b;
    cobs_status st = cover_dup_pos(pos, larger);
    if (st != COBS_OK) return st;
    if (pos->free_record == POS_NO_RECORD && pos->record_count == pos->record_capacity) {
        const uint32_t capacity = pos->record_capacity == 0 ? 4 : pos->record_capacity * 2;
        if (capacity > POS_MAX_MASK) return COBS_NO_MEMORY;
        dup_record *grown = pos->allocator.allocate(pos->allocator.user, (size_t)capacity * sizeof *grown);
        if (grown == NULL) return COBS_NO_MEMORY;
        if (pos->record_count > 0) memcpy(grown, pos->records, (size_t)pos->record_count * sizeof *grown);
        if (pos->records != NULL) {
            pos->allocator.deallocate(pos->allocator.user, pos->records, (size_t)pos->record_capacity * sizeof *grown);
        }
        pos->records = grown;
        pos->record_capacity = capacity;
    }
    uint32_t *slots = pos->allocator.allocate(pos->allocator.user, 4 * sizeof *slots);
    if (slots == NULL) return COBS_NO_MEMORY;
    uint32_t index;
    if (pos->free_record != POS_NO_RECORD) {
        index = pos->free_record;
        pos->free_record = pos->records[index].count;
    } else {
        index = pos->record_count++;
    }
    slots[0] = a;
    slots[1] = b;
    pos->records[index] = (dup_record){element, slots, 2, 4};
    pos->dup_pos[a] = 0;
    pos->dup_pos[b] = 1;
    *out = index;
    return COBS_OK;
}

/* Returns record `index` to the free list, freeing its slots. */
static void record_free(struct cobs_positions *pos, uint32_t index) {
    dup_record *record = &pos->records[index];
    pos->allocator.deallocate(pos->allocator.user, record->slots, (size_t)record->capacity * sizeof *record->slots);
    *record = (dup_record){0, NULL, pos->free_record, 0};
    pos->free_record = index;
}

/* Cold: kept out of add_pair, whose frame would otherwise hold a copy of the whole index (its
** shift log included) and spill the probe loop's registers. */
static COBS_NOINLINE COBS_COLD cobs_status resize(struct cobs_positions *pos, const void *ring, size_t capacity);

/* Frees every record (the index is being cleared or destroyed). */
static void records_clear(struct cobs_positions *pos) {
    for (uint32_t i = 0; i < pos->record_count; i++) {
        dup_record *record = &pos->records[i];
        if (record->element != 0) {
            pos->allocator.deallocate(pos->allocator.user, record->slots,
                                      (size_t)record->capacity * sizeof *record->slots);
        }
    }
    pos->record_count = 0;
    pos->free_record = POS_NO_RECORD;
}

/* Whether bucket `i` (full, fingerprint already matched) names `element`: its record does, or the
** ring slot its plain entry stores holds it. */
static inline bool bucket_names(const struct cobs_positions *pos, const void *ring, size_t i, uintptr_t element) {
    const uint32_t field = pos->slots[i];
    if (is_record(field)) return record_of(pos, field)->element == element;
    return ring_at(ring, forward(pos, field)) == element;
}

/* Walks `element`'s probe sequence (from its `home` bucket, fingerprint `fp`) up to its first
** empty bucket. `element` may be 0 for "the element in stored slot `slot`": the ring is then read
** only when a fingerprint matches (the partitioned rebuild passes it so, see there).
** Returns the bucket that already names the element, or SIZE_MAX with *empty set to that first
** empty bucket (where a new entry goes): add_pair used to walk it once for duplicates and place()
** a second time for the empty bucket. With SSE2 it reads 16 control bytes at a time (one compare
** for "empty", one for the fingerprint), so the walk's exit is one predictable branch per 16
** buckets instead of a data-dependent branch per bucket. That executes more instructions than the
** one or two buckets a 0.61-loaded table usually probes (callgrind, add_pair per element at 10k:
** 80.6 before, 68.8 with one scalar walk, 102 with groups) but mispredicts less, and time is what
** it buys: array.setup at 100k went from 25.2 to 24 (one walk) and 21.7 ns per element (groups).
** A group that would run past the end of the table takes the bucket-by-bucket path, which wraps. */
static inline size_t probe_for_insert(const struct cobs_positions *pos, const void *ring, uintptr_t element,
                                      uint32_t slot, size_t home, uint8_t fp, size_t *empty) {
    size_t i = home;
    for (;;) {
#if defined(__SSE2__)
        if (i + 16 <= pos->capacity) {
            const __m128i group = _mm_loadu_si128((const __m128i *)(const void *)(pos->ctrl + i));
            const unsigned empties = (unsigned)_mm_movemask_epi8(group); /* POS_CTRL_EMPTY is the top bit */
            unsigned matches = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(group, _mm_set1_epi8((char)fp)));
            const unsigned stop = empties != 0 ? (unsigned)__builtin_ctz(empties) : 16u;
            if (stop < 16u) matches &= (1u << stop) - 1u;
            while (matches != 0) {
                const size_t k = i + (size_t)__builtin_ctz(matches);
                if (element == 0) element = ring_at(ring, forward(pos, slot));
                if (bucket_names(pos, ring, k, element)) return k;
                matches &= matches - 1u;
            }
            if (stop < 16u) {
                *empty = i + stop;
                return SIZE_MAX;
            }
            i = (i + 16) & pos->mask;
            continue;
        }
#endif
        const uint8_t c = pos->ctrl[i];
        if (is_empty(c)) {
            *empty = i;
            return SIZE_MAX;
        }
        if (c == fp) {
            if (element == 0) element = ring_at(ring, forward(pos, slot));
            if (bucket_names(pos, ring, i, element)) return i;
        }
        i = (i + 1) & pos->mask;
    }
}

/* Fills empty bucket `i` with a new element's entry (fingerprint `fp`, stored slot `slot`). */
static inline void fill_bucket(struct cobs_positions *pos, size_t i, uint8_t fp, uint32_t slot) {
    COBS_DCHECK(is_empty(pos->ctrl[i]));
    pos->ctrl[i] = fp;
    pos->slots[i] = slot;
    pos->count++;
    pos->entries++;
}

/* Records (element, slot) for an element the index holds already, in bucket `i` (found by
** probe_for_insert): the copy joins the element's record, or starts one with the plain slot the
** bucket held. COBS_INVALID_ARGUMENT when the pair is already recorded; COBS_NO_MEMORY; either
** leaves the index as it was. Takes no new bucket: the table does not grow. */
static cobs_status join_copy(struct cobs_positions *pos, size_t i, uintptr_t element, uint32_t slot) {
    const uint32_t field = pos->slots[i];
    if (is_record(field)) {
        dup_record *record = record_of(pos, field);
        uint32_t position;
        if (record_holds(pos, record, slot, &position)) return COBS_INVALID_ARGUMENT;
        const cobs_status st = record_add(pos, record, slot);
        if (st == COBS_OK) pos->entries++;
        return st;
    }
    if (field == slot) return COBS_INVALID_ARGUMENT;
    uint32_t index;
    const cobs_status st = record_new(pos, element, field, slot, &index);
    if (st != COBS_OK) return st;
    pos->slots[i] = POS_RECORD_BIT | index;
    pos->entries++;
    return COBS_OK;
}

/* Records (element, slot) — ring[forward(slot)] == element — joining the element's bucket or
** record when it has one. Grows the table (reading the ring) when a new bucket is needed.
** COBS_INVALID_ARGUMENT when the pair is already recorded (found on the same walk, so an
** insertion probes once); COBS_NO_MEMORY; either leaves the index as it was. */
static cobs_status add_pair(struct cobs_positions *pos, const void *ring, uintptr_t element, uint32_t slot) {
    const uint64_t h = hash_of(pos, element);
    const uint8_t fp = fingerprint_of(h);
    size_t empty = SIZE_MAX;
    const size_t i = probe_for_insert(pos, ring, element, slot, home_of(pos, h), fp, &empty);
    if (i != SIZE_MAX) return join_copy(pos, i, element, slot);
    if (pos->count + 1 > max_load_of(pos->capacity)) {
        if (pos->capacity >= POS_MAX_CAPACITY) return COBS_NO_MEMORY;
        const cobs_status st = resize(pos, ring, pos->capacity * 2);
        if (st != COBS_OK) return st;
        place(pos, h, fp, slot);   /* the table moved: walk the new one */
        pos->entries++;
        return COBS_OK;
    }
    fill_bucket(pos, empty, fp, slot);
    return COBS_OK;
}

/* Empties bucket `hole` by backward shift; reads the ring to home the entries it examines. */
static void erase_at(struct cobs_positions *pos, const void *ring, size_t hole) {
    COBS_DCHECK(!is_empty(pos->ctrl[hole]));
    const size_t mask = pos->mask;
    size_t j = hole;
    for (;;) {
        j = (j + 1) & mask;
        const uint8_t c = pos->ctrl[j];
        if (is_empty(c)) break;
        const size_t home = home_of(pos, hash_of(pos, bucket_element(pos, ring, j)));
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            pos->ctrl[hole] = c;
            pos->slots[hole] = pos->slots[j];
            hole = j;
        }
    }
    pos->ctrl[hole] = (uint8_t)POS_CTRL_EMPTY;
    pos->count--;
}

/* Rehashes into a table of `capacity` buckets, reading each entry's element from the ring.
** COBS_NO_MEMORY, or COBS_INVALID_ARGUMENT when an entry's fingerprint disagrees with its ring
** element (the ring invariant is broken); either way the index is unchanged. */
static COBS_NOINLINE COBS_COLD cobs_status resize(struct cobs_positions *pos, const void *ring, size_t capacity) {
    COBS_DCHECK(pos->count <= max_load_of(capacity));
    uint8_t *block = pos->allocator.allocate(pos->allocator.user, capacity * POS_BUCKET_BYTES);
    if (block == NULL) return COBS_NO_MEMORY;
    struct cobs_positions old = *pos;
    install(pos, block, capacity);
    pos->count = 0;
    for (size_t i = 0; i < old.capacity; i++) {
        const uint8_t c = old.ctrl[i];
        if (is_empty(c)) continue;
        const uint32_t field = old.slots[i];
        const uint64_t h = hash_of(pos, is_record(field) ? record_of(pos, field)->element
                                                         : ring_at(ring, forward(pos, field)));
        if (fingerprint_of(h) != c) {
            free_block(pos);
            *pos = old;
            return COBS_INVALID_ARGUMENT;
        }
        place(pos, h, c, field);
    }
    COBS_CHECK(pos->count == old.count, "positions: entries lost or duplicated while rehashing");
    free_block(&old);
    return COBS_OK;
}

#if defined(COBS_INTERNAL_CHECKS) && !defined(NDEBUG)
#define VERIFY(pos, ring, mask)                                                                    \
    do {                                                                                           \
        if ((pos)->capacity <= POS_VERIFY_MAX_CAPACITY) {                                          \
            COBS_CHECK(cobs_positions_check_invariants(pos, ring, mask) == COBS_OK,                \
                       "position index invariants broken after a call (details above)");          \
        }                                                                                          \
    } while (0)
#else
#define VERIFY(pos, ring, mask) ((void)0)
#endif

/* ------------------------------------------------------------------------------------------- */
/* Instance                                                                                    */
/* ------------------------------------------------------------------------------------------- */

cobs_status cobs_positions_create(size_t capacity_hint, uint64_t seed, const cobs_allocator *allocator,
                                  cobs_positions **out) {
    if (out == NULL) return COBS_INVALID_ARGUMENT;
    *out = NULL;
    if (allocator == NULL) allocator = &default_allocator;
    if (allocator->allocate == NULL || allocator->deallocate == NULL) return COBS_INVALID_ARGUMENT;
    if ((uint64_t)capacity_hint > (UINT64_C(1) << 32)) return COBS_INVALID_ARGUMENT;
    const size_t capacity = capacity_for(capacity_hint);
    if (capacity == 0) return COBS_INVALID_ARGUMENT;
    if (seed == 0) {
#ifdef COBS_DETERMINISTIC_HASHING
        seed = POS_DETERMINISTIC_SEED;
#else
        seed = random_seed();
#endif
    }
    struct cobs_positions *pos = allocator->allocate(allocator->user, sizeof *pos);
    if (pos == NULL) return COBS_NO_MEMORY;
    uint8_t *block = allocator->allocate(allocator->user, capacity * POS_BUCKET_BYTES);
    if (block == NULL) {
        allocator->deallocate(allocator->user, pos, sizeof *pos);
        return COBS_NO_MEMORY;
    }
    pos->allocator = *allocator;
    pos->seed = seed;
    pos->count = 0;
    pos->entries = 0;
    pos->records = NULL;
    pos->record_count = 0;
    pos->record_capacity = 0;
    pos->free_record = POS_NO_RECORD;
    pos->dup_pos = NULL;
    pos->dup_pos_length = 0;
    pos->slot_bound = 0;
    pos->log_count = 0;
    pos->log_mask = 0;
    install(pos, block, capacity);
    *out = pos;
    return COBS_OK;
}

void cobs_positions_destroy(cobs_positions *pos) {
    if (pos == NULL) return;
    const cobs_allocator a = pos->allocator;
    records_clear(pos);
    if (pos->records != NULL) a.deallocate(a.user, pos->records, (size_t)pos->record_capacity * sizeof *pos->records);
    if (pos->dup_pos != NULL) a.deallocate(a.user, pos->dup_pos, pos->dup_pos_length * sizeof *pos->dup_pos);
    free_block(pos);
    a.deallocate(a.user, pos, sizeof *pos);
}

/* ------------------------------------------------------------------------------------------- */
/* Entries                                                                                     */
/* ------------------------------------------------------------------------------------------- */

cobs_status cobs_positions_insert(cobs_positions *pos, const void *ring, uint32_t mask,
                                  uintptr_t element, uint32_t current) {
    if (pos == NULL || ring == NULL || element == 0 || !mask_is_valid(mask) || current > mask ||
        !ring_covers(pos, mask) || !log_accepts(pos, mask) || ring_at(ring, current) != element) {
        return COBS_INVALID_ARGUMENT;
    }
    const uint32_t slot = to_stored(pos, current);
    const cobs_status st = add_pair(pos, ring, element, slot);   /* refuses a pair already recorded */
    if (st != COBS_OK) return st;
    if ((uint64_t)slot + 1 > pos->slot_bound) pos->slot_bound = (uint64_t)slot + 1;
    VERIFY(pos, ring, mask);
    return COBS_OK;
}

/* PREFETCHED REBUILD. The plain loop of a rebuild (tables outside the partitioned range, or no
** scratch for it) and a run of insertions (cobs_positions_insert_run) insert in ring order, so
** each insertion writes a random bucket; from about 100k elements (a 655 KB table: ctrl bytes and
** slots) those writes miss L2, and the probe of one insertion waits for its line before the next
** starts. The loop computes the home bucket of the element POS_REBUILD_PREFETCH positions ahead (a
** hash of its address from the ring: no element is read) and asks for its ctrl and slot lines, so
** that the misses of consecutive insertions overlap. A rebuild sizes the table before its loop,
** so a prefetched address stays the bucket's (a run may grow it midway: see there). Measured with
** observe-bench --scenarios array.setup --impls c --elements 100000 (the rebuild is most of a
** setup): see the commit that added it. A table under POS_PREFETCH_MIN_CAPACITY buckets (160 KB)
** stays in L2, where the hints would only cost their hashing. */
#define POS_REBUILD_PREFETCH 16u
#define POS_PREFETCH_MIN_CAPACITY ((size_t)1 << 15)

static inline void prefetch_home(const struct cobs_positions *pos, uint64_t h) {
#if defined(__GNUC__) || defined(__clang__)
    const size_t home = home_of(pos, h);
    __builtin_prefetch(pos->ctrl + home, 1, 3);
    __builtin_prefetch(pos->slots + home, 1, 3);
#else
    (void)pos;
    (void)h;
#endif
}

/* The slot bound of a run of `n` >= 1 consecutive slots from `first`: one past its last slot, or
** mask + 1 when it wraps. */
static inline uint64_t run_bound(uint32_t first, size_t n, uint32_t mask) {
    const uint64_t last = (uint64_t)first + n - 1;
    return last > mask ? (uint64_t)mask + 1 : last + 1;
}

/* NEW ELEMENTS IN BULK. An append, an insertion of many elements and a rebuild mostly add elements
** the index does not hold yet: each is one probe to the first empty bucket after its home (no
** entry of it on the way), then one ctrl byte and one slot written. add_new_run does that for
** consecutive ring slots while the log is empty (a stored slot is then the current one): each
** element's hash is computed once, when its buckets are prefetched POS_REBUILD_PREFETCH elements
** ahead, and kept in a small ring until its turn, and the probe is inlined. A copy of an element
** the index holds joins it where the probe found it (join_copy), and the run goes on. It stops at
** a new element the table has no room for below its load limit (the caller's general loop grows
** the table through add_pair, then calls it again) or at an error (in *status: a pair already
** recorded, or no memory for a copy's record; the pair that failed is not added), and returns
** how many pairs it added.
** Measured with a C driver (a run of 10,000 inserted into an index of 100,000 entries, 2^17
** buckets, then removed again; callgrind, and the mean time of 200 runs): add_pair took ~200
** instructions and 13 ns per element, add_new_run takes ~118 and 9 ns (a run of 100 into 1,000
** entries: 6.1 ns before, 3.8 now). */
static COBS_FLATTEN size_t add_new_run(struct cobs_positions *pos, const void *ring, uint32_t mask, uint32_t first,
                                       size_t count, cobs_status *status) {
    COBS_DCHECK(pos->log_count == 0);
    *status = COBS_OK;
    const size_t max_load = max_load_of(pos->capacity);
    const size_t room = max_load > pos->count ? max_load - pos->count : 0;   /* new buckets allowed */
    const bool prefetches = pos->capacity >= POS_PREFETCH_MIN_CAPACITY;
    uint64_t hashes[POS_REBUILD_PREFETCH];
    const size_t primed = count < POS_REBUILD_PREFETCH ? count : POS_REBUILD_PREFETCH;
    for (size_t j = 0; j < primed; j++) {
        hashes[j] = hash_of(pos, ring_at(ring, (first + j) & mask));
        if (prefetches) prefetch_home(pos, hashes[j]);
    }
    size_t done = 0, placed = 0;
    for (; done < count; done++) {
        const uint64_t h = hashes[done % POS_REBUILD_PREFETCH];
        if (done + POS_REBUILD_PREFETCH < count) {
            const uint64_t ahead = hash_of(pos, ring_at(ring, (first + done + POS_REBUILD_PREFETCH) & mask));
            hashes[done % POS_REBUILD_PREFETCH] = ahead;
            if (prefetches) prefetch_home(pos, ahead);
        }
        const uint32_t slot = (uint32_t)((first + done) & mask);
        const uintptr_t element = ring_at(ring, slot);
        const uint8_t fp = fingerprint_of(h);
        size_t empty = SIZE_MAX;
        const size_t found = probe_for_insert(pos, ring, element, slot, home_of(pos, h), fp, &empty);
        if (found == SIZE_MAX) {
            if (placed == room) break;   /* the table must grow first: add_pair's */
            fill_bucket(pos, empty, fp, slot);
            placed++;
        } else if ((*status = join_copy(pos, found, element, slot)) != COBS_OK) {
            break;
        }
    }
    if (done > 0) {
        const uint64_t bound = run_bound(first, done, mask);
        if (bound > pos->slot_bound) pos->slot_bound = bound;
    }
    return done;
}

/* A run of insertions (an append or an insertion of many elements): one validation, then the
** pairs in ring order with the buckets of later ones prefetched (PREFETCHED REBUILD, above): in
** bulk (add_new_run) while the log is empty and the table has room, otherwise one by one. The
** table is not grown ahead for the whole run: copies take no bucket, so a run of copies (an array
** appended to itself) would double a table that needs nothing; add_pair grows it when a new
** bucket needs room, and the hints in flight then point into the old table (a wasted hint, no
** more). A refused pair, or no memory for a copy's record or a growth, removes the pairs this call
** added, in reverse. */
cobs_status cobs_positions_insert_run(cobs_positions *pos, const void *ring, uint32_t mask, uint32_t first,
                                      size_t count) {
    if (pos == NULL || ring == NULL || !mask_is_valid(mask) || first > mask || count > (size_t)mask + 1 ||
        !ring_covers(pos, mask) || !log_accepts(pos, mask)) {
        return COBS_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < count; i++) {
        if (ring_at(ring, (first + i) & mask) == 0) return COBS_INVALID_ARGUMENT;
    }
    const uint64_t bound_before = pos->slot_bound;
    size_t i = 0;
    cobs_status st = COBS_OK;
    while (i < count) {
        if (pos->log_count == 0) {
            i += add_new_run(pos, ring, mask, (uint32_t)((first + i) & mask), count - i, &st);
            if (st != COBS_OK || i == count) break;
        }
        /* The general path: a table that must grow, or slots translated through the log. */
        if (pos->capacity >= POS_PREFETCH_MIN_CAPACITY && i + POS_REBUILD_PREFETCH < count) {
            prefetch_home(pos, hash_of(pos, ring_at(ring, (first + i + POS_REBUILD_PREFETCH) & mask)));
        }
        const uint32_t current = (uint32_t)((first + i) & mask);
        const uint32_t slot = to_stored(pos, current);
        st = add_pair(pos, ring, ring_at(ring, current), slot);
        if (st != COBS_OK) break;
        if ((uint64_t)slot + 1 > pos->slot_bound) pos->slot_bound = (uint64_t)slot + 1;
        i++;
    }
    if (st != COBS_OK) {
        /* The pairs before the one refused were added: they go again, in reverse. */
        for (size_t j = i; j-- > 0;) {
            const uint32_t added = (uint32_t)((first + j) & mask);
            const cobs_status undone = cobs_positions_remove(pos, ring, mask, ring_at(ring, added), added);
            COBS_CHECK(undone == COBS_OK, "positions: a pair this run added could not be removed");
        }
        pos->slot_bound = bound_before;
        return st;
    }
    VERIFY(pos, ring, mask);
    return COBS_OK;
}

cobs_status cobs_positions_remove(cobs_positions *pos, const void *ring, uint32_t mask,
                                  uintptr_t element, uint32_t slot) {
    if (pos == NULL || ring == NULL || element == 0 || !mask_is_valid(mask) || slot > mask ||
        !ring_covers(pos, mask) || !log_accepts(pos, mask)) {
        return COBS_INVALID_ARGUMENT;
    }
    uint32_t position;
    const size_t at = find_entry(pos, element, to_stored(pos, slot), &position);
    if (at == SIZE_MAX) return COBS_NOT_FOUND;
    pos->entries--;
    if (position == POS_NO_RECORD) {
        erase_at(pos, ring, at);
    } else {
        /* Swap the copy with the record's last; a record left with one copy becomes a plain slot. */
        const uint32_t index = pos->slots[at] & ~POS_RECORD_BIT;
        dup_record *record = &pos->records[index];
        const uint32_t last = record->slots[--record->count];
        if (position != record->count) {
            record->slots[position] = last;
            pos->dup_pos[last] = position;
        }
        if (record->count == 1) {
            pos->slots[at] = record->slots[0];
            record_free(pos, index);
        }
    }
    VERIFY(pos, ring, mask);
    return COBS_OK;
}

cobs_status cobs_positions_move(cobs_positions *pos, uint32_t mask, uintptr_t element, uint32_t from,
                                uint32_t to) {
    if (pos == NULL || element == 0 || !mask_is_valid(mask) || from > mask || to > mask ||
        !ring_covers(pos, mask) || !log_accepts(pos, mask)) {
        return COBS_INVALID_ARGUMENT;
    }
    uint32_t position;
    const size_t at = find_entry(pos, element, to_stored(pos, from), &position);
    if (at == SIZE_MAX) return COBS_NOT_FOUND;
    const uint32_t stored = to_stored(pos, to);
    if (position == POS_NO_RECORD) {
        pos->slots[at] = stored;
    } else {
        const cobs_status st = cover_dup_pos(pos, stored);
        if (st != COBS_OK) return st;
        record_of(pos, pos->slots[at])->slots[position] = stored;
        pos->dup_pos[stored] = position;
    }
    if ((uint64_t)stored + 1 > pos->slot_bound) pos->slot_bound = (uint64_t)stored + 1;
    return COBS_OK;
}

/* FOLDING THE LOG. A full log used to leave one way on: rebuild the whole index from the ring, a
** probe per element (about 0.9 ms at 100,000 elements, 7.5 µs amortized over the 128 moves the log
** holds: three quarters of an observed middle insertion followed by an element change at that
** size). Folding rewrites each stored slot to its current slot instead and empties the log. Homes
** depend on elements, not slots, so no entry moves and the ring is not read: it is one pass over
** slots[] with a few instructions per bucket, without a full/empty branch (it mispredicted on a
** quarter of the buckets and cost twice the time). Measured with a C driver (4,000 pairs of
** random block moves of a ring, clang -O2; fold vs rebuild per full log): 1,000 elements 5 vs
** 7 µs, 10,000: 25 vs 60 µs, 100,000: 167 vs 740 µs.
**
** The log's composition is a permutation of slot numbers that is a translation (mod log_mask + 1)
** on each of at most 1 + 3 * log_count runs of stored slots: each record is a translation on
** three ranges of current slots (the block, the slots it moves into, the rest), so it splits at
** most three runs. fold_runs() computes those runs in stored order, record by record (O(runs) per
** record), merging neighbours whose translation agrees. The pass over the entries then finds a
** stored slot's run through a table of 2^FOLD_CELLS_LOG2 equal cells of the slot space (each naming the
** first run that overlaps it), so a slot's run is one load plus, rarely, a step or two. */
#ifndef FOLD_CELLS_LOG2
#define FOLD_CELLS_LOG2 12u /* the fuzzer builds with fewer cells, so that its small rings walk runs */
#endif

typedef struct fold_run {
    uint32_t lo;  /* first stored slot of the run (runs are sorted; the next run's lo ends it) */
    uint32_t off; /* current = (stored + off) & mask for every slot of the run */
} fold_run;

/* Composes the log into runs (see FOLDING THE LOG): writes them to `runs` (room for
** 1 + 3 * log_count), sorted by lo, the first at 0, using `spare` (as large) as scratch; returns
** their number.
**
** A record (origin, a, b), seen from its origin, is three consecutive regions of current slots,
** each translated by one amount: [0, a) by +b, [a, a + b) by -a, the rest by 0 (see
** shift_record). A run whose image (its current slots) lies in one region takes that region's amount; one
** that straddles a boundary is cut there. So most runs cost a compare and an add. */
static uint32_t fold_runs(const struct cobs_positions *pos, fold_run *runs, fold_run *spare) {
    const uint32_t mask = pos->log_mask;
    const uint64_t space = (uint64_t)mask + 1;
    fold_run *current = runs, *next = spare;
    uint32_t n = 1;
    current[0] = (fold_run){0, 0};
    for (uint32_t r = 0; r < pos->log_count; r++) {
        const shift_record *record = &pos->log[r];
        const uint32_t origin = record->origin;
        const uint64_t ends[3] = {record->a, (uint64_t)record->a + record->b, space};  /* from origin */
        const uint32_t adds[3] = {record->b, 0u - record->a, 0u};                     /* mod space */
        uint32_t m = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t lo = current[k].lo;
            const uint32_t off = current[k].off;
            uint64_t left = (k + 1 < n ? (uint64_t)current[k + 1].lo : space) - lo;
            uint64_t at = (uint32_t)(lo + off - origin) & mask;   /* the run's image, from origin */
            while (left > 0) {
                const unsigned region = at < ends[0] ? 0u : at < ends[1] ? 1u : 2u;
                const uint64_t room = ends[region] - at;
                const uint64_t take = left < room ? left : room;
                const uint32_t piece_off = (off + adds[region]) & mask;
                if (m == 0 || next[m - 1].off != piece_off) next[m++] = (fold_run){lo, piece_off};
                lo += (uint32_t)take;
                left -= take;
                at = (at + take) & mask;   /* past the last region: back to the first */
            }
        }
        fold_run *swap = current;
        current = next;
        next = swap;
        n = m;
    }
    if (current != runs) memcpy(runs, current, (size_t)n * sizeof *runs);
    return n;
}

/* The current slot of stored slot `s`, through the runs and their cell table. */
static COBS_ALWAYS_INLINE uint32_t fold_map(const fold_run *runs, const uint16_t *cells, unsigned cell_shift,
                                             uint32_t mask, uint32_t s) {
    uint32_t k = cells[s >> cell_shift];
    while (runs[k + 1].lo <= s) k++;   /* runs[n] is a sentinel above every slot */
    return (s + runs[k].off) & mask;
}

/* Rewrites every stored slot to its current slot and empties the log (FOLDING THE LOG above).
** COBS_NO_MEMORY (scratch, or a duplicate's position table that must grow): the index is as it
** was. Does not read the ring. */
static COBS_NOINLINE COBS_COLD cobs_status fold_log(struct cobs_positions *pos) {
    if (pos->log_count == 0) return COBS_OK;
    const uint32_t mask = pos->log_mask;
    const uint64_t space = (uint64_t)mask + 1;
    const unsigned space_log2 = log2_of((size_t)space);
    const unsigned cells_log2 = space_log2 < FOLD_CELLS_LOG2 ? space_log2 : FOLD_CELLS_LOG2;
    const unsigned cell_shift = space_log2 - cells_log2;
    const size_t cell_count = (size_t)1 << cells_log2;
    const size_t run_room = 1 + 3 * (size_t)pos->log_count;
    static_assert(1 + 3 * POS_LOG_CAPACITY <= UINT16_MAX, "a cell names its run in 16 bits");
    /* runs (and a sentinel), fold_runs' scratch, the cells. */
    const size_t bytes = (2 * run_room + 1) * sizeof(fold_run) + cell_count * sizeof(uint16_t);
    void *scratch = pos->allocator.allocate(pos->allocator.user, bytes);
    if (scratch == NULL) return COBS_NO_MEMORY;
    fold_run *runs = scratch;
    uint16_t *cells = (uint16_t *)(void *)(runs + 2 * run_room + 1);
    const uint32_t n = fold_runs(pos, runs, runs + run_room + 1);
    runs[n] = (fold_run){UINT32_MAX, 0};
    for (uint32_t k = 0, c = 0; c < cell_count; c++) {
        const uint64_t first_slot = (uint64_t)c << cell_shift;
        while (k + 1 < n && runs[k + 1].lo <= first_slot) k++;
        cells[c] = (uint16_t)k;
    }
    /* A duplicate's copies get new stored slots, which its position table must cover: checked
    ** (and grown) before anything changes. */
    uint32_t highest = 0;
    for (uint32_t i = 0; i < pos->record_count; i++) {
        const dup_record *record = &pos->records[i];
        if (record->element == 0) continue;
        for (uint32_t j = 0; j < record->count; j++) {
            const uint32_t to = fold_map(runs, cells, cell_shift, mask, record->slots[j]);
            if (to > highest) highest = to;
        }
    }
    if (pos->record_count > 0) {
        const cobs_status st = cover_dup_pos(pos, highest);
        if (st != COBS_OK) {
            pos->allocator.deallocate(pos->allocator.user, scratch, bytes);
            return st;
        }
    }
    /* No branch per bucket (a full/empty branch mispredicted on a quarter of them and cost twice
    ** the time): every bucket is mapped, and only a plain entry keeps the result. An empty
    ** bucket's field may never have been written, so it is masked to slot 0 (valgrind reports
    ** an uninitialised value used as a table index otherwise), with the ctrl byte alone: masking
    ** with the whole "plain entry" test put it on the chain to the table load, 2.4x slower. */
    for (size_t i = 0; i < pos->capacity; i++) {
        const uint32_t field = pos->slots[i];
        const uint32_t full = 0u - (uint32_t)!is_empty(pos->ctrl[i]);   /* all ones or 0 */
        const uint32_t mapped = fold_map(runs, cells, cell_shift, mask, field & mask & full);
        const bool plain = full != 0 && !is_record(field);
        pos->slots[i] = plain ? mapped : field;
    }
    for (uint32_t i = 0; i < pos->record_count; i++) {
        dup_record *record = &pos->records[i];
        if (record->element == 0) continue;
        for (uint32_t j = 0; j < record->count; j++) {
            const uint32_t to = fold_map(runs, cells, cell_shift, mask, record->slots[j]);
            record->slots[j] = to;
            pos->dup_pos[to] = j;
        }
    }
    pos->allocator.deallocate(pos->allocator.user, scratch, bytes);
    pos->log_count = 0;
    return COBS_OK;
}

cobs_status cobs_positions_shift(cobs_positions *pos, uint32_t mask, uint32_t first, uint32_t count,
                                 int64_t delta) {
    if (pos == NULL || !mask_is_valid(mask) || first > mask || !ring_covers(pos, mask) ||
        !log_accepts(pos, mask) || delta > (int64_t)UINT32_MAX || delta < -(int64_t)UINT32_MAX ||
        (uint64_t)count + (uint64_t)(delta < 0 ? -delta : delta) > (uint64_t)mask + 1) {
        return COBS_INVALID_ARGUMENT;
    }
    if (count == 0 || delta == 0 || pos->entries == 0) return COBS_OK;
    if (pos->log_count >= log_limit(pos)) return COBS_BUFFER_TOO_SMALL;
    const uint32_t moved = (uint32_t)(delta < 0 ? -delta : delta);
    pos->log[pos->log_count++] = delta > 0 ? (shift_record){first, count, moved}
                                           : (shift_record){(first - moved) & mask, moved, count};
    pos->log_mask = mask;
    pos->slot_bound = (uint64_t)mask + 1;
    return COBS_OK;
}

cobs_status cobs_positions_fold(cobs_positions *pos) {
    if (pos == NULL) return COBS_INVALID_ARGUMENT;
    return fold_log(pos);
}

cobs_status cobs_positions_lookup(const cobs_positions *pos, const void *ring, uint32_t mask,
                                  uintptr_t element, uint32_t *slots_out, size_t capacity,
                                  size_t *count) {
    if (pos == NULL || ring == NULL || count == NULL || element == 0 ||
        (slots_out == NULL && capacity > 0) || !mask_is_valid(mask) || !ring_covers(pos, mask) ||
        !log_accepts(pos, mask)) {
        return COBS_INVALID_ARGUMENT;
    }
    const uint64_t h = hash_of(pos, element);
    const uint8_t fp = fingerprint_of(h);
    size_t n = 0;
    /* One bucket per element: the probe ends at the element's bucket or at an empty one. */
    for (size_t i = home_of(pos, h);; i = (i + 1) & pos->mask) {
        const uint8_t c = pos->ctrl[i];
        if (is_empty(c)) break;
        if (c != fp) continue;
        const uint32_t field = pos->slots[i];
        if (is_record(field)) {
            const dup_record *record = record_of(pos, field);
            if (record->element != element) continue;
            for (uint32_t k = 0; k < record->count && k < capacity; k++) slots_out[k] = forward(pos, record->slots[k]);
            n = record->count;
            break;
        }
        const uint32_t slot = forward(pos, field);
        if (ring_at(ring, slot) != element) continue;
        if (capacity > 0) slots_out[0] = slot;
        n = 1;
        break;
    }
    *count = n;
    return n > capacity ? COBS_BUFFER_TOO_SMALL : COBS_OK;
}

/* REBUILD IN PARTITIONS. Inserting N elements in ring order writes the table at random, and once
** the table is several MB almost every insertion misses the caches. So a large rebuild first
** sorts the pairs by the top POS_PARTITION_BITS bits of their home bucket (one counting pass, one
** scatter pass, both reading the ring in order), then inserts them partition by partition: each
** partition's homes fall in 1/256 of the table, so its insertions stay in L1/L2. The table comes
** out as inserting in ring order would give it, up to the order of entries within a cluster, which
** no reader depends on. A pair is packed into 64 bits (home << 39 | fingerprint << 32 | slot),
** hence at most 2^25 buckets. An element whose probe finds it already indexed (a copy) takes
** add_pair, which builds its record.
** Measured (a C driver rebuilding a fresh index over N heap addresses with cold caches, ns per
** element, before / after): 1,000,000: 28.0 / 16.0; 3,000,000: 28.4 / 15.1; but 100,000-400,000:
** 10.3-13.3 / 11.2-12.9 — below 2^20 buckets (5 MB) the extra passes and the scratch's page faults
** cost what the misses did. So tables under 2^20 buckets, above 2^25, and a rebuild whose 8 bytes
** per element of scratch cannot be allocated take the plain loop. */
#define POS_PARTITION_BITS 8u
#define POS_PARTITION_MIN_CAPACITY ((size_t)1 << 20)
#define POS_PARTITION_MAX_BITS 25u

/* Inserts the `count` elements at ring slots (head + i) & mask into the empty table, sized for
** them, through partitions (above), and sets *done. *done false: nothing was done (table outside
** the partitioned range, or no scratch): the caller takes the plain loop. With *done true:
** COBS_OK, or COBS_NO_MEMORY (a copy's record could not be allocated: the index holds part of the
** elements, and the caller clears it). */
static cobs_status insert_partitioned(struct cobs_positions *pos, const void *ring, uint32_t mask, uint32_t head,
                                      size_t count, bool *done) {
    *done = false;
    const unsigned k = 64u - pos->shift;
    if (pos->capacity < POS_PARTITION_MIN_CAPACITY || k > POS_PARTITION_MAX_BITS) return COBS_OK;
    const size_t bytes = count * sizeof(uint64_t);
    uint64_t *pairs = pos->allocator.allocate(pos->allocator.user, bytes);
    if (pairs == NULL) return COBS_OK;
    *done = true;
    const unsigned partition_shift = k - POS_PARTITION_BITS;
    size_t next[(1u << POS_PARTITION_BITS) + 1] = {0};
    for (size_t i = 0; i < count; i++) {
        const uint64_t h = hash_of(pos, ring_at(ring, (head + i) & mask));
        next[(home_of(pos, h) >> partition_shift) + 1]++;
    }
    for (size_t p = 1; p <= (1u << POS_PARTITION_BITS); p++) next[p] += next[p - 1];
    for (size_t i = 0; i < count; i++) {
        const uint32_t slot = (uint32_t)((head + i) & mask);
        const uint64_t h = hash_of(pos, ring_at(ring, slot));
        const uint64_t home = home_of(pos, h);
        pairs[next[home >> partition_shift]++] = home << 39 | (uint64_t)fingerprint_of(h) << 32 | slot;
    }
    cobs_status status = COBS_OK;
    for (size_t i = 0; i < count && status == COBS_OK; i++) {
        const uint64_t pair = pairs[i];
        const uint32_t slot = (uint32_t)pair;
        const uint8_t fp = (uint8_t)((pair >> 32) & POS_FP_MASK);
        size_t empty = SIZE_MAX;
        const size_t found = probe_for_insert(pos, ring, 0, slot, (size_t)(pair >> 39), fp, &empty);
        if (found != SIZE_MAX) {
            status = join_copy(pos, found, ring_at(ring, slot), slot);   /* a copy: it joins a record */
            continue;
        }
        COBS_DCHECK(pos->count + 1 <= max_load_of(pos->capacity));
        fill_bucket(pos, empty, fp, slot);
    }
    pos->allocator.deallocate(pos->allocator.user, pairs, bytes);
    return status;
}

cobs_status cobs_positions_rebuild(cobs_positions *pos, const void *ring, uint32_t mask,
                                   uint32_t head, size_t count) {
    if (pos == NULL || ring == NULL || !mask_is_valid(mask) || head > mask ||
        (uint64_t)count > (uint64_t)mask + 1) {
        return COBS_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < count; i++) {
        if (ring_at(ring, (head + i) & mask) == 0) return COBS_INVALID_ARGUMENT;
    }
    const size_t needed = capacity_for(count);
    COBS_CHECK(needed != 0, "positions: no capacity for a ring-sized count");
    const bool fits = needed <= pos->capacity;
    if (!fits || pos->capacity / POS_REBUILD_SLACK > needed) {
        uint8_t *block = pos->allocator.allocate(pos->allocator.user, needed * POS_BUCKET_BYTES);
        if (block == NULL) {
            if (!fits) return COBS_NO_MEMORY;
        } else {
            free_block(pos);
            install(pos, block, needed);
        }
    }
    memset(pos->ctrl, POS_CTRL_EMPTY, pos->capacity);
    records_clear(pos);
    pos->count = 0;
    pos->entries = 0;
    pos->log_count = 0;
    pos->slot_bound = 0;
    bool partitioned;
    cobs_status status = insert_partitioned(pos, ring, mask, head, count, &partitioned);
    /* The plain loop (see NEW ELEMENTS IN BULK): the table was sized for every entry above, so
    ** one bulk call adds them all, unless a copy's record finds no memory. */
    if (!partitioned && status == COBS_OK && count > 0) {
        const size_t done = add_new_run(pos, ring, mask, head, count, &status);
        COBS_CHECK(done == count || status != COBS_OK, "positions: a rebuild's table had no room for its entries");
    }
    if (status != COBS_OK) {
        /* Out of memory for a duplicate record or the scratch: an empty index is consistent (and stale). */
        cobs_positions_clear(pos);
        return COBS_NO_MEMORY;
    }
    pos->slot_bound = count == 0 ? 0 : run_bound(head, count, mask);
    VERIFY(pos, ring, mask);
    return COBS_OK;
}

void cobs_positions_clear(cobs_positions *pos) {
    if (pos == NULL) return;
    memset(pos->ctrl, POS_CTRL_EMPTY, pos->capacity);
    records_clear(pos);
    pos->count = 0;
    pos->entries = 0;
    pos->slot_bound = 0;
    pos->log_count = 0;
}

size_t cobs_positions_count(const cobs_positions *pos) {
    return pos == NULL ? 0 : pos->entries;
}

size_t cobs_positions_bytes(const cobs_positions *pos) {
    if (pos == NULL) return 0;
    size_t bytes = sizeof *pos + pos->capacity * POS_BUCKET_BYTES;
    bytes += (size_t)pos->record_capacity * sizeof *pos->records + pos->dup_pos_length * sizeof *pos->dup_pos;
    for (uint32_t i = 0; i < pos->record_count; i++) {
        bytes += (size_t)pos->records[i].capacity * sizeof *pos->records[i].slots;
    }
    return bytes;
}

/* ------------------------------------------------------------------------------------------- */
/* Checking                                                                                    */
/* ------------------------------------------------------------------------------------------- */

#define MAX_REPORTED_PROBLEMS 16

static COBS_PRINTF_FORMAT(3, 4) void report(const struct cobs_positions *pos, size_t *problems, const char *format, ...) {
    (*problems)++;
    if (*problems > MAX_REPORTED_PROBLEMS) return;
    fprintf(stderr, "cobs_positions %p: ", (const void *)pos);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
}

cobs_status cobs_positions_check_invariants(const cobs_positions *pos, const void *ring,
                                            uint32_t mask) {
    if (pos == NULL || ring == NULL || !mask_is_valid(mask)) return COBS_INVALID_ARGUMENT;
    size_t problems = 0;
    const size_t capacity = pos->capacity;
    if (capacity < POS_MIN_CAPACITY || capacity > POS_MAX_CAPACITY ||
        (capacity & (capacity - 1)) != 0 || pos->mask != capacity - 1 ||
        pos->shift != 64u - log2_of(capacity) ||
        (const void *)pos->slots != (const void *)(pos->ctrl + capacity)) {
        report(pos, &problems, "geometry broken (capacity %zu, mask %zu, shift %u)", capacity,
               pos->mask, pos->shift);
        return COBS_CORRUPT; /* nothing below can be trusted */
    }
    if (pos->log_count > POS_LOG_CAPACITY || !log_accepts(pos, mask)) {
        report(pos, &problems, "shift log of %" PRIu32 " records for a ring of mask %#" PRIx32
               " checked against mask %#" PRIx32, pos->log_count, pos->log_mask, mask);
        return COBS_CORRUPT;
    }
    if (!ring_covers(pos, mask)) {
        report(pos, &problems, "slots up to %" PRIu64 " recorded, but the ring has %" PRIu64 " words",
               pos->slot_bound, (uint64_t)mask + 1);
        return COBS_CORRUPT; /* reading the ring would go out of bounds */
    }
    /* One bit per ring slot, to find two entries with the same slot (1/64 of the ring's size);
    ** skipped if it cannot be allocated. */
    const size_t words = (size_t)(((uint64_t)mask + 64) / 64);
    uint64_t *seen = calloc(words, sizeof *seen);
    /* Slots must be distinct, below the bound and hold the element in the ring. */
#define CHECK_SLOT(where, slot, element)                                                           \
    do {                                                                                           \
        if ((uint64_t)(slot) >= pos->slot_bound) {                                                 \
            report(pos, &problems, "%s: slot %" PRIu32 " beyond the recorded bound", where, slot);  \
        } else {                                                                                   \
            if (seen != NULL) {                                                                    \
                if (seen[(slot) / 64] & (UINT64_C(1) << ((slot) % 64))) {                         \
                    report(pos, &problems, "%s: slot %" PRIu32 " recorded twice", where, slot);     \
                }                                                                                  \
                seen[(slot) / 64] |= UINT64_C(1) << ((slot) % 64);                                 \
            }                                                                                      \
            if (ring_at(ring, forward(pos, slot)) != (element)) {                                           \
                report(pos, &problems, "%s: ring slot %" PRIu32 " holds %#" PRIxPTR ", not %#" PRIxPTR, \
                       where, forward(pos, slot), ring_at(ring, forward(pos, slot)), (uintptr_t)(element));  \
            }                                                                                      \
        }                                                                                          \
    } while (0)
    char where[48];
    size_t full = 0, pairs = 0, named_records = 0;
    for (size_t b = 0; b < capacity; b++) {
        const uint8_t c = pos->ctrl[b];
        if (is_empty(c)) continue;
        full++;
        snprintf(where, sizeof where, "bucket %zu", b);
        if (c > POS_FP_MASK) {
            report(pos, &problems, "%s: ctrl byte 0x%02x is neither empty nor a fingerprint", where, c);
            continue;
        }
        const uint32_t field = pos->slots[b];
        uintptr_t element;
        if (is_record(field)) {
            const uint32_t index = field & ~POS_RECORD_BIT;
            if (index >= pos->record_count || pos->records[index].element == 0) {
                report(pos, &problems, "%s: names record %" PRIu32 ", which is not in use", where, index);
                continue;
            }
            named_records++;
            const dup_record *record = &pos->records[index];
            element = record->element;
            if (record->count < 2 || record->count > record->capacity) {
                report(pos, &problems, "%s: record %" PRIu32 " holds %" PRIu32 " copies (capacity %" PRIu32 ")",
                       where, index, record->count, record->capacity);
                continue;
            }
            for (uint32_t k = 0; k < record->count; k++) {
                const uint32_t slot = record->slots[k];
                CHECK_SLOT(where, slot, element);
                if ((size_t)slot >= pos->dup_pos_length || pos->dup_pos[slot] != k) {
                    report(pos, &problems, "%s: dup_pos of slot %" PRIu32 " is not its position %" PRIu32, where, slot, k);
                }
            }
            pairs += record->count;
        } else {
            if ((uint64_t)field >= pos->slot_bound) {
                report(pos, &problems, "%s: slot %" PRIu32 " beyond the recorded bound", where, field);
                continue;
            }
            element = ring_at(ring, forward(pos, field));
            if (element == 0) {
                report(pos, &problems, "%s: ring slot %" PRIu32 " holds no element", where, forward(pos, field));
                continue;
            }
            CHECK_SLOT(where, field, element);
            pairs++;
        }
        const uint64_t h = hash_of(pos, element);
        if (fingerprint_of(h) != c) {
            report(pos, &problems, "%s: fingerprint 0x%02x, but its element %#" PRIxPTR " has 0x%02x", where, c,
                   element, fingerprint_of(h));
            continue;
        }
        /* Reachable from its home, and the first bucket of its element on the way (one per element). */
        for (size_t i = home_of(pos, h); i != b; i = (i + 1) & pos->mask) {
            if (is_empty(pos->ctrl[i])) {
                report(pos, &problems, "%s: unreachable from its home %zu (bucket %zu empty)", where,
                       home_of(pos, h), i);
                break;
            }
            if (pos->ctrl[i] == c && bucket_element(pos, ring, i) == element) {
                report(pos, &problems, "%s: element %#" PRIxPTR " also has bucket %zu", where, element, i);
                break;
            }
        }
    }
#undef CHECK_SLOT
    free(seen);
    size_t in_use = 0, free_listed = 0;
    for (uint32_t i = 0; i < pos->record_count; i++) in_use += pos->records[i].element != 0;
    for (uint32_t i = pos->free_record; i != POS_NO_RECORD && free_listed <= pos->record_count; i = pos->records[i].count) {
        if (i >= pos->record_count || pos->records[i].element != 0) {
            report(pos, &problems, "free record list reaches record %" PRIu32 ", which is in use or out of range", i);
            break;
        }
        free_listed++;
    }
    if (in_use != named_records) {
        report(pos, &problems, "%zu records in use, but %zu buckets name one", in_use, named_records);
    }
    if (in_use + free_listed != pos->record_count) {
        report(pos, &problems, "%zu records in use and %zu free, of %" PRIu32, in_use, free_listed, pos->record_count);
    }
    if (full != pos->count) report(pos, &problems, "count %zu, but %zu buckets full", pos->count, full);
    if (pairs != pos->entries) report(pos, &problems, "entries %zu, but %zu pairs recorded", pos->entries, pairs);
    if (pos->count > max_load_of(capacity)) {
        report(pos, &problems, "count %zu above the 7/8 load of %zu buckets", pos->count, capacity);
    }
    return problems == 0 ? COBS_OK : COBS_CORRUPT;
}

size_t cobs_positions_max_displacement(const cobs_positions *pos, const void *ring, uint32_t mask) {
    if (pos == NULL || ring == NULL || !mask_is_valid(mask) || !ring_covers(pos, mask)) return 0;
    size_t longest = 0;
    for (size_t b = 0; b < pos->capacity; b++) {
        if (is_empty(pos->ctrl[b])) continue;
        const size_t home = home_of(pos, hash_of(pos, bucket_element(pos, ring, b)));
        const size_t d = (b - home) & pos->mask;
        if (d > longest) longest = d;
    }
    return longest;
}
