/* mem.c - device-memory source: records allocations/frees with the native (and Python) stack. */
#define _GNU_SOURCE
#include "mem.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include <level_zero/ze_api.h>

#include "../common/pa_callstack.h"
#include "../common/pa_log.h"
#include "collector.h"
#include "../common/pa_source.h"

/* Stack walker chosen once: libunwind's unw_backtrace, loaded RTLD_LOCAL so its _Unwind_*
 * symbols never interpose the application's exception handling, its fd calls redirected
 * (mem_unw.c); glibc backtrace() else (no fd either, but ~25 times slower per stack). */
typedef int (*pa_walk_fn)(void **buf, int size);
static pa_walk_fn mem_walk;
static int mem_depth = 32;     /* frames captured: the configured depth + PA_MEM_SKIP_FRAMES */
static _Atomic int mem_state; /* 0 new, 1 initializing, 2 ready */

/* Memory records refused even after the bounded wait (or with no ring): results are
 * incomplete when non-zero (SESSION_COUNTERS mem_records_dropped, caveats in the reports). */
static _Atomic uint64_t mem_dropped;
/* Per thread: the last wait timed out (aggregator stopped or far behind): do not wait again
 * until the ring has room by itself, so one stalled consumer costs 2 ms once, not per call. */
static __thread int mem_wait_gave_up __attribute__((tls_model("initial-exec")));

uint64_t pa_mem_dropped_count(void) { return atomic_load(&mem_dropped); }

/* The ze source (collector/ze_attach.c) knows the enumeration index of a device handle;
 * weak so the mem source also links (and tests run) without it. */
uint32_t pa_ze_dev_index(ze_device_handle_t h) __attribute__((weak));

/*! mem_init_once() : slow path, under the guard so the OSRT/ze wrappers stay quiet. Returns 1
 * when the walker is ready, 0 while another thread initializes: the caller then records without
 * a stack rather than wait, since the initializer sits in dlopen() (the loader lock) and the
 * caller may hold that lock itself (an allocation from a library constructor): a wait could
 * never end. */
static int mem_init_once(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&mem_state, &expect, 1))
        return atomic_load(&mem_state) == 2;
    pa_guard_enter();
    uint64_t d = pa_config.callstack_depth;
    /* depth N means N application frames: the agent's and the loader's own frames at the
     * innermost end are captured too, then dropped by the symbolizer (pa_sym_chain) */
    mem_depth = d == 0 ? 0 : (d > PA_CALLSTACK_MAX_DEPTH ? PA_CALLSTACK_MAX_DEPTH : (int)d) + PA_MEM_SKIP_FRAMES;
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h)
        mem_walk = (pa_walk_fn)dlsym(h, "unw_backtrace");
    /* before its first walk: libunwind would keep a pipe open in the application's fd space */
    if (mem_walk && pa_mem_unw_redirect((const void *)mem_walk) <= 0) {
        pa_info("mem", "libunwind's fd calls could not be redirected: call stacks use glibc backtrace()");
        mem_walk = NULL;
    }
    if (!mem_walk) {
        void *warm[2];
        backtrace(warm, 2); /* loads libgcc_s now, not on a later hot call */
        mem_walk = backtrace;
        pa_info("mem", "libunwind not found: call stacks use glibc backtrace()");
    }
    pa_mem_python_init();
    pa_guard_leave();
    atomic_store(&mem_state, 2);
    return 1;
}

/* True when ring `r` lacks room for `ns` slots now (acquire load of the consumer's head), with
 * the room pa_emit() keeps free after them (pops, range ends; at most half the ring). */
static int mem_ring_full(pa_ring_t *r, uint32_t ns)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t keep = (uint64_t)pa_tls.hgtx_open + PA_KEEP_ENDS, half = (r->mask + 1) / 2;
    return tail + ns + (keep < half ? keep : half) - atomic_load_explicit(&r->head, memory_order_acquire) >
           r->mask + 1;
}

/* pa_emit() for memory records, which must not be lost (a lost free is a false leak, a lost
 * allocation a hidden one): on a full ring, spin then yield until the aggregator made room,
 * for at most PA_MEM_WAIT_NS; no lock. A record still refused is counted in mem_dropped. */
void pa_mem_emit(const pa_record_t *rec, const void *payload, uint32_t len)
{
    pa_ring_t *r = pa_thread_ring();
    if (r && !pa_tls.emitting) {
        uint32_t max = pa_emit_max_payload(r);
        uint32_t ns = pa_record_slots(len < max ? len : max);
        if (PA_UNLIKELY(mem_ring_full(r, ns)) && !mem_wait_gave_up) {
            uint64_t deadline = pa_clock_ns() + PA_MEM_WAIT_NS;
            for (unsigned i = 0; mem_ring_full(r, ns); i++) {
                if (i < 64)
                    continue; /* the aggregator drains in batches: a short spin often suffices */
                if (pa_clock_ns() > deadline)
                    break;
                else
                    sched_yield();
            }
        }
        mem_wait_gave_up = mem_ring_full(r, ns);
    }
    if (pa_emit(rec, payload, len) != 0)
        atomic_fetch_add_explicit(&mem_dropped, 1, memory_order_relaxed);
}

/*! mem_ready() : 1 when mem_walk/mem_depth and the Python hooks may be used, 0 while another
 * thread is still initializing them (never waits). */
static inline int mem_ready(void)
{
    if (PA_LIKELY(atomic_load_explicit(&mem_state, memory_order_acquire) == 2))
        return 1;
    return mem_init_once();
}

void pa_mem_on_alloc(uint64_t t0_ns, uint64_t t1_ns, uint32_t kind,
                     void *context, void *device, uint64_t size, void *ptr, int32_t ze_result)
{
    if (!pa_agent_collecting(PA_SRC_MEM))
        return;
    int saved = errno;
    int ready = mem_ready(); /* 0: record without stacks, see mem_init_once() */
    pa_guard_enter(); /* the walker and the Python API must not be recorded */
    struct {
        pa_mem_stack_hdr_t h;
        uint64_t frames[PA_CALLSTACK_MAX_DEPTH + PA_MEM_SKIP_FRAMES];
        char py[PA_CALLSTACK_PY_MAX];
    } buf;
    buf.h.device = (uint64_t)(uintptr_t)device;
    buf.h.dev_index = device && pa_ze_dev_index ? pa_ze_dev_index((ze_device_handle_t)device) : UINT32_MAX;
    buf.h.gen = pa_mem_dl_gen_now();
    int n = ready && mem_depth > 0 ? mem_walk((void **)buf.frames, mem_depth) : 0;
    buf.h.nframes = (uint16_t)(n > 0 ? n : 0);
    uint32_t pyn = 0;
    buf.h.flags = n > 0 && n == mem_depth ? PA_MEM_STACK_CUT : 0;
    buf.h.py_omitted = 0;
    buf.h.py_len = ready ? pa_mem_python_capture(buf.py, sizeof buf.py, &pyn, &buf.h.py_omitted) : 0;
    buf.h.py_frames = (uint16_t)pyn;
    if (buf.h.py_len && buf.h.nframes < PA_CALLSTACK_MAX_DEPTH + PA_MEM_SKIP_FRAMES) /* keep the text right after the frames */
        memmove(&buf.frames[buf.h.nframes], buf.py, buf.h.py_len);
    pa_record_t rec = {.kind = PA_REC_MEM_ALLOC, .t0 = t0_ns, .t1 = t1_ns};
    rec.u.mem.ptr = (uint64_t)(uintptr_t)ptr;
    rec.u.mem.size = size;
    rec.u.mem.context = (uint64_t)(uintptr_t)context;
    rec.u.mem.kind = kind;
    rec.u.mem.result = ze_result;
    pa_guard_leave();
    pa_mem_emit(&rec, &buf, (uint32_t)(sizeof buf.h + buf.h.nframes * sizeof(uint64_t) + buf.h.py_len));
    errno = saved;
}

void pa_mem_on_free(uint64_t t0_ns, uint64_t t1_ns, void *context, void *ptr, int32_t ze_result)
{
    if (!pa_agent_collecting(PA_SRC_MEM))
        return;
    int saved = errno;
    pa_record_t rec = {.kind = PA_REC_MEM_FREE, .t0 = t0_ns, .t1 = t1_ns};
    rec.u.mem.ptr = (uint64_t)(uintptr_t)ptr;
    rec.u.mem.context = (uint64_t)(uintptr_t)context;
    rec.u.mem.result = ze_result;
    pa_mem_emit(&rec, NULL, 0);
    errno = saved;
}

/* The device-memory source (common/pa_source.h): records from the Level Zero tracer's
 * epilogues (the ze source attaches it, its mask includes PA_SRC_MEM); set up lazily on the
 * first allocation (mem_init_once), nothing in flight at exit. */
const pa_source_t pa_source_mem = {
    .name = "mem", .mask = PA_SRC_MEM, .rec_first = PA_REC_MEM_FIRST, .rec_last = PA_REC_MEM_LAST,
};
