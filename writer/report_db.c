/* report_db.c - opening a DB for reports: refuse anything that is not a profagent DB we can read. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writer_internal.h"
#include "../common/pa_stddev.h"

/* A spool `<db>.<pid>.<tag>.spool.zst` beside `db` (the records of a process that died before its
 * DB got them) into out; 0, or -1 when there is none. */
int pa_spool_beside(const char *db, char *out, size_t sz)
{
    const char *slash = strrchr(db, '/');
    const char *base = slash ? slash + 1 : db;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == db ? 1 : slash - db) : 1, slash ? db : ".");
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t bl = strlen(base);
    int rc = -1;
    for (struct dirent *e; rc && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > bl + 11 && strncmp(e->d_name, base, bl) == 0 && e->d_name[bl] == '.' &&
            strcmp(e->d_name + n - 10, ".spool.zst") == 0) {
            int w = snprintf(out, sz, "%.*s%s", slash ? (int)(slash - db + 1) : 0, db, e->d_name);
            if (w <= 0 || (size_t)w >= sz)
                break;
            rc = 0;
        }
    }
    closedir(d);
    return rc;
}

int pa_spool_why(const char *spool, char *out, size_t sz)
{
    char path[4200];
    snprintf(path, sizeof path, "%s.why", spool);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = sz > 0 && fgets(out, (int)sz, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    out[strcspn(out, "\n")] = '\0';
    static const char pfx[] = "profagent: agent: ";
    if (strncmp(out, pfx, sizeof pfx - 1) == 0)
        memmove(out, out + sizeof pfx - 1, strlen(out + sizeof pfx - 1) + 1);
    return 0;
}

static uint32_t pa_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* 1 when `<path>-wal` exists and is not empty: the pages of the transactions committed to it are
 * not in the main file yet (a killed or live writer in WAL mode), SQLite reads them from there. */
static int pa_has_wal(const char *path)
{
    char wal[4200];
    struct stat st;
    snprintf(wal, sizeof wal, "%s-wal", path);
    return stat(wal, &st) == 0 && st.st_size > 0;
}

int pa_db_check_file(const char *path, char *err, size_t errsz)
{
    unsigned char h[100];
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errsz, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(h, 1, sizeof h, f);
    int rerr = ferror(f) ? errno : 0;  /* a directory opens but reads EISDIR: not "empty" */
    int sterr = fstat(fileno(f), &st) != 0;
    fclose(f);
    if (rerr || sterr) {
        snprintf(err, errsz, "cannot read '%s': %s", path, strerror(rerr ? rerr : errno));
        return -1;
    }
    if (n == 0) {
        char spool[4096];
        /* a process killed before its DB had a page leaves it empty, and its records in the spool */
        if (pa_spool_beside(path, spool, sizeof spool) == 0)
            snprintf(err, errsz, "'%s' is empty, not a profagent database; the spool '%s' beside it holds the"
                     " process's records (it died before writing them): build the DB with: profagent recover %s",
                     path, spool, spool);
        else
            snprintf(err, errsz, "'%s' is empty, not a profagent database", path);
        return -1;
    }
    if (n < 16 || memcmp(h, "SQLite format 3", 16) != 0) { /* the magic with its NUL: 16 bytes */
        snprintf(err, errsz, "'%s' is not a profagent database (not an SQLite file)", path);
        return -1;
    }
    if (n < sizeof h) {
        snprintf(err, errsz, "'%s' is truncated (%zu bytes: not even an SQLite header)", path, n);
        return -1;
    }
    if (pa_has_wal(path))
        return 0; /* the main file alone is not the DB: SQLite checks the whole */
    uint32_t psz = (uint32_t)h[16] << 8 | h[17];
    if (psz == 1)
        psz = 65536;
    uint64_t pages = pa_be32(h + 28); /* valid when the change counter equals "version-valid-for" (SQLite >= 3.7) */
    if (pa_be32(h + 24) == pa_be32(h + 92) && pages && (uint64_t)st.st_size < pages * psz) {
        snprintf(err, errsz, "'%s' is truncated (%lld bytes; its header says %llu pages of %u bytes = %llu)", path,
                 (long long)st.st_size, (unsigned long long)pages, psz, (unsigned long long)(pages * psz));
        return -1;
    }
    if (psz >= 512 && st.st_size % psz) {
        snprintf(err, errsz, "'%s' is truncated (%lld bytes: not a whole number of %u-byte pages)", path,
                 (long long)st.st_size, psz);
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

/* 1 when the DB's META boot_id and hostname are this machine's current boot (its pid names a
 * process here). */
static int pa_meta_is_this_boot(sqlite3 *db)
{
    char boot[64] = "", host[256] = "";
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, boot, sizeof boot - 1) : -1;
    if (fd >= 0)
        close(fd);
    while (n > 0 && (boot[n - 1] == '\n' || boot[n - 1] == ' '))
        boot[--n] = '\0';
    if (n <= 0 || gethostname(host, sizeof host - 1) != 0)
        return 0;
    sqlite3_stmt *st = NULL;
    int same = 0;
    if (sqlite3_prepare_v2(db, "SELECT (SELECT value FROM META WHERE key = 'boot_id') = ?1 AND"
                           " (SELECT value FROM META WHERE key = 'hostname') = ?2", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, boot, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, host, -1, SQLITE_STATIC);
        same = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    }
    sqlite3_finalize(st);
    return same;
}

/* The spool "<path>.<pid>.<tag>.spool.zst" the session of `pid` left beside its DB
 * (session/session.c names it so): 0 with its name in `out`, or -1 when there is none. */
static int pa_find_spool_beside(const char *path, int64_t pid, char *out, size_t sz)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char dir[4096], prefix[512];
    if (pid <= 0 || snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
                             slash ? (slash == path ? "/" : path) : ".") >= (int)sizeof dir ||
        snprintf(prefix, sizeof prefix, "%s.%lld.", base, (long long)pid) >= (int)sizeof prefix)
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t pl = strlen(prefix);
    int rc = -1;
    for (struct dirent *e; rc && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > pl + 10 && strncmp(e->d_name, prefix, pl) == 0 && strcmp(e->d_name + n - 10, ".spool.zst") == 0) {
            int w = snprintf(out, sz, "%.*s%s", slash ? (int)(slash - path + 1) : 0, path, e->d_name);
            rc = w > 0 && (size_t)w < sz ? 0 : -1;
            if (rc)
                break;
        }
    }
    closedir(d);
    return rc;
}

int64_t pa_report_db_writer_pid(sqlite3 *db)
{
    int64_t pid = pa_meta_int(db, "db_complete") != 1 ? pa_meta_int(db, "pid") : 0;
    return pid > 0 && pa_meta_is_this_boot(db) && (kill((pid_t)pid, 0) == 0 || errno == EPERM) ? pid : 0;
}

/* One warning line on stderr when the DB is from a session that did not finish (killed while
 * the DB was written: db_complete missing; or ended abnormally / recovered from a spool:
 * session_complete = 0). Reports still run: what is there is consistent. When the dead
 * session's spool is still beside the DB (it is removed once a DB has everything), it holds
 * the records the DB lacks: the line names the command that rebuilds them. */
static void pa_warn_incomplete(sqlite3 *db, const char *path)
{
    const char *why = NULL;
    int64_t pid = pa_report_db_writer_pid(db);
    if (pid > 0) {
        fprintf(stderr, "profagent: stats: note: %s is still being written by pid %lld (a live session): reports"
                " show what it has committed so far\n", path, (long long)pid);
        return;
    }
    sqlite3_stmt *cq = NULL;
    int cut = sqlite3_prepare_v2(db, "SELECT 1 FROM META WHERE key = 'exit_load_cut'", -1, &cq, NULL) == SQLITE_OK &&
              sqlite3_step(cq) == SQLITE_ROW;
    sqlite3_finalize(cq);
    if (pa_meta_int(db, "db_complete") != 1 && cut)
        why = "the exit stopped loading the spool at PROFAGENT_EXIT_TIMEOUT_MS or a signal: the DB lacks the"
              " spool's tail and the summary tables";
    else if (pa_meta_int(db, "db_complete") != 1)
        why = "the DB was not finished: the process died while writing it";
    else if (pa_meta_int(db, "session_complete") != 1)
        why = "session_complete=0: the process ended abnormally or the DB was recovered from a spool";
    if (!why)
        return;
    char spool[4096], fresh[4200];
    sqlite3_stmt *st = NULL;
    int recovered = sqlite3_prepare_v2(db, "SELECT 1 FROM META WHERE key = 'recovered_from'", -1, &st, NULL)
                    == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (!recovered && pa_find_spool_beside(path, pa_meta_int(db, "pid"), spool, sizeof spool) == 0) {
        if (cut && pa_meta_int(db, "db_complete") != 1) { /* recover completes this very DB (cli/recover.c) */
            fprintf(stderr, "profagent: stats: warning: %s is from an incomplete session (%s): reports miss data;"
                    " the spool %s beside it holds the rest: complete this DB in place with: profagent recover %s\n",
                    path, why, spool, spool);
            return;
        }
        size_t n = strlen(path);
        int ext = n > 3 && strcmp(path + n - 3, ".db") == 0;
        snprintf(fresh, sizeof fresh, "%.*s-recovered.db", (int)(ext ? n - 3 : n), path);
        fprintf(stderr, "profagent: stats: warning: %s is from an incomplete session (%s): reports may miss data;"
                " the spool %s beside it holds records that are not in the DB: build a DB with all of them with:"
                " profagent recover %s -o %s\n", path, why, spool, spool, fresh);
        return;
    }
    fprintf(stderr, "profagent: stats: warning: %s is from an incomplete session (%s): reports may miss data\n",
            path, why);
}

/* One warning line on stderr naming the records the session lost while recording, from
 * SESSION_COUNTERS (the counters the exit summary warns about: full rings, late records,
 * device operations the Level Zero source could not collect, events not recorded, HGTX pushes
 * beyond the depth limit, spool write errors). Nothing when none was lost. */
static void pa_warn_losses(sqlite3 *db, const char *path)
{
    static const struct { const char *sql_names; const char *what; } c[] = {
        {"'drops'", "records dropped (full rings)"},
        {"'late_records'", "late records (after the exit drain began, not stored)"},
        {"'ze_uncollected_ops', 'ze_inflight_table_full', 'ze_context_destroyed_ops'",
         "device operations uncollected (no device times)"},
        {"'unrecorded'", "events not recorded (no ring memory, or inside a signal handler)"},
        {"'hgtx_depth_overflow'", "HGTX pushes beyond the maximum nesting depth not recorded"},
        {"'spool_errors'", "spool write errors (trace rows from the first one on are missing)"},
    };
    char line[1024];
    size_t len = 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char sql[256];
        sqlite3_stmt *st = NULL;
        int64_t v = 0;
        snprintf(sql, sizeof sql, "SELECT total(value) FROM SESSION_COUNTERS WHERE name IN (%s)", c[i].sql_names);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (v > 0 && len < sizeof line)
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%lld %s", len ? ", " : "", (long long)v,
                                    c[i].what);
    }
    if (len)
        fprintf(stderr, "profagent: stats: warning: %s: the session lost data while recording: %s; counts and"
                " totals in the reports are low\n", path, line);
}

/* META key: the DB file's change counter at which every trace row was last found sound (the
 * check below found nothing). Any write through SQLite in rollback-journal mode increments the
 * counter (header offset 24) once per transaction; in WAL mode it does not, but the file then
 * says WAL (bytes 18 and 19) and leaving WAL mode increments it: a file in rollback mode whose
 * counter equals the mark has the rows that were checked. Bytes changed behind SQLite's back
 * (a bad sector) escape it, as they escaped the rules that did not look at those bytes. */
#define PA_META_ROWS_CHECKED "rows_checked_change"

/* The change counter of the file open as `fd` when it is in rollback-journal mode and has no hot
 * journal beside `path`; -1 otherwise (WAL mode: writes do not move the counter). */
static int64_t pa_file_change_counter(int fd, const char *path)
{
    unsigned char h[28];
    char jn[4200];
    if (fd < 0 || pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || h[18] != 1 || h[19] != 1)
        return -1;
    snprintf(jn, sizeof jn, "%s-journal", path);
    if (access(jn, F_OK) == 0)
        return -1;
    return (int64_t)((uint32_t)h[24] << 24 | (uint32_t)h[25] << 16 | (uint32_t)h[26] << 8 | h[27]);
}

/* Stores PA_META_ROWS_CHECKED for the counter the commit storing it gives (`seen` + 1: one
 * transaction), when the file still is at `seen`. Never waits for a lock, silent when it cannot:
 * the next reader checks the rows again. `fd` stays open until the connection is closed (closing
 * a descriptor of the file would drop this process's locks on it). */
static void pa_mark_rows_checked(const char *path, int64_t seen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (fd < 0)
        return;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
        int ok = pa_file_change_counter(fd, path) == seen &&
                 sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO META(key, value) VALUES('" PA_META_ROWS_CHECKED
                                    "', ?1)", -1, &st, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_int64(st, 1, (seen + 1) & 0xffffffffll);
            ok = sqlite3_step(st) == SQLITE_DONE;
        }
        sqlite3_finalize(st);
        sqlite3_exec(db, ok ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_close(db);
    close(fd);
}

/* Plausibility of the trace rows' times: a row must end at or after its start and lie within the
 * session's span (META start_mono_ns..end_mono_ns) up to this slack, ns: far above the device-clock
 * conversion's error (an operation may start up to 1 ms before its call, collector/ze_clock.c), far
 * below what damage gives (a flipped high bit, a foreign value: seconds to centuries off). */
#define PA_SPAN_SLACK_NS 100000000ll

/* Up to 4 distinct name ids of `table` (rows of `cond`) missing from STRING_IDS, ", "-separated
 * into buf; only run when the pass found some (a damaged DB). */
static void pa_missing_name_ids(sqlite3 *db, const char *table, const char *cond, char *buf, size_t sz)
{
    char sql[512];
    sqlite3_stmt *st = NULL;
    size_t len = 0;
    buf[0] = '\0';
    snprintf(sql, sizeof sql, "SELECT DISTINCT nameId FROM %s WHERE %s AND nameId NOT IN (SELECT id FROM STRING_IDS)"
             " LIMIT 5", table, cond);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK)
        for (int k = 0; sqlite3_step(st) == SQLITE_ROW && len < sz; k++)
            len += (size_t)snprintf(buf + len, sz - len, k == 4 ? ", ..." : "%s%s", k ? ", " : "",
                                    sqlite3_column_type(st, 0) == SQLITE_NULL ? "NULL"
                                                                              : (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* Warning lines on stderr naming the trace rows that cannot be (damage: a bad sector, a foreign
 * write), with the rule each breaks and the first rowid of each table and rule. Times: end before
 * start; start before the session start; end after the session end (only when META holds the end:
 * a session killed while writing has none); a time that is not an integer (NULL, text, real). A
 * recovered DB's span comes from its own rows: only the first and last rules apply. Names: a name
 * id with no STRING_IDS entry (the reports list such a row as '<unknown name id N>', the line names
 * the ids). The reports still run on every row (what the rows say is printed as it is); the lines
 * say which come from damage. Cost: one pass over each trace table, every rule in it: ~130 ns per
 * row (0.4 s of CPU for 3 M ranges, was 0.19 s with the three time rules alone; the integer and
 * name rules are SQL opcodes and a lookup in an ephemeral index of the ids, no function call).
 * A finished DB found sound is marked so (PA_META_ROWS_CHECKED, when the file is writable) and
 * not checked again until it changes: one header read on every later open. */
static void pa_warn_implausible(sqlite3 *db, const char *path)
{
    static const struct { const char *table, *end, *named; } tabs[] = {
        {"ZE_API", "\"end\"", "1"}, {"ZE_OPS", "\"end\"", "kind = 1"}, {"OSRT_API", "\"end\"", "1"},
        {"HGTX_RANGES", "\"end\"", "1"}, {"HGTX_MARKS", "start", "1"},
    };
    static const char *const one[] = {"", "ends before its start", "starts before the session start",
                                      "ends after the session end", "is after the session end",
                                      "has a time that is not an integer (NULL, text or real)",
                                      "has a name id missing from STRING_IDS"};
    static const char *const many[] = {"", "end before their start", "start before the session start",
                                       "end after the session end", "are after the session end",
                                       "have a time that is not an integer (NULL, text or real)",
                                       "have name ids missing from STRING_IDS"};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int64_t seen = pa_file_change_counter(fd, path); /* read before the rows: a later write moves it */
    if (fd >= 0)
        close(fd); /* no statement of `db` runs: it holds no lock to lose */
    if (seen >= 0 && pa_meta_int(db, PA_META_ROWS_CHECKED) == seen)
        return; /* these very rows were found sound */
    int64_t s0 = pa_meta_int(db, "start_mono_ns"), e0 = pa_meta_int(db, "end_mono_ns");
    sqlite3_stmt *st = NULL;
    int recovered = sqlite3_prepare_v2(db, "SELECT 1 FROM META WHERE key = 'recovered_from'", -1, &st, NULL)
                    == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    int64_t lo = s0 > 0 && !recovered ? s0 - PA_SPAN_SLACK_NS : INT64_MIN;
    int64_t hi = e0 > 0 && e0 >= s0 && !recovered ? e0 + PA_SPAN_SLACK_NS : INT64_MAX;
    char what[1024], names[1024];
    size_t len = 0, nlen = 0;
    int64_t all = 0, unnamed = 0;
    for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++) {
        char sql[1024];
        const char *e = tabs[i].end, *t = tabs[i].table;
        /* the WHERE is true for a sound row, NULL (an operand NULL) or false otherwise: IS NOT 1
         * catches both; x|0 = x fails for a real (and a text), which plain comparisons let pass */
        snprintf(sql, sizeof sql, "SELECT r, count(*), min(rowid) FROM (SELECT rowid, CASE WHEN typeof(start) !="
                 " 'integer' OR typeof(%s) != 'integer' THEN 5 WHEN %s < start THEN 1 WHEN start < ?1 THEN 2"
                 " WHEN %s > ?2 THEN 3 ELSE 6 END AS r FROM %s WHERE (%s >= start AND start >= ?1 AND %s <= ?2"
                 " AND start | 0 = start AND %s | 0 = %s AND (NOT (%s) OR nameId IN (SELECT id FROM STRING_IDS)))"
                 " IS NOT 1) GROUP BY r ORDER BY r", e, e, e, t, e, e, e, e, tabs[i].named);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
            sqlite3_finalize(st); /* a table this DB does not have (its source was off) */
            continue;
        }
        sqlite3_bind_int64(st, 1, lo);
        sqlite3_bind_int64(st, 2, hi);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int r = sqlite3_column_int(st, 0);
            int64_t n = sqlite3_column_int64(st, 1), first = sqlite3_column_int64(st, 2);
            char *buf = r == 6 ? names : what;
            size_t *at = r == 6 ? &nlen : &len, sz = r == 6 ? sizeof names : sizeof what;
            *(r == 6 ? &unnamed : &all) += n;
            if (r < 1 || r > 6 || *at >= sz)
                continue;
            r += r == 3 && !strcmp(e, "start"); /* a mark has no end: it lies after it */
            if (n == 1)
                *at += (size_t)snprintf(buf + *at, sz - *at, "%s%s rowid %lld %s", *at ? ", " : "", t,
                                        (long long)first, one[r]);
            else
                *at += (size_t)snprintf(buf + *at, sz - *at, "%s%s rowid %lld and %lld more %s", *at ? ", " : "",
                                        t, (long long)first, (long long)(n - 1), many[r]);
            if (r == 6 && *at < sz) {
                char ids[256];
                pa_missing_name_ids(db, t, tabs[i].named, ids, sizeof ids);
                *at += (size_t)snprintf(buf + *at, sz - *at, ": %s", ids);
            }
        }
        sqlite3_finalize(st);
    }
    if (all > 0)
        fprintf(stderr, "profagent: stats: warning: %s is damaged: %lld trace row%s impossible time%s (%s; session"
                " %lld..%lld ns, META start_mono_ns..end_mono_ns): the reports include %s as %s, the times from"
                " %s are wrong (sqlite3 %s 'PRAGMA integrity_check' tells more)\n", path, (long long)all,
                all == 1 ? " has an" : "s have", all == 1 ? "" : "s", what, (long long)s0, (long long)e0,
                all == 1 ? "it" : "them", all == 1 ? "it is" : "they are", all == 1 ? "it" : "them", path);
    if (unnamed > 0)
        fprintf(stderr, "profagent: stats: warning: %s is damaged: %lld trace row%s no name (%s): the reports list"
                " %s under '<unknown name id N>' (sqlite3 %s 'PRAGMA integrity_check' tells more)\n", path,
                (long long)unnamed, unnamed == 1 ? " has" : "s have", names, unnamed == 1 ? "it" : "them", path);
    if (all == 0 && unnamed == 0 && seen >= 0 && pa_meta_int(db, "db_complete") == 1 &&
        pa_report_db_writer_pid(db) == 0 && access(path, W_OK) == 0)
        pa_mark_rows_checked(path, seen);
}

/* The medians the exit left to the first reader, from the trace rows, stored truncated as the
 * exit stores them (pa_stat_trunc). One GROUP BY pass per table that has pending keys: SQLite
 * sorts the rows (spilling to temp files) and holds one group's values at a time, where a query
 * per key scanned the whole table once per key. Returns 0 or -1. */
static int pa_fill_pending_medians(sqlite3 *db)
{
    static const struct { int cat; const char *sql; } by_table[] = {
        /* unterminated ranges are left out, as in the aggregates */
        {PA_CAT_HGTX_RANGE, "SELECT name, style, median(end - start) FROM HGTX_RANGES_NAMED WHERE unterminated = 0"
                            " GROUP BY name, style"},
        {PA_CAT_OSRT, "SELECT s.value, -1, median(o.end - o.start) FROM OSRT_API o JOIN STRING_IDS s ON"
                      " s.id = o.nameId GROUP BY s.value"},
        /* the aggregator's duration: t1 - t0, 0 when t1 <= t0 */
        {PA_CAT_ZE_API, "SELECT s.value, -1, median(max(a.end - a.start, 0)) FROM ZE_API a JOIN STRING_IDS s ON"
                        " s.id = a.nameId GROUP BY s.value"},
        /* device operations as the aggregator keys them (agg_ze.c on_op) */
        {PA_CAT_KERNEL, "SELECT s.value, -1, median(max(o.end - o.start, 0)) FROM ZE_OPS o JOIN STRING_IDS s ON"
                        " s.id = o.nameId WHERE o.kind = 1 GROUP BY s.value"},
        {PA_CAT_MEMOP, "SELECT " PA_SQL_MEMOP_NAME("o") " AS k, 0, median(max(o.end - o.start, 0)) FROM ZE_OPS o"
                       " WHERE o.kind IN (2, 3) GROUP BY k"},
        {PA_CAT_MEMOP, "SELECT " PA_SQL_MEMOP_NAME("o") " AS k, 1, median(o.bytes) FROM ZE_OPS o"
                       " WHERE o.kind IN (2, 3) GROUP BY k"},
        /* projected instances (agg_proj.c): tag style = duration, 2 | style = ops per instance */
        {PA_CAT_HGTX_PROJ, "SELECT name, style, median(dur) FROM (" PA_SQL_PROJ_INSTANCES ") GROUP BY name, style"},
        {PA_CAT_HGTX_PROJ, "SELECT name, 2 | style, median(nops) FROM (" PA_SQL_PROJ_INSTANCES ") GROUP BY name, style"},
    };
    int rc = sqlite3_exec(db, "CREATE TEMP TABLE pa_pending AS SELECT s.rowid AS r, s.category AS c, s.tag AS t,"
                          " k.value AS k FROM SUMMARY_STATS s JOIN STRING_IDS k ON k.id = s.nameId"
                          " WHERE s.median IS NULL AND s.medianExact = 0;"
                          "CREATE INDEX temp.pa_pending_k ON pa_pending(c, k);", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < sizeof by_table / sizeof by_table[0]; i++) {
        sqlite3_stmt *any = NULL, *sel = NULL, *upd = NULL;
        int have = 0;
        if (sqlite3_prepare_v2(db, "SELECT 1 FROM pa_pending WHERE c = ?1 LIMIT 1", -1, &any, NULL) == SQLITE_OK) {
            sqlite3_bind_int(any, 1, by_table[i].cat);
            have = sqlite3_step(any) == SQLITE_ROW;
        }
        sqlite3_finalize(any);
        if (!have)
            continue; /* no pass over a table nobody waits for */
        if (sqlite3_prepare_v2(db, by_table[i].sql, -1, &sel, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "UPDATE SUMMARY_STATS SET median = ?1, medianExact = 1 WHERE rowid IN (SELECT r FROM"
                               " pa_pending WHERE c = ?2 AND k = ?3 AND (?4 < 0 OR t = ?4))", -1, &upd, NULL) != SQLITE_OK)
            rc = -1;
        int step = SQLITE_DONE;
        while (rc == 0 && (step = sqlite3_step(sel)) == SQLITE_ROW) {
            if (sqlite3_column_type(sel, 2) == SQLITE_NULL)
                continue;
            sqlite3_reset(upd);
            sqlite3_bind_int64(upd, 1, (int64_t)pa_stat_trunc(sqlite3_column_double(sel, 2)));
            sqlite3_bind_int(upd, 2, by_table[i].cat);
            sqlite3_bind_value(upd, 3, sqlite3_column_value(sel, 0));
            sqlite3_bind_int64(upd, 4, sqlite3_column_int64(sel, 1));
            if (sqlite3_step(upd) != SQLITE_DONE)
                rc = -1;
        }
        if (step != SQLITE_DONE)
            rc = -1;
        sqlite3_finalize(sel);
        sqlite3_finalize(upd);
    }
    sqlite3_exec(db, "DROP TABLE IF EXISTS temp.pa_pending", NULL, NULL, NULL);
    return rc;
}

/* 1 when index `name` exists. */
static int pa_have_index(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int have = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1", -1, &st, NULL)
        == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        have = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return have;
}

/* A reader waits this long for another reader's preparation (its commit) to finish, ms. */
#define PA_READ_WAIT_MS 60000
/* The preparation waits at most this long in total for other programs' locks, ns. */
#define PA_PREP_WAIT_NS 2000000000ull
/* A reader arriving while another one prepares waits at most this long for it to reach the point
 * from which others read beside it (the DB in WAL mode: a few ms after it took the preparers'
 * lock, or PA_PREP_WAIT_NS when another program's read transaction holds it back), ns. */
#define PA_PREP_ENTER_NS (PA_PREP_WAIT_NS + 1000000000ull)

typedef struct {
    uint64_t waited_ns; /* slept in the busy handler so far, all statements together */
    int busy;           /* a lock was waited for */
} pa_prep_wait_t;

static uint64_t pa_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pa_sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* SQLite busy handler: one wait of at most PA_PREP_WAIT_NS in total, shared by every statement
 * of the preparation (a per-statement timeout made each of them wait again: ~13 s in all). The
 * time slept is what counts, not the time since BEGIN: on a loaded machine the median passes
 * alone can take longer than the bound, and a brief lock met at COMMIT must still be waited for. */
static int pa_prep_busy(void *arg, int n)
{
    pa_prep_wait_t *w = arg;
    (void)n;
    w->busy = 1;
    if (w->waited_ns >= PA_PREP_WAIT_NS)
        return 0;
    uint64_t t0 = pa_mono_ns();
    pa_sleep_ms(10);
    w->waited_ns += pa_mono_ns() - t0;
    return 1;
}

/* What a DB needs, from a read-only connection (waiting for a preparation that is committing):
 * 1 finished and still to prepare (pending medians or the readers' indexes), 0 finished and
 * prepared, -1 not finished (still written by a live session, or left by a killed one: never
 * touched here, the writer's WAL is its own). */
static int pa_prep_todo(const char *path)
{
    sqlite3 *db = NULL;
    int todo = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, PA_READ_WAIT_MS);
        if (pa_meta_int(db, "db_complete") == 1)
            todo = pa_meta_int(db, "medians_pending") > 0 || !pa_have_index(db, "ZE_API_start");
    }
    sqlite3_close(db);
    return todo;
}

/* 1 when the file's header says WAL mode (bytes 18 and 19, the read and write versions, are 2). */
static int pa_file_is_wal(int fd)
{
    unsigned char v[2];
    return pread(fd, v, 2, 18) == 2 && v[0] == 2 && v[1] == 2;
}

/* `PRAGMA journal_mode=MODE` on `db`; 1 when the DB is in that mode afterwards. */
static int pa_set_journal(sqlite3 *db, const char *mode)
{
    char sql[48];
    sqlite3_stmt *st = NULL;
    int ok = 0;
    snprintf(sql, sizeof sql, "PRAGMA journal_mode=%s", mode);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        ok = sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), mode) == 0;
    sqlite3_finalize(st);
    return ok;
}

/* A finished DB is one plain file (rollback journal, as its writer left it): back from WAL mode
 * when no other connection has it open (else it stays in WAL, valid too, until the next reader
 * that prepares or finds it so). Never waits. */
static void pa_prep_unwal(sqlite3 *db)
{
    sqlite3_busy_handler(db, NULL, NULL);
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    pa_set_journal(db, "DELETE");
}

/* The preparation proper, by the reader holding the preparers' lock. In WAL mode: its write
 * transaction does not keep other programs' readers out (a sqlite3 shell, another profagent
 * stats: they read the DB as it was before, and compute what the preparation stores), where a
 * rollback journal's EXCLUSIVE lock blocked them for its whole length. Returns 0, -1 on failure,
 * -2 when it gave up because another program held a lock past PA_PREP_WAIT_NS (switching to WAL
 * needs no other connection in a read transaction: a read one of another program is waited for
 * here, within the bound, before the work). */
static int pa_prep_run(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    pa_prep_wait_t w = {0, 0};
    sqlite3_busy_handler(db, pa_prep_busy, &w);
    if (pa_sqlfn_register(db) != 0 || !pa_set_journal(db, "WAL") ||
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        pa_prep_unwal(db);
        sqlite3_close(db);
        return w.busy ? -2 : -1;
    }
    int rc = 0;
    if (pa_meta_int(db, "medians_pending") > 0) {
        rc |= pa_fill_pending_medians(db);
        rc |= rc ? 0 : pa_meta_set_int(db, "medians_pending", 0);
    }
    if (rc == 0 && !pa_have_index(db, "ZE_API_start") && pa_have_index(db, "ZE_OPS_start"))
        rc |= pa_schema_create_reader_indexes(db);
    if (rc || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        rc = -1;
    }
    pa_prep_unwal(db);
    sqlite3_close(db);
    return rc && w.busy ? -2 : rc;
}

/* Another reader holds the preparers' lock: wait until it has put the DB in WAL mode (readers then
 * read beside it) or has let the lock go (done, gave up or died), at most PA_PREP_ENTER_NS. */
static void pa_prep_wait_entered(int fd)
{
    uint64_t until = pa_mono_ns() + PA_PREP_ENTER_NS;
    while (!pa_file_is_wal(fd) && pa_mono_ns() < until) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            flock(fd, LOCK_UN);
            return;
        }
        pa_sleep_ms(5);
    }
}

void pa_db_prepare_for_readers(const char *path)
{
    if (access(path, W_OK) != 0)
        return; /* cannot store anything: the reports compute what they need */
    /* The preparers' lock: flock(2) on the DB file, independent of SQLite's fcntl locks, held by
     * the one reader preparing and released by the kernel if it dies; readers arriving meanwhile
     * do not queue behind it (a preparation takes seconds on a large DB): they read beside it.
     * Every SQLite connection of this process on the file is closed before `fd` is (closing any
     * descriptor of a file drops the process's fcntl locks on it). */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    int rc = 0, todo;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && (errno == EWOULDBLOCK || errno == EINTR)) {
        pa_prep_wait_entered(fd);
    } else if ((todo = pa_prep_todo(path)) == 1) { /* no flock (some network file systems): SQLite's locks order them */
        rc = pa_prep_run(path);
    } else if (todo == 0 && pa_file_is_wal(fd)) { /* prepared while others read: one file again, if alone now */
        sqlite3 *db = NULL;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
            pa_prep_unwal(db);
        sqlite3_close(db);
    }
    close(fd);
    if (rc == -2)
        fprintf(stderr, "profagent: stats: note: '%s' is open in another program (a read transaction): the"
                " preparation for readers (stored medians, indexes) was skipped; the reports compute what they"
                " need\n", path);
}

int pa_report_db_open(const char *path, sqlite3 **out, char *err, size_t errsz)
{
    sqlite3 *db = NULL;
    *out = NULL;
    /* a DB the session's finisher is still completing: the complete one is a moment away */
    pa_finish_wait(path, PA_FINISH_WAIT_MS, stderr);
    if (pa_db_check_file(path, err, errsz) != 0)
        return PA_REP_EDATA;
    pa_db_prepare_for_readers(path);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errsz, "cannot open '%s': %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return PA_REP_EDATA;
    }
    sqlite3_busy_timeout(db, PA_READ_WAIT_MS); /* another reader's preparation committing */
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
    pa_warn_losses(db, path);
    pa_warn_implausible(db, path);
    *out = db;
    return PA_REP_OK;
}
