/* test_agg_hc.c - host counter pairing in the aggregator: reads claimed by the HGTX record with the same t0,
 * nested push/pop deltas, multiplex scaling, a read whose record was dropped, start/end on one thread vs
 * across threads, per-thread totals from the exit read, event outcomes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agg_internal.h"
#include "pa_hostctr.h"
#include "pa_spool.h"

void pa_agg_ze_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    (void)a, (void)rec, (void)payload;
}
void pa_agg_ze_api(pa_agg_t *a, const pa_record_t *rec)
{
    (void)a, (void)rec;
}
void pa_agg_ze_finish(pa_agg_t *a) { (void)a; }
void pa_agg_mem_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    (void)a, (void)rec, (void)payload;
}
void pa_agg_mem_finish(pa_agg_t *a) { (void)a; }

static char path[64];

static void sample(pa_agg_t *a, uint32_t tid, uint64_t t0, uint64_t en, uint64_t run, uint64_t v0, uint64_t v1,
                   uint32_t flags)
{
    pa_hc_snap_t s = {.enabled = en, .running = run, .n = 2, .v = {v0, v1}};
    pa_record_t rec = {.kind = PA_REC_HC_SAMPLE, .tid = tid, .t0 = t0, .nslots = 1, .flags = flags};
    uint64_t pl[PA_HC_MAX_EVENTS];
    assert_int_equal(pa_hc_sample_pack(&rec, pl, &s), 0);
    pa_agg_process_for_test(a, &rec, NULL);
}

static void hgtx(pa_agg_t *a, uint16_t kind, uint32_t tid, uint64_t t0, const char *name, uint64_t id)
{
    pa_record_t rec = {.kind = kind, .tid = tid, .t0 = t0, .nslots = 1};
    rec.u.hgtx.id = id;
    rec.u.hgtx.level = kind == PA_REC_HGTX_START || kind == PA_REC_HGTX_END ? -1 : 0;
    if (name) {
        size_t n = strlen(name);
        uint32_t off = pa_hgtx_inline_off(kind);
        memcpy((uint8_t *)&rec + off, name, n);
        rec.flags = PA_RF_INLINE | (uint32_t)n << 16;
    }
    pa_agg_process_for_test(a, &rec, NULL);
}

static void event(pa_agg_t *a, const char *name, uint32_t status, uint32_t column)
{
    char pl[64];
    size_t n = (size_t)snprintf(pl, sizeof pl, "%s", name) + 1;
    memcpy(pl + n, "\0enc\0why", 8); /* asked "", encoding "enc", detail "why" */
    pa_record_t rec = {.kind = PA_REC_HC_EVENT, .tid = 1, .t0 = 1, .len = (uint32_t)(n + 8)};
    rec.nslots = (uint16_t)pa_record_slots(rec.len);
    rec.u.raw[0] = status | (uint64_t)column << 32;
    pa_agg_process_for_test(a, &rec, (const uint8_t *)pl);
}

/* range id -> name, and the deltas per range id */
static char names[32][16];
static uint64_t delta[32][2], raw[32][2], en[32];
static int has_delta[32];
static uint64_t thr_total[8][2];
static int thr_exit[8];

static void read_back(void)
{
    memset(names, 0, sizeof names);
    memset(has_delta, 0, sizeof has_delta);
    char *str[64] = {0};
    pa_spool_reader_t *r = pa_spool_open_read(path);
    assert_non_null(r);
    const pa_record_t *rec;
    const uint8_t *pl;
    while (pa_spool_next(r, &rec, &pl) == 1) {
        if (rec->kind == PA_SP_STRING && rec->u.str.id < 64) {
            str[rec->u.str.id] = calloc(1, rec->len + 1);
            memcpy(str[rec->u.str.id], pl ? (const char *)pl : "", rec->len);
        } else if (rec->kind == PA_SP_HGTX_RANGE && rec->u.range.range_id < 32) {
            const char *s = str[rec->u.range.name_id];
            snprintf(names[rec->u.range.range_id], 16, "%s", s ? s : "?");
        } else if (rec->kind == PA_SP_HC_RANGE && rec->u.raw[0] < 32) {
            uint64_t id = rec->u.raw[0];
            assert_int_equal(PA_RF_HC_N(rec->flags), 2);
            assert_int_equal(rec->len, 32);
            memcpy(&delta[id][0], pl, 8);
            memcpy(&raw[id][0], pl + 8, 8);
            memcpy(&delta[id][1], pl + 16, 8);
            memcpy(&raw[id][1], pl + 24, 8);
            en[id] = rec->u.raw[1];
            has_delta[id] = 1;
        } else if (rec->kind == PA_SP_HC_THREAD && rec->tid < 8) {
            memcpy(&thr_total[rec->tid][0], pl, 8);
            memcpy(&thr_total[rec->tid][1], pl + 16, 8);
            thr_exit[rec->tid] = (rec->u.raw[0] & PA_RF_HC_EXIT) != 0;
        }
    }
    pa_spool_close_read(r);
    for (int i = 0; i < 64; i++)
        free(str[i]);
}

static int id_of(const char *name)
{
    for (int i = 0; i < 32; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

static void test_pairing(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/test_agg_hc_%d.zst", (int)getpid());
    pa_agg_config_t cfg = {.spool_path = path};
    pa_agg_t *a = pa_agg_create(&cfg);
    assert_non_null(a);
    event(a, "task-clock", PA_HC_SUBSTITUTE, 0);
    event(a, "page-faults", PA_HC_OPENED, 1);
    event(a, "cycles", PA_HC_NO_PMU, PA_HC_NO_COLUMN);
    /* nested push/pop on thread 1 */
    sample(a, 1, 100, 100, 100, 10, 1, 0);
    hgtx(a, PA_REC_HGTX_PUSH, 1, 100, "outer", 0);
    sample(a, 1, 200, 200, 200, 50, 2, 0);
    hgtx(a, PA_REC_HGTX_PUSH, 1, 200, "inner", 0);
    sample(a, 1, 300, 300, 300, 70, 2, 0);
    hgtx(a, PA_REC_HGTX_POP, 1, 300, NULL, 0);
    sample(a, 1, 400, 400, 400, 100, 5, 0);
    hgtx(a, PA_REC_HGTX_POP, 1, 400, NULL, 0);
    /* multiplexed: ran 250 of 1000 ns -> x4 */
    sample(a, 1, 500, 1000, 1000, 100, 5, 0);
    hgtx(a, PA_REC_HGTX_PUSH, 1, 500, "mux", 0);
    sample(a, 1, 600, 2000, 1250, 110, 6, 0);
    hgtx(a, PA_REC_HGTX_POP, 1, 600, NULL, 0);
    /* a read whose push was dropped: the next push does not take it */
    sample(a, 1, 700, 2100, 1350, 120, 6, 0);
    sample(a, 1, 710, 2110, 1360, 121, 6, 0);
    hgtx(a, PA_REC_HGTX_PUSH, 1, 710, "afterdrop", 0);
    sample(a, 1, 720, 2120, 1370, 125, 7, 0);
    hgtx(a, PA_REC_HGTX_POP, 1, 720, NULL, 0);
    /* start/end on one thread; and one ended on thread 2 */
    sample(a, 1, 800, 2200, 1450, 130, 7, 0);
    hgtx(a, PA_REC_HGTX_START, 1, 800, "same", 5);
    sample(a, 1, 850, 2250, 1500, 160, 9, 0);
    hgtx(a, PA_REC_HGTX_START, 1, 850, "cross", 6);
    sample(a, 1, 900, 2300, 1550, 190, 9, 0);
    hgtx(a, PA_REC_HGTX_END, 1, 900, NULL, 5);
    sample(a, 2, 950, 50, 50, 5, 0, 0);
    hgtx(a, PA_REC_HGTX_END, 2, 950, NULL, 6);
    /* a push without any read (a thread whose group failed) and the exit read of thread 1 */
    hgtx(a, PA_REC_HGTX_PUSH, 3, 960, "nocounters", 0);
    hgtx(a, PA_REC_HGTX_POP, 3, 970, NULL, 0);
    sample(a, 1, 1000, 3000, 2250, 300, 10, PA_RF_HC_EXIT);
    const pa_agg_results_t *res = pa_agg_finish(a);
    const pa_hc_results_t *hc = res->hc;
    assert_non_null(hc);
    assert_int_equal(hc->nev, 3);
    assert_string_equal(hc->ev[0].name, "task-clock");
    assert_string_equal(hc->ev[0].encoding, "enc");
    assert_string_equal(hc->ev[2].detail, "why");
    assert_int_equal(hc->ev[2].status, PA_HC_NO_PMU);
    assert_int_equal(hc->ncols, 2);
    assert_int_equal(hc->unmatched, 1);
    assert_int_equal(hc->cross_thread, 1);
    assert_int_equal(hc->ranges_with, 5);
    read_back();
    int outer = id_of("outer"), inner = id_of("inner"), mux = id_of("mux"), ad = id_of("afterdrop"),
        same = id_of("same"), cross = id_of("cross"), noc = id_of("nocounters");
    assert_true(outer > 0 && inner > 0 && mux > 0 && ad > 0 && same > 0 && cross > 0 && noc > 0);
    assert_int_equal(delta[outer][0], 90);
    assert_int_equal(delta[outer][1], 4);
    assert_int_equal(delta[inner][0], 20);
    assert_int_equal(delta[inner][1], 0);
    assert_int_equal(en[inner], 100);
    assert_int_equal(delta[mux][0], 40); /* raw 10 x 1000 / 250 */
    assert_int_equal(raw[mux][0], 10);
    assert_int_equal(delta[mux][1], 4);
    assert_int_equal(delta[ad][0], 4);    /* 125 - 121: its own read, not the dropped one's */
    assert_int_equal(delta[same][0], 60); /* 190 - 130 */
    assert_int_equal(has_delta[cross], 0);
    assert_int_equal(has_delta[noc], 0);
    /* thread 1's totals from its exit read, scaled: 300 x 3000 / 2250 = 400 */
    assert_int_equal(thr_total[1][0], 400);
    assert_int_equal(thr_exit[1], 1);
    assert_int_equal(thr_total[2][0], 5);
    assert_int_equal(thr_exit[2], 0);
    pa_agg_destroy(a);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pairing)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
