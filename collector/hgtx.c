/* hgtx.c - the agent's definitions of the public HGTX API (override libhgtx.so's no-ops). */
#include "collector.h"

#include <profagent/hgtx.h>

static _Atomic uint64_t next_range_id; /* start/end ids, > 0 */
static _Atomic uint32_t next_domain_id; /* domain ids, > 0; 0 = default domain */

static inline uint32_t domain_id(hgtxDomainHandle_t d)
{
    return (uint32_t)(uintptr_t)d;
}

/* NULL names are recorded as "". */
static inline void emit_named(pa_record_t *rec, const char *name)
{
    rec->t0 = pa_clock_ns();
    pa_emit(rec, name ? name : "", name ? (uint32_t)strlen(name) : 0);
}

static inline int push(uint32_t dom, const char *message)
{
    int level = pa_tls.depth++;
    if (pa_agent_collecting(PA_SRC_HGTX)) {
        pa_record_t rec = {.kind = PA_REC_HGTX_PUSH};
        rec.u.hgtx.domain = dom;
        rec.u.hgtx.level = level;
        emit_named(&rec, message);
    }
    return level;
}

/* Returns the level of the closed range, -1 on an empty stack (still recorded: the
 * aggregator counts the misuse). */
static inline int pop(uint32_t dom)
{
    int level = pa_tls.depth > 0 ? --pa_tls.depth : -1;
    if (pa_agent_collecting(PA_SRC_HGTX)) {
        pa_record_t rec = {.kind = PA_REC_HGTX_POP, .t0 = pa_clock_ns()};
        rec.u.hgtx.domain = dom;
        rec.u.hgtx.level = level;
        pa_emit(&rec, NULL, 0);
    }
    return level;
}

static inline hgtxRangeId_t start(uint32_t dom, const char *message)
{
    if (!pa_agent_collecting(PA_SRC_HGTX))
        return 0;
    pa_record_t rec = {.kind = PA_REC_HGTX_START};
    rec.u.hgtx.id = atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed) + 1;
    rec.u.hgtx.domain = dom;
    rec.u.hgtx.level = -1;
    emit_named(&rec, message);
    return rec.u.hgtx.id;
}

static inline void end(uint32_t dom, hgtxRangeId_t id)
{
    if (!pa_agent_collecting(PA_SRC_HGTX))
        return;
    pa_record_t rec = {.kind = PA_REC_HGTX_END, .t0 = pa_clock_ns()};
    rec.u.hgtx.id = id;
    rec.u.hgtx.domain = dom;
    rec.u.hgtx.level = -1;
    pa_emit(&rec, NULL, 0);
}

static inline void mark(uint32_t dom, const char *message)
{
    if (!pa_agent_collecting(PA_SRC_HGTX))
        return;
    pa_record_t rec = {.kind = PA_REC_HGTX_MARK};
    rec.u.hgtx.domain = dom;
    emit_named(&rec, message);
}

PA_EXPORT int hgtxRangePushA(const char *message) { return push(0, message); }
PA_EXPORT int hgtxRangePop(void) { return pop(0); }
PA_EXPORT hgtxRangeId_t hgtxRangeStartA(const char *message) { return start(0, message); }
PA_EXPORT void hgtxRangeEnd(hgtxRangeId_t id) { end(0, id); }
PA_EXPORT void hgtxMarkA(const char *message) { mark(0, message); }

PA_EXPORT hgtxDomainHandle_t hgtxDomainCreateA(const char *name)
{
    if (!pa_agent_collecting(PA_SRC_HGTX))
        return NULL;
    pa_record_t rec = {.kind = PA_REC_HGTX_DOMAIN};
    uint32_t id = atomic_fetch_add_explicit(&next_domain_id, 1, memory_order_relaxed) + 1;
    rec.u.hgtx.domain = id;
    emit_named(&rec, name);
    return (hgtxDomainHandle_t)(uintptr_t)id;
}

PA_EXPORT void hgtxDomainDestroy(hgtxDomainHandle_t domain)
{
    if (!domain || !pa_agent_collecting(PA_SRC_HGTX))
        return;
    pa_record_t rec = {.kind = PA_REC_HGTX_DOMAIN_DESTROY, .t0 = pa_clock_ns()};
    rec.u.hgtx.domain = domain_id(domain);
    pa_emit(&rec, NULL, 0);
}

PA_EXPORT int hgtxDomainRangePushA(hgtxDomainHandle_t d, const char *message) { return push(domain_id(d), message); }
PA_EXPORT int hgtxDomainRangePop(hgtxDomainHandle_t d) { return pop(domain_id(d)); }
PA_EXPORT hgtxRangeId_t hgtxDomainRangeStartA(hgtxDomainHandle_t d, const char *message)
{
    return start(domain_id(d), message);
}
PA_EXPORT void hgtxDomainRangeEnd(hgtxDomainHandle_t d, hgtxRangeId_t id) { end(domain_id(d), id); }
PA_EXPORT void hgtxDomainMarkA(hgtxDomainHandle_t d, const char *message) { mark(domain_id(d), message); }
