/* test_writer_db.c - the writer builds a DB from a synthetic spool; reports give exact rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "synth.h"
#include "writer_internal.h"

static char dir[64], dbp[128], spool[128];

static int setup(void **state)
{
    (void)state;
    pa_session_meta_t meta;
    pa_agg_results_t res;
    pa_stat_row_t rows[2];
    pa_thread_info_t th[2];
    strcpy(dir, "/tmp/pa_test_writer_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(dbp, sizeof dbp, "%s/s.db", dir);
    snprintf(spool, sizeof spool, "%s/s.spool", dir);
    if (synth_write_spool(spool) != 0)
        return -1;
    synth_meta(&meta);
    synth_results(&res, rows, th);
    return pa_writer_write_db(dbp, spool, &meta, &res);
}

static int teardown(void **state)
{
    (void)state;
    unlink(dbp);
    unlink(spool);
    rmdir(dir);
    return 0;
}

static char *report(const char *spec, int fmt)
{
    sqlite3 *db;
    pa_report_req_t *req;
    char err[1024], *buf = NULL;
    size_t len;
    assert_int_equal(pa_report_db_open(dbp, &db, err, sizeof err), PA_REP_OK);
    assert_int_equal(pa_report_parse(spec, &req, err, sizeof err), PA_REP_OK);
    FILE *f = open_memstream(&buf, &len);
    int rc = pa_report_run(db, req, fmt, f, err, sizeof err);
    fclose(f);
    if (rc)
        print_error("%s\n", err);
    assert_int_equal(rc, PA_REP_OK);
    pa_report_req_free(req);
    sqlite3_close(db);
    return buf;
}

static void test_osrt_sum_rows(void **state)
{
    (void)state;
    char *out = report("osrt_sum", PA_FMT_CSV);
    /* poll 1000+3000: 4000 of 4600 = 86.96 %, population stddev sqrt(2e6/2) = 1000;
     * nanosleep 100+300+200: median 200, stddev sqrt(20000/3) = 81.6 -> 81 (truncated, as the
     * spec's examples print integer statistics) */
    assert_string_equal(out,
        "Row#,Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name,\n"
        "1,87.0,4000,2,2000,2000,1000,3000,1000,\"poll\",\n"
        "2,13.0,600,3,200,200,100,300,81,\"nanosleep\",\n");
    free(out);
}

static void test_pushpop_rows(void **state)
{
    (void)state;
    char *out = report("hgtx_pushpop_trace:range=^(Loop|Step)", PA_FMT_CSV);
    /* Loop1 7: children 13 (2000) + 14 (3000); Step 16 under 13 under 7 at level 2 */
    assert_string_equal(out,
        "Row#,Start (ns),End (ns),Duration (ns),DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,"
        "NumChild,RangeId,ParentId,RangeStack,NameTree,\n"
        "1,2000,9000,7000,5000,2000,\"Loop1\",4242,101,0,2,7,\"-\",\":7\",\"Loop1\",\n"
        "2,3500,4000,500,0,500,\"Step\",4242,101,2,0,16,13,\":7:13:16\",\"--Step\",\n"
        "3,9500,12500,3000,1000,2000,\"Loop1\",4242,101,0,1,9,\"-\",\":9\",\"Loop1\",\n");
    free(out);
}

static void test_hgtx_sum_rows(void **state)
{
    (void)state;
    char *out = report("hgtx_sum:rows=3", PA_FMT_CSV);
    /* all ranges total 33510 ns; Loop1 and profile tie at 10000 (ordered by name) */
    assert_string_equal(out,
        "Row#,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range,\n"
        "1,29.8,10000,2,5000,5000,3000,7000,2000,\"PushPop\",\"Loop1\",\n"
        "2,29.8,10000,1,10000,10000,10000,10000,0,\"PushPop\",\"profile\",\n"
        "3,20.9,7000,2,3500,3500,1000,6000,2500,\"StartEnd\",\"io:read\",\n");
    free(out);
}

static void test_meta_and_no_overwrite(void **state)
{
    (void)state;
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT value FROM META WHERE key ="
        " 'session_complete'), (SELECT value FROM META WHERE key = 'drops'), (SELECT"
        " length(CAST(value AS BLOB)) FROM STRING_IDS WHERE id = 10), (SELECT count(*) FROM"
        " OSRT_API)", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 1);
    assert_int_equal(sqlite3_column_int(st, 1), 3);
    assert_int_equal(sqlite3_column_int(st, 2), 100 * 1024);
    assert_int_equal(sqlite3_column_int(st, 3), 5);
    sqlite3_finalize(st);
    sqlite3_close(db);
    pa_session_meta_t meta;
    synth_meta(&meta);
    assert_int_equal(pa_writer_write_db(dbp, spool, &meta, NULL), -1);  /* exists: refused */
}

/* The trace tables declare no column types (writer/schema.c): the writer alone keeps every
 * value an integer, as SQLite's INTEGER affinity did; a real or a text would change what
 * the reports' integer comparisons and the damaged-row checks see. */
static void test_trace_values_integer(void **state)
{
    (void)state;
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
#define PA_T(c) "typeof(" c ") = 'integer'"
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM HGTX_RANGES), (SELECT count(*) FROM"
        " HGTX_RANGES WHERE " PA_T("start") " AND " PA_T("end") " AND " PA_T("globalTid") " AND "
        PA_T("endGlobalTid") " AND " PA_T("nameId") " AND " PA_T("domainId") " AND " PA_T("style") " AND "
        PA_T("level") " AND " PA_T("parentId") " AND " PA_T("unterminated") "), (SELECT count(*) FROM OSRT_API),"
        " (SELECT count(*) FROM OSRT_API WHERE " PA_T("start") " AND " PA_T("end") " AND " PA_T("globalTid")
        " AND " PA_T("nameId") " AND " PA_T("ret") " AND " PA_T("errno") ")", -1, &st, NULL), SQLITE_OK);
#undef PA_T
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 10);
    assert_int_equal(sqlite3_column_int(st, 1), 10);
    assert_int_equal(sqlite3_column_int(st, 2), 5);
    assert_int_equal(sqlite3_column_int(st, 3), 5);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_osrt_sum_rows),
        cmocka_unit_test(test_pushpop_rows),
        cmocka_unit_test(test_hgtx_sum_rows),
        cmocka_unit_test(test_trace_values_integer),
        cmocka_unit_test(test_meta_and_no_overwrite),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
