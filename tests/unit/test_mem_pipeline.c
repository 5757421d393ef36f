/* test_mem_pipeline.c - memory records through aggregator, writer and reports: pairing in time
 * order (a free drained before its allocation), unknown frees, failed allocs, chain dedup,
 * group lists and every usage mode, with hand-computed expectations. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "../../common/pa_callstack.h"
#include "agg_internal.h"
#include "writer.h"

/* Frames: return addresses inside these functions (pc - 1 is looked up). */
__attribute__((noinline)) void fn_alpha(void) { __asm__ volatile(""); }
__attribute__((noinline)) void fn_beta(void) { __asm__ volatile(""); }
__attribute__((noinline)) void fn_root(void) { __asm__ volatile(""); }

typedef struct { pa_mem_stack_hdr_t h; uint64_t f[4]; } stk_t;
static stk_t s1, s2;

static void stacks_init(void)
{
    /* innermost first; the libc frame keeps the test binary's frames (which also hold the
     * symbolizer, i.e. look like "the agent") from being trimmed */
    uint64_t libc = (uint64_t)(uintptr_t)&getpid + 1;
    memset(&s1, 0, sizeof s1);
    memset(&s2, 0, sizeof s2);
    s1.h.device = s2.h.device = 0x1000;
    s1.h.nframes = 3;
    s2.h.nframes = 4;
    uint64_t f1[] = {libc, (uint64_t)(uintptr_t)&fn_alpha + 1, (uint64_t)(uintptr_t)&fn_root + 1};
    uint64_t f2[] = {libc, (uint64_t)(uintptr_t)&fn_beta + 1, (uint64_t)(uintptr_t)&fn_alpha + 1,
                     (uint64_t)(uintptr_t)&fn_root + 1};
    memcpy(s1.f, f1, sizeof f1);
    memcpy(s2.f, f2, sizeof f2);
}

static void alloc(pa_agg_t *a, uint32_t tid, uint64_t t, uint64_t ptr, uint64_t size, int32_t res,
                  const stk_t *s, int host)
{
    stk_t st = *s;
    if (host)
        st.h.device = 0, st.h.dev_index = UINT32_MAX;
    pa_record_t r = {.kind = PA_REC_MEM_ALLOC, .tid = tid, .t0 = t, .t1 = t + 5};
    r.u.mem.ptr = ptr;
    r.u.mem.size = size;
    r.u.mem.kind = host ? 1 : 2;
    r.u.mem.result = res;
    r.len = (uint32_t)(sizeof st.h + st.h.nframes * 8u);
    r.nslots = (uint16_t)pa_record_slots(r.len);
    pa_agg_process_for_test(a, &r, (const uint8_t *)&st);
}

static void mfree(pa_agg_t *a, uint32_t tid, uint64_t t, uint64_t ptr, int32_t res)
{
    pa_record_t r = {.kind = PA_REC_MEM_FREE, .tid = tid, .t0 = t, .t1 = t + 5, .nslots = 1};
    r.u.mem.ptr = ptr;
    r.u.mem.result = res;
    pa_agg_process_for_test(a, &r, NULL);
}

static char dbpath[256];

static int setup(void **state)
{
    (void)state;
    char spool[256];
    snprintf(spool, sizeof spool, "/tmp/test_mem_pipeline.%d.spool", (int)getpid());
    snprintf(dbpath, sizeof dbpath, "/tmp/test_mem_pipeline.%d.db", (int)getpid());
    unlink(dbpath);
    stacks_init();
    pa_agg_config_t cfg = {.spool_path = spool, .median_budget = 1024, .zstd_level = 1};
    pa_agg_t *a = pa_agg_create(&cfg);
    assert_non_null(a);
    alloc(a, 10, 100, 0x1000, 100, 0, &s1, 0);       /* p1, freed at 700 */
    mfree(a, 11, 350, 0x2000, 0);                    /* thread 11 frees p2, drained first */
    alloc(a, 10, 300, 0x2000, 200, 0, &s2, 0);       /* p2 */
    alloc(a, 10, 400, 0x3000, 400, 0, &s1, 0);       /* p3, leaked; same stack as p1 */
    alloc(a, 10, 500, 0, 1ull << 40, 0x70000003, &s2, 0); /* failed: never counted */
    mfree(a, 10, 600, 0x9000, 0);                    /* unknown address */
    mfree(a, 10, 700, 0x1000, 0);                    /* p1 */
    alloc(a, 10, 800, 0x4000, 50, 0, &s2, 1);        /* host p4, leaked */
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_non_null(res);
    pa_session_meta_t meta = {.pid = 4242, .hostname = "h", .cmdline = "t", .start_mono_ns = 1,
                              .end_mono_ns = 1000, .rank = -1, .complete = 1};
    assert_int_equal(pa_writer_write_db(dbpath, spool, &meta, res), 0);
    pa_agg_destroy(a);
    unlink(spool);
    assert_int_equal(pa_report_mem_add_group_rule("ga=fn_alpha", NULL), 0);
    assert_int_equal(pa_report_mem_add_group_rule("gb=fn_beta", NULL), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(dbpath);
    return 0;
}

/* CSV of one report, header included. */
static char *run(const char *spec)
{
    sqlite3 *db;
    char err[512] = "";
    assert_int_equal(pa_report_db_open(dbpath, &db, err, sizeof err), 0);
    pa_report_req_t *req;
    assert_int_equal(pa_report_parse(spec, &req, err, sizeof err), 0);
    char *buf = NULL;
    size_t sz = 0;
    FILE *f = open_memstream(&buf, &sz);
    int rc = pa_report_run(db, req, PA_FMT_CSV, f, err, sizeof err);
    fclose(f);
    if (rc)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    pa_report_req_free(req);
    sqlite3_close(db);
    return buf;
}

static void expect(const char *spec, const char *want)
{
    char *got = run(spec);
    const char *body = strchr(got, '\n');
    assert_non_null(body);
    assert_string_equal(body + 1, want);
    free(got);
}

static void test_usage_modes(void **s)
{
    (void)s;
    expect("device_memory_usage_summary:usage-mode=alloc-count",
           "1,4242,0,\"ga\",2,\n2,4242,0,\"ga/gb\",1,\n3,4242,\"-\",\"ga/gb\",1,\n");
    expect("device_memory_usage_summary:usage-mode=alloc-size",
           "1,4242,0,\"ga\",500,\n2,4242,0,\"ga/gb\",200,\n3,4242,\"-\",\"ga/gb\",50,\n");
    expect("device_memory_usage_summary:usage-mode=unreleased-count",
           "1,4242,0,\"ga\",1,\n2,4242,\"-\",\"ga/gb\",1,\n");
    expect("device_memory_usage_summary", "1,4242,0,\"ga\",400,\n2,4242,\"-\",\"ga/gb\",50,\n");
    expect("device_memory_usage_summary:usage-mode=alloc-size:match-first-group",
           "1,4242,0,\"ga\",700,\n2,4242,\"-\",\"ga\",50,\n");
}

static void test_time_range(void **s)
{
    (void)s;
    /* session starts at 1 ns: [0, 450] relative = events starting in [1, 451]; p1 (freed at 700)
     * counts as unreleased by then, p2 was freed at 350, p4 (800) is outside */
    pa_report_mem_set_time_range(0, 450);
    expect("device_memory_usage_summary", "1,4242,0,\"ga\",500,\n");
    expect("device_memory_usage_summary:usage-mode=alloc-count", "1,4242,0,\"ga\",2,\n2,4242,0,\"ga/gb\",1,\n");
    pa_report_mem_set_time_range(350, 0); /* from 351 to the end: p3 and p4 only */
    expect("device_memory_usage_summary:usage-mode=alloc-size",
           "1,4242,0,\"ga\",400,\n2,4242,\"-\",\"ga/gb\",50,\n");
    pa_report_mem_set_time_range(0, 0);
}

static void test_pairing_and_counts(void **s)
{
    (void)s;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
    sqlite3_stmt *st;
    /* the free of p2 (thread 11, drained before the allocation) matched it, size 200 */
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT f.size, f.allocEventId = a.eventId, f.globalTid & 4294967295"
        " FROM DEVICE_MEMORY f JOIN DEVICE_MEMORY a ON a.memory = f.memory AND a.op = 0"
        " WHERE f.op = 1 AND f.memory = 8192", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 200);
    assert_int_equal(sqlite3_column_int(st, 1), 1);
    assert_int_equal(sqlite3_column_int(st, 2), 11);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM DEVICE_MEMORY WHERE op = 1 AND"
        " allocEventId IS NULL), (SELECT count(*) FROM DEVICE_MEMORY WHERE op = 0 AND result != 0),"
        " (SELECT count(DISTINCT id) FROM CALLCHAINS), (SELECT max(stackDepth) FROM CALLCHAINS)",
        -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 1); /* unknown frees */
    assert_int_equal(sqlite3_column_int(st, 1), 1); /* failed allocs */
    assert_int_equal(sqlite3_column_int(st, 2), 2); /* two unique stacks */
    assert_int_equal(sqlite3_column_int(st, 3), 3); /* s2: 4 frames, depth 0..3 */
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_detail(void **s)
{
    (void)s;
    char *got = run("device_memory_usage_detail");
    /* p3 at 400 and host p4 at 800 remain */
    /* no context handle in these records: Context ID '-' (never the pointer) */
    assert_non_null(strstr(got, "\n1,4242,0,\"ga\",400,10,\"-\",\"0x3000\",400,\"device\",4,\n"));
    assert_non_null(strstr(got, "\n2,4242,\"-\",\"ga/gb\",800,10,\"-\",\"0x4000\",50,\"host\",8,\n"));
    free(got);
    got = run("device_memory_usage_detail:usage-mode=all");
    assert_non_null(strstr(got, "\"free (unknown)\""));
    /* Event IDs in time order: the free of p2 at 350 (drained before its allocation at 300) is
     * the 3rd event, p2's allocation the 2nd */
    assert_non_null(strstr(got, "\n2,4242,0,\"ga/gb\",300,10,\"-\",\"0x2000\",200,\"device\",2,\n"));
    assert_non_null(strstr(got, ",350,11,\"-\",\"0x2000\",200,\"free\",3,\n"));
    assert_non_null(strstr(got, "\"device (failed)\""));
    int rows = 0;
    for (char *p = got; (p = strchr(p, '\n')); p++)
        rows++;
    assert_int_equal(rows, 1 + 8);
    free(got);
}

/* Address reuse across threads: thread 20 enters zeMemAlloc at 1000 (ends 1005, alloc t1 = t0+5)
 * while thread 21 frees 0x5000 at 1002; the driver hands the freed 0x5000 to thread 20. In start
 * order the second allocation comes before the free that made its address available: the free
 * must still release the FIRST allocation (made at 900), and the second must stay live. A plain
 * start-order pairing freed the second one and reported the first as leaked. */
static void test_reuse_race(void **s)
{
    (void)s;
    char spool[256], db2[256];
    snprintf(spool, sizeof spool, "/tmp/test_mem_reuse.%d.spool", (int)getpid());
    snprintf(db2, sizeof db2, "/tmp/test_mem_reuse.%d.db", (int)getpid());
    unlink(db2);
    pa_agg_config_t cfg = {.spool_path = spool, .median_budget = 1024, .zstd_level = 1};
    pa_agg_t *a = pa_agg_create(&cfg);
    assert_non_null(a);
    alloc(a, 21, 900, 0x5000, 128, 0, &s1, 0);  /* first owner of 0x5000 */
    alloc(a, 20, 1000, 0x5000, 256, 0, &s2, 0); /* gets 0x5000 once the free below released it */
    mfree(a, 21, 1002, 0x5000, 0);              /* frees the 128-byte allocation */
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_non_null(res);
    pa_session_meta_t meta = {.pid = 4243, .hostname = "h", .cmdline = "t", .start_mono_ns = 1,
                              .end_mono_ns = 2000, .rank = -1, .complete = 1};
    assert_int_equal(pa_writer_write_db(db2, spool, &meta, res), 0);
    pa_agg_destroy(a);
    unlink(spool);
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(db2, &db), SQLITE_OK);
    /* the free names the 128-byte allocation; the 256-byte one is the only one unreleased */
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT size FROM DEVICE_MEMORY WHERE op = 1),"
        " (SELECT group_concat(size) FROM DEVICE_MEMORY a WHERE op = 0 AND NOT EXISTS"
        "  (SELECT 1 FROM DEVICE_MEMORY f WHERE f.op = 1 AND f.allocEventId = a.eventId))",
        -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 128);
    assert_string_equal((const char *)sqlite3_column_text(st, 1), "256");
    sqlite3_finalize(st);
    sqlite3_close(db);
    unlink(db2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_modes),
        cmocka_unit_test(test_time_range),
        cmocka_unit_test(test_pairing_and_counts),
        cmocka_unit_test(test_detail),
        cmocka_unit_test(test_reuse_race),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
