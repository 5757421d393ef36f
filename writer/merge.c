/* merge.c - `profagent merge`: several sessions' DBs into one new DB, written under a temporary name. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge_internal.h"
#include "writer_internal.h"
#include "writer.h"

static const char aux_sql[] =
    /* one row per merged session: where it came from, its pid in the merged DB, its device-id
     * offset and count, and the clock offset (ns) added to its times, with the residual
     * uncertainty of that offset (NULL: unknown, the wall clocks were not known to be synchronized) */
    "CREATE TABLE MERGE_INPUTS(input INTEGER, path TEXT, pid INTEGER, mergedPid INTEGER, rank INTEGER,"
    " hostname TEXT, bootId TEXT, deviceOffset INTEGER, deviceCount INTEGER, clockOffsetNs INTEGER,"
    " clockUncertaintyNs INTEGER, startWallNs INTEGER);"
    /* every input's own META rows */
    "CREATE TABLE MERGE_META(input INTEGER, key TEXT, value);"
    "CREATE TEMP TABLE pa_smap(old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE pa_pmap(old INTEGER PRIMARY KEY, new INTEGER);"
    "CREATE TEMP TABLE pa_hcmap(old INTEGER PRIMARY KEY, new INTEGER, fresh INTEGER);"
    "CREATE TEMP TABLE pa_objs(name TEXT PRIMARY KEY, type TEXT, sql TEXT);"
    "CREATE TEMP TABLE pa_stats(category, nameId, tag, count, total, min, max, avg, median, stddev, medianExact);";

/* The statistics of one key over all inputs: counts, totals, extremes and the mean exactly; the
 * population stddev from the inputs' means and stddevs (E[x^2] = stddev^2 + mean^2 per input);
 * the median only when one input has the key (medians do not combine: NULL, medianExact 0). */
static const char stats_sql[] =
    "INSERT INTO main.SUMMARY_STATS(category, nameId, tag, count, total, min, max, avg, median, stddev,"
    " medianExact) SELECT category, nameId, tag, sum(count), sum(total), min(min), max(max),"
    " CASE WHEN sum(count) > 0 THEN sum(total) * 1.0 / sum(count) END,"
    " CASE WHEN count(*) = 1 THEN max(median) END,"
    " CASE WHEN count(*) = 1 THEN max(stddev) WHEN sum(count) > 0 THEN sqrt(max(0.0, sum(count * (stddev * stddev"
    " + avg * avg)) / sum(count) - (sum(total) * 1.0 / sum(count)) * (sum(total) * 1.0 / sum(count)))) END,"
    " CASE WHEN count(*) = 1 THEN max(medianExact) ELSE 0 END"
    " FROM temp.pa_stats GROUP BY category, nameId, tag ORDER BY min(rowid)";

/* META keys that count something per session: the merged DB holds their sums. */
static const char sum_keys[] = "'records', 'drops', 'late_records', 'hgtx_misuse_pop_empty', 'hgtx_misuse_bad_end',"
    " 'hgtx_unterminated', 'hgtx_misuse_bad_domain', 'hgtx_depth_overflow', 'spool_errors', 'unrecorded',"
    " 'spool_truncated', 'spool_records_loaded', 'mem_records_dropped', 'hgtx_drop_end_no_start',"
    " 'hgtx_drop_start_no_end'";

/* "file:<path, percent-encoded>?mode=ro" for ATTACH. */
static void uri_ro(const char *path, char *out, size_t sz)
{
    size_t o = (size_t)snprintf(out, sz, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p && o + 16 < sz; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/-._~", *p))
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, sz - o, "%%%02X", *p);
    }
    snprintf(out + o, sz - o, "?mode=ro");
}

static int meta_set(sqlite3 *db, const char *key, const char *text, int64_t v)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO main.META(key, value) VALUES(?1, ?2)", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (text)
        sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_int64(st, 2, v);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

/* The merged session's META: one clock (input 0's), the span of all sessions, sums of the counts,
 * lists of ranks/hosts/pids; keys it does not set come from the first input. */
static int write_meta(pa_mctx_t *m, const pa_minput_t *in, size_t n)
{
    int64_t s0 = INT64_MAX, e0 = INT64_MIN, total = 0, unc = 0;
    int complete = 1, domains = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i].start_mono + in[i].clock_off < s0)
            s0 = in[i].start_mono + in[i].clock_off;
        if (in[i].end_mono + in[i].clock_off > e0)
            e0 = in[i].end_mono + in[i].clock_off;
        total += in[i].merged_inputs > 0 ? in[i].merged_inputs : 1;
        complete &= in[i].complete;
        domains += in[i].clock_ref == (int)i;
        if (unc >= 0)
            unc = in[i].clock_unc < 0 ? -1 : (in[i].clock_unc > unc ? in[i].clock_unc : unc);
    }
    char sql[1024], clk[640];
    int rc = pa_merge_exec(m->db, "DELETE FROM main.META", "writing META", m->err, m->errsz);
    snprintf(sql, sizeof sql, "INSERT INTO main.META SELECT key, sum(value) FROM main.MERGE_META WHERE key IN (%s)"
             " GROUP BY key;"
             "INSERT INTO main.META SELECT 'ranks', group_concat(rank, ',') FROM (SELECT DISTINCT rank FROM"
             " main.MERGE_INPUTS WHERE rank >= 0 ORDER BY rank);"
             "INSERT INTO main.META SELECT 'pids', group_concat(mergedPid, ',') FROM main.MERGE_INPUTS;"
             "INSERT INTO main.META SELECT 'hostname', group_concat(hostname, ',') FROM (SELECT DISTINCT hostname"
             " FROM main.MERGE_INPUTS ORDER BY input);"
             "INSERT INTO main.META SELECT 'command_line', group_concat(value, ' ; ') FROM (SELECT DISTINCT value"
             " FROM main.MERGE_META WHERE key = 'command_line' ORDER BY input);", sum_keys);
    rc |= pa_merge_exec(m->db, sql, "writing META", m->err, m->errsz);
    snprintf(clk, sizeof clk, "CLOCK_MONOTONIC of %s%s%s (input 0); %d clock domain(s), others aligned by wall-clock"
             " anchors", in[0].host, in[0].boot[0] ? ", boot " : "", in[0].boot, domains);
    rc |= meta_set(m->db, "schema_version", NULL, PA_SCHEMA_VERSION);
    rc |= meta_set(m->db, "merged_inputs", NULL, total);
    rc |= meta_set(m->db, "rank", NULL, -1);
    rc |= meta_set(m->db, "start_mono_ns", NULL, s0);
    rc |= meta_set(m->db, "end_mono_ns", NULL, e0);
    rc |= meta_set(m->db, "start_wall_ns", NULL, in[0].anchor_wall + (s0 - in[0].anchor_mono));
    rc |= meta_set(m->db, "merge_clock", clk, 0);
    rc |= meta_set(m->db, "merge_clock_domains", NULL, domains);
    /* the largest residual uncertainty of any input's offset; -1: unknown (unsynchronized wall clocks) */
    rc |= meta_set(m->db, "merge_clock_uncertainty_ns", NULL, unc);
    rc |= meta_set(m->db, "session_complete", NULL, complete);
    rc |= pa_merge_exec(m->db, "INSERT OR IGNORE INTO main.META SELECT key, value FROM main.MERGE_META WHERE input ="
                        " (SELECT min(input) FROM main.MERGE_META) AND key NOT IN ('pid', 'rank_source')", "writing META", m->err, m->errsz);
    rc |= meta_set(m->db, "db_complete", NULL, 1);
    if (rc && !m->err[0])
        snprintf(m->err, m->errsz, "writing META: %s", sqlite3_errmsg(m->db));
    return rc ? -1 : 0;
}

/* Combined statistics, the inputs' indexes and views (built once, after the rows), META. */
static int finish(pa_mctx_t *m, const pa_minput_t *in, size_t n)
{
    sqlite3_stmt *st;
    char cols[64];
    int rc = 0;
    if (pa_merge_table_cols(m->db, "main", "SUMMARY_STATS", cols, sizeof cols) > 0)
        rc = pa_merge_exec(m->db, stats_sql, "combining SUMMARY_STATS", m->err, m->errsz);
    rc = rc ? rc : pa_merge_exec(m->db, "DROP INDEX IF EXISTS main.pa_merge_strings", "indexes", m->err, m->errsz);
    if (rc == 0 && sqlite3_prepare_v2(m->db, "SELECT sql FROM temp.pa_objs ORDER BY type = 'view', rowid", -1, &st,
                                      NULL) == SQLITE_OK) {
        while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
            rc = pa_merge_exec(m->db, (const char *)sqlite3_column_text(st, 0), "creating indexes", m->err, m->errsz);
        sqlite3_finalize(st);
    }
    return rc ? rc : write_meta(m, in, n);
}

/* Every input in turn: ATTACH read-only, one transaction, DETACH. */
static int merge_all(pa_mctx_t *m, pa_minput_t *in, size_t n, int page_size)
{
    char sql[160];
    snprintf(sql, sizeof sql, "PRAGMA page_size=%d; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
             " PRAGMA cache_size=-16384;", page_size);
    if (pa_merge_exec(m->db, sql, "preparing the output", m->err, m->errsz) != 0 ||
        pa_merge_exec(m->db, aux_sql, "preparing the output", m->err, m->errsz) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char uri[PATH_MAX * 3 + 32];
        sqlite3_stmt *st;
        uri_ro(in[i].path, uri, sizeof uri);
        if (sqlite3_prepare_v2(m->db, "ATTACH DATABASE ?1 AS src", -1, &st, NULL) != SQLITE_OK)
            return snprintf(m->err, m->errsz, "ATTACH: %s", sqlite3_errmsg(m->db)), -1;
        sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC);
        int ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
        if (!ok)
            return snprintf(m->err, m->errsz, "cannot attach '%s': %s", in[i].path, sqlite3_errmsg(m->db)), -1;
        int rc = pa_merge_exec(m->db, "BEGIN", "BEGIN", m->err, m->errsz);
        rc = rc ? rc : pa_merge_input(m, in, i);
        if (rc) {
            char why[1024];
            snprintf(why, sizeof why, "%s", m->err);
            snprintf(m->err, m->errsz, "merging '%s': %s", in[i].path, why);
        }
        rc = rc ? rc : pa_merge_exec(m->db, "COMMIT", "COMMIT", m->err, m->errsz);
        if (rc) {
            sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        if (pa_merge_exec(m->db, "DETACH DATABASE src", "DETACH", m->err, m->errsz) != 0)
            return -1;
    }
    if (pa_merge_exec(m->db, "BEGIN", "BEGIN", m->err, m->errsz) != 0)
        return -1;
    if (finish(m, in, n) != 0) {
        sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return pa_merge_exec(m->db, "COMMIT", "COMMIT", m->err, m->errsz);
}

/* "<dir of out>/.<base of out>.merge-XXXXXX", created (empty) with mkstemp. */
static int make_temp(const char *out, char *tmp, size_t sz)
{
    const char *slash = strrchr(out, '/');
    int dl = slash ? (int)(slash - out + 1) : 0;
    if (snprintf(tmp, sz, "%.*s.%s.merge-XXXXXX", dl, out, slash ? slash + 1 : out) >= (int)sz)
        return errno = ENAMETOOLONG, -1;
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -1;
    /* mkstemp makes it 0600: the merged DB gets the mode of any new file (an agent's DB), 0666
     * less the umask (read once by setting it back: the CLI has one thread) */
    mode_t um = umask(077);
    umask(um);
    (void)fchmod(fd, 0666 & ~um);
    close(fd);
    return 0;
}

/* fsync before the rename, so a crash after it never leaves a name with half a DB behind it. */
static int sync_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int pa_merge_dbs(const char *out, const char *const *paths, size_t n, const pa_merge_opts_t *o, char *err,
                 size_t errsz)
{
    struct stat st;
    char tmp_local[PATH_MAX];
    char *tmp = o && o->tmp_path ? o->tmp_path : tmp_local;
    pa_minput_t *in = calloc(n ? n : 1, sizeof *in);
    int64_t bytes = 0;
    err[0] = tmp[0] = '\0';
    if (!in)
        return snprintf(err, errsz, "out of memory"), PA_REP_EDATA;
    if (!out || !*out) {
        free(in);
        return snprintf(err, errsz, "no output given (-o OUT.db)"), PA_REP_EUSAGE;
    }
    if (pa_merge_check_inputs(out, paths, n, in, err, errsz) != 0) {
        free(in);
        return PA_REP_EUSAGE;
    }
    if (stat(out, &st) == 0 && (!S_ISREG(st.st_mode) || !(o && o->overwrite))) {
        snprintf(err, errsz, S_ISREG(st.st_mode) ? "'%s' exists (an existing file is replaced only with --force-overwrite)"
                 : "'%s' exists and is not a regular file", out);
        free(in);
        return PA_REP_EUSAGE;
    }
    for (size_t i = 0; i < n; i++) {
        if (stat(paths[i], &st) == 0)
            bytes += st.st_size;
        if (!in[i].complete) { /* merged all the same: what is there is consistent */
            sqlite3 *idb = NULL;
            int64_t live = 0;
            if (sqlite3_open_v2(paths[i], &idb, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
                live = pa_report_db_writer_pid(idb);
            sqlite3_close(idb);
            if (live)
                fprintf(o && o->log ? o->log : stderr, "profagent: merge: warning: '%s' is still being written by"
                        " pid %lld (a live session): the merged DB has what it committed so far and says"
                        " session_complete=0; merge again once that process has ended for all of it\n", paths[i],
                        (long long)live);
            else
                fprintf(o && o->log ? o->log : stderr, "profagent: merge: warning: '%s' is from an incomplete"
                        " session (the process ended abnormally, died while writing, or the DB was recovered from"
                        " a spool): the merged DB says session_complete=0\n", paths[i]);
        }
    }
    pa_merge_clock_plan(in, n);
    for (size_t i = 0; i < n; i++)
        if (in[i].clock_guess && in[i].clock_ref == (int)i)
            fprintf(o && o->log ? o->log : stderr, "profagent: merge: warning: '%s' has no wall-clock anchor (a DB"
                    " recovered from a spool?) and another host or boot than '%s': its times are taken as on that"
                    " clock, uncertainty unknown (META merge_clock_uncertainty_ns -1)\n", paths[i], paths[0]);
    if (make_temp(out, tmp, PATH_MAX) != 0) {
        snprintf(err, errsz, "cannot create a temporary file next to '%s': %s", out, strerror(errno));
        tmp[0] = '\0';
        free(in);
        return PA_REP_EDATA;
    }
    pa_mctx_t m = {.err = err, .errsz = errsz, .log = o && o->log ? o->log : stderr};
    int rc = -1;
    if (sqlite3_open_v2(tmp, &m.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        snprintf(err, errsz, "cannot open '%s': %s", tmp, m.db ? sqlite3_errmsg(m.db) : "out of memory");
    else
        rc = merge_all(&m, in, n, bytes > (32ll << 20) ? 65536 : 4096);
    if (m.db && sqlite3_close(m.db) != SQLITE_OK && rc == 0) {
        snprintf(err, errsz, "closing '%s' failed", tmp);
        rc = -1;
    }
    if (rc == 0 && (sync_file(tmp) != 0 || rename(tmp, out) != 0)) {
        snprintf(err, errsz, "cannot write '%s': %s", out, strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        unlink(tmp);
    tmp[0] = '\0';
    free(m.pids);
    free(in);
    return rc == 0 ? PA_REP_OK : PA_REP_EDATA;
}
