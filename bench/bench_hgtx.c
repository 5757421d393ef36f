/* bench_hgtx.c - cost of an HGTX push+pop pair (libhgtx stub alone, or the preloaded agent).
 * usage: bench_hgtx PAIRS [BATCH [PAUSE_US]]  prints "pair_ns X" = median over batches of ns per pair,
 * then "tsc_read_ns X" and "clock_gettime_ns X" (one rdtsc, one vDSO clock_gettime here: the floor
 * of an event, which reads the TSC once, and what it read before) and "main_end_ns T". Also the
 * event source of the RSS and exit-time runs (2 events/pair). */
#include <profagent/hgtx.h>

#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "bench_util.h"

/* Names vary a little like a real loop's phases; the pointer array keeps strlen honest. */
static const char *const names[4] = {"iteration", "forward", "backward", "optimizer step"};

int main(int argc, char **argv)
{
    uint64_t pairs = bench_arg(argc, argv, 1, "PAIRS", 1000000, 1, 1ull << 36);
    uint64_t batch = bench_arg(argc, argv, 2, "BATCH", 1000, 1, 1u << 20);
    /* untimed pause after each batch: lets the aggregator catch up, so a tight loop measures
     * recorded events (not the cheaper drop path) in a ring that stays cache-warm */
    uint64_t pause_us = bench_arg(argc, argv, 3, "PAUSE_US", 0, 0, 1000000);
    size_t nb = (size_t)((pairs + batch - 1) / batch);
    double *per = malloc(nb * sizeof *per);
    if (!per)
        return 1;
    uint64_t done = 0;
    for (size_t b = 0; b < nb; b++) {
        uint64_t n = pairs - done < batch ? pairs - done : batch;
        uint64_t t0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++) {
            hgtxRangePushA(names[i & 3]);
            hgtxRangePop();
        }
        per[b] = (double)(bench_now_ns() - t0) / (double)n;
        done += n;
        if (pause_us)
            usleep((useconds_t)pause_us);
    }
    printf("pair_ns %.2f\n", bench_median(per, nb));
    /* the clocks alone: medians over 101 batches of 1000 reads */
    double tsc[101], cg[101];
    volatile uint64_t sink = 0;
    for (int r = 0; r < 101; r++) {
        uint64_t t0 = bench_now_ns();
#if defined(__x86_64__)
        for (int i = 0; i < 1000; i++)
            sink += __rdtsc();
#endif
        uint64_t t1 = bench_now_ns();
        for (int i = 0; i < 1000; i++)
            sink += bench_now_ns();
        uint64_t t2 = bench_now_ns();
        tsc[r] = (double)(t1 - t0) / 1000.0;
        cg[r] = (double)(t2 - t1) / 1000.0;
    }
    (void)sink;
    printf("tsc_read_ns %.2f\nclock_gettime_ns %.2f\n", bench_median(tsc, 101), bench_median(cg, 101));
    free(per);
    bench_main_end();
    return 0;
}
