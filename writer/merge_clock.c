/* merge_clock.c - puts the times of several sessions on one clock: input 0's CLOCK_MONOTONIC. */
#include <string.h>

#include "merge_internal.h"

/* Same CLOCK_MONOTONIC: one boot of one machine. The boot id decides when both DBs have it
 * (two containers may share a host name, two boots of one host do not share a clock); a DB
 * without it falls back to the host name. */
static int same_clock(const pa_minput_t *a, const pa_minput_t *b)
{
    if (a->boot[0] && b->boot[0])
        return strcmp(a->boot, b->boot) == 0;
    return strcmp(a->host, b->host) == 0;
}

/* Error bound of one host's anchor: its read error plus the kernel's estimated wall-clock error;
 * -1 when either is unknown or the wall clock is not synchronized. */
static int64_t anchor_bound(const pa_minput_t *m)
{
    if (m->anchor_err < 0 || m->wall_esterr < 0 || m->wall_synced != 1)
        return -1;
    return m->anchor_err + m->wall_esterr;
}

void pa_merge_clock_plan(pa_minput_t *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t r = i;
        for (size_t j = 0; j < i; j++)
            if (same_clock(&in[i], &in[j])) {
                r = j;
                break;
            }
        in[i].clock_ref = (int)r;
        if (i == 0) {
            in[i].clock_off = in[i].clock_unc = 0;
            continue;
        }
        if (r != i) { /* the domain's first input has the offset of the whole domain */
            in[i].clock_off = in[r].clock_off;
            in[i].clock_unc = in[r].clock_unc;
            in[i].clock_guess = in[r].clock_guess;
            if (r == 0)
                in[i].clock_unc = 2 * PA_MERGE_CLOCK_FOLLOW_NS;
            continue;
        }
        if (in[i].anchor_wall <= 0 || in[i].anchor_mono <= 0 || in[0].anchor_wall <= 0 || in[0].anchor_mono <= 0) {
            in[i].clock_off = 0; /* nothing to align by: most likely the same machine (recovered there) */
            in[i].clock_unc = -1;
            in[i].clock_guess = 1;
            continue;
        }
        /* t_ref = t_i + (wall_i - mono_i) - (wall_0 - mono_0): both anchors map their monotonic
         * clock onto the wall clock, which NTP keeps common to both hosts */
        in[i].clock_off = (in[i].anchor_wall - in[i].anchor_mono) - (in[0].anchor_wall - in[0].anchor_mono);
        int64_t a = anchor_bound(&in[i]), b = anchor_bound(&in[0]);
        in[i].clock_unc = a < 0 || b < 0 ? -1 : a + b + 2 * PA_MERGE_CLOCK_FOLLOW_NS;
    }
}
