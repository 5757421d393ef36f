/* report_util.c - helpers shared by report producers: SQL columns to cells, Time (%), rows,
 * device/name options, preparing with ze_kname(). */
#include <string.h>

#include "report_util.h"
#include "writer_ze.h"

void pa_table_add_sqlcol(pa_table_t *t, sqlite3_stmt *st, int col, int prec)
{
    switch (sqlite3_column_type(st, col)) {
    case SQLITE_INTEGER: pa_table_add_int(t, sqlite3_column_int64(st, col)); break;
    case SQLITE_FLOAT: pa_table_add_double(t, sqlite3_column_double(st, col), prec); break;
    case SQLITE_NULL: pa_table_add_none(t); break;
    default: {
        const void *s = sqlite3_column_blob(st, col);
        pa_table_add_str(t, s, (size_t)sqlite3_column_bytes(st, col));
        break;
    }
    }
}

int pa_report_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char *report,
                      char *err, size_t errsz)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK) {
        const char *m = sqlite3_errmsg(db);
        if (strstr(m, "no such table"))
            snprintf(err, errsz, "report '%s': this database has no data for it (%s)", report, m);
        else
            snprintf(err, errsz, "report '%s': SQL error: %s", report, m);
        return PA_REP_EDATA;
    }
    return PA_REP_OK;
}

int pa_report_step_error(sqlite3 *db, sqlite3_stmt *st, const char *report, char *err, size_t errsz)
{
    snprintf(err, errsz, "report '%s': %s", report, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return PA_REP_EDATA;
}

int pa_report_stat_rows(sqlite3 *db, sqlite3_stmt *st, const pa_report_req_t *req,
                        pa_table_t *t, char *err, size_t errsz)
{
    int rc, ncol = sqlite3_column_count(st);
    double grand = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t total = sqlite3_column_int64(st, 0);
        grand += (double)total;
        pa_table_add_double(t, (double)total, 1);  /* Time (%) patched below */
        pa_table_add_int(t, total);
        pa_table_add_int(t, sqlite3_column_int64(st, 1));
        for (int c = 2; c < ncol; c++)
            pa_table_add_sqlcol(t, st, c, 0);
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    size_t nrows = pa_table_nrows(t);
    for (size_t r = 0; r < nrows; r++) {
        pa_cell_t *c = &t->cells[r * (size_t)t->ncols];
        c->d = grand > 0 ? c->d * 100.0 / grand : 0.0;
    }
    pa_report_limit_rows(req, t);
    return PA_REP_OK;
}

void pa_report_limit_rows(const pa_report_req_t *req, pa_table_t *t)
{
    const pa_opt_val_t *rows = pa_req_opt(req, "rows");
    if (t->sink) /* a streamed table holds one row: the engine's sink applies rows= */
        return;
    if (rows && (size_t)rows->i < pa_table_nrows(t))
        t->ncells = (size_t)rows->i * (size_t)t->ncols;
}

int pa_report_name_mode(const pa_report_req_t *req)
{
    const pa_opt_val_t *b = pa_req_opt(req, "base"), *m = pa_req_opt(req, "mangled");
    return (m && m->set) ? 2 : (b && b->set) ? 1 : 0;
}

int pa_report_device_filter(const pa_report_req_t *req, char *buf, size_t sz)
{
    const pa_opt_val_t *d = pa_req_opt(req, "device");
    if (!d || !d->set)
        return 0;
    size_t len = strlen(buf);
    int n = snprintf(buf + len, sz - len, " AND o.deviceId IN (");
    for (size_t i = 0; i < d->nids && n > 0 && (size_t)n < sz - len; i++)
        n += snprintf(buf + len + n, sz - len - (size_t)n, "%s%lld", i ? "," : "", (long long)d->ids[i]);
    if (n < 0 || (size_t)n + 2 >= sz - len)
        return -1;
    strcat(buf, ")");
    return 0;
}

int pa_report_device_clause(const pa_report_req_t *req, char *buf, size_t sz, char *err, size_t errsz)
{
    if (pa_report_device_filter(req, buf, sz) != 0) {
        snprintf(err, errsz, "report '%s': device list too long", req->def->name);
        return PA_REP_EDATA;
    }
    return PA_REP_OK;
}

int pa_report_check_devices(sqlite3 *db, const pa_report_req_t *req, char *err, size_t errsz)
{
    const pa_opt_val_t *d = pa_req_opt(req, "device");
    if (!d || !d->set || !d->nids)
        return PA_REP_OK;
    static const char *const sqls[] = {
        "SELECT deviceId FROM ZE_DEVICES UNION SELECT deviceId FROM ZE_OPS WHERE deviceId IS NOT NULL"
        " ORDER BY 1",
        "SELECT DISTINCT deviceId FROM ZE_OPS WHERE deviceId IS NOT NULL ORDER BY 1",
        "SELECT deviceId FROM ZE_DEVICES ORDER BY 1",
    };
    sqlite3_stmt *st = NULL;
    for (size_t i = 0; i < sizeof sqls / sizeof sqls[0] && !st; i++)
        if (sqlite3_prepare_v2(db, sqls[i], -1, &st, NULL) != SQLITE_OK)
            st = NULL;
    if (!st) /* no Level Zero tables: the report itself says there is no data */
        return PA_REP_OK;
    int64_t ids[PA_REPORT_MAX_IDS];
    size_t n = 0;
    char present[512] = "";
    size_t plen = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (n < PA_REPORT_MAX_IDS)
            ids[n++] = id;
        int w = snprintf(present + plen, sizeof present - plen, "%s%lld", plen ? ", " : "", (long long)id);
        if (w > 0 && (size_t)w < sizeof present - plen)
            plen += (size_t)w;
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < d->nids; i++) {
        size_t k = 0;
        while (k < n && ids[k] != d->ids[i])
            k++;
        if (k == n) {
            snprintf(err, errsz, "report '%s': device=%s: no device %lld in this database; devices present: %s",
                     req->def->name, d->s ? d->s : "?", (long long)d->ids[i], n ? present : "none");
            return PA_REP_EUSAGE;
        }
    }
    return PA_REP_OK;
}

int pa_report_prepare_ze(sqlite3 *db, const pa_report_req_t *req, const char *sql, sqlite3_stmt **st,
                         char *err, size_t errsz)
{
    if (pa_ze_sql_register(db) != 0) {
        snprintf(err, errsz, "report '%s': cannot register ze_kname", req->def->name);
        return PA_REP_EDATA;
    }
    return pa_report_prepare(db, sql, st, req->def->name, err, errsz);
}

const pa_report_opt_t pa_report_opts_rows_pid_tid[3] = {
    {"rows", PA_OPT_INT, "<limit>", PA_REPORT_ROWS_HELP, NULL},
    {"process", PA_OPT_IDLIST, "<pid_list>", "Optional argument. PIDs to include, separated by"
     " '/'.\nDefault is all processes.", NULL},
    {"thread", PA_OPT_IDLIST, "<tid_list>", "Optional argument. TIDs to include, separated by"
     " '/'.\nDefault is all threads.", NULL},
};

int pa_report_tid_stat_sum(sqlite3 *db, const pa_report_req_t *req, const char *select, const char *gtid_col,
                           const char *tail, pa_table_t *t, char *err, size_t errsz)
{
    char sql[2048];
    snprintf(sql, sizeof sql, "%s", select);
    if (pa_sql_tid_filter(req, gtid_col, sql, sizeof sql - 200) != 0) {
        snprintf(err, errsz, "report '%s': filter list too long", req->def->name);
        return PA_REP_EDATA;
    }
    strcat(sql, tail);
    sqlite3_stmt *st;
    int rc = pa_report_prepare(db, sql, &st, req->def->name, err, errsz);
    return rc ? rc : pa_report_stat_rows(db, st, req, t, err, errsz);
}
