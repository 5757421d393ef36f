/* thread.c - per-thread state: ring creation on the first event, thread name, retirement at exit. */
#include <errno.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "collector.h"
#include "../common/pa_log.h"

__thread pa_tls_t pa_tls __attribute__((tls_model("initial-exec")));
_Atomic uint32_t pa_sources;
_Atomic uint64_t pa_unrecorded;
_Atomic uint64_t pa_late_no_ring;

/* Set when the session's exit path began: no new rings from then on (nobody would drain them). */
_Atomic int pa_thread_no_new_rings;
_Atomic int pa_session_ended;
void (*pa_thread_on_attach)(void);
void (*pa_thread_on_detach)(void);
void (*pa_thread_on_ring)(void);

void pa_thread_ring_added(void)
{
    void (*f)(void) = pa_thread_on_ring;
    if (f)
        f();
}

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_ok;

static void thread_exit_cb(void *arg);

static void exit_key_create(void)
{
    exit_key_ok = pthread_key_create(&exit_key, thread_exit_cb) == 0;
}

_Atomic int pa_agent_threads;
/* the first agent threads' ids (gettid): the exit flush leaves them out of its measure of a
 * starved process (collector/ze_stall.c) */
#define PA_AGENT_TIDS 32
static _Atomic uint32_t agent_tids[PA_AGENT_TIDS];

void pa_thread_mark_agent(void)
{
    pa_tls.agent = 1;
    int i = atomic_fetch_add(&pa_agent_threads, 1);
    if (i >= 0 && i < PA_AGENT_TIDS)
        atomic_store(&agent_tids[i], (uint32_t)syscall(SYS_gettid));
}

int pa_thread_is_agent_tid(uint32_t tid)
{
    for (int i = 0; i < PA_AGENT_TIDS; i++)
        if (atomic_load(&agent_tids[i]) == tid)
            return 1;
    return 0;
}

/* Emits PA_REC_THREAD_EXIT and hands the ring to the aggregator, which frees it once drained.
 * Runs among the thread's TLS destructors; later destructors that record get a new ring
 * (thread_ring_slow re-arms the key, so this runs again for it). */
static void thread_exit_cb(void *arg)
{
    (void)arg;
#if defined(__SANITIZE_ADDRESS__)
    /* pthread_exit() unwinds the thread's frames without telling ASan: their redzones stay
     * poisoned below us and our frames here (main's pthread_exit in particular) would trip on
     * them (a 64-byte copy into a clock segment on the stack, 19 of 30 runs) */
    __asan_handle_no_return();
#endif
    pa_ring_t *r = pa_tls.ring;
    if (!r)
        return;
    void (*detach)(void) = pa_thread_on_detach;
    if (detach) { /* the sources' last per-thread records go before the exit record */
        pa_guard_enter();
        detach();
        pa_guard_leave();
    }
    /* a thread ending after the session's end (a driver's worker joined at teardown) ended
     * after the session: its exit record would only be counted late */
    if (!atomic_load_explicit(&pa_session_ended, memory_order_relaxed)) {
        pa_record_t rec = {.kind = PA_REC_THREAD_EXIT, .t0 = pa_clock_ns()};
        pa_emit(&rec, NULL, 0);
    }
    pa_tls.ring = NULL;
    pa_tls.state = PA_THREAD_RETIRED;
    atomic_store_explicit(&r->retired, 1, memory_order_release);
}

void pa_thread_init(void)
{
    pthread_once(&exit_key_once, exit_key_create);
}

pa_ring_t *pa_thread_ring_slow(void)
{
    if (pa_tls.ring)
        return pa_tls.ring;
    if (pa_tls.state == PA_THREAD_NORING || pa_tls.guard || pa_tls.agent ||
        atomic_load_explicit(&pa_thread_no_new_rings, memory_order_acquire))
        return NULL;
    int saved = errno;
    /* the guard first: a signal handler recording an event from here on finds it and gets
     * NULL instead of creating (and registering) a second ring that the first would orphan;
     * one that ran before it may already have made the ring: then use that one */
    pa_guard_enter(); /* allocation, prctl and pthread_* below must not be recorded */
    atomic_signal_fence(memory_order_seq_cst);
    if (pa_tls.ring) {
        pa_guard_leave();
        errno = saved;
        return pa_tls.ring;
    }
    if (!pa_tls.tid)
        pa_tls.tid = (uint32_t)syscall(SYS_gettid);
    pthread_once(&exit_key_once, exit_key_create);
    uint64_t slots = pa_config.ring_size / PA_SLOT_SIZE;
    pa_ring_t *r = pa_ring_create((uint32_t)(slots ? slots : 64), pa_tls.tid);
    if (!r) {
        pa_tls.state = PA_THREAD_NORING; /* don't retry a failing malloc on every event */
        pa_guard_leave();
        errno = saved;
        pa_warn("collector", "no memory for the ring of thread %u: its events are counted as unrecorded",
                pa_tls.tid);
        return NULL;
    }
    char name[16] = {0};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    memcpy(r->name, name, sizeof r->name);
    /* the key's destructor retires the ring; arming it again after a retirement makes the
     * destructor loop run once more for this new ring */
    if (exit_key_ok)
        pthread_setspecific(exit_key, r);
    pa_ring_register(r);
    pa_tls.ring = r;
    pa_tls.state = PA_THREAD_ACTIVE;
    pa_thread_ring_added();
    pa_guard_leave();
    pa_record_t rec = {.kind = PA_REC_THREAD_NAME, .t0 = pa_clock_ns()};
    pa_emit(&rec, name, (uint32_t)strnlen(name, sizeof name));
    void (*attach)(void) = pa_thread_on_attach;
    if (attach) { /* the sources' per-thread setup (their records go after the thread's name) */
        pa_guard_enter();
        attach();
        pa_guard_leave();
    }
    errno = saved;
    return r;
}

/*! pa_thread_after_fork_child() : the forking thread's TLS in the child still points at the
 *  parent's ring (a copy nobody drains): forget it, and the cached tid. */
void pa_thread_after_fork_child(void)
{
    pa_tls.ring = NULL;
    pa_tls.tid = (uint32_t)syscall(SYS_gettid);
    pa_tls.state = PA_THREAD_NEW;
    if (exit_key_ok)
        pthread_setspecific(exit_key, NULL);
}
