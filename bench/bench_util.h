/* bench_util.h - clocks, medians and argument parsing shared by the bench programs. */
#ifndef PA_BENCH_UTIL_H
#define PA_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/*! bench_now_ns() : CLOCK_MONOTONIC in ns (the clock the agent and scripts/bench use). */
static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*! bench_cpu_ns() : CPU time of the calling thread in ns (rates "on one core"). */
static inline uint64_t bench_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/*! bench_median() : median of v[n] (sorts v in place); mean of the two middle values for an
 *  even n; 0 for n == 0. */
static inline double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*! bench_arg() : argv[i] as an unsigned integer in [min, max], `dflt` when absent. A bad value
 *  prints which argument was wrong and the accepted range, then exits 2. */
static inline uint64_t bench_arg(int argc, char **argv, int i, const char *what, uint64_t dflt,
                                 uint64_t min, uint64_t max)
{
    if (argc <= i)
        return dflt;
    char *end;
    unsigned long long v = strtoull(argv[i], &end, 10);
    if (*argv[i] == '\0' || *end || v < min || v > max) {
        fprintf(stderr, "%s: bad %s \"%s\": accepted %llu..%llu\n", argv[0], what, argv[i],
                (unsigned long long)min, (unsigned long long)max);
        exit(2);
    }
    return v;
}

/*! bench_main_end() : prints "main_end_ns T" (CLOCK_MONOTONIC) and flushes, so scripts/bench
 *  can time the exit path (agent summary + DB) from here to the process's end. */
static inline void bench_main_end(void)
{
    printf("main_end_ns %llu\n", (unsigned long long)bench_now_ns());
    fflush(stdout);
}

#endif
