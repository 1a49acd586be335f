/*
** ObserveCore C core: private helpers shared by the .c files. Never installed, never included by
** the public headers (it lives outside include/), so nothing here is API.
**
** Two assertion macros, with a rule for choosing between them:
**
**   COBS_CHECK(cond, msg)  aborts with `msg`, the condition, file and line in EVERY build.
**                          Only for internal corruption: a state the core itself must never
**                          produce (a probe loop that finds no empty bucket, a count that
**                          disagrees with the table). Never for bad arguments: those are the
**                          caller's, and are reported as COBS_INVALID_ARGUMENT.
**   COBS_DCHECK(cond)      the same in debug builds; compiled out (not evaluated) under NDEBUG.
**                          For preconditions of static helpers that the public entry points have
**                          already established.
*/
#ifndef COBS_COBS_INTERNAL_H
#define COBS_COBS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
#include <stdlib.h> /* arc4random_buf is in the BSD libcs */
#else
#include <bsd/stdlib.h> /* libbsd (Debian: libbsd-dev) */
#endif

#include "cobs_registry.h" /* cobs_allocator */

#if defined(__GNUC__) || defined(__clang__)
#define COBS_LIKELY(x) __builtin_expect(!!(x), 1)
#define COBS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define COBS_ALWAYS_INLINE __attribute__((always_inline)) inline
#define COBS_NOINLINE __attribute__((noinline))
#define COBS_FLATTEN __attribute__((flatten)) /* inline every call in the function's body */
#define COBS_COLD __attribute__((cold))
#define COBS_UNUSED __attribute__((unused))
#define COBS_PRINTF_FORMAT(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define COBS_LIKELY(x) (x)
#define COBS_UNLIKELY(x) (x)
#define COBS_ALWAYS_INLINE inline
#define COBS_NOINLINE
#define COBS_FLATTEN
#define COBS_COLD
#define COBS_UNUSED
#define COBS_PRINTF_FORMAT(fmt, args)
#endif

/* Out of line and cold so the hot paths carry only a compare and a never-taken branch; "unused"
** because translation units without a check would otherwise warn about it. */
static COBS_UNUSED COBS_NOINLINE COBS_COLD _Noreturn void check_failed(const char *file, int line,
                                                            const char *cond, const char *msg) {
    fprintf(stderr, "ObserveCore internal error: %s\n  check `%s` failed at %s:%d\n", msg, cond,
            file, line);
    fflush(stderr);
    abort();
}

#define COBS_CHECK(cond, msg)                                                                       \
    do {                                                                                           \
        if (COBS_UNLIKELY(!(cond))) check_failed(__FILE__, __LINE__, #cond, (msg));                \
    } while (0)

#ifdef NDEBUG
/* sizeof keeps the expression type-checked and its variables "used" without evaluating it. */
#define COBS_DCHECK(cond) ((void)sizeof(!(cond)))
#else
#define COBS_DCHECK(cond) COBS_CHECK(cond, "debug check")
#endif

/* ------------------------------------------------------------------------------------------- */
/* Shared by the tables (registry.c, positions.c) and the change encoder (changes.c)           */
/* ------------------------------------------------------------------------------------------- */

/* MurmurHash3's 64-bit finalizer (fmix64): a bijection in which every input bit flips each
** output bit with probability close to 1/2. The xor-shifts bring high bits down before each
** multiply carries low bits up, so two addresses that differ only in bits 32-47, or only in bit 4,
** still land in unrelated buckets. */
static COBS_ALWAYS_INLINE uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

/* The allocator used when a caller passes NULL: malloc/free. */
static COBS_UNUSED void *default_allocate(void *user, size_t size) {
    (void)user;
    return malloc(size);
}

static COBS_UNUSED void default_deallocate(void *user, void *pointer, size_t size) {
    (void)user;
    (void)size;
    free(pointer);
}

static COBS_UNUSED const cobs_allocator default_allocator = {default_allocate, default_deallocate,
                                                             NULL};

/* A fresh 64-bit hash seed from arc4random_buf (never 0, so that 0 can mean "pick one"). */
static COBS_UNUSED uint64_t random_seed(void) {
    uint64_t seed = 0;
    while (seed == 0) arc4random_buf(&seed, sizeof seed);
    return seed;
}

/* Heapsort of `n` elements of `size` bytes (at most 64) by the strict order `less`: in place,
** O(n log n) in the worst case, no allocation (the change encoder must not fail where it cannot
** report it, and qsort gives neither guarantee). Not stable; callers sort by unique keys. */
static COBS_UNUSED void heap_sort(void *base, size_t n, size_t size,
                                  int (*less)(const void *a, const void *b)) {
    unsigned char *const bytes = base;
    unsigned char tmp[64];
    COBS_DCHECK(size <= sizeof tmp);
#define HEAP_AT(i) (bytes + (i) * size)
#define HEAP_SWAP(i, j)                                                                            \
    do {                                                                                           \
        memcpy(tmp, HEAP_AT(i), size);                                                             \
        memcpy(HEAP_AT(i), HEAP_AT(j), size);                                                      \
        memcpy(HEAP_AT(j), tmp, size);                                                             \
    } while (0)
    if (n < 2) return;
    /* Sift-down max-heap, built bottom-up, then repeatedly move the maximum to the end. */
    for (size_t end = n, start = n / 2; end > 1;) {
        size_t root;
        if (start > 0) {
            root = --start;
        } else {
            end--;
            HEAP_SWAP(0, end);
            root = 0;
        }
        for (;;) {
            size_t child = 2 * root + 1;
            if (child >= end) break;
            if (child + 1 < end && less(HEAP_AT(child), HEAP_AT(child + 1))) child++;
            if (!less(HEAP_AT(root), HEAP_AT(child))) break;
            HEAP_SWAP(root, child);
            root = child;
        }
    }
#undef HEAP_SWAP
#undef HEAP_AT
}

#endif /* COBS_COBS_INTERNAL_H */
