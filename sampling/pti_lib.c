/* pti_lib.c - libprofagent_pti.so: the exported ptiPcSampling* functions; they run on the agent's
 * engine when libprofagent.so is preloaded, on the library's own copy otherwise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pcs_internal.h"
#include "profagent/pti_pc_sampling.h"

static const pcs_pti_impl_t *_Atomic chosen;

/* The agent's table when it is in the process (same version), else ours. */
static const pcs_pti_impl_t *impl(void)
{
    const pcs_pti_impl_t *t = atomic_load_explicit(&chosen, memory_order_acquire);
    if (t)
        return t;
    const pcs_pti_impl_t *(*get)(void);
    *(void **)&get = dlsym(RTLD_DEFAULT, "pa_pcs_pti_impl_get");
    t = get ? get() : NULL;
    if (!t || t->version != PCS_PTI_IMPL_VERSION)
        t = &pcs_pti_impl;
    atomic_store_explicit(&chosen, t, memory_order_release);
    return t;
}

/*
 * Without the agent the library attaches as the agent does (collector/ze.h): it never
 * initializes Level Zero behind the application's back and leaves the tracing layer alone.
 * - zeInit, zeModuleCreate and zeKernelCreate are interposed (this library comes before the
 *   loader in the application's symbol scope when the application links it): each goes to the
 *   next definition (the loader) with its arguments, its result and errno returned as they are;
 *   after the application's own zeInit succeeded with GPU drivers the engine enumerates the
 *   devices, and every module and kernel created is registered for IP -> kernel from then on,
 *   so kernels created before ptiPcSamplingEnable are known.
 * - Otherwise (the application reached the loader first) ptiPcSamplingEnable initializes the
 *   engine, as PTI does, and the engine's tracer registers the kernels created after it when
 *   the user enabled the tracing layer (ZE_ENABLE_TRACING_LAYER=1); their samples are counted
 *   unmapped otherwise.
 * The library used to set ZE_ENABLE_TRACING_LAYER=1 for its tracer, costing every Level Zero
 * call of the application the layer's prologue/epilogue dispatch (about 170 ns), and call
 * zeInit(0) in its constructor. ZET_ENABLE_METRICS=1 is still set (unless the user set it):
 * drivers offer metric groups only when it precedes zeInit; it costs no call anything.
 */
static int agent_in;       /* libprofagent.so is preloaded: it does all of this */
static _Atomic int lib_on; /* the engine is initialized on the application's Level Zero */

/* nx = the next definition of `name` (the loader's), resolved once */
#define PTI_NEXT(name)                                                                       \
    static _Atomic(__typeof__(&name)) next_##name;                                           \
    __typeof__(&name) nx = atomic_load_explicit(&next_##name, memory_order_acquire);         \
    if (!nx) {                                                                               \
        *(void **)&nx = dlsym(RTLD_NEXT, #name);                                             \
        atomic_store_explicit(&next_##name, nx, memory_order_release);                       \
    }                                                                                        \
    if (!nx)                                                                                 \
        return ZE_RESULT_ERROR_UNINITIALIZED

/* After a successful call of the application: the engine on its Level Zero (once). */
static int lib_engine(void)
{
    if (agent_in)
        return 0;
    atomic_store(&pcs_host.kernels_hooked, 1);
    if (!atomic_load_explicit(&lib_on, memory_order_acquire) && pcs_engine_init(0) >= 0)
        atomic_store_explicit(&lib_on, 1, memory_order_release);
    return atomic_load_explicit(&lib_on, memory_order_acquire);
}

PTI_EXPORT ze_result_t zeInit(ze_init_flags_t flags)
{
    PTI_NEXT(zeInit);
    ze_result_t r = nx(flags);
    if (r == ZE_RESULT_SUCCESS && (flags == 0 || (flags & ZE_INIT_FLAG_GPU_ONLY))) {
        int saved = errno;
        lib_engine();
        errno = saved;
    }
    return r;
}

PTI_EXPORT ze_result_t zeModuleCreate(ze_context_handle_t ctx, ze_device_handle_t dev, const ze_module_desc_t *desc,
                                      ze_module_handle_t *mod, ze_module_build_log_handle_t *log)
{
    PTI_NEXT(zeModuleCreate);
    ze_result_t r = nx(ctx, dev, desc, mod, log);
    if (r == ZE_RESULT_SUCCESS && mod && *mod) {
        int saved = errno;
        if (lib_engine())
            pcs_kernels_module_created(*mod, dev);
        errno = saved;
    }
    return r;
}

PTI_EXPORT ze_result_t zeKernelCreate(ze_module_handle_t mod, const ze_kernel_desc_t *desc, ze_kernel_handle_t *k)
{
    PTI_NEXT(zeKernelCreate);
    ze_result_t r = nx(mod, desc, k);
    if (r == ZE_RESULT_SUCCESS && k && *k && desc && !agent_in && atomic_load_explicit(&lib_on, memory_order_acquire))
        pcs_kernels_kernel_created(mod, *k, desc->pKernelName);
    return r;
}

__attribute__((constructor)) static void pti_lib_init(void)
{
    agent_in = dlsym(RTLD_DEFAULT, "pa_pcs_pti_impl_get") != NULL;
    if (agent_in)
        return;
    setenv("ZET_ENABLE_METRICS", "1", 0);
    pthread_atfork(NULL, NULL, pcs_stream_after_fork_child); /* readers do not exist in a child */
}

/* At exit, or when the application dlclose()s the library: its code is unmapped after this
 * when no other reference holds it, so nothing of it may run later. A collection still running
 * ends as ptiPcSamplingDisable ends it, as PTI's own collector does when it is destroyed: the
 * readers make their final read, close their streamers (a later collection, of this process or
 * a new copy of the library, can open them again) and are joined (2 s bound each); the tracer's
 * callbacks, if any, are removed; the engine's contexts (one per driver) are destroyed and its
 * kernel registry freed (an application loading and unloading the library repeatedly leaked
 * them once per cycle). The loader is this library's dependency: its destructors run
 * after this one. From here on the engine makes no loader call (a PTI call gets an error), and
 * the ones in progress are waited for, at most PTI_TEARDOWN_WAIT_NS (no window blocks longer
 * than a tenth of it: collector/ze.h). A thread still inside then is not waited for: the
 * loader's own teardown is not the library's to hold back (the agent's would skip it:
 * ze_attach.c). With the agent preloaded the session lives in the agent: only it ends (the
 * agent's readers go on for the agent's own sampling). */
#define PTI_TEARDOWN_WAIT_NS 100000000ull
__attribute__((destructor)) static void pti_lib_fini(void)
{
    int saved = errno;
    if (agent_in) {
        const pcs_pti_impl_t *t = atomic_load_explicit(&chosen, memory_order_acquire);
        if (t)
            t->end();
        errno = saved;
        return;
    }
    pcs_pti_end();
    pcs_kernels_detach();
    pcs_engine_fini(); /* the contexts and kernels of this copy: a later copy makes its own */
    int waited;
    pa_ze_call_teardown(PTI_TEARDOWN_WAIT_NS, &waited);
    errno = saved;
}

PTI_EXPORT pti_result ptiPcSamplingEnable(pti_pc_sampling_handle_t *handle)
{
    return (pti_result)impl()->enable((void **)handle);
}

PTI_EXPORT pti_result ptiPcSamplingConfigure(pti_pc_sampling_handle_t handle, const pti_device_handle_t *devices,
                                             size_t device_count, uint32_t sampling_period_ns)
{
    return (pti_result)impl()->configure(handle, (void *const *)devices, device_count, sampling_period_ns);
}

PTI_EXPORT pti_result ptiPcSamplingQueryCollectionBufferSize(pti_pc_sampling_handle_t handle, size_t *buffer_size)
{
    (void)handle;
    (void)buffer_size;
    return PTI_ERROR_NOT_IMPLEMENTED;
}

PTI_EXPORT pti_result ptiPcSamplingSetCollectionBufferSize(pti_pc_sampling_handle_t handle, size_t buffer_size)
{
    (void)handle;
    (void)buffer_size;
    return PTI_ERROR_NOT_IMPLEMENTED;
}

PTI_EXPORT pti_result ptiPcSamplingStartCollection(pti_pc_sampling_handle_t handle)
{
    return (pti_result)impl()->start(handle);
}

PTI_EXPORT pti_result ptiPcSamplingStopCollection(pti_pc_sampling_handle_t handle)
{
    return (pti_result)impl()->stop(handle);
}

PTI_EXPORT pti_result ptiPcSamplingGetStallReasons(pti_pc_sampling_handle_t handle,
                                                   pti_pc_sampling_stall_reason_info_t *reasons,
                                                   size_t *reason_count)
{
    return (pti_result)impl()->reasons(handle, reasons, reason_count);
}

PTI_EXPORT pti_result ptiPcSamplingGetProfiledDevices(pti_pc_sampling_handle_t handle, pti_device_handle_t *devices,
                                                      size_t *device_count)
{
    return (pti_result)impl()->devices(handle, devices, device_count);
}

PTI_EXPORT pti_result ptiPcSamplingGetDeviceStatus(pti_pc_sampling_handle_t handle, pti_device_handle_t device,
                                                   pti_pc_sampling_device_status_t *device_status)
{
    return (pti_result)impl()->status(handle, device, device_status);
}

PTI_EXPORT pti_result ptiPcSamplingGetObservedKernelHandles(pti_pc_sampling_handle_t handle,
                                                            pti_device_handle_t device, uint64_t *kernel_handles,
                                                            size_t *kernel_count)
{
    return (pti_result)impl()->kernels(handle, device, kernel_handles, kernel_count);
}

PTI_EXPORT pti_result ptiPcSamplingGetObservedKernelInfo(pti_pc_sampling_handle_t handle, pti_device_handle_t device,
                                                         uint64_t kernel_handle,
                                                         pti_pc_sampling_kernel_info_t *kernel_info)
{
    return (pti_result)impl()->kinfo(handle, device, kernel_handle, kernel_info);
}

PTI_EXPORT pti_result ptiPcSamplingGetSamplesPerInstruction(pti_pc_sampling_handle_t handle,
                                                            pti_device_handle_t device, uint64_t kernel_handle,
                                                            pti_pc_sampling_instruction_t *instruction_buffer,
                                                            size_t instruction_buffer_count,
                                                            uint64_t *samples_buffer, size_t samples_buffer_count)
{
    return (pti_result)impl()->instrs(handle, device, kernel_handle, instruction_buffer, instruction_buffer_count,
                                      samples_buffer, samples_buffer_count);
}

PTI_EXPORT pti_result ptiPcSamplingDisable(pti_pc_sampling_handle_t handle)
{
    return (pti_result)impl()->disable(handle);
}

PTI_EXPORT const char *ptiResultTypeToString(pti_result r)
{
    switch (r) {
#define C(x) case x: return #x;
    C(PTI_SUCCESS) C(PTI_STATUS_END_OF_BUFFER) C(PTI_ERROR_NOT_IMPLEMENTED) C(PTI_ERROR_BAD_ARGUMENT)
    C(PTI_ERROR_NO_CALLBACKS_SET) C(PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY) C(PTI_ERROR_BAD_TIMESTAMP)
    C(PTI_ERROR_BAD_API_ID) C(PTI_ERROR_NO_GPU_VIEWS_ENABLED) C(PTI_ERROR_DRIVER)
    C(PTI_ERROR_TRACING_NOT_INITIALIZED) C(PTI_ERROR_L0_LOCAL_PROFILING_NOT_SUPPORTED) C(PTI_ERROR_INTERNAL)
    C(PTI_ERROR_PC_SAMPLING_ALREADY_ENABLED) C(PTI_ERROR_PC_SAMPLING_NOT_CONFIGURED)
    C(PTI_ERROR_PC_SAMPLING_ALREADY_CONFIGURED) C(PTI_ERROR_PC_SAMPLING_ALREADY_STARTED)
    C(PTI_ERROR_PC_SAMPLING_NOT_STARTED) C(PTI_ERROR_PC_SAMPLING_ALREADY_STOPPED)
    C(PTI_ERROR_PC_SAMPLING_NOT_STOPPED) C(PTI_ERROR_PC_SAMPLING_UNSUPPORTED)
    C(PTI_ERROR_PC_SAMPLING_CONFIGURATION_FAIL)
#undef C
    default: return "UNKNOWN";
    }
}
