/* test_op_scan.c - pa_op_scan_rows(), the operator reports' walk over (range, kernel) rows: each
 * range parsed once, no-operator ranges and other families skipped with all their rows, every
 * kept row seen once; out of memory (realloc failing, -Wl,--wrap=realloc) is an error with a
 * message, never a silently shorter instance list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report_util.h"
#include "writer_op.h"

/* realloc fails from its fail_at-th call on once armed (0: never) */
static int fail_at, calls;
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    if (fail_at && ++calls >= fail_at)
        return NULL;
    return __real_realloc(p, n);
}

typedef struct inst { int64_t rid; char *name; char *key; int rows; int64_t sum; } inst_t;
typedef struct set { inst_t *v; size_t n, cap; int row_fail; } set_t;

static void begin(void *ctx, void *e, sqlite3_stmt *st, pa_op_info_t *info, char *name)
{
    (void)ctx;
    inst_t *i = e;
    i->rid = sqlite3_column_int64(st, 0);
    i->name = name;
    i->key = info->key;
}

static int row(void *ctx, void *e, sqlite3_stmt *st)
{
    set_t *s = ctx;
    inst_t *i = e;
    i->rows++;
    i->sum += sqlite3_column_int64(st, 3);
    return s->row_fail && i->rows == s->row_fail ? -1 : 0;
}

static void set_free(set_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].key);
    }
    free(s->v);
}

/* ranges 1 (AllReduce, 2 kernels), 2 (no operator, 3), 3 (a GEMM, 1), 4 (AllGather, 1) plus
 * `extra` more AllReduce ranges of one kernel each (ids 100...) */
static sqlite3 *db_with(int extra)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE R(id, name BLOB, domain, v);"
        "INSERT INTO R VALUES (1, CAST('AllReduce, c:1024, d:9, w:4' AS BLOB), NULL, 10), (1, CAST('AllReduce, c:1024, d:9, w:4' AS BLOB), NULL, 5),"
        " (2, CAST('step 7' AS BLOB), NULL, 1), (2, CAST('step 7' AS BLOB), NULL, 1), (2, CAST('step 7' AS BLOB), NULL, 1),"
        " (3, CAST('ACBLAS:GemmEx,t,n,1280,8,2048,2048,2048,1280,1,0,1,DEFAULT,BF16' AS BLOB), NULL, 7),"
        " (4, CAST('AllGather, c:64, d:7, w:2' AS BLOB), NULL, 3);", NULL, NULL, NULL), SQLITE_OK);
    for (int i = 0; i < extra; i++) {
        char sql[160];
        snprintf(sql, sizeof sql, "INSERT INTO R VALUES (%d, CAST('AllReduce, c:8, d:7, w:2' AS BLOB), '', 1);", 100 + i);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    }
    return db;
}

static int scan(sqlite3 *db, int family, set_t *s, char *err, size_t errsz)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, name, domain, v FROM R ORDER BY id, rowid", -1, &st, NULL),
                     SQLITE_OK);
    pa_op_merge_t mg = {0, 0, 0, 0};
    pa_op_scan_t sc = {.mg = &mg, .family = family, .v = (void **)&s->v, .n = &s->n, .cap = &s->cap,
                       .elem = sizeof *s->v, .begin = begin, .row = row, .ctx = s};
    return pa_op_scan_rows(db, st, &sc, "t_sum", err, errsz);
}

static void family_kept(void **state)
{
    (void)state;
    sqlite3 *db = db_with(0);
    set_t s = {0};
    char err[256] = "";
    assert_int_equal(scan(db, PA_OP_PCCL, &s, err, sizeof err), PA_REP_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.v[0].rid, 1);
    assert_int_equal(s.v[0].rows, 2);
    assert_int_equal(s.v[0].sum, 15);
    assert_string_equal(s.v[0].name, "AllReduce, c:1024, d:9, w:4");
    assert_int_equal(s.v[1].rid, 4);
    assert_int_equal(s.v[1].rows, 1);
    assert_int_equal(s.v[1].sum, 3);
    set_free(&s);
    sqlite3_close(db);
}

static void every_operator(void **state)
{
    (void)state;
    sqlite3 *db = db_with(0);
    set_t s = {0};
    char err[256] = "";
    assert_int_equal(scan(db, PA_OP_NONE, &s, err, sizeof err), PA_REP_OK);
    assert_int_equal(s.n, 3); /* 1, 3, 4: the range 'step 7' is no operator */
    assert_int_equal(s.v[1].rid, 3);
    assert_int_equal(s.v[1].sum, 7);
    assert_non_null(s.v[1].key);
    set_free(&s);
    sqlite3_close(db);
}

/* 200 ranges: the array grows past its first 64 elements, every instance kept in order */
static void grows(void **state)
{
    (void)state;
    sqlite3 *db = db_with(200);
    set_t s = {0};
    char err[256] = "";
    assert_int_equal(scan(db, PA_OP_PCCL, &s, err, sizeof err), PA_REP_OK);
    assert_int_equal(s.n, 202);
    assert_true(s.cap >= 202);
    for (size_t i = 2; i < s.n; i++)
        assert_int_equal(s.v[i].rid, 100 + (int64_t)i - 2);
    set_free(&s);
    sqlite3_close(db);
}

/* the array cannot grow past 64: an error naming the report, not 64 instances and PA_REP_OK */
static void grow_fails(void **state)
{
    (void)state;
    sqlite3 *db = db_with(200);
    set_t s = {0};
    char err[256] = "";
    calls = 0;
    fail_at = 2; /* the first realloc (64 elements) works, the second fails */
    int rc = scan(db, PA_OP_PCCL, &s, err, sizeof err);
    fail_at = 0;
    assert_int_equal(rc, PA_REP_EDATA);
    assert_non_null(strstr(err, "report 't_sum': out of memory"));
    assert_int_equal(s.n, 64);
    set_free(&s);
    sqlite3_close(db);
}

static void row_fails(void **state)
{
    (void)state;
    sqlite3 *db = db_with(0);
    set_t s = {.row_fail = 2};
    char err[256] = "";
    assert_int_equal(scan(db, PA_OP_PCCL, &s, err, sizeof err), PA_REP_EDATA);
    assert_non_null(strstr(err, "out of memory"));
    assert_int_equal(s.n, 1);
    set_free(&s);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(family_kept), cmocka_unit_test(every_operator), cmocka_unit_test(grows),
        cmocka_unit_test(grow_fails), cmocka_unit_test(row_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
