/* ze_busy.c - sample for device-timestamp tests: launches busy_ns kernels and prints their kernel
 * timestamps (ticks and ns from the device's timerResolution and kernelTimestampValidBits).
 * usage: ze_busy [--count N] [--ns NS] [--list immediate|regular] [--events fresh|reuse|none]
 *                [--engines K] [--exec M] [--wrap]
 *   --count   kernels to launch in all (default 1); with --list regular: per execution
 *             (regular + reuse: each engine's list holds one kernel)
 *   --ns      device time of each kernel in ns (default 2000000)
 *   --list    immediate lists (default) or regular lists on queues executed --exec times
 *   --events  fresh: one timestamp event per kernel (default); reuse: one event per engine,
 *             host-reset and reused for every launch; none: no app events
 *   --engines spread kernels round-robin over K compute engines (default 1)
 *   --wrap    wait until the device clock is 30 ms before its wrap, then launch (a train of
 *             kernels longer than that spans the wrap); first runs one 1 us warm-up kernel
 *             (immediate lists) so the timed launches have no first-use cost. Immediate lists
 *             (not reuse): the train is appended first behind a gate event the host signals
 *             then, so it runs back to back however slowly the host appends
 * Output: one line per kernel "kernel I exec=E engine=K start=T end=T ns=D wrapped=0|1". */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ENGINES 16

typedef struct opts {
    uint32_t count, engines, exec;
    uint64_t ns;
    int regular, wrap;
    enum { EV_FRESH, EV_REUSE, EV_NONE } events;
} opts_t;

typedef struct dev_clock { uint64_t hz; uint32_t bits; } dev_clock_t;

static void usage_die(const char *prog, const char *what, const char *val, const char *accepted)
{
    fprintf(stderr, "%s: bad %s '%s': expected %s\n", prog, what, val, accepted);
    exit(2);
}

static void parse(int argc, char **argv, opts_t *o)
{
    static const struct option lo[] = {
        {"count", 1, 0, 'c'}, {"ns", 1, 0, 'n'},      {"list", 1, 0, 'l'}, {"events", 1, 0, 'e'},
        {"engines", 1, 0, 'k'}, {"exec", 1, 0, 'x'}, {"wrap", 0, 0, 'w'}, {0, 0, 0, 0}};
    *o = (opts_t){.count = 1, .engines = 1, .exec = 1, .ns = 2000000, .events = EV_FRESH};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        char *av[2] = {argv[0], optarg};
        switch (c) {
        case 'c': o->count = (uint32_t)sample_arg_u64(2, av, 1, "--count", 1, 1, 1000000); break;
        case 'n': o->ns = sample_arg_u64(2, av, 1, "--ns", 0, 0, UINT64_C(60000000000)); break;
        case 'k': o->engines = (uint32_t)sample_arg_u64(2, av, 1, "--engines", 1, 1, MAX_ENGINES); break;
        case 'x': o->exec = (uint32_t)sample_arg_u64(2, av, 1, "--exec", 1, 1, 1000000); break;
        case 'w': o->wrap = 1; break;
        case 'l':
            if (strcmp(optarg, "immediate") && strcmp(optarg, "regular"))
                usage_die(argv[0], "--list", optarg, "immediate or regular");
            o->regular = optarg[0] == 'r';
            break;
        case 'e':
            if (!strcmp(optarg, "fresh")) o->events = EV_FRESH;
            else if (!strcmp(optarg, "reuse")) o->events = EV_REUSE;
            else if (!strcmp(optarg, "none")) o->events = EV_NONE;
            else usage_die(argv[0], "--events", optarg, "fresh, reuse or none");
            break;
        default:
            fprintf(stderr, "usage: %s [--count N] [--ns NS] [--list immediate|regular] "
                            "[--events fresh|reuse|none] [--engines K] [--exec M] [--wrap]\n", argv[0]);
            exit(2);
        }
    }
    if (optind < argc)
        usage_die(argv[0], "argument", argv[optind], "only the options in --help");
}

static dev_clock_t device_clock(ze_device_handle_t dev, uint32_t *compute_engines)
{
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2};
    SAMPLE_CHECK(zeDeviceGetProperties(dev, &p));
    ze_command_queue_group_properties_t g = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
    uint32_t ng = 1;
    SAMPLE_CHECK(zeDeviceGetCommandQueueGroupProperties(dev, &ng, &g));
    *compute_engines = g.numQueues;
    if (p.timerResolution == 0 || p.kernelTimestampValidBits == 0 || p.kernelTimestampValidBits > 64)
        sample_die("device reports timerResolution %llu cycles/s and %u valid bits: unusable",
                   (unsigned long long)p.timerResolution, p.kernelTimestampValidBits);
    printf("device %s timer_hz=%llu kernel_valid_bits=%u timestamp_valid_bits=%u engines=%u\n",
           p.name, (unsigned long long)p.timerResolution, p.kernelTimestampValidBits,
           p.timestampValidBits, g.numQueues);
    return (dev_clock_t){p.timerResolution, p.kernelTimestampValidBits};
}

/* Nanoseconds until the device clock wraps (at most 10 s away, else exits). */
static uint64_t ns_to_wrap(ze_device_handle_t dev, dev_clock_t clk, uint64_t *devts)
{
    uint64_t host;
    SAMPLE_CHECK(zeDeviceGetGlobalTimestamps(dev, &host, devts));
    if (clk.bits >= 64)
        sample_die("--wrap: the device has 64 valid timestamp bits, it will not wrap");
    uint64_t left = (UINT64_C(1) << clk.bits) - (*devts & ((UINT64_C(1) << clk.bits) - 1));
    uint64_t left_ns = (uint64_t)((unsigned __int128)left * 1000000000u / clk.hz);
    if (left_ns > UINT64_C(10000000000))
        sample_die("--wrap: the device clock wraps in %.3f s (more than 10 s); start it near the "
                   "wrap (SIMDEV_CLOCK_START_TICKS)", (double)left_ns / 1e9);
    return left_ns;
}

/* Sleeps until the device clock is WRAP_LEAD_NS before its wrap. A train of kernels launched
 * then spans the wrap even when the host oversleeps or the engine thread starts late (loaded
 * hosts delay both by milliseconds, so one precisely timed kernel would be flaky). */
#define WRAP_LEAD_NS 30000000u
static void wait_for_wrap(ze_device_handle_t dev, dev_clock_t clk)
{
    uint64_t devts, left_ns = ns_to_wrap(dev, clk, &devts);
    printf("wrap: device ticks %llu, %llu ns before wrap\n", (unsigned long long)devts,
           (unsigned long long)left_ns);
    if (left_ns > WRAP_LEAD_NS) {
        uint64_t s = left_ns - WRAP_LEAD_NS;
        struct timespec ts = {(time_t)(s / 1000000000u), (long)(s % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

/* Runs k for 1 us on list and waits for it (ev signalled, then reset); restores its ns. */
static void warm_up(ze_kernel_handle_t k, uint64_t ns, ze_command_list_handle_t list,
                    ze_event_handle_t ev)
{
    uint64_t one_us = 1000;
    sample_set_arg(k, 0, sizeof(one_us), &one_us);
    sample_launch_1d(list, k, 1, 1, ev);
    SAMPLE_CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
    SAMPLE_CHECK(zeEventHostReset(ev));
    sample_set_arg(k, 0, sizeof(ns), &ns);
}

/* Prints one kernel's timestamps; returns 1 when the duration is zero (broken timestamps). */
static int report(ze_event_handle_t ev, dev_clock_t clk, uint32_t i, uint32_t e, uint32_t k)
{
    ze_kernel_timestamp_result_t ts;
    SAMPLE_CHECK(zeEventQueryKernelTimestamp(ev, &ts));
    uint64_t s = ts.global.kernelStart, t = ts.global.kernelEnd;
    uint64_t ns = sample_ticks_to_ns(s, t, clk.bits, clk.hz);
    printf("kernel %u exec=%u engine=%u start=%llu end=%llu ns=%llu wrapped=%d\n", i, e, k,
           (unsigned long long)s, (unsigned long long)t, (unsigned long long)ns, t < s);
    return ns == 0;
}

typedef struct run {
    const opts_t *o;
    dev_clock_t clk;
    ze_kernel_handle_t k;
    ze_command_list_handle_t *lists;
    ze_command_queue_handle_t *queues;
    ze_event_handle_t *ev, *done;     /* ev: per kernel (fresh) or per engine (reuse) */
    ze_event_handle_t gate;           /* --wrap: the train waits for it, NULL = none */
    ze_device_handle_t dev;
    uint32_t launched;
} run_t;

/* Waits for ev, prints its timestamps and host-resets it so it can be reused. */
static int collect(run_t *r, ze_event_handle_t ev, uint32_t i, uint32_t x, uint32_t engine)
{
    SAMPLE_CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
    int bad = report(ev, r->clk, i, x, engine);
    SAMPLE_CHECK(zeEventHostReset(ev));
    return bad;
}

/* Immediate lists: fresh events -> all kernels appended, then all collected; reuse -> rounds of
 * one kernel per engine, each engine's event collected and reset before the next round. */
static int run_immediate(run_t *r)
{
    const opts_t *o = r->o;
    uint32_t K = o->engines;
    int bad = 0;
    if (o->events == EV_REUSE) {
        for (uint32_t base = 0; base < o->count; base += K) {
            uint32_t m = o->count - base < K ? o->count - base : K;
            for (uint32_t j = 0; j < m; j++)
                sample_launch_1d(r->lists[j], r->k, 1, 1, r->ev[j]);
            for (uint32_t j = 0; j < m; j++)
                bad |= collect(r, r->ev[j], base + j, 0, j);
        }
    } else {
        /* each list's first kernel waits for the gate (in-order lists: the rest follow it) */
        ze_group_count_t g = {1, 1, 1};
        for (uint32_t i = 0; i < o->count; i++)
            SAMPLE_CHECK(zeCommandListAppendLaunchKernel(r->lists[i % K], r->k, &g,
                                                         o->events == EV_FRESH ? r->ev[i] : NULL,
                                                         r->gate && i < K, &r->gate));
        if (r->gate) { /* launched one by one, a loaded host left ms gaps where the wrap fell */
            wait_for_wrap(r->dev, r->clk);
            SAMPLE_CHECK(zeEventHostSignal(r->gate));
        }
        for (uint32_t i = 0; i < o->count && o->events == EV_FRESH; i++)
            bad |= collect(r, r->ev[i], i, 0, i % K);
        for (uint32_t e = 0; e < K; e++) {
            SAMPLE_CHECK(zeCommandListAppendBarrier(r->lists[e], r->done[e], 0, NULL));
            SAMPLE_CHECK(zeEventHostSynchronize(r->done[e], UINT64_MAX));
        }
    }
    r->launched = o->count;
    return bad;
}

/* Regular lists: list e holds kernels i with i%K == e (reuse: exactly one kernel per list,
 * signalling the engine's event), executed --exec times; events collected and reset after
 * every execution. */
static int run_regular(run_t *r)
{
    const opts_t *o = r->o;
    uint32_t K = o->engines, per_exec = o->events == EV_REUSE ? K : o->count;
    int bad = 0;
    for (uint32_t i = 0; i < per_exec; i++) {
        ze_event_handle_t sig = o->events == EV_NONE ? NULL : r->ev[i];
        sample_launch_1d(r->lists[i % K], r->k, 1, 1, sig);
    }
    for (uint32_t e = 0; e < K; e++)
        SAMPLE_CHECK(zeCommandListClose(r->lists[e]));
    for (uint32_t x = 0; x < o->exec; x++) {
        for (uint32_t e = 0; e < K; e++)
            SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(r->queues[e], 1, &r->lists[e], NULL));
        for (uint32_t e = 0; e < K; e++)
            SAMPLE_CHECK(zeCommandQueueSynchronize(r->queues[e], UINT64_MAX));
        for (uint32_t i = 0; i < per_exec && o->events != EV_NONE; i++)
            bad |= collect(r, r->ev[i], x * per_exec + i, x, i % K);
    }
    r->launched = per_exec * o->exec;
    return bad;
}

int main(int argc, char **argv)
{
    opts_t o;
    parse(argc, argv, &o);
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_device_handle_t dev = env.devices[0];
    uint32_t avail = 0;
    dev_clock_t clk = device_clock(dev, &avail);
    if (o.engines > avail)
        sample_die("--engines %u: the device has %u compute engines", o.engines, avail);
    ze_module_handle_t mod = sample_module_native(&env, dev, "SIMDEV-MODULE 1\nkernel busy_ns\n");
    ze_kernel_handle_t k = sample_kernel(mod, "busy_ns", 1);
    sample_set_arg(k, 0, sizeof(o.ns), &o.ns);

    uint32_t K = o.engines, nev = o.events == EV_FRESH ? o.count : K;
    ze_event_pool_handle_t pool = sample_event_pool(&env, nev + K + 1, 1);
    ze_event_handle_t *ev = calloc(nev + K + 1, sizeof(*ev)), *done = NULL;
    if (!ev)
        sample_die("out of host memory");
    for (uint32_t i = 0; i < nev + K + 1; i++)
        ev[i] = sample_event(pool, i);
    int gated = o.wrap && !o.regular && o.events != EV_REUSE;
    done = ev + nev;                              /* one per engine: end of its work */
    ze_command_list_handle_t lists[MAX_ENGINES];
    ze_command_queue_handle_t queues[MAX_ENGINES];
    for (uint32_t e = 0; e < K; e++) {
        if (o.regular) {
            queues[e] = sample_queue(&env, dev, 0, e);
            lists[e] = sample_list(&env, dev, 0);
        } else {
            lists[e] = sample_immediate(&env, dev, 0, e);
        }
    }
    if (o.wrap) {
        if (!o.regular)       /* warm the engine up so the timed launch has no first-use cost */
            warm_up(k, o.ns, lists[0], done[0]);
        if (!gated)
            wait_for_wrap(dev, clk);
    }

    run_t run = {.o = &o, .clk = clk, .k = k, .lists = lists, .queues = queues, .ev = ev,
                 .done = done, .gate = gated ? ev[nev + K] : NULL, .dev = dev};
    int bad = o.regular ? run_regular(&run) : run_immediate(&run);

    for (uint32_t e = 0; e < K; e++) {
        SAMPLE_CHECK(zeCommandListDestroy(lists[e]));
        if (o.regular)
            SAMPLE_CHECK(zeCommandQueueDestroy(queues[e]));
    }
    for (uint32_t i = 0; i < nev + K + 1; i++)
        SAMPLE_CHECK(zeEventDestroy(ev[i]));
    free(ev);
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeKernelDestroy(k));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    sample_env_fini(&env);
    if (bad) {
        fprintf(stderr, "ze_busy: a kernel reported a zero duration\n");
        return 1;
    }
    printf("ze_busy: %u kernel launches done\n", run.launched);
    return 0;
}
