/* recover.c - pa_writer_recover(): a DB (session_complete=0) from the spool a dead process left. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/pa_log.h"
#include "writer_internal.h"

/* Summary statistics the aggregator would have kept, recomputed from the trace rows (spec:
 * median of an even count = mean of the two middle values, population stddev, 0 for one sample),
 * threads from the rows they own, and the session span from the first/last event. */
static const char pa_recover_sql[] =
    "CREATE TEMP TABLE k AS"
    " SELECT 1 AS cat, name AS key, style AS tag, count(*) AS c, sum(end - start) AS tot,"
    "  min(end - start) AS mn, max(end - start) AS mx, avg(end - start) AS av,"
    "  median(end - start) AS med, stddev(end - start) AS sd FROM HGTX_RANGES_NAMED GROUP BY name, style"
    " UNION ALL SELECT 2, s.value, 0, count(*), sum(o.end - o.start), min(o.end - o.start),"
    "  max(o.end - o.start), avg(o.end - o.start), median(o.end - o.start), stddev(o.end - o.start)"
    "  FROM OSRT_API o JOIN STRING_IDS s ON s.id = o.nameId GROUP BY s.value;"
    "CREATE TEMP TABLE kid AS SELECT rowid + (SELECT coalesce(max(id), 0) FROM STRING_IDS) AS id, *"
    " FROM k;"
    "INSERT INTO STRING_IDS(id, value) SELECT id, key FROM kid;"
    "INSERT INTO SUMMARY_STATS(category, nameId, tag, count, total, min, max, avg, median, stddev,"
    " medianExact) SELECT cat, id, tag, c, tot, mn, mx, stat_trunc(av), stat_trunc(med),"
    " stat_trunc(coalesce(sd, 0)), 1 FROM kid;"
    "CREATE TEMP TABLE ev AS SELECT globalTid AS g, start AS s, end AS e FROM HGTX_RANGES"
    " UNION ALL SELECT globalTid, start, start FROM HGTX_MARKS"
    " UNION ALL SELECT globalTid, start, end FROM OSRT_API;"
    "INSERT OR IGNORE INTO THREADS(globalTid, pid, tid, nameId, records, drops, firstNs, lastNs)"
    " SELECT g, g >> 32, g & 4294967295, 0, count(*), 0, min(s), max(e) FROM ev GROUP BY g;"
    "INSERT OR REPLACE INTO META(key, value) SELECT 'start_mono_ns', min(s) FROM ev WHERE s > 0;"
    "INSERT OR REPLACE INTO META(key, value) SELECT 'end_mono_ns', max(e) FROM ev;";

int pa_writer_recover(const char *spool_path, const char *db_path, uint32_t pid)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "(recovered from %s)", spool_path);
    pa_session_meta_t meta = {.pid = pid, .hostname = "", .cmdline = cmd, .rank = -1, .complete = 0};
    if (pa_writer_write_db(db_path, spool_path, &meta, NULL) != 0)
        return -1;
    sqlite3 *db = NULL;
    int rc = -1;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK && pa_sqlfn_register(db) == 0 &&
        pa_db_exec(db, "BEGIN") == 0 && pa_db_exec(db, pa_recover_sql) == 0 &&
        pa_meta_set_text(db, "recovered_from", spool_path) == 0 && pa_meta_set_int(db, "session_complete", 0) == 0 &&
        pa_db_exec(db, "COMMIT") == 0)
        rc = 0;
    if (rc != 0)
        pa_err("recover", "%s: cannot add the summary tables: %s", db_path, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return rc;
}
