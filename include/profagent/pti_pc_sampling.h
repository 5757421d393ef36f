/* pti_pc_sampling.h - PTI-compatible PC (EU-stall) sampling API: lifecycle, two-call queries. */
#ifndef PROFAGENT_PTI_PC_SAMPLING_H
#define PROFAGENT_PTI_PC_SAMPLING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The contract is ../shared/spec/pti-pc-sampling-api.txt ("PTI PC Sampling API Reference"); the
 * names, structure layouts and numeric codes are PTI's (intel/pti-gpu sdk/include/pti/pti.h and
 * pti_pc_sampling.h), so a program written for PTI recompiles against this header unchanged
 * (`#include "pti/pti_pc_sampling.h"` finds include/pti/pti_pc_sampling.h, which includes this
 * file) and links -lprofagent_pti instead of -lpti_view.
 *
 * Lifecycle (one live handle per process):
 *     Enable -> [Configure] -> Start -> Stop -> queries -> Disable
 *   - GetStallReasons works in every state after Enable.
 *   - The post-stop queries (GetProfiledDevices, GetDeviceStatus, GetObservedKernelHandles,
 *     GetObservedKernelInfo, GetSamplesPerInstruction) answer PTI_ERROR_PC_SAMPLING_NOT_STOPPED
 *     before Stop.
 *   - Start needs Configure first (spec: NOT_CONFIGURED otherwise); Configure with devices !=
 *     NULL is PTI_ERROR_NOT_IMPLEMENTED (all devices with EU-stall support are sampled); the two
 *     buffer-size calls are PTI_ERROR_NOT_IMPLEMENTED in every state.
 *   - A handle that is not the live one (never returned by Enable, or disabled) is
 *     PTI_ERROR_BAD_ARGUMENT, like NULL.
 *   - Two-call buffers: a count smaller than required fills that many entries; a larger one
 *     gets the count set to the actual number.
 *
 * Differences from PTI's implementation (the spec text wins; our additions are marked):
 *   - _source_info is filled (file, line) for instructions whose kernel has debug lines
 *     (OpenCL C / SYCL built with -g); NULL otherwise. Owned by the library until Disable.
 *   - _reason_count is the number of stall reasons of GetStallReasons (all of them, so that
 *     samples_buffer[i * _reason_count + j] is reason j of GetStallReasons).
 *   - kernel handles are per-process ids (1, 2, ...) of kernel creations, never reused.
 *   - _total_sample_count counts every sample the device reported, including samples whose IP
 *     lies in no known kernel; _total_pc_count counts the distinct IPs sampled.
 *   - With libprofagent.so preloaded the calls go to the agent, which also stores the samples
 *     in its database; the sampling period is then the agent's when it already samples
 *     (PROFAGENT_PC_SAMPLING=1).
 *   - Without a device offering the `EuStallSampling` metric group (or with ZET_ENABLE_METRICS
 *     set to something else than 1 before zeInit) Enable returns
 *     PTI_ERROR_PC_SAMPLING_UNSUPPORTED at once.
 */

/* ---- from PTI's pti.h (same guard: a program including PTI's pti.h first keeps its own) ---- */
#ifndef INCLUDE_PTI_H_
#define INCLUDE_PTI_H_

#ifndef PTI_EXPORT
#define PTI_EXPORT __attribute__((visibility("default")))
#endif

#define PTI_MAX_DEVICE_UUID_SIZE 16

/* Return codes; PTI's numeric values (pti.h pti_result). */
typedef enum {
    PTI_SUCCESS = 0,
    PTI_STATUS_END_OF_BUFFER = 1,
    PTI_ERROR_NOT_IMPLEMENTED = 2,
    PTI_ERROR_BAD_ARGUMENT = 3,
    PTI_ERROR_NO_CALLBACKS_SET = 4,
    PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY = 5,
    PTI_ERROR_BAD_TIMESTAMP = 6,
    PTI_ERROR_BAD_API_ID = 7,
    PTI_ERROR_NO_GPU_VIEWS_ENABLED = 8,
    PTI_ERROR_DRIVER = 50,
    PTI_ERROR_TRACING_NOT_INITIALIZED = 51,
    PTI_ERROR_L0_LOCAL_PROFILING_NOT_SUPPORTED = 52,
    PTI_ERROR_METRICS_ENABLE_FAILED = 98,
    PTI_ERROR_METRICS_RUNTIME_ENABLE_UNSUPPORTED = 99,
    PTI_ERROR_METRICS_COLLECTION_NOT_ENABLED = 100,
    PTI_ERROR_METRICS_COLLECTION_NOT_DISABLED = 101,
    PTI_ERROR_METRICS_COLLECTION_NOT_PAUSED = 102,
    PTI_ERROR_METRICS_COLLECTION_ALREADY_PAUSED = 103,
    PTI_ERROR_METRICS_COLLECTION_ALREADY_ENABLED = 104,
    PTI_ERROR_METRICS_BAD_COLLECTION_CONFIGURATION = 105,
    PTI_ERROR_METRICS_NO_DATA_COLLECTED = 106,
    PTI_ERROR_METRICS_SCOPE_METRIC_NOT_FOUND = 151,
    PTI_ERROR_METRICS_SCOPE_NOT_A_SINGLE_GROUP = 152,
    PTI_ERROR_METRICS_SCOPE_OUT_OF_MEMORY = 153,
    PTI_ERROR_METRICS_SCOPE_COLLECTION_BUFFER_TOO_SMALL = 154,
    PTI_ERROR_METRICS_SCOPE_INSUFFICIENT_BUFFER = 155,
    PTI_ERROR_METRICS_SCOPE_INVALID_COLLECTION_BUFFER = 156,
    PTI_WARN_METRICS_SCOPE_PARTIAL_BUFFER = 157,
    PTI_WARN_BUFFER_NOT_FINALIZED = 158,
    PTI_ERROR_METRICS_SCOPE_DEVICE_TYPE_NOT_UNIFORM = 159,
    PTI_ERROR_INTERNAL = 200,
    PTI_ERROR_PC_SAMPLING_ALREADY_ENABLED = 250,
    PTI_ERROR_PC_SAMPLING_NOT_CONFIGURED = 251,
    PTI_ERROR_PC_SAMPLING_ALREADY_CONFIGURED = 252,
    PTI_ERROR_PC_SAMPLING_ALREADY_STARTED = 253,
    PTI_ERROR_PC_SAMPLING_NOT_STARTED = 254,
    PTI_ERROR_PC_SAMPLING_ALREADY_STOPPED = 255,
    PTI_ERROR_PC_SAMPLING_NOT_STOPPED = 256,
    PTI_ERROR_PC_SAMPLING_UNSUPPORTED = 257,
    PTI_ERROR_PC_SAMPLING_CONFIGURATION_FAIL = 258,
    PTI_RESULT_FORCE_UINT32 = 0x7fffffff
} pti_result;

#ifdef __cplusplus
static_assert(sizeof(pti_result) == sizeof(uint32_t), "pti_result is 32 bits (PTI ABI)");
#else
_Static_assert(sizeof(pti_result) == sizeof(uint32_t), "pti_result is 32 bits (PTI ABI)");
#endif

/*! ptiResultTypeToString() : "PTI_SUCCESS", "PTI_ERROR_BAD_ARGUMENT", ... ; "UNKNOWN" otherwise. */
PTI_EXPORT const char *ptiResultTypeToString(pti_result result_value);

/* Level Zero handles (ze_device_handle_t for devices). */
typedef void *pti_device_handle_t;
typedef void *pti_backend_ctx_t;
typedef void *pti_backend_queue_t;
typedef void *pti_backend_evt_t;
typedef void *pti_backend_command_list_t;
typedef void *pti_backend_kernel_t;
typedef void *pti_backend_module_t;

#endif /* INCLUDE_PTI_H_ */

/* ---- from PTI's pti_pc_sampling.h ---- */
#ifndef PTI_PC_SAMPLING_H_
#define PTI_PC_SAMPLING_H_

/* Opaque collection handle (spec "Note"): created by Enable, destroyed by Disable. */
typedef struct _pti_pc_sampling_handle_t *pti_pc_sampling_handle_t;

/* Stall reason entry (spec "Structures"); strings owned by the library, valid until unload. */
typedef struct _pti_pc_sampling_stall_reason_info_t {
    size_t _struct_size;         /* caller sets sizeof(pti_pc_sampling_stall_reason_info_t) */
    const char *_name;           /* "Active", "ControlStall", ... (the metric names) */
    const char *_description;    /* the metric description */
} pti_pc_sampling_stall_reason_info_t;

/* Source of one instruction (ours: filled from the kernel's debug lines). */
typedef struct _pti_pc_sampling_source_info_t {
    const char *_file_path;      /* NULL if unavailable */
    uint64_t _file_line;         /* 0 if unavailable */
} pti_pc_sampling_source_info_t;

typedef struct _pti_pc_sampling_instruction_t {
    uint64_t _instruction_offset;                 /* bytes from the kernel's base address */
    pti_pc_sampling_source_info_t *_source_info;  /* NULL if unavailable */
} pti_pc_sampling_instruction_t;

typedef struct _pti_pc_sampling_kernel_info_t {
    size_t _struct_size;                     /* caller sets it; required */
    pti_device_handle_t _device;
    uint64_t _kernel_handle;
    const char *_kernel_name;                /* as given to zeKernelCreate */
    size_t _reason_count;                    /* number of stall reasons (see above) */
    size_t _instructions_with_samples_count;
    uint64_t *_aggregated_samples;           /* caller-allocated [_reason_count] or NULL */
} pti_pc_sampling_kernel_info_t;

typedef struct _pti_pc_sampling_device_status_t {
    size_t _struct_size;                     /* caller sets it; required */
    pti_device_handle_t _device;
    uint32_t _samples_dropped;               /* 1: the device reported dropped data (buffer overflow) */
    uint64_t _total_sample_count;
    uint64_t _total_pc_count;
} pti_pc_sampling_device_status_t;

/*! ptiPcSamplingEnable() : creates the collection handle. BAD_ARGUMENT (handle NULL),
 *  PC_SAMPLING_ALREADY_ENABLED (a handle is live), PC_SAMPLING_UNSUPPORTED (no device offers
 *  EU-stall sampling; answered at once), INTERNAL (no memory). */
PTI_EXPORT pti_result ptiPcSamplingEnable(pti_pc_sampling_handle_t *handle);

/*! ptiPcSamplingConfigure() : sampling period in ns for every device (0: 100000 ns; the driver
 *  rounds it). BAD_ARGUMENT, PC_SAMPLING_ALREADY_CONFIGURED (not right after Enable),
 *  NOT_IMPLEMENTED (devices != NULL). */
PTI_EXPORT pti_result ptiPcSamplingConfigure(pti_pc_sampling_handle_t handle, const pti_device_handle_t *devices,
                                             size_t device_count, uint32_t sampling_period_ns);

/*! ptiPcSamplingQueryCollectionBufferSize() / ptiPcSamplingSetCollectionBufferSize() :
 *  NOT_IMPLEMENTED (spec). */
PTI_EXPORT pti_result ptiPcSamplingQueryCollectionBufferSize(pti_pc_sampling_handle_t handle, size_t *buffer_size);
PTI_EXPORT pti_result ptiPcSamplingSetCollectionBufferSize(pti_pc_sampling_handle_t handle, size_t buffer_size);

/*! ptiPcSamplingStartCollection() : opens one streamer per device and starts draining it on a
 *  background thread. BAD_ARGUMENT, PC_SAMPLING_NOT_CONFIGURED, PC_SAMPLING_ALREADY_STARTED,
 *  PC_SAMPLING_ALREADY_STOPPED, INTERNAL (the driver refused every streamer). */
PTI_EXPORT pti_result ptiPcSamplingStartCollection(pti_pc_sampling_handle_t handle);

/*! ptiPcSamplingStopCollection() : final read, closes the streamers (waits at most ~100 ms for
 *  the reader). BAD_ARGUMENT, PC_SAMPLING_NOT_STARTED, PC_SAMPLING_ALREADY_STOPPED. */
PTI_EXPORT pti_result ptiPcSamplingStopCollection(pti_pc_sampling_handle_t handle);

/*! ptiPcSamplingGetStallReasons() : two-call; any state after Enable. BAD_ARGUMENT (handle or
 *  reason_count NULL, or an entry's _struct_size too small), INTERNAL. */
PTI_EXPORT pti_result ptiPcSamplingGetStallReasons(pti_pc_sampling_handle_t handle,
                                                   pti_pc_sampling_stall_reason_info_t *reasons,
                                                   size_t *reason_count);

/*! ptiPcSamplingGetProfiledDevices() : two-call; the sampled devices that ran kernels.
 *  BAD_ARGUMENT, PC_SAMPLING_NOT_STOPPED. */
PTI_EXPORT pti_result ptiPcSamplingGetProfiledDevices(pti_pc_sampling_handle_t handle, pti_device_handle_t *devices,
                                                      size_t *device_count);

/*! ptiPcSamplingGetDeviceStatus() : dropped flag and totals. BAD_ARGUMENT (NULLs, unknown
 *  device, _struct_size too small), PC_SAMPLING_NOT_STOPPED. */
PTI_EXPORT pti_result ptiPcSamplingGetDeviceStatus(pti_pc_sampling_handle_t handle, pti_device_handle_t device,
                                                   pti_pc_sampling_device_status_t *device_status);

/*! ptiPcSamplingGetObservedKernelHandles() : two-call; kernels of `device` with samples.
 *  BAD_ARGUMENT, PC_SAMPLING_NOT_STOPPED. */
PTI_EXPORT pti_result ptiPcSamplingGetObservedKernelHandles(pti_pc_sampling_handle_t handle,
                                                            pti_device_handle_t device, uint64_t *kernel_handles,
                                                            size_t *kernel_count);

/*! ptiPcSamplingGetObservedKernelInfo() : name, counts, per-reason totals (when
 *  _aggregated_samples != NULL). BAD_ARGUMENT (also for a kernel not observed),
 *  PC_SAMPLING_NOT_STOPPED. */
PTI_EXPORT pti_result ptiPcSamplingGetObservedKernelInfo(pti_pc_sampling_handle_t handle, pti_device_handle_t device,
                                                         uint64_t kernel_handle,
                                                         pti_pc_sampling_kernel_info_t *kernel_info);

/*! ptiPcSamplingGetSamplesPerInstruction() : instructions in offset order and their counts,
 *  samples_buffer[i * _reason_count + j]. Fills min(instruction_buffer_count,
 *  samples_buffer_count / _reason_count) instructions. BAD_ARGUMENT (NULLs, unknown device or
 *  kernel), PC_SAMPLING_NOT_STOPPED. */
PTI_EXPORT pti_result ptiPcSamplingGetSamplesPerInstruction(pti_pc_sampling_handle_t handle,
                                                            pti_device_handle_t device, uint64_t kernel_handle,
                                                            pti_pc_sampling_instruction_t *instruction_buffer,
                                                            size_t instruction_buffer_count,
                                                            uint64_t *samples_buffer, size_t samples_buffer_count);

/*! ptiPcSamplingDisable() : stops a running collection and frees the handle. BAD_ARGUMENT. */
PTI_EXPORT pti_result ptiPcSamplingDisable(pti_pc_sampling_handle_t handle);

#endif /* PTI_PC_SAMPLING_H_ */

#ifdef __cplusplus
}
#endif

#endif /* PROFAGENT_PTI_PC_SAMPLING_H */
