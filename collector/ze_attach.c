/* ze_attach.c - finds the Level Zero loader, prepares the interception before the application's
 * first zeInit and attaches after it succeeded (tracer or entry path, device attributes); the
 * dlopen hook; detach at exit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <level_zero/zes_api.h>

#include "../common/pa_log.h"
#include "collector.h"
#include "../common/pa_source.h"
#include "ze_internal.h"

#define PA_ZE_LOADER "libze_loader.so.1"

pa_ze_fns_t pa_ze;
_Atomic int pa_ze_attached;
pa_ze_dev_t pa_ze_devs[PA_ZE_MAX_DEVICES];
uint32_t pa_ze_ndevs;

static pa_ze_device_t dev_attrs[PA_ZE_MAX_DEVICES];
_Atomic int pa_ze_dev_attrs_pending;
static pthread_mutex_t attach_mu = PTHREAD_MUTEX_INITIALIZER;
static int attach_tried;
static zel_tracer_handle_t tracer;
/* sysman PCI query, optional: legacy mode (zes calls on ze device handles, loader 1.x) */
static __typeof__(&zesDevicePciGetProperties) pci_props;

static int resolve_fns(void *lib)
{
#define R(n) if (!(*(void **)&pa_ze.n = dlsym(lib, #n))) { pa_warn("ze", "loader lacks %s; Level Zero not traced", #n); return -1; }
    R(zeInit) R(zeDriverGet) R(zeDeviceGet) R(zeDeviceGetProperties) R(zeDeviceGetComputeProperties)
    R(zeDeviceGetMemoryProperties) R(zeDeviceGetCommandQueueGroupProperties)
    R(zeDeviceGetGlobalTimestamps) R(zeDriverGetApiVersion) R(zeEventPoolCreate) R(zeEventCreate)
    R(zeEventHostReset) R(zeEventQueryStatus) R(zeEventQueryKernelTimestamp)
    R(zeEventHostSynchronize) R(zeMemGetAllocProperties) R(zelTracerCreate) R(zelTracerSetEnabled)
    R(zeMemAllocHost) R(zeCommandListCreate) R(zeCommandListClose) R(zeCommandListDestroy)
    R(zeCommandListAppendQueryKernelTimestamps) R(zeCommandListAppendEventReset)
    R(zeCommandListAppendBarrier) R(zeKernelGetProperties) R(zeCommandListAppendSignalEvent)
    R(zeEventHostSignal) R(zeEventDestroy) R(zeEventPoolDestroy) R(zeMemFree)
#undef R
    *(void **)&pci_props = dlsym(lib, "zesDevicePciGetProperties");
    return 0;
}

static int register_all(void *lib)
{
    typedef ze_result_t (*reg_fn)(zel_tracer_handle_t, zel_tracer_reg_t, pa_ze_fn_t);
    zel_tracer_desc_t desc = { ZEL_STRUCTURE_TYPE_TRACER_EXP_DESC, NULL, NULL };
    if (pa_ze.zelTracerCreate(&desc, &tracer) != ZE_RESULT_SUCCESS) {
        pa_warn("ze", "zelTracerCreate failed (is ZE_ENABLE_TRACING_LAYER=1?); Level Zero not traced");
        return -1;
    }
    unsigned missing = 0;
    for (int i = 0; i < PA_ZE_API_COUNT; i++) {
        reg_fn f;
        *(void **)&f = dlsym(lib, pa_ze_api_table[i].reg_name);
        if (!f || f(tracer, ZEL_REGISTER_PROLOGUE, pa_ze_api_table[i].pro) != ZE_RESULT_SUCCESS ||
            f(tracer, ZEL_REGISTER_EPILOGUE, pa_ze_api_table[i].epi) != ZE_RESULT_SUCCESS)
            missing++;
    }
    if (missing)
        pa_info("ze", "%u ze APIs could not be registered with the tracer", missing);
    return pa_ze.zelTracerSetEnabled(tracer, 1) == ZE_RESULT_SUCCESS ? 0 : -1;
}

/* Engines of the compute groups (CE number) and EU count (CU number). */
static void device_engines(ze_device_handle_t d, pa_ze_device_t *out)
{
    uint32_t n = 0;
    ze_command_queue_group_properties_t g[16];
    if (pa_ze.zeDeviceGetCommandQueueGroupProperties(d, &n, NULL) != ZE_RESULT_SUCCESS)
        return;
    if (n > 16)
        n = 16;
    for (uint32_t i = 0; i < n; i++)
        g[i] = (ze_command_queue_group_properties_t){ .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES };
    if (pa_ze.zeDeviceGetCommandQueueGroupProperties(d, &n, g) != ZE_RESULT_SUCCESS)
        return;
    for (uint32_t i = 0; i < n; i++)
        if (g[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE)
            out->ce_count += g[i].numQueues;
}

/* PCI bus id "dddd:bb:dd.f" from sysman (zesDevicePciGetProperties on the ze handle, legacy
 * mode: drivers that need ZES_ENABLE_SYSMAN=1 before zeInit fail it unless the user set it;
 * the agent does not set it, as it changes the driver's behaviour); "-" when unavailable. */
static void device_pci(ze_device_handle_t d, pa_ze_device_t *out)
{
    zes_pci_properties_t p = { .stype = ZES_STRUCTURE_TYPE_PCI_PROPERTIES };
    if (pci_props && pci_props((zes_device_handle_t)d, &p) == ZE_RESULT_SUCCESS)
        snprintf(out->pci, sizeof out->pci, "%04x:%02x:%02x.%x", p.address.domain, p.address.bus,
                 p.address.device, p.address.function);
    else
        snprintf(out->pci, sizeof out->pci, "-");
}

static void device_record(uint32_t idx, ze_driver_handle_t drv, ze_device_handle_t d)
{
    pa_ze_device_t a;
    memset(&a, 0, sizeof a);
    a.index = idx;
    ze_device_properties_t p = { .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };
    if (pa_ze.zeDeviceGetProperties(d, &p) == ZE_RESULT_SUCCESS) {
        snprintf(a.name, sizeof a.name, "%s", p.name);
        for (int i = 0; i < ZE_MAX_DEVICE_UUID_SIZE && 2 * i + 2 < (int)sizeof a.uuid; i++)
            snprintf(a.uuid + 2 * i, 3, "%02x", p.uuid.id[i]);
        a.cu_count = p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice;
        a.cu_clock_hz = (uint64_t)p.coreClockRate * 1000000u;
        a.simd_width = p.physicalEUSimdWidth;
        a.timer_hz = p.timerResolution;
        pa_ze_devs[idx].clk.clock[0].timer_hz = p.timerResolution;
        pa_ze_devs[idx].clk.clock[0].valid_bits = p.kernelTimestampValidBits;
    }
    ze_api_version_t v = 0;
    if (pa_ze.zeDriverGetApiVersion(drv, &v) == ZE_RESULT_SUCCESS) {
        a.cc_major = ZE_MAJOR_VERSION(v);
        a.cc_minor = ZE_MINOR_VERSION(v);
    }
    uint32_t nm = 8;
    ze_device_memory_properties_t m[8];
    for (int i = 0; i < 8; i++)
        m[i] = (ze_device_memory_properties_t){ .stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES };
    if (pa_ze.zeDeviceGetMemoryProperties(d, &nm, m) == ZE_RESULT_SUCCESS)
        for (uint32_t i = 0; i < nm && i < 8; i++) {
            a.total_mem += m[i].totalSize;
            if ((uint64_t)m[i].maxClockRate * 1000000u > a.mem_clock_hz) {
                a.mem_clock_hz = (uint64_t)m[i].maxClockRate * 1000000u;
                a.mem_bus_bits = m[i].maxBusWidth;
            }
        }
    device_engines(d, &a);
    device_pci(d, &a);
    dev_attrs[idx] = a; /* emitted by the first traced call: no ring exists in the constructor */
}

void pa_ze_emit_devices(void)
{
    if (!atomic_load_explicit(&pa_ze_dev_attrs_pending, memory_order_relaxed) || !atomic_exchange(&pa_ze_dev_attrs_pending, 0))
        return;
    for (uint32_t i = 0; i < pa_ze_ndevs; i++) {
        pa_record_t rec = { .kind = PA_REC_ZE_DEVICE, .t0 = pa_clock_ns() };
        pa_emit(&rec, &dev_attrs[i], sizeof dev_attrs[i]);
    }
}

static void enumerate_devices(void)
{
    uint32_t nd = 0;
    ze_driver_handle_t drv[8];
    if (pa_ze.zeDriverGet(&nd, NULL) != ZE_RESULT_SUCCESS)
        return;
    if (nd > 8)
        nd = 8;
    if (pa_ze.zeDriverGet(&nd, drv) != ZE_RESULT_SUCCESS)
        return;
    for (uint32_t i = 0; i < nd; i++) {
        uint32_t n = 0;
        if (pa_ze.zeDeviceGet(drv[i], &n, NULL) != ZE_RESULT_SUCCESS)
            continue;
        if (n > PA_ZE_MAX_DEVICES - pa_ze_ndevs)
            n = PA_ZE_MAX_DEVICES - pa_ze_ndevs;
        ze_device_handle_t devs[PA_ZE_MAX_DEVICES];
        if (pa_ze.zeDeviceGet(drv[i], &n, devs) != ZE_RESULT_SUCCESS)
            continue;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t idx = pa_ze_ndevs++;
            pa_ze_devs[idx].h = devs[k];
            device_record(idx, drv[i], devs[k]);
        }
    }
}

/* ---- the tracing layer lives as long as the process ----
 *
 * Why: the loader's tracing layer tears its state down in exit handlers of its own (a static
 * object's destructor deletes the context every traced call goes through) and drops a
 * thread's registration in that thread's TLS destructors, which exit() runs first of all.
 * Application threads still calling Level Zero while the process exits then jumped through
 * the deleted context (SIGSEGV during exit), and the main thread's Level Zero calls from
 * atexit handlers were no longer traced (lost without a count). The layer is in the process
 * only because the agent turned it on, so the agent keeps it alive: the exit-time destructors
 * the layer registers while the application's first zeInit() loads it are not registered, its ELF destructors
 * (.fini_array, run by _dl_fini) are replaced by a no-op (process teardown frees its memory
 * anyway), and the TLS destructor it registers for the main thread is not registered (the
 * main thread's TLS never goes away before the process does). Other registrations pass. */
static __thread int ze_loading __attribute__((tls_model("initial-exec")));

/*! pa_ze_keeps_exit_fn() : 1 when an exit-time destructor registered now (by the object
 *  whose __dso_handle is `dso`) is one of the tracing layer's during the application's first
 *  zeInit (pa_ze_init_first): the exit
 *  interposers then skip it. Only looks (dladdr) while ze_loading is set. */
static int pa_ze_keeps_exit_fn(void *dso, int thread_local_dtor)
{
    if (PA_LIKELY(!ze_loading))
        return 0;
    if (thread_local_dtor && syscall(SYS_gettid) != getpid())
        return 0; /* another thread's TLS goes away with it: the layer must forget it */
    Dl_info di;
    return dladdr(dso, &di) && di.dli_fname && strstr(di.dli_fname, "libze_tracing_layer") != NULL;
}

/* The layer's own ELF destructors (.fini_array: the one that deletes its context, and the
 * compiler's that runs its remaining C++ destructors) run in _dl_fini, while other threads may
 * still call Level Zero; they are replaced by this no-op once the layer is loaded. */
static void layer_fini_skipped(void) {}

/*! fini_patch() : calls `edit` on the .fini_array of object `info` (made writable for the call
 *  when it lies in RELRO). Returns 1 when `edit` ran. */
static int fini_patch(struct dl_phdr_info *info, void (*edit)(void (**fns)(void), size_t n))
{
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t relro_lo = 0, relro_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) {
            relro_lo = info->dlpi_addr + ph->p_vaddr;
            relro_hi = relro_lo + ph->p_memsz;
        }
    }
    uintptr_t arr = 0;
    size_t bytes = 0;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_FINI_ARRAY)
            arr = info->dlpi_addr + dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_FINI_ARRAYSZ)
            bytes = dyn->d_un.d_val;
    }
    if (!arr || bytes < sizeof(void *))
        return 0;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t lo = arr & ~(uintptr_t)(pg - 1), hi = (arr + bytes + pg - 1) & ~(uintptr_t)(pg - 1);
    int relro = arr >= relro_lo && arr < relro_hi;
    if (relro && mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
        return 0;
    edit((void (**)(void))arr, bytes / sizeof(void *));
    if (relro)
        mprotect((void *)lo, hi - lo, PROT_READ);
    return 1;
}

static void layer_fini_skip_all(void (**fns)(void), size_t n)
{
    for (size_t i = 0; i < n; i++)
        fns[i] = layer_fini_skipped;
}

static int layer_fini_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libze_tracing_layer"))
        return 0;
    *(int *)arg = fini_patch(info, layer_fini_skip_all);
    return 1;
}

/* ---- the loader's teardown ends the agent's use of it ----
 *
 * Why: the loader's ELF destructors (run by _dl_fini after every exit handler, or by the
 * dlclose of a loader the application dlopen'd) delete ze_lib::context, the object whose
 * dispatch table every entry point reads, and the loader's own state its exported functions
 * use. Application threads still calling Level Zero then made pa_ze_entry_next() read freed
 * memory and jump through it; the agent's own calls (hooks, a finisher still flushing after
 * the exit stopped waiting for it) went into a loader without its state. _dl_fini calls a
 * .fini_array from its last entry down, so the last entry is replaced by loader_fini_first(),
 * which first turns the entry path off (pa_ze_entry_on = 0: from then on every application
 * call goes, unrecorded, to the loader's exported function, i.e. the process behaves as without
 * the agent) and the agent's own calls (pa_ze_loader_live = 0), then waits until no thread is
 * in a window (ze_window.c: a call that passed the flag check an instant before still reads
 * the context; the hooks' and the exit flush's loader calls), at most
 * PA_ZE_TEARDOWN_WAIT_NS in all, and only then runs the loader's destructors. On both paths:
 * the tracing layer's hooks call the loader too. */
#define PA_ZE_TEARDOWN_WAIT_NS 100000000ull
static void (*loader_fini_orig)(void);
static void loader_fini_first(void)
{
    atomic_store_explicit(&pa_ze_entry_on, 0, memory_order_seq_cst);
    int waited, left = pa_ze_call_teardown(PA_ZE_TEARDOWN_WAIT_NS, &waited);
    pa_dbg("ze", "loader teardown: waited for %d thread(s) inside the agent's reads, %d still inside "
           "after the %llu ms bound%s", waited, left, PA_ZE_TEARDOWN_WAIT_NS / 1000000ull,
           left ? ": the loader's context is not deleted" : "");
    /* A thread still inside after the bound (preempted there: no window blocks longer than
     * PA_ZE_CALL_MAX_BLOCK_NS, ze.h) would read the context this destructor deletes: it is left
     * in place instead, as the tracing layer's are (the process is ending; the kernel takes it
     * back), so the exit costs at most the bound and that thread still reads valid memory. */
    if (loader_fini_orig && left == 0)
        loader_fini_orig();
}

static void loader_fini_wrap_last(void (**fns)(void), size_t n)
{
    if (fns[n - 1] == loader_fini_first)
        return;
    loader_fini_orig = fns[n - 1];
    fns[n - 1] = loader_fini_first;
}

static int loader_fini_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libze_loader.so"))
        return 0;
    *(int *)arg = fini_patch(info, loader_fini_wrap_last);
    return 1;
}

/* Before the agent records through the loader: the loader's teardown waits for the windows. */
static void loader_teardown_arm(void)
{
    pa_ze_win_arm();
    int wrapped = 0;
    dl_iterate_phdr(loader_fini_cb, &wrapped);
    if (!wrapped)
        pa_info("ze", "loader destructors not found: Level Zero calls racing the exit may crash in the agent");
}

typedef int (*pa_exitreg_fn)(void (*)(void *), void *, void *);
static _Atomic(pa_exitreg_fn) real_cxa_atexit, real_cxa_thread_atexit;

static pa_exitreg_fn exitreg_real(_Atomic(pa_exitreg_fn) *slot, const char *name)
{
    pa_exitreg_fn f = atomic_load_explicit(slot, memory_order_acquire);
    if (PA_UNLIKELY(!f)) { /* first call may come from another library's constructor */
        *(void **)&f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}

/* atexit() (libc_nonshared) and C++ static destructors register through here. */
PA_EXPORT int __cxa_atexit(void (*fn)(void *), void *arg, void *dso)
{
    if (PA_UNLIKELY(ze_loading) && pa_ze_keeps_exit_fn(dso, 0))
        return 0;
    pa_exitreg_fn real = exitreg_real(&real_cxa_atexit, "__cxa_atexit");
    return real ? real(fn, arg, dso) : -1;
}

/* C++ thread_local destructors (libstdc++'s __cxa_thread_atexit) register through here. */
PA_EXPORT int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso)
{
    if (PA_UNLIKELY(ze_loading) && pa_ze_keeps_exit_fn(dso, 1))
        return 0;
    pa_exitreg_fn real = exitreg_real(&real_cxa_thread_atexit, "__cxa_thread_atexit_impl");
    return real ? real(fn, obj, dso) : -1;
}

/* Under attach_mu: what must precede the application's first zeInit, without calling any
 * Level Zero function: the loader's entry points, the interception path, the tracing layer's
 * environment, the loader pinned. Once per process; 1 when Level Zero can be traced. */
static int prepared, prep_ok, prep_entry;

static int prepare_locked(void *lib)
{
    if (prepared)
        return prep_ok;
    prepared = 1;
    if (resolve_fns(lib) != 0)
        return 0;
    /* the loader's entry points when provably equivalent (ze_entry.c), else its tracing layer,
     * which must be enabled in the environment before the first zeInit */
    int entry = pa_ze_entry_choose(lib);
    const char *tl = getenv("ZE_ENABLE_TRACING_LAYER");
    if (!entry && tl && strcmp(tl, "1") != 0) {
        pa_warn("ze", "ZE_ENABLE_TRACING_LAYER=%s set by the user: Level Zero calls and device "
                "activity are not traced (accepted: unset or 1)", tl);
        return 0;
    }
    if (!entry && !tl)
        setenv("ZE_ENABLE_TRACING_LAYER", "1", 0);
    /* pinned: the loader stays mapped when the application dlclose()s it (a framework probing
     * for a GPU unloads it, then loads it again): every pointer the agent took from it, the
     * entry path's dispatch and the exit's event queries stay valid (they jumped into unmapped
     * memory: SIGSEGV at the next zeInit or at exit); its destructors then run at exit only */
    if (!pa_ze_real_dlopen(PA_ZE_LOADER, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
        pa_info("ze", "could not pin %s: an application's dlclose of it may crash the agent", PA_ZE_LOADER);
    prep_entry = entry;
    prep_ok = 1;
    return 1;
}

/* The tracing layer's ELF destructors are replaced once it is in the process (after the
 * application's first zeInit loaded it); 1 when they were found. */
static int layer_patch(void)
{
    int patched = 0;
    dl_iterate_phdr(layer_fini_cb, &patched);
    return patched;
}

/* 1 when the loader answers zeDriverGet: someone initialized Level Zero before the agent
 * could see it (a library's constructor before ours, an agent attached late). Before any
 * zeInit the loader returns ZE_RESULT_ERROR_UNINITIALIZED and changes nothing. */
static int loader_initialized(void)
{
    uint32_t n = 0;
    return pa_ze.zeDriverGet(&n, NULL) == ZE_RESULT_SUCCESS && n > 0;
}

/* Under attach_mu, guard held, after prepare_locked() and once the application initialized Level
 * Zero with GPU drivers: the devices, then the entry path or the tracer. */
static int attach_locked(void *lib)
{
    int entry = prep_entry;
    if (!layer_patch() && !entry)
        pa_info("ze", "tracing layer destructors not found: Level Zero calls racing the exit may crash in it");
    enumerate_devices();
    atomic_store(&pa_ze_dev_attrs_pending, 1);
    loader_teardown_arm();
    if (entry)
        pa_ze_entry_enable();
    else if (register_all(lib) != 0)
        return 0;
    atomic_store(&pa_ze_attached, 1);
    pa_info("ze", "attached, %u device(s); interception: %s%s", pa_ze_ndevs, entry ? "" : "tracing layer, ",
            pa_ze_path_text(pa_ze_path, pa_ze_path_reason));
    return 1;
}

/* ---- once Level Zero is initialized: the sources that use it themselves ---- */
#define PA_ZE_READY_MAX 4
static void (*ready_fns[PA_ZE_READY_MAX])(void);
static _Atomic int ready_n, ready_fired;

void pa_ze_on_ready(void (*fn)(void))
{
    if (atomic_load(&ready_fired)) { /* registered late (the PTI library dlopen()ed): now */
        pa_guard_enter();
        fn();
        pa_guard_leave();
        return;
    }
    int i = atomic_load(&ready_n);
    if (i < PA_ZE_READY_MAX) {
        ready_fns[i] = fn;
        atomic_store(&ready_n, i + 1);
    }
}

/* Runs the ready hooks once (guard held by the caller). */
static void ready_fire(void)
{
    if (atomic_load_explicit(&ready_fired, memory_order_relaxed) || atomic_exchange(&ready_fired, 1))
        return;
    for (int i = 0; i < atomic_load(&ready_n); i++)
        ready_fns[i]();
}

/* 1 once the application's zeInit succeeded without GPU drivers: a later sign of an initialized
 * Level Zero (the loader answering, pa_ze_init_late) is that initialization's, not a GPU one */
static _Atomic int init_no_gpu_seen;

/* attach_tried: 1 once the attach ran (or cannot run): the application's zeInit then takes the
 * recorded path; read without the lock by the exported zeInit (ze_entry_gen.c). */
int pa_ze_init_seen;

/* Prepares for loader `lib` and attaches when Level Zero is initialized (`app_init`: the
 * application's zeInit just succeeded with GPU drivers; else the loader is asked). Returns 2
 * attached by this call, 1 attached before, 0 not attached. */
static int attach_with(void *lib, int app_init)
{
    int ok = 0, first = 0;
    pa_guard_enter();
    pthread_mutex_lock(&attach_mu);
    if (!attach_tried) {
        if (!prepare_locked(lib)) {
            attach_tried = 1;
        } else if (app_init || (!atomic_load(&init_no_gpu_seen) && loader_initialized())) {
            attach_tried = 1;
            ok = first = attach_locked(lib);
        }
        if (attach_tried)
            __atomic_store_n(&pa_ze_init_seen, 1, __ATOMIC_RELEASE);
    } else {
        ok = atomic_load(&pa_ze_attached);
    }
    pthread_mutex_unlock(&attach_mu);
    if (first)
        ready_fire();
    pa_guard_leave();
    return first ? 2 : ok;
}

int pa_ze_attach(void)
{
    if (!(pa_config.trace & (PA_SRC_ZE | PA_SRC_MEM))) /* mem alone needs the tracer too */
        return 0;
    void *lib = dlopen(PA_ZE_LOADER, RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return 0; /* the application does not use Level Zero (yet): no cost, no noise */
    return attach_with(lib, 0) != 0;
}

/* The application's zeInit succeeded without GPU drivers in its flags (ZE_INIT_FLAG_VPU_ONLY):
 * nothing for the GPU sources; the summary says so once (the counters record's reason). */
static void init_no_gpu(void)
{
    if (atomic_exchange(&init_no_gpu_seen, 1) || !pa_agent_collecting(PA_SRC_ZE | PA_SRC_MEM))
        return;
    pa_record_t rec = { .kind = PA_REC_ZE_COUNTS, .t0 = pa_clock_ns() };
    rec.u.raw[2] = PA_ZE_PATH_NONE;
    rec.u.raw[3] = PA_ZE_WHY_NO_GPU;
    pa_emit(&rec, NULL, 0);
}

/* The application's zeInit call that attached, recorded as the entry path records any other. */
static void init_record(ze_result_t r, uint64_t t0, uint64_t t1)
{
    if (!pa_agent_collecting(PA_SRC_ZE))
        return;
    pa_record_t *rec = pa_emit1_begin(PA_REC_ZE_API);
    if (rec) {
        pa_ze_api_rec_fill(rec, PA_ZE_API_Init, (int32_t)r, t0, t1, pa_ze_corr_new());
        pa_emit1_end();
    }
    pa_ze_emit_devices();
}

ze_result_t pa_ze_init_first(ze_init_flags_t flags)
{
    typedef ze_result_t (ZE_APICALL *fn_t)(ze_init_flags_t);
    fn_t real = (fn_t)pa_ze_entry_loader(PA_ZE_API_Init);
    uint32_t src = atomic_load_explicit(&pa_sources, memory_order_relaxed);
    int ze = (src & (PA_SRC_ZE | PA_SRC_MEM)) && (pa_config.trace & (PA_SRC_ZE | PA_SRC_MEM));
    if (pa_tls.guard || pa_tls.agent || (!ze && !atomic_load(&ready_n)) || !src)
        return real(flags);
    void *lib = NULL;
    if (ze) { /* the loader came in without the dlopen hook seeing it (a dependency of a
               * dlopen'd library): the tracing layer's environment must precede its zeInit */
        pa_guard_enter();
        lib = pa_ze_real_dlopen(PA_ZE_LOADER, RTLD_NOW | RTLD_NOLOAD);
        if (lib) {
            pthread_mutex_lock(&attach_mu);
            prepare_locked(lib);
            pthread_mutex_unlock(&attach_mu);
        }
        pa_guard_leave();
    }
    uint64_t t0 = pa_clock_ns();
    ze_loading = 1; /* the tracing layer may load now: see pa_ze_keeps_exit_fn() */
    ze_result_t r = real(flags);
    ze_loading = 0;
    uint64_t t1 = pa_clock_ns();
    int saved = errno;
    pa_guard_enter();
    layer_patch();
    pa_guard_leave();
    if (r != ZE_RESULT_SUCCESS) {
        /* nothing: what the loader answered goes back as is; a later zeInit may succeed */
    } else if (flags != 0 && !(flags & ZE_INIT_FLAG_GPU_ONLY)) {
        init_no_gpu();
    } else {
        if (lib && attach_with(lib, 1) == 2)
            init_record(r, t0, t1);
        /* after the attach (which ran them when it succeeded); else now: the sources that use
         * Level Zero without the ze source (device metrics, PC sampling), or when ze tracing
         * was refused (a user's ZE_ENABLE_TRACING_LAYER other than 1) */
        pa_guard_enter();
        ready_fire();
        pa_guard_leave();
    }
    errno = saved;
    return r;
}

void pa_ze_init_late(void)
{
    uint32_t src = atomic_load_explicit(&pa_sources, memory_order_relaxed);
    if (pa_tls.guard || pa_tls.agent || !src || atomic_load(&init_no_gpu_seen))
        return;
    int saved = errno;
    if ((src & (PA_SRC_ZE | PA_SRC_MEM)) && (pa_config.trace & (PA_SRC_ZE | PA_SRC_MEM))) {
        pa_guard_enter();
        void *lib = pa_ze_real_dlopen(PA_ZE_LOADER, RTLD_NOW | RTLD_NOLOAD);
        pa_guard_leave();
        if (lib)
            attach_with(lib, 1);
    }
    pa_guard_enter();
    ready_fire(); /* a no-op when the attach ran them */
    pa_guard_leave();
    errno = saved;
}

/* The application loads the loader itself: prepare right after it is mapped, before it can
 * call zeInit. Every other dlopen must reach glibc as if we were not there: glibc picks the
 * RUNPATH/$ORIGIN search scope from the *return address* of its caller, so a C wrapper that
 * calls the real dlopen would make libprofagent the caller and break the app's (or a plugin's)
 * own search path. On x86-64 the exported dlopen is therefore a tiny trampoline that asks
 * pa_dlopen_route() where to go and *jumps* there with the original return address intact. */
typedef void *(*pa_dlopen_fn)(const char *, int);
static pa_dlopen_fn real_dlopen;

static pa_dlopen_fn pa_real_dlopen(void)
{
    pa_dlopen_fn f = __atomic_load_n(&real_dlopen, __ATOMIC_ACQUIRE);
    if (!f) {
        *(void **)&f = pa_ze_real_dlsym(RTLD_NEXT, "dlopen");
        __atomic_store_n(&real_dlopen, f, __ATOMIC_RELEASE);
    }
    return f;
}

void *pa_ze_real_dlopen(const char *file, int mode)
{
    pa_dlopen_fn f = pa_real_dlopen();
    return f ? f(file, mode) : NULL;
}

/* The loader itself is opened through here (we are its caller: fine, it comes from the system
 * search path or an absolute name), then the tracer is attached. */
static void *pa_dlopen_ze(const char *file, int mode)
{
    pa_dlopen_fn real = pa_real_dlopen();
    void *h = real ? real(file, mode) : NULL;
    /* only once the ze or mem source runs: HGTX alone can be on earlier (pa_session_early), and
     * the ze source's prepare then would run before the sources' init set their environment
     * (PC sampling's ZET_ENABLE_METRICS=1); nothing is initialized here: the attach waits
     * for the application's zeInit (or finds Level Zero initialized already) */
    if (h && !atomic_load(&pa_ze_attached) && (pa_config.trace & (PA_SRC_ZE | PA_SRC_MEM)) &&
        (atomic_load(&pa_sources) & (PA_SRC_ZE | PA_SRC_MEM))) {
        int saved = errno;
        attach_with(h, 0);
        errno = saved;
    }
    return h;
}

/*! pa_dlopen_route() : where the exported dlopen jumps: pa_dlopen_ze for the Level Zero loader,
 *  glibc's dlopen otherwise (NULL only if dlsym failed: then pa_dlopen_ze returns NULL too). */
__attribute__((used)) void *pa_dlopen_route(const char *file, int mode)
{
    (void)mode;
    if (file && strstr(file, "libze_loader"))
        return (void *)pa_dlopen_ze;
    pa_dlopen_fn real = pa_real_dlopen();
    return real ? (void *)real : (void *)pa_dlopen_ze;
}

#if defined(__x86_64__)
/* dlopen(file, mode): save the two argument registers, keep the stack 16-byte aligned for the
 * call, restore them and tail-jump: the callee returns straight to the application. */
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        "    .cfi_startproc\n"
        "    push %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    push %rsi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    sub $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call pa_dlopen_route\n"
        "    add $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rsi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    pop %rdi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    jmp *%rax\n"
        "    .cfi_endproc\n"
        ".size dlopen, .-dlopen\n");
#else
/* Other architectures: a plain wrapper (the caller-dependent search scope is then ours). */
PA_EXPORT void *dlopen(const char *file, int mode)
{
    return ((pa_dlopen_fn)pa_dlopen_route(file, mode))(file, mode);
}
#endif

uint32_t pa_ze_dev_index(ze_device_handle_t h)
{
    for (uint32_t i = 0; i < pa_ze_ndevs; i++)
        if (pa_ze_devs[i].h == h)
            return i;
    return UINT32_MAX;
}

/* A clock pair's error is up to half the window around the driver call (the reference is its
 * middle): a caller preempted inside it shifted every operation converted with that reference
 * by up to half the preemption. Up to 8 tries, the narrowest kept; a try within this window is
 * kept at once (the call itself takes 0.3-3 us: an ioctl on hardware). The tries cost at most
 * 8 calls per device per 50 ms refresh; the bound kept is recorded (clock_err_ns). */
#define PA_ZE_SYNC_GOOD_NS 10000u
#define PA_ZE_SYNC_TRIES 8

/* Reads device i's clock pair into c's reference (guard held by the caller). 0, or -1 when the
 * driver failed every try. */
static int dev_clock_read(pa_ze_dev_t *d, pa_ze_clock_t *c)
{
    uint64_t best = UINT64_MAX;
    for (int t = 0; t < PA_ZE_SYNC_TRIES && best > PA_ZE_SYNC_GOOD_NS; t++) {
        uint64_t host = 0, dev = 0, h0 = pa_clock_ns();
        ze_result_t r = pa_ze.zeDeviceGetGlobalTimestamps(d->h, &host, &dev);
        uint64_t h1 = pa_clock_ns();
        if (r != ZE_RESULT_SUCCESS || h1 - h0 >= best)
            continue;
        best = h1 - h0;
        /* our own clock around the call: the driver's host clock domain is unspecified */
        c->ref_host_ns = h0 + (h1 - h0) / 2;
        c->ref_dev_ticks = dev;
    }
    if (best == UINT64_MAX)
        return -1;
    /* readers of the DB widen their kernel/metric-interval overlaps by this bound
     * (writer/writer_dm_summary.c): a try kept at once may be off by up to half of
     * PA_ZE_SYNC_GOOD_NS on a loaded machine, far more than a quiet one's ~1 us */
    uint64_t err = (best + 1) / 2, seen = atomic_load(&d->clock_err_ns);
    while (err > seen && !atomic_compare_exchange_weak(&d->clock_err_ns, &seen, err)) {
    }
    return 0;
}

void pa_ze_dev_clock(uint32_t i, pa_ze_clock_t *out)
{
    pa_ze_dev_t *d = &pa_ze_devs[i];
    uint64_t now = pa_clock_ns();
    pa_ze_clock_load(&d->clk, out);
    if (out->ref_host_ns != 0 && now - out->ref_host_ns <= 50000000u)
        return;
    int expect = 0;
    pa_guard_enter();
    if (atomic_compare_exchange_strong(&d->clock_lock, &expect, 1)) {
        /* published under the seqlock (clock_lock makes us the only writer): a reader
         * preempted across two refreshes retries instead of keeping a torn pair */
        pa_ze_clock_t c;
        pa_ze_clock_load(&d->clk, &c);
        if (dev_clock_read(d, &c) == 0) {
            pa_ze_clock_publish(&d->clk, &c);
            *out = c;
        }
        atomic_store(&d->clock_lock, 0);
    } else if (out->ref_host_ns == 0) {
        /* another thread makes the device's first reference: not published yet, and a
         * conversion without one gives raw device times (seconds away from the session);
         * a reference of our own for this conversion, not published (one writer) */
        dev_clock_read(d, out);
    }
    pa_guard_leave();
}

void pa_ze_detach(uint64_t timeout_ns)
{
    if (!atomic_load(&pa_ze_attached))
        return;
    pa_ze_ops_flush(timeout_ns);
    pa_ring_waits_t *w = &pa_ring_waits[PA_RING_SRC_ZE];
    pa_dbg("ze", "API records that found their ring full waited %llu times (%.1f ms), %llu waits given up",
           (unsigned long long)atomic_load(&w->waits), atomic_load(&w->wait_ns) / 1e6,
           (unsigned long long)atomic_load(&w->given_up));
    pa_record_t rec = { .kind = PA_REC_ZE_COUNTS, .t0 = pa_clock_ns() };
    rec.u.raw[0] = atomic_load(&pa_ze_uncollected);
    rec.u.raw[1] = atomic_load(&pa_ze_table_full);
    rec.u.raw[2] = (uint64_t)pa_ze_path;        /* enum pa_ze_path: named in the summary */
    rec.u.raw[3] = (uint64_t)pa_ze_path_reason; /* enum pa_ze_why */
    /* the payload: [0] the largest clock-pair error bound over the devices (ns), [1] operations
     * in flight when the application destroyed their context (pa_ze_ctx_lost), [2..4] the full-ring
     * waits of the API records: count, ns, given up (pa_emit_full), [5] the capture lists submitted
     * with the application's executions (ze_ops.c) */
    uint64_t pay[6] = { 0, atomic_load(&pa_ze_ctx_lost), atomic_load(&w->waits), atomic_load(&w->wait_ns),
                        atomic_load(&w->given_up), atomic_load(&pa_ze_capture_lists) };
    for (uint32_t i = 0; i < pa_ze_ndevs; i++)
        if (atomic_load(&pa_ze_devs[i].clock_err_ns) > pay[0])
            pay[0] = atomic_load(&pa_ze_devs[i].clock_err_ns);
    pa_emit(&rec, pay, sizeof pay);
}

/* ---- the Level Zero source (common/pa_source.h) ---- */

static int ze_source_init(void)
{
    pa_ze_attach(); /* only when the app maps libze_loader; else on its dlopen (ze.h) */
    return 0;
}

/* In-flight device ops: waited for within the exit budget while the device completes them (a
 * backlog of queued kernels is collected); work that makes no progress for 200 ms (a kernel
 * running for seconds, a hung one) is not waited for: it is counted uncollected
 * (pa_ze_ops_flush). */
static void ze_source_finish(uint64_t budget_ns)
{
    pa_ze_detach(budget_ns);
}

/* mem alone needs the tracer too: PA_SRC_MEM attaches it */
const pa_source_t pa_source_ze = {
    .name = "ze", .mask = PA_SRC_ZE | PA_SRC_MEM, .rec_first = PA_REC_ZE_FIRST, .rec_last = PA_REC_ZE_LAST,
    .init = ze_source_init, .finish = ze_source_finish, .fork_child = pa_ze_win_after_fork_child,
};
