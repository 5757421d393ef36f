/* merge_input.c - merges one attached input: string and pid maps, id offsets, then every table. */
#include <stdlib.h>
#include <string.h>

#include "merge_internal.h"

#define PA_PID_STRIDE (1ll << 22) /* above Linux's pid_max (2^22): a renumbered pid meets no real one */

static int64_t one_int(pa_mctx_t *m, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK)
        return dflt;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* STRING_IDS: the first input's ids are kept (no map needed); a later input's strings are looked
 * up by value, new values get new ids, and temp.pa_smap maps its ids to the merged ones. */
static int merge_strings(pa_mctx_t *m)
{
    if (one_int(m, "SELECT count(*) FROM (SELECT 1 FROM main.STRING_IDS LIMIT 1)", 0) == 0) {
        m->smap = 0;
        return pa_merge_exec(m->db, "INSERT INTO main.STRING_IDS(id, value) SELECT id, value FROM src.STRING_IDS;"
                             "CREATE INDEX IF NOT EXISTS main.pa_merge_strings ON STRING_IDS(value);",
                             "merging STRING_IDS", m->err, m->errsz);
    }
    m->smap = 1;
    return pa_merge_exec(m->db,
        "DELETE FROM temp.pa_smap;"
        "INSERT INTO main.STRING_IDS(value) SELECT value FROM src.STRING_IDS s WHERE value IS NOT NULL AND NOT EXISTS"
        " (SELECT 1 FROM main.STRING_IDS o WHERE o.value = s.value) GROUP BY value ORDER BY min(id);"
        "INSERT INTO temp.pa_smap(old, new) SELECT s.id, (SELECT min(o.id) FROM main.STRING_IDS o"
        " WHERE o.value = s.value) FROM src.STRING_IDS s;",
        "merging STRING_IDS", m->err, m->errsz);
}

static int pid_taken(const pa_mctx_t *m, int64_t p)
{
    for (size_t i = 0; i < m->npids; i++)
        if (m->pids[i] == p)
            return 1;
    return 0;
}

/* Pids are kept; one an earlier input already has (another host, or a pid reused) becomes
 * pid + k * 2^22 (temp.pa_pmap), said once on m->log and recorded in MERGE_INPUTS. */
static int merge_pids(pa_mctx_t *m, const pa_minput_t *in, int merged)
{
    sqlite3_stmt *st, *ins;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT pid FROM src.THREADS UNION SELECT value FROM src.META WHERE key = 'pid' AND"
             " typeof(value) = 'integer'%s", merged ? " UNION SELECT mergedPid FROM src.MERGE_INPUTS" : "");
    m->pmap = 0;
    if (pa_merge_exec(m->db, "DELETE FROM temp.pa_pmap", "merging pids", m->err, m->errsz) != 0)
        return -1;
    if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "INSERT INTO temp.pa_pmap(old, new) VALUES(?1, ?2)", -1, &ins, NULL) != SQLITE_OK) {
        snprintf(m->err, m->errsz, "'%s': reading its pids: %s", in->path, sqlite3_errmsg(m->db));
        return -1;
    }
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t p = sqlite3_column_int64(st, 0), q = p;
        while (pid_taken(m, q) && q + PA_PID_STRIDE < (1ll << 32))
            q += PA_PID_STRIDE;
        if (m->npids == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 64;
            int64_t *v = realloc(m->pids, cap * sizeof *v);
            if (!v) {
                rc = -1;
                break;
            }
            m->pids = v, m->cap = cap;
        }
        m->pids[m->npids++] = q;
        if (q == p)
            continue;
        m->pmap = 1;
        fprintf(m->log, "profagent: merge: pid %lld of '%s' is also in an earlier input; it is pid %lld in the merged"
                " DB (MERGE_INPUTS says so)\n", (long long)p, in->path, (long long)q);
        sqlite3_bind_int64(ins, 1, p);
        sqlite3_bind_int64(ins, 2, q);
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = -1;
        sqlite3_reset(ins);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(ins);
    if (rc)
        snprintf(m->err, m->errsz, "'%s': mapping its pids failed", in->path);
    return rc;
}

/* Host-counter events: one that equals an event already merged (same name, encoding and
 * exclusions) shares its index, so per-range reports join across processes; another gets the
 * next free index. temp.pa_hcmap(old, new, fresh): fresh = its HOST_COUNTERS row is copied. */
static int merge_hcmap(pa_mctx_t *m)
{
    sqlite3_stmt *ev, *find, *ins;
    int64_t next = one_int(m, "SELECT max(eventIdx) + 1 FROM main.HOST_COUNTERS", 0);
    if (pa_merge_exec(m->db, "DELETE FROM temp.pa_hcmap", "merging HOST_COUNTERS", m->err, m->errsz) != 0)
        return -1;
    int ok = sqlite3_prepare_v2(m->db, "SELECT eventIdx, name, type, config, excludeKernel, excludeUser FROM"
                                " src.HOST_COUNTERS WHERE eventIdx IS NOT NULL ORDER BY eventIdx", -1, &ev, NULL) == SQLITE_OK;
    ok &= sqlite3_prepare_v2(m->db, "SELECT eventIdx FROM main.HOST_COUNTERS WHERE eventIdx IS NOT NULL AND name IS ?1"
                             " AND type IS ?2 AND config IS ?3 AND excludeKernel IS ?4 AND excludeUser IS ?5 AND eventIdx"
                             " NOT IN (SELECT new FROM temp.pa_hcmap) LIMIT 1", -1, &find, NULL) == SQLITE_OK;
    ok &= sqlite3_prepare_v2(m->db, "INSERT INTO temp.pa_hcmap(old, new, fresh) VALUES(?1, ?2, ?3)", -1, &ins,
                             NULL) == SQLITE_OK;
    while (ok && sqlite3_step(ev) == SQLITE_ROW) {
        for (int c = 1; c <= 5; c++)
            sqlite3_bind_value(find, c, sqlite3_column_value(ev, c));
        int found = sqlite3_step(find) == SQLITE_ROW;
        int64_t idx = found ? sqlite3_column_int64(find, 0) : next++;
        sqlite3_reset(find);
        sqlite3_bind_int64(ins, 1, sqlite3_column_int64(ev, 0));
        sqlite3_bind_int64(ins, 2, idx);
        sqlite3_bind_int(ins, 3, !found);
        ok = sqlite3_step(ins) == SQLITE_DONE;
        sqlite3_reset(ins);
    }
    if (!ok)
        snprintf(m->err, m->errsz, "merging HOST_COUNTERS: %s", sqlite3_errmsg(m->db));
    sqlite3_finalize(ev);
    sqlite3_finalize(find);
    sqlite3_finalize(ins);
    return ok ? 0 : -1;
}

/* next[k] = off[k] + (largest id of kind k in the input) + 1, over every column of that kind. */
static int merge_maxima(pa_mctx_t *m, const char *present)
{
    size_t nspec;
    const pa_mtable_t *spec = pa_merge_spec(&nspec);
    for (size_t i = 0; i < nspec; i++) {
        char cols[4096], sql[4096] = "SELECT 0", kinds[64];
        size_t nk = 0;
        if (!present[i])
            continue;
        pa_merge_table_cols(m->db, "src", spec[i].name, cols, sizeof cols);
        int rowid = pa_merge_spec_col(&spec[i], "rowid", 5);
        if (rowid)
            kinds[nk++] = (char)rowid, pa_merge_cat(sql, ", max(rowid)");
        for (const char *c = cols; *c && nk < sizeof kinds; c += strlen(c) + 1) {
            int k = pa_merge_spec_col(&spec[i], c, strlen(c));
            if (k > 0 && k < 128 && strchr(PA_MERGE_ID_KINDS, k))
                kinds[nk++] = (char)k, pa_merge_cat(sql, ", max(\"%s\")", c);
        }
        if (!nk)
            continue;
        pa_merge_cat(sql, " FROM src.\"%s\"", spec[i].name);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK) {
            snprintf(m->err, m->errsz, "reading %s: %s", spec[i].name, sqlite3_errmsg(m->db));
            return -1;
        }
        int r = sqlite3_step(st);
        for (size_t j = 0; r == SQLITE_ROW && j < nk; j++) {
            int k = kinds[j];
            if (sqlite3_column_type(st, (int)j + 1) == SQLITE_INTEGER) {
                int64_t v = m->off[k] + sqlite3_column_int64(st, (int)j + 1) + 1;
                if (v > m->next[k])
                    m->next[k] = v;
            }
        }
        sqlite3_finalize(st);
        if (r != SQLITE_ROW) {
            snprintf(m->err, m->errsz, "reading %s: %s", spec[i].name, sqlite3_errmsg(m->db));
            return -1;
        }
    }
    return 0;
}

/* The input's own MERGE_INPUTS row (a merged input brings its rows instead). */
static int merge_input_row(pa_mctx_t *m, const pa_minput_t *in, size_t i)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db, "INSERT INTO main.MERGE_INPUTS VALUES(?1, ?2, ?3, COALESCE((SELECT new FROM"
                           " temp.pa_pmap WHERE old = ?3), ?3), ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", -1, &st,
                           NULL) != SQLITE_OK) {
        snprintf(m->err, m->errsz, "MERGE_INPUTS: %s", sqlite3_errmsg(m->db));
        return -1;
    }
    const pa_minput_t *r = &in[i];
    sqlite3_bind_int64(st, 1, m->off['n']);
    sqlite3_bind_text(st, 2, r->path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, r->pid);
    sqlite3_bind_int64(st, 4, r->rank);
    sqlite3_bind_text(st, 5, r->host, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, r->boot, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, m->off['d']);
    sqlite3_bind_int64(st, 8, m->next['d'] - m->off['d']);
    sqlite3_bind_int64(st, 9, r->clock_off);
    if (r->clock_unc >= 0)
        sqlite3_bind_int64(st, 10, r->clock_unc);
    sqlite3_bind_int64(st, 11, r->start_wall);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    if (rc)
        snprintf(m->err, m->errsz, "MERGE_INPUTS: %s", sqlite3_errmsg(m->db));
    sqlite3_finalize(st);
    return rc;
}

/* Rows of one spec table (not STRING_IDS: done first). */
static int merge_table(pa_mctx_t *m, const pa_mtable_t *t, int merged)
{
    char into[96], sql[512];
    snprintf(into, sizeof into, "main.\"%s\"", t->name);
    switch (t->mode) {
    case PA_MT_ROWS:
        return pa_merge_copy_rows(m, t, into, NULL);
    case PA_MT_HCEV:
        return pa_merge_copy_rows(m, t, into, "(s.eventIdx IS NOT NULL AND s.eventIdx IN (SELECT old FROM"
            " temp.pa_hcmap WHERE fresh)) OR (s.eventIdx IS NULL AND NOT EXISTS (SELECT 1 FROM main.HOST_COUNTERS o"
            " WHERE o.eventIdx IS NULL AND o.name IS s.name AND o.asked IS s.asked AND o.status IS s.status))");
    case PA_MT_STATS:
        return pa_merge_copy_rows(m, t, "temp.pa_stats", NULL);
    case PA_MT_COUNTERS:
        return pa_merge_exec(m->db, "INSERT INTO main.SESSION_COUNTERS(name, value) SELECT name, value FROM"
                             " src.SESSION_COUNTERS WHERE 1 ON CONFLICT(name) DO UPDATE SET value = value +"
                             " excluded.value", "merging SESSION_COUNTERS", m->err, m->errsz);
    case PA_MT_META:
        if (merged) /* its MERGE_META holds its inputs' own META */
            return 0;
        snprintf(sql, sizeof sql, "INSERT INTO main.MERGE_META(input, key, value) SELECT %lld, key, value FROM"
                 " src.META", (long long)m->off['n']);
        return pa_merge_exec(m->db, sql, "merging META", m->err, m->errsz);
    default:
        return 0;
    }
}

int pa_merge_input(pa_mctx_t *m, pa_minput_t *in, size_t i)
{
    size_t nspec;
    const pa_mtable_t *spec = pa_merge_spec(&nspec);
    char present[64] = {0};
    int merged = in[i].merged_inputs > 0;
    if (nspec > sizeof present) {
        snprintf(m->err, m->errsz, "merge: table spec larger than %zu entries", sizeof present);
        return -1;
    }
    if (pa_merge_prepare_tables(m, &in[i], present) != 0 ||
        pa_merge_exec(m->db, "INSERT OR IGNORE INTO temp.pa_objs(name, type, sql) SELECT name, type, sql FROM"
                      " src.sqlite_master WHERE type IN ('index', 'view') AND sql IS NOT NULL", "reading indexes",
                      m->err, m->errsz) != 0)
        return -1;
    m->toff = in[i].clock_off;
    memcpy(m->off, m->next, sizeof m->off);
    if (merge_strings(m) != 0 || merge_pids(m, &in[i], merged) != 0 || merge_maxima(m, present) != 0)
        return -1;
    if (!merged && m->next['n'] <= m->off['n'])
        m->next['n'] = m->off['n'] + 1;
    if (present[pa_merge_spec_find("HOST_COUNTERS") - spec] && merge_hcmap(m) != 0)
        return -1;
    for (size_t t = 0; t < nspec; t++)
        if (present[t] && spec[t].mode != PA_MT_STRINGS && merge_table(m, &spec[t], merged) != 0)
            return -1;
    return merged ? 0 : merge_input_row(m, in, i);
}
