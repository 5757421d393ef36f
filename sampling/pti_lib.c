/* pti_lib.c - libprofagent_pti.so: the exported ptiPcSampling* functions; they run on the agent's
 * engine when libprofagent.so is preloaded, on the library's own copy otherwise. */
#define _GNU_SOURCE
#include <dlfcn.h>
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

/* Without the agent: the environment the driver needs before the first zeInit (metrics, and
 * the tracing layer for kernel address ranges), then the engine and its kernel tracer, so
 * kernels created before ptiPcSamplingEnable are known too. A user's explicit values stay. */
__attribute__((constructor)) static void pti_lib_init(void)
{
    if (dlsym(RTLD_DEFAULT, "pa_pcs_pti_impl_get"))
        return; /* the agent does all of this */
    setenv("ZET_ENABLE_METRICS", "1", 0);
    setenv("ZE_ENABLE_TRACING_LAYER", "1", 0);
    pthread_atfork(NULL, NULL, pcs_stream_after_fork_child); /* readers do not exist in a child */
    if (pcs_engine_init(1) >= 0)
        pcs_kernels_attach();
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
