/* hostctr_source.c - the host counter source's descriptor for the session's table (common/pa_source.h). */
#include <stdlib.h>

#include "hostctr.h"
#include "../collector/collector.h"
#include "../common/pa_source.h"

/* Counters are read at HGTX ranges, so the source runs with hgtx; PROFAGENT_HOST_COUNTERS
 * (empty: off) says what to count. Never fails: without counters it does nothing. */
static int hc_src_init(void)
{
    /* set and empty: said by pa_hc_init; set to an "off" word (0, no, off, false): off, as asked
     * (the configuration left the list empty) */
    const char *e = getenv("PROFAGENT_HOST_COUNTERS");
    pa_hc_init(pa_config.host_counters, e && (!e[0] || pa_config.host_counters[0]));
    return 0;
}

static void hc_src_finish(uint64_t budget_ns)
{
    (void)budget_ns;
    pa_hc_finish();
}

const pa_source_t pa_source_hostctr = {
    .name = "hostctr",
    .mask = PA_SRC_HGTX,
    .rec_first = PA_REC_HC_FIRST,
    .rec_last = PA_REC_HC_LAST,
    .init = hc_src_init,
    .thread_attach = NULL, /* groups open at a thread's first range, not its first event */
    .finish = hc_src_finish,
    .fork_child = pa_hc_after_fork_child,
    .thread_detach = pa_hc_thread_detach, /* a last read before the ring is retired */
    .exit_thread = pa_hc_exit_thread,     /* the exiting thread's total, before its ring is lent */
};
