/* synth.h - a synthetic session (spool + aggregates) with hand-computed report rows, shared by
 * the writer unit test and the CLI integration test. Values are documented in expected.txt. */
#ifndef PA_TEST_SYNTH_H
#define PA_TEST_SYNTH_H

#include <string.h>

#include "pa_spool.h"
#include "writer.h"

#define SYNTH_PID 4242u
#define SYNTH_WEIRD "a\"b,c\nd\te\\f\xff" "g"  /* quote, comma, newline, tab, backslash, 0xFF */

static inline int synth_string(pa_spool_writer_t *w, uint64_t id, const void *s, uint32_t len)
{
    pa_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = PA_SP_STRING;
    r.len = len;
    r.u.str.id = id;
    return pa_spool_append(w, &r, s);
}

static inline int synth_range(pa_spool_writer_t *w, uint32_t id, uint32_t tid, uint64_t t0,
                              uint64_t t1, uint32_t name, uint32_t domain, int level,
                              uint32_t parent, int startend, uint32_t end_tid)
{
    pa_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = PA_SP_HGTX_RANGE;
    r.tid = tid;
    r.t0 = t0;
    r.t1 = t1;
    r.flags = startend ? PA_RF_STARTEND : 0;
    r.u.range.name_id = name;
    r.u.range.domain_id = domain;
    r.u.range.range_id = id;
    r.u.range.parent_id = parent;
    r.u.range.level = startend ? -1 : level;
    r.u.range.end_tid = end_tid;
    return pa_spool_append(w, &r, NULL);
}

static inline int synth_osrt(pa_spool_writer_t *w, uint32_t tid, uint32_t func, uint64_t t0,
                             uint64_t dur, int ret, int err)
{
    pa_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = PA_SP_OSRT;
    r.tid = tid;
    r.t0 = t0;
    r.t1 = t0 + dur;
    r.u.osrt.func = func;
    r.u.osrt.ret = ret;
    r.u.osrt.err = err;
    return pa_spool_append(w, &r, NULL);
}

/* Strings: 1 profile, 2 Loop1, 3 DoProcess, 4 Step, 5 io (domain), 6 read, 7 SYNTH_WEIRD,
 * 8 "main", 9 the empty string, 10 a 100 KB string of 'x' ending in "END".
 * Threads 100 (main) and 101. Push/pop: 6 profile [1000,11000] t100; 7 Loop1 [2000,9000] t101
 * > 13 DoProcess [3000,5000] > 16 Step [3500,4000]; 7 > 14 DoProcess [5500,8500];
 * 9 Loop1 [9500,12500] > 15 DoProcess [10000,11000]; 30 SYNTH_WEIRD [20000,20010] t100.
 * Start/end io:read: 20 [4000,10000] t100 -> t101, 21 [12000,13000] t100.
 * OSRT: nanosleep 100/300/200 ns on t100, poll 1000/3000 ns on t101. */
static inline int synth_write_spool(const char *path)
{
    static char big[100 * 1024];
    pa_spool_writer_t *w = pa_spool_open_write(path, 1);
    if (!w)
        return -1;
    memset(big, 'x', sizeof big);
    memcpy(big + sizeof big - 3, "END", 3);
    const char *names[] = {"profile", "Loop1", "DoProcess", "Step", "io", "read"};
    int rc = 0;
    for (uint32_t i = 0; i < 6; i++)
        rc |= synth_string(w, i + 1, names[i], (uint32_t)strlen(names[i]));
    rc |= synth_string(w, 7, SYNTH_WEIRD, (uint32_t)sizeof SYNTH_WEIRD - 1);
    rc |= synth_string(w, 8, "main", 4);
    rc |= synth_string(w, 9, "", 0);
    rc |= synth_string(w, 10, big, (uint32_t)sizeof big);
    pa_record_t t;
    memset(&t, 0, sizeof t);
    t.kind = PA_SP_THREAD;
    t.tid = 100; t.t0 = 1000; t.t1 = 20010;
    t.u.thread.name_id = 8; t.u.thread.records = 50; t.u.thread.drops = 3;
    rc |= pa_spool_append(w, &t, NULL);
    t.tid = 101; t.t0 = 2000; t.t1 = 12500;
    t.u.thread.name_id = 0; t.u.thread.records = 20; t.u.thread.drops = 0;
    rc |= pa_spool_append(w, &t, NULL);
    rc |= synth_range(w, 6, 100, 1000, 11000, 1, 0, 0, 0, 0, 100);
    rc |= synth_range(w, 7, 101, 2000, 9000, 2, 0, 0, 0, 0, 101);
    rc |= synth_range(w, 13, 101, 3000, 5000, 3, 0, 1, 7, 0, 101);
    rc |= synth_range(w, 16, 101, 3500, 4000, 4, 0, 2, 13, 0, 101);
    rc |= synth_range(w, 14, 101, 5500, 8500, 3, 0, 1, 7, 0, 101);
    rc |= synth_range(w, 9, 101, 9500, 12500, 2, 0, 0, 0, 0, 101);
    rc |= synth_range(w, 15, 101, 10000, 11000, 3, 0, 1, 9, 0, 101);
    rc |= synth_range(w, 30, 100, 20000, 20010, 7, 0, 0, 0, 0, 100);
    rc |= synth_range(w, 20, 100, 4000, 10000, 6, 5, -1, 0, 1, 101);
    rc |= synth_range(w, 21, 100, 12000, 13000, 6, 5, -1, 0, 1, 100);
    rc |= synth_osrt(w, 100, PA_OSRT_NANOSLEEP, 1100, 100, 0, 0);
    rc |= synth_osrt(w, 100, PA_OSRT_NANOSLEEP, 1300, 300, -1, 4);
    rc |= synth_osrt(w, 100, PA_OSRT_NANOSLEEP, 1700, 200, 0, 0);
    rc |= synth_osrt(w, 101, PA_OSRT_POLL, 2100, 1000, 0, 0);
    rc |= synth_osrt(w, 101, PA_OSRT_POLL, 3500, 3000, -1, 9);
    rc |= pa_spool_close_write(w, NULL, NULL);
    return rc ? -1 : 0;
}

/* Aggregates as the aggregator would report them; the nanosleep median is marked inexact
 * (and wrong, 999) so the writer must recompute 200 from the rows. */
static inline void synth_results(pa_agg_results_t *res, pa_stat_row_t rows[2],
                                 pa_thread_info_t th[2])
{
    memset(res, 0, sizeof *res);
    memset(rows, 0, 2 * sizeof *rows);
    memset(th, 0, 2 * sizeof *th);
    rows[0].cat = PA_CAT_OSRT; rows[0].key = "nanosleep"; rows[0].key_len = 9;
    rows[0].st = (pa_stat_t){.count = 3, .total = 600, .min = 100, .max = 300, .mean = 200,
                             .m2 = 20000, .median = 999, .median_exact = 0};
    rows[1].cat = PA_CAT_OSRT; rows[1].key = "poll"; rows[1].key_len = 4;
    rows[1].st = (pa_stat_t){.count = 2, .total = 4000, .min = 1000, .max = 3000, .mean = 2000,
                             .m2 = 2000000, .median = 2000, .median_exact = 1};
    th[0].tid = 100; memcpy(th[0].name, "main", 5); th[0].records = 50; th[0].drops = 3;
    th[1].tid = 101; th[1].records = 20;
    res->rows = rows; res->nrows = 2;
    res->threads = th; res->nthreads = 2;
    res->records_total = 70; res->drops_total = 3; res->late_records = 1;
    res->hgtx_misuse_pop_empty = 2; res->hgtx_misuse_bad_end = 1;
    res->hgtx_misuse_bad_domain = 4; res->hgtx_depth_overflow = 5; res->unrecorded = 6;
    res->first_ns = 1000; res->last_ns = 20010;
}

static inline void synth_meta(pa_session_meta_t *m)
{
    memset(m, 0, sizeof *m);
    m->pid = SYNTH_PID;
    m->hostname = "testhost";
    m->cmdline = "./synthetic --flag";
    m->start_wall_ns = 1700000000000000000ull;
    m->start_mono_ns = 1000;
    m->end_mono_ns = 20010;
    m->rank = -1;
    m->complete = 1;
}

#endif
