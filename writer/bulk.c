/* bulk.c - buffered INSERTs: rows are buffered per batch and inserted by one statement. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/pa_log.h"
#include "writer_internal.h"

/* Every initialised bulk, so a commit can execute the rows every source still buffers
 * (pa_bulk_flush_all): what a commit declares loaded must be in the DB. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pa_bulk_t *live;

static void pa_bulk_link(pa_bulk_t *b)
{
    pthread_mutex_lock(&live_mu);
    b->next_live = live;
    live = b;
    pthread_mutex_unlock(&live_mu);
}

static void pa_bulk_unlink(pa_bulk_t *b)
{
    pthread_mutex_lock(&live_mu);
    for (pa_bulk_t **pp = &live; *pp; pp = &(*pp)->next_live)
        if (*pp == b) {
            *pp = b->next_live;
            break;
        }
    pthread_mutex_unlock(&live_mu);
    b->next_live = NULL;
}

/* The buffered rows reach SQLite through one statement per bulk, `INSERT INTO T(a,b) SELECT
 * c0,c1 FROM pa_bulk_rows(?1)`: pa_bulk_rows is an eponymous virtual table whose only argument is
 * the bulk (a bound pointer) and whose rows are the rows it buffers. No value is bound one by one
 * (sqlite3_bind_int64 and OP_Variable per value were ~25 % of the load's instructions with
 * 64-row `VALUES (?,?..),(..)` statements), and a partly filled batch (every commit) runs the
 * same statement instead of preparing one of its own. */
#define PA_BULK_MAXCOLS 32

typedef struct pa_bulk_cur {
    sqlite3_vtab_cursor base;
    const pa_bulk_t *b;
    const pa_bulk_val_t *vals; /* the current row's values */
    size_t row, nrows;
} pa_bulk_cur_t;

static int pa_bulk_vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                              char **err)
{
    (void)aux, (void)argc, (void)argv, (void)err;
    char sql[16 + PA_BULK_MAXCOLS * 5 + 24], *p = sql;
    p += sprintf(p, "CREATE TABLE x(");
    for (int c = 0; c < PA_BULK_MAXCOLS; c++)
        p += sprintf(p, "c%d,", c);
    sprintf(p, "src HIDDEN)");
    int rc = sqlite3_declare_vtab(db, sql);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_vtab *vt = sqlite3_malloc(sizeof *vt);
    if (!vt)
        return SQLITE_NOMEM;
    memset(vt, 0, sizeof *vt);
    *out = vt;
    return SQLITE_OK;
}

static int pa_bulk_vt_disconnect(sqlite3_vtab *vt)
{
    sqlite3_free(vt);
    return SQLITE_OK;
}

/* The only plan: src = ?1 given (without it there are no rows to scan). */
static int pa_bulk_vt_best_index(sqlite3_vtab *vt, sqlite3_index_info *ii)
{
    (void)vt;
    for (int i = 0; i < ii->nConstraint; i++)
        if (ii->aConstraint[i].iColumn == PA_BULK_MAXCOLS && ii->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ &&
            ii->aConstraint[i].usable) {
            ii->aConstraintUsage[i].argvIndex = 1;
            ii->aConstraintUsage[i].omit = 1;
            ii->estimatedCost = 1.0;
            ii->estimatedRows = 64;
            return SQLITE_OK;
        }
    return SQLITE_CONSTRAINT;
}

static int pa_bulk_vt_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
    (void)vt;
    pa_bulk_cur_t *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static int pa_bulk_vt_close(sqlite3_vtab_cursor *cur)
{
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int pa_bulk_vt_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxs, int argc, sqlite3_value **argv)
{
    (void)idx, (void)idxs;
    pa_bulk_cur_t *c = (pa_bulk_cur_t *)cur;
    c->b = argc == 1 ? sqlite3_value_pointer(argv[0], "pa_bulk") : NULL;
    c->row = 0;
    c->nrows = c->b ? c->b->nvals / (size_t)c->b->ncols : 0;
    c->vals = c->b ? c->b->vals : NULL;
    return SQLITE_OK;
}

static int pa_bulk_vt_next(sqlite3_vtab_cursor *cur)
{
    pa_bulk_cur_t *c = (pa_bulk_cur_t *)cur;
    c->row++;
    c->vals += c->b->ncols;
    return SQLITE_OK;
}

static int pa_bulk_vt_eof(sqlite3_vtab_cursor *cur)
{
    const pa_bulk_cur_t *c = (const pa_bulk_cur_t *)cur;
    return c->row >= c->nrows;
}

static int pa_bulk_vt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    const pa_bulk_cur_t *c = (const pa_bulk_cur_t *)cur;
    if (col >= c->b->ncols) /* src, or a column the statement does not select */
        return SQLITE_OK;
    const pa_bulk_val_t *v = &c->vals[col];
    switch (v->type) {
    case SQLITE_INTEGER: sqlite3_result_int64(ctx, v->u.i); break;
    case SQLITE_FLOAT: sqlite3_result_double(ctx, v->u.d); break;
    case SQLITE_TEXT:
        /* explicit length: embedded NUL and invalid UTF-8 bytes are stored as given */
        sqlite3_result_text64(ctx, c->b->arena + v->u.off, v->len, SQLITE_STATIC, SQLITE_UTF8);
        break;
    default: break; /* NULL: the result's initial value */
    }
    return SQLITE_OK;
}

static int pa_bulk_vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = (sqlite3_int64)((const pa_bulk_cur_t *)cur)->row;
    return SQLITE_OK;
}

static const sqlite3_module pa_bulk_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous only: never a CREATE VIRTUAL TABLE in a DB file */
    .xConnect = pa_bulk_vt_connect,
    .xBestIndex = pa_bulk_vt_best_index,
    .xDisconnect = pa_bulk_vt_disconnect,
    .xOpen = pa_bulk_vt_open,
    .xClose = pa_bulk_vt_close,
    .xFilter = pa_bulk_vt_filter,
    .xNext = pa_bulk_vt_next,
    .xEof = pa_bulk_vt_eof,
    .xColumn = pa_bulk_vt_column,
    .xRowid = pa_bulk_vt_rowid,
};

int pa_bulk_register(sqlite3 *db)
{
    if (sqlite3_create_module_v2(db, "pa_bulk_rows", &pa_bulk_module, NULL, NULL) != SQLITE_OK) {
        pa_err("writer", "SQLite: %s (registering pa_bulk_rows)", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

int pa_bulk_init(pa_bulk_t *b, sqlite3 *db, const char *table_cols, int ncols, int batch)
{
    pa_bulk_unlink(b); /* a static bulk initialised again without its finish */
    memset(b, 0, sizeof *b);
    b->db = db;
    b->ncols = ncols;
    b->batch = batch;
    if (ncols < 1 || ncols > PA_BULK_MAXCOLS || batch < 1) {
        pa_err("writer", "internal: %d columns of %d rows for %s (1..%d columns)", ncols, batch, table_cols,
               PA_BULK_MAXCOLS);
        b->failed = 1, b->room = 0;
        return -1;
    }
    size_t n = strlen(table_cols);
    b->head = malloc(n + 32);
    b->vals = calloc((size_t)ncols * (size_t)batch, sizeof *b->vals);
    if (!b->head || !b->vals) {
        b->failed = 1, b->room = 0;
        return -1;
    }
    b->room = (size_t)ncols * (size_t)batch;
    /* "T(a,b)" means "INSERT INTO T(a,b)"; a head starting with INSERT is taken as is */
    sprintf(b->head, "%s%s", strncasecmp(table_cols, "INSERT", 6) ? "INSERT INTO " : "", table_cols);
    pa_bulk_link(b); /* the statement is prepared when the first rows are inserted */
    return 0;
}

/* Inserts the buffered rows (a whole number of rows) through the bulk's statement. */
static void pa_bulk_exec(pa_bulk_t *b)
{
    size_t nrows = b->nvals / (size_t)b->ncols;
    uint32_t bind;
    sqlite3_stmt *st = pa_bulk_stmt_for(b, nrows, &bind);
    if (!st) {
        b->failed = 1, b->room = 0;
        return;
    }
    sqlite3_bind_pointer(st, 1, b, "pa_bulk", NULL);
    for (; bind; bind &= bind - 1)
        sqlite3_bind_int64(st, __builtin_ctz(bind) + 2, b->vals[__builtin_ctz(bind)].u.i);
    if (sqlite3_step(st) != SQLITE_DONE) {
        if (pa_db_fsize_hit(b->db)) /* said once by the session, with what was kept */
            pa_dbg("writer", "SQLite: %s (file size limit) (%s)", sqlite3_errmsg(b->db), b->head);
        else
            pa_err("writer", "SQLite: %s (%s)", sqlite3_errmsg(b->db), b->head);
        b->failed = 1, b->room = 0;
    } else {
        b->rows += nrows;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    b->nvals = 0;
    b->arena_len = 0;
}

static pa_bulk_val_t *pa_bulk_next(pa_bulk_t *b)
{
    if (b->failed)
        return NULL;
    pa_bulk_val_t *v = &b->vals[b->nvals++];
    return v;
}

static void pa_bulk_maybe_flush(pa_bulk_t *b)
{
    if (b->failed || b->nvals != (size_t)b->ncols * (size_t)b->batch)
        return;
    pa_bulk_exec(b);
}

/* pa_bulk_int()'s out-of-line part: the value that fills a batch, or any value of a failed bulk */
void pa_bulk_int_last(pa_bulk_t *b, int64_t x)
{
    pa_bulk_val_t *v = pa_bulk_next(b);
    if (!v)
        return;
    v->type = SQLITE_INTEGER;
    v->u.i = x;
    pa_bulk_maybe_flush(b);
}

void pa_bulk_double(pa_bulk_t *b, double x)
{
    pa_bulk_val_t *v = pa_bulk_next(b);
    if (!v)
        return;
    v->type = SQLITE_FLOAT;
    v->u.d = x;
    pa_bulk_maybe_flush(b);
}

void pa_bulk_null(pa_bulk_t *b)
{
    pa_bulk_val_t *v = pa_bulk_next(b);
    if (!v)
        return;
    v->type = SQLITE_NULL;
    v->u.i = 0; /* pa_bulk_const_mask() compares it */
    pa_bulk_maybe_flush(b);
}

void pa_bulk_text(pa_bulk_t *b, const void *s, size_t len)
{
    if (b->failed)
        return;
    if (len > UINT32_MAX) {
        pa_err("writer", "a text of %zu bytes for %s (at most 4 GiB)", len, b->head);
        b->failed = 1, b->room = 0;
        return;
    }
    if (b->arena_len + len + 1 > b->arena_cap) {
        size_t cap = b->arena_cap ? b->arena_cap : 4096;
        while (cap < b->arena_len + len + 1)
            cap *= 2;
        char *na = realloc(b->arena, cap);
        if (!na) {
            pa_err("writer", "out of memory buffering %zu bytes of text", len);
            b->failed = 1, b->room = 0;
            return;
        }
        b->arena = na;
        b->arena_cap = cap;
    }
    pa_bulk_val_t *v = pa_bulk_next(b);
    v->type = SQLITE_TEXT;
    v->u.off = b->arena_len;
    v->len = (uint32_t)len;
    if (len)
        memcpy(b->arena + b->arena_len, s, len);
    b->arena_len += len;
    b->arena[b->arena_len++] = '\0';
    pa_bulk_maybe_flush(b);
}

/* The buffered rows (fewer than a batch). */
static void pa_bulk_exec_partial(pa_bulk_t *b)
{
    if (b->failed || !b->nvals)
        return;
    if (b->nvals % (size_t)b->ncols) {
        pa_err("writer", "internal: incomplete row for %s", b->head);
        b->failed = 1, b->room = 0;
        return;
    }
    pa_bulk_exec(b);
}

int pa_bulk_flush_all(sqlite3 *db)
{
    int rc = 0;
    pthread_mutex_lock(&live_mu);
    for (pa_bulk_t *b = live; b; b = b->next_live)
        if (b->db == db) {
            if (b->nvals % (size_t)b->ncols == 0) /* a row being filled waits for the next commit */
                pa_bulk_exec_partial(b);
            rc |= b->failed ? -1 : 0;
        }
    pthread_mutex_unlock(&live_mu);
    return rc;
}

void pa_bulk_detach_all(sqlite3 *db)
{
    pthread_mutex_lock(&live_mu);
    for (pa_bulk_t *b = live; b; b = b->next_live)
        if (b->db == db && !b->detached) {
            pa_bulk_stmt_drop(b);
            b->db = NULL;
            b->detached = 1;
        }
    pthread_mutex_unlock(&live_mu);
}

int pa_bulk_attach_all(sqlite3 *db)
{
    int rc = 0;
    pthread_mutex_lock(&live_mu);
    for (pa_bulk_t *b = live; b; b = b->next_live)
        if (b->detached) {
            b->db = db;
            b->detached = 0;
            rc |= b->failed ? -1 : 0;
        }
    pthread_mutex_unlock(&live_mu);
    return rc;
}

int pa_bulk_finish(pa_bulk_t *b)
{
    if (b->detached) { /* its connection is gone: nothing can be inserted any more */
        b->failed |= b->nvals != 0;
        b->detached = 0;
    }
    pa_bulk_unlink(b);
    if (b->db)
        pa_bulk_exec_partial(b);
    pa_bulk_stmt_free(b);
    free(b->head);
    free(b->vals);
    free(b->arena);
    int rc = b->failed ? -1 : 0;
    b->head = NULL; b->vals = NULL; b->arena = NULL;
    return rc;
}
