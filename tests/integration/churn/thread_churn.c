/* thread_churn.c - creates and joins N short threads one after another, each doing one HGTX
 * range around zeDeviceGetProperties, zeEventPoolCreate/Destroy and a 100 us sleep; prints the
 * process's resident memory after thread MARK1 and after thread MARK2 have been joined.
 * usage: thread_churn N MARK1 MARK2 [ze|noze]
 * prints "rss_kib K V" for K = MARK1, MARK2 (VmRSS after malloc_trim, the smallest of a few
 * readings: a drain still behind holds a few rings for a moment) and "heap_b K V" (bytes malloc
 * has handed out and not got back, all arenas: what RSS shows without the pages that fixed-size
 * buffers touch for the first time as they fill), then "threads N" and
 * "distinct_tids D" (the kernel may hand a tid out again: the agent merges such threads). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <level_zero/ze_api.h>
#include <profagent/hgtx.h>

static ze_driver_handle_t driver;
static ze_device_handle_t device;
static ze_context_handle_t context;
static int use_ze = 1;
static unsigned *tids;

static void check(ze_result_t r, const char *what)
{
    if (r != ZE_RESULT_SUCCESS) {
        fprintf(stderr, "thread_churn: %s failed: 0x%x\n", what, (unsigned)r);
        exit(1);
    }
}

static void *worker(void *arg)
{
    *(unsigned *)arg = (unsigned)syscall(SYS_gettid);
    hgtxRangePushA("churn");
    if (use_ze) {
        ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
        check(zeDeviceGetProperties(device, &p), "zeDeviceGetProperties");
        ze_event_pool_desc_t d = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, .count = 1};
        ze_event_pool_handle_t pool;
        check(zeEventPoolCreate(context, &d, 1, &device, &pool), "zeEventPoolCreate");
        check(zeEventPoolDestroy(pool), "zeEventPoolDestroy");
    }
    usleep(100);
    hgtxRangePop();
    return NULL;
}

static long rss_kib_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            v = strtol(line + 6, NULL, 10);
    fclose(f);
    return v;
}

static void mark_print(unsigned long k)
{
    long best = -1;
    size_t heap = SIZE_MAX;
    for (int i = 0; i < 8; i++) {
        usleep(20000);
        malloc_trim(0);
        long v = rss_kib_now();
        if (v >= 0 && (best < 0 || v < best))
            best = v;
        struct mallinfo2 mi = mallinfo2();
        if (mi.uordblks + mi.hblkhd < heap)
            heap = mi.uordblks + mi.hblkhd;
    }
    printf("rss_kib %lu %ld\nheap_b %lu %zu\n", k, best, k, heap);
}

static int cmp_u(const void *x, const void *y)
{
    unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
    return a < b ? -1 : a > b;
}

static unsigned long arg_ul(const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v == 0 || v > 10000000ul) {
        fprintf(stderr, "thread_churn: %s must be a count in 1..10000000, got '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: thread_churn N MARK1 MARK2 [ze|noze]\n");
        return 2;
    }
    unsigned long n = arg_ul(argv[1], "N"), m1 = arg_ul(argv[2], "MARK1"), m2 = arg_ul(argv[3], "MARK2");
    if (argc == 5) {
        if (strcmp(argv[4], "noze") == 0) {
            use_ze = 0;
        } else if (strcmp(argv[4], "ze") != 0) {
            fprintf(stderr, "thread_churn: the 4th argument must be 'ze' or 'noze', got '%s'\n", argv[4]);
            return 2;
        }
    }
    tids = calloc(n, sizeof *tids);
    if (!tids)
        return 1;
    if (use_ze) {
        check(zeInit(0), "zeInit");
        uint32_t c = 1;
        check(zeDriverGet(&c, &driver), "zeDriverGet");
        c = 1;
        check(zeDeviceGet(driver, &c, &device), "zeDeviceGet");
        ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
        check(zeContextCreate(driver, &cd, &context), "zeContextCreate");
    }
    for (unsigned long i = 1; i <= n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, &tids[i - 1]) != 0) {
            fprintf(stderr, "thread_churn: pthread_create failed at thread %lu\n", i);
            return 1;
        }
        pthread_join(t, NULL);
        if (i == m1 || i == m2)
            mark_print(i);
    }
    if (use_ze)
        check(zeContextDestroy(context), "zeContextDestroy");
    qsort(tids, n, sizeof *tids, cmp_u);
    unsigned long distinct = 0;
    for (unsigned long i = 0; i < n; i++)
        distinct += i == 0 || tids[i] != tids[i - 1];
    printf("threads %lu\ndistinct_tids %lu\n", n, distinct);
    free(tids);
    return 0;
}
