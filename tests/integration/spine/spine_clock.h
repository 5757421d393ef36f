/* spine_clock.h - the app's own CLOCK_MONOTONIC readings around an HGTX call, printed so the
 * test can bound a recorded range by what happened rather than by what a sleep should take. */
#ifndef SPINE_CLOCK_H
#define SPINE_CLOCK_H
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/*! spine_mono_ns() : CLOCK_MONOTONIC in ns, the clock the agent's DB times are on */
static inline uint64_t spine_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A range's bracket: its push ran within [push0, push1], its pop within [pop0, pop1]. */
typedef struct {
    uint64_t push0, push1, pop0, pop1;
} spine_bracket;

/*! spine_bracket_print() : one line "bracket NAME push0 push1 pop0 pop1" (ns) on stdout */
static inline void spine_bracket_print(const char *name, const spine_bracket *b)
{
    printf("bracket %s %llu %llu %llu %llu\n", name, (unsigned long long)b->push0,
           (unsigned long long)b->push1, (unsigned long long)b->pop0, (unsigned long long)b->pop1);
}
#endif
