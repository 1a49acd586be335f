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

/* Initial-exec TLS: the variable is read with one %fs-relative load instead of a call to
** __tls_get_addr, which the default (general-dynamic, for position-independent code) model
** costs on every notification (callgrind: ~25 instructions per enter/leave pair). The price is
** that a shared library holding this code must be loaded at program start, not dlopen'ed late
** into a process whose static TLS is exhausted; SwiftPM links the package statically into
** executables and test bundles, where that cannot happen. Remove the attribute if ObserveCore
** is ever shipped as a dlopen'ed plugin. */
#if defined(__GNUC__) || defined(__clang__)
#define COBS_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define COBS_TLS_MODEL
#endif

static _Thread_local uint32_t depth COBS_TLS_MODEL; /* zero-initialized in every new thread */

uint32_t cobs_thread_depth_enter(void) {
    if (depth != UINT32_MAX) depth++; /* saturates: "never fails" */
    return depth;
}

uint32_t cobs_thread_depth_leave(void) {
    if (depth != 0) depth--; /* never below 0, even for an unbalanced leave */
    return depth;
}

uint32_t cobs_thread_depth_get(void) {
    return depth;
}

uint32_t cobs_thread_depth_exchange(uint32_t new_depth) {
    const uint32_t previous = depth;
    depth = new_depth;
    return previous;
}
