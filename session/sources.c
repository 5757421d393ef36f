/* sources.c - the source table: every source of the agent, one line each, and the loops the session runs over it. */
#include "../collector/collector.h"
#include "../common/pa_log.h"
#include "../common/pa_source.h"
#include "session.h"

/*
 * THE TABLE. One line per source, in init order (finish runs in reverse): a source is its
 * own folder (collector/, sampling/, hwcounters/) defining `const pa_source_t
 * pa_source_<name>` (common/pa_source.h) plus one line here.
 *
 * ze before mem: the mem source records through the Level Zero tracer that ze attaches.
 * devmet, pcsamp before ze: ZET_ENABLE_METRICS=1 must be set before the agent's first zeInit.
 */
#define PA_SOURCE_LIST(PA_SOURCE) \
    PA_SOURCE(devmet)             \
    PA_SOURCE(pcsamp)             \
    PA_SOURCE(hgtx)               \
    PA_SOURCE(osrt)               \
    PA_SOURCE(ze)                 \
    PA_SOURCE(mem)                \
    PA_SOURCE(itt)                \
    PA_SOURCE(hostctr)

#define PA_SOURCE_DECL(n) extern const pa_source_t pa_source_##n;
#define PA_SOURCE_ENTRY(n) &pa_source_##n,
PA_SOURCE_LIST(PA_SOURCE_DECL)
const pa_source_t *const pa_source_table[] = {PA_SOURCE_LIST(PA_SOURCE_ENTRY)};
const unsigned pa_source_count = sizeof pa_source_table / sizeof pa_source_table[0];

#define PA_SOURCE_MAX 32
_Static_assert(sizeof pa_source_table / sizeof pa_source_table[0] <= PA_SOURCE_MAX, "raise PA_SOURCE_MAX");

static uint32_t inited; /* bit i: pa_source_table[i]->init() succeeded (or has none) */

/* A range overlapping another's would make the aggregator hand records to the wrong source:
 * said once at start (a programming error, caught by every integration test's stderr). */
static void check_ranges(void)
{
    for (unsigned i = 0; i < pa_source_count; i++) {
        const pa_source_t *a = pa_source_table[i];
        if (a->rec_first > a->rec_last)
            pa_err("agent", "source %s: empty record-kind range 0x%x..0x%x", a->name, a->rec_first, a->rec_last);
        for (unsigned j = i + 1; j < pa_source_count; j++) {
            const pa_source_t *b = pa_source_table[j];
            if (a->rec_first <= b->rec_last && b->rec_first <= a->rec_last)
                pa_err("agent", "sources %s and %s share record kinds 0x%x..0x%x / 0x%x..0x%x", a->name, b->name,
                       a->rec_first, a->rec_last, b->rec_first, b->rec_last);
        }
    }
}

/* Runs every thread_detach() hook at a thread's exit (set as pa_thread_on_detach). */
static void sources_thread_detach(void)
{
    for (unsigned i = 0; i < pa_source_count; i++)
        if ((inited >> i & 1) && pa_source_table[i]->thread_detach)
            pa_source_table[i]->thread_detach();
}

/* Runs every thread_attach() hook on a thread's first event (set as pa_thread_on_attach). */
static void sources_thread_attach(void)
{
    for (unsigned i = 0; i < pa_source_count; i++)
        if ((inited >> i & 1) && pa_source_table[i]->thread_attach)
            pa_source_table[i]->thread_attach();
}

uint32_t pa_sources_init(uint32_t trace)
{
    check_ranges();
    int any_attach = 0, any_detach = 0;
    for (unsigned i = 0; i < pa_source_count; i++) {
        const pa_source_t *s = pa_source_table[i];
        if (!(s->mask & trace))
            continue;
        if (s->init && s->init() != 0) {
            pa_info("agent", "source %s is off for this session", s->name);
            trace &= ~s->mask;
            continue;
        }
        inited |= 1u << i;
        any_attach |= s->thread_attach != NULL;
        any_detach |= s->thread_detach != NULL;
    }
    if (any_attach)
        pa_thread_on_attach = sources_thread_attach;
    if (any_detach)
        pa_thread_on_detach = sources_thread_detach;
    return trace;
}

void pa_sources_finish(uint64_t budget_ns)
{
    for (unsigned i = pa_source_count; i-- > 0;)
        if ((inited >> i & 1) && pa_source_table[i]->finish)
            pa_source_table[i]->finish(budget_ns);
}

void pa_sources_exit_thread(void)
{
    for (unsigned i = pa_source_count; i-- > 0;)
        if ((inited >> i & 1) && pa_source_table[i]->exit_thread)
            pa_source_table[i]->exit_thread();
}

void pa_sources_fork_child(void)
{
    pa_thread_on_attach = NULL;
    pa_thread_on_detach = NULL;
    for (unsigned i = 0; i < pa_source_count; i++)
        if ((inited >> i & 1) && pa_source_table[i]->fork_child)
            pa_source_table[i]->fork_child();
    inited = 0;
}
