/* bench_osrt.c - cost of a wrapped OS call above the threshold: CALLS nanosleep(2 us).
 * usage: bench_osrt [CALLS [SLEEP_NS]]  prints "call_ns X" = median ns per call (each call
 * timed alone: a sleep is long enough that the clock reads do not matter). */
#define _GNU_SOURCE
#include <sys/prctl.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
    uint64_t calls = bench_arg(argc, argv, 1, "CALLS", 20000, 1, 100000000);
    uint64_t sleep_ns = bench_arg(argc, argv, 2, "SLEEP_NS", 2000, 1, 999999999);
    /* the default 50 us timer slack would hide a 2 us sleep (and our 150 ns) in noise */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    double *per = malloc(calls * sizeof *per);
    if (!per)
        return 1;
    struct timespec req = {0, (long)sleep_ns};
    for (uint64_t i = 0; i < calls; i++) {
        uint64_t t0 = bench_now_ns();
        nanosleep(&req, NULL);
        per[i] = (double)(bench_now_ns() - t0);
    }
    printf("call_ns %.2f\n", bench_median(per, calls));
    free(per);
    bench_main_end();
    return 0;
}
