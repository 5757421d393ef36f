/* merge_check.c - refuses merge inputs that cannot be merged, with one message each, before writing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "merge_internal.h"
#include "writer.h"
#include "writer_internal.h"

static int64_t meta_int(sqlite3 *db, const char *key, int64_t dflt)
{
    sqlite3_stmt *st;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
        return dflt;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void meta_text(sqlite3 *db, const char *key, char *out, size_t sz)
{
    sqlite3_stmt *st;
    out[0] = '\0';
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, sz, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* META of one input into *m; -1 with err when it is no profagent DB or cannot be read. */
static int read_meta(const char *path, pa_minput_t *m, char *err, size_t errsz)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errsz, "cannot open '%s': %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = 'schema_version'", -1, &st, NULL) != SQLITE_OK) {
        const char *e = sqlite3_errmsg(db);
        if (strstr(e, "no such table") || strstr(e, "no such column"))
            snprintf(err, errsz, "'%s' is an SQLite database but not a profagent database (no META key/value table)",
                     path);
        else
            snprintf(err, errsz, "'%s' cannot be read: %s", path, e);
        goto out;
    }
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW || sqlite3_column_type(st, 0) != SQLITE_INTEGER || sqlite3_column_int64(st, 0) <= 0) {
        if (s == SQLITE_ROW || s == SQLITE_DONE)
            snprintf(err, errsz, "'%s' is not a profagent database (META has no integer schema_version)", path);
        else
            snprintf(err, errsz, "'%s' cannot be read: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    m->schema_version = sqlite3_column_int64(st, 0);
    m->pid = meta_int(db, "pid", 0);
    m->rank = meta_int(db, "rank", -1);
    meta_text(db, "hostname", m->host, sizeof m->host);
    meta_text(db, "boot_id", m->boot, sizeof m->boot);
    m->start_wall = meta_int(db, "start_wall_ns", 0);
    m->start_mono = meta_int(db, "start_mono_ns", 0);
    m->end_mono = meta_int(db, "end_mono_ns", 0);
    /* the anchor: a bracketed pair (session start) when present, else the start pair */
    m->anchor_wall = meta_int(db, "clock_anchor_wall_ns", m->start_wall);
    m->anchor_mono = meta_int(db, "clock_anchor_mono_ns", m->start_mono);
    m->anchor_err = meta_int(db, "clock_anchor_err_ns", -1);
    m->wall_esterr = meta_int(db, "clock_wall_esterror_ns", -1);
    m->wall_synced = (int)meta_int(db, "clock_wall_synced", -1);
    m->complete = meta_int(db, "db_complete", 0) == 1 && meta_int(db, "session_complete", 0) == 1;
    m->merged_inputs = (int)meta_int(db, "merged_inputs", 0);
    rc = 0;
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

static int check_all(const char *out, const struct stat *ost, const char *const *paths, size_t n, pa_minput_t *in,
                     struct stat *st, char *err, size_t errsz);

int pa_merge_check_inputs(const char *out, const char *const *paths, size_t n, pa_minput_t *in,
                          char *err, size_t errsz)
{
    struct stat ost;
    int have_out = out && stat(out, &ost) == 0;
    if (n == 0) {
        snprintf(err, errsz, "no input DB given (usage: profagent merge -o OUT.db IN.db [IN.db ...])");
        return -1;
    }
    struct stat *st = calloc(n, sizeof *st);
    if (!st) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    int rc = check_all(out, have_out ? &ost : NULL, paths, n, in, st, err, errsz);
    free(st);
    return rc;
}

/* pa_merge_check_inputs() with the inputs' stat buffers st[0..n). */
static int check_all(const char *out, const struct stat *ost, const char *const *paths, size_t n, pa_minput_t *in,
                     struct stat *st, char *err, size_t errsz)
{
    for (size_t i = 0; i < n; i++) {
        memset(&in[i], 0, sizeof in[i]);
        in[i].path = paths[i];
        if (stat(paths[i], &st[i]) != 0) {
            snprintf(err, errsz, "cannot open '%s': %s", paths[i], strerror(errno));
            return -1;
        }
        if (!S_ISREG(st[i].st_mode)) {
            snprintf(err, errsz, "'%s' is not a regular file (a profagent database is)", paths[i]);
            return -1;
        }
        if (ost && st[i].st_dev == ost->st_dev && st[i].st_ino == ost->st_ino) {
            snprintf(err, errsz, "the output '%s' is the input '%s': write the merged DB to a new file", out, paths[i]);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (st[i].st_dev == st[j].st_dev && st[i].st_ino == st[j].st_ino) {
                snprintf(err, errsz, "'%s' and '%s' are the same file: a DB cannot be merged with itself", paths[j],
                         paths[i]);
                return -1;
            }
        if (pa_db_check_file(paths[i], err, errsz) != 0 || read_meta(paths[i], &in[i], err, errsz) != 0)
            return -1;
    }
    for (size_t i = 1; i < n; i++)
        if (in[i].schema_version != in[0].schema_version) {
            snprintf(err, errsz, "'%s' has DB schema version %lld, '%s' %lld: DBs of different schema versions cannot"
                     " be merged (profile both with one profagent version)", paths[0],
                     (long long)in[0].schema_version, paths[i], (long long)in[i].schema_version);
            return -1;
        }
    if (in[0].schema_version != PA_SCHEMA_VERSION) {
        snprintf(err, errsz, "'%s' has DB schema version %lld; this profagent merges version %d only", paths[0],
                 (long long)in[0].schema_version, PA_SCHEMA_VERSION);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (in[i].pid == in[j].pid && in[i].start_wall == in[j].start_wall && !strcmp(in[i].host, in[j].host)) {
                snprintf(err, errsz, "'%s' and '%s' hold the same session (pid %lld on %s, started at %lld ns):"
                         " a DB cannot be merged with (a copy of) itself", paths[j], paths[i], (long long)in[i].pid,
                         in[i].host[0] ? in[i].host : "?", (long long)in[i].start_wall);
                return -1;
            }
    return 0;
}
