/* hgtx_stub.c - libhgtx.so: the HGTX API, forwarded to the preloaded agent's definitions, else no-ops. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "profagent/hgtx.h"

#define HGTX_API __attribute__((visibility("default")))

/* Why forward: an application linked against libhgtx.so reaches libprofagent.so's definitions by
 * symbol interposition (LD_PRELOAD comes first in the global scope), but one that loads
 * libhgtx.so itself (dlopen + dlsym on the handle, Python ctypes.CDLL) gets these definitions.
 * So each stub looks up the process-global definition once (dlsym(RTLD_DEFAULT), cached in a
 * relaxed atomic: every thread resolves the same address, a race only repeats the lookup) and
 * calls it when it is not the stub itself; otherwise it is the no-op. After the first call the
 * cost without the agent is one load and a compare. */
#define HGTX_NONE ((void *)1) /* cached: no other definition, act as the no-op */

/* 1 when `f` lies in this library. (The address of an exported stub taken here would go
 * through the GOT, i.e. be the interposed definition itself: compare load bases instead.) */
static int hgtx_is_self(void *f)
{
    Dl_info mine, its;
    return dladdr(f, &its) && dladdr((void *)hgtx_is_self, &mine) && its.dli_fbase == mine.dli_fbase;
}

static void *hgtx_resolve(_Atomic(void *) *cache, const char *name)
{
    void *f = atomic_load_explicit(cache, memory_order_relaxed);
    if (!f) {
        f = dlsym(RTLD_DEFAULT, name);
        if (!f || hgtx_is_self(f))
            f = HGTX_NONE;
        atomic_store_explicit(cache, f, memory_order_relaxed);
    }
    return f == HGTX_NONE ? NULL : f;
}

/* `fn` set to the agent's definition of the current stub `name`, or NULL. */
#define HGTX_FORWARD(name)                                                                      \
    static _Atomic(void *) cache_;                                                              \
    __typeof__(&name) fn = (__typeof__(&name))hgtx_resolve(&cache_, #name)

/* Push/pop still count levels so code that checks return values behaves the same. */
static __thread int depth;

HGTX_API int hgtxRangePushA(const char *message)
{
    HGTX_FORWARD(hgtxRangePushA);
    return fn ? fn(message) : depth++;
}

HGTX_API int hgtxRangePop(void)
{
    HGTX_FORWARD(hgtxRangePop);
    return fn ? fn() : depth > 0 ? --depth : -1;
}

HGTX_API hgtxRangeId_t hgtxRangeStartA(const char *message)
{
    HGTX_FORWARD(hgtxRangeStartA);
    return fn ? fn(message) : 0;
}

HGTX_API void hgtxRangeEnd(hgtxRangeId_t id)
{
    HGTX_FORWARD(hgtxRangeEnd);
    if (fn)
        fn(id);
}

HGTX_API void hgtxMarkA(const char *message)
{
    HGTX_FORWARD(hgtxMarkA);
    if (fn)
        fn(message);
}

HGTX_API hgtxDomainHandle_t hgtxDomainCreateA(const char *name)
{
    HGTX_FORWARD(hgtxDomainCreateA);
    return fn ? fn(name) : NULL;
}

HGTX_API void hgtxDomainDestroy(hgtxDomainHandle_t domain)
{
    HGTX_FORWARD(hgtxDomainDestroy);
    if (fn)
        fn(domain);
}

HGTX_API int hgtxDomainRangePushA(hgtxDomainHandle_t domain, const char *message)
{
    HGTX_FORWARD(hgtxDomainRangePushA);
    return fn ? fn(domain, message) : depth++;
}

HGTX_API int hgtxDomainRangePop(hgtxDomainHandle_t domain)
{
    HGTX_FORWARD(hgtxDomainRangePop);
    return fn ? fn(domain) : depth > 0 ? --depth : -1;
}

HGTX_API hgtxRangeId_t hgtxDomainRangeStartA(hgtxDomainHandle_t domain, const char *message)
{
    HGTX_FORWARD(hgtxDomainRangeStartA);
    return fn ? fn(domain, message) : 0;
}

HGTX_API void hgtxDomainRangeEnd(hgtxDomainHandle_t domain, hgtxRangeId_t id)
{
    HGTX_FORWARD(hgtxDomainRangeEnd);
    if (fn)
        fn(domain, id);
}

HGTX_API void hgtxDomainMarkA(hgtxDomainHandle_t domain, const char *message)
{
    HGTX_FORWARD(hgtxDomainMarkA);
    if (fn)
        fn(domain, message);
}
