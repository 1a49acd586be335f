/*
** observe-bench: the allocation counter (contract in include/bench_alloc_counter.h).
**
** Why definitions in the executable, and not glibc's __malloc_hook or an LD_PRELOAD library: the
** hooks are gone from glibc since 2.34, and a preload would have to be named on every command
** line. The executable comes first in the dynamic linker's global lookup, so its malloc is the
** one every shared library binds to.
**
** Why forward to the __libc_ entry points, and not to dlsym(RTLD_NEXT, "malloc"): dlsym may
** itself allocate, which would re-enter a replacement that has nothing to forward to yet. glibc
** exports __libc_malloc, __libc_calloc, __libc_realloc and __libc_memalign (GLIBC_2.2.5).
**
** Why free is not replaced: the glibc manual's minimal set for a replacement allocator is
** malloc, free, calloc and realloc, because a replacement usually owns its blocks. Here every
** block still comes from glibc's allocator, so glibc's free is the right one for all of them.
**
** posix_memalign and aligned_alloc forward to __libc_memalign after rejecting, with EINVAL, an
** alignment that is not a power of two (posix_memalign: or not a multiple of sizeof(void *)).
*/
#include "bench_alloc_counter.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

/* Initial-exec: the executable's TLS block is static, so the access never calls
** __tls_get_addr (which could itself allocate, and would cost a call). */
static _Thread_local uint64_t allocations __attribute__((tls_model("initial-exec")));

uint64_t bench_alloc_count(void) { return allocations; }

void *malloc(size_t size) {
    allocations += 1;
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    allocations += 1;
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    if (pointer == NULL || size != 0) allocations += 1;
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    allocations += 1;
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    allocations += 1;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    allocations += 1;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment % sizeof(void *) != 0) return EINVAL;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}
