/* bulk_stmt.c - the statements a bulk inserts its rows with: columns constant over a batch are taken out of the per-row reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pa_log.h"
#include "writer_internal.h"

/* A bulk's rows reach SQLite through `INSERT INTO T(a,b,..) SELECT c0,c1,.. FROM pa_bulk_rows(?1)`,
 * one OP_VColumn and xColumn call per value (~70 instructions). A column holding one integer or
 * NULL in every row of a batch (thread ids, flags, levels, an id given as NULL) does not need
 * them: its value goes into the statement once, as a literal (OP_Integer or OP_Null per row,
 * ~10 instructions) for the first few value sets, else as a bound ?(c+2) (OP_Variable, ~30).
 * Integers and NULLs only: what the statement then stores is exactly the row's value. (Leaving
 * a NULL column out of the INSERT's list instead misaligns the SELECT's registers with the
 * table's: an OP_SCopy for every other column.) */

#define PA_BULK_CONST_ROWS 64 /* fewer rows in a batch: the statement reading every column */
#define PA_BULK_NSHAPES 6     /* statements per bulk besides the one reading every column */
#define PA_BULK_NLIT 3        /* of them at most this many with literals (one value set each) */

struct pa_bulk_shape {
    uint32_t mask;  /* columns not read from the rows */
    uint32_t null;  /* of mask, the NULL ones (literal NULL or left unbound) */
    uint32_t lit;   /* mask (the values in the SQL text, v[]) or 0 (bound as ?(c+2)) */
    sqlite3_stmt *st;
    int64_t v[32];  /* the literal integers */
};

/* The batch's constant columns: mask, the NULL ones among them, and row 0's values. */
typedef struct pa_bulk_consts {
    uint32_t mask, null;
    const pa_bulk_val_t *row0;
} pa_bulk_consts_t;

static pa_bulk_consts_t pa_bulk_find_consts(const pa_bulk_t *b, size_t nrows)
{
    pa_bulk_consts_t k = {0, 0, b->vals};
    size_t n = (size_t)b->ncols;
    for (size_t c = 0; c < n; c++) {
        const pa_bulk_val_t *v0 = &b->vals[c], *v = v0 + n, *end = v0 + nrows * n;
        if (v0->type != SQLITE_INTEGER && v0->type != SQLITE_NULL)
            continue;
        while (v < end && v->u.i == v0->u.i && v->type == v0->type)
            v += n;
        if (v >= end) {
            k.mask |= 1u << c;
            k.null |= (uint32_t)(v0->type == SQLITE_NULL) << c;
        }
    }
    return k;
}

/* Prepares `s` (its masks and literals set): literals written, other columns of s->mask as
 * ?(c+2), the rest read from the rows as cN. */
static int pa_bulk_prepare_shape(pa_bulk_t *b, struct pa_bulk_shape *s)
{
    size_t sz = strlen(b->head) + (size_t)b->ncols * 28 + 48;
    char *sql = malloc(sz), *p = sql;
    if (!sql)
        return -1;
    p += sprintf(p, "%s SELECT ", b->head);
    for (int c = 0; c < b->ncols; c++) {
        const char *sep = c ? "," : "";
        if (!(s->mask >> c & 1))
            p += sprintf(p, "%sc%d", sep, c);
        else if (!(s->lit >> c & 1))
            p += sprintf(p, "%s?%d", sep, c + 2);
        else if (s->null >> c & 1)
            p += sprintf(p, "%sNULL", sep);
        else
            p += sprintf(p, "%s%lld", sep, (long long)s->v[c]);
    }
    sprintf(p, " FROM pa_bulk_rows(?1)");
    int rc = sqlite3_prepare_v2(b->db, sql, -1, &s->st, NULL);
    if (rc != SQLITE_OK)
        pa_err("writer", "SQLite: %s (preparing %s)", sqlite3_errmsg(b->db), b->head);
    free(sql);
    return rc == SQLITE_OK ? 0 : -1;
}

/* `s` can insert the batch: its columns are constant in it, NULL literals NULL, integer literals
 * the same integers, bound ones anything. */
static int pa_bulk_shape_fits(const struct pa_bulk_shape *s, const pa_bulk_consts_t *k)
{
    if ((s->mask & ~k->mask) || (s->lit & s->null & ~k->null) || (s->lit & ~s->null & k->null))
        return 0;
    for (uint32_t m = s->lit & ~s->null; m; m &= m - 1)
        if (s->v[__builtin_ctz(m)] != k->row0[__builtin_ctz(m)].u.i)
            return 0;
    return 1;
}

/* Adds a shape for the batch's constants (literals or not) and prepares it; NULL on failure. */
static struct pa_bulk_shape *pa_bulk_add_shape(pa_bulk_t *b, const pa_bulk_consts_t *k, int lit)
{
    if (!b->shapes && !(b->shapes = calloc(PA_BULK_NSHAPES, sizeof *b->shapes)))
        return NULL;
    struct pa_bulk_shape *s = &b->shapes[b->nshapes];
    memset(s, 0, sizeof *s);
    s->mask = k->mask;
    s->null = k->null;
    s->lit = lit ? k->mask : 0; /* (-9223372036854775808 too is read as an integer) */
    for (uint32_t m = s->lit & ~s->null; m; m &= m - 1)
        s->v[__builtin_ctz(m)] = k->row0[__builtin_ctz(m)].u.i;
    if (pa_bulk_prepare_shape(b, s) != 0) {
        b->shapes_failed = 1; /* logged once: the statement reading every column from now on */
        return NULL;
    }
    b->nshapes++;
    return s;
}

static int pa_bulk_shape_score(const struct pa_bulk_shape *s)
{
    return 3 * __builtin_popcount(s->mask) + 2 * __builtin_popcount(s->lit);
}

/* The statement for the batch's constant columns: one with its literals, else one binding those
 * columns, else (all PA_BULK_NSHAPES taken) the prepared one that fits and handles most; the
 * statement reading every column at least. Prepared on first use on each connection: most
 * tables get no row in a batch, and the DB thread reconnects for every batch. */
static struct pa_bulk_shape *pa_bulk_pick(pa_bulk_t *b, const pa_bulk_consts_t *k)
{
    struct pa_bulk_shape *same = NULL, *best = NULL;
    int nlit = 0;
    for (int i = 0; i < b->nshapes; i++) {
        struct pa_bulk_shape *s = &b->shapes[i];
        nlit += s->lit != 0;
        if (!pa_bulk_shape_fits(s, k))
            continue;
        if (s->mask == k->mask) {
            if (s->lit)
                return s; /* its literals are the batch's */
            if (!s->lit)
                same = s;
        }
        if (!best || pa_bulk_shape_score(s) > pa_bulk_shape_score(best))
            best = s;
    }
    if (b->nshapes < PA_BULK_NSHAPES && nlit < PA_BULK_NLIT)
        return pa_bulk_add_shape(b, k, 1);
    if (same)
        return same;
    if (b->nshapes < PA_BULK_NSHAPES)
        return pa_bulk_add_shape(b, k, 0);
    return best;
}

sqlite3_stmt *pa_bulk_stmt_for(pa_bulk_t *b, size_t nrows, uint32_t *bind)
{
    *bind = 0;
    pa_bulk_consts_t k = {0, 0, b->vals};
    if (nrows >= PA_BULK_CONST_ROWS)
        k = pa_bulk_find_consts(b, nrows);
    struct pa_bulk_shape *s = k.mask && !b->shapes_failed ? pa_bulk_pick(b, &k) : NULL;
    if (s) {
        /* the bound columns that hold an integer (an unbound ?N is NULL) */
        *bind = s->mask & ~s->lit & ~k.null;
        return s->st;
    }
    if (!b->st) {
        struct pa_bulk_shape all = {0};
        if (pa_bulk_prepare_shape(b, &all) != 0)
            return NULL;
        b->st = all.st;
    }
    return b->st;
}

void pa_bulk_stmt_drop(pa_bulk_t *b)
{
    sqlite3_finalize(b->st);
    b->st = NULL;
    for (int i = 0; i < b->nshapes; i++)
        sqlite3_finalize(b->shapes[i].st);
    b->nshapes = 0;
    b->shapes_failed = 0;
}

void pa_bulk_stmt_free(pa_bulk_t *b)
{
    pa_bulk_stmt_drop(b);
    free(b->shapes);
    b->shapes = NULL;
}
