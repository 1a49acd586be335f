/*
** ObserveCore C core: thread records and the read-section reclaimer (contracts and the protocol
** in cobs_read_sections.h).
**
** Data: a doubly linked list of the records of every thread that ever opened a read section and
** has not exited, guarded by `records_lock`; `registered_count` is its length. Invariant: a
** record is in the list ⟺ its `registered` is 1. `reclaim_lock` serialises reclaimers and the
** owners' clearing of their marks (lock order: reclaim_lock, then records_lock).
**
** Known gap: pthread runs key destructors in at most PTHREAD_DESTRUCTOR_ITERATIONS rounds. A
** read section opened by another key's destructor after this one ran re-registers the record
** and asks for one more round; if that happens in the last round, the record stays linked after
** the thread's TLS is gone. It takes a notified set inside a thread-exit destructor four rounds
** deep; nothing in ObserveCore does that.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cobs_barrier.h"
#include "cobs_read_sections.h"
#include "cobs_sanitizer.h"

#if defined(__linux__)
#include <sys/syscall.h> /* SYS_membarrier: whether the kernel headers know it (the call is barrier.c's) */
#endif

/* Who pays for the store-load order (see the header, "Ordering"): with COBS_READ_MEMBARRIER=1 on
** Linux, the reclaimer's membarrier; otherwise, the default, the reader's enters and outermost
** leaves fence (a section nested directly in one on the same object and a nested leave skip
** theirs: cobs_read_sections.h).
** Measured on this project's 2-core VMs (observe-bench --scenarios set.1,threads.2-observe-churn
** --impls c,naive, the same commit built both ways, the second with
** `swift build -c release -Xcc -DCOBS_READ_MEMBARRIER=1`): membarrier makes a notified set 44%
** cheaper (set.1: 10.9 vs 19.5 ns, 6.7x faster than the naive registry instead of 3.7x) and a
** registration change while another thread reads 7 times dearer (threads.2-observe-churn: 577 vs
** 79 ns per set, one system call per cancel, 4.6x slower than naive instead of 1.5x faster). An
** earlier comment here said 3% (20.4 vs 21.0 ns): most likely measured while membarrier never ran.
** Default fences keep churn across threads cheap; a service whose registrations rarely change
** while other threads set can build with the flag. The test is on SYS_membarrier: the
** MEMBARRIER_CMD_* names are enumerators, which `defined(...)` cannot see (an earlier test of one
** was always false, so membarrier had never run, whatever the comments said). */
#ifndef COBS_READ_MEMBARRIER
#define COBS_READ_MEMBARRIER 0
#endif
#if COBS_READ_MEMBARRIER && defined(__linux__) && defined(SYS_membarrier)
#define COBS_HAVE_MEMBARRIER 1
#else
#define COBS_HAVE_MEMBARRIER 0
#endif

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>
#define COBS_READ_TSAN 1
#endif
#endif

_Thread_local cobs_thread_record cobs_thread_self COBS_TLS_MODEL;

static pthread_mutex_t reclaim_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;
static cobs_thread_record *records_head;          /* under records_lock */
static _Atomic(size_t) registered_count;          /* written under records_lock */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
/* Decided once, before any record is registered: 1 when membarrier orders the readers for us. */
static int use_membarrier;

static void unregister_thread(void *record);

static void setup(void) {
    if (pthread_key_create(&exit_key, unregister_thread) != 0) {
        fputs("ObserveCore: cannot create the pthread key that unregisters exiting threads\n", stderr);
        abort();
    }
#if COBS_HAVE_MEMBARRIER
    use_membarrier = cobs_asymmetric_barrier_available() ? 1 : 0;
#endif
}

void cobs_read_register_thread(void) {
    cobs_thread_record *self = &cobs_thread_self;
    if (self->registered) return;
    pthread_once(&setup_once, setup);
    self->fences = use_membarrier ? 0 : 1;
    self->annotate = cobs_tsan_enabled ? 1 : 0;
    pthread_mutex_lock(&records_lock);
    self->prev = NULL;
    self->next = records_head;
    if (records_head) records_head->prev = self;
    records_head = self;
    atomic_fetch_add_explicit(&registered_count, 1, memory_order_seq_cst);
    self->registered = 1;
    pthread_mutex_unlock(&records_lock);
    /* A non-NULL value makes the key's destructor run at thread exit. */
    pthread_setspecific(exit_key, self);
    /* Orders this thread's first load of any cache word after its registration became visible:
    ** a reclaimer that saw no other record skipped membarrier, and relies on this (store-load
    ** order, which the acquire of the unlock alone does not give on every processor). */
    atomic_thread_fence(memory_order_seq_cst);
}

static void unregister_thread(void *record) {
    cobs_thread_record *self = record;
    pthread_mutex_lock(&records_lock);
    if (self->prev) self->prev->next = self->next; else records_head = self->next;
    if (self->next) self->next->prev = self->prev;
    self->next = self->prev = NULL;
    atomic_fetch_sub_explicit(&registered_count, 1, memory_order_seq_cst);
    self->registered = 0;
    pthread_mutex_unlock(&records_lock);
}

void cobs_read_annotate_leave(uintptr_t object) {
#ifdef COBS_READ_TSAN
    __tsan_release((void *)object);
#else
    (void)object;
#endif
}

void cobs_read_begin_drain(void) {
    pthread_mutex_lock(&reclaim_lock);
    atomic_store_explicit(&cobs_thread_self.must_drain, 0, memory_order_relaxed);
    pthread_mutex_unlock(&reclaim_lock);
}

size_t cobs_read_registered_threads(void) {
    return atomic_load_explicit(&registered_count, memory_order_seq_cst);
}

/* Makes every other thread's read-section stores so far visible to the scan that follows, and
** every load those threads do after it see the caller's stores before it. With no other record
** registered there is nobody to interrupt: a thread that registers after the count was read
** fences at the end of its registration (cobs_read_register_thread), after the caller's
** exchange of the cache word, so it loads the new word. */
static void heavy_barrier(void) {
    atomic_thread_fence(memory_order_seq_cst);
    if (!use_membarrier) return; /* readers fence themselves */
    const cobs_thread_record *self = &cobs_thread_self;
    const size_t others = atomic_load_explicit(&registered_count, memory_order_seq_cst) - (self->registered ? 1 : 0);
    if (others == 0) return;
    (void)cobs_asymmetric_barrier();
}

/* Whether `record` may hold the retired cache of `object`: one of its open sections reads it, or
** it nests deeper than the stack names. */
static bool holds(const cobs_thread_record *record, uintptr_t object) {
    const uintptr_t depth = atomic_load_explicit(&record->read_depth, memory_order_acquire);
    if (depth > COBS_READ_STACK) return true;
    for (uintptr_t i = 0; i < depth; i++) {
        if (atomic_load_explicit(&record->reading[i], memory_order_relaxed) == object) return true;
    }
    return false;
}

void cobs_read_reclaimable(const uintptr_t *objects, size_t count, bool *held) {
    if (count == 0 || !objects || !held) return;
    pthread_mutex_lock(&reclaim_lock);
    for (size_t i = 0; i < count; i++) held[i] = true;
    /* Each pass: barrier, then scan. Stop when nothing is held, or when every holder was
    ** already marked before this pass's barrier (so it will see its mark when it leaves). Each
    ** extra pass marks at least one more record, so the loop ends. */
    for (;;) {
        heavy_barrier();
        bool all_marked_before = true;
        pthread_mutex_lock(&records_lock);
        for (size_t i = 0; i < count; i++) {
            if (!held[i]) continue;
            bool still = false;
            for (cobs_thread_record *r = records_head; r; r = r->next) {
                if (!holds(r, objects[i])) continue;
                still = true;
                if (!atomic_load_explicit(&r->must_drain, memory_order_relaxed)) {
                    atomic_store_explicit(&r->must_drain, 1, memory_order_relaxed);
                    all_marked_before = false;
                }
            }
            held[i] = still;
#ifdef COBS_READ_TSAN
            /* Every section that read this object's caches ended with a release on the object. */
            if (!still) __tsan_acquire((void *)objects[i]);
#endif
        }
        pthread_mutex_unlock(&records_lock);
        if (all_marked_before) break;
    }
    pthread_mutex_unlock(&reclaim_lock);
}
