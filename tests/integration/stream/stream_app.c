/* stream_app.c - workloads for the DB written while the program runs: a deterministic HGTX mix
 * (same rows every run but for times), and a paced range stream that prints its progress. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <profagent/hgtx.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A raw sleep: not an OS-runtime call the agent would record (the rows stay deterministic). */
static void raw_sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    syscall(SYS_nanosleep, &ts, NULL);
}

/* det ITER: per iteration an outer range holding three inner ranges (the last one in a domain)
 * and a mark, a start/end range, every 50th iteration a 2 ms pause (20000 iterations: ~1 s, so a
 * streamed run has many spool frames and commits). Every row but times is the same in every run. */
static int run_det(long iters)
{
    hgtxDomainHandle_t dom = hgtxDomainCreateA("det-domain");
    char name[32];
    for (long i = 0; i < iters; i++) {
        hgtxRangePushA("outer");
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "inner-%d", k);
            if (k == 2) {
                hgtxDomainRangePushA(dom, name);
                hgtxDomainMarkA(dom, "dmark");
                hgtxDomainRangePop(dom);
            } else {
                hgtxRangePushA(name);
                hgtxRangePop();
            }
        }
        hgtxMarkA(i % 2 ? "odd" : "even");
        hgtxRangePop();
        hgtxRangeId_t id = hgtxRangeStartA(i % 3 ? "se-a" : "se-b");
        hgtxRangeEnd(id);
        if (i % 50 == 49)
            raw_sleep_ns(2000000);
    }
    hgtxDomainDestroy(dom);
    printf("det %ld\n", iters);
    return 0;
}

/* progress RANGES RATE [hold]: RANGES push/pop ranges "p" (2 events each) at RATE ranges/s,
 * printing "progress <ranges ended> <CLOCK_MONOTONIC ns>" after every 10000 ranges; with "hold",
 * then "held", and main returns only once stdin reaches its end (the reader decides how long the
 * program keeps running, not the machine's load). */
static int run_progress(long ranges, long rate, int hold)
{
    uint64_t t0 = mono_ns();
    for (long i = 0; i < ranges; i++) {
        hgtxRangePushA("p");
        hgtxRangePop();
        if ((i + 1) % 10000 == 0) {
            printf("progress %ld %llu\n", i + 1, (unsigned long long)mono_ns());
            fflush(stdout);
            uint64_t due = t0 + (uint64_t)((double)(i + 1) * 1e9 / (double)rate);
            uint64_t now = mono_ns();
            if (due > now)
                raw_sleep_ns(due - now);
        }
    }
    if (hold) {
        printf("held %ld %llu\n", ranges, (unsigned long long)mono_ns());
        fflush(stdout);
        char buf[64];
        while (read(0, buf, sizeof buf) > 0)
            ;
    }
    /* flushed before main returns: the test reads "done" as "the exit part may run from now on" */
    printf("done %ld %llu\n", ranges, (unsigned long long)mono_ns());
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "det") == 0)
        return run_det(atol(argv[2]));
    if (argc >= 4 && strcmp(argv[1], "progress") == 0)
        return run_progress(atol(argv[2]), atol(argv[3]), argc >= 5 && strcmp(argv[4], "hold") == 0);
    fprintf(stderr, "usage: stream_app det ITER | progress RANGES RATE [hold]\n");
    return 2;
}
