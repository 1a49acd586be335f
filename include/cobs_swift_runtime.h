/*
** ObserveCore C core: entry points of the Swift runtime, declared for the Swift layer.
**
** swift_isUniquelyReferenced_nonNull_native:
** `isKnownUniquelyReferenced(&x)` is generic over x's type. In code that runs unspecialized (an
** ObservableArray<Element> mutation path, compiled once for every Element), calling it with a
** generic class type looks that type's metadata up in the runtime's cache on every call (about
** 330 instructions, callgrind), only to end in this function, which needs nothing but the object.
** Declared here, it is called with the object's address directly. Not part of the C core's API:
** the umbrella header `cobserve.h` leaves it out (Swift sees every header of this directory).
**
** Contract (the Swift runtime's, exported on every platform since Swift 5): `object` is a
** non-null native Swift object the caller keeps alive; returns whether its strong reference count
** is 1. Thread safety: as `isKnownUniquelyReferenced`: the answer is only meaningful to a caller
** that owns the only reference it can see, and whose other references cannot appear meanwhile.
**
** swift_tryRetain: a strong retain that fails once the object's deinitialization has begun. Swift
** offers it only inside `weak` and `unowned` loads; `_UnownedReference` (Concurrency) needs it
** alone, to load an object that a `weak` reference would have moved onto a side table (every
** retain and release of it then takes the runtime's slow path).
**
** Contract (the Swift runtime's, exported since Swift 5): `object` is a non-null native Swift
** object whose memory the caller keeps allocated (an unowned reference does); returns `object`
** with one strong reference added when it is not deinitializing, NULL with nothing changed
** otherwise (the runtime's signature: a pointer, not a bool — read as a bool, an address ending
** in a zero byte looked like a failure). Thread safety: any thread, concurrently with any
** retain, release or deinit.
**
** swift_isDeallocating: whether `object`'s deinitialization has begun, with no retain (same
** contract for `object`, same thread safety). `_UnownedReference.isDead`.
**
** Neither is used where Objective-C interoperability exists: an object there may be an
** Objective-C one, whose counts these functions cannot read.
*/
#ifndef COBS_SWIFT_RUNTIME_H
#define COBS_SWIFT_RUNTIME_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

bool swift_isUniquelyReferenced_nonNull_native(const void *_Nonnull object);

void *_Nullable swift_tryRetain(const void *_Nonnull object);

bool swift_isDeallocating(const void *_Nonnull object);

#ifdef __cplusplus
}
#endif

#endif /* COBS_SWIFT_RUNTIME_H */
