/* bench_mem_agg.c - device-memory aggregation cost per record at 1k vs 1M live allocations, and
 * symbolization time per unique stack. usage: bench_mem_agg [RECORDS]  prints "name value unit". */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/pa_callstack.h"
#include "agg_internal.h"

#define DEPTH 32
#define NSTACKS 64

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct { pa_mem_stack_hdr_t h; uint64_t f[DEPTH]; } stack_payload_t;
static stack_payload_t stacks[NSTACKS];

/* Real return addresses: stack i is captured at recursion depth i (distinct stacks). */
static __attribute__((noinline)) void capture(int i, int left)
{
    if (left > 0) {
        capture(i, left - 1);
        __asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
        return;
    }
    stacks[i].h.nframes = (uint16_t)backtrace((void **)stacks[i].f, DEPTH);
    stacks[i].h.dev_index = 0;
    stacks[i].h.device = 0x1000;
}

static void feed_alloc(pa_agg_t *a, uint64_t ptr, int s)
{
    pa_record_t r = {.kind = PA_REC_MEM_ALLOC, .tid = 1, .t0 = ptr, .t1 = ptr + 1};
    r.u.mem.ptr = ptr;
    r.u.mem.size = 256;
    r.u.mem.kind = 2;
    r.len = (uint32_t)(sizeof stacks[s].h + stacks[s].h.nframes * 8u);
    r.nslots = (uint16_t)pa_record_slots(r.len);
    pa_agg_process_for_test(a, &r, (const uint8_t *)&stacks[s]);
}

static void feed_free(pa_agg_t *a, uint64_t ptr)
{
    pa_record_t r = {.kind = PA_REC_MEM_FREE, .tid = 1, .t0 = ptr, .t1 = ptr + 1, .nslots = 1};
    r.u.mem.ptr = ptr;
    pa_agg_process_for_test(a, &r, NULL);
}

/* ns (thread CPU) per alloc+free record pair with `live` allocations alive. */
static double per_record(uint64_t live, uint64_t pairs)
{
    char spool[256];
    snprintf(spool, sizeof spool, "/tmp/bench_mem_agg.%d.spool", (int)getpid());
    pa_agg_config_t cfg = {.spool_path = spool, .median_budget = 1u << 20, .zstd_level = 1};
    pa_agg_t *a = pa_agg_create(&cfg);
    if (!a) {
        fprintf(stderr, "bench_mem_agg: cannot create the aggregator\n");
        exit(1);
    }
    for (uint64_t i = 0; i < live; i++)
        feed_alloc(a, 0x10000000ull + i * 256, (int)(i % NSTACKS));
    uint64_t t0 = cpu_ns();
    for (uint64_t i = 0; i < pairs; i++) {
        uint64_t p = 0x800000000ull + i * 256;
        feed_alloc(a, p, (int)(i % NSTACKS));
        feed_free(a, p);
    }
    double ns = (double)(cpu_ns() - t0) / (double)(2 * pairs);
    pa_agg_destroy(a);
    unlink(spool);
    return ns;
}

int main(int argc, char **argv)
{
    uint64_t pairs = argc > 1 ? strtoull(argv[1], NULL, 10) : 500000;
    for (int i = 0; i < NSTACKS; i++)
        capture(i, i);
    printf("mem_agg_ns_per_record_live_1k %.1f ns\n", per_record(1000, pairs));
    printf("mem_agg_ns_per_record_live_1M %.1f ns\n", per_record(1000000, pairs));
    /* symbolization: a fresh symbolizer, every unique stack once (addresses shared between
     * stacks are resolved once, as at exit) */
    pa_sym_frame_t out[DEPTH + 8];
    uint64_t t0 = cpu_ns();
    pa_sym_t *sym = pa_sym_open(0);
    uint64_t t1 = cpu_ns();
    size_t frames = 0;
    for (int i = 0; i < NSTACKS; i++)
        frames += pa_sym_chain(sym, stacks[i].f, stacks[i].h.nframes, 0, NULL, 0, 0, 0, out, DEPTH + 8);
    uint64_t t2 = cpu_ns();
    pa_sym_close(sym);
    printf("mem_sym_open_ns %.0f ns\n", (double)(t1 - t0));
    printf("mem_sym_ns_per_unique_stack %.0f ns\n", (double)(t2 - t1) / NSTACKS);
    printf("mem_sym_frames_per_stack %.1f frames\n", (double)frames / NSTACKS);
    return 0;
}
