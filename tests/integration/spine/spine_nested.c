/* spine_nested.c - 10 x (outer push, 30 ms, inner push, 10 ms, pop, pop); checks return levels
 * and prints the CLOCK_MONOTONIC bracket of every push and pop (run_spine.py bounds the ranges). */
#include <stdio.h>
#include <time.h>

#include <profagent/hgtx.h>

#include "spine_clock.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(void)
{
    int bad = 0;
    for (int i = 0; i < 10; i++) {
        spine_bracket o, n;
        o.push0 = spine_mono_ns();
        bad += hgtxRangePushA("outer") != 0;
        o.push1 = spine_mono_ns();
        sleep_ms(30);
        n.push0 = spine_mono_ns();
        bad += hgtxRangePushA("inner") != 1;
        n.push1 = spine_mono_ns();
        sleep_ms(10);
        n.pop0 = spine_mono_ns();
        bad += hgtxRangePop() != 1;
        n.pop1 = o.pop0 = spine_mono_ns();
        bad += hgtxRangePop() != 0;
        o.pop1 = spine_mono_ns();
        spine_bracket_print("outer", &o);
        spine_bracket_print("inner", &n);
    }
    bad += hgtxRangePop() != -1; /* misuse: empty stack */
    printf("levels %s\n", bad ? "WRONG" : "ok");
    return bad ? 1 : 0;
}
