/* report_stack.c - push/pop range stacks (RangeStack) and direct-children totals, computed as the
 * ranges stream by, for hgtx_pushpop_trace and the projection reports. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_util.h"

/* Why not a recursive CTE: it materialises every range's whole stack as a string, so nesting
 * d levels deep costs O(d^2) temp space before the first row comes out (a 1 M-deep thread:
 * tens of GB) and rows= cannot cut it. Why not a table of every range in memory (what this file
 * did before): 3 M ranges cost ~170 MB before the first row. Here each thread keeps the stack of
 * the ranges it has open at the current row: in start order a range's parent is on its thread's
 * stack (it started earlier and has not been left), so the stack is its prefix; otherwise (ids
 * out of order, a projection's subset of ranges) the parent links are followed by primary key. */

static const char pa_kids_sql[] =
    "SELECT count(*), coalesce(sum(CASE WHEN unterminated THEN 0 ELSE end - start END), 0)"
    " FROM HGTX_RANGES WHERE parentId = ?1 AND style = 0";

/* 1 when HGTX_RANGES has the index on parentId (the exit builds it; a DB still being written or
 * of a killed process may not have it yet: then a lookup per range would scan the table). */
static int pa_has_parent_index(sqlite3 *db)
{
    sqlite3_stmt *st;
    int has = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'index' AND tbl_name = 'HGTX_RANGES'"
                           " AND sql LIKE '%(parentId)%'", -1, &st, NULL) != SQLITE_OK)
        return 0;
    has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

/* The children totals of every range that has children, sorted by parent (one grouped pass). */
static int pa_kids_load(pa_range_stacks_t *s, const char *report, char *err, size_t errsz)
{
    sqlite3_stmt *st;
    size_t cap = 0;
    int rc = pa_report_prepare(s->db, "SELECT parentId, count(*), coalesce(sum(CASE WHEN unterminated THEN 0"
                               " ELSE end - start END), 0) FROM HGTX_RANGES WHERE style = 0 AND parentId != 0"
                               " GROUP BY parentId ORDER BY parentId", &st, report, err, errsz);
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (s->nagg == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            pa_kid_agg_t *nv = realloc(s->agg, nc * sizeof *nv);
            if (!nv) {
                sqlite3_finalize(st);
                snprintf(err, errsz, "report '%s': out of memory", report);
                return PA_REP_EDATA;
            }
            s->agg = nv;
            cap = nc;
        }
        pa_kid_agg_t *a = &s->agg[s->nagg++];
        a->parent = sqlite3_column_int64(st, 0);
        a->n = sqlite3_column_int64(st, 1);
        a->dur = sqlite3_column_int64(st, 2);
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(s->db, st, report, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

int pa_range_stacks_open(sqlite3 *db, pa_range_stacks_t *s, const char *report, char *err, size_t errsz)
{
    memset(s, 0, sizeof *s);
    s->db = db;
    int rc = pa_report_prepare(db, "SELECT parentId, style FROM HGTX_RANGES WHERE id = ?1", &s->up, report, err,
                               errsz);
    if (!rc)
        rc = pa_has_parent_index(db) ? pa_report_prepare(db, pa_kids_sql, &s->kids, report, err, errsz)
                                     : pa_kids_load(s, report, err, errsz);
    if (rc)
        pa_range_stacks_close(s);
    return rc;
}

int pa_range_stacks_children(pa_range_stacks_t *s, int64_t id, int64_t *n, int64_t *dur)
{
    *n = *dur = 0;
    if (!s->kids) {
        size_t lo = 0, hi = s->nagg;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s->agg[mid].parent < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < s->nagg && s->agg[lo].parent == id) {
            *n = s->agg[lo].n;
            *dur = s->agg[lo].dur;
        }
        return 0;
    }
    sqlite3_reset(s->kids);
    sqlite3_bind_int64(s->kids, 1, id);
    if (sqlite3_step(s->kids) != SQLITE_ROW) {
        s->failed = 1;
        return -1;
    }
    *n = sqlite3_column_int64(s->kids, 0);
    *dur = sqlite3_column_int64(s->kids, 1);
    return 0;
}

/* The stack of thread gtid (created empty on first use); NULL when out of memory. */
static pa_rs_thread_t *pa_rs_thread(pa_range_stacks_t *s, int64_t gtid)
{
    size_t lo = 0, hi = s->nth;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->th[mid].gtid < gtid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->nth && s->th[lo].gtid == gtid)
        return &s->th[lo];
    if (s->nth == s->capth) {
        size_t nc = s->capth ? s->capth * 2 : 16;
        pa_rs_thread_t *nv = realloc(s->th, nc * sizeof *nv);
        if (!nv)
            return NULL;
        s->th = nv;
        s->capth = nc;
    }
    memmove(&s->th[lo + 1], &s->th[lo], (s->nth - lo) * sizeof *s->th);
    s->nth++;
    memset(&s->th[lo], 0, sizeof s->th[lo]);
    s->th[lo].gtid = gtid;
    return &s->th[lo];
}

/* Pushes range id on thread stack th: ":<id>" appended to its string. 0 or -1 (out of memory). */
static int pa_rs_push(pa_rs_thread_t *th, int64_t id, int walked)
{
    size_t slen = th->n ? th->v[th->n - 1].slen : 0;
    if (th->n == th->cap) {
        size_t nc = th->cap ? th->cap * 2 : 16;
        pa_rs_entry_t *nv = realloc(th->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        th->v = nv;
        th->cap = nc;
    }
    if (slen + 24 > th->scap) {
        size_t nc = th->scap ? th->scap * 2 : 256;
        while (slen + 24 > nc)
            nc *= 2;
        char *ns = realloc(th->str, nc);
        if (!ns)
            return -1;
        th->str = ns;
        th->scap = nc;
    }
    char digits[24];
    int n = 0;
    uint64_t v = id < 0 ? (uint64_t)0 - (uint64_t)id : (uint64_t)id;
    do
        digits[n++] = (char)('0' + v % 10);
    while (v /= 10);
    th->str[slen++] = ':';
    if (id < 0)
        th->str[slen++] = '-';
    while (n)
        th->str[slen++] = digits[--n];
    th->v[th->n].id = id;
    th->v[th->n].walked = walked;
    th->v[th->n++].slen = slen;
    th->nwalked += (size_t)walked;
    return 0;
}

static void pa_rs_pop(pa_rs_thread_t *th)
{
    th->nwalked -= (size_t)th->v[--th->n].walked;
}

typedef struct pa_rs_seen { int64_t id; size_t at; } pa_rs_seen_t;

static int pa_rs_seen_cmp(const void *a, const void *b)
{
    const pa_rs_seen_t *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* The length of chain[0..n) up to its first repeated id (a corrupt loop that did not pass
 * through the range itself): O(n log n), only for a chain that looped. -1 out of memory. */
static long pa_rs_cut_loop(const int64_t *chain, size_t n)
{
    pa_rs_seen_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++)
        v[i] = (pa_rs_seen_t){chain[i], i};
    pa_sort(v, n, sizeof *v, pa_rs_seen_cmp);
    size_t cut = n;
    for (size_t i = 1; i < n; i++)
        if (v[i].id == v[i - 1].id && v[i].at < cut)
            cut = v[i].at;  /* the second time this id is met */
    free(v);
    return (long)cut;
}

/* The push/pop ancestors of a range whose parent is `parent`, nearest first, into s->chain, by
 * primary-key lookups up to a parent that is 0, missing or no push/pop range. Corrupt links that
 * loop are cut where the loop closes (at the range itself, or at the first id met twice: Brent's
 * cycle detection finds a loop in O(chain) steps without a visited set). Returns the chain's
 * length, or -1 (out of memory, DB error). */
static long pa_rs_ancestors(pa_range_stacks_t *s, int64_t id, int64_t parent)
{
    size_t n = 0, power = 1, lam = 0;
    int64_t mark = id, x = parent;
    for (; x != 0 && x != mark && x != id;) {
        sqlite3_reset(s->up);
        sqlite3_bind_int64(s->up, 1, x);
        int rc = sqlite3_step(s->up);
        if (rc == SQLITE_DONE || (rc == SQLITE_ROW && sqlite3_column_int(s->up, 1) != 0))
            break;
        if (rc != SQLITE_ROW)
            return -1;
        if (n == s->capchain) {
            size_t nc = s->capchain ? s->capchain * 2 : 64;
            int64_t *nv = realloc(s->chain, nc * sizeof *nv);
            if (!nv)
                return -1;
            s->chain = nv;
            s->capchain = nc;
        }
        s->chain[n++] = x;
        if (++lam == power) {
            mark = x;
            power *= 2;
            lam = 0;
        }
        x = sqlite3_column_int64(s->up, 0);
    }
    return x != 0 && x == mark && x != id ? pa_rs_cut_loop(s->chain, n) : (long)n;
}

const char *pa_range_stacks_get(pa_range_stacks_t *s, int64_t id, int64_t parent, int64_t gtid, size_t *len)
{
    pa_rs_thread_t *th = pa_rs_thread(s, gtid);
    if (!th) {
        s->failed = 1;
        return NULL;
    }
    /* leave the ranges that ended before this one began: down to its parent */
    while (th->n && th->v[th->n - 1].id != parent)
        pa_rs_pop(th);
    /* a range met as an ancestor and now as a row is a corrupt loop: the stack is not its prefix */
    for (size_t i = 0; th->nwalked && i < th->n; i++)
        if (th->v[i].id == id) {
            while (th->n)
                pa_rs_pop(th);
            break;
        }
    if (!th->n && parent != 0) {
        long n = pa_rs_ancestors(s, id, parent);
        if (n < 0) {
            s->failed = 1;
            return NULL;
        }
        while (n > 0)
            if (pa_rs_push(th, s->chain[--n], 1) < 0) {
                s->failed = 1;
                return NULL;
            }
    }
    if (pa_rs_push(th, id, 0) < 0) {
        s->failed = 1;
        return NULL;
    }
    *len = th->v[th->n - 1].slen;
    return th->str;
}

void pa_range_stacks_close(pa_range_stacks_t *s)
{
    sqlite3_finalize(s->up);
    sqlite3_finalize(s->kids);
    for (size_t i = 0; i < s->nth; i++) {
        free(s->th[i].v);
        free(s->th[i].str);
    }
    free(s->th);
    free(s->agg);
    free(s->chain);
    memset(s, 0, sizeof *s);
}
