/*
** ObserveCore C core: annotations for ThreadSanitizer.
**
** The Swift layer hands storage between threads as copy-on-write snapshots: a reader on another
** thread reads a snapshot, then drops its reference; the writer, finding the storage uniquely
** referenced again, mutates it in place. The reader's release (a release-ordered decrement) and
** the writer's uniqueness check (an acquiring load) order the two — but both happen inside the
** Swift runtime, which is not instrumented, so ThreadSanitizer would see a read and a later
** write with nothing between them and report a race that cannot happen. These functions tell it
** about the ordering: a reader calls `cobs_tsan_release` on the storage once it has read it, the
** writer calls `cobs_tsan_acquire` on it once it has found it unique.
**
** They do something only in a build compiled with `-fsanitize=thread` (`swift build
** --sanitize=thread` compiles this target that way); otherwise `cobs_tsan_enabled` is false and
** the functions return at once. Callers test `cobs_tsan_enabled` first, so an ordinary build
** pays one load and a branch that is never taken.
**
** Thread safety: all three may be used from any thread at any time.
*/
#ifndef COBS_SANITIZER_H
#define COBS_SANITIZER_H

#include <stdbool.h>

/** True in a ThreadSanitizer build of the C core, false otherwise. Constant for the process. */
extern const bool cobs_tsan_enabled;

/** Records that everything this thread did so far happens before any later `cobs_tsan_acquire`
** of `address` (ThreadSanitizer's `__tsan_release`). `address` is only a name: it is never read.
** No effect outside ThreadSanitizer builds. */
void cobs_tsan_release(const void *address);

/** Makes everything done before earlier `cobs_tsan_release` calls on `address`, on any thread,
** happen before what this thread does next (ThreadSanitizer's `__tsan_acquire`). No effect
** outside ThreadSanitizer builds. */
void cobs_tsan_acquire(const void *address);

#endif /* COBS_SANITIZER_H */
