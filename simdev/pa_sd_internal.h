/* pa_sd_internal.h - objects and internal interfaces shared by the simdev driver's source files. */
#ifndef PA_SD_INTERNAL_H
#define PA_SD_INTERNAL_H

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_api.h>
#include <level_zero/zet_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simdev.h"

#define PA_SD_HIDDEN __attribute__((visibility("hidden")))
#define PA_SD_MAX_DEVICES 16u
#define PA_SD_NUM_ORDINALS 2u
#define PA_SD_MAX_ENGINES 4u /* per ordinal */
#define PA_SD_SLM_BYTES 65536u  /* maxSharedLocalMemory of every device (compute properties) */
#define PA_SD_MAX_ARGS 32u
#define PA_SD_ARG_BYTES 64u
#define PA_SD_MAX_FILL_PATTERN 256u /* maxMemoryFillPatternSize of both queue groups */

/* Magic tags at the start of every handle so a wrong or stale handle is rejected, not followed. */
enum {
    PA_SD_MAGIC_DRIVER = 0x53447244u, PA_SD_MAGIC_DEVICE = 0x53446576u, PA_SD_MAGIC_CONTEXT = 0x53446374u,
    PA_SD_MAGIC_QUEUE = 0x53447175u, PA_SD_MAGIC_LIST = 0x53446c73u, PA_SD_MAGIC_FENCE = 0x53446663u,
    PA_SD_MAGIC_POOL = 0x5344706cu, PA_SD_MAGIC_EVENT = 0x53446576u ^ 0xffu, PA_SD_MAGIC_MODULE = 0x53446d64u,
    PA_SD_MAGIC_KERNEL = 0x53446b6eu, PA_SD_MAGIC_BUILDLOG = 0x5344626cu, PA_SD_MAGIC_DEAD = 0xdeadbeefu,
};

/* ---- configuration (config.c) ---- */
typedef struct pa_sd_config {
    uint32_t devices;          /* SIMDEV_DEVICES */
    uint64_t timer_hz;         /* SIMDEV_TIMER_HZ, device ticks per second */
    uint32_t timestamp_bits;   /* SIMDEV_TIMESTAMP_BITS: 32, 36 or 64 */
    int64_t clock_offset_ns;   /* SIMDEV_CLOCK_OFFSET_NS */
    uint64_t clock_start_ticks;/* SIMDEV_CLOCK_START_TICKS */
    uint64_t mem_bytes;        /* SIMDEV_MEM_MB * 2^20, per device */
    uint64_t base_ns;          /* SIMDEV_KERNEL_BASE_NS, unknown-kernel fixed cost */
    uint64_t ns_per_item;      /* SIMDEV_KERNEL_NS_PER_ITEM, unknown-kernel cost per work item */
    uint64_t copy_gbps;        /* SIMDEV_COPY_GBPS, modelled copy/fill bandwidth */
    uint32_t core_clock_mhz;   /* SIMDEV_CORE_CLOCK_MHZ */
    uint32_t isa_loop_trips;   /* SIMDEV_ISA_LOOP_TRIPS: modelled iterations of every loop */
    bool eustall;              /* SIMDEV_EUSTALL: the EuStallSampling group exists */
    uint64_t eustall_seed;     /* SIMDEV_EUSTALL_SEED */
    uint64_t eustall_buffer;   /* SIMDEV_EUSTALL_BUFFER_KB * 1024: device report buffer, bytes */
    bool oa;                   /* SIMDEV_COMPUTE_BASIC: the ComputeBasic group exists */
    uint64_t oa_buffer;        /* SIMDEV_OA_BUFFER_KB * 1024: ComputeBasic report buffer, bytes */
    uint64_t allreduce_timeout_ns; /* SIMDEV_ALLREDUCE_TIMEOUT_MS * 1e6: longest wait for peer ranks */
    uint64_t fault_list_appends; /* SIMDEV_FAULT_LIST_APPENDS: appends a list takes before the rest
                                  * fail with OUT_OF_HOST_MEMORY (fault injection; 0 = never) */
    uint64_t fault_list_barriers; /* SIMDEV_FAULT_LIST_BARRIERS: the same for barrier appends only */
    uint64_t fault_ts_query_ns;  /* SIMDEV_FAULT_TS_QUERY_US * 1000: each zeEventQueryKernelTimestamp
                                  * that returns timestamps takes this long first (0 = at once) */
    uint64_t fault_clock_ns;     /* SIMDEV_FAULT_CLOCK_SYNC_US * 1000: a device's first
                                  * zeDeviceGetGlobalTimestamps takes this long after reading the
                                  * clocks (0 = at once) */
} pa_sd_config;

/*! pa_sd_config_get() : the process-wide configuration, parsed once from SIMDEV_* on first use. */
PA_SD_HIDDEN const pa_sd_config *pa_sd_config_get(void);

/* ---- device clock (clock.c) ---- */
/*! pa_sd_clock_host_ns() : CLOCK_MONOTONIC in ns. */
PA_SD_HIDDEN uint64_t pa_sd_clock_host_ns(void);
/*! pa_sd_clock_ticks_at(host_ns) : unmasked device ticks at a host instant (README "Clock"). */
PA_SD_HIDDEN uint64_t pa_sd_clock_ticks_at(uint64_t host_ns);
/*! pa_sd_clock_mask() : mask of SIMDEV_TIMESTAMP_BITS valid bits (all ones for 64). */
PA_SD_HIDDEN uint64_t pa_sd_clock_mask(void);
/*! pa_sd_clock_now_ticks() : masked device ticks now. */
PA_SD_HIDDEN uint64_t pa_sd_clock_now_ticks(void);
/*! pa_sd_clock_wait_until(host_ns) : sleep/spin until CLOCK_MONOTONIC >= host_ns; returns early on
 *  shutdown. Sleeps coarse, spins the last ~60 us for precision. */
PA_SD_HIDDEN void pa_sd_clock_wait_until(uint64_t host_ns);

/* ---- objects ---- */
typedef struct pa_sd_engine pa_sd_engine;
typedef struct pa_sd_device pa_sd_device;

typedef struct pa_sd_driver {
    uint32_t magic;
    uint32_t ndevices;
    pa_sd_device *devices[PA_SD_MAX_DEVICES];
} pa_sd_driver;

struct pa_sd_device {
    uint32_t magic;
    uint32_t index;
    pa_sd_driver *driver;
    _Atomic uint64_t mem_used; /* bytes of device + shared allocations bound to this device */
    pa_sd_engine *engines[PA_SD_NUM_ORDINALS][PA_SD_MAX_ENGINES];
};

/* children: live event pools, command lists and command queues created in the context; its
 * destroy refuses while any is left (device.c, as a validating driver does) */
typedef struct pa_sd_context { uint32_t magic; pa_sd_driver *driver; _Atomic uint32_t children; } pa_sd_context;

typedef struct pa_sd_event_pool pa_sd_event_pool;
typedef struct pa_sd_event {
    uint32_t magic;
    pa_sd_event_pool *pool;
    uint32_t index;
    /* Written under the global event lock, read without it (queries): a real driver's query
     * reads the event's memory. `seq` is odd while a writer changes has_ts/ts, so a reader that
     * saw it change retries under the lock. */
    _Atomic bool signaled;
    _Atomic uint32_t seq;
    bool has_ts;               /* a command stored timestamps since the last reset */
    uint32_t waiters;          /* host/engine threads waiting for it (event lock): signals wake only then */
    ze_kernel_timestamp_result_t ts;
} pa_sd_event;

struct pa_sd_event_pool {
    uint32_t magic;
    uint32_t count;
    ze_event_pool_flags_t flags;
    pa_sd_context *ctx;           /* parent: its child count drops at destroy */
    pa_sd_event *events;          /* count slots; slot.magic==PA_SD_MAGIC_EVENT when created */
};

typedef enum pa_sd_cmd_type {
    PA_SD_CMD_KERNEL, PA_SD_CMD_COPY, PA_SD_CMD_COPY_REGION, PA_SD_CMD_FILL, PA_SD_CMD_BARRIER,
    PA_SD_CMD_SIGNAL, PA_SD_CMD_WAIT, PA_SD_CMD_RESET, PA_SD_CMD_WRITE_TS, PA_SD_CMD_QUERY_TS, PA_SD_CMD_NOP,
} pa_sd_cmd_type;

typedef enum pa_sd_builtin {
    PA_SD_BI_NONE = 0, PA_SD_BI_VECTOR_ADD, PA_SD_BI_SAXPY, PA_SD_BI_GEMM, PA_SD_BI_FILL_U32, PA_SD_BI_REDUCE_SUM,
    PA_SD_BI_BUSY_NS, PA_SD_BI_ALLREDUCE, PA_SD_BI_COUNT
} pa_sd_builtin;

typedef struct pa_sd_kernel_def {
    char *name;                    /* as given in the module (mangled names kept) */
    pa_sd_builtin builtin;
    uint32_t spirv_id;             /* SPIR-V result id of the entry point (0 for native) */
    uint32_t nparams;              /* parameters found in SPIR-V; 0 = unknown */
    uint64_t base_ns, ns_per_item; /* cost model of non-time builtins and unknown kernels */
    uint32_t slm_bytes;            /* static shared local memory the kernel declares (localMemSize) */
    struct pa_sd_isa *isa;         /* device ISA (pa_sd_isa.h), shared by reference with commands */
    uint64_t gpu_addr;             /* device address of the first instruction (zexKernelGetBaseAddress) */
} pa_sd_kernel_def;

typedef struct pa_sd_kernel pa_sd_kernel;
typedef struct pa_sd_cmd {
    pa_sd_cmd_type type;
    pa_sd_event *signal;
    uint32_t nwait;
    pa_sd_event **wait;           /* owned array of nwait events */
    union {
        struct {
            pa_sd_kernel_def def;             /* snapshot (name NULL): kernel may be destroyed */
            uint8_t (*args)[PA_SD_ARG_BYTES]; /* owned snapshot of PA_SD_MAX_ARGS args taken at append */
            uint32_t gsize[3];
            ze_group_count_t groups;
            const ze_group_count_t *indirect; /* read at execution when non-NULL */
            const uint32_t *count_ptr;        /* multiple-indirect: run only if slot < *count_ptr */
            uint32_t slot;
        } k;
        struct { void *dst; const void *src; size_t size; } copy;
        struct {
            void *dst; const void *src; ze_copy_region_t dr, sr;
            uint32_t dpitch, dslice, spitch, sslice;
        } region;
        struct { void *dst; uint8_t pattern[PA_SD_MAX_FILL_PATTERN]; size_t psize; size_t size; } fill;
        struct { uint64_t *dst; } wts;
        struct { uint32_t n; pa_sd_event **events; void *dst; size_t *offsets; } qts;
    } u;
} pa_sd_cmd;

typedef struct pa_sd_queue {
    uint32_t magic;
    pa_sd_device *device;
    pa_sd_engine *engine;
    bool synchronous;
    uint64_t submitted, completed; /* protected by engine lock */
    pa_sd_context *ctx;            /* parent: its child count drops at destroy */
} pa_sd_queue;

typedef struct pa_sd_cmdlist {
    uint32_t magic;
    pa_sd_device *device;
    pa_sd_context *ctx;               /* parent: its child count drops at destroy */
    uint32_t ordinal;
    bool immediate, synchronous, closed;
    pa_sd_engine *engine;             /* immediate lists only */
    uint64_t submitted, completed; /* immediate lists only; protected by engine lock */
    pa_sd_cmd **cmds;                 /* regular lists: recorded commands */
    uint32_t ncmds, cap;
    uint32_t inflight;                /* regular lists: executions queued or running (list lock) */
    _Atomic uint64_t appended;        /* appends tried since create (SIMDEV_FAULT_LIST_APPENDS) */
    _Atomic uint64_t barriers;        /* barrier appends tried since create (SIMDEV_FAULT_LIST_BARRIERS) */
} pa_sd_cmdlist;

typedef struct pa_sd_fence {
    uint32_t magic;
    pa_sd_queue *queue;
    bool signaled;                 /* protected by the queue's engine lock */
} pa_sd_fence;

typedef struct pa_sd_module {
    uint32_t magic;
    pa_sd_device *device;
    uint32_t nkernels;
    pa_sd_kernel_def *kernels;
    uint8_t uuid[ZE_MAX_MODULE_UUID_SIZE];
    uint64_t code_base, code_size; /* device address range of the kernels' ISA (native binary) */
} pa_sd_module;

typedef struct pa_sd_build_log { uint32_t magic; char *text; } pa_sd_build_log;

struct pa_sd_kernel {
    uint32_t magic;
    pa_sd_module *module;
    const pa_sd_kernel_def *def;
    uint32_t gsize[3];
    uint32_t nargs;                /* builtins: exact; others: PA_SD_MAX_ARGS */
    uint8_t args[PA_SD_MAX_ARGS][PA_SD_ARG_BYTES];
    uint32_t args_set;             /* bit i: argument i set by zeKernelSetArgumentValue */
    uint32_t nargs_required;       /* builtins and SPIR-V with known parameters: all must be set */
    ze_kernel_indirect_access_flags_t indirect;
};

/* ---- device.c ---- */
/*! pa_sd_driver_get() : the single driver object (created by zeInit); NULL before zeInit. */
PA_SD_HIDDEN pa_sd_driver *pa_sd_driver_get(void);
/*! pa_sd_device_of(h) : device handle -> object, NULL if h is not a live simdev device. */
PA_SD_HIDDEN pa_sd_device *pa_sd_device_of(ze_device_handle_t h);
/*! pa_sd_context_of(h) : context handle -> object, NULL if not a live simdev context. */
PA_SD_HIDDEN pa_sd_context *pa_sd_context_of(ze_context_handle_t h);
/*! pa_sd_context_child(c, d) : adds d (+1 at a child's create, -1 at its destroy) to c's live
 *  children; c NULL: nothing. */
PA_SD_HIDDEN void pa_sd_context_child(pa_sd_context *c, int d);
/*! pa_sd_device_fill_props(dev, p) : fill ze_device_properties_t honouring stype 1.2 units. */
PA_SD_HIDDEN void pa_sd_device_fill_props(const pa_sd_device *dev, ze_device_properties_t *p);
/*! pa_sd_device_pci(dev, out) : PCI address of a device (domain 0, bus 0x10+index, dev 0, fn 0). */
PA_SD_HIDDEN void pa_sd_device_pci(const pa_sd_device *dev, zes_pci_address_t *out);

/* ---- memory.c ---- */
/*! pa_sd_mem_lookup(ptr, base, size, type, dev) : find the allocation containing ptr; 0 if none. */
PA_SD_HIDDEN int pa_sd_mem_lookup(const void *ptr, void **base, size_t *size, ze_memory_type_t *type,
                            pa_sd_device **dev);

/* ---- kernels_builtin.c ---- */
/*! pa_sd_builtin_by_name(name) : builtin id for a builtin name, PA_SD_BI_NONE otherwise. */
PA_SD_HIDDEN pa_sd_builtin pa_sd_builtin_by_name(const char *name);
/*! pa_sd_builtin_name(b) : name of builtin b ("" for PA_SD_BI_NONE). */
PA_SD_HIDDEN const char *pa_sd_builtin_name(pa_sd_builtin b);
/*! pa_sd_builtin_nargs(b) : number of arguments of builtin b; 0 for PA_SD_BI_NONE. */
PA_SD_HIDDEN uint32_t pa_sd_builtin_nargs(pa_sd_builtin b);
/*! pa_sd_builtin_arg_size(b, i) : byte size of argument i of builtin b. */
PA_SD_HIDDEN uint32_t pa_sd_builtin_arg_size(pa_sd_builtin b, uint32_t i);
/*! pa_sd_builtin_run(b, args, items, done_ns) : compute builtin b on args; returns the device ns the
 *  builtin requests by itself (busy_ns) or 0 when the cost model applies. *done_ns: the host ns
 *  (CLOCK_MONOTONIC) its work completed on the device when the host's own clock after the call
 *  would misstate it (an all-reduce: when the last rank arrived, not when this one's worker woke),
 *  else 0. */
PA_SD_HIDDEN uint64_t pa_sd_builtin_run(pa_sd_builtin b, uint8_t (*args)[PA_SD_ARG_BYTES], uint64_t items,
                                        uint64_t *done_ns);
/*! pa_sd_builtin_release_waiters(dl) : wake all-reduce launches waiting at shutdown (skipped
 *  when its lock is not free by the CLOCK_MONOTONIC deadline `dl`). */
PA_SD_HIDDEN void pa_sd_builtin_release_waiters(const struct timespec *dl);

/* ---- collective.c: the all-reduce rendezvous, across devices and processes ---- */
/*! pa_sd_coll_allreduce_f32(buf, n, rank, nranks, key) : elementwise float sum of the `nranks`
 *  launches with the same `key` in the same job (README "Collectives"); waits at most
 *  SIMDEV_ALLREDUCE_TIMEOUT_MS for the peers, then gives up with one message (buf then holds an
 *  undefined mix). Never blocks past shutdown. Returns the CLOCK_MONOTONIC ns at which the
 *  operation completed for every rank (its last rendezvous was complete: the same for all ranks,
 *  however late each one's thread woke), 0 when it did not complete. */
PA_SD_HIDDEN uint64_t pa_sd_coll_allreduce_f32(float *buf, uint32_t n, uint32_t rank, uint32_t nranks, uint64_t key);
/*! pa_sd_coll_wake_all(dl) : makes every waiting rank of this process re-check shutdown now
 *  (skipped when its lock is not free by the CLOCK_MONOTONIC deadline `dl`). */
PA_SD_HIDDEN void pa_sd_coll_wake_all(const struct timespec *dl);
/*! pa_sd_coll_detach_all(dl) : at exit, drops this process from every shared segment (the last
 *  process removes its name); mappings stay, so a late worker never touches unmapped memory. A
 *  lock not free by the CLOCK_MONOTONIC deadline `dl` skips its part (the process stays listed:
 *  the next attach purges dead pids). */
PA_SD_HIDDEN void pa_sd_coll_detach_all(const struct timespec *dl);
/*! pa_sd_coll_atfork(phase) : the child forgets the parent's segments (it is no rank of them). */
PA_SD_HIDDEN void pa_sd_coll_atfork(int phase);

/* ---- module.c ---- */
/*! pa_sd_demangle_base(name, out, cap) : base function name of an Itanium _Z name (simple and
 *  nested cases); copies name itself when it is not mangled. */
PA_SD_HIDDEN void pa_sd_demangle_base(const char *name, char *out, size_t cap);

/*! pa_sd_zexKernelGetBaseAddress(k, base) : Intel extension, device address of a kernel's code. */
PA_SD_HIDDEN ze_result_t ZE_APICALL pa_sd_zexKernelGetBaseAddress(ze_kernel_handle_t h, uint64_t *baseAddress);
/*! pa_sd_kernel_of(h) : kernel handle -> object or NULL. */
PA_SD_HIDDEN pa_sd_kernel *pa_sd_kernel_of(ze_kernel_handle_t h);

/* ---- event.c ---- */
/*! pa_sd_event_of(h) : event handle -> object or NULL. */
PA_SD_HIDDEN pa_sd_event *pa_sd_event_of(ze_event_handle_t h);
/*! pa_sd_event_wait_device(ev) : block an engine worker until ev is signaled or shutdown. */
PA_SD_HIDDEN void pa_sd_event_wait_device(pa_sd_event *ev);
/*! pa_sd_event_signal_device(ev, start, end) : store timestamps (ticks, unmasked) and signal. */
PA_SD_HIDDEN void pa_sd_event_signal_device(pa_sd_event *ev, uint64_t start_ticks, uint64_t end_ticks);
/*! pa_sd_event_reset_device(ev) : reset from a command (AppendEventReset). */
PA_SD_HIDDEN void pa_sd_event_reset_device(pa_sd_event *ev);
/*! pa_sd_event_get_ts(ev, out) : 1 and the stored timestamps if signaled with timestamps. */
PA_SD_HIDDEN int pa_sd_event_get_ts(pa_sd_event *ev, ze_kernel_timestamp_result_t *out);
/*! pa_sd_events_wake_all(dl) : wake every waiter (shutdown; skipped when the events' lock is
 *  not free by the CLOCK_MONOTONIC deadline `dl`). */
PA_SD_HIDDEN void pa_sd_events_wake_all(const struct timespec *dl);

/* ---- cmdlist.c ---- */
/*! pa_sd_cmd_free(c) : free a command and its owned arrays. */
PA_SD_HIDDEN void pa_sd_cmd_free(pa_sd_cmd *c);
/*! pa_sd_list_of(h) : command list handle -> object or NULL. */
PA_SD_HIDDEN pa_sd_cmdlist *pa_sd_list_of(ze_command_list_handle_t h);

/* ---- queue.c ---- */
/*! pa_sd_queue_desc_valid(desc) : mode and priority are values of their enumerations. */
PA_SD_HIDDEN bool pa_sd_queue_desc_valid(const ze_command_queue_desc_t *desc);

/* ---- queue_engine.c ---- */
/*! pa_sd_engine_get(dev, ordinal, index) : the engine, created (worker thread started) on first use;
 *  NULL for an ordinal/index outside the device's queue groups. */
PA_SD_HIDDEN pa_sd_engine *pa_sd_engine_get(pa_sd_device *dev, uint32_t ordinal, uint32_t index);
/*! pa_sd_engine_submit_one(eng, c, list) : run command c (ownership passes) on eng after all earlier
 *  work; list->completed advances when done. Returns 0, or -1 when out of memory. */
PA_SD_HIDDEN int pa_sd_engine_submit_one(pa_sd_engine *eng, pa_sd_cmd *c, pa_sd_cmdlist *list);
/*! pa_sd_engine_wait_list(list, timeout_ns) : wait until an immediate list's work is done;
 *  ZE_RESULT_SUCCESS or ZE_RESULT_NOT_READY on timeout (UINT64_MAX = infinite, 0 = poll). */
PA_SD_HIDDEN ze_result_t pa_sd_engine_wait_list(pa_sd_cmdlist *list, uint64_t timeout_ns);
/*! pa_sd_shutting_down() : true once the library destructor started; waits must give up. */
PA_SD_HIDDEN bool pa_sd_shutting_down(void);
/*! pa_sd_deadline(timeout_ns, ts) : absolute CLOCK_MONOTONIC deadline for a relative timeout. */
PA_SD_HIDDEN void pa_sd_deadline(uint64_t timeout_ns, struct timespec *ts);
/*! pa_sd_event_atfork(phase) / pa_sd_mem_atfork(phase) / pa_sd_builtin_atfork(phase) : fork
 *  handlers of event.c, memory.c and kernels_builtin.c: PA_SD_FORK_PREPARE takes the file's locks,
 *  PA_SD_FORK_PARENT releases them, PA_SD_FORK_CHILD releases them and re-creates the conditions
 *  (the parent's waiters do not exist in the child). */
enum { PA_SD_FORK_PREPARE, PA_SD_FORK_PARENT, PA_SD_FORK_CHILD };
PA_SD_HIDDEN void pa_sd_event_atfork(int phase);
PA_SD_HIDDEN void pa_sd_mem_atfork(int phase);
PA_SD_HIDDEN void pa_sd_builtin_atfork(int phase);

/* ---- handles.c ---- */
/*! pa_sd_handle_add(h) : register the address of a new object that a destroy call frees; 0, or -1
 *  when out of memory (the create must then fail with ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY). */
PA_SD_HIDDEN int pa_sd_handle_add(const void *h);
/*! pa_sd_handle_remove(h) : unregister h before its object is freed (absent h: no-op). */
PA_SD_HIDDEN void pa_sd_handle_remove(const void *h);
/*! pa_sd_handle_live(h) : h is a registered address, so reading its magic tag is safe. */
PA_SD_HIDDEN bool pa_sd_handle_live(const void *h);
/*! pa_sd_handle_atfork(phase) : fork handler of the registry lock (phases as above). */
PA_SD_HIDDEN void pa_sd_handle_atfork(int phase);
/*! pa_sd_lock_until(m, dl) : locks `m` unless the CLOCK_MONOTONIC deadline `dl` passes first
 *  (0 locked, else an errno: ETIMEDOUT, EDEADLK). The library destructor's locks: its thread may
 *  be a signal handler's exit() that interrupted a thread holding one of them, or holding the
 *  malloc lock a simdev worker waits for while it holds one (without a bound, exit hung). */
PA_SD_HIDDEN int pa_sd_lock_until(pthread_mutex_t *m, const struct timespec *dl);
/*! pa_sd_cond_init_mono(cv) : condition variable timed on CLOCK_MONOTONIC. */
PA_SD_HIDDEN void pa_sd_cond_init_mono(pthread_cond_t *cv);

/* ---- DDI entry points (defined across files, collected in ddi_tables.c) ---- */
#define PA_SD_API PA_SD_HIDDEN ze_result_t ZE_APICALL
#include "pa_sd_api.h"

#endif /* PA_SD_INTERNAL_H */
