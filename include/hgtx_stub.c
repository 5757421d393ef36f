/* hgtx_stub.c - libhgtx.so: the HGTX API as no-ops; libprofagent.so's definitions override these. */
#include <stddef.h>

#include "profagent/hgtx.h"

#define HGTX_API __attribute__((visibility("default")))

/* Push/pop still count levels so code that checks return values behaves the same. */
static __thread int depth;

HGTX_API int hgtxRangePushA(const char *message) { (void)message; return depth++; }
HGTX_API int hgtxRangePop(void) { return depth > 0 ? --depth : -1; }
HGTX_API hgtxRangeId_t hgtxRangeStartA(const char *message) { (void)message; return 0; }
HGTX_API void hgtxRangeEnd(hgtxRangeId_t id) { (void)id; }
HGTX_API void hgtxMarkA(const char *message) { (void)message; }
HGTX_API hgtxDomainHandle_t hgtxDomainCreateA(const char *name) { (void)name; return NULL; }
HGTX_API void hgtxDomainDestroy(hgtxDomainHandle_t domain) { (void)domain; }
HGTX_API int hgtxDomainRangePushA(hgtxDomainHandle_t domain, const char *message)
{
    (void)domain, (void)message;
    return depth++;
}
HGTX_API int hgtxDomainRangePop(hgtxDomainHandle_t domain) { (void)domain; return depth > 0 ? --depth : -1; }
HGTX_API hgtxRangeId_t hgtxDomainRangeStartA(hgtxDomainHandle_t domain, const char *message)
{
    (void)domain, (void)message;
    return 0;
}
HGTX_API void hgtxDomainRangeEnd(hgtxDomainHandle_t domain, hgtxRangeId_t id) { (void)domain, (void)id; }
HGTX_API void hgtxDomainMarkA(hgtxDomainHandle_t domain, const char *message) { (void)domain, (void)message; }
