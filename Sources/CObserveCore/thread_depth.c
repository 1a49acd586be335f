/*
** ObserveCore C core: the per-thread notification depth. The Swift façade increments it around
** every callback it delivers inline and decrements it afterwards; a depth beyond its limit means
** an observer keeps re-triggering itself, and the façade reports that instead of overflowing the
** stack. It lives in C because a C11 `_Thread_local` is one TLS access with no allocation and no
** key management, on every platform the package supports.
**
** Prefix rule: every exported symbol starts with `cobs_`.
*/

#include <stdint.h>

#include "cobs_registry.h"

static _Thread_local uint32_t depth; /* zero-initialized in every new thread */

uint32_t cobs_thread_depth_enter(void) {
    if (depth != UINT32_MAX) depth++; /* saturates: "never fails" */
    return depth;
}

uint32_t cobs_thread_depth_leave(void) {
    if (depth != 0) depth--; /* never below 0, even for an unbalanced leave */
    return depth;
}
