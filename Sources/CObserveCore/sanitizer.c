/*
** ObserveCore C core: ThreadSanitizer annotations (contracts in cobs_sanitizer.h).
**
** Compiled with `-fsanitize=thread`, the functions forward to the sanitizer's own annotations;
** otherwise they are empty and `cobs_tsan_enabled` tells callers not to bother calling them.
*/

#include "cobs_sanitizer.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COBS_TSAN 1
#endif
#endif

#ifdef COBS_TSAN
#include <sanitizer/tsan_interface.h>

const bool cobs_tsan_enabled = true;

void cobs_tsan_release(const void *address) { __tsan_release((void *)address); }
void cobs_tsan_acquire(const void *address) { __tsan_acquire((void *)address); }
#else
const bool cobs_tsan_enabled = false;

void cobs_tsan_release(const void *address) { (void)address; }
void cobs_tsan_acquire(const void *address) { (void)address; }
#endif
