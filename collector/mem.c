/* mem.c - device-memory source: records allocations/frees with the native (and Python) stack. */
#define _GNU_SOURCE
#include "mem.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <string.h>

#include <level_zero/ze_api.h>

#include "../common/pa_callstack.h"
#include "../common/pa_log.h"
#include "collector.h"

/* Stack walker chosen once: libunwind's unw_backtrace, loaded RTLD_LOCAL so its _Unwind_*
 * symbols never interpose the application's exception handling; glibc backtrace() else. */
typedef int (*pa_walk_fn)(void **buf, int size);
static pa_walk_fn mem_walk;
static int mem_depth = 32;
static _Atomic int mem_state; /* 0 new, 1 initializing, 2 ready */

/* The ze source (collector/ze_attach.c) knows the enumeration index of a device handle;
 * weak so the mem source also links (and tests run) without it. */
uint32_t pa_ze_dev_index(ze_device_handle_t h) __attribute__((weak));

/* Slow path, once per process, under the guard so the OSRT/ze wrappers stay quiet. */
static void mem_init_once(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&mem_state, &expect, 1)) {
        while (atomic_load(&mem_state) != 2)
            ; /* another thread is initializing: it takes a few microseconds */
        return;
    }
    pa_guard_enter();
    uint64_t d = pa_config.callstack_depth;
    mem_depth = d == 0 ? 0 : d > PA_CALLSTACK_MAX_DEPTH ? PA_CALLSTACK_MAX_DEPTH : (int)d;
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h)
        mem_walk = (pa_walk_fn)dlsym(h, "unw_backtrace");
    if (!mem_walk) {
        void *warm[2];
        backtrace(warm, 2); /* loads libgcc_s now, not on a later hot call */
        mem_walk = backtrace;
        pa_info("mem", "libunwind not found: call stacks use glibc backtrace()");
    }
    pa_mem_python_init();
    pa_guard_leave();
    atomic_store(&mem_state, 2);
}

static inline void mem_ready(void)
{
    if (PA_UNLIKELY(atomic_load_explicit(&mem_state, memory_order_acquire) != 2))
        mem_init_once();
}

void pa_mem_on_alloc(uint64_t t0_ns, uint64_t t1_ns, uint32_t kind,
                     void *context, void *device, uint64_t size, void *ptr, int32_t ze_result)
{
    if (!pa_agent_collecting(PA_SRC_MEM))
        return;
    int saved = errno;
    mem_ready();
    pa_guard_enter(); /* the walker and the Python API must not be recorded */
    struct {
        pa_mem_stack_hdr_t h;
        uint64_t frames[PA_CALLSTACK_MAX_DEPTH];
        char py[PA_CALLSTACK_PY_MAX];
    } buf;
    buf.h.device = (uint64_t)(uintptr_t)device;
    buf.h.dev_index = device && pa_ze_dev_index ? pa_ze_dev_index((ze_device_handle_t)device) : UINT32_MAX;
    buf.h.pad = 0;
    int n = mem_depth > 0 ? mem_walk((void **)buf.frames, mem_depth) : 0;
    buf.h.nframes = (uint16_t)(n > 0 ? n : 0);
    uint32_t pyn = 0;
    buf.h.py_len = pa_mem_python_capture(buf.py, sizeof buf.py, &pyn);
    buf.h.py_frames = (uint16_t)pyn;
    if (buf.h.py_len && buf.h.nframes < PA_CALLSTACK_MAX_DEPTH) /* keep the text right after the frames */
        memmove(&buf.frames[buf.h.nframes], buf.py, buf.h.py_len);
    pa_record_t rec = {.kind = PA_REC_MEM_ALLOC, .t0 = t0_ns, .t1 = t1_ns};
    rec.u.mem.ptr = (uint64_t)(uintptr_t)ptr;
    rec.u.mem.size = size;
    rec.u.mem.context = (uint64_t)(uintptr_t)context;
    rec.u.mem.kind = kind;
    rec.u.mem.result = ze_result;
    pa_guard_leave();
    pa_emit(&rec, &buf, (uint32_t)(sizeof buf.h + buf.h.nframes * sizeof(uint64_t) + buf.h.py_len));
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
    pa_emit(&rec, NULL, 0);
    errno = saved;
}
