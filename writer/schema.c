/* schema.c - the DB schema (versioned by META.schema_version) and META helpers. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "../common/pa_log.h"
#include "../common/pa_names.h"
#include "writer_internal.h"

/* Modelled on spec/ascend-profiler-db-schema.zh.txt: names in STRING_IDS, threads as
 * globalTid = pid << 32 | tid, all times ns on CLOCK_MONOTONIC. Bump PA_SCHEMA_VERSION
 * (writer.h) on any incompatible change; readers refuse newer versions. */
static const char pa_schema_sql[] =
    "CREATE TABLE META(key TEXT PRIMARY KEY, value);"
    "CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);"
    "CREATE TABLE THREADS(globalTid INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER,"
    " nameId INTEGER, records INTEGER, drops INTEGER, firstNs INTEGER, lastNs INTEGER);"
    /* style: 0 push/pop, 1 start/end; level -1 for start/end; parentId 0 = none;
     * unterminated 1: still open at exit, end = session end */
    /* The three trace tables of one row per event declare no column type: every value in
     * them is an integer (the writer's pa_bulk_int, the ids NULL only as the next rowid), and
     * a column with INTEGER affinity makes SQLite convert each value of each row once more
     * (OP_MakeRecord's applyAffinity: 135 of ~2400 instructions a row, callgrind bench_write);
     * the stored values, typeof() and every comparison with an integer are the same. */
    "CREATE TABLE HGTX_RANGES(id INTEGER PRIMARY KEY, start, end, globalTid, endGlobalTid,"
    " nameId, domainId, style, level, parentId, unterminated);"
    "CREATE TABLE HGTX_MARKS(start, globalTid, nameId, domainId);"
    "CREATE TABLE OSRT_API(start, end, globalTid, nameId, ret, errno);"
    /* the aggregator's online statistics; category = enum pa_stat_cat (agg.h), nameId the
     * key (display name), tag the category's extra key (HGTX: style); avg, median and stddev
     * hold the values the reports and the summary print: truncated (pa_stat_trunc) */
    "CREATE TABLE SUMMARY_STATS(category INTEGER, nameId INTEGER, tag INTEGER,"
    " count INTEGER, total INTEGER, min INTEGER, max INTEGER, avg REAL, median REAL,"
    " stddev REAL, medianExact INTEGER);"
    /* one row per named counter: records, drops, late_records, hgtx misuse, spool sizes */
    "CREATE TABLE SESSION_COUNTERS(name TEXT PRIMARY KEY, value INTEGER);"
    /* ranges with their display name: "domain:range" when a domain is set (spec 2.3.13); a
     * domain created without a name (NULL, "") gives the range's name alone, as the summary */
    "CREATE VIEW HGTX_RANGES_NAMED AS SELECT r.*, CASE WHEN r.domainId != 0 AND d.value != ''"
    " THEN d.value || ':' || n.value ELSE n.value END AS name FROM HGTX_RANGES r"
    " LEFT JOIN STRING_IDS n ON n.id = r.nameId LEFT JOIN STRING_IDS d ON d.id = r.domainId;";

/* Indexes of the trace tables only readers need (time windows, parent lookups, graph-node
 * lookups): not maintained while the program runs nor built at exit (with them the DB thread
 * loaded 0.70 M rows/s of CPU, without 1.48 M, bench_write 1 M events, 3 runs each); the first
 * reader of a finished DB creates them (pa_db_prepare_for_readers). */
static const char pa_reader_index_sql[] =
    "CREATE INDEX IF NOT EXISTS HGTX_RANGES_start ON HGTX_RANGES(start);"
    "CREATE INDEX IF NOT EXISTS HGTX_RANGES_parent ON HGTX_RANGES(parentId);"
    "CREATE INDEX IF NOT EXISTS HGTX_MARKS_start ON HGTX_MARKS(start);"
    "CREATE INDEX IF NOT EXISTS OSRT_API_start ON OSRT_API(start);"
    "CREATE INDEX IF NOT EXISTS ZE_API_start ON ZE_API(start);"
    "CREATE INDEX IF NOT EXISTS ZE_API_corrId ON ZE_API(corrId);";

/* While set (pa_db_capture_errors), failures are kept here instead of logged: the first only. */
static char *cap_buf;
static size_t cap_len;
static int *cap_errno;

void pa_db_capture_errors(char *buf, size_t len, int *os_errno)
{
    cap_buf = buf;
    cap_len = len;
    cap_errno = os_errno;
    if (buf && len)
        buf[0] = '\0';
    if (os_errno)
        *os_errno = 0;
}

/* Set by the first SQLite write the file size limit refused (pa_writer_fsize_hit). */
static _Atomic int fsize_hit;

/* 1 when the DB's file or one of its side files reached `limit` bytes. */
static int pa_db_file_at(sqlite3 *db, uint64_t limit)
{
    const char *path = sqlite3_db_filename(db, "main");
    static const char *const sides[] = {"", "-wal", "-journal"};
    char name[PATH_MAX + 16];
    struct stat st;
    for (size_t i = 0; path && *path && i < sizeof sides / sizeof sides[0]; i++)
        if (snprintf(name, sizeof name, "%s%s", path, sides[i]) < (int)sizeof name && stat(name, &st) == 0 &&
            (uint64_t)st.st_size >= limit)
            return 1;
    return 0;
}

int pa_db_fsize_hit(sqlite3 *db)
{
    if (!db)
        return 0;
    /* EFBIG, or a short write that stopped at the limit (SQLite then reports an I/O error or a
     * full disk without an OS errno): a file of the DB is as large as the limit */
    int code = sqlite3_errcode(db);
    struct rlimit rl;
    if (sqlite3_system_errno(db) != EFBIG &&
        ((code != SQLITE_IOERR && code != SQLITE_FULL) || getrlimit(RLIMIT_FSIZE, &rl) != 0 ||
         rl.rlim_cur == RLIM_INFINITY || !pa_db_file_at(db, (uint64_t)rl.rlim_cur)))
        return 0;
    atomic_store(&fsize_hit, 1);
    return 1;
}

int pa_writer_fsize_hit(void)
{
    return atomic_load(&fsize_hit);
}

/* Logs one SQLite failure, or keeps it when captured (the first one: what went wrong first).
 * One the file size limit caused is only a debug line: the session says it once, with what
 * was kept (the process's one message, not one per statement that failed after it). */
static void pa_db_report(sqlite3 *db, const char *msg, const char *sql)
{
    int se = sqlite3_system_errno(db); /* the OS's reason (EFBIG, ENOSPC, EMFILE, ...) behind an I/O error */
    if (pa_db_fsize_hit(db) && !cap_buf) {
        pa_dbg("writer", "SQLite: %s (file size limit) (in: %.80s)", msg, sql);
        return;
    }
    if (cap_buf) {
        if (!cap_buf[0] && cap_len) {
            snprintf(cap_buf, cap_len, "SQLite: %s%s%s%s", msg, se ? " (" : "", se ? strerror(se) : "", se ? ")" : "");
            *cap_errno = se;
        }
        return;
    }
    pa_err("writer", "SQLite: %s%s%s%s (in: %.80s)", msg, se ? " (" : "", se ? strerror(se) : "", se ? ")" : "",
           sql);
}

int pa_db_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    pa_db_report(db, msg ? msg : sqlite3_errmsg(db), sql);
    sqlite3_free(msg);
    return -1;
}

int pa_schema_create(sqlite3 *db)
{
    return pa_db_exec(db, pa_schema_sql);
}

int pa_schema_create_reader_indexes(sqlite3 *db)
{
    return pa_db_exec(db, pa_reader_index_sql);
}

static int pa_meta_set(sqlite3 *db, const char *key, int is_int, int64_t iv, const char *sv)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO META(key, value) VALUES(?1, ?2)", -1,
                           &st, NULL) != SQLITE_OK) {
        pa_db_report(db, sqlite3_errmsg(db), "META");
        return -1;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (is_int)
        sqlite3_bind_int64(st, 2, iv);
    else if (sv)
        sqlite3_bind_text(st, 2, sv, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        pa_db_report(db, sqlite3_errmsg(db), key);
        return -1;
    }
    return 0;
}

int pa_meta_set_int(sqlite3 *db, const char *key, int64_t v)
{
    return pa_meta_set(db, key, 1, v, NULL);
}

int pa_meta_set_text(sqlite3 *db, const char *key, const char *v)
{
    return pa_meta_set(db, key, 0, 0, v);
}

const char *pa_osrt_func_name(uint32_t func)
{
    /* the aggregator keys OSRT statistics by the same names (common/pa_names.c) */
    return func > 0 && func < PA_OSRT_COUNT ? pa_osrt_name(func) : NULL;
}
