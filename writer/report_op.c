/* report_op.c - operator summaries (spec 2.3.21 "PPU operator summary" ppu_op_sum, 2.3.22 "MoE
 * operator summary" moe_op_sum): operator ranges grouped by type and parameters, each instance's
 * time the sum of its kernels' device times (HGTX_OP_ASSOC), utilization from its workload. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report_util.h"
#include "writer_op.h"
#include "../common/pa_stddev.h"

#define OPT_RANGE {"range", PA_OPT_REGEX, "<regex_filter>", "Perl-compatible regular expression (PCRE2): only kernels inside an HGTX range\nwhose name matches (the operator's own range or one around it) count.\nDefault is all ranges.", NULL}
#define OPT_NOGRAPH {"no-graph-mapping", PA_OPT_FLAG, "", "Do not map HGTX ranges open when a regular command list (graph) was\nrecorded to its executions: an executed list's kernels then belong only\nto the operators open around zeCommandQueueExecuteCommandLists.", NULL}
#define OPT_OP {"op", PA_OPT_REGEX, "<operator_filter>", "Operator types to include, separated by '/' (case-insensitive): MoE,\nACBLAS, FMHA, a collective (AllReduce, AllGather, ReduceScatter, Broadcast,\nReduce, AllToAll, Send, Recv) or PCCL for all of them, a oneDNN primitive\nkind (matmul, convolution, ...); 'others' adds the kernels outside every\noperator, by kernel name, with type Kernel. Default is all operator types.", NULL}
#define OPT_NM_PD {"no-merge-fmha-prefill-decode-operator", PA_OPT_FLAG, "", "Do not merge a decode FMHA operator into the prefill FMHA operator that\nprecedes it on the same thread.", NULL}
#define OPT_NM_FMHA {"no-merge-fmha-parameter", PA_OPT_FLAG, "", "Keep FMHA operators apart that differ only in num_blocks, cu_seqlens_q\nor seqlens_k.", NULL}
#define OPT_NM_PCCL {"no-merge-pccl-parameter", PA_OPT_FLAG, "", "Keep collective operators apart that differ only in their buffers (b:).", NULL}
#define OPT_NM_MOE {"no-merge-moe-parameter", PA_OPT_FLAG, "", "Keep MoE operators apart that differ only in their expert ids (topkids[...]).", NULL}

static const pa_report_opt_t opts_ppu[] = {PA_REPORT_OPT_DEVICE, OPT_RANGE, OPT_OP, OPT_NOGRAPH, OPT_NM_PD,
                                           OPT_NM_FMHA, OPT_NM_PCCL, OPT_NM_MOE};
static const pa_report_opt_t opts_moe[] = {PA_REPORT_OPT_DEVICE, OPT_RANGE, OPT_NOGRAPH, OPT_NM_MOE};

static int flag(const pa_report_req_t *req, const char *name)
{
    const pa_opt_val_t *v = pa_req_opt(req, name);
    return v && v->set;
}

/* ---- device peaks (docs/operators.md) ---- */

typedef struct peak { int64_t dev; double flops, bytes; } peak_t; /* per s; <= 0 unknown */
typedef struct peaks { peak_t *v; size_t n; } peaks_t;

static int has_column(sqlite3 *db, const char *table, const char *col)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('%s') WHERE name = '%s'", table, col);
    sqlite3_stmt *st;
    int found = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        found = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    return found;
}

/* compute: XVE count x SIMD width x 2 (FMA) x core clock; memory: clock x bus width / 8 */
static void peaks_load(sqlite3 *db, peaks_t *p)
{
    p->v = NULL;
    p->n = 0;
    if (!has_column(db, "ZE_DEVICES", "deviceId"))
        return;
    int full = has_column(db, "ZE_DEVICES", "simdWidth");
    const char *sql = full ? "SELECT deviceId, cuCount, simdWidth, cuClockHz, memClockHz, memBusWidth FROM ZE_DEVICES"
                           : "SELECT deviceId, cuCount, 0, cuClockHz, memClockHz, 0 FROM ZE_DEVICES";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        peak_t *nv = realloc(p->v, (p->n + 1) * sizeof *nv);
        if (!nv)
            break;
        p->v = nv;
        peak_t *k = &p->v[p->n++];
        k->dev = sqlite3_column_int64(st, 0);
        k->flops = (double)sqlite3_column_int64(st, 1) * (double)sqlite3_column_int64(st, 2) * 2.0 *
                   (double)sqlite3_column_int64(st, 3);
        k->bytes = (double)sqlite3_column_int64(st, 4) * (double)sqlite3_column_int64(st, 5) / 8.0;
    }
    sqlite3_finalize(st);
}

static const peak_t *peak_of(const peaks_t *p, int64_t dev)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].dev == dev)
            return &p->v[i];
    return NULL;
}

/* ---- operator instances ---- */

/* Utilization accumulator: sum of workload over sum of peak x time, per instance. */
typedef struct util { double work[3], denom[3]; int unknown[3]; } util_t;

static void util_add(util_t *u, const pa_op_work_t *w, const peak_t *pk, int64_t ns)
{
    double v[3] = {w->flops, w->load_bytes, w->store_bytes};
    double peak[3] = {pk ? pk->flops : 0, pk ? pk->bytes : 0, pk ? pk->bytes : 0};
    for (int i = 0; i < 3; i++) {
        if (v[i] < 0 || peak[i] <= 0 || ns <= 0) {
            u->unknown[i] = 1;
            continue;
        }
        u->work[i] += v[i];
        u->denom[i] += peak[i] * (double)ns * 1e-9;
    }
}

static void util_cell(pa_table_t *t, const util_t *u, int i)
{
    if (u->unknown[i] || u->denom[i] <= 0)
        pa_table_add_none(t);
    else
        pa_table_add_double(t, 100.0 * u->work[i] / u->denom[i], 1);
}

typedef struct op_inst {
    int64_t rid, start, gtid, dev;
    int64_t ns, gemm_ns[2];
    int ngemm;
    pa_op_info_t info;
    char *name;        /* the range name (without domain) */
    int merged_into;   /* FMHA decode merged into a prefill: 1 (skipped as an instance) */
    pa_op_work_t extra; /* FMHA: workload of the merged decode part */
    int64_t extra_ns;
    char *pair_key;    /* FMHA prefill + decode: the combined key */
} op_inst_t;

typedef struct op_set { op_inst_t *v; size_t n, cap; int64_t *kern; size_t nkern, kcap; } op_set_t;

static void op_set_free(op_set_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        pa_op_info_free(&s->v[i].info);
        free(s->v[i].name);
        free(s->v[i].pair_key);
    }
    free(s->v);
    free(s->kern);
}

static const char *how_in(const pa_report_req_t *req)
{
    return flag(req, "no-graph-mapping") ? "(0,2)" : "(0,1,2)";
}

static int is_gemm_kernel(const char *k)
{
    for (const char *p = k; *p; p++)
        if (strncasecmp(p, "gemm", 4) == 0)
            return 1;
    return 0;
}

/* pa_op_scan_t callbacks: a range's instance, then each of its kernels (columns of collect()). */
static void inst_begin(void *ctx, void *inst, sqlite3_stmt *st, pa_op_info_t *info, char *name)
{
    (void)ctx;
    op_inst_t *cur = inst;
    cur->rid = sqlite3_column_int64(st, 0);
    cur->info = *info;
    cur->name = name;
    cur->start = sqlite3_column_int64(st, 3);
    cur->gtid = sqlite3_column_int64(st, 4);
    cur->dev = sqlite3_column_int64(st, 8);
}

static int inst_row(void *ctx, void *inst, sqlite3_stmt *st)
{
    op_set_t *s = ctx;
    op_inst_t *cur = inst;
    int64_t ns = sqlite3_column_int64(st, 7);
    if (ns < 0)
        ns = 0;
    cur->ns += ns;
    const char *kn = (const char *)sqlite3_column_text(st, 9);
    if (kn && is_gemm_kernel(kn) && cur->ngemm < 2)
        cur->gemm_ns[cur->ngemm++] = ns;
    if (s->nkern == s->kcap) {
        size_t nc = s->kcap ? s->kcap * 2 : 256;
        int64_t *nk = realloc(s->kern, nc * sizeof *nk);
        if (!nk)
            return -1;
        s->kern = nk;
        s->kcap = nc;
    }
    s->kern[s->nkern++] = sqlite3_column_int64(st, 5);
    return 0;
}

/* (operator range, kernel) pairs in range then kernel start order; ranges that are no operator
 * are skipped after one parse. Kernels of operators are collected in s->kern (for op=others). */
static int collect(sqlite3 *db, const pa_report_req_t *req, const pa_op_merge_t *mg, op_set_t *s, char *err,
                   size_t errsz)
{
    char sql[4096], dev[1024] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    snprintf(sql, sizeof sql,
        "SELECT DISTINCT r.id, n.value, coalesce(d.value, ''), r.start, r.globalTid, o.rowid, o.start,"
        " o.end - o.start, o.deviceId, ze_kname(k.value, 1) FROM HGTX_OP_ASSOC x"
        " JOIN HGTX_RANGES r ON r.id = x.rangeId JOIN STRING_IDS n ON n.id = r.nameId"
        " LEFT JOIN STRING_IDS d ON d.id = r.domainId AND r.domainId != 0"
        " JOIN ZE_OPS o ON o.rowid = x.opId LEFT JOIN STRING_IDS k ON k.id = o.nameId"
        " WHERE o.kind = 1 AND r.unterminated = 0 AND x.how IN %s%s"
        " AND (?1 IS NULL OR EXISTS (SELECT 1 FROM HGTX_OP_ASSOC y JOIN HGTX_RANGES_NAMED q ON q.id = y.rangeId"
        "  WHERE y.opId = o.rowid AND y.how IN %s AND q.name REGEXP ?1))"
        " ORDER BY r.id, o.start, o.rowid",
        how_in(req), dev, how_in(req));
    sqlite3_stmt *st;
    int rc = pa_report_prepare_ze(db, req, sql, &st, err, errsz);
    if (rc)
        return rc;
    const pa_opt_val_t *re = pa_req_opt(req, "range");
    if (re && re->set)
        sqlite3_bind_text(st, 1, re->s, -1, SQLITE_STATIC);
    pa_op_scan_t sc = {.mg = mg, .family = PA_OP_NONE, .v = (void **)&s->v, .n = &s->n, .cap = &s->cap,
                       .elem = sizeof *s->v, .begin = inst_begin, .row = inst_row, .ctx = s};
    return pa_op_scan_rows(db, st, &sc, req->def->name, err, errsz);
}

static int inst_by_thread_start(const void *x, const void *y)
{
    const op_inst_t *a = *(op_inst_t *const *)x, *b = *(op_inst_t *const *)y;
    if (a->gtid != b->gtid)
        return a->gtid < b->gtid ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->rid < b->rid ? -1 : a->rid > b->rid;
}

static void work_add(pa_op_work_t *a, const pa_op_work_t *b)
{
    a->flops = a->flops < 0 || b->flops < 0 ? -1 : a->flops + b->flops;
    a->load_bytes = a->load_bytes < 0 || b->load_bytes < 0 ? -1 : a->load_bytes + b->load_bytes;
    a->store_bytes = a->store_bytes < 0 || b->store_bytes < 0 ? -1 : a->store_bytes + b->store_bytes;
}

/* Default FMHA rule: a decode instance that directly follows a prefill instance on the same
 * thread (no other FMHA operator in between) with the same heads and data type is the second
 * half of that prefill's step: merged into it (time, workload; key "prefill + decode"). */
static void fmha_pair(op_set_t *s)
{
    op_inst_t **f = malloc((s->n ? s->n : 1) * sizeof *f);
    size_t nf = 0;
    if (!f)
        return;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].info.family == PA_OP_FMHA)
            f[nf++] = &s->v[i];
    qsort(f, nf, sizeof *f, inst_by_thread_start);
    for (size_t i = 0; i + 1 < nf; i++) {
        op_inst_t *p = f[i], *d = f[i + 1];
        if (p->gtid != d->gtid || p->info.fmha_decode || !d->info.fmha_decode ||
            strcmp(p->info.fmha_heads, d->info.fmha_heads) != 0)
            continue;
        size_t kl = strlen(p->info.key) + strlen(d->info.key) + 4;
        p->pair_key = malloc(kl);
        if (!p->pair_key)
            continue;
        snprintf(p->pair_key, kl, "%s + %s", p->info.key, d->info.key + 5); /* drop d's "FMHA:" */
        p->extra = d->info.work;
        p->extra_ns = d->ns;
        d->merged_into = 1;
        i++;
    }
    free(f);
}

/* ---- groups ---- */

typedef struct op_group {
    const char *type, *key, *name;
    int family, same_name;
    size_t first; /* index of the group's first instance in order */
    int64_t *dur; size_t n;
    int64_t total, gemm_total[2];
    util_t util, gemm_util[2];
} op_group_t;

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static const char *inst_key(const op_inst_t *i) { return i->pair_key ? i->pair_key : i->info.key; }

static int by_type_key(const void *x, const void *y)
{
    const op_inst_t *a = *(op_inst_t *const *)x, *b = *(op_inst_t *const *)y;
    int c = strcmp(a->info.type, b->info.type);
    if (c)
        return c;
    c = strcmp(inst_key(a), inst_key(b));
    if (c)
        return c;
    return a->start < b->start ? -1 : a->start > b->start;
}

static int group_cmp(const void *x, const void *y)
{
    const op_group_t *a = x, *b = y;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    int c = strcmp(a->type, b->type);
    return c ? c : strcmp(a->key, b->key);
}

/* op= list: 1 when `type` is selected (no list: every operator type). */
static int op_selected(const char *list, const char *type, int family)
{
    if (!list)
        return 1;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, "/");
        if ((strlen(type) == n && strncasecmp(p, type, n) == 0) ||
            (family == PA_OP_PCCL && n == 4 && strncasecmp(p, "PCCL", 4) == 0))
            return 1;
        p += n + (p[n] ? 1 : 0);
    }
    return 0;
}

static int list_has(const char *list, const char *word)
{
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, "/");
        if (strlen(word) == n && strncasecmp(p, word, n) == 0)
            return 1;
        p += n + (p[n] ? 1 : 0);
    }
    return 0;
}

/* Builds the groups of the selected instances (moe_only: MoE family only). */
static op_group_t *make_groups(op_set_t *s, const peaks_t *pk, const char *ops, int moe_only, size_t *ng)
{
    op_inst_t **sel = malloc((s->n ? s->n : 1) * sizeof *sel);
    op_group_t *g = calloc(s->n ? s->n : 1, sizeof *g);
    size_t n = 0;
    *ng = 0;
    if (!sel || !g) {
        free(sel);
        free(g);
        return NULL;
    }
    for (size_t i = 0; i < s->n; i++) {
        op_inst_t *x = &s->v[i];
        if (x->merged_into || (moe_only && x->info.family != PA_OP_MOE) ||
            (!moe_only && !op_selected(ops, x->info.type, x->info.family)))
            continue;
        sel[n++] = x;
    }
    qsort(sel, n, sizeof *sel, by_type_key);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(sel[j]->info.type, sel[i]->info.type) == 0 && strcmp(inst_key(sel[j]), inst_key(sel[i])) == 0)
            j++;
        op_group_t *G = &g[(*ng)++];
        G->type = sel[i]->info.type;
        G->key = inst_key(sel[i]);
        G->family = sel[i]->info.family;
        G->same_name = 1;
        G->dur = malloc((j - i) * sizeof *G->dur);
        for (size_t k = i; k < j; k++) {
            op_inst_t *x = sel[k];
            const peak_t *p = peak_of(pk, x->dev);
            int64_t ns = x->ns + x->extra_ns;
            if (G->dur)
                G->dur[G->n++] = ns;
            G->total += ns;
            pa_op_work_t w = x->info.work;
            if (x->pair_key)
                work_add(&w, &x->extra);
            util_add(&G->util, &w, p, ns);
            for (int q = 0; q < 2; q++) {
                int64_t gns = q < x->ngemm ? x->gemm_ns[q] : 0;
                G->gemm_total[q] += gns;
                if (gns > 0)
                    util_add(&G->gemm_util[q], &x->info.gemm[q], p, gns);
                else
                    G->gemm_util[q].unknown[0] = G->gemm_util[q].unknown[1] = G->gemm_util[q].unknown[2] = 1;
            }
            if (x->pair_key || !x->name || !sel[i]->name || strcmp(x->name, sel[i]->name) != 0)
                G->same_name = 0;
        }
        /* one distinct name: show it whole; merged names: the key with minor parameters as '*' */
        G->name = G->same_name && sel[i]->name ? sel[i]->name : G->key;
        i = j;
    }
    free(sel);
    qsort(g, *ng, sizeof *g, group_cmp);
    return g;
}

static void stats_cells(pa_table_t *t, op_group_t *G, int with_count)
{
    if (with_count)
        pa_table_add_int(t, (int64_t)G->n);
    if (!G->n || !G->dur) {
        for (int i = 0; i < 5; i++)
            pa_table_add_none(t);
        return;
    }
    qsort(G->dur, G->n, sizeof *G->dur, cmp_i64);
    double mean = (double)G->total / (double)G->n, m2 = 0;
    for (size_t i = 0; i < G->n; i++)
        m2 += ((double)G->dur[i] - mean) * ((double)G->dur[i] - mean);
    double med = G->n % 2 ? (double)G->dur[G->n / 2] : ((double)G->dur[G->n / 2 - 1] + (double)G->dur[G->n / 2]) / 2;
    pa_table_add_double(t, mean, 0);
    pa_table_add_double(t, med, 0);
    pa_table_add_int(t, G->dur[0]);
    pa_table_add_int(t, G->dur[G->n - 1]);
    pa_table_add_double(t, pa_stddev_pop(G->n, m2), 0);
}

static void groups_free(op_group_t *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(g[i].dur);
    free(g);
}

static pa_op_merge_t merge_of(const pa_report_req_t *req)
{
    pa_op_merge_t m = {flag(req, "no-merge-fmha-parameter"), flag(req, "no-merge-fmha-prefill-decode-operator"),
                       flag(req, "no-merge-pccl-parameter"), flag(req, "no-merge-moe-parameter")};
    return m;
}

/* Kernels outside every operator ("others"), per kernel name, as groups of type Kernel. */
typedef struct other { char *name; int64_t *dur; size_t n, cap; int64_t total; } other_t;

static int collect_others(sqlite3 *db, const pa_report_req_t *req, op_set_t *s, other_t **out, size_t *nout,
                          char *err, size_t errsz)
{
    char sql[4096], dev[1024] = "";
    *out = NULL;
    *nout = 0;
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    if (s->nkern)
        qsort(s->kern, s->nkern, sizeof *s->kern, cmp_i64);
    snprintf(sql, sizeof sql,
        "SELECT o.rowid, o.end - o.start, ze_kname(k.value, %d) AS kn FROM ZE_OPS o LEFT JOIN STRING_IDS k"
        " ON k.id = o.nameId WHERE o.kind = 1%s AND (?1 IS NULL OR EXISTS (SELECT 1 FROM HGTX_OP_ASSOC y"
        " JOIN HGTX_RANGES_NAMED q ON q.id = y.rangeId WHERE y.opId = o.rowid AND y.how IN %s AND q.name REGEXP ?1))"
        " ORDER BY kn, o.rowid", pa_report_name_mode(req), dev, how_in(req));
    sqlite3_stmt *st;
    int rc = pa_report_prepare_ze(db, req, sql, &st, err, errsz);
    if (rc)
        return rc;
    const pa_opt_val_t *re = pa_req_opt(req, "range");
    if (re && re->set)
        sqlite3_bind_text(st, 1, re->s, -1, SQLITE_STATIC);
    other_t *v = NULL;
    size_t n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (s->nkern && bsearch(&id, s->kern, s->nkern, sizeof *s->kern, cmp_i64))
            continue;
        const char *kn = (const char *)sqlite3_column_text(st, 2);
        if (!kn)
            kn = "";
        if (!n || strcmp(v[n - 1].name, kn) != 0) {
            other_t *nv = realloc(v, (n + 1) * sizeof *nv);
            if (!nv)
                break;
            v = nv;
            memset(&v[n], 0, sizeof v[n]);
            v[n].name = strdup(kn);
            n++;
        }
        other_t *o = &v[n - 1];
        if (o->n == o->cap) {
            size_t nc = o->cap ? o->cap * 2 : 16;
            int64_t *nd = realloc(o->dur, nc * sizeof *nd);
            if (!nd)
                break;
            o->dur = nd;
            o->cap = nc;
        }
        int64_t d = sqlite3_column_int64(st, 1);
        o->dur[o->n++] = d > 0 ? d : 0;
        o->total += d > 0 ? d : 0;
    }
    sqlite3_finalize(st);
    *out = v;
    *nout = n;
    return PA_REP_OK;
}

/* ---- ppu_op_sum ---- */

static const pa_report_col_t cols_ppu[] = {
    {"OP type", "Operator type (MoE, ACBLAS, FMHA, a collective, a oneDNN primitive kind; Kernel for op=others)"},
    {"Total Time (ns)", "Sum of the device times of all kernels of this operator's instances"},
    {"Percent (%)", "Total Time as a percentage of the listed rows' Total Time"},
    {"Instances", "Number of operator instances (kernel instances for type Kernel)"},
    {"Avg (ns)", "Average time of one instance (sum of its kernels' device times)"},
    {"Med (ns)", "Median time of one instance"},
    {"Min (ns)", "Minimum time of one instance"},
    {"Max (ns)", "Maximum time of one instance"},
    {"StdDev (ns)", "Population standard deviation of the instance times"},
    {"Compute Util (%)", "FLOPs / (device peak FLOP/s x time), '-' when unknown"},
    {"HBM Load Util (%)", "Bytes read / (device peak memory bandwidth x time), '-' when unknown"},
    {"HBM Store Util (%)", "Bytes written / (device peak memory bandwidth x time), '-' when unknown"},
    {"OP Name", "Operator name (merged groups: the minor parameters shown as '*')"},
};

typedef struct row_ref { int64_t total; int is_other; size_t i; } row_ref_t;

static int row_cmp(const void *x, const void *y)
{
    const row_ref_t *a = x, *b = y;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    if (a->is_other != b->is_other)
        return a->is_other - b->is_other;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int produce_ppu(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    pa_op_merge_t mg = merge_of(req);
    op_set_t s = {0};
    int rc = collect(db, req, &mg, &s, err, errsz);
    if (rc) {
        op_set_free(&s);
        return rc;
    }
    if (!mg.no_merge_fmha_prefill_decode)
        fmha_pair(&s);
    const pa_opt_val_t *opv = pa_req_opt(req, "op");
    const char *ops = opv && opv->set ? opv->s : NULL;
    peaks_t pk;
    peaks_load(db, &pk);
    size_t ng = 0, no = 0;
    op_group_t *g = make_groups(&s, &pk, ops, 0, &ng);
    other_t *oth = NULL;
    if (ops && list_has(ops, "others"))
        rc = collect_others(db, req, &s, &oth, &no, err, errsz);
    row_ref_t *rows = malloc((ng + no + 1) * sizeof *rows);
    if (!rows || (!g && s.n)) {
        rc = PA_REP_EDATA;
        snprintf(err, errsz, "report '%s': out of memory", req->def->name);
    }
    int64_t sum = 0;
    size_t nr = 0;
    for (size_t i = 0; rows && i < ng; i++, nr++) {
        rows[nr] = (row_ref_t){g[i].total, 0, i};
        sum += g[i].total;
    }
    for (size_t i = 0; rows && i < no; i++, nr++) {
        rows[nr] = (row_ref_t){oth[i].total, 1, i};
        sum += oth[i].total;
    }
    if (rows && !rc) {
        qsort(rows, nr, sizeof *rows, row_cmp);
        for (size_t r = 0; r < nr; r++) {
            if (!rows[r].is_other) {
                op_group_t *G = &g[rows[r].i];
                pa_table_add_str(t, G->type, strlen(G->type));
                pa_table_add_int(t, G->total);
                pa_table_add_double(t, sum ? 100.0 * (double)G->total / (double)sum : 0, 1);
                stats_cells(t, G, 1);
                for (int i = 0; i < 3; i++)
                    util_cell(t, &G->util, i);
                pa_table_add_str(t, G->name, strlen(G->name));
            } else {
                other_t *o = &oth[rows[r].i];
                op_group_t G = {.dur = o->dur, .n = o->n, .total = o->total};
                pa_table_add_str(t, "Kernel", 6);
                pa_table_add_int(t, o->total);
                pa_table_add_double(t, sum ? 100.0 * (double)o->total / (double)sum : 0, 1);
                stats_cells(t, &G, 1);
                for (int i = 0; i < 3; i++)
                    pa_table_add_none(t);
                pa_table_add_str(t, o->name, strlen(o->name));
            }
        }
    }
    free(rows);
    for (size_t i = 0; i < no; i++) {
        free(oth[i].name);
        free(oth[i].dur);
    }
    free(oth);
    groups_free(g, ng);
    free(pk.v);
    op_set_free(&s);
    return rc;
}

/* ---- moe_op_sum ---- */

static const pa_report_col_t cols_moe[] = {
    {"Total Time (ns)", "Sum of the device times of all kernels of this MoE operator's instances"},
    {"Percent (%)", "Total Time as a percentage of the listed rows' Total Time"},
    {"GEMM1 Total Time (ns)", "Device time of the first GEMM kernel (name containing 'gemm') of each instance, summed"},
    {"GEMM2 Total Time (ns)", "Device time of the second GEMM kernel of each instance, summed"},
    {"Instances", "Number of times the MoE operator was executed"},
    {"Avg (ns)", "Average time of one instance"},
    {"Med (ns)", "Median time of one instance"},
    {"Min (ns)", "Minimum time of one instance"},
    {"Max (ns)", "Maximum time of one instance"},
    {"StdDev (ns)", "Population standard deviation of the instance times"},
    {"GEMM1 Compute Util (%)", "GEMM1 FLOPs / (device peak FLOP/s x GEMM1 time)"},
    {"GEMM2 Compute Util (%)", "GEMM2 FLOPs / (device peak FLOP/s x GEMM2 time)"},
    {"GEMM1 HBM Load Util (%)", "GEMM1 bytes read / (peak memory bandwidth x GEMM1 time)"},
    {"GEMM1 HBM Store Util (%)", "GEMM1 bytes written / (peak memory bandwidth x GEMM1 time)"},
    {"GEMM2 HBM Load Util (%)", "GEMM2 bytes read / (peak memory bandwidth x GEMM2 time)"},
    {"GEMM2 HBM Store Util (%)", "GEMM2 bytes written / (peak memory bandwidth x GEMM2 time)"},
    {"OP Name", "MoE operator name (merged groups: the expert ids shown as '*')"},
};

static int produce_moe(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    pa_op_merge_t mg = merge_of(req);
    op_set_t s = {0};
    int rc = collect(db, req, &mg, &s, err, errsz);
    if (rc) {
        op_set_free(&s);
        return rc;
    }
    peaks_t pk;
    peaks_load(db, &pk);
    size_t ng = 0;
    op_group_t *g = make_groups(&s, &pk, NULL, 1, &ng);
    int64_t sum = 0;
    for (size_t i = 0; i < ng; i++)
        sum += g[i].total;
    for (size_t i = 0; g && i < ng; i++) {
        op_group_t *G = &g[i];
        pa_table_add_int(t, G->total);
        pa_table_add_double(t, sum ? 100.0 * (double)G->total / (double)sum : 0, 1);
        pa_table_add_int(t, G->gemm_total[0]);
        pa_table_add_int(t, G->gemm_total[1]);
        stats_cells(t, G, 1);
        util_cell(t, &G->gemm_util[0], 0);
        util_cell(t, &G->gemm_util[1], 0);
        util_cell(t, &G->gemm_util[0], 1);
        util_cell(t, &G->gemm_util[0], 2);
        util_cell(t, &G->gemm_util[1], 1);
        util_cell(t, &G->gemm_util[1], 2);
        pa_table_add_str(t, G->name, strlen(G->name));
    }
    groups_free(g, ng);
    free(pk.v);
    op_set_free(&s);
    return PA_REP_OK;
}

#define DESC_COMMON \
    "An operator is an HGTX range named by the spec's grammar: MoE:<params>, ACBLAS:<GEMM params>,\n" \
    "FMHA:<params>, '<Collective>, k:v, ...' (AllReduce, AllGather, ReduceScatter, Broadcast, Reduce,\n" \
    "AllToAll, Send, Recv), or any range of oneDNN's ITT domain dnnl::primitive::execute (type = the\n" \
    "primitive kind). An instance's time is the sum of the device times of the kernels associated\n" \
    "with its range (HGTX projection); instances without kernels and ranges open at exit are left out.\n" \
    "Utilization = workload / (device peak x time), summed over the group's instances, per device:\n" \
    "peak FLOP/s = XVE count x SIMD width x 2 (FMA) x core clock, peak bytes/s = memory clock x bus\n" \
    "width / 8 (Level Zero device and memory properties); '-' when the workload or a peak is unknown.\n" \
    "Workloads and merge rules: docs/operators.md.\n"

PA_REPORT_DEF(report_ppu_op_sum, "ppu_op_sum", "PPU Operator Summary", "gpu_op_sum", NULL,
    "Operators grouped by type and parameters, sorted by Total Time (descending) (spec 2.3.21).\n" DESC_COMMON
    "Default merge rules (minor parameters, shown as '*' in OP Name when names differ):\n"
    "  MoE: the expert ids topkids[...];  FMHA: num_blocks, cu_seqlens_q, seqlens_k;\n"
    "  collectives: the buffers b:;  ACBLAS and oneDNN: none (the whole name).\n"
    "  FMHA prefill/decode: a decode FMHA (one query token per sequence) directly after a prefill\n"
    "  FMHA on the same thread, with the same heads and data type, is merged into it as one instance\n"
    "  (OP Name '<prefill> + <decode parameters>').\n"
    "Each no-merge-* option keeps the corresponding operators apart.",
    opts_ppu, cols_ppu, produce_ppu);

PA_REPORT_DEF(report_moe_op_sum, "moe_op_sum", "MoE Operator Summary", NULL, NULL,
    "MoE operators grouped by parameters, sorted by Total Time (descending) (spec 2.3.22).\n" DESC_COMMON
    "GEMM1/GEMM2: the first and second kernel of each instance whose name contains 'gemm'\n"
    "(case-insensitive), in device start order. Default merge: the expert ids topkids[...] are minor\n"
    "(no-merge-moe-parameter keeps them apart).",
    opts_moe, cols_moe, produce_moe);

const pa_report_def_t *const pa_reports_op[] = {&report_ppu_op_sum, &report_moe_op_sum, NULL};
