/* pcs_agent.c - the sampling engine inside the agent: configuration, reader rings, session hooks,
 * and the PTI implementation table the library forwards to when the agent is preloaded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../collector/collector.h"
#include "../collector/ze.h"
#include "../common/pa_source.h"
#include "../common/pa_log.h"
#include "pcs_internal.h"

#define PCS_RING_SLOTS 65536u  /* 4 MiB per reader ring */

static int sampling_on;
static _Atomic int rings_ok; /* the session is active: reader rings get drained */

static void g_enter(void) { pa_guard_enter(); }
static void g_leave(void) { pa_guard_leave(); }

static void *ring_open(uint32_t device)
{
    if (!atomic_load(&rings_ok) || atomic_load(&pa_thread_no_new_rings))
        return NULL;
    pa_ring_t *r = pa_ring_create(PCS_RING_SLOTS, (uint32_t)syscall(SYS_gettid));
    if (!r)
        return NULL;
    snprintf(r->name, sizeof r->name, "pcs-reader-%u", device);
    pa_ring_register(r);
    pa_thread_ring_added(); /* the aggregator must drain it from now on */
    return r;
}

static void ring_emit(void *ring, const pa_record_t *rec, const void *payload, uint32_t len)
{
    pa_ring_t *r = ring;
    uint32_t flags = rec->flags;
    if (len > pa_emit_max_payload(r)) {
        len = pa_emit_max_payload(r);
        flags |= PA_RF_TRUNCATED;
    }
    uint32_t ns = pa_record_slots(len);
    pa_record_t *slot = pa_ring_reserve(r, ns);
    if (!slot)
        return; /* counted in the ring's drops (summary, THREADS.drops) */
    memcpy(slot, rec, sizeof *slot);
    slot->nslots = (uint16_t)ns;
    slot->len = len;
    slot->tid = r->tid;
    slot->flags = flags;
    if (len)
        pa_ring_write_payload(r, payload, len);
    pa_ring_commit(r, ns);
}

static void ring_close(void *ring)
{
    atomic_store_explicit(&((pa_ring_t *)ring)->retired, 1, memory_order_release);
}

static void host_setup(void)
{
    pcs_host.guard_enter = g_enter;
    pcs_host.guard_leave = g_leave;
    pcs_host.ring_open = ring_open;
    pcs_host.ring_emit = ring_emit;
    pcs_host.ring_close = ring_close;
    pcs_host.thread_start = pa_thread_mark_agent;
}

/* The PTI library is in the process (linked by the application): the API may be used later. */
static int pti_lib_present(void)
{
    return dlsym(RTLD_DEFAULT, "ptiPcSamplingEnable") != NULL;
}

/* Before the application's first zeInit (this source comes first in the table): the driver
 * offers metrics only when ZET_ENABLE_METRICS=1 is set before zeInit (notes/eu-stall.md). */
static void metrics_env(void)
{
    const char *m = getenv("ZET_ENABLE_METRICS");
    if (!m)
        setenv("ZET_ENABLE_METRICS", "1", 0);
    else if (strcmp(m, "1") != 0)
        pa_warn("pc-sampling", "ZET_ENABLE_METRICS=%s set by the user: drivers then offer no EU-stall sampling"
                " (accepted: unset or 1)", m);
}

/* Once the application initialized Level Zero with GPU drivers (collector/ze.h, the ready
 * hook): the engine (devices, EuStallSampling groups), the kernel tracer and, when asked, the
 * streams. The agent never initializes Level Zero for the application. */
static void on_kernel(void *module, void *kernel, const char *name);

static void pcs_on_ready(void)
{
    uint32_t before = pcs_ndevs;
    int n = pcs_engine_init(0);
    if (n < 0) {
        if (pa_config.pc_sampling)
            pa_warn("pc-sampling", "Level Zero is not initialized: no PC sampling; the rest is profiled as usual");
        return;
    }
    /* started after the application created kernels (the PTI library dlopen()ed late): the live
     * ones the ze source knows, as their creation would have registered them */
    if (!before && pa_ze_intercepting())
        pa_ze_each_kernel(on_kernel);
    /* kernels come from the ze source's interception; without it (ze and mem not traced) only
     * from a tracer, which the loader gives only when the user enabled the tracing layer */
    if (pa_ze_intercepting())
        atomic_store(&pcs_host.kernels_hooked, 1);
    if (pcs_kernels_attach() != 0 && pa_config.pc_sampling)
        pa_warn("pc-sampling", "zeKernelCreate is not seen (PROFAGENT_TRACE without ze or mem, and"
                " ZE_ENABLE_TRACING_LAYER=%s): samples cannot be mapped to kernels and are counted as"
                " unmapped (accepted: ze in PROFAGENT_TRACE, or ZE_ENABLE_TRACING_LAYER=1)",
                getenv("ZE_ENABLE_TRACING_LAYER") ? getenv("ZE_ENABLE_TRACING_LAYER") : "unset");
    if (!pa_config.pc_sampling)
        return;
    const char *m = getenv("ZET_ENABLE_METRICS");
    for (uint32_t i = 0; i < pcs_ndevs; i++)
        if (!pcs_devs[i].group)
            pa_warn("pc-sampling", "PROFAGENT_PC_SAMPLING=1: device %u offers no EU-stall sampling (no"
                    " EuStallSampling metric group%s); it is not sampled, the rest is profiled as usual", i,
                    m && strcmp(m, "1") == 0 ? "" : "; ZET_ENABLE_METRICS is not 1");
    if (n == 0)
        return;
    int started = pcs_stream_start(PCS_SUB_AGENT, (uint32_t)pa_config.pc_sampling_period_ns, NULL);
    sampling_on = started > 0;
    pa_info("pc-sampling", "%d device(s) sampled every %llu ns", started,
            (unsigned long long)pa_config.pc_sampling_period_ns);
}

static void on_module(void *module, void *device)
{
    pcs_kernels_module_created(module, device);
}

static void on_kernel(void *module, void *kernel, const char *name)
{
    pcs_kernels_kernel_created(module, kernel, name);
}

/* Level Zero is used and PC sampling may be used: the environment, the reader rings, the engine
 * once the application initialized Level Zero. Once (source init, or the PTI library loaded
 * late: pa_pcs_pti_impl_get). */
static pthread_mutex_t activate_mu = PTHREAD_MUTEX_INITIALIZER;
static int activated;

static void activate(void)
{
    pthread_mutex_lock(&activate_mu);
    if (activated || !dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD)) {
        if (!activated && pa_config.pc_sampling)
            pa_info("pc-sampling", "the application does not use Level Zero: nothing to sample");
        pthread_mutex_unlock(&activate_mu);
        return;
    }
    activated = 1;
    metrics_env();
    atomic_store(&rings_ok, 1);
    pthread_mutex_unlock(&activate_mu);
    pa_ze_on_ready(pcs_on_ready); /* at once when Level Zero is initialized already */
}

static _Atomic int source_on; /* pcs_source_init ran: the session runs this source */

static int pcs_source_init(void)
{
    host_setup();
    /* kernel address ranges come from the ze source's hooks on zeModuleCreate/zeKernelCreate:
     * the application's environment (and its children's) keeps its tracing-layer setting. Set
     * also when nothing samples yet: a module's device is kept (a store), a kernel costs nothing
     * until the engine runs (pcs_kernels_kernel_created) */
    pa_ze_on_kernel_objects(on_module, on_kernel);
    atomic_store(&source_on, 1);
    if (pa_config.pc_sampling || pti_lib_present())
        activate();
    return 0;
}

/* Final read of every streamer and close, before the last drain (each reader join bounded). A
 * PTI collection still running at exit ends here too: its readers write into the rings. */
static void pcs_source_finish(uint64_t budget_ns)
{
    (void)budget_ns;
    pcs_stream_stop(PCS_SUB_PTI);
    pcs_stream_stop(PCS_SUB_AGENT);
    atomic_store(&rings_ok, 0);
    sampling_on = 0;
}

static void pcs_source_fork_child(void)
{
    pcs_stream_after_fork_child();
    atomic_store(&rings_ok, 0);
    sampling_on = 0;
}

/* The PC-sampling source (common/pa_source.h). It runs whenever Level Zero is traced or
 * PROFAGENT_PC_SAMPLING=1 (PA_SRC_PCSAMP, set by the config) and first in the table: the
 * environment it sets must precede the application's first zeInit. */
const pa_source_t pa_source_pcsamp = {
    .name = "pcsamp", .mask = PA_SRC_PCSAMP | PA_SRC_ZE | PA_SRC_MEM,
    .rec_first = PA_REC_PCSAMP_FIRST, .rec_last = PA_REC_PCSAMP_LAST,
    .init = pcs_source_init, .finish = pcs_source_finish, .fork_child = pcs_source_fork_child,
};

/*! pa_pcs_pti_impl_get() : the agent's PTI implementation (libprofagent_pti.so forwards to it).
 *  The library loaded after the agent's start (dlopen): the source starts now, as it would have
 *  with the library linked, so the collection's samples reach the DB and the kernels created
 *  so far are known. */
PA_EXPORT const pcs_pti_impl_t *pa_pcs_pti_impl_get(void)
{
    host_setup();
    if (atomic_load(&source_on) && !atomic_load(&pa_thread_no_new_rings))
        activate();
    return &pcs_pti_impl;
}
