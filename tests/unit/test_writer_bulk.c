/* test_writer_bulk.c - rows reach the DB exactly as the spool gives them, across batches: range
 * ids in and out of order (the next id goes in as NULL, others explicit), repeated ids (the first
 * kept), gaps, and text values with NUL and 0xFF bytes; columns constant over a batch (bound once
 * by the bulk) keep their values and types, next to ones that are not. */
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

#define NREC 5000
#define MAXID 20000

static char dir[64], dbp[128], spool[128];
static int64_t first_start[MAXID + 1]; /* 0: no range with this id */
static uint32_t order[NREC];
static uint64_t nranges;

/* Range ids in the spool's order: runs counting up, pairs ending inner first (k+1 before k),
 * a repeat of an earlier id now and then, and jumps. */
static void make_order(void)
{
    uint32_t next = 1, n = 0, seed = 12345;
    while (n < NREC) {
        seed = seed * 1103515245u + 12345u;
        uint32_t what = (seed >> 16) % 10;
        if (what < 5 || n < 3) {
            order[n++] = next++;
        } else if (what < 7 && n + 2 <= NREC) { /* nested: the inner range ends first */
            order[n++] = next + 1;
            order[n++] = next;
            next += 2;
        } else if (what < 9) { /* a repeated record of an earlier id */
            uint32_t earlier = order[(seed >> 8) % n];
            order[n++] = earlier;
        } else { /* a gap */
            next += 1 + (seed >> 20) % 40;
            order[n++] = next++;
        }
    }
    assert_true(next < MAXID);
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/pa_test_bulk_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(dbp, sizeof dbp, "%s/b.db", dir);
    snprintf(spool, sizeof spool, "%s/b.spool", dir);
    make_order();
    pa_spool_writer_t *w = pa_spool_open_write(spool, 1);
    if (!w)
        return -1;
    int rc = 0;
    /* strings 100..1299: lengths 0..11, bytes i, NUL, 0xFF in turn (more than a batch of them) */
    for (uint32_t i = 0; i < 1200; i++) {
        uint8_t s[16];
        for (uint32_t k = 0; k < i % 12; k++)
            s[k] = (uint8_t)(k % 3 == 0 ? i : k % 3 == 1 ? 0 : 0xFF);
        rc |= synth_string(w, 100 + i, s, i % 12);
    }
    for (uint32_t i = 0; i < NREC; i++) {
        int64_t t0 = 1000 + 10 * (int64_t)i;
        rc |= synth_range(w, order[i], 7, (uint64_t)t0, (uint64_t)t0 + 5, 100, 0, 0, 0, 0, 0);
        if (!first_start[order[i]]) {
            first_start[order[i]] = t0;
            nranges++;
        }
    }
    uint64_t raw, comp;
    rc |= pa_spool_close_write(w, &raw, &comp);
    if (rc)
        return -1;
    pa_session_meta_t meta;
    synth_meta(&meta);
    return pa_writer_write_db(dbp, spool, &meta, NULL);
}

static int teardown(void **state)
{
    (void)state;
    unlink(dbp);
    unlink(spool);
    rmdir(dir);
    return 0;
}

static void test_range_ids(void **state)
{
    (void)state;
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, start, end FROM HGTX_RANGES ORDER BY id", -1, &st, NULL),
                     SQLITE_OK);
    uint64_t rows = 0;
    int64_t prev = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), start = sqlite3_column_int64(st, 1);
        assert_true(id > prev && id <= MAXID);
        for (int64_t k = prev + 1; k < id; k++) /* no id the spool did not have */
            assert_int_equal(first_start[k], 0);
        assert_int_equal(start, first_start[id]); /* the first record of an id is kept */
        assert_int_equal(sqlite3_column_int64(st, 2), start + 5);
        prev = id;
        rows++;
    }
    assert_int_equal(rows, nranges);
    assert_true(nranges < NREC); /* the order had repeats */
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_text_bytes(void **state)
{
    (void)state;
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, CAST(value AS BLOB), typeof(value) FROM STRING_IDS"
                                        " WHERE id >= 100 ORDER BY id", -1, &st, NULL), SQLITE_OK);
    uint32_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        uint32_t i = n++;
        assert_int_equal(sqlite3_column_int64(st, 0), 100 + i);
        assert_string_equal((const char *)sqlite3_column_text(st, 2), "text");
        const uint8_t *b = sqlite3_column_blob(st, 1);
        assert_int_equal(sqlite3_column_bytes(st, 1), i % 12);
        for (uint32_t k = 0; k < i % 12; k++)
            assert_int_equal(b[k], (uint8_t)(k % 3 == 0 ? i : k % 3 == 1 ? 0 : 0xFF));
    }
    assert_int_equal(n, 1200);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Value of column c (0..7) of row r, batches of 100 rows (k = r / 100): a always 7, b always
 * NULL, c 0 but NULL in row 37 of even batches (same stored integer 0, another type), d the text
 * "x", e k * 1000 (+ r in batches k % 3 == 0), f 3 r, g 5 in batches with k & 2 (else r), h
 * INT64_MIN in batches 0-4, INT64_MAX after. The batches have 7 sets of constant columns and 11
 * value sets: more than a bulk prepares statements for. */
enum { CONST_ROWS = 1075, CONST_BATCH = 100 };

static int const_value(int r, int c, int64_t *v)
{
    int k = r / CONST_BATCH;
    *v = 0;
    switch (c) {
    case 0: *v = 7; return SQLITE_INTEGER;
    case 1: return SQLITE_NULL;
    case 2: return k % 2 == 0 && r % CONST_BATCH == 37 ? SQLITE_NULL : SQLITE_INTEGER;
    case 3: return SQLITE_TEXT;
    case 4: *v = k * 1000 + (k % 3 == 0 ? r : 0); return SQLITE_INTEGER;
    case 5: *v = 3 * (int64_t)r; return SQLITE_INTEGER;
    case 6: *v = k & 2 ? 5 : r; return SQLITE_INTEGER;
    default: *v = k < 5 ? INT64_MIN : INT64_MAX; return SQLITE_INTEGER;
    }
}

static void test_const_columns(void **state)
{
    (void)state;
    sqlite3 *db;
    sqlite3_stmt *st;
    pa_bulk_t b = {0};
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(pa_bulk_register(db), 0);
    assert_int_equal(pa_db_exec(db, "CREATE TABLE T(a INTEGER, b INTEGER, c INTEGER, d TEXT, e INTEGER,"
                                " f INTEGER, g INTEGER, h INTEGER)"), 0);
    assert_int_equal(pa_bulk_init(&b, db, "T(a,b,c,d,e,f,g,h)", 8, CONST_BATCH), 0);
    for (int r = 0; r < CONST_ROWS; r++)
        for (int c = 0; c < 8; c++) {
            int64_t v;
            int t = const_value(r, c, &v);
            if (t == SQLITE_NULL)
                pa_bulk_null(&b);
            else if (t == SQLITE_TEXT)
                pa_bulk_text(&b, "x", 1);
            else
                pa_bulk_int(&b, v);
        }
    assert_int_equal(pa_bulk_finish(&b), 0); /* the last 75 rows: a partial batch */
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT rowid, a, b, c, d, e, f, g, h, typeof(a), typeof(b),"
                                        " typeof(c), typeof(d), typeof(e), typeof(f), typeof(g), typeof(h)"
                                        " FROM T ORDER BY rowid",
                                        -1, &st, NULL), SQLITE_OK);
    static const char *const tname[] = {"?", "integer", "real", "text", "blob", "null"};
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int r = n++;
        assert_int_equal(sqlite3_column_int64(st, 0), r + 1);
        for (int c = 0; c < 8; c++) {
            int64_t v;
            int t = const_value(r, c, &v);
            assert_string_equal((const char *)sqlite3_column_text(st, 9 + c), tname[t]);
            if (t == SQLITE_INTEGER)
                assert_int_equal(sqlite3_column_int64(st, 1 + c), v);
            else if (t == SQLITE_TEXT)
                assert_string_equal((const char *)sqlite3_column_text(st, 1 + c), "x");
        }
    }
    assert_int_equal(n, CONST_ROWS);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_ids),
        cmocka_unit_test(test_text_bytes),
        cmocka_unit_test(test_const_columns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
