/* sd_internal.h - objects and internal interfaces shared by the simdev driver's source files. */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simdev.h"

#define SD_HIDDEN __attribute__((visibility("hidden")))
#define SD_MAX_DEVICES 16u
#define SD_NUM_ORDINALS 2u
#define SD_MAX_ENGINES 4u /* per ordinal */
#define SD_MAX_ARGS 32u
#define SD_ARG_BYTES 64u

/* Magic tags at the start of every handle so a wrong or stale handle is rejected, not followed. */
enum {
    SD_MAGIC_DRIVER = 0x53447244u, SD_MAGIC_DEVICE = 0x53446576u, SD_MAGIC_CONTEXT = 0x53446374u,
    SD_MAGIC_QUEUE = 0x53447175u, SD_MAGIC_LIST = 0x53446c73u, SD_MAGIC_FENCE = 0x53446663u,
    SD_MAGIC_POOL = 0x5344706cu, SD_MAGIC_EVENT = 0x53446576u ^ 0xffu, SD_MAGIC_MODULE = 0x53446d64u,
    SD_MAGIC_KERNEL = 0x53446b6eu, SD_MAGIC_BUILDLOG = 0x5344626cu, SD_MAGIC_DEAD = 0xdeadbeefu,
};

/* ---- configuration (config.c) ---- */
typedef struct sd_config {
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
} sd_config;

/*! sd_config_get() : the process-wide configuration, parsed once from SIMDEV_* on first use. */
SD_HIDDEN const sd_config *sd_config_get(void);

/* ---- device clock (clock.c) ---- */
/*! sd_clock_host_ns() : CLOCK_MONOTONIC in ns. */
SD_HIDDEN uint64_t sd_clock_host_ns(void);
/*! sd_clock_ticks_at(host_ns) : unmasked device ticks at a host instant (README "Clock"). */
SD_HIDDEN uint64_t sd_clock_ticks_at(uint64_t host_ns);
/*! sd_clock_mask() : mask of SIMDEV_TIMESTAMP_BITS valid bits (all ones for 64). */
SD_HIDDEN uint64_t sd_clock_mask(void);
/*! sd_clock_now_ticks() : masked device ticks now. */
SD_HIDDEN uint64_t sd_clock_now_ticks(void);
/*! sd_clock_wait_until(host_ns) : sleep/spin until CLOCK_MONOTONIC >= host_ns; returns early on
 *  shutdown. Sleeps coarse, spins the last ~60 us for precision. */
SD_HIDDEN void sd_clock_wait_until(uint64_t host_ns);

/* ---- objects ---- */
typedef struct sd_engine sd_engine;
typedef struct sd_device sd_device;

typedef struct sd_driver {
    uint32_t magic;
    uint32_t ndevices;
    sd_device *devices[SD_MAX_DEVICES];
} sd_driver;

struct sd_device {
    uint32_t magic;
    uint32_t index;
    sd_driver *driver;
    _Atomic uint64_t mem_used; /* bytes of device + shared allocations bound to this device */
    sd_engine *engines[SD_NUM_ORDINALS][SD_MAX_ENGINES];
};

typedef struct sd_context { uint32_t magic; sd_driver *driver; } sd_context;

typedef struct sd_event_pool sd_event_pool;
typedef struct sd_event {
    uint32_t magic;
    sd_event_pool *pool;
    uint32_t index;
    bool signaled;             /* protected by the global event lock */
    bool has_ts;               /* a command stored timestamps since the last reset */
    ze_kernel_timestamp_result_t ts;
} sd_event;

struct sd_event_pool {
    uint32_t magic;
    uint32_t count;
    ze_event_pool_flags_t flags;
    sd_event *events;          /* count slots; slot.magic==SD_MAGIC_EVENT when created */
};

typedef enum sd_cmd_type {
    SD_CMD_KERNEL, SD_CMD_COPY, SD_CMD_COPY_REGION, SD_CMD_FILL, SD_CMD_BARRIER,
    SD_CMD_SIGNAL, SD_CMD_WAIT, SD_CMD_RESET, SD_CMD_WRITE_TS, SD_CMD_QUERY_TS, SD_CMD_NOP,
} sd_cmd_type;

typedef enum sd_builtin {
    SD_BI_NONE = 0, SD_BI_VECTOR_ADD, SD_BI_SAXPY, SD_BI_GEMM, SD_BI_FILL_U32, SD_BI_REDUCE_SUM,
    SD_BI_BUSY_NS, SD_BI_ALLREDUCE, SD_BI_COUNT
} sd_builtin;

typedef struct sd_kernel_def {
    char *name;                    /* as given in the module (mangled names kept) */
    sd_builtin builtin;
    uint32_t spirv_id;             /* SPIR-V result id of the entry point (0 for native) */
    uint32_t nparams;              /* parameters found in SPIR-V; 0 = unknown */
    uint64_t base_ns, ns_per_item; /* cost model of non-time builtins and unknown kernels */
} sd_kernel_def;

typedef struct sd_kernel sd_kernel;
typedef struct sd_cmd {
    sd_cmd_type type;
    sd_event *signal;
    uint32_t nwait;
    sd_event **wait;           /* owned array of nwait events */
    union {
        struct {
            sd_kernel_def def;             /* snapshot (name NULL): kernel may be destroyed */
            uint8_t (*args)[SD_ARG_BYTES]; /* owned snapshot of SD_MAX_ARGS args taken at append */
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
        struct { void *dst; uint8_t pattern[256]; size_t psize; size_t size; } fill;
        struct { uint64_t *dst; } wts;
        struct { uint32_t n; sd_event **events; void *dst; size_t *offsets; } qts;
    } u;
} sd_cmd;

typedef struct sd_queue {
    uint32_t magic;
    sd_device *device;
    sd_engine *engine;
    bool synchronous;
    uint64_t submitted, completed; /* protected by engine lock */
} sd_queue;

typedef struct sd_cmdlist {
    uint32_t magic;
    sd_device *device;
    uint32_t ordinal;
    bool immediate, synchronous, closed;
    sd_engine *engine;             /* immediate lists only */
    uint64_t submitted, completed; /* immediate lists only; protected by engine lock */
    sd_cmd **cmds;                 /* regular lists: recorded commands */
    uint32_t ncmds, cap;
} sd_cmdlist;

typedef struct sd_fence {
    uint32_t magic;
    sd_queue *queue;
    bool signaled;                 /* protected by the queue's engine lock */
} sd_fence;

typedef struct sd_module {
    uint32_t magic;
    sd_device *device;
    uint32_t nkernels;
    sd_kernel_def *kernels;
    uint8_t uuid[ZE_MAX_MODULE_UUID_SIZE];
} sd_module;

typedef struct sd_build_log { uint32_t magic; char *text; } sd_build_log;

struct sd_kernel {
    uint32_t magic;
    sd_module *module;
    const sd_kernel_def *def;
    uint32_t gsize[3];
    uint32_t nargs;                /* builtins: exact; others: SD_MAX_ARGS */
    uint8_t args[SD_MAX_ARGS][SD_ARG_BYTES];
    ze_kernel_indirect_access_flags_t indirect;
};

/* ---- device.c ---- */
/*! sd_driver_get() : the single driver object (created by zeInit); NULL before zeInit. */
SD_HIDDEN sd_driver *sd_driver_get(void);
/*! sd_device_of(h) : device handle -> object, NULL if h is not a live simdev device. */
SD_HIDDEN sd_device *sd_device_of(ze_device_handle_t h);
/*! sd_context_of(h) : context handle -> object, NULL if not a live simdev context. */
SD_HIDDEN sd_context *sd_context_of(ze_context_handle_t h);
/*! sd_device_fill_props(dev, p) : fill ze_device_properties_t honouring stype 1.2 units. */
SD_HIDDEN void sd_device_fill_props(const sd_device *dev, ze_device_properties_t *p);
/*! sd_device_pci(dev, out) : PCI address of a device (domain 0, bus 0x10+index, dev 0, fn 0). */
SD_HIDDEN void sd_device_pci(const sd_device *dev, zes_pci_address_t *out);

/* ---- memory.c ---- */
/*! sd_mem_lookup(ptr, base, size, type, dev) : find the allocation containing ptr; 0 if none. */
SD_HIDDEN int sd_mem_lookup(const void *ptr, void **base, size_t *size, ze_memory_type_t *type,
                            sd_device **dev);

/* ---- kernels_builtin.c ---- */
/*! sd_builtin_by_name(name) : builtin id for a builtin name, SD_BI_NONE otherwise. */
SD_HIDDEN sd_builtin sd_builtin_by_name(const char *name);
/*! sd_builtin_nargs(b) : number of arguments of builtin b; 0 for SD_BI_NONE. */
SD_HIDDEN uint32_t sd_builtin_nargs(sd_builtin b);
/*! sd_builtin_arg_size(b, i) : byte size of argument i of builtin b. */
SD_HIDDEN uint32_t sd_builtin_arg_size(sd_builtin b, uint32_t i);
/*! sd_builtin_run(b, args, items) : compute builtin b on args; returns the device ns the builtin
 *  requests by itself (busy_ns) or 0 when the cost model applies. */
SD_HIDDEN uint64_t sd_builtin_run(sd_builtin b, uint8_t (*args)[SD_ARG_BYTES], uint64_t items);
/*! sd_builtin_release_waiters() : wake all-reduce launches waiting at shutdown. */
SD_HIDDEN void sd_builtin_release_waiters(void);

/* ---- module.c ---- */
/*! sd_demangle_base(name, out, cap) : base function name of an Itanium _Z name (simple and
 *  nested cases); copies name itself when it is not mangled. */
SD_HIDDEN void sd_demangle_base(const char *name, char *out, size_t cap);

/*! sd_kernel_of(h) : kernel handle -> object or NULL. */
SD_HIDDEN sd_kernel *sd_kernel_of(ze_kernel_handle_t h);

/* ---- event.c ---- */
/*! sd_event_of(h) : event handle -> object or NULL. */
SD_HIDDEN sd_event *sd_event_of(ze_event_handle_t h);
/*! sd_event_wait_device(ev) : block an engine worker until ev is signaled or shutdown. */
SD_HIDDEN void sd_event_wait_device(sd_event *ev);
/*! sd_event_signal_device(ev, start, end) : store timestamps (ticks, unmasked) and signal. */
SD_HIDDEN void sd_event_signal_device(sd_event *ev, uint64_t start_ticks, uint64_t end_ticks);
/*! sd_event_reset_device(ev) : reset from a command (AppendEventReset). */
SD_HIDDEN void sd_event_reset_device(sd_event *ev);
/*! sd_event_get_ts(ev, out) : 1 and the stored timestamps if signaled with timestamps. */
SD_HIDDEN int sd_event_get_ts(sd_event *ev, ze_kernel_timestamp_result_t *out);
/*! sd_events_wake_all() : wake every waiter (shutdown). */
SD_HIDDEN void sd_events_wake_all(void);

/* ---- cmdlist.c ---- */
/*! sd_cmd_free(c) : free a command and its owned arrays. */
SD_HIDDEN void sd_cmd_free(sd_cmd *c);
/*! sd_list_of(h) : command list handle -> object or NULL. */
SD_HIDDEN sd_cmdlist *sd_list_of(ze_command_list_handle_t h);

/* ---- queue_engine.c ---- */
/*! sd_engine_get(dev, ordinal, index) : the engine, created (worker thread started) on first use;
 *  NULL for an ordinal/index outside the device's queue groups. */
SD_HIDDEN sd_engine *sd_engine_get(sd_device *dev, uint32_t ordinal, uint32_t index);
/*! sd_engine_submit_one(eng, c, list) : run command c (ownership passes) on eng after all earlier
 *  work; list->completed advances when done. Returns 0, or -1 when out of memory. */
SD_HIDDEN int sd_engine_submit_one(sd_engine *eng, sd_cmd *c, sd_cmdlist *list);
/*! sd_engine_wait_list(list, timeout_ns) : wait until an immediate list's work is done;
 *  ZE_RESULT_SUCCESS or ZE_RESULT_NOT_READY on timeout (UINT64_MAX = infinite, 0 = poll). */
SD_HIDDEN ze_result_t sd_engine_wait_list(sd_cmdlist *list, uint64_t timeout_ns);
/*! sd_shutting_down() : true once the library destructor started; waits must give up. */
SD_HIDDEN bool sd_shutting_down(void);
/*! sd_deadline(timeout_ns, ts) : absolute CLOCK_MONOTONIC deadline for a relative timeout. */
SD_HIDDEN void sd_deadline(uint64_t timeout_ns, struct timespec *ts);
/*! sd_cond_init_mono(cv) : condition variable timed on CLOCK_MONOTONIC. */
SD_HIDDEN void sd_cond_init_mono(pthread_cond_t *cv);

/* ---- DDI entry points (defined across files, collected in ddi_tables.c) ---- */
#define SD_API SD_HIDDEN ze_result_t ZE_APICALL
#include "sd_api.h"

#endif /* SD_INTERNAL_H */
