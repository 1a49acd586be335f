/*
** ObserveCore C core: array changes as runs of index ranges (normalize, validate) and the batch
** composer (`cobs_batch`). The contract is include/cobs_changes.h; this block is the why.
**
** Prefix rule: every exported symbol starts with `cobs_`; everything else in this file is `static`
** and unprefixed.
**
** ============================================================================================
** Record format
** ============================================================================================
**
** A change is an array of fixed 32-byte records (native endianness; nothing here is a wire
** format that crosses machines, so no varints: a record is read with one load per field and a
** change of N runs is exactly 32 N bytes):
**
**   offset  size  field      REMOVE          INSERT          MOVE                MODIFY
**   ------  ----  ---------  --------------  --------------  ------------------  --------------
**        0     4  op         1               2               3                   4
**        4     4  reserved_  0               0               0                   0
**        8     8  start      first OLD idx   first NEW idx   first OLD idx       first NEW idx
**       16     8  length     >= 1            >= 1            >= 1                >= 1
**       24     8  to         0               0               first NEW idx       0
**
** A run names `length` consecutive indices. Appending 100,000 elements is one INSERT run.
**
** Canonical order: REMOVE runs, then INSERT, then MOVE, then MODIFY; within one op ascending by
** start, never overlapping, and never touching (touching runs of one op are one run). MOVE runs
** are ordered by their OLD start; two MOVE runs merge only when their sources AND their
** destinations are contiguous (otherwise the two halves went to different places). The order is
** CollectionDifference's rule in run form: taking REMOVE and MOVE sources out of the old array
** from the highest index down, then putting INSERT and MOVE destinations in from the lowest index
** up, never disturbs an index that is still to be used, so naive in-place application is correct.
**
** Consistency (validate): REMOVE and MOVE sources are disjoint subsets of [0, old_count); INSERT
** and MOVE destinations are disjoint subsets of [0, new_count); MODIFY runs lie in
** [0, new_count) and are disjoint from INSERT runs (an inserted element is new: it cannot also be
** "changed in place"); and old_count - removed == new_count - inserted (the "- moved" on both
** sides of the header's equation cancels). A MODIFY run MAY overlap a MOVE destination: an
** original element that was moved and also changed is reported both ways (cobs_batch_modify
** reports every original element that survives the batch).
**
** ============================================================================================
** normalize and validate
** ============================================================================================
**
** normalize first checks every record on its own (op, reserved_, length, `to`, overflow), so an
** error leaves the array untouched; then heap-sorts by (op, start, length, to), in place, with no
** allocation, unless one pass finds the runs already in that order (most producers emit them so);
** then merges exactly-touching runs of one op in a single pass. Runs that OVERLAP are
** deliberately not merged: overlapping runs of one op are never a correct change (an index
** removed twice), and merging them would turn a bug into a plausible-looking change. They stay
** sorted, and validate rejects them.
**
** validate makes one pass for the per-record rules, the ranges, the order and the sums, then
** two-pointer walks for the disjointness of sorted lists (REMOVE vs MOVE sources, INSERT vs
** MODIFY). MOVE destinations are the one list that canonical order does not sort. Up to
** SMALL_MOVES of them are checked pairwise (no memory); more are copied to a temporary buffer and
** sorted (O(m log m)); if that allocation fails, the pairwise check runs anyway, so validate
** never fails for lack of memory and its answer never depends on it. Cost: O(count + m log m) for
** m MOVE runs, O(count) when there are none. Every access is within runs[0..<count].
**
** ============================================================================================
** The batch composer
** ============================================================================================
**
** Segment model. The batch holds the CURRENT array as a list of segments in current order:
**
**   struct segment { uint64_t origin; uint64_t length; }
**     origin <  UINT64_MAX: `length` ORIGINAL elements, old indices origin ..< origin + length,
**                           in that order;
**     origin == UINT64_MAX: `length` elements INSERTED during the batch (INSERTED below).
**
** An edit walks the list to the segments containing its indices (O(segments)), splits at most two
** of them, and splices. Segments are kept MAXIMAL: after every edit, neighbours that could be one
** segment (two INSERTED, or two ORIGINAL with contiguous origins) are merged, so the list of a
** batch is a function of the resulting arrangement, not of the edit history. That is what makes
** the C and Swift composers agree run for run, and it keeps finish's move detection from seeing
** artificial boundaries. Removing elements drops them from the list (writing their origins first):
** an element inserted and removed inside the batch leaves no trace at all.
**
** Modifications are a sorted list of disjoint spans of OLD indices (ORIGINAL elements only; a
** modified INSERTED element is simply inserted). They are kept apart from the segments so that
** a modification never splits a segment, and they are filtered by survival at finish.
**
** finish, in O(s log s) for s segments:
**   1. The ORIGINAL segments, with their current start ("new position") and rank in current
**      order, are sorted by origin.
**   2. REMOVE runs are the gaps between them in [0, old_count).
**   3. INSERT runs are the INSERTED segments at their current positions.
**   4. Moves. Sorted by origin, the ranks form a permutation; the segments that STAY are a
**      heaviest increasing subsequence of it (weighted by segment length, so that the most
**      ELEMENTS stay and as few as possible are reported moved), and every other ORIGINAL segment
**      is one MOVE run (source = origin, destination = its current position). Computed with a
**      Fenwick tree of prefix maxima over ranks: for segment i in origin order,
**          best[i] = length[i] + max{ best[j] : j before i in origin order, rank[j] < rank[i] }
**      TIE-BREAKING, exactly: "max" compares, in this order, (a) the greater best; (b) the
**      smaller displacement |new position - origin| (a segment still at its old index is the
**      better one to keep); (c) the smaller rank (the segment that comes first in the new
**      array). The chain ends at the maximum of all segments under the same order and is
**      followed back through the chosen predecessors. Because ranks are unique, this is a total
**      order, so the result does not depend on how the maxima are computed (the Swift twin uses
**      the same Fenwick tree, but a quadratic scan would agree).
**      Examples: swapping 1 and 3 in [0 1 2 3 4] gives [0 3 2 1 4]; chains {0,1,4}, {0,2,4} and
**      {0,3,4} all weigh 3, and (b) keeps 2, which did not move, so the change is MOVE 1 -> 3 and
**      MOVE 3 -> 1. Swapping neighbours, [A B] -> [B A]: both displacements are 1, (c) keeps B
**      (rank 0), and A is reported moved (MOVE start 0, length 1, to 1).
**   5. MODIFY runs: every surviving ORIGINAL segment intersected with the modified spans, mapped
**      to new positions, emitted in new-index order (touching pieces merge).
**   Runs are emitted in canonical order directly; an emitted run that touches the previous one of
**   the same op is merged into it. The result is cached until the next edit, so a caller that
**   asks for the count first and then the runs pays for one composition.
**
** Memory: 16 bytes per segment and per modified span, plus at finish 57 bytes per ORIGINAL segment
** (+ 8) of scratch and 32 per run of result, all through the batch's allocator. A batch of e edits has
** at most 2e + 1 segments. Failure atomicity: every edit reserves what it may need before it
** changes anything, so COBS_NO_MEMORY leaves the batch as it was; finish changes nothing visible.
**
** Known cost: an edit is O(segments), so a batch of e scattered edits is O(e^2). Fine for the
** hundreds of edits of a transaction; a removeAll(where:) that strikes every other element of a
** large array should be reported as one change built from its own index list instead.
*/

#include "cobs_internal.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cobs_changes.h"

/* Under COBS_INTERNAL_CHECKS, debug builds re-check the segment list after every successful edit
** and validate every composed change. O(segments) per edit, O(runs) per finish. */
#if defined(COBS_INTERNAL_CHECKS) && !defined(NDEBUG)
#define BATCH_VERIFY(b) batch_verify(b)
#else
#define BATCH_VERIFY(b) ((void)0)
#endif

/* ------------------------------------------------------------------------------------------- */
/* Layout                                                                                      */
/* ------------------------------------------------------------------------------------------- */

static_assert(sizeof(cobs_run) == 32, "the record format table: one run is 32 bytes");
static_assert(offsetof(cobs_run, op) == 0 && offsetof(cobs_run, reserved_) == 4 &&
                  offsetof(cobs_run, start) == 8 && offsetof(cobs_run, length) == 16 &&
                  offsetof(cobs_run, to) == 24,
              "field offsets of the record format table (no padding anywhere)");
static_assert(COBS_RUN_REMOVE < COBS_RUN_INSERT && COBS_RUN_INSERT < COBS_RUN_MOVE &&
                  COBS_RUN_MOVE < COBS_RUN_MODIFY,
              "canonical order sorts by op value first");

/* At most this many MOVE destinations are checked pairwise by validate, without memory. */
#define SMALL_MOVES 16u

/* ------------------------------------------------------------------------------------------- */
/* Runs                                                                                        */
/* ------------------------------------------------------------------------------------------- */

/* Everything that can be said about one record without looking at the others. */
static bool run_is_well_formed(const cobs_run *r) {
    if (r->op < COBS_RUN_REMOVE || r->op > COBS_RUN_MODIFY) return false;
    if (r->reserved_ != 0 || r->length == 0) return false;
    if (r->start > UINT64_MAX - r->length) return false;
    if (r->op == COBS_RUN_MOVE) return r->to <= UINT64_MAX - r->length;
    return r->to == 0;
}

static inline uint64_t run_end(const cobs_run *r) {
    return r->start + r->length;
}

/* Whether `b`, which follows `a` in canonical order, continues it exactly (one run of the two). */
static bool run_continues(const cobs_run *a, const cobs_run *b) {
    if (a->op != b->op || run_end(a) != b->start) return false;
    return a->op != COBS_RUN_MOVE || a->to + a->length == b->to;
}

/* The canonical sort key (op, start, length, to), as a strict "less". */
static int run_less(const void *pa, const void *pb) {
    const cobs_run *a = pa, *b = pb;
    if (a->op != b->op) return a->op < b->op;
    if (a->start != b->start) return a->start < b->start;
    if (a->length != b->length) return a->length < b->length;
    return a->to < b->to;
}

/* MOVE runs by destination. */
static int run_to_less(const void *pa, const void *pb) {
    const cobs_run *a = pa, *b = pb;
    return a->to < b->to;
}

cobs_status cobs_changes_normalize(cobs_run *runs, size_t count, size_t *out_count) {
    if (out_count == NULL || (runs == NULL && count > 0)) return COBS_INVALID_ARGUMENT;
    for (size_t i = 0; i < count; i++) {
        if (!run_is_well_formed(&runs[i])) return COBS_INVALID_ARGUMENT;
    }
    if (count == 0) {
        *out_count = 0;
        return COBS_OK;
    }
    /* Most producers emit runs already in canonical order (a permutation's moves in old-index
    ** order, a batch's encoder output): checking costs one pass, where the heap sort of 100,000
    ** sorted moves (a reversal) took ~800 instructions per run. The key is every field but
    ** reserved_, which is 0 in a well-formed run: runs with equal keys are identical, so input in
    ** non-decreasing order is exactly what the (unstable) sort would return. */
    bool sorted = true;
    for (size_t i = 1; i < count && sorted; i++) sorted = !run_less(&runs[i], &runs[i - 1]);
    if (!sorted) heap_sort(runs, count, sizeof *runs, run_less);
    size_t n = 1;
    for (size_t i = 1; i < count; i++) {
        if (run_continues(&runs[n - 1], &runs[i])) {
            runs[n - 1].length += runs[i].length; /* cannot overflow: runs[i] is well formed */
        } else {
            runs[n++] = runs[i];
        }
    }
    *out_count = n;
    return COBS_OK;
}

/* Whether two lists of spans, each sorted and internally disjoint, share an index. A span is
** (start, length) of a run, or (to, length) when `*_dest` is set. */
static bool sorted_spans_intersect(const cobs_run *a, size_t na, bool a_dest, const cobs_run *b,
                                   size_t nb, bool b_dest) {
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        const uint64_t as = a_dest ? a[i].to : a[i].start, ae = as + a[i].length;
        const uint64_t bs = b_dest ? b[j].to : b[j].start, be = bs + b[j].length;
        if (ae <= bs) {
            i++;
        } else if (be <= as) {
            j++;
        } else {
            return true;
        }
    }
    return false;
}

/* Whether [s, e) meets one of the sorted, disjoint runs `r[0..<n]` (binary search). */
static bool span_meets_sorted(uint64_t s, uint64_t e, const cobs_run *r, size_t n) {
    size_t lo = 0, hi = n; /* first run whose end is beyond s */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (run_end(&r[mid]) <= s) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && r[lo].start < e;
}

/* MOVE destinations: pairwise disjoint, and disjoint from the (sorted) INSERT runs. */
static bool move_destinations_are_disjoint(const cobs_run *moves, size_t m, const cobs_run *inserts,
                                           size_t ni) {
    cobs_run *sorted = NULL;
    if (m > SMALL_MOVES) sorted = malloc(m * sizeof *sorted); /* m * 32 <= count * 32: no overflow */
    if (sorted != NULL) {
        memcpy(sorted, moves, m * sizeof *sorted);
        heap_sort(sorted, m, sizeof *sorted, run_to_less);
        bool ok = true;
        for (size_t i = 1; i < m && ok; i++) {
            ok = sorted[i - 1].to + sorted[i - 1].length <= sorted[i].to;
        }
        ok = ok && !sorted_spans_intersect(sorted, m, true, inserts, ni, false);
        free(sorted);
        return ok;
    }
    /* Few moves, or no memory for the sort: pairwise, then a binary search each. */
    for (size_t i = 0; i < m; i++) {
        const uint64_t s = moves[i].to, e = s + moves[i].length;
        for (size_t j = i + 1; j < m; j++) {
            if (moves[j].to < e && s < moves[j].to + moves[j].length) return false;
        }
        if (span_meets_sorted(s, e, inserts, ni)) return false;
    }
    return true;
}

cobs_status cobs_changes_validate(const cobs_run *runs, size_t count, uint64_t old_count,
                                  uint64_t new_count) {
    if (runs == NULL && count > 0) return COBS_INVALID_ARGUMENT;
    if (count == 0) return old_count == new_count ? COBS_OK : COBS_INVALID_ARGUMENT;
    /* first[op] .. first[op + 1] is the block of that op (ops are 1...4; first[5] == count). */
    size_t first[6] = {0, 0, 0, 0, 0, 0};
    uint64_t sum[5] = {0, 0, 0, 0, 0};
    for (size_t i = 0; i < count; i++) {
        const cobs_run *r = &runs[i];
        if (!run_is_well_formed(r)) return COBS_INVALID_ARGUMENT;
        const uint64_t limit =
            (r->op == COBS_RUN_REMOVE || r->op == COBS_RUN_MOVE) ? old_count : new_count;
        if (run_end(r) > limit) return COBS_INVALID_ARGUMENT;
        if (r->op == COBS_RUN_MOVE && r->to + r->length > new_count) return COBS_INVALID_ARGUMENT;
        if (i > 0) {
            const cobs_run *p = &runs[i - 1];
            if (p->op > r->op) return COBS_INVALID_ARGUMENT;
            if (p->op == r->op) {
                /* Sorted, disjoint, and not one run in two pieces. MOVE sources may touch when
                ** their destinations do not continue each other. */
                const bool touching_allowed = r->op == COBS_RUN_MOVE;
                if (run_end(p) > r->start || (run_end(p) == r->start && !touching_allowed) ||
                    run_continues(p, r)) {
                    return COBS_INVALID_ARGUMENT;
                }
            }
        }
        /* Within one op the spans are sorted, disjoint and inside [0, limit): sums stay <= limit. */
        sum[r->op] += r->length;
    }
    /* Block boundaries: first[op] = index of the first run with op >= `op`. */
    first[5] = count;
    for (uint32_t op = COBS_RUN_MODIFY; op >= COBS_RUN_REMOVE; op--) {
        size_t at = first[op + 1];
        while (at > 0 && runs[at - 1].op >= op) at--;
        first[op] = at;
    }
    const cobs_run *removes = runs + first[COBS_RUN_REMOVE];
    const cobs_run *inserts = runs + first[COBS_RUN_INSERT];
    const cobs_run *moves = runs + first[COBS_RUN_MOVE];
    const cobs_run *modifies = runs + first[COBS_RUN_MODIFY];
    const size_t nr = first[COBS_RUN_INSERT] - first[COBS_RUN_REMOVE];
    const size_t ni = first[COBS_RUN_MOVE] - first[COBS_RUN_INSERT];
    const size_t nm = first[COBS_RUN_MODIFY] - first[COBS_RUN_MOVE];
    const size_t nx = first[5] - first[COBS_RUN_MODIFY];

    if (sorted_spans_intersect(removes, nr, false, moves, nm, false)) return COBS_INVALID_ARGUMENT;
    if (sorted_spans_intersect(inserts, ni, false, modifies, nx, false)) return COBS_INVALID_ARGUMENT;
    if (!move_destinations_are_disjoint(moves, nm, inserts, ni)) return COBS_INVALID_ARGUMENT;
    /* Disjointness makes removed + moved <= old_count and inserted + moved <= new_count. */
    if (old_count - sum[COBS_RUN_REMOVE] != new_count - sum[COBS_RUN_INSERT]) {
        return COBS_INVALID_ARGUMENT;
    }
    return COBS_OK;
}

/* ------------------------------------------------------------------------------------------- */
/* Batch: state                                                                                */
/* ------------------------------------------------------------------------------------------- */

#define INSERTED UINT64_MAX /* segment origin of elements inserted during the batch */

typedef struct segment {
    uint64_t origin; /* old index of the first element, or INSERTED */
    uint64_t length; /* >= 1 */
} segment;

typedef struct span {
    uint64_t start;  /* old index */
    uint64_t length; /* >= 1 */
} span;

static_assert(sizeof(segment) == 16 && sizeof(span) == 16, "the memory figures in the essay");

/* Invariants (batch_verify checks them in debug builds with COBS_INTERNAL_CHECKS):
**   - the segments' lengths are >= 1 and sum to `count`;
**   - an ORIGINAL segment lies inside [0, old_count); ORIGINAL segments are pairwise disjoint;
**   - no two neighbouring segments are mergeable (both INSERTED, or contiguous origins);
**   - mods[] is sorted by start, disjoint, non-touching, inside [0, old_count);
**   - result_valid implies result[0..<nresult] is the composition of the current state. */
struct cobs_batch {
    segment *segs;            /* current array, in current order */
    size_t nsegs, segs_cap;
    span *mods;               /* modified ORIGINAL elements, by old index */
    size_t nmods, mods_cap;
    cobs_run *result;         /* cached composition */
    size_t nresult, result_cap;
    bool result_valid;
    uint64_t old_count;       /* length before the batch */
    uint64_t count;           /* current length */
    cobs_allocator allocator; /* copied at creation */
};

/* Makes room for `need` elements of `size` bytes in `*array` (capacity `*cap`), doubling. Only
** allocates; on failure nothing changes. */
static cobs_status reserve(const cobs_allocator *a, void **array, size_t *cap, size_t need,
                           size_t size) {
    if (need <= *cap) return COBS_OK;
    size_t new_cap = *cap < 8 ? 8 : *cap;
    while (new_cap < need) {
        if (new_cap > SIZE_MAX / 2 / size) return COBS_NO_MEMORY;
        new_cap *= 2;
    }
    if (new_cap > SIZE_MAX / size) return COBS_NO_MEMORY;
    void *fresh = a->allocate(a->user, new_cap * size);
    if (fresh == NULL) return COBS_NO_MEMORY;
    if (*array != NULL) {
        memcpy(fresh, *array, *cap * size);
        a->deallocate(a->user, *array, *cap * size);
    }
    *array = fresh;
    *cap = new_cap;
    return COBS_OK;
}

static cobs_status reserve_segments(cobs_batch *b, size_t extra) {
    void *p = b->segs;
    const cobs_status st = reserve(&b->allocator, &p, &b->segs_cap, b->nsegs + extra, sizeof(segment));
    b->segs = p;
    return st;
}

static bool segments_mergeable(const segment *a, const segment *b) {
    if (a->origin == INSERTED || b->origin == INSERTED) return a->origin == b->origin;
    return a->origin + a->length == b->origin;
}

static void insert_segment(cobs_batch *b, size_t at, segment s) {
    COBS_DCHECK(b->nsegs < b->segs_cap && at <= b->nsegs);
    memmove(&b->segs[at + 1], &b->segs[at], (b->nsegs - at) * sizeof(segment));
    b->segs[at] = s;
    b->nsegs++;
}

static void erase_segments(cobs_batch *b, size_t from, size_t to) {
    COBS_DCHECK(from <= to && to <= b->nsegs);
    memmove(&b->segs[from], &b->segs[to], (b->nsegs - to) * sizeof(segment));
    b->nsegs -= to - from;
}

/* Merges segments i and i + 1 when they form one segment. */
static void merge_pair(cobs_batch *b, size_t i) {
    if (i + 1 >= b->nsegs || !segments_mergeable(&b->segs[i], &b->segs[i + 1])) return;
    b->segs[i].length += b->segs[i + 1].length;
    erase_segments(b, i + 1, i + 2);
}

/* Merges around the boundary before segment `i` and the one after it. */
static void merge_around(cobs_batch *b, size_t i) {
    merge_pair(b, i);
    if (i > 0) merge_pair(b, i - 1);
}

/* Makes `pos` (<= count) a segment boundary and returns the index of the segment that starts
** there (nsegs when pos == count). Needs room for one more segment. */
static size_t split_at(cobs_batch *b, uint64_t pos) {
    uint64_t at = 0;
    for (size_t i = 0; i < b->nsegs; i++) {
        segment *s = &b->segs[i];
        if (pos == at) return i;
        if (pos - at < s->length) {
            const uint64_t head = pos - at;
            const segment tail = {s->origin == INSERTED ? INSERTED : s->origin + head,
                                  s->length - head};
            s->length = head;
            insert_segment(b, i + 1, tail);
            return i + 1;
        }
        at += s->length;
    }
    COBS_CHECK(pos == at, "batch: segment lengths do not add up to the array's length");
    return b->nsegs;
}

#if defined(COBS_INTERNAL_CHECKS) && !defined(NDEBUG)
static void batch_verify(const cobs_batch *b) {
    uint64_t total = 0;
    for (size_t i = 0; i < b->nsegs; i++) {
        const segment *s = &b->segs[i];
        COBS_CHECK(s->length >= 1, "batch: empty segment");
        COBS_CHECK(s->origin == INSERTED ||
                       (s->origin < b->old_count && s->length <= b->old_count - s->origin),
                   "batch: original segment outside the old array");
        COBS_CHECK(i == 0 || !segments_mergeable(&b->segs[i - 1], s), "batch: segments not maximal");
        total += s->length;
    }
    COBS_CHECK(total == b->count, "batch: segment lengths do not add up to the array's length");
    for (size_t i = 0; i < b->nmods; i++) {
        COBS_CHECK(b->mods[i].length >= 1 && b->mods[i].start < b->old_count &&
                       b->mods[i].length <= b->old_count - b->mods[i].start,
                   "batch: modified span outside the old array");
        COBS_CHECK(i == 0 || b->mods[i - 1].start + b->mods[i - 1].length < b->mods[i].start,
                   "batch: modified spans unsorted or touching");
    }
}
#endif

/* ------------------------------------------------------------------------------------------- */
/* Batch: edits                                                                                */
/* ------------------------------------------------------------------------------------------- */

cobs_status cobs_batch_create(uint64_t old_count, const cobs_allocator *allocator, cobs_batch **out) {
    if (out == NULL) return COBS_INVALID_ARGUMENT;
    *out = NULL;
    if (allocator == NULL) allocator = &default_allocator;
    if (allocator->allocate == NULL || allocator->deallocate == NULL) return COBS_INVALID_ARGUMENT;
    cobs_batch *b = allocator->allocate(allocator->user, sizeof *b);
    if (b == NULL) return COBS_NO_MEMORY;
    memset(b, 0, sizeof *b);
    b->allocator = *allocator;
    b->old_count = old_count;
    b->count = old_count;
    if (old_count > 0) {
        if (reserve_segments(b, 1) != COBS_OK) {
            allocator->deallocate(allocator->user, b, sizeof *b);
            return COBS_NO_MEMORY;
        }
        b->segs[0] = (segment){0, old_count};
        b->nsegs = 1;
    }
    BATCH_VERIFY(b);
    *out = b;
    return COBS_OK;
}

void cobs_batch_destroy(cobs_batch *b) {
    if (b == NULL) return;
    const cobs_allocator a = b->allocator;
    if (b->segs != NULL) a.deallocate(a.user, b->segs, b->segs_cap * sizeof(segment));
    if (b->mods != NULL) a.deallocate(a.user, b->mods, b->mods_cap * sizeof(span));
    if (b->result != NULL) a.deallocate(a.user, b->result, b->result_cap * sizeof(cobs_run));
    a.deallocate(a.user, b, sizeof *b);
}

uint64_t cobs_batch_count(const cobs_batch *b) {
    return b == NULL ? 0 : b->count;
}

cobs_status cobs_batch_insert(cobs_batch *b, uint64_t index, uint64_t count) {
    if (b == NULL || count == 0 || index > b->count || count > UINT64_MAX - b->count) {
        return COBS_INVALID_ARGUMENT;
    }
    if (reserve_segments(b, 2) != COBS_OK) return COBS_NO_MEMORY;
    const size_t i = split_at(b, index);
    insert_segment(b, i, (segment){INSERTED, count});
    merge_around(b, i);
    b->count += count;
    b->result_valid = false;
    BATCH_VERIFY(b);
    return COBS_OK;
}

cobs_status cobs_batch_remove(cobs_batch *b, uint64_t index, uint64_t count, uint64_t *origins_out) {
    if (b == NULL || count == 0 || index > b->count || count > b->count - index) {
        return COBS_INVALID_ARGUMENT;
    }
    if (reserve_segments(b, 2) != COBS_OK) return COBS_NO_MEMORY;
    const size_t from = split_at(b, index);
    const size_t to = split_at(b, index + count);
    if (origins_out != NULL) {
        uint64_t k = 0;
        for (size_t i = from; i < to; i++) {
            const segment *s = &b->segs[i];
            for (uint64_t t = 0; t < s->length; t++) {
                origins_out[k++] = s->origin == INSERTED ? UINT64_MAX : s->origin + t;
            }
        }
    }
    erase_segments(b, from, to);
    if (from > 0) merge_pair(b, from - 1);
    b->count -= count;
    b->result_valid = false;
    BATCH_VERIFY(b);
    return COBS_OK;
}

cobs_status cobs_batch_move(cobs_batch *b, uint64_t from, uint64_t to) {
    if (b == NULL || from >= b->count || to >= b->count) return COBS_INVALID_ARGUMENT;
    if (from == to) return COBS_OK;
    /* Peak: two splits, one erase, one split, one insertion. */
    if (reserve_segments(b, 4) != COBS_OK) return COBS_NO_MEMORY;
    const size_t at = split_at(b, from);
    (void)split_at(b, from + 1);
    const segment moved = b->segs[at];
    COBS_DCHECK(moved.length == 1);
    erase_segments(b, at, at + 1);
    if (at > 0) merge_pair(b, at - 1);
    const size_t i = split_at(b, to);
    insert_segment(b, i, moved);
    merge_around(b, i);
    b->result_valid = false;
    BATCH_VERIFY(b);
    return COBS_OK;
}

cobs_status cobs_batch_permute(cobs_batch *b, const uint64_t *permutation, size_t count) {
    if (b == NULL || (count > 0 && permutation == NULL) || (uint64_t)count != b->count) {
        return COBS_INVALID_ARGUMENT;
    }
    if (count == 0) return COBS_OK;
    if (count > SIZE_MAX / sizeof(segment)) return COBS_NO_MEMORY;
    const size_t seen_words = count / 64 + 1;
    /* origins[p] = the old index of the element at current index p (INSERTED for new ones);
    ** seen[] = the current indices the permutation has named so far (to catch repeats). */
    uint64_t *origins = b->allocator.allocate(b->allocator.user, count * sizeof(uint64_t));
    uint64_t *seen = b->allocator.allocate(b->allocator.user, seen_words * sizeof(uint64_t));
    segment *segs = b->allocator.allocate(b->allocator.user, count * sizeof(segment));
    cobs_status status = origins != NULL && seen != NULL && segs != NULL ? COBS_OK : COBS_NO_MEMORY;
    size_t nsegs = 0;
    if (status == COBS_OK) {
        memset(seen, 0, seen_words * sizeof(uint64_t));
        size_t p = 0;
        for (size_t i = 0; i < b->nsegs; i++) {
            const segment *s = &b->segs[i];
            COBS_CHECK(s->length <= count - p, "batch: segment lengths do not add up to the array's length");
            for (uint64_t t = 0; t < s->length; t++) origins[p++] = s->origin == INSERTED ? INSERTED : s->origin + t;
        }
        COBS_CHECK(p == count, "batch: segment lengths do not add up to the array's length");
        for (size_t i = 0; i < count; i++) {
            const uint64_t from = permutation[i];
            if (from >= count || (seen[from / 64] >> (from % 64) & 1) != 0) {
                status = COBS_INVALID_ARGUMENT;
                break;
            }
            seen[from / 64] |= (uint64_t)1 << (from % 64);
            const segment next = {origins[from], 1};
            if (nsegs > 0 && segments_mergeable(&segs[nsegs - 1], &next)) segs[nsegs - 1].length++;
            else segs[nsegs++] = next;
        }
    }
    if (origins != NULL) b->allocator.deallocate(b->allocator.user, origins, count * sizeof(uint64_t));
    if (seen != NULL) b->allocator.deallocate(b->allocator.user, seen, seen_words * sizeof(uint64_t));
    if (status != COBS_OK) {
        if (segs != NULL) b->allocator.deallocate(b->allocator.user, segs, count * sizeof(segment));
        return status;
    }
    /* Keep a list sized for its segments (and room to grow), not for every element. */
    size_t cap = count;
    if (nsegs < count / 2) {
        const size_t fitted = nsegs < 8 ? 8 : nsegs * 2;
        segment *small = b->allocator.allocate(b->allocator.user, fitted * sizeof(segment));
        if (small != NULL) {
            memcpy(small, segs, nsegs * sizeof(segment));
            b->allocator.deallocate(b->allocator.user, segs, count * sizeof(segment));
            segs = small;
            cap = fitted;
        }
    }
    if (b->segs != NULL) b->allocator.deallocate(b->allocator.user, b->segs, b->segs_cap * sizeof(segment));
    b->segs = segs;
    b->nsegs = nsegs;
    b->segs_cap = cap;
    b->result_valid = false;
    BATCH_VERIFY(b);
    return COBS_OK;
}

cobs_status cobs_batch_modify(cobs_batch *b, uint64_t index) {
    if (b == NULL || index >= b->count) return COBS_INVALID_ARGUMENT;
    uint64_t at = 0;
    size_t i = 0;
    while (index - at >= b->segs[i].length) at += b->segs[i++].length;
    if (b->segs[i].origin == INSERTED) return COBS_OK; /* still just an insertion */
    const uint64_t origin = b->segs[i].origin + (index - at);

    /* p = the first span starting after `origin`. */
    size_t lo = 0, hi = b->nmods;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (b->mods[mid].start <= origin) lo = mid + 1;
        else hi = mid;
    }
    const size_t p = lo;
    span *prev = p > 0 ? &b->mods[p - 1] : NULL;
    span *next = p < b->nmods ? &b->mods[p] : NULL;
    if (prev != NULL && origin < prev->start + prev->length) return COBS_OK; /* already marked */
    const bool joins_prev = prev != NULL && prev->start + prev->length == origin;
    const bool joins_next = next != NULL && origin + 1 == next->start;
    if (joins_prev && joins_next) {
        prev->length += 1 + next->length;
        memmove(&b->mods[p], &b->mods[p + 1], (b->nmods - p - 1) * sizeof(span));
        b->nmods--;
    } else if (joins_prev) {
        prev->length++;
    } else if (joins_next) {
        next->start--;
        next->length++;
    } else {
        void *mods = b->mods;
        if (reserve(&b->allocator, &mods, &b->mods_cap, b->nmods + 1, sizeof(span)) != COBS_OK) {
            return COBS_NO_MEMORY;
        }
        b->mods = mods;
        memmove(&b->mods[p + 1], &b->mods[p], (b->nmods - p) * sizeof(span));
        b->mods[p] = (span){origin, 1};
        b->nmods++;
    }
    b->result_valid = false;
    BATCH_VERIFY(b);
    return COBS_OK;
}

/* ------------------------------------------------------------------------------------------- */
/* Batch: composition                                                                          */
/* ------------------------------------------------------------------------------------------- */

/* One ORIGINAL segment as finish sees it. */
typedef struct item {
    uint64_t origin; /* old index of its first element */
    uint64_t length;
    uint64_t newpos; /* current index of its first element */
    uint64_t rank;   /* position among the ORIGINAL segments in current order */
} item;

static int item_origin_less(const void *pa, const void *pb) {
    const item *a = pa, *b = pb;
    return a->origin < b->origin;
}

#define NONE SIZE_MAX

static inline uint64_t displacement(const item *it) {
    return it->newpos > it->origin ? it->newpos - it->origin : it->origin - it->newpos;
}

/* Whether item i beats item j as a predecessor or chain end: greater best, then smaller
** displacement, then smaller rank (the essay's tie-breaking rule). */
static inline bool beats(const uint64_t *best, const item *items, size_t i, size_t j) {
    if (j == NONE) return true;
    if (best[i] != best[j]) return best[i] > best[j];
    const uint64_t di = displacement(&items[i]), dj = displacement(&items[j]);
    if (di != dj) return di < dj;
    return items[i].rank < items[j].rank;
}

/* Appends a run, merging it into the previous one when it continues it. */
static void emit(cobs_batch *b, uint32_t op, uint64_t start, uint64_t length, uint64_t to) {
    const cobs_run r = {op, 0, start, length, to};
    if (b->nresult > 0 && run_continues(&b->result[b->nresult - 1], &r)) {
        b->result[b->nresult - 1].length += length;
        return;
    }
    COBS_CHECK(b->nresult < b->result_cap, "batch: more runs than the bound computed for them");
    b->result[b->nresult++] = r;
}

/* Emits the MODIFY pieces of the ORIGINAL segment `s`, which starts at current index `pos`. */
static void emit_modified(cobs_batch *b, const segment *s, uint64_t pos) {
    const uint64_t end = s->origin + s->length;
    size_t lo = 0, hi = b->nmods; /* first span ending after s->origin */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (b->mods[mid].start + b->mods[mid].length <= s->origin) lo = mid + 1;
        else hi = mid;
    }
    for (size_t k = lo; k < b->nmods && b->mods[k].start < end; k++) {
        const uint64_t from = b->mods[k].start > s->origin ? b->mods[k].start : s->origin;
        const uint64_t mod_end = b->mods[k].start + b->mods[k].length;
        const uint64_t until = mod_end < end ? mod_end : end;
        emit(b, COBS_RUN_MODIFY, pos + (from - s->origin), until - from, 0);
    }
}

/* Computes the composed change into b->result. On COBS_NO_MEMORY the cache stays invalid and
** nothing else changes. */
static cobs_status compose(cobs_batch *b) {
    const cobs_allocator *a = &b->allocator;
    size_t k = 0;
    for (size_t i = 0; i < b->nsegs; i++) k += b->segs[i].origin != INSERTED;

    /* Bound on the runs: REMOVE <= k + 1 gaps, INSERT <= nsegs - k, MOVE <= k, MODIFY <= k +
    ** nmods (each piece ends at a segment end or a span end). All terms <= SIZE_MAX / 64. */
    const size_t bound = b->nsegs + 2 * k + 1 + b->nmods;
    void *result = b->result;
    if (reserve(a, &result, &b->result_cap, bound, sizeof(cobs_run)) != COBS_OK) return COBS_NO_MEMORY;
    b->result = result;

    /* Scratch: items[k], best[k], pred[k], tree[k + 1], stays[k]. */
    const size_t per_item = sizeof(item) + sizeof(uint64_t) + 2 * sizeof(size_t) + sizeof(bool);
    const size_t scratch_bytes = k * per_item + sizeof(size_t);
    unsigned char *scratch = a->allocate(a->user, scratch_bytes);
    if (scratch == NULL) return COBS_NO_MEMORY;
    item *items = (item *)(void *)scratch;
    uint64_t *best = (uint64_t *)(void *)(scratch + k * sizeof(item));
    size_t *pred = (size_t *)(void *)(scratch + k * (sizeof(item) + sizeof(uint64_t)));
    size_t *tree = pred + k; /* 1-based Fenwick tree over ranks: item index or NONE */
    bool *stays = (bool *)(void *)(tree + k + 1);
    static_assert(sizeof(item) % sizeof(uint64_t) == 0 && sizeof(uint64_t) % sizeof(size_t) == 0,
                  "items[], best[], pred[] and tree[] follow each other without padding");

    /* 1. ORIGINAL segments with positions and ranks, sorted by origin. */
    uint64_t pos = 0;
    size_t rank = 0;
    for (size_t i = 0; i < b->nsegs; i++) {
        const segment *s = &b->segs[i];
        if (s->origin != INSERTED) {
            items[rank] = (item){s->origin, s->length, pos, rank};
            rank++;
        }
        pos += s->length;
    }
    heap_sort(items, k, sizeof *items, item_origin_less);

    /* 4 (first, as it decides what 2 and the MOVE runs are). Heaviest increasing subsequence. */
    for (size_t p = 0; p <= k; p++) tree[p] = NONE;
    size_t end = NONE;
    for (size_t i = 0; i < k; i++) {
        size_t j = NONE;
        for (size_t p = (size_t)items[i].rank; p > 0; p -= p & (~p + 1)) {
            if (tree[p] != NONE && beats(best, items, tree[p], j)) j = tree[p];
        }
        best[i] = items[i].length + (j == NONE ? 0 : best[j]);
        pred[i] = j;
        for (size_t p = (size_t)items[i].rank + 1; p <= k; p += p & (~p + 1)) {
            if (beats(best, items, i, tree[p])) tree[p] = i;
        }
        if (beats(best, items, i, end)) end = i;
        stays[i] = false;
    }
    for (size_t i = end; i != NONE; i = pred[i]) stays[i] = true;

    b->nresult = 0;
    /* 2. REMOVE: the gaps between the surviving ORIGINAL segments. */
    uint64_t covered = 0;
    for (size_t i = 0; i < k; i++) {
        if (items[i].origin > covered) emit(b, COBS_RUN_REMOVE, covered, items[i].origin - covered, 0);
        covered = items[i].origin + items[i].length;
    }
    if (covered < b->old_count) emit(b, COBS_RUN_REMOVE, covered, b->old_count - covered, 0);
    /* 3. INSERT: the INSERTED segments where they are now. */
    pos = 0;
    for (size_t i = 0; i < b->nsegs; i++) {
        if (b->segs[i].origin == INSERTED) emit(b, COBS_RUN_INSERT, pos, b->segs[i].length, 0);
        pos += b->segs[i].length;
    }
    /* MOVE: every ORIGINAL segment off the chain, by origin. */
    for (size_t i = 0; i < k; i++) {
        if (!stays[i]) emit(b, COBS_RUN_MOVE, items[i].origin, items[i].length, items[i].newpos);
    }
    /* 5. MODIFY, in current order. */
    if (b->nmods > 0) {
        pos = 0;
        for (size_t i = 0; i < b->nsegs; i++) {
            if (b->segs[i].origin != INSERTED) emit_modified(b, &b->segs[i], pos);
            pos += b->segs[i].length;
        }
    }
    a->deallocate(a->user, scratch, scratch_bytes);
    b->result_valid = true;
#if defined(COBS_INTERNAL_CHECKS) && !defined(NDEBUG)
    COBS_CHECK(cobs_changes_validate(b->result, b->nresult, b->old_count, b->count) == COBS_OK,
               "batch: composed a change that does not validate");
#endif
    return COBS_OK;
}

cobs_status cobs_batch_finish(cobs_batch *b, cobs_run *runs_out, size_t capacity, size_t *count) {
    if (b == NULL || count == NULL || (runs_out == NULL && capacity > 0)) return COBS_INVALID_ARGUMENT;
    if (!b->result_valid) {
        const cobs_status st = compose(b);
        if (st != COBS_OK) return st;
    }
    *count = b->nresult;
    if (b->nresult > capacity) return COBS_BUFFER_TOO_SMALL;
    if (b->nresult > 0) memcpy(runs_out, b->result, b->nresult * sizeof *runs_out);
    return COBS_OK;
}
