/* ze_internal.h - what the Level Zero source files share: loader entry points, handle
 * tables, in-flight operations, the per-API hooks. Not used outside collector/ze_*.c. */
#ifndef PA_ZE_INTERNAL_H
#define PA_ZE_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include <level_zero/ze_api.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/layers/zel_tracing_register_cb.h>

#include "../common/pa_export.h"
#include "collector.h"
#include "../common/pa_record.h"
#include "ze.h"
#include "../common/pa_ze_api_ids.h"

/* ---- generated table (ze_table.c) ---- */
typedef void (*pa_ze_fn_t)(void);
typedef struct pa_ze_api_entry {
    const char *name;      /* "zeCommandListAppendLaunchKernel" */
    const char *reg_name;  /* "zelTracerCommandListAppendLaunchKernelRegisterCallback" */
    pa_ze_fn_t pro, epi;   /* typed callbacks, cast */
} pa_ze_api_entry_t;
extern const pa_ze_api_entry_t pa_ze_api_table[PA_ZE_API_COUNT];


/* ---- the loader-entry interception path (ze_entry.c, ze_entry_gen.c) ---- */
/* One ze API: the loader's exported function and, when its code is a plain dispatch, where
 * its dispatch-table entry lives (*ctxvar + off). */
typedef struct pa_ze_slot {
    pa_ze_fn_t loader;   /* libze_loader's zeX; NULL until resolved */
    void **ctxvar;       /* &ze_lib::context of the loader; NULL = call `loader`, always recorded */
    uintptr_t off;       /* byte offset of the entry in *ctxvar */
} pa_ze_slot_t;
extern PA_HIDDEN pa_ze_slot_t pa_ze_slots[PA_ZE_API_COUNT];
extern PA_HIDDEN _Atomic int pa_ze_entry_on;          /* 1 once the entry path records (after the app's zeInit) */
extern const pa_ze_fn_t pa_ze_entry_fns[PA_ZE_API_COUNT]; /* the agent's exported zeX */
extern const uint8_t pa_ze_entry_nargs[PA_ZE_API_COUNT];  /* their integer-class argument counts */
extern const uint8_t pa_ze_entry_narrow[PA_ZE_API_COUNT]; /* bit i: register argument i <= 32 bits */
enum pa_ze_path { PA_ZE_PATH_NONE = 0, PA_ZE_PATH_ENTRY = 1, PA_ZE_PATH_TRACER = 2 };
enum pa_ze_why { PA_ZE_WHY_NONE = 0, PA_ZE_WHY_FORCED, PA_ZE_WHY_LAYER_ENV, PA_ZE_WHY_NOT_BOUND,
                 PA_ZE_WHY_UNKNOWN_LOADER, PA_ZE_WHY_ARCH,
                 PA_ZE_WHY_NO_GPU /* path NONE: the application's zeInit asked for no GPU driver */ };
extern int pa_ze_path, pa_ze_path_reason;   /* set by pa_ze_entry_choose() */

/*! pa_ze_entry_choose() : decides the path for loader `lib` before zeInit (policy in
 *  ze_entry.c); fills the slots when it is the entry path. Returns 1 entry, 0 tracing layer. */
int pa_ze_entry_choose(void *lib);
/*! pa_ze_entry_enable() : the entry points record from now on (after the application's zeInit). */
void pa_ze_entry_enable(void);
/*! pa_ze_entry_resolve() : slow path of pa_ze_entry_loader(): finds the loader's function. */
pa_ze_fn_t pa_ze_entry_resolve(int id);
/*! pa_ze_init_first() : the application's zeInit(flags) while the attach is pending: the
 *  loader's zeInit with the application's flags, its result returned as is (errno as the loader
 *  left it); on success with GPU drivers in the flags (0 or ZE_INIT_FLAG_GPU_ONLY) the agent
 *  attaches (this call is recorded), without them (ZE_INIT_FLAG_VPU_ONLY) it does not and the
 *  summary says so. The agent itself never initializes Level Zero. */
ze_result_t pa_ze_init_first(ze_init_flags_t flags);
/*! pa_ze_init_late() : a zeContextCreate/zeDeviceGet of the application succeeded while the
 *  attach is pending: Level Zero was initialized without the agent seeing it (zeInitDrivers,
 *  loader 1.18+, which the agent does not intercept): attaches now (errno kept). */
void pa_ze_init_late(void);
/* 1 once the attach ran or cannot run: zeInit then takes the recorded path. */
extern int pa_ze_init_seen;
/*! pa_ze_path_text() : summary wording of a path and its reason. */
const char *pa_ze_path_text(int path, int reason);
/*! pa_ze_real_dlsym() / pa_ze_real_dlopen() : glibc's functions (the exported ones are hooks). */
void *pa_ze_real_dlsym(void *h, const char *name);
void *pa_ze_real_dlopen(const char *file, int mode);

/* ---- the loader's teardown windows (ze_window.c) ----
 * A thread is in a window while it may read what the loader's ELF destructors free (ze_lib::context
 * and its dispatch tables) or calls the loader for the agent: from an entry point's flag check to
 * its forwarded call (the call itself is not in it), and around the agent's own loader calls
 * (pa_ze_loader_enter). The loader's teardown turns the flags off, then waits, bounded, until no
 * thread is in one (pa_ze_win_drain). One word per thread in a line of its own; the thread's side
 * is plain loads and stores (no atomic read-modify-write), the teardown's membarrier() orders them. */
typedef struct pa_ze_win {
    _Alignas(64) _Atomic uint32_t depth; /* windows this thread is in (nested: a signal handler's
                                            call, a hook's own loader call inside an entry's) */
    _Atomic int32_t owner;               /* gettid() of the slot's thread, 0 = free */
} pa_ze_win_t;
extern __thread pa_ze_win_t *pa_ze_win_self __attribute__((tls_model("initial-exec")));
/* 1 until the loader's teardown begins (ze_attach.c): the agent's own loader calls are allowed */
extern _Atomic int pa_ze_loader_live;
/*! pa_ze_win_claim() : the calling thread's first window: takes it a slot (never NULL; errno kept). */
pa_ze_win_t *pa_ze_win_claim(void);
/*! pa_ze_win_arm() : registers the process for membarrier's expedited barrier (at attach; a
 *  fork child again). Without it the drain falls back to a fence and a 1 ms pause. */
void pa_ze_win_arm(void);
/*! pa_ze_win_after_fork_child() : (the ze source's fork_child) the forking thread keeps its slot. */
void pa_ze_win_after_fork_child(void);
/*! pa_ze_win_drain() : (the loader's teardown, flags already off) waits until no other live
 *  thread is in a window, at most `budget_ns` in all. Returns the threads still in one then;
 *  *waited = the threads it found in one (and waited for). */
int pa_ze_win_drain(uint64_t budget_ns, int *waited);

/*! pa_ze_win_enter() / pa_ze_win_leave() : the calling thread enters / leaves a window. The
 *  mark is stored before any later load of a flag (compiler order here, the CPU's by the
 *  drain's membarrier); the leave is a release store: the reads made inside come before it. */
static inline __attribute__((always_inline)) void pa_ze_win_enter(void)
{
    pa_ze_win_t *w = pa_ze_win_self;
    if (PA_UNLIKELY(w == NULL))
        w = pa_ze_win_claim();
    atomic_store_explicit(&w->depth, atomic_load_explicit(&w->depth, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
}
static inline __attribute__((always_inline)) void pa_ze_win_leave(void)
{
    pa_ze_win_t *w = pa_ze_win_self;
    atomic_store_explicit(&w->depth, atomic_load_explicit(&w->depth, memory_order_relaxed) - 1,
                          memory_order_release);
}

/*! pa_ze_loader_enter() : before the agent's own loader calls outside an entry point's window
 *  (hooks, the exit flush): 1 = the loader is alive until pa_ze_loader_leave(); 0 = its teardown
 *  began: make no call (and do not leave). */
static inline int pa_ze_loader_enter(void)
{
    pa_ze_win_enter();
    if (PA_LIKELY(atomic_load_explicit(&pa_ze_loader_live, memory_order_acquire)))
        return 1;
    pa_ze_win_leave();
    return 0;
}
static inline void pa_ze_loader_leave(void) { pa_ze_win_leave(); }

/*! pa_ze_entry_next() : the function a recorded call of `id` goes to, NULL when the call must
 *  not be recorded (tracing-layer path, not attached, the loader's teardown began, or a NULL
 *  dispatch entry: then pa_ze_entry_loader() gives the loader's answer). Non-NULL: the caller is
 *  in the entry's window and calls pa_ze_entry_leave() right before the forwarded call. */
static inline pa_ze_fn_t pa_ze_entry_next(int id)
{
    pa_ze_win_enter();
    if (PA_LIKELY(atomic_load_explicit(&pa_ze_entry_on, memory_order_acquire))) {
        const pa_ze_slot_t *s = &pa_ze_slots[id];
        if (PA_UNLIKELY(s->ctxvar == NULL))
            return s->loader;
        const char *ctx = *(const char *volatile *)s->ctxvar;
        pa_ze_fn_t f = ctx ? *(pa_ze_fn_t const volatile *)(ctx + s->off) : NULL;
        if (PA_LIKELY(f != NULL))
            return f;
    }
    pa_ze_win_leave();
    return NULL;
}

/*! pa_ze_entry_leave() : the forwarded call of an entry point begins: its window ends. */
static inline __attribute__((always_inline)) void pa_ze_entry_leave(void) { pa_ze_win_leave(); }

/*! pa_ze_entry_loader() : the loader's own zeX (a function returning UNINITIALIZED when there
 *  is no loader). */
static inline pa_ze_fn_t pa_ze_entry_loader(int id)
{
    pa_ze_fn_t f = __atomic_load_n(&pa_ze_slots[id].loader, __ATOMIC_ACQUIRE);
    return PA_LIKELY(f != NULL) ? f : pa_ze_entry_resolve(id);
}

/* ---- loader entry points, resolved with dlsym at attach (ze_attach.c) ---- */
#define PA_ZE_FN(n) __typeof__(&n) n
typedef struct pa_ze_fns {
    PA_ZE_FN(zeInit); PA_ZE_FN(zeDriverGet); PA_ZE_FN(zeDeviceGet);
    PA_ZE_FN(zeDeviceGetProperties); PA_ZE_FN(zeDeviceGetComputeProperties);
    PA_ZE_FN(zeDeviceGetMemoryProperties); PA_ZE_FN(zeDeviceGetCommandQueueGroupProperties);
    PA_ZE_FN(zeDeviceGetGlobalTimestamps); PA_ZE_FN(zeDriverGetApiVersion);
    PA_ZE_FN(zeEventPoolCreate); PA_ZE_FN(zeEventCreate); PA_ZE_FN(zeEventHostReset);
    PA_ZE_FN(zeEventQueryStatus); PA_ZE_FN(zeEventQueryKernelTimestamp);
    PA_ZE_FN(zeEventHostSynchronize); PA_ZE_FN(zeMemGetAllocProperties);
    PA_ZE_FN(zelTracerCreate); PA_ZE_FN(zelTracerSetEnabled);
    /* timestamp capture on the device (ze_ops.c: regular lists re-executed, device resets) */
    PA_ZE_FN(zeMemAllocHost); PA_ZE_FN(zeCommandListCreate); PA_ZE_FN(zeCommandListClose);
    PA_ZE_FN(zeCommandListDestroy); PA_ZE_FN(zeCommandListAppendQueryKernelTimestamps);
    PA_ZE_FN(zeCommandListAppendEventReset); PA_ZE_FN(zeCommandListAppendBarrier);
    /* the application's barrier event when the barrier after its barrier cannot be appended */
    PA_ZE_FN(zeCommandListAppendSignalEvent); PA_ZE_FN(zeEventHostSignal);
    PA_ZE_FN(zeKernelGetProperties);  /* localMemSize of each kernel, once at create */
    /* the agent's pools of a context the application destroys (ze_ops.c) */
    PA_ZE_FN(zeEventDestroy); PA_ZE_FN(zeEventPoolDestroy); PA_ZE_FN(zeMemFree);
} pa_ze_fns_t;
extern pa_ze_fns_t pa_ze;
extern _Atomic int pa_ze_attached;

/* ---- devices (ze_attach.c) ---- */
#define PA_ZE_MAX_DEVICES 16
typedef struct pa_ze_dev {
    ze_device_handle_t h;
    pa_ze_clock_sync_t clk;   /* current clock; refreshed by pa_ze_dev_clock() */
    _Atomic int clock_lock;   /* 1 while a thread refreshes the reference */
    _Atomic uint64_t clock_err_ns; /* the largest error bound (half the read window, ns) of any
                                      reference a conversion used: the DB's ze_clock_pair_err_ns */
} pa_ze_dev_t;
extern pa_ze_dev_t pa_ze_devs[PA_ZE_MAX_DEVICES];
extern uint32_t pa_ze_ndevs;

/*! pa_ze_emit_devices() : emits the device attribute records once (first traced call). */
void pa_ze_emit_devices(void);
/*! pa_ze_dev_index() : index of device handle `h` in enumeration order, UINT32_MAX unknown. */
uint32_t pa_ze_dev_index(ze_device_handle_t h);
/*! pa_ze_dev_clock() : a current clock (reference at most 50 ms old) of device `i`; copies it to *out. */
void pa_ze_dev_clock(uint32_t i, pa_ze_clock_t *out);

/* ---- handle tables (ze_tables.c): insert on create (slow path, mutex), lock-free lookup ---- */
/* IPC_POOL/NOTS_EVENT: app event pools created or opened with ZE_EVENT_POOL_FLAG_IPC (which
 * cannot get KERNEL_TIMESTAMP, ze_api.h) and their events, whose ops are counted uncollected */
enum pa_ze_obj { PA_ZE_OBJ_FREE = 0, PA_ZE_OBJ_LIST, PA_ZE_OBJ_QUEUE, PA_ZE_OBJ_KERNEL,
                 PA_ZE_OBJ_IPC_POOL, PA_ZE_OBJ_NOTS_EVENT };
#define PA_ZE_CMD_NONE UINT32_MAX
#define PA_ZE_SLM_ARGS 32            /* kernel arguments tracked for dynamic shared local memory */
typedef struct pa_ze_obj_info {
    int type;                    /* enum pa_ze_obj */
    void *context;
    uint32_t device;             /* index */
    uint32_t engine;             /* ordinal << 16 | index */
    int immediate;               /* lists */
    const char *name;            /* kernels: strdup'd, never freed (ops may still point at it) */
    void *module;                /* kernels: the module it was created from */
    uint16_t name_len;
    _Atomic uint32_t gsize[3];   /* kernels: zeKernelSetGroupSize */
    uint32_t slm_static;         /* kernels: localMemSize (zeKernelGetProperties at create) */
    _Atomic uint32_t slm_arg[PA_ZE_SLM_ARGS]; /* kernels: bytes of local-memory argument i, 0 = not one */
    uint32_t ncmds;              /* regular lists: appended commands */
    uint32_t cmd_head, cmd_tail; /* regular lists: command chain (indices, PA_ZE_CMD_NONE) */
    _Atomic int exec_busy;       /* regular lists: 1 while one thread plans its capture (ze_ops.c) */
    uint32_t serial;             /* lists: per-session id 1, 2, ... (the Graph ID), never reused */
    _Atomic uint32_t fl_direct;  /* regular lists: pending flights polling the list's own agent events */
    _Atomic uint32_t fl_cap;     /* regular lists: pending captured flights (a harvest list may wait on them) */
} pa_ze_obj_info_t;

/*! pa_ze_obj_put() : creates/replaces the entry of handle `h`; NULL when the table is full. */
pa_ze_obj_info_t *pa_ze_obj_put(const void *h, int type);
/*! pa_ze_obj_get() : the entry of `h`, NULL when unknown. Lock-free. */
pa_ze_obj_info_t *pa_ze_obj_get(const void *h);
/*! pa_ze_obj_del() : forgets `h`. */
void pa_ze_obj_del(const void *h);
/*! pa_ze_obj_ctx_live() : command lists and queues of the application still known in context
 *  `ctx` (created, not destroyed). Scans the whole table: for zeContextDestroy only. */
uint32_t pa_ze_obj_ctx_live(const void *ctx);

/* ---- the application's events -> their pools (ze_tables.c): lock-free, 32768 slots ---- */
/*! pa_ze_evmap_put() : event `ev` of pool `pool` (zeEventCreate); a handle already there gets the
 *  new pool. Returns 0, -1 when its part of the table is full (the event stays unknown). */
int pa_ze_evmap_put(const void *ev, const void *pool);
/*! pa_ze_evmap_get() : the pool of `ev`, NULL when unknown (not seen created, or table full). */
const void *pa_ze_evmap_get(const void *ev);
/*! pa_ze_evmap_del() : forgets `ev` (zeEventDestroy). */
void pa_ze_evmap_del(const void *ev);
/*! pa_ze_evmap_del_pool() : forgets every event of `pool` (zeEventPoolDestroy: its events die
 *  with it); scans the whole table. Returns the events forgotten. */
uint32_t pa_ze_evmap_del_pool(const void *pool);

/* ---- operations (ze_ops.c) ---- */
/* A command appended to a list: the data of one device operation. */
typedef struct pa_ze_cmd {
    pa_ze_op_t op;               /* corr/api times filled per execution */
    const char *name;            /* kernel name (owned by the kernel table) */
    ze_event_handle_t event;     /* signal event: the app's or the agent's */
    void *pool;                  /* agent pool the event came from, NULL = app event */
    uint32_t ev_index;           /* index in that pool */
    uint32_t next;               /* chain of a regular list */
    /* current execution's capture (regular lists, agent events): the agent event of `cap_pool`
     * the harvest list signals once it copied `event`'s timestamps; NULL = not captured */
    void *cap_pool;
    uint32_t cap_index;
    int32_t cap_harvest;
    /* flight slot of the last execution that polls `event` itself (direct), PA_ZE_CMD_NONE none:
     * a re-execution finds it there to capture it first (checked against the flight's fields) */
    uint32_t fl_idx;
} pa_ze_cmd_t;

/* ---- harvest lists (ze_harvest.c): the agent's command lists that copy a regular list's
 * timestamps at each execution; a list is destroyed when its last reference is dropped ---- */
/*! pa_ze_harvest_put() : a slot for `list` holding `refs` references (the caller's); -1 when the
 *  table (256 slots) is full. */
int pa_ze_harvest_put(ze_command_list_handle_t list, int refs);
/*! pa_ze_harvest_set() : sets slot's count to `refs`; only while the caller holds every one. */
void pa_ze_harvest_set(int slot, int refs);
/*! pa_ze_harvest_ref() : one more reference on `slot` (the caller already holds one). */
void pa_ze_harvest_ref(int slot);
/*! pa_ze_harvest_drop() : drops one reference on `slot` (-1: none, NULL). Returns the slot's
 *  list when that was the last one (the caller destroys it; the slot is free again), else NULL. */
ze_command_list_handle_t pa_ze_harvest_drop(int slot);

/*! pa_ze_ops_prologue()/pa_ze_ops_epilogue() : hooks of the APIs that touch device activity
 *  (append, execute, reset, synchronize, create/destroy); no-op for the others. */
void pa_ze_ops_prologue(int api, void *params, uint64_t corr, uint64_t t0);
void pa_ze_ops_epilogue(int api, void *params, int32_t result, uint64_t corr, uint64_t t0, uint64_t t1);
/*! pa_ze_mem_hooks() : passes zeMemAlloc{Device,Host,Shared}/zeMemFree{,Ext} to the device-memory
 *  source (collector/mem.h); no-op for other APIs. Also called alone when only `mem` is traced. */
void pa_ze_mem_hooks(int api, void *params, int32_t r, uint64_t t0, uint64_t t1);
/*! pa_ze_ops_flush() : collects every in-flight operation, waiting at most `timeout_ns`
 *  in total; what stays unsignaled is counted. */
void pa_ze_ops_flush(uint64_t timeout_ns);
extern _Atomic uint64_t pa_ze_uncollected, pa_ze_table_full;
/* operations still in flight on the agent's events of a context the application destroyed:
 * their events go with the context (ze_ops.c), so they are counted here, not collected */
extern _Atomic uint64_t pa_ze_ctx_lost;
/* capture lists the agent submitted with an application's executions (ze_ops.c: the harvest
 * lists of overlapping re-executions and their pre-captures; SESSION_COUNTERS ze_capture_lists) */
extern _Atomic uint64_t pa_ze_capture_lists;
/*! pa_ze_stall_wait_ns() : (ze_stall.c, exit flush only: one thread, no lock) the most ns any
 *  one thread of the process spent runnable but not running (waiting for a CPU) since the
 *  previous call, among the threads that are neither the agent's own nor the caller and that
 *  waited for at least 3/4 of that time; 0 when none did. *starved = 1 when one of those threads
 *  is runnable now and was on a CPU for at most 1/8 of that time (its current wait is not
 *  counted yet), else 0. The first call takes the baseline and returns 0; 0 too when the kernel
 *  shows no schedstat. Reads /proc/self/task (opendir: not for the hot path or a signal handler). */
uint64_t pa_ze_stall_wait_ns(int *starved);

/* ---- the prologue/epilogue of every recorded call (ze_api.c): an inline fast path for the
 * APIs without ops hooks, the rest out of line ---- */
/* APIs whose hooks need the ops layer; everything else only gets the API record. A table, constant-folded in
 * the inline fast paths below (every call site passes a constant api). PA_ZE_OPS_EPI: pa_ze_ops_epilogue() (its default case serves every API listed);
 * PA_ZE_OPS_PRO: also pa_ze_ops_prologue(), only the APIs its switch handles (for the others, e.g.
 * zeKernelSetArgumentValue, it would be a call doing nothing). IPC pools (EventCreate,
 * Open/CloseIpcHandle): no timestamps. */
enum { PA_ZE_OPS_EPI = 1, PA_ZE_OPS_PRO = 2 };
static const uint8_t pa_ze_ops_api[PA_ZE_API_COUNT] = {
    [PA_ZE_API_CommandListAppendLaunchKernel] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendLaunchCooperativeKernel] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendLaunchKernelIndirect] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendLaunchMultipleKernelsIndirect] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendMemoryCopy] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendMemoryCopyRegion] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendMemoryCopyFromContext] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendMemoryFill] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendBarrier] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendMemoryRangesBarrier] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandQueueExecuteCommandLists] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandQueueCreate] = PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListCreate] = PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListCreateImmediate] = PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListReset] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListDestroy] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_ContextDestroy] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandQueueDestroy] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_KernelCreate] = PA_ZE_OPS_EPI,
    [PA_ZE_API_ModuleCreate] = PA_ZE_OPS_EPI, /* the slow epilogue: PC sampling's module hook */
    [PA_ZE_API_KernelSetGroupSize] = PA_ZE_OPS_EPI,
    [PA_ZE_API_KernelDestroy] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_KernelSetArgumentValue] = PA_ZE_OPS_EPI,
    [PA_ZE_API_EventPoolCreate] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_EventHostReset] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_EventDestroy] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_EventPoolDestroy] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_EventCreate] = PA_ZE_OPS_EPI,
    [PA_ZE_API_EventPoolOpenIpcHandle] = PA_ZE_OPS_EPI,
    [PA_ZE_API_EventPoolCloseIpcHandle] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandListAppendEventReset] = PA_ZE_OPS_PRO | PA_ZE_OPS_EPI,
    [PA_ZE_API_CommandQueueSynchronize] = PA_ZE_OPS_EPI,
    [PA_ZE_API_EventHostSynchronize] = PA_ZE_OPS_EPI,
    [PA_ZE_API_FenceHostSynchronize] = PA_ZE_OPS_EPI,
    [PA_ZE_API_EventQueryStatus] = PA_ZE_OPS_EPI,
    [PA_ZE_API_MemAllocDevice] = PA_ZE_OPS_EPI,
    [PA_ZE_API_MemAllocHost] = PA_ZE_OPS_EPI,
    [PA_ZE_API_MemAllocShared] = PA_ZE_OPS_EPI,
    [PA_ZE_API_MemFree] = PA_ZE_OPS_EPI,
    [PA_ZE_API_MemFreeExt] = PA_ZE_OPS_EPI,
};


/* zeKernelSetArgumentValue needs the ops epilogue only to track local-memory arguments (a NULL
 * value): 1 once any was set in the process; until then a call with a value changes nothing
 * there (every kernel's argument sizes are still 0) and takes the fast path. */
extern PA_HIDDEN _Atomic int pa_ze_slm_seen;

/*! pa_ze_on_enter_slow() / pa_ze_on_exit_slow() : the full prologue / epilogue (ops hooks,
 *  memory-only tracing, not collecting). `inst` is the tracer's per-call instance slot (holds
 *  the start time, 0 = not recorded). */
void pa_ze_on_enter_slow(int api, void *params, void **inst);
void pa_ze_on_exit_slow(int api, void *params, int32_t result, void **inst);

/* Correlation ids: unique per process, > 0 (compared for equality only). Each thread takes a
 * block of them with one atomic add: a locked add per call cost more than the rest of the
 * prologue (it waits for the previous record's stores to drain while the aggregator reads
 * those lines on the other core). */
#define PA_ZE_CORR_BLOCK 1024u
/*! pa_ze_corr_refill() : takes a new block for this thread; returns its first id. */
uint64_t pa_ze_corr_refill(void);
static inline uint64_t pa_ze_corr_new(void)
{
    uint64_t c = pa_tls.ze_corr_next;
    if (PA_UNLIKELY(c == pa_tls.ze_corr_end))
        return pa_ze_corr_refill();
    pa_tls.ze_corr_next = c + 1;
    return c;
}

/* Device attribute records still to emit (the first recorded call emits them). */
extern PA_HIDDEN _Atomic int pa_ze_dev_attrs_pending;

/*! pa_ze_api_rec_fill() : writes a PA_REC_ZE_API record (aux words 0) into ring slot `rec`. */
static inline void pa_ze_api_rec_fill(pa_record_t *rec, int api, int32_t result, uint64_t t0, uint64_t t1,
                                      uint64_t corr)
{
    pa_emit1_head(rec, PA_REC_ZE_API, 0);
    rec->t0 = t0;
    rec->t1 = t1;
    rec->u.ze.corr_id = corr;
    uint64_t w = (uint32_t)api | (uint64_t)(uint32_t)result << 32; /* api, result */
    memcpy((char *)rec + offsetof(pa_record_t, u.ze.api), &w, 8);
    rec->u.ze.aux[0] = rec->u.ze.aux[1] = 0;
}

/*
 * The fast path of a call (an API without ops prologue, ze recording on this thread): the
 * prologue is one stamp (pa_clock_stamp: an rdtsc); the epilogue a second stamp, a correlation id
 * from the thread's block and the record written in place. The correlation id is taken at the
 * end: such an API has no ops prologue that would need it, and the slow epilogue takes it there
 * too (pa_ze_on_exit_slow). A nonzero start stamp means the prologue saw this thread recording
 * (guard and agent clear), which the call cannot change: the epilogue only checks the sources.
 */

/*! pa_ze_fast_enter() : the fast prologue of `api` when it applies (1, *t0 = start stamp); 0:
 *  take pa_ze_on_enter_slow(). Constant 0 for APIs with an ops prologue. */
static inline __attribute__((always_inline)) int pa_ze_fast_enter(int api, uint64_t *t0)
{
    if (PA_LIKELY(!(pa_ze_ops_api[api] & PA_ZE_OPS_PRO)) && PA_LIKELY(pa_agent_collecting(PA_SRC_ZE))) {
        *t0 = pa_clock_stamp(); /* a stamp: the epilogues convert or store it as is */
        return 1;
    }
    return 0;
}

/*! pa_ze_rec_slow() : (ze_api.c) the record of a fast call's end when pa_ze_rec() cannot write
 *  it in place (no ring yet, or a write to the ring under way: this is a signal handler):
 *  pa_emit1_begin(), the record, pa_emit1_end(), then the device records still pending. */
void pa_ze_rec_slow(int api, int32_t result, uint64_t t0, uint64_t t1);
/*! pa_ze_rec_full() : (ze_api.c) pa_ze_rec() found ring `r` full (the drop counted, PA_EMIT_BUSY
 *  set): pa_emit_full(), then the record as pa_ze_rec_finish() writes it. */
void pa_ze_rec_full(pa_ring_t *r, int api, int32_t result, uint64_t t0, uint64_t t1);
/*! pa_ze_rec_finish() : (ze_api.c) the record in reserved slot `rec` (PA_EMIT_BUSY set) with a
 *  correlation id from pa_ze_corr_new(), pa_emit1_end(), the device records still pending: for
 *  pa_ze_rec() when the thread's block of ids is used up. */
void pa_ze_rec_finish(pa_record_t *rec, int api, int32_t result, uint64_t t0, uint64_t t1);
/*! pa_ze_rec_after() : (ze_api.c) the rare work after pa_ze_rec() committed: the consumer's
 *  wake-up when `nudge` (the commit crossed a quarter of the ring), the records a signal handler
 *  stashed meanwhile, the device records still pending. */
void pa_ze_rec_after(int nudge);

/*! pa_ze_rec() : the PA_REC_ZE_API record of a call, written in place: what pa_emit1_begin(),
 *  pa_ze_api_rec_fill() with pa_ze_corr_new() and pa_emit1_end() do, in the same order (the id is
 *  taken inside the write, once the slot is there), with everything uncommon out of line and in
 *  tail position, so that the common path calls nothing. */
static inline __attribute__((always_inline)) void pa_ze_rec(int api, int32_t result, uint64_t t0, uint64_t t1)
{
    pa_ring_t *r = pa_tls.ring;
    if (PA_UNLIKELY(r == NULL || pa_tls.emitting)) {
        pa_ze_rec_slow(api, result, t0, t1);
        return;
    }
    pa_tls.emitting = PA_EMIT_BUSY;
    atomic_signal_fence(memory_order_seq_cst);
    pa_record_t *rec = pa_ring_reserve_keep(r, 1, pa_tls.hgtx_open + PA_KEEP_ENDS);
    if (PA_UNLIKELY(rec == NULL)) {
        pa_ze_rec_full(r, api, result, t0, t1);
        return;
    }
    uint64_t c = pa_tls.ze_corr_next;
    if (PA_UNLIKELY(c == pa_tls.ze_corr_end)) {
        pa_ze_rec_finish(rec, api, result, t0, t1);
        return;
    }
    pa_tls.ze_corr_next = c + 1;
    pa_ze_api_rec_fill(rec, api, result, t0, t1, c);
    int nudge = pa_ring_publish(r, 1);
    pa_emit_busy_dec();
    if (PA_UNLIKELY(nudge | pa_tls.emitting | atomic_load_explicit(&pa_ze_dev_attrs_pending, memory_order_relaxed)))
        pa_ze_rec_after(nudge);
}

/*! pa_ze_fast_exit() : the fast epilogue of a call started with stamp t0 != 0 (from either
 *  prologue) when `plain` (pa_ze_exit_plain) and ze still records: writes the record, returns 1;
 *  0: take pa_ze_on_exit_slow(). */
static inline __attribute__((always_inline)) int pa_ze_fast_exit(int api, int plain, int32_t result, uint64_t t0)
{
    if (PA_LIKELY(plain) && PA_LIKELY(atomic_load_explicit(&pa_sources, memory_order_relaxed) & PA_SRC_ZE)) {
        /* PA_REC_ZE_API: stamps, converted by the ring's consumer; a tick at the start means the
         * TSC is on (it stays on): no need to look again */
        uint64_t t1 = PA_LIKELY(t0 & PA_CLOCK_TICK) ? pa_clock_tick_stamp() : pa_clock_stamp();
        pa_ze_rec(api, result, t0, t1); /* a full ring waits (pa_emit_full) */
        return 1;
    }
    return 0;
}

/*! pa_ze_fast_exit_plain() : the epilogue of an entry point's call that started with the fast
 *  prologue and was found plain before the call (pa_ze_exit_plain_arg): the record when ze still
 *  records. When it no longer does, pa_ze_on_exit_slow() would do nothing for such a call (it has
 *  no ops epilogue, is neither a memory API nor a module or kernel creation), so nothing is done
 *  and the call's arguments need not outlive it. */
static inline __attribute__((always_inline)) void pa_ze_fast_exit_plain(int api, int32_t result, uint64_t t0)
{
    (void)pa_ze_fast_exit(api, 1, result, t0);
}

/*! pa_ze_exit_plain_arg() : 1 when call `api` needs no ops epilogue; `argval` is
 *  zeKernelSetArgumentValue's pArgValue (a NULL value sets a local-memory argument), unused
 *  for the other APIs. */
static inline int pa_ze_exit_plain_arg(int api, const void *argval)
{
    if (api == PA_ZE_API_KernelSetArgumentValue)
        return argval != NULL && !atomic_load_explicit(&pa_ze_slm_seen, memory_order_relaxed);
    return !pa_ze_ops_api[api];
}

/* 1 when call `api` with `params` needs no ops epilogue. */
static inline int pa_ze_exit_plain(int api, const void *params)
{
    if (api == PA_ZE_API_KernelSetArgumentValue)
        return pa_ze_exit_plain_arg(api, *((const ze_kernel_set_argument_value_params_t *)params)->ppArgValue);
    return pa_ze_exit_plain_arg(api, NULL);
}

/*! pa_ze_on_enter() : every traced call's prologue (tracer callbacks; the entry points inline
 *  pa_ze_fast_enter themselves). `inst` gets the start stamp, 0 = not recorded. */
static inline __attribute__((always_inline)) void pa_ze_on_enter(int api, void *params, void **inst)
{
    uint64_t t0;
    if (pa_ze_fast_enter(api, &t0)) {
        *inst = (void *)(uintptr_t)t0;
        return;
    }
    pa_ze_on_enter_slow(api, params, inst);
}

/*! pa_ze_on_exit() : every traced call's epilogue (tracer callbacks and the entry points' slow
 *  path): the fast epilogue when it applies, else pa_ze_on_exit_slow(). */
static inline __attribute__((always_inline)) void pa_ze_on_exit(int api, void *params, int32_t result, void **inst)
{
    uint64_t t0 = (uint64_t)(uintptr_t)*inst;
    if (PA_LIKELY(t0 != 0) && pa_ze_fast_exit(api, pa_ze_exit_plain(api, params), result, t0))
        return;
    pa_ze_on_exit_slow(api, params, result, inst);
}

#endif
