/* merge_rows.c - merge's SQL building blocks: the transformed INSERT...SELECT of one table, table checks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge_internal.h"
#include "writer.h"

int pa_merge_exec(sqlite3 *db, const char *sql, const char *what, char *err, size_t errsz)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    snprintf(err, errsz, "%s: %s", what, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
}

/* Appends printf output to buf (size PA_SQL_MAX); -1 once it does not fit. */
int pa_merge_cat(char *buf, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + len, PA_SQL_MAX - len, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= PA_SQL_MAX - len ? -1 : 0;
}

/* The SELECT expression of column `c` of kind `k` for the current input. */
static int col_expr(pa_mctx_t *m, char *sql, const char *c, int k)
{
    if (k == 't' && m->toff)
        return pa_merge_cat(sql, "s.\"%s\" + %lld", c, (long long)m->toff);
    if (k == 's' && m->smap)
        return pa_merge_cat(sql, "CASE WHEN s.\"%1$s\" IS NULL OR s.\"%1$s\" = 0 THEN s.\"%1$s\" ELSE"
                   " (SELECT new FROM temp.pa_smap WHERE old = s.\"%1$s\") END", c);
    if (k == 'g' && m->pmap)
        return pa_merge_cat(sql, "CASE WHEN s.\"%1$s\" IS NULL THEN NULL ELSE (COALESCE((SELECT new FROM temp.pa_pmap WHERE"
                   " old = s.\"%1$s\" >> 32), s.\"%1$s\" >> 32) << 32) | (s.\"%1$s\" & 4294967295) END", c);
    if (k == 'p' && m->pmap)
        return pa_merge_cat(sql, "COALESCE((SELECT new FROM temp.pa_pmap WHERE old = s.\"%1$s\"), s.\"%1$s\")", c);
    if (k == 'v')
        return pa_merge_cat(sql, "(SELECT new FROM temp.pa_hcmap WHERE old = s.\"%s\")", c);
    if (k > 0 && k < 128 && m->off[k] && strchr(PA_MERGE_ID_KINDS, k)) {
        if (k == 'k' || k == 'd' || k == 'n') /* 0 is a real id */
            return pa_merge_cat(sql, "s.\"%s\" + %lld", c, (long long)m->off[k]);
        return pa_merge_cat(sql, "CASE WHEN s.\"%1$s\" IS NULL OR s.\"%1$s\" = 0 THEN s.\"%1$s\" ELSE s.\"%1$s\" + %2$lld END", c,
                   (long long)m->off[k]);
    }
    return pa_merge_cat(sql, "s.\"%s\"", c);
}

/* Column names of `schema`.`table` into cols (NUL-separated), count returned; -1 on error. */
int pa_merge_table_cols(sqlite3 *db, const char *schema, const char *table, char *cols, size_t sz)
{
    char q[256];
    sqlite3_stmt *st;
    int n = 0;
    size_t used = 0;
    snprintf(q, sizeof q, "SELECT name FROM pragma_table_info(?1, ?2)");
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, schema, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 0);
        size_t l = strlen(c) + 1;
        if (used + l + 1 > sz)
            break;
        memcpy(cols + used, c, l);
        used += l;
        n++;
    }
    cols[used] = '\0';
    sqlite3_finalize(st);
    return n;
}

/* Checks that merge knows every table and column of the attached input `src` and creates the
 * tables main lacks (from the input's own CREATE statement). Sets present[] per spec entry. */
int pa_merge_prepare_tables(pa_mctx_t *m, const pa_minput_t *in, char *present)
{
    size_t nspec;
    const pa_mtable_t *spec = pa_merge_spec(&nspec);
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(m->db, "SELECT name, sql FROM src.sqlite_master WHERE type = 'table' AND name NOT LIKE"
                           " 'sqlite\\_%' ESCAPE '\\'", -1, &st, NULL) != SQLITE_OK) {
        snprintf(m->err, m->errsz, "'%s' cannot be read: %s", in->path, sqlite3_errmsg(m->db));
        return -1;
    }
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0), *sql = (const char *)sqlite3_column_text(st, 1);
        const pa_mtable_t *t = pa_merge_spec_find(name);
        char cols[4096], mcols[4096];
        if (!t) {
            snprintf(m->err, m->errsz, "'%s' has a table %s this profagent cannot merge (written by another version?)",
                     in->path, name);
            rc = -1;
            break;
        }
        present[t - spec] = 1;
        pa_merge_table_cols(m->db, "src", name, cols, sizeof cols);
        for (const char *c = cols; *c; c += strlen(c) + 1)
            if (!pa_merge_spec_col(t, c, strlen(c))) {
                snprintf(m->err, m->errsz, "'%s' has a column %s.%s this profagent cannot merge", in->path, name, c);
                return sqlite3_finalize(st), -1;
            }
        if (pa_merge_table_cols(m->db, "main", name, mcols, sizeof mcols) <= 0) {
            rc = pa_merge_exec(m->db, sql, "creating the merged DB's tables", m->err, m->errsz);
            continue;
        }
        for (const char *c = cols; *c; c += strlen(c) + 1) {
            int found = 0;
            for (const char *d = mcols; *d && !found; d += strlen(d) + 1)
                found = strcmp(c, d) == 0;
            if (!found) {
                snprintf(m->err, m->errsz, "'%s' has a column %s.%s the inputs before it lack: their layouts differ",
                         in->path, name, c);
                return sqlite3_finalize(st), -1;
            }
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* INSERT INTO main.T(cols) SELECT <transformed cols> FROM src.T AS s [where]. */
int pa_merge_copy_rows(pa_mctx_t *m, const pa_mtable_t *t, const char *into, const char *where)
{
    char cols[4096], *sql = malloc(PA_SQL_MAX);
    if (!sql)
        return snprintf(m->err, m->errsz, "out of memory"), -1;
    int n = pa_merge_table_cols(m->db, "src", t->name, cols, sizeof cols);
    int rowid = pa_merge_spec_col(t, "rowid", 5);
    sql[0] = '\0';
    int rc = pa_merge_cat(sql, "INSERT INTO %s(%s", into, rowid ? "rowid" : "");
    for (const char *c = cols; *c && rc == 0; c += strlen(c) + 1)
        rc = pa_merge_cat(sql, "%s\"%s\"", c == cols && !rowid ? "" : ", ", c);
    rc |= pa_merge_cat(sql, ") SELECT ");
    if (rowid)
        rc |= col_expr(m, sql, "rowid", rowid) | pa_merge_cat(sql, "%s", n ? ", " : "");
    for (const char *c = cols; *c && rc == 0; c += strlen(c) + 1)
        rc = (c == cols ? 0 : pa_merge_cat(sql, ", ")) | col_expr(m, sql, c, pa_merge_spec_col(t, c, strlen(c)));
    rc |= pa_merge_cat(sql, " FROM src.\"%s\" AS s%s%s", t->name, where ? " WHERE " : "", where ? where : "");
    if (rc == 0) {
        char what[96];
        snprintf(what, sizeof what, "merging %s", t->name);
        rc = pa_merge_exec(m->db, sql, what, m->err, m->errsz);
    } else {
        snprintf(m->err, m->errsz, "merging %s: statement too long", t->name);
    }
    free(sql);
    return rc;
}
