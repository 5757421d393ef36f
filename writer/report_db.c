/* report_db.c - opening a DB for reports: refuse anything that is not a profagent DB we can read. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "writer_internal.h"

/* Reads the 16-byte SQLite header; returns 0 when it is a SQLite 3 file, else err is set. */
static int pa_check_sqlite_header(const char *path, char *err, size_t errsz)
{
    static const char magic[16] = "SQLite format 3";  /* with its NUL: 16 bytes */
    char hdr[16];
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errsz, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(hdr, 1, sizeof hdr, f);
    int rerr = ferror(f) ? errno : 0;  /* a directory opens but reads EISDIR: not "empty" */
    fclose(f);
    if (rerr) {
        snprintf(err, errsz, "cannot read '%s': %s", path, strerror(rerr));
        return -1;
    }
    if (n == 0) {
        snprintf(err, errsz, "'%s' is empty, not a profagent database", path);
        return -1;
    }
    if (n < sizeof hdr || memcmp(hdr, magic, sizeof hdr) != 0) {
        snprintf(err, errsz, "'%s' is not a profagent database (not an SQLite file)", path);
        return -1;
    }
    return 0;
}

/* META.schema_version, or -1 with err set. */
static int64_t pa_schema_version(sqlite3 *db, const char *path, char *err, size_t errsz)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = 'schema_version'", -1, &st,
                           NULL) != SQLITE_OK) {
        if (strstr(sqlite3_errmsg(db), "no such table"))
            snprintf(err, errsz, "'%s' is an SQLite database but not a profagent database"
                     " (no META table)", path);
        else if (strstr(sqlite3_errmsg(db), "no such column")) /* another tool's META */
            snprintf(err, errsz, "'%s' is an SQLite database but not a profagent database"
                     " (its META table has no key/value columns)", path);
        else
            snprintf(err, errsz, "'%s' cannot be read: %s", path, sqlite3_errmsg(db));
        return -1;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
        v = sqlite3_column_int64(st, 0);
    else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        snprintf(err, errsz, "'%s' is not a profagent database (META has no integer"
                 " schema_version)", path);
    else
        snprintf(err, errsz, "'%s' cannot be read: %s", path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return v;
}

/* META `key` as an integer; -1 when missing or not an integer. */
static int64_t pa_meta_int(sqlite3 *db, const char *key)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* One warning line on stderr when the DB is from a session that did not finish (killed while
 * the DB was written: db_complete missing; or ended abnormally / recovered from a spool:
 * session_complete = 0). Reports still run: what is there is consistent. */
static void pa_warn_incomplete(sqlite3 *db, const char *path)
{
    const char *why = NULL;
    if (pa_meta_int(db, "db_complete") != 1)
        why = "the DB was not finished: the process died while writing it";
    else if (pa_meta_int(db, "session_complete") != 1)
        why = "session_complete=0: the process ended abnormally or the DB was recovered from a spool";
    if (why)
        fprintf(stderr, "profagent: stats: warning: %s is from an incomplete session (%s): reports may miss data\n",
                path, why);
}

int pa_report_db_open(const char *path, sqlite3 **out, char *err, size_t errsz)
{
    sqlite3 *db = NULL;
    *out = NULL;
    if (pa_check_sqlite_header(path, err, errsz) != 0)
        return PA_REP_EDATA;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errsz, "cannot open '%s': %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return PA_REP_EDATA;
    }
    int64_t v = pa_schema_version(db, path, err, errsz);
    if (v >= 0 && v > PA_SCHEMA_VERSION) {
        snprintf(err, errsz, "'%s' was written by a newer profagent (schema version %lld; this"
                 " version reads up to %d)", path, (long long)v, PA_SCHEMA_VERSION);
        v = -1;
    } else if (v == 0) {
        snprintf(err, errsz, "'%s' has an invalid schema version 0", path);
        v = -1;
    }
    if (v < 0 || pa_sqlfn_register(db) != 0) {
        if (v >= 0)
            snprintf(err, errsz, "cannot register SQL functions on '%s'", path);
        sqlite3_close(db);
        return PA_REP_EDATA;
    }
    pa_warn_incomplete(db, path);
    *out = db;
    return PA_REP_OK;
}
