/* db.c - pa_writer_write_db(): loads the spool and the aggregates into a new SQLite DB. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/pa_ring.h"
#include "../common/pa_clock.h"
#include "../common/pa_log.h"
#include "../common/pa_spool.h"
#include "writer_internal.h"
#include "../common/pa_stddev.h"

#define PA_BATCH 512 /* rows per INSERT statement */
#define PA_DBW_BUSY_MS 2000 /* longest wait of the streamed DB's writer for a reader's lock */

typedef struct pa_load {
    sqlite3 *db;
    uint64_t pid_shift;  /* pid << 32 */
    pa_bulk_t strings, threads, ranges, marks, osrt;
    uint64_t unknown_kinds;
    int64_t range_max;      /* the largest HGTX_RANGES id inserted so far (the table starts empty) */
    uint64_t osrt_unnamed;  /* bit f: an OSRT row of function f came without a STRING id */
    int src_failed;
} pa_load_t;

static int pa_load_init(pa_load_t *l)
{
    int rc = 0;
    rc |= pa_bulk_init(&l->strings, l->db, "INSERT OR REPLACE INTO STRING_IDS(id, value)", 2, PA_BATCH);
    rc |= pa_bulk_init(&l->threads, l->db, "INSERT OR REPLACE INTO THREADS(globalTid, pid, tid,"
                       " nameId, records, drops, firstNs, lastNs)", 8, PA_BATCH);
    rc |= pa_bulk_init(&l->ranges, l->db, "INSERT OR IGNORE INTO HGTX_RANGES(id, start, end,"
                       " globalTid, endGlobalTid, nameId, domainId, style, level, parentId,"
                       " unterminated)", 11, PA_BATCH);
    rc |= pa_bulk_init(&l->marks, l->db, "INSERT INTO HGTX_MARKS(start, globalTid, nameId,"
                       " domainId)", 4, PA_BATCH);
    rc |= pa_bulk_init(&l->osrt, l->db, "INSERT INTO OSRT_API(start, end, globalTid, nameId,"
                       " ret, errno)", 6, PA_BATCH);
    return rc ? -1 : 0;
}

static int pa_load_finish(pa_load_t *l)
{
    int rc = 0;
    rc |= pa_bulk_finish(&l->strings);
    rc |= pa_bulk_finish(&l->threads);
    rc |= pa_bulk_finish(&l->ranges);
    rc |= pa_bulk_finish(&l->marks);
    rc |= pa_bulk_finish(&l->osrt);
    return rc ? -1 : 0;
}

/* Start/end ranges ended on another thread among the records loaded into the DB being written
 * (every DB is loaded from its spool's first record): the projection's exit work needs them. */
static uint64_t cross_thread_ranges;

uint64_t pa_writer_cross_thread_ranges(void)
{
    return cross_thread_ranges;
}

/* One spool record -> one row (or the owning source's callback). */
static void pa_load_record(pa_load_t *l, const pa_record_t *r, const uint8_t *payload)
{
    int64_t gtid = (int64_t)(l->pid_shift | r->tid);
    switch (r->kind) {
    case PA_SP_STRING:
        pa_bulk_int(&l->strings, (int64_t)r->u.str.id);
        pa_bulk_text(&l->strings, payload, r->len);
        return;
    case PA_SP_THREAD:
        pa_bulk_int(&l->threads, gtid);
        pa_bulk_int(&l->threads, (int64_t)(l->pid_shift >> 32));
        pa_bulk_int(&l->threads, r->tid);
        pa_bulk_int(&l->threads, r->u.thread.name_id);
        pa_bulk_int(&l->threads, (int64_t)r->u.thread.records);
        pa_bulk_int(&l->threads, (int64_t)r->u.thread.drops);
        pa_bulk_int(&l->threads, (int64_t)r->t0);
        pa_bulk_int(&l->threads, (int64_t)r->t1);
        return;
    case PA_SP_HGTX_RANGE: {
        int startend = (r->flags & PA_RF_STARTEND) != 0;
        uint32_t end_tid = r->u.range.end_tid ? r->u.range.end_tid : r->tid;
        if (startend && end_tid != r->tid && !(r->flags & PA_RF_UNTERMINATED))
            cross_thread_ranges++;
        /* the next id after every id inserted so far goes in as NULL: SQLite then gives the row
         * the largest rowid + 1, which is that id, without the binary search its uniqueness
         * check does for an explicit rowid (~1000 instructions a row on 64 KiB pages; an id
         * after the largest cannot be in the table). Others (nested ranges end inner first, a
         * repeated record) keep the explicit id and its OR IGNORE. */
        int64_t id = (int64_t)r->u.range.range_id;
        if (id == l->range_max + 1)
            pa_bulk_null(&l->ranges);
        else
            pa_bulk_int(&l->ranges, id);
        if (id > l->range_max)
            l->range_max = id;
        pa_bulk_int(&l->ranges, (int64_t)r->t0);
        pa_bulk_int(&l->ranges, (int64_t)r->t1);
        pa_bulk_int(&l->ranges, gtid);
        pa_bulk_int(&l->ranges, (int64_t)(l->pid_shift | end_tid));
        pa_bulk_int(&l->ranges, r->u.range.name_id);
        pa_bulk_int(&l->ranges, r->u.range.domain_id);
        pa_bulk_int(&l->ranges, startend);
        pa_bulk_int(&l->ranges, startend ? -1 : r->u.range.level);
        pa_bulk_int(&l->ranges, startend ? 0 : r->u.range.parent_id);
        pa_bulk_int(&l->ranges, (r->flags & PA_RF_UNTERMINATED) != 0);
        return;
    }
    case PA_SP_HGTX_MARK:
        pa_bulk_int(&l->marks, (int64_t)r->t0);
        pa_bulk_int(&l->marks, gtid);
        pa_bulk_int(&l->marks, r->u.range.name_id);
        pa_bulk_int(&l->marks, r->u.range.domain_id);
        return;
    case PA_SP_OSRT:
        pa_bulk_int(&l->osrt, (int64_t)r->t0);
        pa_bulk_int(&l->osrt, (int64_t)r->t1);
        pa_bulk_int(&l->osrt, gtid);
        if (r->u.osrt.pad) { /* the aggregator's id of the name: the string is stored once */
            pa_bulk_int(&l->osrt, r->u.osrt.pad);
        } else {
            pa_bulk_int(&l->osrt, (int64_t)PA_WRITER_STRING_OSRT + r->u.osrt.func);
            if (r->u.osrt.func < 64)
                l->osrt_unnamed |= 1ull << r->u.osrt.func;
        }
        pa_bulk_int(&l->osrt, r->u.osrt.ret);
        pa_bulk_int(&l->osrt, r->u.osrt.err);
        return;
    default:
        break;
    }
    const pa_writer_source_t *src = NULL;
    if (r->kind >= PA_SP_ZE_FIRST && r->kind <= PA_SP_ZE_LAST)
        src = &pa_writer_source_ze;
    else if (r->kind >= PA_SP_MEM_FIRST && r->kind <= PA_SP_MEM_LAST)
        src = &pa_writer_source_mem;
    else if (r->kind == PA_SP_HGTX_ASSOC)
        src = &pa_writer_source_proj;
    else if (r->kind >= PA_SP_PCSAMP_FIRST && r->kind <= PA_SP_PCSAMP_LAST)
        src = &pa_writer_source_pcs;
    else if (r->kind >= PA_SP_HC_FIRST && r->kind <= PA_SP_HC_LAST)
        src = &pa_writer_source_hc;
    else if (r->kind == PA_SP_ITT_COUNTS)
        src = &pa_writer_source_itt;
    else if (r->kind >= PA_SP_DM_FIRST && r->kind <= PA_SP_DM_LAST)
        src = &pa_writer_source_dm;
    if (src && src->on_record) {
        if (src->on_record(l->db, r, payload) != 0)
            l->src_failed = 1;
    } else {
        l->unknown_kinds++;
    }
}

/* Streams every spool record into the DB. Returns 1 when the spool ended early (truncated). */
static int pa_load_spool(pa_load_t *l, const char *spool_path, uint64_t *nrec)
{
    pa_spool_reader_t *rd = spool_path ? pa_spool_open_read(spool_path) : NULL;
    const pa_record_t *rec;
    const uint8_t *payload;
    int rc;
    if (!rd) {
        pa_warn("writer", "no spool '%s': the DB holds the aggregates only",
                spool_path ? spool_path : "(none)");
        return 1;
    }
    while ((rc = pa_spool_next(rd, &rec, &payload)) == 1) {
        pa_load_record(l, rec, payload);
        (*nrec)++;
    }
    pa_spool_close_read(rd);
    if (rc < 0)
        pa_warn("writer", "spool '%s' is truncated after %llu records; the DB keeps those",
                spool_path, (unsigned long long)*nrec);
    return rc < 0;
}

/* Names the writer interns itself, with ids from PA_WRITER_STRING_BASE: only OSRT functions
 * whose rows carried no STRING id (spools of older agents), so no string is stored twice. */
static void pa_load_writer_strings(pa_load_t *l)
{
    for (uint32_t f = 1; f < PA_OSRT_COUNT && f < 64; f++) {
        const char *n = pa_osrt_func_name(f);
        if (!n || !(l->osrt_unnamed >> f & 1))
            continue;
        pa_bulk_int(&l->strings, (int64_t)PA_WRITER_STRING_OSRT + f);
        pa_bulk_text(&l->strings, n, strlen(n));
    }
}

/* Threads the aggregator knows but the spool did not describe (OR IGNORE keeps the spool's). */
static int pa_load_res_threads(sqlite3 *db, uint32_t pid, const pa_agg_results_t *res)
{
    pa_bulk_t s, t;
    int rc = pa_bulk_init(&s, db, "INSERT OR IGNORE INTO STRING_IDS(id, value)", 2, PA_BATCH);
    rc |= pa_bulk_init(&t, db, "INSERT OR IGNORE INTO THREADS(globalTid, pid, tid, nameId,"
                       " records, drops, firstNs, lastNs)", 8, PA_BATCH);
    sqlite3_stmt *have = NULL;
    rc |= sqlite3_prepare_v2(db, "SELECT 1 FROM THREADS WHERE globalTid = ?1", -1, &have, NULL)
          != SQLITE_OK;
    for (size_t i = 0; rc == 0 && i < res->nthreads; i++) {
        const pa_thread_info_t *ti = &res->threads[i];
        int64_t name_id = 0;
        size_t nlen = strnlen(ti->name, sizeof ti->name);
        sqlite3_reset(have);
        sqlite3_bind_int64(have, 1, (int64_t)((uint64_t)pid << 32 | ti->tid));
        if (sqlite3_step(have) == SQLITE_ROW)
            continue; /* the spool's row (and its name string) stands */
        if (nlen) {
            name_id = (int64_t)PA_WRITER_STRING_SUMMARY + 0x8000 + (int64_t)i;
            pa_bulk_int(&s, name_id);
            pa_bulk_text(&s, ti->name, nlen);
        }
        pa_bulk_int(&t, (int64_t)((uint64_t)pid << 32 | ti->tid));
        pa_bulk_int(&t, pid);
        pa_bulk_int(&t, ti->tid);
        pa_bulk_int(&t, name_id);
        pa_bulk_int(&t, (int64_t)ti->records);
        pa_bulk_int(&t, (int64_t)ti->drops);
        pa_bulk_int(&t, (int64_t)ti->first_ns);
        pa_bulk_int(&t, (int64_t)ti->last_ns);
    }
    sqlite3_finalize(have);
    rc |= pa_bulk_finish(&s);
    rc |= pa_bulk_finish(&t);
    return rc ? -1 : 0;
}

int pa_median_from_rows(sqlite3 *db, int cat, const char *key, size_t key_len, int64_t tag, double *out)
{
    /* Not the median() aggregate: it holds every value of the key in memory, which made the exit
     * RSS grow with the run length exactly when the aggregator's sample budget had run out.
     * ORDER BY + LIMIT/OFFSET goes through SQLite's sorter, which spills to temp files. */
#define PA_MEDIAN_SQL(from_where)                                                            \
    "WITH v(d) AS (" from_where ") SELECT avg(d) FROM (SELECT d FROM v ORDER BY d"             \
    " LIMIT 2 - (SELECT count(*) FROM v) % 2 OFFSET ((SELECT count(*) FROM v) - 1) / 2)"
    const char *sql;
    if (cat == PA_CAT_HGTX_RANGE) /* unterminated ranges are left out, as in the aggregates */
        sql = PA_MEDIAN_SQL("SELECT end - start FROM HGTX_RANGES_NAMED WHERE name = ?1 AND style = ?2"
                            " AND unterminated = 0");
    else if (cat == PA_CAT_OSRT)
        sql = PA_MEDIAN_SQL("SELECT o.end - o.start FROM OSRT_API o JOIN STRING_IDS s ON s.id = o.nameId"
                            " WHERE s.value = ?1 AND ?2 >= 0");
    else if (cat == PA_CAT_ZE_API) /* the aggregator's duration: t1 - t0, 0 when t1 <= t0 */
        sql = PA_MEDIAN_SQL("SELECT max(a.end - a.start, 0) FROM ZE_API a JOIN STRING_IDS s ON s.id = a.nameId"
                            " WHERE s.value = ?1 AND ?2 >= 0");
    else if (cat == PA_CAT_KERNEL) /* device time of every kernel of that name (agg_ze.c on_op) */
        sql = PA_MEDIAN_SQL("SELECT max(o.end - o.start, 0) FROM ZE_OPS o JOIN STRING_IDS s ON s.id = o.nameId"
                            " WHERE o.kind = 1 AND s.value = ?1 AND ?2 >= 0");
    else if (cat == PA_CAT_MEMOP) /* tag 0: device time, 1: bytes, per operation name */
        sql = PA_MEDIAN_SQL("SELECT CASE ?2 WHEN 1 THEN o.bytes ELSE max(o.end - o.start, 0) END FROM ZE_OPS o"
                            " WHERE o.kind IN (2, 3) AND " PA_SQL_MEMOP_NAME("o") " = ?1");
    else if (cat == PA_CAT_HGTX_PROJ && (tag & ~3) == 0) /* tag 0|style: duration, 2|style: ops */
        sql = PA_MEDIAN_SQL("SELECT CASE WHEN ?2 & 2 THEN nops ELSE dur END FROM (" PA_SQL_PROJ_INSTANCES
                            ") WHERE name = ?1 AND style = (?2 & 1)");
    else
        return -1;
#undef PA_MEDIAN_SQL
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text64(st, 1, key, key_len, SQLITE_STATIC, SQLITE_UTF8);
    sqlite3_bind_int64(st, 2, tag);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *out = sqlite3_column_double(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

static double pa_writer_stddev(const pa_stat_t *s)
{
    return pa_stddev_pop(s->count, s->m2);
}

/* SUMMARY_STATS from the aggregates; keys keep the aggregator's STRING id (the spool stored the
 * same bytes under it: OR IGNORE), or PA_WRITER_STRING_SUMMARY + index for rows without one. */
static int pa_load_summary(sqlite3 *db, const pa_agg_results_t *res, uint64_t nrec, size_t *npending)
{
    /* a key past the sample budget gets its median from its rows now only when that is cheap: each
     * such query scans its whole trace table (no index on the name while the DB is written); else
     * the first reader computes every pending median in one pass per table */
    size_t inexact = 0;
    for (size_t i = 0; i < res->nrows; i++)
        inexact += !res->rows[i].st.median_exact;
    int now = nrec <= PA_MEDIAN_EXIT_ROWS && inexact <= PA_MEDIAN_EXIT_KEYS;
    pa_bulk_t s, t;
    int rc = pa_bulk_init(&s, db, "INSERT OR IGNORE INTO STRING_IDS(id, value)", 2, PA_BATCH);
    rc |= pa_bulk_init(&t, db, "INSERT INTO SUMMARY_STATS(category, nameId, tag, count, total,"
                       " min, max, avg, median, stddev, medianExact)", 11, PA_BATCH);
    for (size_t i = 0; rc == 0 && i < res->nrows; i++) {
        const pa_stat_row_t *row = &res->rows[i];
        int64_t id = pa_writer_summary_key_id(res, row);
        double med = row->st.median;
        int exact = row->st.median_exact, pending = 0;
        if (!exact && now && pa_median_from_rows(db, row->cat, row->key, row->key_len, row->tag, &med) == 0)
            exact = 1;
        else if (!exact && pa_median_recomputable(row->cat, row->tag))
            pending = 1;
        *npending += (size_t)pending;
        pa_bulk_int(&s, id);
        pa_bulk_text(&s, row->key, row->key_len);
        pa_bulk_int(&t, row->cat);
        pa_bulk_int(&t, id);
        pa_bulk_int(&t, row->tag);
        pa_bulk_int(&t, (int64_t)row->st.count);
        pa_bulk_int(&t, (int64_t)row->st.total);
        pa_bulk_int(&t, (int64_t)row->st.min);
        pa_bulk_int(&t, (int64_t)row->st.max);
        /* avg, median, stddev as every report and the summary print them (pa_stat_trunc) */
        pa_bulk_int(&t, pa_stat_trunc(row->st.count ? (double)row->st.total / (double)row->st.count : 0.0));
        if (pending)
            pa_bulk_null(&t);
        else
            pa_bulk_int(&t, pa_stat_trunc(med));
        pa_bulk_int(&t, pa_stat_trunc(pa_writer_stddev(&row->st)));
        pa_bulk_int(&t, exact);
    }
    rc |= pa_bulk_finish(&s);
    rc |= pa_bulk_finish(&t);
    return rc ? -1 : 0;
}

static int pa_load_counters(sqlite3 *db, const pa_agg_results_t *res, const pa_session_meta_t *meta,
                            uint64_t unknown)
{
    const struct { const char *name; uint64_t v; } c[] = {
        {"records", res->records_total}, {"drops", res->drops_total},
        {"late_records", res->late_records},
        {"hgtx_misuse_pop_empty", res->hgtx_misuse_pop_empty},
        {"hgtx_misuse_bad_end", res->hgtx_misuse_bad_end},
        {"hgtx_unterminated", res->hgtx_unterminated},
        {"hgtx_drop_end_no_start", res->hgtx_drop_end_no_start},
        {"hgtx_drop_start_no_end", res->hgtx_drop_start_no_end},
        {"spool_records", res->spool_records}, {"spool_bytes_raw", res->spool_bytes_raw},
        {"spool_bytes_compressed", res->spool_bytes_compressed},
        {"first_ns", res->first_ns}, {"last_ns", res->last_ns},
        {"unknown_record_kinds", unknown},
        {"hgtx_misuse_bad_domain", res->hgtx_misuse_bad_domain},
        {"hgtx_depth_overflow", res->hgtx_depth_overflow},
        {"spool_errors", res->spool_errors},
        {"unrecorded", res->unrecorded},
        {"late_no_ring", res->late_no_ring},
    };
    pa_bulk_t b;
    int rc = pa_bulk_init(&b, db, "INSERT OR REPLACE INTO SESSION_COUNTERS(name, value)", 2, 16);
    for (size_t i = 0; rc == 0 && i < sizeof c / sizeof c[0]; i++) {
        pa_bulk_text(&b, c[i].name, strlen(c[i].name));
        pa_bulk_int(&b, (int64_t)c[i].v);
    }
    /* <source>_ring_full_waits, _wait_ns, _waits_given_up of the sources but ze (whose three
     * come with its counts record, writer_ze.c) */
    for (unsigned s = PA_RING_SRC_HGTX; rc == 0 && s < PA_RING_NSRC; s++) {
        const uint64_t v[3] = {res->ring_full_waits[s], res->ring_full_wait_ns[s], res->ring_full_given_up[s]};
        static const char *const what[3] = {"waits", "wait_ns", "waits_given_up"};
        for (int k = 0; k < 3; k++) {
            char name[48];
            int n = snprintf(name, sizeof name, "%s_ring_full_%s", pa_ring_src_name(s), what[k]);
            pa_bulk_text(&b, name, (size_t)n);
            pa_bulk_int(&b, (int64_t)v[k]);
        }
    }
    /* only when some were lost: a DB made by `profagent recover` does not know the count */
    if (rc == 0 && meta && meta->log_dropped) {
        static const char name[] = "agent_messages_dropped";
        pa_bulk_text(&b, name, sizeof name - 1);
        pa_bulk_int(&b, (int64_t)meta->log_dropped);
    }
    return (pa_bulk_finish(&b) | rc) ? -1 : 0;
}

static int pa_write_meta(sqlite3 *db, const pa_session_meta_t *m, const pa_agg_results_t *res)
{
    int rc = 0;
    rc |= pa_meta_set_int(db, "schema_version", PA_SCHEMA_VERSION);
    rc |= pa_meta_set_int(db, "session_complete", 0);
    rc |= pa_meta_set_text(db, "agent_version", PA_WRITER_AGENT_VERSION);
    rc |= pa_meta_set_int(db, "pid", m ? m->pid : 0);
    rc |= pa_meta_set_int(db, "rank", m ? m->rank : -1);
    rc |= pa_meta_set_text(db, "hostname", m && m->hostname ? m->hostname : "");
    rc |= pa_meta_set_text(db, "command_line", m && m->cmdline ? m->cmdline : "");
    rc |= pa_meta_set_int(db, "start_wall_ns", m ? (int64_t)m->start_wall_ns : 0);
    rc |= pa_meta_set_int(db, "start_mono_ns", m ? (int64_t)m->start_mono_ns : 0);
    rc |= pa_meta_set_int(db, "end_mono_ns", m ? (int64_t)m->end_mono_ns : 0);
    if (m && m->rank_var)
        rc |= pa_meta_set_text(db, "rank_source", m->rank_var);
    if (m && m->host_clock) /* the clock every host timestamp was read with (common/pa_clock.h) */
        rc |= pa_meta_set_text(db, "host_clock", m->host_clock);
    if (m && m->boot_id && m->boot_id[0])
        rc |= pa_meta_set_text(db, "boot_id", m->boot_id);
    if (m && m->anchor_mono_ns) { /* the wall-clock anchor `profagent merge` aligns hosts with */
        rc |= pa_meta_set_int(db, "clock_anchor_wall_ns", (int64_t)m->anchor_wall_ns);
        rc |= pa_meta_set_int(db, "clock_anchor_mono_ns", (int64_t)m->anchor_mono_ns);
        rc |= pa_meta_set_int(db, "clock_anchor_err_ns", (int64_t)m->anchor_err_ns);
        rc |= pa_meta_set_int(db, "clock_wall_esterror_ns", m->wall_esterror_ns);
        rc |= pa_meta_set_int(db, "clock_wall_maxerror_ns", m->wall_maxerror_ns);
        rc |= pa_meta_set_int(db, "clock_wall_synced", m->wall_synced);
    }
    if (res) {
        rc |= pa_meta_set_int(db, "records", (int64_t)res->records_total);
        rc |= pa_meta_set_int(db, "drops", (int64_t)res->drops_total);
        rc |= pa_meta_set_int(db, "late_records", (int64_t)res->late_records);
        rc |= pa_meta_set_int(db, "hgtx_misuse_pop_empty", (int64_t)res->hgtx_misuse_pop_empty);
        rc |= pa_meta_set_int(db, "hgtx_misuse_bad_end", (int64_t)res->hgtx_misuse_bad_end);
        rc |= pa_meta_set_int(db, "hgtx_unterminated", (int64_t)res->hgtx_unterminated);
        rc |= pa_meta_set_int(db, "hgtx_drop_end_no_start", (int64_t)res->hgtx_drop_end_no_start);
        rc |= pa_meta_set_int(db, "hgtx_drop_start_no_end", (int64_t)res->hgtx_drop_start_no_end);
        rc |= pa_meta_set_int(db, "hgtx_misuse_bad_domain", (int64_t)res->hgtx_misuse_bad_domain);
        rc |= pa_meta_set_int(db, "hgtx_depth_overflow", (int64_t)res->hgtx_depth_overflow);
        rc |= pa_meta_set_int(db, "spool_errors", (int64_t)res->spool_errors);
        rc |= pa_meta_set_int(db, "unrecorded", (int64_t)res->unrecorded);
    }
    return rc ? -1 : 0;
}

/* Creates the file exclusively: a DB is never overwritten, even by a racing process. */
static int pa_create_exclusive(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        pa_err("writer", "cannot create '%s': %s%s", path, strerror(errno),
               errno == EEXIST ? " (an existing DB is never overwritten)" : "");
        return -1;
    }
    close(fd);
    return 0;
}

static void pa_detach_sources(sqlite3 *db)
{
    const pa_writer_source_t *srcs[] = {&pa_writer_source_ze, &pa_writer_source_mem, &pa_writer_source_proj,
                                        &pa_writer_source_hc, &pa_writer_source_pcs, &pa_writer_source_dm,
                                        &pa_writer_source_itt, &pa_writer_source_rank};
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++)
        if (srcs[i]->detach)
            srcs[i]->detach(db);
    pa_bulk_detach_all(db);
}

static int pa_run_sources(sqlite3 *db, int finish)
{
    const pa_writer_source_t *srcs[] = {&pa_writer_source_ze, &pa_writer_source_mem,
                                        &pa_writer_source_proj, &pa_writer_source_hc, &pa_writer_source_pcs,
                                        &pa_writer_source_dm, &pa_writer_source_rank};
    int rc = 0;
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
        int (*fn)(sqlite3 *) = finish ? srcs[i]->finish : srcs[i]->create_schema;
        if (fn && fn(db) != 0) {
            if (!finish) /* the creation stops here; its first SQLite failure says why */
                return -1;
            /* past the file size limit every source fails: the session's one message says it */
            if (pa_writer_fsize_hit())
                pa_dbg("writer", "source '%s' failed to finish its tables (file size limit)", srcs[i]->name);
            else
                pa_err("writer", "source '%s' failed to finish its tables", srcs[i]->name);
            rc = -1;
        }
    }
    return rc;
}

/* ---- a DB being written: created once, records loaded in transactions, finished once ---- */

struct pa_dbw {
    sqlite3 *db;     /* NULL between two batches (pa_dbw_suspend) */
    char *path;
    pa_load_t l;
    uint64_t nrec;   /* spool records loaded (committed or in the open transaction) */
    uint64_t commits; /* transactions committed before the last one (META db_commits) */
    int failed;
    int finisher;    /* loaded by the finisher process (pa_dbw_take_exclusive): META finisher_cpu_ms */
};

/* Page size by the expected DB size: 64 KiB pages cut the B-tree work of a large load
 * (bench_write CPU 1.19 -> 0.89 s per 1 M events, 7-run medians) but make ~30 tables and
 * indexes cost 64 KiB each: a session of a few records would take ~1.9 MB. Below
 * PA_WRITER_SMALL_SPOOL bytes of compressed spool 4 KiB pages keep it ~150 KB. The spool now
 * takes 0.6-1.5 bytes per HGTX/ze record and ~9 per record of a ze sample's mix, so 64 KiB of it
 * is 7-110 k records, about where the rows outweigh the ~1.9 MB (512 KiB was up to ~800 k
 * records: a 1 M ze call run loaded 4 KiB pages, 10.8 MB through 2 600 page writes, each
 * twice through the WAL; 64 KiB pages there: CPU 0.90x, system time 94 -> 55 ms, 15 pairs).
 * For a DB created at exit or by recover; a streamed DB has its own threshold (stream.c). */
int pa_writer_page_size(uint64_t spool_bytes)
{
    return spool_bytes >= PA_WRITER_SMALL_SPOOL ? 65536 : 4096;
}

/* The file size limit RLIMIT_FSIZE in bytes, UINT64_MAX when there is none. */
static uint64_t dbw_fsize_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return UINT64_MAX;
    return (uint64_t)rl.rlim_cur;
}

/* The DB's size in bytes as of its last commit (the WAL's view: page_count x page_size), 0 when
 * it cannot be read. */
static uint64_t dbw_db_bytes(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    uint64_t n = 0;
    if (sqlite3_prepare_v2(db, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()", -1, &st,
                           NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* Why a checkpoint is not started when the DB would pass the file size limit: one cut by
 * RLIMIT_FSIZE (EFBIG) half-way left the main file with pages of two commits, a DB valid only
 * together with its -wal; not starting it keeps the main file the whole DB of its last
 * checkpoint, and the WAL the commits since (valid together, and the main file on its own).
 * 1 when a checkpoint may run; 0 (remembered for pa_writer_wal_kept) when it must not. */
static uint64_t wal_kept_bytes, wal_kept_limit;

static int dbw_ckpt_fits(sqlite3 *db)
{
    uint64_t lim = dbw_fsize_limit(), need;
    if (lim == UINT64_MAX || (need = dbw_db_bytes(db)) <= lim)
        return 1;
    wal_kept_bytes = need;
    wal_kept_limit = lim;
    return 0;
}

uint64_t pa_dbw_bytes(const pa_dbw_t *w)
{
    struct stat st;
    if (w->db)
        return dbw_db_bytes(w->db);
    return stat(w->path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int pa_writer_wal_kept(uint64_t *db_bytes, uint64_t *limit)
{
    if (!wal_kept_bytes)
        return 0;
    if (db_bytes)
        *db_bytes = wal_kept_bytes;
    if (limit)
        *limit = wal_kept_limit;
    return 1;
}

/* Opens the connection with the per-connection settings. Returns 0 or -1 (logged). */
static int pa_dbw_connect(pa_dbw_t *w, int create)
{
    /* one thread uses this connection: no SQLite mutexes (they cost ~10 % of the load) */
    if (sqlite3_open_v2(w->path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0),
                        NULL) != SQLITE_OK) {
        pa_err("writer", "cannot open '%s': %s", w->path, w->db ? sqlite3_errmsg(w->db) : "out of memory");
        sqlite3_close(w->db);
        w->db = NULL;
        return -1;
    }
    /* a reader of the DB (another process while the program runs) can hold a lock for a moment */
    sqlite3_busy_timeout(w->db, PA_DBW_BUSY_MS);
    /* closed between batches: the WAL stays (copied back by the auto-checkpoint, and at the end) */
    sqlite3_db_config(w->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    /* under a file size limit every checkpoint is one of ours, each first asked whether the DB
     * fits (dbw_ckpt_fits): SQLite's automatic one at a commit would not ask */
    if (dbw_fsize_limit() != UINT64_MAX)
        sqlite3_wal_autocheckpoint(w->db, 0);
    /* 4 MiB: the writer's share of peak RSS. Without secondary indexes a batch only appends (the
     * rightmost pages of each table): bench_write's rate is the same with 2, 4 and 16 MiB (4 runs).
     * secure_delete off (the system SQLite's default is on): a new 64 KiB page is not zeroed a second
     * time, nor freed cell space overwritten; the rows are the same (callgrind bench_write -1.8 %) */
    int rc = pa_db_exec(w->db, "PRAGMA synchronous=OFF; PRAGMA cache_size=-4096; PRAGMA secure_delete=OFF;");
    rc |= pa_sqlfn_register(w->db);
    rc |= pa_bulk_register(w->db);
    w->l.db = w->db;
    return rc ? -1 : 0;
}

/* Why the last pa_dbw_create() failed (pa_writer_create_error). */
static char create_err[256];
static int create_errno;

const char *pa_writer_create_error(int *os_errno)
{
    if (os_errno)
        *os_errno = create_errno;
    return create_err;
}

pa_dbw_t *pa_dbw_create(const char *db_path, int page_size, int wal, const pa_session_meta_t *meta)
{
    create_err[0] = '\0';
    create_errno = 0;
    pa_dbw_t *w = calloc(1, sizeof *w);
    if (!w || !db_path || !(w->path = strdup(db_path)) || pa_dbw_connect(w, 1) != 0) {
        snprintf(create_err, sizeof create_err, "it could not be opened");
        if (w)
            free(w->path);
        free(w);
        return NULL;
    }
    /* the page size is set before any table exists. Streamed (wal): WAL keeps the file valid at
     * every commit, for a process killed at any moment and for readers while it runs (no fsync:
     * what a killed process wrote is in the page cache). At exit only (journal off): META
     * session_complete = 0 is committed first, so an interrupted build is visible as incomplete. */
    char pragmas[256];
    snprintf(pragmas, sizeof pragmas, "PRAGMA page_size=%d; PRAGMA journal_mode=%s;%s", page_size,
             wal ? "WAL" : "OFF", wal ? " PRAGMA wal_autocheckpoint=256;" : "");
    /* The first failure stops the creation and is the one kept: a file that cannot be opened
     * (RLIMIT_NOFILE, RLIMIT_FSIZE, a full disk) failed every later statement too, ~30 lines for
     * one cause. The caller says it once, with the rest of what the user needs (the spool). */
    pa_db_capture_errors(create_err, sizeof create_err, &create_errno);
    int rc = pa_db_exec(w->db, pragmas);
    if (dbw_fsize_limit() != UINT64_MAX)
        sqlite3_wal_autocheckpoint(w->db, 0); /* as pa_dbw_connect: the checkpoints ask first */
    /* one transaction: a reader opening the DB meanwhile sees no table or all of them */
    if (rc == 0)
        rc = pa_db_exec(w->db, "BEGIN");
    if (rc == 0)
        rc = pa_schema_create(w->db);
    if (rc == 0)
        rc = pa_run_sources(w->db, 0);
    if (rc == 0)
        rc = pa_write_meta(w->db, meta, NULL);
    pa_db_capture_errors(NULL, 0, NULL);
    w->l.pid_shift = (uint64_t)(meta ? meta->pid : 0) << 32;
    cross_thread_ranges = 0;
    if (rc == 0)
        rc = pa_load_init(&w->l);
    if (rc == 0)
        rc = pa_db_exec(w->db, "COMMIT; BEGIN");
    if (rc != 0) {
        if (!create_err[0])
            snprintf(create_err, sizeof create_err, "its tables could not be created");
        pa_load_finish(&w->l);
        sqlite3_close(w->db);
        free(w->path);
        free(w);
        return NULL;
    }
    return w;
}

void pa_dbw_empty_wal(pa_dbw_t *w)
{
    if (!w->db || w->failed)
        return;
    /* outside a transaction (pa_dbw_commit left a deferred BEGIN that holds no lock yet) */
    if (pa_db_exec(w->db, "COMMIT") != 0) {
        w->failed = 1;
        return;
    }
    sqlite3_busy_timeout(w->db, 0);
    if (dbw_ckpt_fits(w->db))
        sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(w->db, PA_DBW_BUSY_MS);
    if (pa_db_exec(w->db, "BEGIN") != 0)
        w->failed = 1;
}

/* dbw_close() : detaches the sources and closes w's connection (committed by the caller); 0, or
 * -1 with one message naming `when` and the DB marked failed. w holds no connection after. */
static int dbw_close(pa_dbw_t *w, const char *when)
{
    int rc = 0;
    pa_detach_sources(w->db);
    if (sqlite3_close(w->db) != SQLITE_OK) {
        pa_err("writer", "internal: %s cannot be closed %s: %s", w->path, when, sqlite3_errmsg(w->db));
        sqlite3_close_v2(w->db);
        w->failed = 1;
        rc = -1;
    }
    w->db = NULL;
    w->l.db = NULL;
    return rc;
}

int pa_dbw_suspend(pa_dbw_t *w)
{
    if (!w->db)
        return 0;
    int rc = pa_dbw_commit(w);
    pa_db_exec(w->db, "COMMIT"); /* the transaction the commit opened */
    /* the batch into the main file and the WAL emptied: the next connection's first reader
     * otherwise rebuilds the WAL index from every frame of the WAL (10-50 ms per batch, up to
     * wal_autocheckpoint pages). Without waiting: a reader of the DB holding old frames makes it
     * partial (SQLITE_BUSY), and the next reconnect pays the rebuild once. */
    sqlite3_busy_timeout(w->db, 0);
    if (dbw_ckpt_fits(w->db))
        sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    return dbw_close(w, "between batches") == 0 ? rc : -1;
}

int pa_dbw_release(pa_dbw_t *w)
{
    if (!w->db)
        return 0;
    int rc = pa_dbw_commit(w);
    pa_db_exec(w->db, "COMMIT"); /* the transaction the commit opened */
    /* no checkpoint here: the WAL's frames since the DB thread's last commit go back into the
     * main file in the finisher, while this process ends (NO_CKPT_ON_CLOSE is set) */
    return dbw_close(w, "for the finisher") == 0 ? rc : -1;
}

/* Why SQLite's own locks: a program that reads the DB with its own SQLite (a script, the sqlite3
 * shell) must never read a part of it while the finisher completes it. With locking_mode
 * EXCLUSIVE the connection keeps the EXCLUSIVE lock its BEGIN EXCLUSIVE took across every later
 * commit, the journal's change and the final META, until it closes: every other connection gets
 * SQLITE_BUSY until then (its busy handler waits: Python's 5 s, the shell's .timeout). */
int pa_dbw_take_exclusive(pa_dbw_t *w, int wait_ms, char *why, size_t size)
{
    snprintf(why, size, "it cannot be opened");
    if (w->db || w->failed || pa_dbw_connect(w, 0) != 0) {
        w->failed = 1;
        return -1;
    }
    sqlite3_busy_timeout(w->db, wait_ms);
    if (sqlite3_exec(w->db, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(why, size, "%s", sqlite3_errmsg(w->db));
        pa_detach_sources(w->db);
        sqlite3_close_v2(w->db); /* nothing written: the DB is as the session left it */
        w->db = NULL;
        w->l.db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(w->db, PA_DBW_BUSY_MS);
    w->finisher = 1;
    if (pa_bulk_attach_all(w->db) != 0) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

int pa_dbw_to_rollback(pa_dbw_t *w)
{
    /* The rollback journal under the lock: the rows are written once (WAL: into the WAL, then
     * copied back), and a finisher killed in a transaction leaves a hot journal that the next
     * connection rolls back to the last commit. The switch copies the WAL back first. */
    if (!w->db || pa_db_exec(w->db, "COMMIT") != 0) {
        w->failed = 1;
        return -1;
    }
    sqlite3_stmt *st = NULL;
    int mode_ok = 0;
    /* (the switch checkpoints: not past the file size limit, the DB then stays in WAL) */
    if (dbw_ckpt_fits(w->db) && sqlite3_prepare_v2(w->db, "PRAGMA journal_mode=DELETE", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        mode_ok = strcmp((const char *)sqlite3_column_text(st, 0), "delete") == 0;
    sqlite3_finalize(st);
    if (!mode_ok) /* still WAL, still locked: valid too, only slower */
        pa_dbg("writer", "the finisher's DB stays in WAL mode: %s", sqlite3_errmsg(w->db));
    if (pa_db_exec(w->db, "BEGIN") != 0) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

int pa_dbw_close_file(pa_dbw_t *w)
{
    if (!w->db) {
        w->failed = 1;
        return -1;
    }
    /* everything into the main file (an empty WAL is left): the file alone can then move */
    int rc = pa_bulk_flush_all(w->db); /* (nothing is loaded yet: not counted as a commit) */
    rc |= pa_db_exec(w->db, "COMMIT; PRAGMA wal_checkpoint(TRUNCATE);");
    pa_detach_sources(w->db);
    rc |= sqlite3_close(w->db) != SQLITE_OK;
    w->db = NULL;
    w->l.db = NULL;
    if (rc) {
        pa_err("writer", "cannot close the new DB %s to move it", w->path);
        w->failed = 1;
        return -1;
    }
    return 0;
}

int pa_dbw_moved(pa_dbw_t *w, const char *to)
{
    char *np = strdup(to), side[PATH_MAX + 8];
    if (!np) {
        w->failed = 1;
        return -1;
    }
    snprintf(side, sizeof side, "%s-wal", w->path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", w->path);
    unlink(side);
    free(w->path);
    w->path = np;
    return 0;
}

int pa_dbw_resume(pa_dbw_t *w)
{
    if (w->db)
        return 0;
    if (w->failed || pa_dbw_connect(w, 0) != 0 || pa_bulk_attach_all(w->db) != 0 || pa_db_exec(w->db, "BEGIN") != 0) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

int pa_dbw_meta_text(pa_dbw_t *w, const char *key, const char *value)
{
    return w->db ? pa_meta_set_text(w->db, key, value) : -1;
}

void pa_dbw_record(pa_dbw_t *w, const pa_record_t *rec, const uint8_t *payload)
{
    pa_load_record(&w->l, rec, payload);
    w->nrec++;
}

uint64_t pa_dbw_records(const pa_dbw_t *w)
{
    return w->nrec;
}

int pa_dbw_failed(const pa_dbw_t *w)
{
    return w->failed || w->l.src_failed;
}

int pa_dbw_commit(pa_dbw_t *w)
{
    if (pa_dbw_failed(w) || !w->db)
        return -1;
    int rc = pa_bulk_flush_all(w->db);
    rc |= pa_meta_set_int(w->db, "spool_records_loaded", (int64_t)w->nrec);
    rc |= pa_meta_set_int(w->db, "db_commits", (int64_t)++w->commits);
    rc |= pa_db_exec(w->db, "COMMIT");
    rc |= pa_db_exec(w->db, "BEGIN");
    if (rc)
        w->failed = 1;
    return rc ? -1 : 0;
}

/* The exit part inside the last transaction: strings, threads, counters, the sources'
 * derived tables, summary statistics. */
static int pa_dbw_finish_body(pa_dbw_t *w, int truncated, const pa_session_meta_t *meta,
                              const pa_agg_results_t *res)
{
    sqlite3 *db = w->db;
    pa_load_writer_strings(&w->l);
    int rc = pa_load_finish(&w->l);
    if (w->l.src_failed || w->failed)
        rc = -1;
    rc |= pa_write_meta(db, meta, res);
    rc |= pa_meta_set_int(db, "spool_truncated", truncated);
    rc |= pa_meta_set_int(db, "spool_records_loaded", (int64_t)w->nrec);
    rc |= pa_meta_set_int(db, "db_commits", (int64_t)w->commits);
    if (res) {
        rc |= pa_load_res_threads(db, meta ? meta->pid : 0, res);
        rc |= pa_load_counters(db, res, meta, w->l.unknown_kinds);
    }
    rc |= pa_run_sources(db, 1);
    size_t pending = 0;
    if (res)
        rc |= pa_load_summary(db, res, w->nrec, &pending);
    /* medians left to the first reader (median NULL, medianExact 0 in SUMMARY_STATS) */
    rc |= pa_meta_set_int(db, "medians_pending", (int64_t)pending);
    return rc ? -1 : 0;
}

int pa_dbw_finish(pa_dbw_t *w, int truncated, const pa_session_meta_t *meta, const pa_agg_results_t *res)
{
    if (pa_dbw_resume(w) != 0) {
        free(w->path);
        free(w);
        return -1;
    }
    uint64_t t0 = pa_clock_ns();
    int rc = pa_dbw_finish_body(w, truncated, meta, res);
    uint64_t t1 = pa_clock_ns();
    rc |= pa_db_exec(w->db, "COMMIT");
    uint64_t t2 = pa_clock_ns();
    if (rc == 0) {
        rc |= pa_meta_set_int(w->db, "db_complete", 1);
        rc |= pa_meta_set_int(w->db, "session_complete", meta && meta->complete ? 1 : 0);
        /* the finisher runs detached: no rusage of the application's counts it, the DB does
         * (user + system, to its last commit: the journal's switch back and the close follow) */
        struct rusage ru;
        if (w->finisher && getrusage(RUSAGE_SELF, &ru) == 0)
            rc |= pa_meta_set_int(w->db, "finisher_cpu_ms",
                                  (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                                      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000);
    }
    /* a finished DB is one plain file again (the WAL copied back; a reader that still has it
     * open keeps it in WAL mode, which is valid too); unless the file size limit is below the
     * DB's size: then it stays in WAL, the main file as of its last checkpoint, whole */
    int fits = dbw_ckpt_fits(w->db);
    if (fits)
        sqlite3_db_config(w->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, (int *)NULL);
    if (rc == 0 && fits) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(w->db, "PRAGMA journal_mode=DELETE", -1, &st, NULL) == SQLITE_OK)
            sqlite3_step(st);
        sqlite3_finalize(st);
    }
    if (sqlite3_close(w->db) != SQLITE_OK)
        rc = -1;
    pa_dbg("writer", "exit: tables %.1f ms, commit %.1f ms, WAL -> plain file and close %.1f ms",
           (t1 - t0) / 1e6, (t2 - t1) / 1e6, (pa_clock_ns() - t2) / 1e6);
    free(w->path);
    free(w);
    return rc ? -1 : 0;
}

void pa_dbw_abandon(pa_dbw_t *w)
{
    /* the process is about to end: what is loaded is committed, the rest stays in the spool;
     * the connection is left open (the sources still hold statements on it) */
    if (w && w->db)
        pa_dbw_commit(w);
}

int pa_writer_write_db(const char *db_path, const char *spool_path, const pa_session_meta_t *meta,
                       const pa_agg_results_t *res)
{
    if (!db_path || pa_create_exclusive(db_path) != 0)
        return -1;
    return pa_writer_fill_db(db_path, spool_path, meta, res);
}

int pa_writer_fill_db(const char *db_path, const char *spool_path, const pa_session_meta_t *meta,
                      const pa_agg_results_t *res)
{
    struct stat st;
    uint64_t size = spool_path && stat(spool_path, &st) == 0 ? (uint64_t)st.st_size : 0;
    pa_dbw_t *w = pa_dbw_create(db_path, pa_writer_page_size(size), 0, meta);
    if (!w) {
        pa_err("writer", "cannot build the DB %s: %s", db_path, create_err);
        return -1;
    }
    uint64_t nrec = 0;
    int truncated = pa_load_spool(&w->l, spool_path, &nrec);
    w->nrec = nrec;
    return pa_dbw_finish(w, truncated, meta, res);
}
