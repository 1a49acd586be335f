/*
** ObserveCore C core: an optimisation barrier for the Swift side's lock.
**
** The Swift optimizer moves retains and releases freely past code it can see through, and an
** atomic store is not a barrier to it: in `lock.withLock { bucket }` it sank the retain of the
** returned copy below the unlocking store (seen in the release build's machine code), so another
** thread could mutate or free the buffer before the copy owned it — a crash in the release
** stress suite. A call to a function it cannot see through may release anything, so no retain
** or release crosses it; `_Lock.unlock()` makes this call before its store.
**
** Thread safety: does nothing, so trivially thread-safe. Never fails.
*/
#ifndef COBS_BARRIER_H
#define COBS_BARRIER_H

#ifdef __cplusplus
extern "C" {
#endif

/// Does nothing; defined out of line so that callers cannot see that (see above).
void cobs_opaque_barrier(void);

#ifdef __cplusplus
}
#endif

#endif /* COBS_BARRIER_H */
