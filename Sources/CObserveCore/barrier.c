/* The out-of-line no-op behind cobs_barrier.h: its whole point is not to be inlined or seen. */
#include "cobs_barrier.h"

void cobs_opaque_barrier(void) {}
