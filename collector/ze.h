/* ze.h - the Level Zero source: tracer attach/detach and the device clock conversion. */
#ifndef PA_ZE_H
#define PA_ZE_H

#include <stdatomic.h>
#include <stdint.h>

/*
 * Attach policy (documented in README "Level Zero"): the agent never initializes Level Zero
 * itself. When libze_loader.so.1 is mapped (linked at constructor time, or dlopen()ed later: the
 * dlopen interposer) it prepares: the interception path, ZE_ENABLE_TRACING_LAYER=1 for the
 * tracing-layer path unless the user set it (an explicit other value disables ze tracing with a
 * warning), the loader pinned. The application's own zeInit goes to the loader with its own
 * flags and its result goes back as is; once one succeeds with GPU drivers in its flags (0 or
 * ZE_INIT_FLAG_GPU_ONLY) the agent attaches: each device's attributes, then the entry path or one
 * tracer with a prologue and an epilogue for every ze API of zel_tracing_register_cb.h. A call
 * before that reaches the loader unchanged and unrecorded. An application that never loads the
 * loader or never initializes it gets no Level Zero rows, records or messages; one that
 * initializes it for VPU only (ZE_INIT_FLAG_VPU_ONLY) gets one summary line saying so.
 */

/*! pa_ze_attach() : constructor / dlopen-hook trigger: prepares when the loader is mapped and
 *  attaches if Level Zero is initialized already. Idempotent, thread-safe. Returns 1 attached,
 *  0 not (yet) attached (loader absent, not initialized, or tracing refused). */
int pa_ze_attach(void);

/*! pa_ze_on_ready() : registers `fn` (by a source's init, before the ze source's; up to 4), called
 *  once, on the application's thread, right after its first zeInit with GPU drivers succeeded and
 *  the ze source attached (guard held, attach lock released), or after that zeInit alone when
 *  the ze source is off: a source that needs Level Zero itself (device metric streams, PC
 *  sampling) starts there, only in a process whose application initialized Level Zero.
 *  Registered after they fired (a source started late): `fn` runs at once, guard held. */
void pa_ze_on_ready(void (*fn)(void));

/*! pa_ze_on_kernel_objects() : registers the PC-sampling engine's hooks (by its source's init,
 *  before the ze source's; one pair): `module_fn(module, device)` after each zeModuleCreate and
 *  `kernel_fn(module, kernel, name)` after each zeKernelCreate of the application that succeeded,
 *  seen by the ze source's interception (entry points or its tracer) whether or not ze records
 *  now; errno kept around them. Handles are the Level Zero ones, typed void * here. */
void pa_ze_on_kernel_objects(void (*module_fn)(void *module, void *device),
                             void (*kernel_fn)(void *module, void *kernel, const char *name));
/*! pa_ze_each_kernel() : calls `fn(module, kernel, name)` for every kernel of the application
 *  created while ze recorded and not destroyed since (the ze source's object table), on the
 *  calling thread, no lock held: for PC sampling started after kernels were created (the PTI
 *  library dlopen()ed late). A kernel the application destroys during the call may still be
 *  passed. Returns the number of kernels passed. */
uint32_t pa_ze_each_kernel(void (*fn)(void *module, void *kernel, const char *name));
/*! pa_ze_intercepting() : 1 once the ze source attached its interception of the application's
 *  ze calls (the hooks above then fire), 0 otherwise (ze and mem not traced, tracing refused). */
int pa_ze_intercepting(void);

/*! pa_ze_detach() : exit hook, before pa_agg_stop(): collects every operation still in
 *  flight (waiting at most `timeout_ns` in total for unsignaled events, and giving up once
 *  none completed for 200 ms, plus the time a runnable driver or application thread waited for
 *  a CPU meanwhile, at most 1 s more: work that stalls is counted uncollected), emits the
 *  uncollected/table-full counters. The tracer is disabled first: calls made after this (other
 *  threads, atexit handlers that run later) go straight to the driver. Safe when never attached. */
void pa_ze_detach(uint64_t timeout_ns);

/*
 * The agent's own Level Zero calls outside the ze source (PC-sampling engine, device metric and
 * sysman readers; on their threads or the application's) go through one gate, the windows of
 * ze_window.c: the loader's teardown (its ELF destructors at exit, or the PTI library's
 * destructor) refuses new windows, then waits, bounded, for the ones in progress. Each window
 * must be short: no call in it may block longer than PA_ZE_CALL_MAX_BLOCK_NS (stream reads do
 * not block; a notification wait is cut into waits of at most that), so the teardown's bound
 * is only reached by a thread preempted inside one, and then the loader's state is not freed
 * (the teardown says so: pa_ze_call_teardown() returns the threads left inside).
 */
#define PA_ZE_CALL_MAX_BLOCK_NS 10000000ull /* 10 ms: a tenth of the teardown's bound */

/*! pa_ze_call_enter() : before a group of the agent's own loader calls: 1 = the loader stays
 *  alive until the matching pa_ze_call_leave(); 0 = its teardown began: make no call and do not
 *  leave (a reader thread then ends without closing its streamer: the process is ending).
 *  Nests; no lock, no allocation, errno kept. */
int pa_ze_call_enter(void);
/*! pa_ze_call_leave() : ends the window pa_ze_call_enter() opened (it returned 1). */
void pa_ze_call_leave(void);
/*! pa_ze_call_teardown() : the loader's teardown begins: every later pa_ze_call_enter() (and the
 *  ze source's own gate) returns 0; waits until no other live thread is in a window, at most
 *  `budget_ns`. Returns the threads still inside then (0: the loader may free its state);
 *  *waited = the threads it waited for. Idempotent. errno kept. */
int pa_ze_call_teardown(uint64_t budget_ns, int *waited);
/*! pa_ze_call_live() : 1 until pa_ze_call_teardown() began (a hint for loops: not a window). */
int pa_ze_call_live(void);

/* Device clock of one device: a host/device reference pair and the conversion constants. */
typedef struct pa_ze_clock {
    uint64_t timer_hz;        /* device ticks per second (ze_device_properties_t timerResolution, 1.2) */
    uint32_t valid_bits;      /* kernelTimestampValidBits, 1..64 */
    uint64_t ref_host_ns;     /* CLOCK_MONOTONIC ns at the reference */
    uint64_t ref_dev_ticks;   /* device timestamp at the reference (any width) */
} pa_ze_clock_t;

/* A device clock shared by every thread: a seqlock over two copies. One writer at a time
 * (the caller serializes publishers); readers never block and never see a torn pair, even
 * when preempted across several publications. */
typedef struct pa_ze_clock_sync {
    pa_ze_clock_t clock[2];   /* clock[active] is current; a publication writes the other one */
    _Atomic int active;
    _Atomic uint32_t seq;     /* odd while a publication writes; +2 per publication */
} pa_ze_clock_sync_t;

/*! pa_ze_clock_publish() : makes *c current. Publishers must be serialized by the caller. */
void pa_ze_clock_publish(pa_ze_clock_sync_t *s, const pa_ze_clock_t *c);

/*! pa_ze_clock_load() : copies a consistent current clock to *out; lock-free, retries only
 *  when a publication started during the copy (publications are rate-limited). */
void pa_ze_clock_load(pa_ze_clock_sync_t *s, pa_ze_clock_t *out);

/*! pa_ze_ticks_mask() : (1 << bits) - 1 without undefined shifts; bits 0 or >= 64 -> all ones. */
uint64_t pa_ze_ticks_mask(uint32_t bits);

/*! pa_ze_ticks_to_ns() : host ns of device kernel timestamp `ticks` (valid_bits wide): the
 *  distance from the reference is taken modulo 2^valid_bits as a signed value within half a
 *  wrap period, so timestamps slightly before the reference and after a wrap both convert. */
uint64_t pa_ze_ticks_to_ns(const pa_ze_clock_t *c, uint64_t ticks);

/*! pa_ze_span_ns() : duration in ns of [start, end] ticks, modulo 2^valid_bits (a span
 *  crossing the wrap is positive). */
uint64_t pa_ze_span_ns(const pa_ze_clock_t *c, uint64_t start, uint64_t end);

#endif
