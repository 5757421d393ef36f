/* ze_window.c - the windows in which a thread may touch what the Level Zero loader's teardown
 * frees, and the teardown's bounded wait until no thread is in one. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "ze_internal.h"

/*
 * Why: the loader's ELF destructors delete ze_lib::context, the object holding the dispatch
 * tables the entry points read, while application threads may still call Level Zero. Turning
 * the entry path off first is not enough on its own: a thread that read the flag as on a few
 * instructions earlier, then was preempted, still reads the context after the delete (ASan:
 * heap-use-after-free in pa_ze_entry_next, about 1 in 60 sanitizer runs of exitlife sigexit).
 *
 * How (an asymmetric fence, as userspace RCU does it): each thread has a word, in a cache line
 * of its own, counting the windows it is in. The thread's side is plain loads and stores: mark,
 * read the flag, read the context, unmark. The teardown's side clears the flags, then makes every
 * running thread of the process execute a full memory barrier (membarrier
 * PRIVATE_EXPEDITED): a thread whose mark was not visible yet has not read the flag yet, and
 * reads it as off. Then it waits until every word is 0: the threads that read the flag as on
 * have left their window. The wait is bounded: no window holds a call that blocks for long (the
 * agent's readers cut their waits, collector/ze.h), so only a thread preempted inside one can
 * outlast the bound; the caller is told how many did and then keeps the loader's state alive
 * (ze_attach.c: the loader's context is not deleted) rather than free it under them.
 * A window covers only the agent's own reads and calls, never the application's forwarded call
 * (a zeEventHostSynchronize waiting for ever must not hold up the exit).
 *
 * The words live in a static array (a thread's TLS goes away when it ends: the teardown could
 * not read it); a thread takes a free one at its first window, one whose owner ended when none
 * is free (the kernel says which tids still exist), and the shared overflow word beyond
 * PA_ZE_WIN_SLOTS live ones (its marks race: the wait may then end early or run to its bound).
 */
#define PA_ZE_WIN_SLOTS 1024

static pa_ze_win_t win_slots[PA_ZE_WIN_SLOTS];
static pa_ze_win_t win_overflow;
static _Atomic uint32_t win_used; /* slots handed out so far (high-water mark, <= PA_ZE_WIN_SLOTS) */
__thread pa_ze_win_t *pa_ze_win_self __attribute__((tls_model("initial-exec")));
_Atomic int pa_ze_loader_live = 1;
static int win_membarrier; /* 1 once MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED succeeded */

/* 1 when thread `tid` of this process no longer exists (errno kept by the caller). */
static int tid_gone(int32_t tid)
{
    return tid > 0 && syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}

/* Takes slot s for `tid` when it is free or its owner ended; 1 when taken. */
static int win_take(pa_ze_win_t *s, int32_t tid)
{
    int32_t o = atomic_load_explicit(&s->owner, memory_order_relaxed);
    if (o != 0 && !tid_gone(o))
        return 0;
    if (!atomic_compare_exchange_strong(&s->owner, &o, tid))
        return 0;
    atomic_store_explicit(&s->depth, 0, memory_order_relaxed); /* an owner that ended inside one */
    return 1;
}

pa_ze_win_t *pa_ze_win_claim(void)
{
    int saved = errno;
    int32_t tid = (int32_t)syscall(SYS_gettid);
    pa_ze_win_t *w = NULL;
    uint32_t n = atomic_load_explicit(&win_used, memory_order_relaxed);
    while (n < PA_ZE_WIN_SLOTS && !w) /* a never used slot first: no syscall per candidate */
        if (atomic_compare_exchange_weak(&win_used, &n, n + 1) && win_take(&win_slots[n], tid))
            w = &win_slots[n];
    for (uint32_t i = 0; i < PA_ZE_WIN_SLOTS && !w; i++)
        if (win_take(&win_slots[i], tid))
            w = &win_slots[i];
    if (!w)
        w = &win_overflow;
    pa_ze_win_self = w;
    errno = saved;
    return w;
}

void pa_ze_win_arm(void)
{
    int saved = errno;
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
        win_membarrier = 1;
    errno = saved;
}

static uint64_t win_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Every thread's mark made before it read a flag is visible from here on. Without membarrier
 * (an old kernel, a sandbox, valgrind): a full fence here, then 1 ms for any other CPU's store
 * buffer to drain (nanoseconds on real hardware; a preempted thread's drained at the switch). */
static void win_barrier(void)
{
    if (win_membarrier && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
    atomic_thread_fence(memory_order_seq_cst);
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
}

/* Waits while slot s is in a window and held by another live thread, until `end`. 1 when it
 * was left (or needs no wait), 0 when the bound came first; *waited + 1 when it had to wait. */
static int win_wait_one(pa_ze_win_t *s, int32_t self, uint64_t end, int *waited)
{
    for (unsigned spins = 0; atomic_load_explicit(&s->depth, memory_order_acquire) != 0; spins++) {
        int32_t o = atomic_load_explicit(&s->owner, memory_order_relaxed);
        if (o == self || tid_gone(o))
            return 1; /* our own (exit() from a signal handler inside one), or its thread ended */
        *waited += spins == 0;
        if (win_now_ns() >= end)
            return 0;
        if (spins < 64) {
            sched_yield();
        } else {
            struct timespec t = {0, 50000};
            nanosleep(&t, NULL);
        }
    }
    return 1;
}

int pa_ze_win_drain(uint64_t budget_ns, int *waited)
{
    int saved = errno, left = 0;
    *waited = 0;
    win_barrier();
    uint64_t end = win_now_ns() + budget_ns;
    int32_t self = (int32_t)syscall(SYS_gettid);
    uint32_t n = atomic_load(&win_used);
    for (uint32_t i = 0; i < n && i < PA_ZE_WIN_SLOTS; i++)
        left += !win_wait_one(&win_slots[i], self, end, waited);
    left += !win_wait_one(&win_overflow, self, end, waited);
    errno = saved;
    return left;
}

void pa_ze_win_after_fork_child(void)
{
    pa_ze_win_t *w = pa_ze_win_self;
    if (w && w != &win_overflow) /* the slot is this thread's under its new tid */
        atomic_store(&w->owner, (int32_t)syscall(SYS_gettid));
    pa_ze_win_arm(); /* the child is a new process (mm) for membarrier */
}

/* The gate of collector/ze.h for the agent's calls outside the ze source: the same windows and
 * flag as the ze source's own calls (pa_ze_loader_enter), not inlined (sampling and metric
 * readers call it a few times per read, not per application call). */
int pa_ze_call_enter(void) { return pa_ze_loader_enter(); }
void pa_ze_call_leave(void) { pa_ze_loader_leave(); }
int pa_ze_call_live(void) { return atomic_load_explicit(&pa_ze_loader_live, memory_order_acquire); }

int pa_ze_call_teardown(uint64_t budget_ns, int *waited)
{
    atomic_store_explicit(&pa_ze_loader_live, 0, memory_order_seq_cst);
    if (!win_membarrier) /* not armed at attach (the PTI library has no attach): now */
        pa_ze_win_arm();
    return pa_ze_win_drain(budget_ns, waited);
}
