/* spine_hgtx_sem.c - HGTX semantics under the agent: per-domain stacks, bad handles, deep
 * nesting, long names (run_hgtx.py checks the DB, the summary and the reports). */
#include <profagent/hgtx.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spine_clock.h"

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* push A:a, 10 ms, push B:b, 20 ms, pop A, 40 ms, pop B: A:a ~30 ms, B:b ~60 ms, B:b level 0.
 * Each push and pop is bracketed by CLOCK_MONOTONIC readings (printed: which pop closed which range).
 * Then 3 misuses with bad handles: push/pop on garbage 0x5678, a mark on a destroyed domain. */
static int domains(void)
{
    hgtxDomainHandle_t a = hgtxDomainCreateA("A"), b = hgtxDomainCreateA("B");
    spine_bracket ba, bb;
    ba.push0 = spine_mono_ns();
    hgtxDomainRangePushA(a, "a");
    ba.push1 = spine_mono_ns();
    sleep_ms(10);
    bb.push0 = spine_mono_ns();
    hgtxDomainRangePushA(b, "b");
    bb.push1 = spine_mono_ns();
    sleep_ms(20);
    ba.pop0 = spine_mono_ns();
    int la = hgtxDomainRangePop(a);
    ba.pop1 = spine_mono_ns();
    sleep_ms(40);
    bb.pop0 = spine_mono_ns();
    int lb = hgtxDomainRangePop(b);
    bb.pop1 = spine_mono_ns();
    spine_bracket_print("A:a", &ba);
    spine_bracket_print("B:b", &bb);
    hgtxDomainHandle_t junk = (hgtxDomainHandle_t)(uintptr_t)0x5678;
    hgtxDomainRangePushA(junk, "j");
    sleep_ms(1);
    hgtxDomainRangePop(junk);
    hgtxDomainDestroy(b);
    hgtxDomainMarkA(b, "after destroy");
    hgtxDomainHandle_t unnamed = hgtxDomainCreateA(NULL); /* a valid domain without a name */
    hgtxDomainRangePushA(unnamed, "in-unnamed");
    hgtxDomainRangePop(unnamed);
    return la == 0 && lb == 0 ? 0 : 1;
}

/* A domain created on one thread and used at once on a newer one: the newer thread's ring is
 * drained first (rings are drained newest first), before the creator's DOMAIN record. */
static void *use_domain(void *arg)
{
    hgtxDomainHandle_t d = arg;
    hgtxDomainRangePushA(d, "r");
    hgtxDomainRangePop(d);
    hgtxDomainMarkA(d, "m");
    hgtxRangeId_t id = hgtxDomainRangeStartA(d, "s");
    hgtxDomainRangeEnd(d, id);
    return NULL;
}

static int domain_order(int n)
{
    hgtxMarkA("main has a ring"); /* the creator's ring is older than every user's */
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "D%d", i);
        hgtxDomainHandle_t d = hgtxDomainCreateA(name);
        pthread_t t;
        if (pthread_create(&t, NULL, use_domain, d) != 0)
            return 1;
        pthread_join(t, NULL);
    }
    return 0;
}

/* `n` nested pushes, then as many pops. */
static int deep(int n)
{
    for (int i = 0; i < n; i++)
        if (hgtxRangePushA("deep") != i)
            return 1;
    for (int i = n - 1; i >= 0; i--)
        if (hgtxRangePop() != i)
            return 1;
    return 0;
}

/* A 100 KB name (kept byte-exact) and a 200 KB name (cut at HGTX_MESSAGE_MAX), each a closed
 * range; one OSRT call and the same short name twice (STRING_IDS holds each string once). */
static int names(void)
{
    size_t n1 = 100 * 1024, n2 = 200 * 1024;
    char *big = malloc(n2 + 1);
    if (!big)
        return 1;
    for (size_t i = 0; i < n2; i++)
        big[i] = (char)('a' + i % 26);
    big[n1] = '\0';
    hgtxRangePushA(big);
    hgtxRangePop();
    big[n1] = 'z';
    big[n2] = '\0';
    hgtxRangePushA(big);
    hgtxRangePop();
    free(big);
    for (int i = 0; i < 2; i++) {
        hgtxRangePushA("nanosleep");
        sleep_ms(2);
        hgtxRangePop();
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "domains") == 0)
        return domains();
    if (strcmp(mode, "deep") == 0)
        return deep(argc > 2 ? atoi(argv[2]) : 3000);
    if (strcmp(mode, "names") == 0)
        return names();
    if (strcmp(mode, "domain_order") == 0)
        return domain_order(argc > 2 ? atoi(argv[2]) : 50);
    return 2;
}
