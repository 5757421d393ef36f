/* bulk.c - prepared multi-row INSERTs: values are buffered per batch and bound at once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/pa_log.h"
#include "writer_internal.h"

/* Rows inserted by one statement amortize parse/step overhead: ~64 rows reach > 1 M rows/s. */

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

static sqlite3_stmt *pa_bulk_prepare(pa_bulk_t *b, int rows)
{
    size_t rowlen = (size_t)b->ncols * 2 + 3;
    size_t sz = strlen(b->head) + (size_t)rows * rowlen + 2;
    char *sql = malloc(sz), *p;
    sqlite3_stmt *st = NULL;
    if (!sql)
        return NULL;
    p = sql + sprintf(sql, "%s", b->head);
    for (int r = 0; r < rows; r++) {
        *p++ = r ? ',' : ' ';
        *p++ = '(';
        for (int c = 0; c < b->ncols; c++) {
            *p++ = '?';
            *p++ = c + 1 < b->ncols ? ',' : ')';
        }
    }
    *p = '\0';
    if (sqlite3_prepare_v2(b->db, sql, -1, &st, NULL) != SQLITE_OK)
        pa_err("writer", "SQLite: %s (preparing %s)", sqlite3_errmsg(b->db), b->head);
    free(sql);
    return st;
}

int pa_bulk_init(pa_bulk_t *b, sqlite3 *db, const char *table_cols, int ncols, int batch)
{
    pa_bulk_unlink(b); /* a static bulk initialised again without its finish */
    memset(b, 0, sizeof *b);
    b->db = db;
    b->ncols = ncols;
    b->batch = batch;
    size_t n = strlen(table_cols);
    b->head = malloc(n + 32);
    b->vals = calloc((size_t)ncols * (size_t)batch, sizeof *b->vals);
    if (!b->head || !b->vals) {
        b->failed = 1;
        return -1;
    }
    /* "T(a,b)" means "INSERT INTO T(a,b)"; a head starting with INSERT is taken as is */
    sprintf(b->head, "%s%s VALUES", strncasecmp(table_cols, "INSERT", 6) ? "INSERT INTO " : "",
            table_cols);
    pa_bulk_link(b); /* the statement is prepared when a batch is full (pa_bulk_maybe_flush) */
    return 0;
}

/* Binds the `n` values from vals[first] to `st` and runs it (`st` has n / ncols rows). */
static void pa_bulk_exec_vals(pa_bulk_t *b, sqlite3_stmt *st, size_t first, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const pa_bulk_val_t *v = &b->vals[first + k];
        int idx = (int)k + 1;
        switch (v->type) {
        case SQLITE_INTEGER: sqlite3_bind_int64(st, idx, v->i); break;
        case SQLITE_FLOAT: sqlite3_bind_double(st, idx, v->d); break;
        case SQLITE_TEXT:
            /* explicit length: embedded NUL and invalid UTF-8 bytes are stored as given */
            sqlite3_bind_text64(st, idx, b->arena + v->off, v->len, SQLITE_STATIC, SQLITE_UTF8);
            break;
        default: sqlite3_bind_null(st, idx); break;
        }
    }
    if (sqlite3_step(st) != SQLITE_DONE) {
        pa_err("writer", "SQLite: %s (%s)", sqlite3_errmsg(b->db), b->head);
        b->failed = 1;
    } else {
        b->rows += n / (size_t)b->ncols;
    }
    sqlite3_reset(st);
}

/* Binds the buffered rows to `st` and runs it. */
static void pa_bulk_exec(pa_bulk_t *b, sqlite3_stmt *st)
{
    pa_bulk_exec_vals(b, st, 0, b->nvals);
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
    /* prepared on first use on each connection: most tables get no row in a batch, and the
     * DB thread reconnects for every batch (a prepare of a 64-row statement costs ~1 ms) */
    if (!b->full && !(b->full = pa_bulk_prepare(b, b->batch))) {
        b->failed = 1;
        return;
    }
    pa_bulk_exec(b, b->full);
}

void pa_bulk_int(pa_bulk_t *b, int64_t x)
{
    pa_bulk_val_t *v = pa_bulk_next(b);
    if (!v)
        return;
    v->type = SQLITE_INTEGER;
    v->i = x;
    pa_bulk_maybe_flush(b);
}

void pa_bulk_double(pa_bulk_t *b, double x)
{
    pa_bulk_val_t *v = pa_bulk_next(b);
    if (!v)
        return;
    v->type = SQLITE_FLOAT;
    v->d = x;
    pa_bulk_maybe_flush(b);
}

void pa_bulk_null(pa_bulk_t *b)
{
    pa_bulk_val_t *v = pa_bulk_next(b);
    if (!v)
        return;
    v->type = SQLITE_NULL;
    pa_bulk_maybe_flush(b);
}

void pa_bulk_text(pa_bulk_t *b, const void *s, size_t len)
{
    if (b->failed)
        return;
    if (b->arena_len + len + 1 > b->arena_cap) {
        size_t cap = b->arena_cap ? b->arena_cap : 4096;
        while (cap < b->arena_len + len + 1)
            cap *= 2;
        char *na = realloc(b->arena, cap);
        if (!na) {
            pa_err("writer", "out of memory buffering %zu bytes of text", len);
            b->failed = 1;
            return;
        }
        b->arena = na;
        b->arena_cap = cap;
    }
    pa_bulk_val_t *v = pa_bulk_next(b);
    v->type = SQLITE_TEXT;
    v->off = b->arena_len;
    v->len = len;
    if (len)
        memcpy(b->arena + b->arena_len, s, len);
    b->arena_len += len;
    b->arena[b->arena_len++] = '\0';
    pa_bulk_maybe_flush(b);
}

/* The buffered rows (fewer than a batch), in order, one row per step of a one-row statement
 * prepared once per connection. A statement of exactly that many rows cost far more: the
 * streamed DB reconnects at every look and commits, and preparing a k-row INSERT costs about
 * k times a one-row prepare (~17 k instructions a row of 11 columns: a 63-row tail ~1.1 M,
 * the one-row steps of those 63 rows ~0.13 M); the rows and their ids are the same. */
static void pa_bulk_exec_partial(pa_bulk_t *b)
{
    if (b->failed || !b->nvals)
        return;
    if (b->nvals % (size_t)b->ncols) {
        pa_err("writer", "internal: incomplete row for %s", b->head);
        b->failed = 1;
        return;
    }
    if (!b->one && !(b->one = pa_bulk_prepare(b, 1))) {
        b->failed = 1;
        return;
    }
    for (size_t k = 0; k < b->nvals && !b->failed; k += (size_t)b->ncols)
        pa_bulk_exec_vals(b, b->one, k, (size_t)b->ncols);
    b->nvals = 0;
    b->arena_len = 0;
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
            sqlite3_finalize(b->full);
            sqlite3_finalize(b->one);
            b->full = b->one = NULL;
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
    sqlite3_finalize(b->full);
    sqlite3_finalize(b->one);
    free(b->head);
    free(b->vals);
    free(b->arena);
    int rc = b->failed ? -1 : 0;
    b->full = b->one = NULL; b->head = NULL; b->vals = NULL; b->arena = NULL;
    return rc;
}
