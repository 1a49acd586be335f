/* The out-of-line pieces behind cobs_barrier.h: the no-op whose whole point is not to be inlined
** or seen, and the asymmetric barrier (membarrier on Linux). */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* syscall() */
#endif

#include "cobs_barrier.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

void cobs_opaque_barrier(void) {}

/* 1 when membarrier PRIVATE_EXPEDITED is registered for this process; written once, by
** `decide` under `decided`, before any reader can see it (pthread_once orders it). The test is on
** SYS_membarrier: the MEMBARRIER_CMD_* names are enumerators, not macros (read_sections.c). */
static int membarrier_registered;
static pthread_once_t decided = PTHREAD_ONCE_INIT;

static void decide(void) {
#if defined(__linux__) && defined(SYS_membarrier)
    const long supported = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (supported > 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)
        && syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        membarrier_registered = 1;
    }
#endif
}

bool cobs_asymmetric_barrier_available(void) {
    pthread_once(&decided, decide);
    return membarrier_registered != 0;
}

bool cobs_asymmetric_barrier(void) {
    if (!cobs_asymmetric_barrier_available()) return false;
    /* Our own store before the call must be visible to the threads the barrier interrupts. */
    atomic_thread_fence(memory_order_seq_cst);
#if defined(__linux__) && defined(SYS_membarrier)
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        fputs("ObserveCore: membarrier failed after the process registered for it\n", stderr);
        abort();
    }
#endif
    atomic_thread_fence(memory_order_seq_cst);
    return true;
}
