/* hostctr_plan.c - PROFAGENT_HOST_COUNTERS parsing and libpfm4 encoding into the per-thread plan. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfmon/pfmlib_perf_event.h>

#include "hostctr_internal.h"
#include "../common/pa_log.h"

pa_hc_plan_t pa_hc_plan;

#define PA_HC_MAX_ASKED (PA_HC_MAX_EVENTS * 4) /* rows kept for the DB (the rest are counted) */
static pa_hc_event_t plan_events[PA_HC_MAX_ASKED + PA_HC_NSUBST];

size_t pa_hc_events(const pa_hc_event_t **ev)
{
    *ev = pa_hc_plan.ev;
    return pa_hc_plan.nev;
}

uint32_t pa_hc_ncounted(void) { return pa_hc_plan.ncounted; }

/* The name carries its own privilege level (":u", ":k", ":u=1", ...): respect it as given. */
static int has_plm_modifier(const char *s)
{
    for (const char *p = strchr(s, ':'); p; p = strchr(p + 1, ':')) {
        char c = (char)tolower((unsigned char)p[1]);
        if ((c == 'u' || c == 'k') && (p[2] == '\0' || p[2] == ':' || p[2] == '='))
            return 1;
    }
    return 0;
}

int pa_hc_encode(const char *name, pa_hc_event_t *e)
{
    memset(&e->attr, 0, sizeof e->attr);
    char *fstr = NULL;
    pfm_perf_encode_arg_t arg;
    memset(&arg, 0, sizeof arg);
    arg.attr = &e->attr;
    arg.fstr = &fstr;
    arg.size = sizeof arg;
    int r = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    if (r != PFM_SUCCESS) {
        snprintf(e->detail, sizeof e->detail, "libpfm4: %s", pfm_strerror(r));
        return -1;
    }
    snprintf(e->encoding, sizeof e->encoding, "%s", fstr ? fstr : name);
    free(fstr);
    e->attr.size = sizeof e->attr; /* libpfm4 leaves it to the caller */
    e->attr.disabled = 0;
    e->attr.inherit = 0;           /* each thread has its own group; children are not counted */
    e->attr.read_format = PA_HC_READ_FORMAT;
    e->attr.sample_period = 0;
    /* Context switches and migrations happen in the kernel: at user level they always count 0,
     * so unless the name says otherwise they are asked at every level (user level if refused). */
    if (e->attr.type == PERF_TYPE_SOFTWARE && !has_plm_modifier(name) &&
        (e->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES || e->attr.config == PERF_COUNT_SW_CPU_MIGRATIONS)) {
        e->attr.exclude_kernel = 0;
        char *k = strstr(e->encoding, ":k=0"); /* the encoding says what is counted */
        if (k)
            k[3] = '1';
    }
    return 0;
}

int pa_hc_same_event(const struct perf_event_attr *a, const struct perf_event_attr *b)
{
    return a->type == b->type && a->config == b->config && a->config1 == b->config1 &&
           a->config2 == b->config2 && a->exclude_kernel == b->exclude_kernel &&
           a->exclude_user == b->exclude_user;
}

/* Appends "'name'" to a message buffer, once per name (bounded: ", ..." once full). */
static void list_add(char *buf, size_t sz, const char *name)
{
    char q[136];
    snprintf(q, sizeof q, "'%s'", name);
    size_t n = strlen(buf), len = strlen(q);
    if (strstr(buf, q))
        return;
    if (n + len + 8 >= sz) {
        if (n + 6 <= sz && (n < 3 || strcmp(buf + n - 3, "...") != 0))
            memcpy(buf + n, ", ...", 6);
        return;
    }
    snprintf(buf + n, sz - n, "%s%s", n ? ", " : "", q);
}

/* Splits the spec into names (trimmed, empty ones skipped) and encodes each. */
static void plan_parse(const char *spec, char *unknown, size_t usz, char *dups, size_t dsz, size_t *asked,
                       size_t *too_many)
{
    const char *p = spec;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p, *e = p + len;
        p = comma ? comma + 1 : p + len;
        while (s < e && isspace((unsigned char)*s))
            s++;
        while (e > s && isspace((unsigned char)e[-1]))
            e--;
        if (s == e)
            continue;
        (*asked)++;
        /* classified in a scratch row; stored while rows remain (the DB keeps them all then) */
        pa_hc_event_t tmp, *ev = pa_hc_plan.nev < PA_HC_MAX_ASKED ? &pa_hc_plan.ev[pa_hc_plan.nev] : &tmp;
        memset(ev, 0, sizeof *ev);
        ev->column = PA_HC_NO_COLUMN;
        snprintf(ev->asked, sizeof ev->asked, "%.*s", (int)(e - s), s);
        snprintf(ev->name, sizeof ev->name, "%s", ev->asked);
        if (ev != &tmp)
            pa_hc_plan.nev++;
        if (!pa_hc_plan.pfm_ok || pa_hc_encode(ev->asked, ev) != 0) {
            ev->status = PA_HC_UNKNOWN;
            if (!pa_hc_plan.pfm_ok)
                snprintf(ev->detail, sizeof ev->detail, "libpfm4 could not be initialized: %s",
                         pfm_strerror(pa_hc_plan.pfm_err));
            list_add(unknown, usz, ev->asked);
            continue;
        }
        for (size_t i = 0; i < pa_hc_plan.nev; i++) {
            if (&pa_hc_plan.ev[i] != ev && pa_hc_plan.ev[i].status == 0 &&
                pa_hc_same_event(&pa_hc_plan.ev[i].attr, &ev->attr)) {
                ev->status = PA_HC_DUPLICATE;
                snprintf(ev->detail, sizeof ev->detail, "same event as '%s'", pa_hc_plan.ev[i].asked);
                list_add(dups, dsz, ev->asked);
                break;
            }
        }
        if (ev->status == 0 && pa_hc_plan.ntried >= PA_HC_MAX_EVENTS) {
            ev->status = PA_HC_TOO_MANY;
            snprintf(ev->detail, sizeof ev->detail, "more than %d events asked", PA_HC_MAX_EVENTS);
            (*too_many)++;
        }
        if (ev->status == 0)
            pa_hc_plan.ntried++;
    }
}

int pa_hc_init(const char *spec, int set)
{
    pa_hc_reset();
    if (!set || !spec)
        return 0;
    const char *q = spec;
    while (*q == ',' || isspace((unsigned char)*q))
        q++;
    if (!*q) {
        pa_warn("hostctr", "PROFAGENT_HOST_COUNTERS is empty: host counters stay off (accepted: a comma list"
                " of libpfm4 event names, e.g. cycles,instructions or task-clock,page-faults; `profagent"
                " counters` lists the names valid here)");
        return 0;
    }
    int r = pfm_initialize();
    pa_hc_plan.pfm_ok = r == PFM_SUCCESS;
    pa_hc_plan.pfm_err = r;
    char unknown[512] = "", dups[256] = "";
    size_t asked = 0, too_many = 0;
    plan_parse(spec, unknown, sizeof unknown, dups, sizeof dups, &asked, &too_many);
    pa_hc_plan.asked = asked;
    if (unknown[0] && !pa_hc_plan.pfm_ok)
        pa_warn("hostctr", "PROFAGENT_HOST_COUNTERS: libpfm4 could not be initialized (%s): no host counters",
                pfm_strerror(r));
    else if (unknown[0])
        pa_warn("hostctr", "PROFAGENT_HOST_COUNTERS: unknown event %s (libpfm4: event not found); ignored."
                " `profagent counters` lists the names valid on this machine (libpfm4 syntax, e.g. cycles,"
                " instructions, task-clock, perf::PERF_COUNT_HW_CACHE_MISSES:u)", unknown);
    if (too_many)
        pa_warn("hostctr", "PROFAGENT_HOST_COUNTERS: %zu events asked, at most %d different ones are counted"
                " per thread: %zu more ignored", asked, PA_HC_MAX_EVENTS, too_many);
    if (dups[0])
        pa_warn("hostctr", "PROFAGENT_HOST_COUNTERS: %s named an event already asked; counted once", dups);
    pa_hc_active = pa_hc_plan.ntried > 0;
    return (int)pa_hc_plan.ntried;
}

void pa_hc_plan_clear(void)
{
    memset(&pa_hc_plan, 0, sizeof pa_hc_plan);
    pa_hc_plan.ev = plan_events;
}
