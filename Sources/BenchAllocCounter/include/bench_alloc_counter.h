/*
** observe-bench: heap allocations counted in-process.
**
** Linked into an executable, this target REPLACES the C allocation functions of the whole
** process: malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign are defined in
** the executable, so the dynamic linker binds every shared library's calls to them (the Swift
** runtime's swift_slowAlloc, Foundation, libc's own callers such as strdup) ahead of glibc's.
** Each replacement adds one to a counter of the CALLING THREAD and forwards to glibc's allocator
** proper (__libc_malloc, __libc_calloc, __libc_realloc, __libc_memalign), so memory is handed
** out, aligned and freed exactly as without this target; free is not replaced (glibc's free
** takes every block these return).
**
** What counts as one allocation: one call of malloc, calloc, posix_memalign, aligned_alloc or
** memalign, whatever the size and whether it succeeds; one call of realloc unless it only frees
** (a non-null pointer and size 0). Not counted: valloc, pvalloc, reallocarray (glibc calls its
** own realloc internally), mmap, and calls glibc makes to its own allocator from inside libc
** (e.g. fopen's buffer): nothing on a benchmark's measured path uses them.
**
** Cost: one thread-local increment per call (initial-exec TLS: one add relative to %fs), so it
** may stay linked while timing.
**
** Works only where the executable's definitions take precedence over libc's (ELF, glibc). Where
** they do not (static linking of libc, Darwin's two-level namespace, a preloaded allocator), the
** counter simply stays still: callers must check that it moves (observe-bench allocates 1,000
** objects at start-up and reports allocations only when the counter saw them).
**
** Thread safety: every function is safe to call from any thread; the counter read is the
** calling thread's own.
*/
#ifndef BENCH_ALLOC_COUNTER_H
#define BENCH_ALLOC_COUNTER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Allocations made by the calling thread since it started (see the header comment for what one
/// is). Take the difference of two readings around the code to measure, on one thread.
/// - Complexity: O(1); allocates nothing.
uint64_t bench_alloc_count(void);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_ALLOC_COUNTER_H */
