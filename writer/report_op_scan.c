/* report_op_scan.c - the operator reports' walk over (range, kernel) rows: each range's name
 * parsed once, its instance appended to the report's array (writer_op.h, pa_op_scan_rows). */
#include <stdlib.h>
#include <string.h>

#include "report_util.h"
#include "writer_op.h"

/* Appends a zeroed element to the array; NULL when out of memory (the array is unchanged). */
static void *grow(const pa_op_scan_t *sc)
{
    if (*sc->n == *sc->cap) {
        size_t nc = *sc->cap ? *sc->cap * 2 : 64;
        void *nv = realloc(*sc->v, nc * sc->elem);
        if (!nv)
            return NULL;
        *sc->v = nv;
        *sc->cap = nc;
    }
    void *e = (char *)*sc->v + (*sc->n)++ * sc->elem;
    memset(e, 0, sc->elem);
    return e;
}

int pa_op_scan_rows(sqlite3 *db, sqlite3_stmt *st, const pa_op_scan_t *sc, const char *report, char *err,
                    size_t errsz)
{
    int64_t skip = -1, cur_rid = -1;
    size_t cur = (size_t)-1; /* index of the current range's instance */
    int rc, oom = 0;
    while (!oom && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t rid = sqlite3_column_int64(st, 0);
        if (rid == skip)
            continue;
        if (cur == (size_t)-1 || cur_rid != rid) {
            const char *name = (const char *)sqlite3_column_blob(st, 1);
            size_t len = (size_t)sqlite3_column_bytes(st, 1);
            const char *domain = (const char *)sqlite3_column_text(st, 2);
            pa_op_info_t info;
            int fam = name ? pa_op_parse(name, len, domain ? domain : "", sc->mg, &info) : PA_OP_NONE;
            if (fam == PA_OP_NONE || (sc->family != PA_OP_NONE && fam != sc->family)) {
                if (fam != PA_OP_NONE)
                    pa_op_info_free(&info);
                skip = rid;
                cur = (size_t)-1;
                continue;
            }
            void *e = grow(sc);
            char *copy = e ? strndup(name, len) : NULL;
            if (!copy) {
                if (e)
                    (*sc->n)--;
                pa_op_info_free(&info);
                oom = 1;
                break;
            }
            cur = *sc->n - 1;
            cur_rid = rid;
            sc->begin(sc->ctx, e, st, &info, copy);
        }
        if (sc->row(sc->ctx, (char *)*sc->v + cur * sc->elem, st) != 0)
            oom = 1;
    }
    if (oom) {
        sqlite3_finalize(st);
        snprintf(err, errsz, "report '%s': out of memory while reading the operator ranges", report);
        return PA_REP_EDATA;
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, report, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}
