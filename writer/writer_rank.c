/* writer_rank.c - RANK_DEVICE_MAP: the devices of a process that has a rank in a parallel job. */
#include "writer_internal.h"

/* Modelled on the schema seed's RANK_DEVICE_MAP (rankId, deviceId; no table without a rank),
 * with the device's UUID, the host and the pid, so the ranks of a merged DB name their devices.
 * The devices are those the process used (a device operation or allocation on it); a process
 * that used none lists every device it enumerated. */
static int rank_finish(sqlite3 *db)
{
    sqlite3_stmt *st;
    int rank = -1;
    if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = 'rank'", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        rank = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (rank < 0)
        return 0;
    return pa_db_exec(db,
        "CREATE TABLE RANK_DEVICE_MAP(rankId INTEGER, deviceId INTEGER, deviceUuid TEXT, hostname TEXT, pid INTEGER);"
        "CREATE TEMP TABLE pa_used AS SELECT DISTINCT deviceId FROM ZE_OPS WHERE deviceId IS NOT NULL UNION"
        " SELECT DISTINCT deviceId FROM DEVICE_MEMORY WHERE deviceId IS NOT NULL;"
        "INSERT INTO RANK_DEVICE_MAP SELECT (SELECT value FROM META WHERE key = 'rank'), d.deviceId, d.uuid,"
        " (SELECT value FROM META WHERE key = 'hostname'), (SELECT value FROM META WHERE key = 'pid')"
        " FROM ZE_DEVICES d WHERE d.deviceId IN (SELECT deviceId FROM temp.pa_used)"
        " OR NOT EXISTS (SELECT 1 FROM temp.pa_used) ORDER BY d.deviceId;"
        "DROP TABLE temp.pa_used;");
}

const pa_writer_source_t pa_writer_source_rank = {
    .name = "rank",
    .finish = rank_finish,
};
