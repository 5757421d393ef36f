/* pa_clock.h - the one host clock every stage uses: CLOCK_MONOTONIC in ns. */
#ifndef PA_CLOCK_H
#define PA_CLOCK_H

#include <stdint.h>
#include <time.h>

/*! pa_clock_ns() : CLOCK_MONOTONIC now, in ns (vDSO, no syscall on Linux x86-64). */
static inline uint64_t pa_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
