/* report_stack.c - push/pop range stacks (RangeStack) and direct-children totals in one pass
 * over HGTX_RANGES, for hgtx_pushpop_trace and the projection reports. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_util.h"

/* Why not a recursive CTE: it materialises every range's whole stack as a string, so nesting
 * d levels deep costs O(d^2) temp space before the first row comes out (a 1 M-deep thread:
 * tens of GB) and rows= cannot cut it. Here the table is read once in primary-key order (no
 * sort, no temp table): O(n) memory, O(log n) per parent lookup; a stack costs its own length. */

int pa_range_tree_load(sqlite3 *db, pa_range_tree_t *t, const char *report, char *err, size_t errsz)
{
    memset(t, 0, sizeof *t);
    sqlite3_stmt *st;
    int rc = pa_report_prepare(db, "SELECT id, parentId, end - start, unterminated FROM HGTX_RANGES"
                               " WHERE style = 0 ORDER BY id", &st, report, err, errsz);
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (t->n == t->cap) {
            size_t nc = t->cap ? t->cap * 2 : 1024;
            pa_range_node_t *nv = realloc(t->v, nc * sizeof *nv);
            if (!nv) {
                sqlite3_finalize(st);
                pa_range_tree_free(t);
                snprintf(err, errsz, "report '%s': out of memory", report);
                return PA_REP_EDATA;
            }
            t->v = nv;
            t->cap = nc;
        }
        pa_range_node_t *nd = &t->v[t->n++];
        nd->id = sqlite3_column_int64(st, 0);
        nd->parent = sqlite3_column_int64(st, 1);
        nd->dur = sqlite3_column_int(st, 3) ? 0 : sqlite3_column_int64(st, 2);
        nd->child_dur = 0;
        nd->nchild = 0;
        nd->path_pos = -1;
    }
    if (rc != SQLITE_DONE) {
        pa_range_tree_free(t);
        return pa_report_step_error(db, st, report, err, errsz);
    }
    sqlite3_finalize(st);
    /* direct children: a range still open at exit counts as a child, with no duration */
    for (size_t i = 0; i < t->n; i++) {
        pa_range_node_t *p = t->v[i].parent ? pa_range_tree_find(t, t->v[i].parent) : NULL;
        if (p) {
            p->child_dur += t->v[i].dur;
            p->nchild++;
        }
    }
    return PA_REP_OK;
}

pa_range_node_t *pa_range_tree_find(const pa_range_tree_t *t, int64_t id)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && t->v[lo].id == id ? &t->v[lo] : NULL;
}

/* Appends ":<id>" to the path string. */
static int path_put(pa_range_tree_t *t, int64_t id)
{
    if (t->slen + 22 > t->scap) {
        size_t nc = t->scap ? t->scap * 2 : 4096;
        while (t->slen + 22 > nc)
            nc *= 2;
        char *ns = realloc(t->str, nc);
        if (!ns)
            return -1;
        t->str = ns;
        t->scap = nc;
    }
    char digits[24];
    int n = 0;
    uint64_t v = id < 0 ? (uint64_t)0 - (uint64_t)id : (uint64_t)id;
    do
        digits[n++] = (char)('0' + v % 10);
    while (v /= 10);
    t->str[t->slen++] = ':';
    if (id < 0)
        t->str[t->slen++] = '-';
    while (n)
        t->str[t->slen++] = digits[--n];
    return 0;
}

/* Cuts the current path to its first `depth` ranges. */
static void path_cut(pa_range_tree_t *t, size_t depth)
{
    while (t->depth > depth) {
        pa_range_node_t *nd = &t->v[t->path[--t->depth]];
        t->slen = (size_t)nd->path_off;
        nd->path_pos = -1;
    }
}

/* Rows come in start order, so a range's stack mostly extends the one before: the tree keeps
 * the last stack as a path of nodes plus its string, and a new range walks up only to the
 * first ancestor on that path. Each range joins the path once per visit: O(n log n) in all,
 * plus copying the strings out (the output itself). */
char *pa_range_tree_stack(pa_range_tree_t *t, int64_t id, size_t *len)
{
    pa_range_node_t *nd = pa_range_tree_find(t, id);
    if (!t->path && t->n && !(t->path = malloc(t->n * sizeof *t->path)))
        return NULL;
    size_t nchain = 0;
    if (!nd) { /* no push/pop range here: a stack of its own */
        path_cut(t, 0);
        if (path_put(t, id) < 0)
            return NULL;
    } else {
        /* the chain of ancestors not on the path, child first, kept in t->chain (at most n:
         * corrupt parent links cannot loop) */
        if (!t->chain && !(t->chain = malloc(t->n * sizeof *t->chain)))
            return NULL;
        pa_range_node_t *x = nd;
        while (x && x->path_pos < 0 && nchain < t->n) {
            t->chain[nchain++] = (size_t)(x - t->v);
            x = x->parent ? pa_range_tree_find(t, x->parent) : NULL;
        }
        path_cut(t, x && x->path_pos >= 0 ? (size_t)x->path_pos + 1 : 0);
        while (nchain) {
            pa_range_node_t *y = &t->v[t->chain[--nchain]];
            y->path_off = (int64_t)t->slen;
            if (path_put(t, y->id) < 0)
                return NULL;
            y->path_pos = (int64_t)t->depth;
            t->path[t->depth++] = (size_t)(y - t->v);
        }
    }
    char *s = malloc(t->slen + 1);
    if (!s)
        return NULL;
    memcpy(s, t->str, t->slen);
    s[t->slen] = '\0';
    *len = t->slen;
    if (!nd)
        t->slen = 0;
    return s;
}

void pa_range_tree_free(pa_range_tree_t *t)
{
    free(t->v);
    free(t->path);
    free(t->chain);
    free(t->str);
    memset(t, 0, sizeof *t);
}
