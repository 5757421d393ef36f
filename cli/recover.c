/* recover.c - `profagent recover FILE.spool.zst [-o OUT.db]`: a DB from a dead process's spool. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "cli.h"
#include "pa_log.h"
#include "pa_outname.h"
#include "pa_spool.h"
#include "writer.h"

#define SPOOL_SUFFIX ".spool.zst"

/* "<db>.<pid>.<tag>.spool.zst" (session/session.c): the DB name the session meant and its pid.
 * Returns 0, or -1 when the name is not of that shape. */
static int parse_spool_name(const char *spool, char *db, size_t size, uint32_t *pid)
{
    size_t n = strlen(spool), sl = strlen(SPOOL_SUFFIX);
    if (n <= sl || strcmp(spool + n - sl, SPOOL_SUFFIX) != 0 || n - sl >= size)
        return -1;
    memcpy(db, spool, n - sl);
    db[n - sl] = '\0';
    char *tag = strrchr(db, '.');
    if (!tag || tag == db)
        return -1;
    *tag = '\0';
    char *pd = strrchr(db, '.');
    char *end;
    unsigned long v = pd ? strtoul(pd + 1, &end, 10) : 0;
    if (!pd || end == pd + 1 || *end || v == 0 || v > UINT32_MAX)
        return -1;
    *pd = '\0';
    *pid = (uint32_t)v;
    return 0;
}

/* 1 when the file's first zstd frame ends past the end of the file (a frame is at most ~1 MiB of
 * records, pa_spool.c: the first PA_FRAME_PROBE bytes hold a whole one). */
#define PA_FRAME_PROBE (8u << 20)
static int first_frame_cut(const char *spool)
{
    FILE *f = fopen(spool, "rb");
    unsigned char *buf = f ? malloc(PA_FRAME_PROBE) : NULL;
    size_t n = buf ? fread(buf, 1, PA_FRAME_PROBE, f) : 0;
    if (f)
        fclose(f);
    size_t r = n ? ZSTD_findFrameCompressedSize(buf, n) : 0;
    free(buf);
    return n && n < PA_FRAME_PROBE && ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_srcSize_wrong;
}

/* What `spool` is when it is not a spool we can recover from: NULL when it is one (zstd data
 * whose first record decodes as one of ours), else why not, for the one refusal message. A
 * finished DB is named as such: it needs no recovery and must never be called removable. */
static const char *not_a_spool(const char *spool)
{
    static const unsigned char zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    unsigned char head[16];
    FILE *f = fopen(spool, "rb");
    size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    if (n == 0)
        return "it is empty (a process killed before its first spool flush leaves no records): nothing to recover";
    if (n == sizeof head && memcmp(head, "SQLite format 3", 16) == 0)
        return "it is an SQLite database (a finished DB needs no recovery: read it with profagent stats)";
    if (n < 4 || memcmp(head, zstd_magic, 4) != 0)
        return "it is not a profagent spool (no zstd data)";
    int saved = pa_log_level; /* the reader's own corrupt-data message would be a second one */
    pa_log_level = PA_LOG_SILENT;
    pa_spool_reader_t *rd = pa_spool_open_read(spool);
    const pa_record_t *rec = NULL;
    const uint8_t *payload;
    int got = rd ? pa_spool_next(rd, &rec, &payload) : -1;
    uint32_t kind = got == 1 ? rec->kind : 0;
    if (rd)
        pa_spool_close_read(rd);
    pa_log_level = saved;
    if (got != 1 && first_frame_cut(spool))
        return "it is a spool cut short inside its first zstd frame (the process died, or the copy stopped, before"
               " the first frame was whole): it holds no complete record, nothing to recover";
    if (got != 1 || kind < PA_SP_STRING || kind > PA_SP_ITT_LAST)
        return "it is not a profagent spool (zstd data, but no profagent record in it)";
    return NULL;
}

/* Candidate i of the names a session tried for `meant`: meant, "<stem>-1<ext>", ... (the
 * suffix rule of pa_outname_unique: <ext> is the last ".xxx" of the base name). */
static int candidate(const char *meant, int i, char *out, size_t size)
{
    if (i == 0)
        return snprintf(out, size, "%s", meant) < (int)size ? 0 : -1;
    const char *base = strrchr(meant, '/');
    base = base ? base + 1 : meant;
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base ? (size_t)(dot - meant) : strlen(meant);
    return snprintf(out, size, "%.*s-%d%s", (int)stem, meant, i, meant + stem) < (int)size ? 0 : -1;
}

/* The DB the killed session was streaming from this very spool (META spool_path), among the names it
 * could have claimed (up to the first free one), found[]. A candidate a finisher process still
 * completes holds SQLite's lock (nothing is readable): it is waited for first (one message; fin
 * its pid). 0: found, no db_complete; 1: found, completed by the finisher waited for; -2: that
 * finisher still runs after PA_FINISH_WAIT_MS; -1: none. */
static int streamed_db(const char *spool, const char *meant, char *found, size_t size, long *fin)
{
    char want[PATH_MAX], have[PATH_MAX];
    *fin = 0;
    if (!realpath(spool, want))
        return -1;
    for (int i = 0; i < 100000; i++) {
        if (candidate(meant, i, found, size) < 0 || access(found, F_OK) != 0)
            return -1;
        long f = pa_finish_running(found);
        if (f && pa_finish_wait(found, PA_FINISH_WAIT_MS, stderr) != 0) {
            *fin = f;
            return -2;
        }
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int match = 0, complete = 0;
        if (sqlite3_open_v2(found, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT (SELECT value FROM META WHERE key = 'spool_path'),"
                               " (SELECT count(*) FROM META WHERE key = 'db_complete')", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT) {
            /* (the finisher removes the spool once its DB is complete: then the names compare) */
            const char *named = (const char *)sqlite3_column_text(st, 0);
            match = strcmp(realpath(named, have) ? have : named, want) == 0;
            complete = sqlite3_column_int(st, 1) != 0;
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
        if (match && (!complete || f)) {
            *fin = f;
            return complete ? 1 : 0;
        }
    }
    return -1;
}

/* Rebuilds the streamed DB `db` from the whole spool (which holds everything the DB committed and
 * the tail it had not) under a temporary name, then puts it in the DB's place. 0 or -1. */
static int complete_in_place(const char *spool, const char *db, uint32_t pid)
{
    char tmp[PATH_MAX + 32], side[PATH_MAX + 8];
    if (snprintf(tmp, sizeof tmp, "%s.recover-%ld", db, (long)getpid()) >= (int)sizeof tmp)
        return -1;
    unlink(tmp);
    if (pa_writer_recover(spool, tmp, pid) != 0) {
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, db) != 0) {
        pa_cli_error("recover: cannot replace '%s': %s", db, strerror(errno));
        unlink(tmp);
        return -1;
    }
    /* the streamed DB's WAL belongs to the file just replaced */
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    return 0;
}

/* When process pid started (s since the epoch: /proc/stat btime + /proc/pid/stat starttime);
 * -1 when it does not exist, -2 when /proc cannot tell. */
static double pid_start_time(uint32_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? -1 : -2;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long ticks = 0, btime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &ticks) != 1)
        return -2;
    if (!(f = fopen("/proc/stat", "r")))
        return -2;
    while (fgets(buf, sizeof buf, f) && sscanf(buf, "btime %llu", &btime) != 1) {
    }
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    return btime && hz > 0 ? (double)btime + (double)ticks / (double)hz : -2;
}

/* Is the session that wrote the spool still running? Its pid is alive and started before the
 * spool was last written (a process that reused the pid started after the writer died, i.e.
 * after that write; btime has 1 s resolution, so one started within 1 s counts as the writer:
 * --force overrides). The agent opens the spool per write, so open fds do not tell. */
static int spool_is_live(const char *spool, uint32_t pid)
{
    struct stat sp;
    if (pid == 0 || stat(spool, &sp) != 0)
        return 0;
    double started = pid_start_time(pid);
    if (started == -1)
        return 0;
    if (started == -2) /* no /proc: alive is all we can know */
        return kill((pid_t)pid, 0) == 0 || errno == EPERM;
    return started <= (double)sp.st_mtim.tv_sec + (double)sp.st_mtim.tv_nsec / 1e9 + 1.0;
}

#define RECOVER_USAGE "usage: profagent recover FILE.spool.zst [-o OUT.db] [--force]"

int pa_cli_recover(int argc, char **argv)
{
    const char *spool = NULL, *out = NULL;
    int force = 0;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--force"))
            force = 1;
        else if (argv[i][0] == '-' || spool) {
            pa_cli_error("recover: unexpected '%s'; " RECOVER_USAGE, argv[i]);
            return PA_CLI_EUSAGE;
        } else
            spool = argv[i];
    }
    if (!spool) {
        pa_cli_error("recover: no spool given; " RECOVER_USAGE);
        return PA_CLI_EUSAGE;
    }
    char meant[PATH_MAX], db[PATH_MAX];
    uint32_t pid = 0;
    struct stat st;
    if (access(spool, R_OK) != 0 || stat(spool, &st) != 0) { /* the file first: a missing one is not a naming problem */
        pa_cli_error("recover: cannot read '%s': %s", spool, strerror(errno));
        return PA_CLI_EDATA;
    }
    if (!S_ISREG(st.st_mode)) { /* a directory reads as 0 bytes: it would be called an empty spool */
        pa_cli_error("recover: '%s' is refused: it is %s, not a spool file (recover takes one"
                     " <DB>.<pid>.<tag>.spool.zst file); nothing was written",
                     spool, S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
        return PA_CLI_EDATA;
    }
    const char *why = not_a_spool(spool);
    if (why) {
        pa_cli_error("recover: '%s' is refused: %s; nothing was written", spool, why);
        return PA_CLI_EDATA;
    }
    if (parse_spool_name(spool, meant, sizeof meant, &pid) < 0) {
        if (!out) {
            pa_cli_error("recover: '%s' is not named <DB>.<pid>.<tag>.spool.zst; give the DB name with -o", spool);
            return PA_CLI_EUSAGE;
        }
        pid = 0;
    }
    /* a live session's spool: its DB is being streamed and is completed at its exit; a rebuild
     * now is a snapshot of a moment, and completing its DB in place would write under it */
    int live = spool_is_live(spool, pid);
    if (live && (!force || !out)) {
        pa_cli_error("recover: '%s' is still being written by pid %u (a live session: its DB is completed at its"
                     " exit); nothing was written; %s", spool, pid,
                     force ? "--force needs -o OUT.db (a live session's own DB is never rewritten)"
                           : "give --force -o OUT.db for a snapshot of what it holds now");
        return PA_CLI_EDATA;
    }
    char note[2048], note_path[PATH_MAX + 8];
    snprintf(note_path, sizeof note_path, "%s.why", spool);
    if (pa_spool_why(spool, note, sizeof note) == 0) /* what its finisher left: said before the rebuild */
        fprintf(stderr, "profagent: recover: note: the session's finisher could not write its DB: %s\n", note);
    long fin = 0;
    int sd = out ? -1 : streamed_db(spool, meant, db, sizeof db, &fin);
    if (sd == -2) {
        pa_cli_error("recover: '%s' is still being completed by its finisher process %ld; nothing was written;"
                     " run recover again once it ended", db, fin);
        return PA_CLI_EDATA;
    }
    if (sd == 1) { /* the session handed its DB to a finisher process, which completed it */
        if (access(spool, F_OK) != 0)
            printf("Database: %s (completed by the session's finisher process; nothing to recover)\n", db);
        else
            printf("Database: %s (completed by the session's finisher process; the spool '%s' can be removed)\n", db,
                   spool);
        return PA_CLI_OK;
    }
    if (sd == 0) {
        pa_finish_lock_remove_stale(db); /* a killed finisher's: this recovery completes the DB */
        if (complete_in_place(spool, db, pid) != 0) {
            pa_cli_error("recover: no DB built from '%s'; '%s' is left as it was", spool, db);
            return PA_CLI_EDATA;
        }
        printf("Database: %s (the DB the session was writing, completed with the spool's tail; recovered,"
               " session_complete=0; the spool '%s' can be removed)\n", db, spool);
        return PA_CLI_OK;
    }
    if (out)
        snprintf(db, sizeof db, "%s", out);
    else if (pa_outname_unique(meant, db, sizeof db) < 0) {
        pa_cli_error("recover: no free name for '%s'; give one with -o", meant);
        return PA_CLI_EDATA;
    }
    if (pa_writer_recover(spool, db, pid) != 0) {
        pa_cli_error("recover: no DB built from '%s'", spool);
        return PA_CLI_EDATA;
    }
    unlink(note_path); /* the DB exists now: the finisher's word is answered */
    if (live)
        printf("Database: %s (a snapshot of a live session, session_complete=0; the spool '%s' is still in use:"
               " keep it)\n", db, spool);
    else
        printf("Database: %s (recovered, session_complete=0; the spool '%s' can be removed)\n", db, spool);
    return PA_CLI_OK;
}
