/* writer_mem.c - device-memory tables (DEVICE_MEMORY, CALLCHAINS) and the exit summary section. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/pa_callstack.h"
#include "../common/pa_log.h"
#include "writer_internal.h"

/* The writer runs once per process (at exit), so its loading state is file-static. */
static struct {
    pa_bulk_t ev, cc;
    int open;
    int64_t pid_shift;
    int have_pid;
    pa_mem_exit_t *exit;  /* computed in finish(), printed by summary() */
    uint64_t dropped;     /* PA_SP_MEM_COUNTS: memory records the collector lost */
    int have_counts;
} wm;

static int mem_create_schema(sqlite3 *db)
{
    static const char sql[] =
        /* one row per zeMemAlloc* (op 0) or zeMemFree* (op 1); times ns CLOCK_MONOTONIC.
         * deviceId: enumeration index (NULL for host memory), memKind: ze_memory_type_t,
         * result: ze_result_t (allocs with result != 0 failed and are never counted),
         * allocEventId: the allocation a free released (NULL: unknown address),
         * freeEventId/freeTime/contextId: filled after the load;
         * contextId: the session's small context id (1.. in order of first use, as ZE_OPS;
         * 0 none), contextHandle: the ze_context_handle_t it stands for. */
        "CREATE TABLE DEVICE_MEMORY(eventId INTEGER PRIMARY KEY, op INTEGER, start INTEGER,"
        " end INTEGER, globalTid INTEGER, contextId INTEGER, memory INTEGER, size INTEGER,"
        " memKind INTEGER, result INTEGER, deviceHandle INTEGER, deviceId INTEGER,"
        " callchainId INTEGER, allocEventId INTEGER, freeEventId INTEGER, freeTime INTEGER,"
        " contextHandle INTEGER);"
        /* Ascend-like call chains: one row per frame, stackDepth 0 = innermost (the call site
         * of the allocation), stack = STRING id of "function (library) file:line"; module and
         * function (STRING ids) are what the group rules match. */
        "CREATE TABLE CALLCHAINS(id INTEGER, stack INTEGER, stackDepth INTEGER, module INTEGER,"
        " function INTEGER, PRIMARY KEY(id, stackDepth));"
        "CREATE TABLE DEVICE_MEMORY_INFO(groupRulesId INTEGER, exeId INTEGER,"
        " failedAllocs INTEGER, unknownFrees INTEGER);";
    pa_mem_exit_free(wm.exit);
    memset(&wm, 0, sizeof wm);
    if (pa_db_exec(db, sql) != 0)
        return -1;
    int rc = pa_bulk_init(&wm.ev, db, "INSERT INTO DEVICE_MEMORY(eventId, op, start, end, globalTid,"
                          " contextHandle, memory, size, memKind, result, deviceHandle, deviceId,"
                          " callchainId, allocEventId)", 14, 256);
    rc |= pa_bulk_init(&wm.cc, db, "INSERT OR REPLACE INTO CALLCHAINS(id, stack, stackDepth, module,"
                       " function)", 5, 512);
    wm.open = rc == 0;
    return rc ? -1 : 0;
}

static int64_t mem_pid_shift(sqlite3 *db)
{
    if (!wm.have_pid) {
        sqlite3_stmt *st;
        int64_t pid = getpid();
        if (sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = 'pid'", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
                pid = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        wm.pid_shift = pid << 32;
        wm.have_pid = 1;
    }
    return wm.pid_shift;
}

static void mem_event(sqlite3 *db, const pa_record_t *r, const uint8_t *payload)
{
    pa_mem_sp_t sp;
    memset(&sp, 0, sizeof sp);
    memcpy(&sp, payload, r->len < sizeof sp ? r->len : sizeof sp);
    pa_bulk_t *b = &wm.ev;
    pa_bulk_int(b, (int64_t)sp.event_id);
    pa_bulk_int(b, r->kind == PA_SP_MEM_FREE);
    pa_bulk_int(b, (int64_t)r->t0);
    pa_bulk_int(b, (int64_t)r->t1);
    pa_bulk_int(b, mem_pid_shift(db) | r->tid);
    pa_bulk_int(b, (int64_t)r->u.mem.context);
    pa_bulk_int(b, (int64_t)r->u.mem.ptr);
    pa_bulk_int(b, (int64_t)r->u.mem.size);
    pa_bulk_int(b, r->u.mem.kind);
    pa_bulk_int(b, r->u.mem.result);
    pa_bulk_int(b, (int64_t)sp.device_handle);
    if (sp.device == UINT32_MAX)
        pa_bulk_null(b);
    else
        pa_bulk_int(b, sp.device);
    pa_bulk_int(b, sp.callchain_id);
    if (sp.alloc_event_id)
        pa_bulk_int(b, (int64_t)sp.alloc_event_id);
    else
        pa_bulk_null(b);
}

static int mem_on_record(sqlite3 *db, const pa_record_t *r, const uint8_t *payload)
{
    if (!wm.open)
        return -1;
    switch (r->kind) {
    case PA_SP_MEM_ALLOC:
    case PA_SP_MEM_FREE:
        mem_event(db, r, payload);
        return 0;
    case PA_SP_MEM_FRAME:
        pa_bulk_int(&wm.cc, (int64_t)r->u.raw[0]);
        pa_bulk_int(&wm.cc, (int64_t)r->u.raw[2]);
        pa_bulk_int(&wm.cc, (int64_t)r->u.raw[1]);
        pa_bulk_int(&wm.cc, (int64_t)(r->u.raw[3] >> 32));
        pa_bulk_int(&wm.cc, (int64_t)(r->u.raw[3] & 0xffffffffu));
        return 0;
    case PA_SP_MEM_INFO: {
        char sql[256];
        snprintf(sql, sizeof sql, "INSERT INTO DEVICE_MEMORY_INFO VALUES(%lld, %lld, %lld, %lld)",
                 (long long)r->u.raw[0], (long long)r->u.raw[1], (long long)r->u.raw[2],
                 (long long)r->u.raw[3]);
        return pa_db_exec(db, sql);
    }
    case PA_SP_MEM_COUNTS:
        wm.dropped = r->u.raw[0];
        wm.have_counts = 1;
        return 0;
    default:
        return 0; /* a newer kind: ignored */
    }
}

/* ---- pairing frees with allocations in time order ----
 * The aggregator drains one ring after another, so a free made on thread B can reach it
 * before the allocation thread A made earlier. The authoritative pairing is therefore done
 * here, over all events sorted by start time: a successful free releases the live
 * allocation of the same address; otherwise the address is unknown (allocated before the
 * agent started, never allocated, or already freed). */
typedef struct mem_live_map { uint64_t *key; int64_t *ev; size_t cap, n; } mem_live_map_t;

static size_t live_slot(const mem_live_map_t *m, uint64_t key)
{
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (m->cap - 1);
    while (m->key[i] && m->key[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int live_put(mem_live_map_t *m, uint64_t key, int64_t ev)
{
    if ((m->n + 1) * 2 > m->cap) {
        mem_live_map_t g = {calloc(m->cap ? m->cap * 2 : 1024, 8), calloc(m->cap ? m->cap * 2 : 1024, 8),
                            m->cap ? m->cap * 2 : 1024, 0};
        if (!g.key || !g.ev) {
            free(g.key);
            free(g.ev);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t j = live_slot(&g, m->key[i]);
                g.key[j] = m->key[i];
                g.ev[j] = m->ev[i];
                g.n++;
            }
        free(m->key);
        free(m->ev);
        *m = g;
    }
    size_t i = live_slot(m, key);
    m->n += m->key[i] == 0;
    m->key[i] = key;
    m->ev[i] = ev;
    return 0;
}

/* The event of live `key`, 0 when absent. */
static int64_t live_get(const mem_live_map_t *m, uint64_t key)
{
    if (!m->cap)
        return 0;
    size_t i = live_slot(m, key);
    return m->key[i] ? m->ev[i] : 0;
}

/* Removes `key`; returns its event or 0 when absent (backward-shift deletion). */
static int64_t live_take(mem_live_map_t *m, uint64_t key)
{
    if (!m->cap)
        return 0;
    size_t i = live_slot(m, key);
    if (!m->key[i])
        return 0;
    int64_t ev = m->ev[i];
    m->key[i] = 0;
    m->n--;
    for (size_t j = (i + 1) & (m->cap - 1); m->key[j]; j = (j + 1) & (m->cap - 1)) {
        uint64_t k = m->key[j];
        int64_t e = m->ev[j];
        m->key[j] = 0;
        m->n--;
        size_t s2 = live_slot(m, k);
        m->key[s2] = k;
        m->ev[s2] = e;
        m->n++;
    }
    return ev;
}

/* An allocation seen (in start order) while its address is still live may have been made right
 * after a free that *started* later: thread A enters zeMemAlloc, thread B frees address P and
 * the driver hands P to A. Such an allocation waits here ("pending") until the address's next
 * event: a successful free that started before the pending allocation ended is the free of
 * the previous allocation; anything else means the previous one was never freed. */
typedef struct mem_pending { mem_live_map_t ev, end; } mem_pending_t;

static int pend_flush(mem_live_map_t *live, mem_pending_t *p, uint64_t mem)
{
    int64_t ev = live_take(&p->ev, mem);
    live_take(&p->end, mem);
    return ev ? live_put(live, mem, ev) : 0; /* replaces an allocation never freed */
}

static int mem_pair_frees(sqlite3 *db)
{
    sqlite3_stmt *rd, *up;
    if (sqlite3_prepare_v2(db, "SELECT eventId, op, memory, result, end, start FROM DEVICE_MEMORY"
                               " WHERE memory != 0 ORDER BY start, eventId", -1, &rd, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_prepare_v2(db, "UPDATE DEVICE_MEMORY AS f SET allocEventId = a.eventId, size = a.size,"
                               " deviceHandle = a.deviceHandle, deviceId = a.deviceId,"
                               " callchainId = a.callchainId FROM DEVICE_MEMORY AS a"
                               " WHERE f.eventId = ?1 AND a.eventId = ?2", -1, &up, NULL) != SQLITE_OK) {
        sqlite3_finalize(rd);
        return -1;
    }
    mem_live_map_t live = {0};
    mem_pending_t pend = {{0}, {0}};
    int rc = pa_db_exec(db, "UPDATE DEVICE_MEMORY SET allocEventId = NULL, size = 0, deviceId = NULL,"
                            " callchainId = 0 WHERE op = 1");
    while (rc == 0 && sqlite3_step(rd) == SQLITE_ROW) {
        int64_t ev = sqlite3_column_int64(rd, 0);
        uint64_t mem = (uint64_t)sqlite3_column_int64(rd, 2);
        int failed = sqlite3_column_int(rd, 3) != 0, op = sqlite3_column_int(rd, 1);
        if (failed && op == 0)
            continue; /* failed alloc: nothing live */
        if (op == 0) {
            rc = pend_flush(&live, &pend, mem); /* an older pending one: its predecessor leaked */
            if (rc == 0 && live_get(&live, mem)) {
                int64_t end = sqlite3_column_int64(rd, 4);
                rc = live_put(&pend.ev, mem, ev) | live_put(&pend.end, mem, end ? end : 1);
            } else if (rc == 0) {
                rc = live_put(&live, mem, ev);
            }
            continue;
        }
        int64_t pend_end = failed ? 0 : live_get(&pend.end, mem);
        if (pend_end) {
            /* started before the pending allocation ended: frees the previous allocation, and
             * the pending one goes live */
            if (sqlite3_column_int64(rd, 5) <= pend_end) {
                int64_t a = live_take(&live, mem);
                if (a) {
                    sqlite3_bind_int64(up, 1, ev);
                    sqlite3_bind_int64(up, 2, a);
                    rc = sqlite3_step(up) == SQLITE_DONE ? 0 : -1;
                    sqlite3_reset(up);
                }
                if (rc == 0)
                    rc = pend_flush(&live, &pend, mem);
                continue;
            }
            rc = pend_flush(&live, &pend, mem);
            if (rc)
                break;
        }
        /* a failed free of a live allocation names it (device, size, group) but leaves it live;
         * freeEventId is only linked for successful frees */
        int64_t a = failed ? live_get(&live, mem) : live_take(&live, mem);
        if (a) {
            sqlite3_bind_int64(up, 1, ev);
            sqlite3_bind_int64(up, 2, a);
            rc = sqlite3_step(up) == SQLITE_DONE ? 0 : -1;
            sqlite3_reset(up);
        }
    }
    free(live.key);
    free(live.ev);
    free(pend.ev.key);
    free(pend.ev.ev);
    free(pend.end.key);
    free(pend.end.ev);
    sqlite3_finalize(rd);
    sqlite3_finalize(up);
    return rc;
}

/* The lost-record count (SESSION_COUNTERS and META mem_records_dropped: the reports warn when
 * non-zero) and the agent's group rules (META callstack_groups: the reports' default rules,
 * so `profagent stats` without --callstack-group-config groups as the exit summary did). */
static int mem_store_meta(sqlite3 *db)
{
    char sql[160];
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO SESSION_COUNTERS VALUES('mem_records_dropped', %llu)",
             (unsigned long long)wm.dropped);
    int rc = pa_db_exec(db, sql);
    rc |= pa_meta_set_int(db, "mem_records_dropped", (int64_t)wm.dropped);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT s.value FROM DEVICE_MEMORY_INFO i JOIN STRING_IDS s"
                               " ON s.id = i.groupRulesId", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT)
            rc |= pa_meta_set_text(db, "callstack_groups", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    return rc;
}

/* contextId: one small id per context handle, 1.. in order of first use (the records carry the
 * handle; the reports show the small id, as the Level Zero reports do, never the pointer). */
static int mem_context_ids(sqlite3 *db)
{
    return pa_db_exec(db,
        "CREATE TEMP TABLE mem_ctx AS SELECT contextHandle AS h, row_number() OVER (ORDER BY min(start),"
        " contextHandle) AS n FROM DEVICE_MEMORY WHERE contextHandle != 0 GROUP BY contextHandle;"
        "UPDATE DEVICE_MEMORY SET contextId = coalesce((SELECT n FROM mem_ctx WHERE h = contextHandle), 0);"
        "DROP TABLE mem_ctx;");
}

static int mem_finish(sqlite3 *db)
{
    int rc = 0;
    if (wm.open) {
        rc |= pa_bulk_finish(&wm.ev);
        rc |= pa_bulk_finish(&wm.cc);
        wm.open = 0;
    }
    rc |= mem_store_meta(db);
    rc |= pa_db_exec(db, "CREATE INDEX DEVICE_MEMORY_START ON DEVICE_MEMORY(start);");
    rc |= mem_pair_frees(db);
    rc |= mem_context_ids(db);
    /* link each released allocation to its free (successful frees only) */
    rc |= pa_db_exec(db, "CREATE INDEX DEVICE_MEMORY_ALLOC ON DEVICE_MEMORY(allocEventId);"
                         "UPDATE DEVICE_MEMORY AS a SET freeEventId = f.eventId, freeTime = f.start"
                         " FROM DEVICE_MEMORY AS f WHERE f.op = 1 AND f.result = 0"
                         " AND f.allocEventId = a.eventId;");
    /* the aggregator counted unknown frees and failed allocations online, in drain order (a free
     * on one thread can be drained before the allocation it releases); the pairing above is the
     * authoritative one, so DEVICE_MEMORY_INFO says what DEVICE_MEMORY and the summary say */
    rc |= pa_db_exec(db, "UPDATE DEVICE_MEMORY_INFO SET"
                         " unknownFrees = (SELECT count(*) FROM DEVICE_MEMORY WHERE op = 1 AND allocEventId IS NULL),"
                         " failedAllocs = (SELECT count(*) FROM DEVICE_MEMORY WHERE op = 0 AND result != 0);");
    /* the exit summary is computed from the DB with the report code, so both always agree */
    pa_mem_exit_free(wm.exit);
    wm.exit = pa_mem_exit_compute(db);
    return rc ? -1 : 0;
}

static void mem_summary(FILE *out, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    (void)meta;
    (void)res;
    pa_mem_exit_print(out, wm.exit);
    pa_mem_exit_free(wm.exit);
    wm.exit = NULL;
}

const pa_writer_source_t pa_writer_source_mem = {
    .name = "mem",
    .create_schema = mem_create_schema,
    .on_record = mem_on_record,
    .finish = mem_finish,
    .summary = mem_summary,
};
