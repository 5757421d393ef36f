/* pcs_internal.h - the PC-sampling engine shared by the agent and libprofagent_pti.so: Level Zero
 * entry points, EU-stall devices, the kernel registry, streamer readers and their sinks. */
#ifndef PA_PCS_INTERNAL_H
#define PA_PCS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <level_zero/ze_api.h>
#include <level_zero/zet_api.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/layers/zel_tracing_register_cb.h>

#include "../collector/ze.h" /* pa_ze_call_enter(): every loader call of the engine is in a window */
#include "../common/pa_pcs.h"
#include "../common/pa_record.h"

/* ---- loader entry points (pcs_ze.c), resolved with dlsym: the agent must not link the loader ---- */
#define PCS_FN(n) __typeof__(&n) n
typedef struct pcs_fns {
    PCS_FN(zeInit); PCS_FN(zeDriverGet); PCS_FN(zeDeviceGet); PCS_FN(zeDeviceGetProperties);
    PCS_FN(zeContextCreate); PCS_FN(zeContextDestroy); PCS_FN(zeEventPoolCreate); PCS_FN(zeEventPoolDestroy);
    PCS_FN(zeEventCreate); PCS_FN(zeEventDestroy); PCS_FN(zeEventHostSynchronize);
    PCS_FN(zeEventHostReset); PCS_FN(zeModuleGetNativeBinary); PCS_FN(zetModuleGetDebugInfo);
    PCS_FN(zeDriverGetExtensionFunctionAddress);
    PCS_FN(zetMetricGroupGet); PCS_FN(zetMetricGroupGetProperties); PCS_FN(zetMetricGet);
    PCS_FN(zetMetricGetProperties); PCS_FN(zetContextActivateMetricGroups);
    PCS_FN(zetMetricStreamerOpen); PCS_FN(zetMetricStreamerReadData); PCS_FN(zetMetricStreamerClose);
    PCS_FN(zetMetricGroupCalculateMetricValues);
    PCS_FN(zelTracerCreate); PCS_FN(zelTracerSetEnabled); PCS_FN(zelTracerKernelCreateRegisterCallback);
    PCS_FN(zelTracerModuleCreateRegisterCallback); PCS_FN(zelTracerDestroy);
} pcs_fns_t;
extern pcs_fns_t pcs_ze;

typedef ze_result_t (*pcs_base_fn)(ze_kernel_handle_t, uint64_t *);

/* One Level Zero device as the engine sees it. */
typedef struct pcs_dev {
    ze_driver_handle_t drv;
    ze_device_handle_t h;
    ze_context_handle_t ctx;            /* the engine's own context on the driver */
    zet_metric_group_handle_t group;    /* EuStallSampling, NULL when unsupported */
    pcs_base_fn base_fn;                /* zexKernelGetBaseAddress of the driver, NULL if none */
    uint32_t index;                     /* enumeration order (the agent's ZE_DEVICES ids) */
    uint32_t nmetrics;                  /* metrics of the group */
    uint32_t ip_metric;                 /* index of the IP metric */
    uint32_t nreasons;                  /* EVENT metrics other than IP, in group order */
    uint32_t reason_metric[PA_PCS_MAX_REASONS];
    char reason_name[PA_PCS_MAX_REASONS][ZET_MAX_METRIC_NAME];
    char reason_desc[PA_PCS_MAX_REASONS][ZET_MAX_METRIC_DESCRIPTION];
} pcs_dev_t;

#define PCS_MAX_DEVICES PA_PCS_MAX_DEVICES
extern pcs_dev_t pcs_devs[PCS_MAX_DEVICES];
extern uint32_t pcs_ndevs;        /* every device enumerated */
extern uint32_t pcs_nsupported;   /* devices with the EuStallSampling group */

/* What the embedding (agent or library) provides: a guard around the engine's own ze calls on
 * application threads (the agent must not record them), and where reader records go. */
typedef struct pcs_host {
    void (*guard_enter)(void);
    void (*guard_leave)(void);
    /* agent: the reader thread's ring; NULL in the library */
    void *(*ring_open)(uint32_t device);
    void (*ring_emit)(void *ring, const pa_record_t *rec, const void *payload, uint32_t len);
    void (*ring_close)(void *ring);
    void (*thread_start)(void);   /* first thing on a reader thread (agent: mark it an agent thread) */
    _Atomic int kernels_hooked;   /* the PTI library's zeModuleCreate/zeKernelCreate interposers
                                     register kernels: no tracer (pcs_kernels_attach) */
} pcs_host_t;
extern pcs_host_t pcs_host;

/*! pcs_engine_init() : resolves the loader, enumerates devices and their EuStallSampling
 *  groups (once; later calls return the first result). `may_init` 1 (the PTI API, as PTI does):
 *  zeInit(ZE_INIT_FLAG_GPU_ONLY) first; 0 (the agent): only when the application initialized
 *  Level Zero already, else -1 and nothing is kept (a later call tries again). Returns the number of devices with
 *  EU-stall support, -1 when Level Zero is absent, not initialized or failed. Thread-safe. */
int pcs_engine_init(int may_init);
/*! pcs_engine_fini() : the library is about to be unmapped (pti_lib_fini, after pcs_pti_end and
 *  pcs_kernels_detach): destroys the engine's per-driver contexts and frees the kernel registry,
 *  so that each load/unload cycle of the library leaves nothing behind. Nothing is destroyed
 *  while a reader whose join timed out may still use a context (pcs_stream_left()). After it
 *  pcs_engine_init() starts again from nothing. Thread-safe. */
void pcs_engine_fini(void);

/* ---- kernels (pcs_kernels.c): registered by the zeKernelCreate epilogue of our own tracer ---- */
typedef struct pcs_kernel {
    pa_pcs_kernel_t k;
    char *name;
    char **files;
    pa_pcs_line_t *lines;
} pcs_kernel_t;

/*! pcs_kernels_attach() : creates the engine's tracer (zeKernelCreate epilogue) unless kernels
 *  are hooked otherwise. Needs the user's ZE_ENABLE_TRACING_LAYER=1 before zeInit (loader 1.8:
 *  zelTracerCreate fails without it; the engine never sets it).
 *  Returns 0 or -1; 0 without a tracer once pcs_host.kernels_hooked. Idempotent. */
int pcs_kernels_attach(void);
/*! pcs_kernels_detach() : disables and destroys the engine's tracer, if one was created (its
 *  callbacks are code of this copy: a library about to be unmapped removes them). */
void pcs_kernels_detach(void);
/*! pcs_kernels_module_created() / pcs_kernels_kernel_created() : a module of `device` / a kernel
 *  `name` of `module` was created (the agent's ze hooks, pa_ze_on_kernel_objects(); the tracer's
 *  epilogues; the PTI library's interposers). A
 *  kernel of a module not seen, or of a driver without zexKernelGetBaseAddress, is not kept.
 *  errno kept. */
void pcs_kernels_module_created(ze_module_handle_t m, ze_device_handle_t device);
void pcs_kernels_kernel_created(ze_module_handle_t module, ze_kernel_handle_t kernel, const char *name);
/*! pcs_kernels_free() : frees every registered kernel (pcs_engine_fini). */
void pcs_kernels_free(void);
/*! pcs_kernels_count() : kernels registered so far (they are never removed). */
uint32_t pcs_kernels_count(void);
/*! pcs_kernels_get() : kernel `i` (< pcs_kernels_count()); stable pointer. */
const pcs_kernel_t *pcs_kernels_get(uint32_t i);
/*! pcs_kernels_register() : adds a kernel (also used by tests); returns its id. */
uint64_t pcs_kernels_register(uint32_t device, uint32_t base, uint32_t size, const char *name,
                              char **files, uint32_t nfiles, pa_pcs_line_t *lines, uint32_t nlines);
/*! pcs_lines_of() : source lines of kernel `name` of `module` from its debug info (pcs_lines.c). */
void pcs_lines_of(ze_module_handle_t module, const char *name, uint32_t base, char ***files, uint32_t *nfiles,
                  pa_pcs_line_t **lines, uint32_t *nlines);

/* ---- streaming (pcs_reader.c) ---- */
enum pcs_sub { PCS_SUB_AGENT = 1, PCS_SUB_PTI = 2 };

/* The PTI session's sink: counts under its mutex. */
typedef struct pcs_pti_sink {
    pthread_mutex_t mu;
    pa_pcs_table_t table;
    uint32_t kernels_added;     /* pcs_kernels_get() cursor */
    int dropped[PCS_MAX_DEVICES];
} pcs_pti_sink_t;

/*! pcs_stream_start() : subscribes `who`; starts one reader per supported device if none runs
 *  (period_ns as asked). `sink` (PCS_SUB_PTI) receives the counts from now on. Returns the
 *  number of devices streaming (0: none could open). */
int pcs_stream_start(int who, uint32_t period_ns, pcs_pti_sink_t *sink);
/*! pcs_stream_stop() : unsubscribes `who`. The last subscriber stops the readers (final read,
 *  close; bounded join). A PTI sink is flushed (a read of every device) before it is detached. */
void pcs_stream_stop(int who);
/*! pcs_stream_after_fork_child() : readers do not exist in a fork child: forget them. */
void pcs_stream_after_fork_child(void);
/*! pcs_stream_left() : readers whose join timed out (left running, detached): their device's
 *  context must stay. */
int pcs_stream_left(void);

/* ---- PTI implementation table (pti_api.c): the agent exports one, the library has its own ---- */
typedef struct pcs_pti_impl {
    uint32_t version;
    int (*enable)(void **h);
    int (*configure)(void *h, void *const *devices, size_t n, uint32_t period);
    int (*start)(void *h);
    int (*stop)(void *h);
    int (*reasons)(void *h, void *out, size_t *count);
    int (*devices)(void *h, void **out, size_t *count);
    int (*status)(void *h, void *device, void *out);
    int (*kernels)(void *h, void *device, uint64_t *out, size_t *count);
    int (*kinfo)(void *h, void *device, uint64_t kernel, void *out);
    int (*instrs)(void *h, void *device, uint64_t kernel, void *ibuf, size_t icount, uint64_t *sbuf,
                  size_t scount);
    int (*disable)(void *h);
    void (*end)(void);            /* pcs_pti_end(): the library is being unloaded */
} pcs_pti_impl_t;
#define PCS_PTI_IMPL_VERSION 2u
extern const pcs_pti_impl_t pcs_pti_impl;
/*! pcs_pti_end() : ends the live PTI session of this copy, if any, as ptiPcSamplingDisable would:
 *  a running collection is stopped first (final read, streamers closed, readers joined, each
 *  join bounded). Thread-safe. */
void pcs_pti_end(void);

#endif
