/* hostile_app.c - what a hostile user does to a profiled process, one mode per argv[1]
 * (run_hostile.py checks the exit status, the DB, the files and the messages):
 *   ranges N NAME [AT_NS]  N push/pop ranges NAME, then (AT_NS) sleep until CLOCK_REALTIME AT_NS
 *   chdir DIR              10 ranges "before", chdir(DIR), 10 ranges "after", 300 ms more
 *   deep N                 N nested pushes "d<level>" then N pops
 *   fsize BYTES N          RLIMIT_FSIZE = BYTES, then N ranges; exits 21
 *   nofile FDS N           RLIMIT_NOFILE = FDS, then N ranges, prints "nofile done"; exits 22
 *   xfsz HANDLE WRITE      (started under a file size limit) HANDLE 1: counts SIGXFSZ in a
 *                          handler; WRITE 1: writes a line to stderr itself; 3 ranges; prints
 *                          "xfsz signals S write R" (R: the write's errno, 0 if it worked) */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <profagent/hgtx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void ranges(long n, const char *name)
{
    for (long i = 0; i < n; i++) {
        hgtxRangePushA(name);
        hgtxRangePop();
    }
}

static volatile sig_atomic_t xfsz_seen;

static void on_xfsz(int sig)
{
    (void)sig;
    xfsz_seen++;
}

static int xfsz(int handle, int do_write)
{
    if (handle)
        signal(SIGXFSZ, on_xfsz);
    int r = 0;
    if (do_write && write(2, "app line\n", 9) < 0)
        r = errno;
    ranges(3, "xfsz");
    printf("xfsz signals %d write %d\n", (int)xfsz_seen, r);
    return 0;
}

static void sleep_until(long long at_ns)
{
    struct timespec ts = {(time_t)(at_ns / 1000000000), (long)(at_ns % 1000000000)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "ranges") && argc >= 4) {
        ranges(atol(argv[2]), argv[3]);
        if (argc > 4)
            sleep_until(atoll(argv[4]));
        return 0;
    }
    if (!strcmp(m, "chdir") && argc == 3) {
        ranges(10, "before");
        if (chdir(argv[2]) != 0)
            return 3;
        ranges(10, "after");
        usleep(300000); /* a spool flush (every 250 ms) after the chdir */
        return 0;
    }
    if (!strcmp(m, "deep") && argc == 3) {
        long n = atol(argv[2]);
        char name[32];
        for (long i = 0; i < n; i++) {
            snprintf(name, sizeof name, "d%ld", i + 1);
            hgtxRangePushA(name);
        }
        for (long i = 0; i < n; i++)
            hgtxRangePop();
        return 0;
    }
    if (!strcmp(m, "fsize") && argc == 4) {
        struct rlimit rl = {(rlim_t)atol(argv[2]), (rlim_t)atol(argv[2])};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            return 4;
        ranges(atol(argv[3]), "fsize");
        return 21;
    }
    if (!strcmp(m, "nofile") && argc == 4) {
        struct rlimit rl = {(rlim_t)atol(argv[2]), (rlim_t)atol(argv[2])};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            return 4;
        ranges(atol(argv[3]), "nofile");
        printf("nofile done\n");
        return 22;
    }
    if (!strcmp(m, "xfsz") && argc == 4)
        return xfsz(atoi(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: hostile_app ranges N NAME [AT_NS] | chdir DIR | deep N | fsize BYTES N | nofile FDS N | xfsz HANDLE WRITE\n");
    return 2;
}
