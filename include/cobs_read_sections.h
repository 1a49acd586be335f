/*
** ObserveCore C core: the calling thread's record, and read sections over it.
**
** A setter reads its object's dispatch cache (a Swift object published in one atomic word) with
** no lock and no atomic read-modify-write. It brackets the read with `cobs_read_enter` and
** `cobs_read_leave`, which write only the calling thread's own record: a depth, and the objects
** its open sections read (a stack of COBS_READ_STACK; deeper nesting counts as "any"). A writer
** that replaced a cache (a registration changed) retires the old one, and a reclaimer frees it
** once no thread's record says it may still be reading it.
**
** Ordering. The reader stores "I read object X", then loads the cache word; the writer exchanges
** the word, then reads the records. Each side needs its store ordered before its load (store-load
** order, which processors do not give for free). By default each side executes a full fence
** between the two: the reader in `cobs_read_enter` and in its outermost `cobs_read_leave` (a
** section nested directly in one on the same object, and a nested leave, rely on the fences
** around them: see those functions), the reclaimer before its scan. So either the reader's
** store is visible to the scan, or the reader's load sees the new word (the old cache is out of
** its reach). Built with COBS_READ_MEMBARRIER=1 on Linux, the
** reader's fence becomes a compiler barrier and the reclaimer first runs
** `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every running thread of the process
** execute a full barrier (the asymmetric fence of userspace RCU's "memb" flavour); it then skips
** the system call when no other thread has a record, since a thread that registers later ends its
** registration with a full fence. That trade is off by default: it makes a notified set 44%
** cheaper and costs a system call per registration change while another thread reads
** (`threads.2-observe-churn` 7 times slower); read_sections.c has the figures.
**
** Who frees, and when (the reclamation story; the Swift side, `Concurrency/_ReadSections.swift`,
** holds the retired list and calls these):
** - a retired cache is tagged with its object; a record holds it while one of its open sections
**   reads that object (or its nesting is deeper than the stack: then it holds every cache);
** - `cobs_read_reclaimable` says which retired caches no record holds: those are freed at once;
** - for each one still held it marks the holders (`must_drain`) and repeats the barrier and the
**   scan until every holder was marked before the last barrier: then each holder is guaranteed
**   to see its mark when it leaves its outermost section (`cobs_read_leave` returns true), and
**   that thread runs the reclaimer again. A retired cache is therefore freed by the writer when
**   no section reads its object, or when the outermost section of the last thread that could
**   hold it ends.
**
** The same record keeps the thread's notification depth (runaway-recursion guard).
**
** Thread safety: the inline functions act on the calling thread's record only. The reclaimer
** functions may be called from any thread; they serialise among themselves. Records are
** registered on first use and unregistered when the thread exits (a pthread key destructor).
** Known gap: a read section opened by a pthread-key destructor in the last destructor round of
** an exiting thread re-registers a record that nothing unregisters (see read_sections.c).
*/
#ifndef COBS_READ_SECTIONS_H
#define COBS_READ_SECTIONS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Initial-exec TLS: one %fs-relative access instead of a call to __tls_get_addr. The price: a
** shared library holding this code must be loaded at program start, not dlopen'ed late into a
** process whose static TLS is exhausted; SwiftPM links the package statically into executables
** and test bundles, where that cannot happen. */
#if defined(__GNUC__) || defined(__clang__)
#define COBS_TLS_MODEL __attribute__((tls_model("initial-exec")))
#define COBS_READ_INLINE __attribute__((always_inline))
#else
#define COBS_TLS_MODEL
#define COBS_READ_INLINE
#endif

/** Sections whose object a record names; deeper nesting holds every retired cache. */
#define COBS_READ_STACK 4

/** One thread's record. Invariants: `read_depth` counts the thread's open read sections;
** `reading[i]` is the object of the section at depth i + 1, meaningful for i < min(read_depth,
** COBS_READ_STACK); `must_drain` is set only by a reclaimer and cleared only by the owner
** (`cobs_read_begin_drain`), both under the reclaimer lock; `next`/`prev` link every registered
** record and change only under the records lock. */
typedef struct cobs_thread_record {
    _Atomic(uintptr_t) read_depth;
    _Atomic(uintptr_t) reading[COBS_READ_STACK];
    _Atomic(uint32_t) must_drain;
    uint32_t delivery_depth;  /* owner only: the notification depth */
    uint8_t registered;       /* owner only: linked into the list of records */
    uint8_t fences;           /* owner only: full fences at enter/leave (the default: no membarrier) */
    uint8_t annotate;         /* owner only: tell ThreadSanitizer about leaves (TSan builds) */
    uintptr_t binding;        /* owner only: the outermost binding propagating on the thread, 0 if none */
    struct cobs_thread_record *_Nullable next;
    struct cobs_thread_record *_Nullable prev;
} cobs_thread_record;

/** The calling thread's record. Zero-initialised in every new thread. Use the functions. */
extern _Thread_local cobs_thread_record cobs_thread_self COBS_TLS_MODEL;

/** Links the calling thread's record into the list the reclaimer scans. Called by
** `cobs_read_enter` on a thread's first section; idempotent. Never fails (aborts if the thread
** exit hook cannot be installed, which only happens when the process is out of pthread keys). */
void cobs_read_register_thread(void);

/** Tells ThreadSanitizer that the calling thread's reads of `object`'s cache so far happen before
** a reclaimer that frees one of its caches. Called by `cobs_read_leave` in TSan builds only. */
void cobs_read_annotate_leave(uintptr_t object);

static inline COBS_READ_INLINE void cobs_read_fence(const cobs_thread_record *_Nonnull self) {
    if (__builtin_expect(self->fences, 0)) atomic_thread_fence(memory_order_seq_cst);
    else atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps the order; membarrier does the rest */
}

/** Opens a read section of `object`'s cache on the calling thread. Nests. Pair with
** `cobs_read_leave` on the same thread. Load the cache word after it returns.
**
** A section nested directly inside one on the same object (a dependent key announced from its
** dependency's notification) needs no fence: the enclosing section's slot names the object and
** was fenced before any load this one can make, and it holds every cache of the object retired
** since, so the scan that could free them sees it. That holds while the enclosing section has a
** slot (depth <= COBS_READ_STACK); deeper, every enter fences, because the store that took the
** depth past the stack ("reading everything") may itself have been one of these unfenced ones.
** The new slot and depth are still stored (a reclaimer that sees the depth before the slot reads
** a stale object there: a false "held", never a missed one). */
static inline COBS_READ_INLINE void cobs_read_enter(uintptr_t object) {
    cobs_thread_record *self = &cobs_thread_self;
    if (__builtin_expect(!self->registered, 0)) cobs_read_register_thread();
    const uintptr_t depth = atomic_load_explicit(&self->read_depth, memory_order_relaxed);
    const bool covered = depth > 0 && depth <= COBS_READ_STACK
        && atomic_load_explicit(&self->reading[depth - 1], memory_order_relaxed) == object;
    if (depth < COBS_READ_STACK) atomic_store_explicit(&self->reading[depth], object, memory_order_relaxed);
    atomic_store_explicit(&self->read_depth, depth + 1, memory_order_relaxed);
    if (covered) atomic_signal_fence(memory_order_seq_cst);
    else cobs_read_fence(self);
}

/** Closes the innermost read section, which read `object` (named for ThreadSanitizer builds
** only). Returns true when it was the outermost one and a reclaimer left caches this thread held:
** the caller should run the reclaimer (the Swift side's drain) once it holds no lock a freed
** cache's contents could need.
**
** Only the outermost leave fences: its store of depth 0 must be ordered before its load of
** `must_drain` (a reclaimer that still saw the section open marked the thread, and counts on
** this load seeing the mark). A nested leave's release store is enough: a reclaimer that sees
** the lower depth sees the section's reads done; one that sees the higher depth only holds a
** cache longer. */
static inline COBS_READ_INLINE bool cobs_read_leave(uintptr_t object) {
    cobs_thread_record *self = &cobs_thread_self;
    if (__builtin_expect(self->annotate, 0)) cobs_read_annotate_leave(object);
    const uintptr_t depth = atomic_load_explicit(&self->read_depth, memory_order_relaxed);
    atomic_store_explicit(&self->read_depth, depth - 1, memory_order_release);
    if (depth != 1) {
        atomic_signal_fence(memory_order_seq_cst);
        return false;
    }
    cobs_read_fence(self);
    return atomic_load_explicit(&self->must_drain, memory_order_relaxed) != 0;
}

/** True when the calling thread is in no read section and a reclaimer asked it to drain: what a
** `cobs_read_leave` whose result was ignored (a lock was held) left to do. */
static inline COBS_READ_INLINE bool cobs_read_should_drain(void) {
    cobs_thread_record *self = &cobs_thread_self;
    return atomic_load_explicit(&self->read_depth, memory_order_relaxed) == 0
        && atomic_load_explicit(&self->must_drain, memory_order_relaxed) != 0;
}

/** The calling thread's open read sections (0 outside any). */
static inline COBS_READ_INLINE uintptr_t cobs_read_depth(void) {
    return atomic_load_explicit(&cobs_thread_self.read_depth, memory_order_relaxed);
}

/** Clears the calling thread's drain request; call it, then `cobs_read_reclaimable` on every
** retired cache, from the same caller's critical section (the Swift drain holds its list lock
** around both). Takes the reclaimer lock. */
void cobs_read_begin_drain(void);

/** Decides which retired caches no read section can still hold. `objects[i]` is the object
** whose cache retired entry `i` was; on return `held[i]` is true for an entry some open section
** may still read, false for one the caller may free now. For every held entry, each thread that
** may hold it will see `cobs_read_leave` return true when its outermost section ends.
** Serialised by the reclaimer lock (one reclaimer at a time). `count` may be 0. Cost: one
** membarrier when another thread has a record (two or more when a section is open on a retired
** object), a scan of the records per pass. Never fails. */
void cobs_read_reclaimable(const uintptr_t *_Nullable objects, size_t count, bool *_Nullable held);

/** Number of threads with a registered record (for tests). */
size_t cobs_read_registered_threads(void);

/* ------------------------------------------------------------------------------------------- */
/* Per-thread notification depth (the Swift façade's runaway-recursion guard)                  */
/* ------------------------------------------------------------------------------------------- */

/** Increments the calling thread's notification depth (saturating) and returns the new depth. */
static inline COBS_READ_INLINE uint32_t cobs_thread_depth_enter(void) {
    cobs_thread_record *self = &cobs_thread_self;
    if (self->delivery_depth != UINT32_MAX) self->delivery_depth++;
    return self->delivery_depth;
}

/** Decrements the calling thread's notification depth (never below 0) and returns the new depth. */
static inline COBS_READ_INLINE uint32_t cobs_thread_depth_leave(void) {
    cobs_thread_record *self = &cobs_thread_self;
    if (self->delivery_depth != 0) self->delivery_depth--;
    return self->delivery_depth;
}

/** The outermost binding propagating on the calling thread (an opaque identity), 0 when none.
** Owner only; never fails. The Swift façade's cycle guard for bindings (`_BindingReentrancy`)
** keeps the common case, one binding at a time, here instead of in pthread-specific storage. */
static inline COBS_READ_INLINE uintptr_t cobs_thread_binding_get(void) {
    return cobs_thread_self.binding;
}

/** Sets the calling thread's outermost propagating binding (0: none). Owner only; never fails. */
static inline COBS_READ_INLINE void cobs_thread_binding_set(uintptr_t binding) {
    cobs_thread_self.binding = binding;
}

/** The calling thread's notification depth. */
static inline COBS_READ_INLINE uint32_t cobs_thread_depth_get(void) {
    return cobs_thread_self.delivery_depth;
}

/** Sets the calling thread's notification depth to `depth` and returns the previous one. For a
** delivery that runs on another thread (a queue): it runs at the depth its change was announced
** at, so an observer that re-triggers itself through a queue is caught like an inline one. */
static inline COBS_READ_INLINE uint32_t cobs_thread_depth_exchange(uint32_t depth) {
    cobs_thread_record *self = &cobs_thread_self;
    const uint32_t previous = self->delivery_depth;
    self->delivery_depth = depth;
    return previous;
}

#ifdef __cplusplus
}
#endif

#endif /* COBS_READ_SECTIONS_H */
