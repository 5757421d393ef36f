/* report_util.h - helpers for report producers (internal to writer/, usable by every report file). */
#ifndef PA_REPORT_UTIL_H
#define PA_REPORT_UTIL_H

#include "writer_internal.h"

/*! pa_table_add_sqlcol() : appends column `col` of the current row: INTEGER -> int, FLOAT ->
 *  double with `prec` digits, NULL -> "-", TEXT/BLOB -> string (exact bytes). */
void pa_table_add_sqlcol(pa_table_t *t, sqlite3_stmt *st, int col, int prec);

/*! pa_report_prepare() : prepares `sql`; on failure sets err ("report 'x': ...") and returns
 *  PA_REP_EDATA. */
int pa_report_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char *report,
                      char *err, size_t errsz);

/*! pa_report_step_error() : sets err from the DB error, finalizes st, returns PA_REP_EDATA. */
int pa_report_step_error(sqlite3 *db, sqlite3_stmt *st, const char *report, char *err, size_t errsz);

/*! pa_report_stat_rows() : runs st (finalized here) whose columns are: total (int, ns), count,
 *  then anything else (avg, med, ...); emits Time (%) (1 digit, of the total over all rows
 *  the query returned, spec 2.3.13 "of the total for all ranges listed"), Total, count, the
 *  rest as is (doubles with 0 digits); then applies rows=. Returns PA_REP_OK / PA_REP_EDATA. */
int pa_report_stat_rows(sqlite3 *db, sqlite3_stmt *st, const pa_report_req_t *req,
                        pa_table_t *t, char *err, size_t errsz);

/*! pa_report_limit_rows() : keeps the first `rows=` rows when the option is set. */
void pa_report_limit_rows(const pa_report_req_t *req, pa_table_t *t);

#endif
