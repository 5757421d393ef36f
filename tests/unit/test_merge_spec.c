/* test_merge_spec.c - merge knows every table and column the writer creates; the clock plan. */
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

#include "merge_internal.h"
#include "writer.h"

/* A DB written by the writer with every source's tables (a session with a rank, so
 * RANK_DEVICE_MAP exists too): each of its tables and columns must have a merge rule, and each
 * rule (but merge's own MERGE_* tables) must name a table the writer creates: a table or
 * column added to the schema without deciding how merge carries it fails here. */
static void test_every_table_known(void **state)
{
    (void)state;
    char path[] = "/tmp/pa_merge_spec_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    pa_session_meta_t meta = {.pid = 4242, .hostname = "h", .cmdline = "x", .rank = 0, .complete = 1};
    assert_int_equal(pa_writer_write_db(path, NULL, &meta, NULL), 0);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st, *ci;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE"
                                        " 'sqlite_%' ORDER BY name", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1)", -1, &ci, NULL), SQLITE_OK);
    size_t nspec, ntables = 0;
    const pa_mtable_t *spec = pa_merge_spec(&nspec);
    char seen[64] = {0};
    assert_true(nspec <= sizeof seen);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        const pa_mtable_t *m = pa_merge_spec_find(t);
        if (!m)
            fail_msg("table %s of the writer's schema has no merge rule (writer/merge_spec.c)", t);
        seen[m - spec] = 1;
        ntables++;
        int ncols = 0;
        sqlite3_bind_text(ci, 1, t, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(ci) == SQLITE_ROW) {
            const char *c = (const char *)sqlite3_column_text(ci, 0);
            if (!pa_merge_spec_col(m, c, strlen(c)))
                fail_msg("column %s.%s has no merge rule (writer/merge_spec.c)", t, c);
            ncols++;
        }
        sqlite3_reset(ci);
        assert_true(ncols > 0);
    }
    for (size_t i = 0; i < nspec; i++)
        if (!seen[i] && strncmp(spec[i].name, "MERGE_", 6) != 0)
            fail_msg("merge rule for %s, a table the writer does not create", spec[i].name);
    assert_true(ntables >= 27);
    sqlite3_finalize(st);
    sqlite3_finalize(ci);
    sqlite3_close(db);
    unlink(path);
}

static void test_spec_kinds(void **state)
{
    (void)state;
    const pa_mtable_t *t = pa_merge_spec_find("ZE_OPS");
    assert_non_null(t);
    assert_int_equal(pa_merge_spec_col(t, "rowid", 5), 'O');
    assert_int_equal(pa_merge_spec_col(t, "tid", 3), 'g');
    assert_int_equal(pa_merge_spec_col(t, "deviceId", 8), 'd');
    assert_int_equal(pa_merge_spec_col(t, "start", 5), 't');
    assert_int_equal(pa_merge_spec_col(t, "bytes", 5), '-');
    assert_int_equal(pa_merge_spec_col(t, "byte", 4), 0);
    assert_int_equal(pa_merge_spec_col(t, "appendCorrId", 12), 'C');
    assert_null(pa_merge_spec_find("NO_SUCH_TABLE"));
}

static pa_minput_t host(const char *h, const char *boot, int64_t wall, int64_t mono, int64_t err, int64_t est, int sync)
{
    pa_minput_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.host, sizeof m.host, "%s", h);
    snprintf(m.boot, sizeof m.boot, "%s", boot);
    m.anchor_wall = wall, m.anchor_mono = mono, m.anchor_err = err, m.wall_esterr = est, m.wall_synced = sync;
    return m;
}

/* Same boot: offset 0. Another host: (wall - mono) difference, uncertainty = both anchors' read
 * errors + both estimated wall-clock errors; unknown (-1) when a wall clock is not synchronized.
 * Same host name but another boot: another clock. Inputs of one foreign domain share its offset. */
static void test_clock_plan(void **state)
{
    (void)state;
    pa_minput_t in[5] = {
        host("a", "b1", 1000000000000, 5000, 10, 1000, 1),
        host("a", "b1", 1000000900000, 905000, 12, 1000, 1),  /* same boot: shares the clock */
        host("b", "b2", 1000000000000, 7000, 20, 3000, 1),    /* other host: mono 2000 ns behind */
        host("b", "b2", 1000000500000, 507500, 5, 3000, 1),   /* same domain as [2]: its offset */
        host("a", "b3", 1000000000000, 100, 1, 1, 0),         /* rebooted a, wall clock unsynchronized */
    };
    pa_merge_clock_plan(in, 5);
    assert_int_equal(in[0].clock_off, 0);
    assert_int_equal(in[1].clock_off, 0);
    assert_int_equal(in[0].clock_unc, 0);
    assert_int_equal(in[1].clock_unc, 2 * PA_MERGE_CLOCK_FOLLOW_NS); /* two processes following one clock */
    assert_int_equal(in[1].clock_ref, 0);
    assert_int_equal(in[2].clock_off, (1000000000000 - 7000) - (1000000000000 - 5000));
    assert_int_equal(in[2].clock_unc, 10 + 1000 + 20 + 3000 + 2 * PA_MERGE_CLOCK_FOLLOW_NS);
    assert_int_equal(in[3].clock_ref, 2);
    assert_int_equal(in[3].clock_off, in[2].clock_off);
    assert_int_equal(in[4].clock_ref, 4);
    assert_int_equal(in[4].clock_off, 4900);
    assert_int_equal(in[4].clock_unc, -1);
    /* no anchor (recovered from a spool: start wall time 0, no host): input 0's clock, unknown */
    pa_minput_t rec[3] = {host("a", "b1", 1000000000000, 5000, 10, 1000, 1), host("", "", 0, 7000, -1, -1, -1),
                          host("", "", 0, 9000, -1, -1, -1)};
    pa_merge_clock_plan(rec, 3);
    assert_int_equal(rec[1].clock_off, 0);
    assert_int_equal(rec[1].clock_unc, -1);
    assert_int_equal(rec[1].clock_guess, 1);
    assert_int_equal(rec[2].clock_ref, 1);
    assert_int_equal(rec[2].clock_guess, 1);
    assert_int_equal(rec[0].clock_guess, 0);
    /* no boot ids (older DBs): the host name decides */
    pa_minput_t old[2] = {host("x", "", 10, 5, -1, -1, -1), host("x", "", 20, 6, -1, -1, -1)};
    pa_merge_clock_plan(old, 2);
    assert_int_equal(old[1].clock_off, 0);
    assert_int_equal(old[1].clock_unc, 2 * PA_MERGE_CLOCK_FOLLOW_NS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_table_known),
        cmocka_unit_test(test_spec_kinds),
        cmocka_unit_test(test_clock_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
