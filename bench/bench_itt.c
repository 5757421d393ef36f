/* bench_itt.c - cost of an ITT task begin+end pair through an ittnotify static part (the tests'
 * stand-in, tests/integration/itt/itt_static.c): without a collector (INTEL_LIBITTNOTIFY64
 * unset, the pointers stay NULL) or with the preloaded agent as the collector.
 * usage: bench_itt PAIRS [BATCH [PAUSE_US]]  prints "pair_ns X" = median over batches of ns per
 * pair, then "main_end_ns T". */
#include <unistd.h>

#include "../tests/integration/itt/itt_static.h"
#include "bench_util.h"

int main(int argc, char **argv)
{
    uint64_t pairs = bench_arg(argc, argv, 1, "PAIRS", 1000000, 1, 1ull << 36);
    uint64_t batch = bench_arg(argc, argv, 2, "BATCH", 1000, 1, 1u << 20);
    uint64_t pause_us = bench_arg(argc, argv, 3, "PAUSE_US", 0, 0, 1000000);
    itt_static_init(NULL);
    itt_domain *d = ITT_CALL(domain_create, "bench");
    /* the names of a real loop's phases, as string handles created once (oneDNN does the same) */
    itt_string *names[4] = {ITT_CALL(string_handle_create, "iteration"), ITT_CALL(string_handle_create, "forward"),
                            ITT_CALL(string_handle_create, "backward"), ITT_CALL(string_handle_create, "optimizer step")};
    size_t nb = (size_t)((pairs + batch - 1) / batch);
    double *per = malloc(nb * sizeof *per);
    if (!per)
        return 1;
    uint64_t done = 0;
    for (size_t b = 0; b < nb; b++) {
        uint64_t n = pairs - done < batch ? pairs - done : batch;
        uint64_t t0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++) {
            /* what the ittnotify macros expand to: domain flag, then the pointer */
            if (d && d->flags && itt_task_begin)
                itt_task_begin(d, itt_null, itt_null, names[i & 3]);
            if (d && d->flags && itt_task_end)
                itt_task_end(d);
        }
        per[b] = (double)(bench_now_ns() - t0) / (double)n;
        done += n;
        if (pause_us)
            usleep((useconds_t)pause_us);
    }
    printf("pair_ns %.2f\n", bench_median(per, nb));
    free(per);
    bench_main_end();
    return 0;
}
