/* exitlife_early.c - a library whose constructor uses HGTX before the (preloaded) agent's constructor ran. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <profagent/hgtx.h>

__attribute__((constructor)) static void early_ctor(void)
{
    const char *e = getenv("EXITLIFE_LIBCTOR");
    if (e && strcmp(e, "1") == 0) {
        hgtxRangePushA("lib_outer");
        hgtxRangePushA("lib_inner");
        hgtxRangePop();
        hgtxMarkA("lib_mark");
    }
}

/* A library that does some work in its destructor (EXITLIFE_SLOW_FINI=ms): the process takes
 * that long in _dl_fini, while other threads may still call Level Zero. */
__attribute__((destructor)) static void early_dtor(void)
{
    const char *e = getenv("EXITLIFE_SLOW_FINI");
    long ms = e ? atol(e) : 0;
    if (ms > 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
}

void exitlife_early_pop(void)
{
    hgtxRangePop();
}
