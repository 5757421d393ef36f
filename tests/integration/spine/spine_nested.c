/* spine_nested.c - 10 x (outer push, 30 ms, inner push, 10 ms, pop, pop); checks return levels. */
#include <stdio.h>
#include <time.h>

#include <profagent/hgtx.h>

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
        bad += hgtxRangePushA("outer") != 0;
        sleep_ms(30);
        bad += hgtxRangePushA("inner") != 1;
        sleep_ms(10);
        bad += hgtxRangePop() != 1;
        bad += hgtxRangePop() != 0;
    }
    bad += hgtxRangePop() != -1; /* misuse: empty stack */
    printf("levels %s\n", bad ? "WRONG" : "ok");
    return bad ? 1 : 0;
}
