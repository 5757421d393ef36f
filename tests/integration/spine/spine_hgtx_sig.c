/* spine_hgtx_sig.c - HGTX ranges pushed from a signal handler at any instant of the thread's own
 * pushes and pops: a SIGALRM every 50 us (setitimer) whose handler pushes "sig" with "sig-in"
 * nested in it, while the main thread pushes "outer" > "inner" in a tight loop.
 * usage: spine_hgtx_sig [ms]  (default 1500). Blocks of 256 x 2 ranges (~30 us) alternate with
 * 300 us of spinning (the handler runs there too) so the aggregator keeps up. Prints "main N", "sig N" (ranges pushed, each
 * popped) and "level-bad N" (hgtxRangePushA returned a level that contradicts the handler's own
 * nesting: the inner push must be one deeper than its "sig"). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <profagent/hgtx.h>

static volatile sig_atomic_t sig_ranges, level_bad;

static void on_alarm(int s)
{
    (void)s;
    int a = hgtxRangePushA("sig");
    int b = hgtxRangePushA("sig-in");
    if (b != a + 1)
        level_bad++;
    int pb = hgtxRangePop();
    int pa = hgtxRangePop();
    if (pb != b || pa != a)
        level_bad++;
    sig_ranges += 2;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 1500;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    /* the thread's first range sets up its ring (and counter group): agent code, during which a
     * handler's ranges are not recorded; the races under test are those of the loop below */
    hgtxRangePushA("warmup");
    hgtxRangePop();
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &it, NULL);
    long main_ranges = 0;
    double end = now_ms() + ms;
    /* at most 300 k ranges (600 k records: the test's 1 M-slot ring holds them all even if the
     * aggregator drained nothing), however fast the machine runs the loop */
    while (now_ms() < end && main_ranges < 300000) {
        for (int i = 0; i < 256; i++) {
            hgtxRangePushA("outer");
            hgtxRangePushA("inner");
            hgtxRangePop();
            hgtxRangePop();
        }
        main_ranges += 512;
        double t = now_ms() + 0.3; /* let the aggregator keep up: no ring drops */
        while (now_ms() < t)
            ;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_IGN);
    printf("main %ld\nsig %d\nlevel-bad %d\n", main_ranges, (int)sig_ranges, (int)level_bad);
    return 0;
}
