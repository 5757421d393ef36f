/* bench_sqlite_ceiling.c - what SQLite itself inserts per second on this machine, rows shaped like
 * the writer's HGTX_RANGES and OSRT_API (bench_write's mix: one of each per push/OS call/pop),
 * with the writer's settings (64-row prepared statements, bound integers, no secondary index,
 * 64 KiB pages, synchronous off) and nothing else: no spool, no record decoding, no buffering.
 * It bounds bench_write's db_write_cpu_rate: a row per event cannot go faster through SQLite.
 * usage: bench_sqlite_ceiling [ROWS]  prints `name value unit` lines (CPU time of the inserts). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

#define BATCH 64

static void exec_or_die(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "bench_sqlite_ceiling: %s: %s\n", sql, msg ? msg : "?");
        exit(1);
    }
}

static sqlite3_stmt *prepare_rows(sqlite3 *db, const char *head, int ncols)
{
    static char sql[65536];
    char *p = sql + sprintf(sql, "%s VALUES", head);
    for (int r = 0; r < BATCH; r++) {
        *p++ = r ? ',' : ' ';
        *p++ = '(';
        for (int c = 0; c < ncols; c++) {
            *p++ = '?';
            *p++ = c + 1 < ncols ? ',' : ')';
        }
    }
    *p = '\0';
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "bench_sqlite_ceiling: %s\n", sqlite3_errmsg(db));
        exit(1);
    }
    return st;
}

/* CPU ns to insert `rows` rows (half ranges, half OS calls) in `journal` mode, committing every
 * `per_commit` rows (0: one transaction), the WAL emptied at each commit as the DB thread does. */
static uint64_t load(const char *path, const char *journal, uint64_t rows, uint64_t per_commit)
{
    char sql[256];
    unlink(path);
    snprintf(sql, sizeof sql, "%s-wal", path);
    unlink(sql);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        exit(1);
    snprintf(sql, sizeof sql, "PRAGMA page_size=65536; PRAGMA journal_mode=%s; PRAGMA synchronous=OFF;"
             " PRAGMA cache_size=-4096;", journal);
    exec_or_die(db, sql);
    /* the writer's two tables (writer/schema.c) */
    exec_or_die(db, "CREATE TABLE HGTX_RANGES(id INTEGER PRIMARY KEY, start, end, globalTid, endGlobalTid,"
                " nameId, domainId, style, level, parentId, unterminated);"
                "CREATE TABLE OSRT_API(start, end, globalTid, nameId, ret, errno);");
    sqlite3_stmt *rs = prepare_rows(db, "INSERT OR IGNORE INTO HGTX_RANGES(id, start, end, globalTid,"
                                    " endGlobalTid, nameId, domainId, style, level, parentId, unterminated)", 11);
    sqlite3_stmt *os = prepare_rows(db, "INSERT INTO OSRT_API(start, end, globalTid, nameId, ret, errno)", 6);
    const int64_t gtid = (int64_t)4242 << 32 | 4242;
    int64_t t = 1000000, id = 1;
    uint64_t since = 0;
    uint64_t c0 = bench_cpu_ns();
    exec_or_die(db, "BEGIN");
    for (uint64_t done = 0; done < rows; done += 2 * BATCH) {
        int k = 1;
        for (int r = 0; r < BATCH; r++, t += 5000) {
            const int64_t v[11] = {id++, t, t + 2000 + (t & 4095), gtid, gtid, 1 + ((t >> 7) & 3), 0, 0, 0, 0, 0};
            for (int c = 0; c < 11; c++)
                sqlite3_bind_int64(rs, k++, v[c]);
        }
        if (sqlite3_step(rs) != SQLITE_DONE)
            exit(1);
        sqlite3_reset(rs);
        k = 1;
        for (int r = 0; r < BATCH; r++) {
            int64_t u = t - (BATCH - r) * 5000;
            const int64_t v[6] = {u + 100, u + 1100 + (u & 1023), gtid, 7, 0, 0};
            for (int c = 0; c < 6; c++)
                sqlite3_bind_int64(os, k++, v[c]);
        }
        if (sqlite3_step(os) != SQLITE_DONE)
            exit(1);
        sqlite3_reset(os);
        since += 2 * BATCH;
        if (per_commit && since >= per_commit) {
            exec_or_die(db, "COMMIT");
            sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
            exec_or_die(db, "BEGIN");
            since = 0;
        }
    }
    exec_or_die(db, "COMMIT");
    uint64_t cpu = bench_cpu_ns() - c0;
    sqlite3_finalize(rs);
    sqlite3_finalize(os);
    sqlite3_close(db);
    unlink(path);
    snprintf(sql, sizeof sql, "%s-wal", path);
    unlink(sql);
    return cpu ? cpu : 1;
}

int main(int argc, char **argv)
{
    uint64_t rows = bench_arg(argc, argv, 1, "ROWS", 666666, 2 * BATCH, 1ull << 32);
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench_sqlite_ceiling_%d.db", (int)getpid());
    /* the exit-only mode bench_write measures (journal off, one transaction), then the streamed
     * mode (WAL, a commit per 12.5 k rows: 50 ms at 250 k rows/s) */
    uint64_t off = load(path, "OFF", rows, 0), wal = load(path, "WAL", rows, 12500);
    printf("sqlite_ceiling_cpu_rate %.0f rows/s\n", (double)rows * 1e9 / (double)off);
    printf("sqlite_ceiling_wal_cpu_rate %.0f rows/s\n", (double)rows * 1e9 / (double)wal);
    printf("sqlite_version %d\n", sqlite3_libversion_number());
    return 0;
}
