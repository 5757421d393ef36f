/* report_pccl.c - collective reports from kernels and HGTX stages (spec 2.3.15 "PCCL transfer
 * stages" pccl_stage_sum, 2.3.18 "PCCL desynchronization trace" pccl_desync_trace, 2.3.19 "PCCL
 * desynchronization summary" pccl_desync_summary); works on one DB or a merge of several. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report_util.h"
#include "writer_pccl.h"
#include "writer_proj.h"
#include "../common/pa_stddev.h"

size_t pa_pccl_group(const pa_pccl_exec_t *v, size_t n, size_t *first)
{
    size_t ng = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        int64_t max_end = v[i].end;
        for (; j < n && v[j].start < max_end; j++) {
            int repeat = 0;
            for (size_t k = i; k < j && !repeat; k++)
                repeat = v[k].pid == v[j].pid && v[k].dev == v[j].dev;
            if (repeat)
                break;
            if (v[j].end > max_end)
                max_end = v[j].end;
        }
        first[ng++] = i;
        i = j;
    }
    first[ng] = n;
    return ng;
}

/* ---- names: an arena of distinct strings, indexed ---- */

typedef struct names { char **v; size_t n, cap; } names_t;

static size_t names_add(names_t *s, const char *p, size_t len, int *oom)
{
    if (s->n && strlen(s->v[s->n - 1]) == len && memcmp(s->v[s->n - 1], p, len) == 0)
        return s->n - 1;  /* consecutive repeats are the common case */
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        char **nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) {
            *oom = 1;
            return 0;
        }
        s->v = nv;
        s->cap = nc;
    }
    char *c = malloc(len + 1);
    if (!c) {
        *oom = 1;
        return 0;
    }
    memcpy(c, p, len);
    c[len] = '\0';
    s->v[s->n] = c;
    return s->n++;
}

static void names_free(names_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

/* ---- collective kernels and their communications ---- */

typedef struct comm {
    int64_t start, dur, overlap, last_pid, last_dev, last_id, max_ns, min_ns;
    double avg_ns, rate;
    size_t count, name;
} comm_t;

typedef struct kset {
    pa_pccl_exec_t *v; size_t n, cap;
    names_t names;
    comm_t *c; size_t nc;
} kset_t;

static void kset_free(kset_t *k)
{
    free(k->v);
    free(k->c);
    names_free(&k->names);
}

static const char *ccl_re(const pa_report_req_t *req)
{
    const pa_opt_val_t *v = pa_req_opt(req, "ccl");
    return v && v->set ? v->s : PA_PCCL_DEFAULT_RE;
}

static int load_kernels(sqlite3 *db, const pa_report_req_t *req, kset_t *k, char *err, size_t errsz)
{
    char sql[2048], kn[512], dev[1024] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    const pa_opt_val_t *hn = pa_req_opt(req, "hgtx-name");
    snprintf(sql, sizeof sql,
             "SELECT o.start, o.end, o.tid >> 32, o.deviceId, o.corrId, %s FROM ZE_OPS o"
             " JOIN STRING_IDS s ON s.id = o.nameId WHERE o.kind = 1 AND o.end >= o.start"
             " AND (ze_kname(s.value, 0) REGEXP ?1 OR s.value REGEXP ?1)%s"
             " ORDER BY o.start, o.end, o.tid >> 32, o.deviceId, o.rowid",
             pa_proj_kname_sql(hn && hn->set, pa_report_name_mode(req), kn, sizeof kn), dev);
    sqlite3_stmt *st;
    int rc = pa_report_prepare_ze(db, req, sql, &st, err, errsz);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, ccl_re(req), -1, SQLITE_STATIC);
    int oom = 0;
    while (!oom && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (k->n == k->cap) {
            size_t nc = k->cap ? k->cap * 2 : 256;
            pa_pccl_exec_t *nv = realloc(k->v, nc * sizeof *nv);
            if (!nv) {
                oom = 1;
                break;
            }
            k->v = nv;
            k->cap = nc;
        }
        pa_pccl_exec_t *e = &k->v[k->n++];
        e->start = sqlite3_column_int64(st, 0);
        e->end = sqlite3_column_int64(st, 1);
        e->pid = sqlite3_column_int64(st, 2);
        e->dev = sqlite3_column_int64(st, 3);
        e->id = sqlite3_column_int64(st, 4);
        e->ns = e->end - e->start;
        const char *nm = (const char *)sqlite3_column_blob(st, 5);
        e->name = names_add(&k->names, nm ? nm : "", nm ? (size_t)sqlite3_column_bytes(st, 5) : 0, &oom);
    }
    if (oom) {
        sqlite3_finalize(st);
        snprintf(err, errsz, "report '%s': out of memory", req->def->name);
        return PA_REP_EDATA;
    }
    if (rc != SQLITE_DONE)
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    sqlite3_finalize(st);
    return PA_REP_OK;
}

/* Spec 2.3.18: Overlap = the time all kernels of the communication run at once (latest start
 * to earliest end, 0 if negative), Duration = first start to last end, Desync Rate =
 * (Duration - Overlap) / Duration; Last = the kernel that started last. */
static int make_comms(kset_t *k)
{
    size_t *first = malloc((k->n + 1) * sizeof *first);
    k->c = calloc(k->n ? k->n : 1, sizeof *k->c);
    if (!first || !k->c) {
        free(first);
        return -1;
    }
    k->nc = pa_pccl_group(k->v, k->n, first);
    for (size_t g = 0; g < k->nc; g++) {
        comm_t *c = &k->c[g];
        const pa_pccl_exec_t *a = &k->v[first[g]];
        int64_t end = a->end, min_end = a->end, last_start = a->start, sum = 0;
        size_t last = first[g];
        c->max_ns = c->min_ns = a->ns;
        for (size_t i = first[g]; i < first[g + 1]; i++) {
            const pa_pccl_exec_t *e = &k->v[i];
            end = e->end > end ? e->end : end;
            min_end = e->end < min_end ? e->end : min_end;
            if (e->start >= last_start) {
                last_start = e->start;
                last = i;
            }
            c->max_ns = e->ns > c->max_ns ? e->ns : c->max_ns;
            c->min_ns = e->ns < c->min_ns ? e->ns : c->min_ns;
            sum += e->ns;
        }
        c->count = first[g + 1] - first[g];
        c->start = a->start;
        c->dur = end - a->start;
        c->overlap = min_end > last_start ? min_end - last_start : 0;
        c->rate = c->dur > 0 ? 100.0 * (double)(c->dur - c->overlap) / (double)c->dur : 0.0;
        c->last_pid = k->v[last].pid;
        c->last_dev = k->v[last].dev;
        c->last_id = k->v[last].id;
        c->avg_ns = (double)sum / (double)c->count;
        c->name = a->name;
    }
    free(first);
    return 0;
}

static int load_comms(sqlite3 *db, const pa_report_req_t *req, kset_t *k, char *err, size_t errsz)
{
    int rc = load_kernels(db, req, k, err, errsz);
    if (rc == PA_REP_OK && make_comms(k) != 0) {
        snprintf(err, errsz, "report '%s': out of memory", req->def->name);
        rc = PA_REP_EDATA;
    }
    return rc;
}

static int comm_by_rate(const void *x, const void *y)
{
    const comm_t *a = x, *b = y;
    if (a->rate != b->rate)
        return a->rate > b->rate ? -1 : 1;
    return a->start < b->start ? -1 : a->start > b->start;
}

static const pa_report_opt_t opts_desync[] = {PA_PROJ_OPT_HGTX_NAME, PA_REPORT_OPT_BASE, PA_REPORT_OPT_MANGLED,
                                              PA_REPORT_OPT_DEVICE, PA_PCCL_OPT_CCL};

static const pa_report_col_t cols_trace[] = {
    {"Start (ns)", "Start of the communication (its first kernel's start)"},
    {"Duration (ns)", "First kernel start to last kernel end"},
    {"Overlap (ns)", "Time during which all kernels of the communication run at once"},
    {"Desync Rate (%)", "(Duration - Overlap) / Duration"},
    {"Last Process", "Process id of the kernel that started last"},
    {"Last Device", "Device id of the kernel that started last"},
    {"Last Kernel", "Correlation id of the kernel that started last (with Last Process: unique)"},
    {"Max Duration (ns)", "Longest kernel of the communication"},
    {"Min Duration (ns)", "Shortest kernel of the communication"},
    {"Avg Duration (ns)", "Average kernel duration of the communication"},
    {"Instances", "Number of kernels in the communication"},
    {"Kernel Name", "Name of the collective kernel (the communication's first kernel)"},
};

static int produce_trace(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    kset_t k = {0};
    int rc = load_comms(db, req, &k, err, errsz);
    if (rc == PA_REP_OK) {
        qsort(k.c, k.nc, sizeof *k.c, comm_by_rate);
        for (size_t g = 0; g < k.nc; g++) {
            const comm_t *c = &k.c[g];
            pa_table_add_int(t, c->start);
            pa_table_add_int(t, c->dur);
            pa_table_add_int(t, c->overlap);
            pa_table_add_double(t, c->rate, 1);
            pa_table_add_int(t, c->last_pid);
            pa_table_add_int(t, c->last_dev);
            pa_table_add_int(t, c->last_id);
            pa_table_add_int(t, c->max_ns);
            pa_table_add_int(t, c->min_ns);
            pa_table_add_double(t, c->avg_ns, 0);
            pa_table_add_int(t, (int64_t)c->count);
            const char *nm = k.names.v[c->name];
            pa_table_add_str(t, nm, strlen(nm));
        }
    }
    kset_free(&k);
    return rc;
}

/* ---- pccl_desync_summary ---- */

static const pa_report_col_t cols_summary[] = {
    {"Time (%)", "Total Duration as a percentage of the report's Total Duration"},
    {"Count", "Number of communications of this kernel"},
    {"Desync Avg (%)", "Average desynchronization rate of its communications"},
    {"Desync Med (%)", "Median desynchronization rate"},
    {"Desync Min (%)", "Minimum desynchronization rate"},
    {"Desync Max (%)", "Maximum desynchronization rate"},
    {"Desync StdDev (%)", "Population standard deviation of the desynchronization rates"},
    {"Total Duration (ns)", "Sum of the Durations of its communications"},
    {"Total Overlap (ns)", "Sum of the Overlaps of its communications"},
    {"Kernel Name", "Name of the collective kernel"},
};

static int comm_by_name(const void *x, const void *y)
{
    const comm_t *a = x, *b = y;
    if (a->name != b->name)
        return a->name < b->name ? -1 : 1;
    return a->rate < b->rate ? -1 : a->rate > b->rate;
}

typedef struct sum_row { size_t i, j; int64_t total, overlap; const char *name; } sum_row_t;

static int row_by_total(const void *x, const void *y)
{
    const sum_row_t *a = x, *b = y;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int produce_summary(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    kset_t k = {0};
    int rc = load_comms(db, req, &k, err, errsz);
    sum_row_t *rows = rc == PA_REP_OK ? malloc((k.nc ? k.nc : 1) * sizeof *rows) : NULL;
    if (rc == PA_REP_OK && !rows) {
        snprintf(err, errsz, "report '%s': out of memory", req->def->name);
        rc = PA_REP_EDATA;
    }
    if (rc == PA_REP_OK) {
        /* name indexes are distinct per distinct consecutive name only: merge equal strings */
        for (size_t g = 0; g < k.nc; g++)
            for (size_t h = 0; h < k.c[g].name; h++)
                if (strcmp(k.names.v[h], k.names.v[k.c[g].name]) == 0) {
                    k.c[g].name = h;
                    break;
                }
        qsort(k.c, k.nc, sizeof *k.c, comm_by_name);
        size_t nr = 0;
        int64_t all = 0;
        for (size_t i = 0; i < k.nc;) {
            size_t j = i;
            sum_row_t *r = &rows[nr++];
            r->total = r->overlap = 0;
            for (; j < k.nc && k.c[j].name == k.c[i].name; j++) {
                r->total += k.c[j].dur;
                r->overlap += k.c[j].overlap;
            }
            r->i = i;
            r->j = j;
            r->name = k.names.v[k.c[i].name];
            all += r->total;
            i = j;
        }
        qsort(rows, nr, sizeof *rows, row_by_total);
        for (size_t r = 0; r < nr; r++) {
            const comm_t *c = &k.c[rows[r].i];
            size_t n = rows[r].j - rows[r].i;
            double mean = 0, m2 = 0;
            for (size_t q = 0; q < n; q++)
                mean += c[q].rate;
            mean /= (double)n;
            for (size_t q = 0; q < n; q++)
                m2 += (c[q].rate - mean) * (c[q].rate - mean);
            double med = n % 2 ? c[n / 2].rate : (c[n / 2 - 1].rate + c[n / 2].rate) / 2; /* sorted by rate */
            pa_table_add_double(t, all ? 100.0 * (double)rows[r].total / (double)all : 0, 1);
            pa_table_add_int(t, (int64_t)n);
            pa_table_add_double(t, mean, 1);
            pa_table_add_double(t, med, 1);
            pa_table_add_double(t, c[0].rate, 1);
            pa_table_add_double(t, c[n - 1].rate, 1);
            pa_table_add_double(t, pa_stddev_pop(n, m2), 1);
            pa_table_add_int(t, rows[r].total);
            pa_table_add_int(t, rows[r].overlap);
            pa_table_add_str(t, rows[r].name, strlen(rows[r].name));
        }
    }
    free(rows);
    kset_free(&k);
    return rc;
}

#define DESC_COMM \
    "Collective kernels: kernels whose name matches ccl= (default: oneCCL's kernels and allreduce_*).\n" \
    "A communication is a run of them, in start order, each starting before the latest end so far,\n" \
    "with no device of a process twice (that device's next collective starts the next communication):\n" \
    "across devices and processes, so a DB of one process with several devices and a merge of the\n" \
    "ranks' DBs (profagent merge) give the same communications. Overlap = earliest end - latest start\n" \
    "(0 when negative), Duration = last end - first start, Desync Rate = (Duration - Overlap) / Duration\n" \
    "(spec 2.3.18). docs/collectives.md.\n"

PA_REPORT_DEF(r_desync_trace, "pccl_desync_trace", "PCCL Desynchronization Trace", NULL, NULL,
    "One row per communication of collective kernels, sorted by Desync Rate (descending), then Start\n"
    "(spec 2.3.18).\n" DESC_COMM
    "Last Process/Device/Kernel: the kernel that started last (the rank everybody waited for).",
    opts_desync, cols_trace, produce_trace);

PA_REPORT_DEF(r_desync_summary, "pccl_desync_summary", "PCCL Desynchronization Summary", NULL, NULL,
    "Communications of collective kernels aggregated by kernel name, sorted by Total Duration\n"
    "(descending) (spec 2.3.19).\n" DESC_COMM
    "Desync statistics are over the communications' rates (population StdDev; median of an even count =\n"
    "mean of the two middle rates).",
    opts_desync, cols_summary, produce_summary);

/* ---- pccl_stage_sum (2.3.15) ---- */

/* "<stage>, ch:<channel>, <RX|TX>" -> stage length, channel, direction (0 RX, 1 TX); -1 when the
 * name does not follow the convention. */
static int stage_parse(const char *s, size_t len, size_t *stage_len, int64_t *ch, int *tx)
{
    const char *c1 = memchr(s, ',', len);
    if (!c1 || c1 == s)
        return -1;
    *stage_len = (size_t)(c1 - s);
    int have_ch = 0, have_dir = 0;
    for (const char *p = c1 + 1, *end = s + len; p < end;) {
        while (p < end && *p == ' ')
            p++;
        const char *q = memchr(p, ',', (size_t)(end - p));
        size_t n = q ? (size_t)(q - p) : (size_t)(end - p);
        while (n && p[n - 1] == ' ')
            n--;
        if (n > 3 && strncmp(p, "ch:", 3) == 0) {
            int64_t v = 0;
            for (size_t i = 3; i < n; i++) {
                if (p[i] < '0' || p[i] > '9' || v > 100000000)
                    return -1;
                v = v * 10 + (p[i] - '0');
            }
            *ch = v;
            have_ch = 1;
        } else if (n == 2 && (strncasecmp(p, "RX", 2) == 0 || strncasecmp(p, "TX", 2) == 0)) {
            *tx = (p[0] == 'T' || p[0] == 't');
            have_dir = 1;
        } else {
            return -1;
        }
        p = q ? q + 1 : end;
    }
    return have_ch && have_dir ? 0 : -1;
}

typedef struct stage { int64_t pid, dev, tid, ch, dur, gtid, start, end; int tx; size_t name; } stage_t;

static names_t *g_stage_names; /* for the qsort comparator: the names being sorted */

static int stage_key_cmp(const stage_t *a, const stage_t *b)
{
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->ch != b->ch) return a->ch < b->ch ? -1 : 1;
    if (a->tx != b->tx) return a->tx - b->tx;
    return strcmp(g_stage_names->v[a->name], g_stage_names->v[b->name]);
}

static int stage_cmp(const void *x, const void *y)
{
    const stage_t *a = x, *b = y;
    int c = stage_key_cmp(a, b);
    return c ? c : (a->dur < b->dur ? -1 : a->dur > b->dur);
}

typedef struct stage_row { size_t i, j; int64_t total; } stage_row_t;
static const stage_t *g_stages;

static int stage_row_cmp(const void *x, const void *y)
{
    const stage_row_t *a = x, *b = y;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return stage_key_cmp(&g_stages[a->i], &g_stages[b->i]);
}

static const pa_report_col_t cols_stage[] = {
    {"PID", "Process id"},
    {"Device ID", "Device of the collective work: the device of the kernels of the stage range or of the "
                  "innermost range around it on its thread that has kernels; '-' when none"},
    {"TID", "Thread id"},
    {"Channel ID", "Channel id (ch:<id> of the stage name)"},
    {"Channel Type", "RX or TX"},
    {"Name", "Stage name"},
    {"Total Time (ns)", "Sum of the stage's durations"},
    {"Instances", "Number of stage ranges"},
    {"Avg (ns)", "Average stage duration"},
    {"Med (ns)", "Median stage duration"},
    {"Min (ns)", "Minimum stage duration"},
    {"Max (ns)", "Maximum stage duration"},
    {"Stdev (ns)", "Population standard deviation of the stage durations"},
};

/* stages in (thread, start) order; ranges with kernels (candidates for a stage's device) likewise,
 * each with the device of its first kernel */
#define STAGE_SQL \
    "SELECT r.globalTid, n.value, r.start, r.end FROM HGTX_RANGES r JOIN STRING_IDS n ON n.id = r.nameId" \
    " JOIN STRING_IDS d ON d.id = r.domainId WHERE r.domainId != 0 AND d.value = 'PCCL' AND r.unterminated = 0" \
    " ORDER BY r.globalTid, r.start, r.id"
#define CAND_SQL \
    "SELECT p.globalTid, p.start, p.end, p.id, (SELECT o.deviceId FROM HGTX_OP_ASSOC x JOIN ZE_OPS o" \
    " ON o.rowid = x.opId WHERE x.rangeId = p.id AND o.kind = 1 ORDER BY o.start, o.rowid LIMIT 1) AS dev" \
    " FROM HGTX_RANGES p WHERE p.unterminated = 0 AND dev IS NOT NULL ORDER BY p.globalTid, p.start, p.id"

typedef struct cand { int64_t gtid, start, end, id, dev; } cand_t;

/* Device of each stage (v in (thread, start) order): the range of its thread with kernels that
 * holds it (itself included) and started last, by one sweep with the set of candidates open at
 * the stage's start (pruned as they end: a range that ended before a stage starts holds no later
 * stage). Returns 0, or -1 when out of memory. */
static int stage_devices(sqlite3 *db, stage_t *v, size_t n)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, CAND_SQL, -1, &st, NULL) != SQLITE_OK)
        return 0; /* no projection in this DB: every device '-' */
    cand_t *act = NULL, next;
    size_t nact = 0, cap = 0;
    int have = sqlite3_step(st) == SQLITE_ROW, rc = 0;
    int64_t cur_gtid = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        stage_t *s = &v[i];
        if (s->gtid != cur_gtid) {
            cur_gtid = s->gtid;
            nact = 0;
        }
        while (have) {
            next = (cand_t){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                            sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4)};
            if (next.gtid > s->gtid || (next.gtid == s->gtid && next.start > s->start))
                break;
            if (next.gtid == s->gtid) {
                if (nact == cap) {
                    cap = cap ? cap * 2 : 16;
                    cand_t *na = realloc(act, cap * sizeof *na);
                    if (!na) {
                        rc = -1;
                        have = 0;
                        break;
                    }
                    act = na;
                }
                act[nact++] = next;
            }
            have = sqlite3_step(st) == SQLITE_ROW;
        }
        size_t k = 0;
        const cand_t *best = NULL;
        for (size_t j = 0; j < nact; j++) {
            if (act[j].end < s->start)
                continue;
            act[k++] = act[j];
        }
        nact = k;
        for (size_t j = 0; j < nact; j++)
            if (act[j].end >= s->end && (!best || act[j].start > best->start ||
                                         (act[j].start == best->start && act[j].id > best->id)))
                best = &act[j];
        s->dev = best ? best->dev : -1;
    }
    sqlite3_finalize(st);
    free(act);
    return rc;
}

static int has_table(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    return found;
}

static int produce_stage(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    int ze = has_table(db, "ZE_OPS") && has_table(db, "HGTX_OP_ASSOC");
    sqlite3_stmt *st;
    int rc = pa_report_prepare(db, STAGE_SQL, &st, req->def->name, err, errsz);
    if (rc)
        return rc;
    stage_t *v = NULL;
    size_t n = 0, cap = 0;
    names_t names = {0};
    int oom = 0;
    while (!oom && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *nm = (const char *)sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1), sl;
        stage_t s;
        if (!nm || stage_parse(nm, len, &sl, &s.ch, &s.tx) != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            stage_t *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                oom = 1;
                break;
            }
            v = nv;
        }
        int64_t gtid = sqlite3_column_int64(st, 0);
        s.pid = gtid >> 32;
        s.tid = gtid & 0xffffffffll;
        s.gtid = gtid;
        s.start = sqlite3_column_int64(st, 2);
        s.end = sqlite3_column_int64(st, 3);
        s.dur = s.end - s.start;
        s.dev = -1;
        s.name = names_add(&names, nm, sl, &oom);
        v[n++] = s;
    }
    if (!oom && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        free(v);
        names_free(&names);
        return pa_report_step_error(db, st, req->def->name, err, errsz);
    }
    sqlite3_finalize(st);
    if (!oom && ze && stage_devices(db, v, n) != 0)
        oom = 1;
    stage_row_t *rows = malloc((n ? n : 1) * sizeof *rows);
    if (oom || !rows) {
        free(v);
        free(rows);
        names_free(&names);
        snprintf(err, errsz, "report '%s': out of memory", req->def->name);
        return PA_REP_EDATA;
    }
    g_stage_names = &names;
    if (n)
        qsort(v, n, sizeof *v, stage_cmp);
    size_t nr = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int64_t total = 0;
        for (; j < n && stage_key_cmp(&v[i], &v[j]) == 0; j++)
            total += v[j].dur;
        rows[nr++] = (stage_row_t){i, j, total};
        i = j;
    }
    g_stages = v;
    qsort(rows, nr, sizeof *rows, stage_row_cmp);
    for (size_t r = 0; r < nr; r++) {
        const stage_t *a = &v[rows[r].i];
        size_t cnt = rows[r].j - rows[r].i;
        double mean = (double)rows[r].total / (double)cnt, m2 = 0;
        for (size_t q = 0; q < cnt; q++)
            m2 += ((double)a[q].dur - mean) * ((double)a[q].dur - mean);
        pa_table_add_int(t, a->pid);
        if (a->dev < 0)
            pa_table_add_none(t);
        else
            pa_table_add_int(t, a->dev);
        pa_table_add_int(t, a->tid);
        pa_table_add_int(t, a->ch);
        pa_table_add_str(t, a->tx ? "TX" : "RX", 2);
        const char *nm = names.v[a->name];
        pa_table_add_str(t, nm, strlen(nm));
        pa_table_add_int(t, rows[r].total);
        pa_table_add_int(t, (int64_t)cnt);
        pa_table_add_double(t, mean, 0);
        pa_table_add_double(t, cnt % 2 ? (double)a[cnt / 2].dur : ((double)a[cnt / 2 - 1].dur + (double)a[cnt / 2].dur) / 2, 0);
        pa_table_add_int(t, a[0].dur);
        pa_table_add_int(t, a[cnt - 1].dur);
        pa_table_add_double(t, pa_stddev_pop(cnt, m2), 0);
    }
    g_stage_names = NULL;
    g_stages = NULL;
    free(rows);
    free(v);
    names_free(&names);
    return PA_REP_OK;
}

static const pa_report_opt_t opts_stage[] = {{"rows", PA_OPT_INT, "<limit>", PA_REPORT_ROWS_HELP, NULL}};

PA_REPORT_DEF(r_stage_sum, "pccl_stage_sum", "PCCL Transfer Stages", NULL, NULL,
    "Transfer stages of a collective library, per process, device, thread, channel, direction and\n"
    "stage, sorted by Total Time (descending) (spec 2.3.15). A stage is an HGTX range (push/pop or\n"
    "start/end; ranges open at exit left out) in the domain \"PCCL\" named \"<stage>, ch:<channel>, RX\"\n"
    "or \"..., TX\" (include/profagent/hgtx.h: hgtxPcclStageName()); other ranges of the domain are\n"
    "not stages. docs/collectives.md.",
    opts_stage, cols_stage, produce_stage);

extern const pa_report_def_t pa_report_pccl_op_sum; /* report_pccl_op.c */

const pa_report_def_t *const pa_reports_pccl[] = {&r_stage_sum, &r_desync_trace, &r_desync_summary,
                                                  &pa_report_pccl_op_sum, NULL};
