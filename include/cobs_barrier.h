/*
** ObserveCore C core: barriers and the thread tag for the Swift side's locks.
**
** 1. An optimisation barrier. The Swift optimizer moves retains and releases freely past code it
**    can see through, and an atomic store is not a barrier to it: in `lock.withLock { bucket }` it
**    sank the retain of the returned copy below the unlocking store (seen in the release build's
**    machine code), so another thread could mutate or free the buffer before the copy owned it —
**    a crash in the release stress suite. A call to a function it cannot see through may release
**    anything, so no retain or release crosses it; `_Lock.unlock()` makes this call before its
**    store.
**
** 2. What the array's biased lock (`Concurrency/_ArrayLock.swift`) needs and Swift cannot say: the
**    calling thread's tag in two instructions, a fence for the compiler only, and the asymmetric
**    barrier that lets the lock's owner enter without a fence while another thread can still
**    revoke the bias safely (the "asymmetric Dekker" of userspace RCU and of biased locking:
**    the owner stores "inside" then loads "still owner"; the revoker stores "not owner", runs the
**    barrier, then loads "inside"; the barrier forces a full fence on the owner's processor, so
**    either the revoker sees the owner inside, or the owner sees that it no longer owns).
**
** Thread safety: every function may be called from any thread. Never fails, except as stated.
*/
#ifndef COBS_BARRIER_H
#define COBS_BARRIER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cobs_read_sections.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Does nothing; defined out of line so that callers cannot see that (see above).
void cobs_opaque_barrier(void);

/** The calling thread's tag: never 0, unique among the threads alive at any moment (the address
** of its read-section record, an initial-exec thread-local: no call). A thread created after
** another exited may get the exited thread's tag. Reads only the caller's own thread pointer. */
static inline COBS_READ_INLINE uintptr_t cobs_thread_tag(void) {
    return (uintptr_t)&cobs_thread_self;
}

/** Keeps the compiler from moving memory accesses across this point; emits no instruction (the
** processor's store-load order is the asymmetric barrier's job). */
static inline COBS_READ_INLINE void cobs_compiler_fence(void) {
    atomic_signal_fence(memory_order_seq_cst);
}

/** Whether `cobs_asymmetric_barrier` works in this process: Linux's
** membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), registered for the process on the first call.
** Decided once (later calls are one load); false on other systems, on kernels without it, and
** when registration fails. */
bool cobs_asymmetric_barrier_available(void);

/** Makes every running thread of the process execute a full memory barrier before it returns
** (a thread not running has passed one when it was switched out). A system call: about 0.3 µs
** with no other thread running, 7 µs with one (measured on this project's 2-core VMs), more when
** threads outnumber cores. Returns false, having done nothing, when unavailable
** (`cobs_asymmetric_barrier_available`); aborts with a message if the call fails after the
** process registered for it, since a caller relying on it would then be unsound. */
bool cobs_asymmetric_barrier(void);

#ifdef __cplusplus
}
#endif

#endif /* COBS_BARRIER_H */
