/* report_pccl_op.c - pccl_op_sum (spec "PCCL operator summary"): collective operator ranges
 * grouped by communicator, type and data size; per communication the shortest participating
 * instance is the transfer time, summed over the devices that took part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report_util.h"
#include "writer_op.h"
#include "writer_pccl.h"

/* One operator instance (a range on one rank) with its collective kernels. */
typedef struct inst {
    pa_pccl_exec_t x;        /* start/end = span of its kernels, ns = their summed time */
    int64_t rid;
    char *key, *name, type[48];
    double bytes;            /* per-rank transfer bytes (algorithm convention, docs/collectives.md), < 0 unknown */
    int p2p;
} inst_t;

typedef struct iset { inst_t *v; size_t n, cap; } iset_t;

static void iset_free(iset_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].key);
        free(s->v[i].name);
    }
    free(s->v);
}

/* The value of field `k` ("c", "d", "w") of a collective name "Type, k:v, k:v, ..."; 0 when found. */
static int name_field(const char *s, size_t len, const char *k, char *out, size_t outsz)
{
    size_t kl = strlen(k);
    for (const char *p = memchr(s, ',', len), *end = s + len; p && p < end;) {
        p++;
        while (p < end && *p == ' ')
            p++;
        const char *q = memchr(p, ',', (size_t)(end - p));
        size_t n = q ? (size_t)(q - p) : (size_t)(end - p);
        if (n > kl && strncmp(p, k, kl) == 0 && p[kl] == ':') {
            size_t vl = n - kl - 1;
            while (vl && p[kl + vl] == ' ')
                vl--;
            if (vl >= outsz)
                return -1;
            memcpy(out, p + kl + 1, vl);
            out[vl] = '\0';
            return 0;
        }
        p = q;
    }
    return -1;
}

/* Bytes per element of d: a number is NCCL's ncclDataType_t (what the spec's examples carry:
 * d:9 = bfloat16), else a type name. 0 when unknown. */
static int elem_bytes(const char *d)
{
    static const int nccl[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1}; /* int8 uint8 int32 uint32 int64 uint64 f16 f32 f64 bf16 fp8e4m3 fp8e5m2 */
    char *end;
    long v = strtol(d, &end, 10);
    if (*d && !*end)
        return v >= 0 && v < (long)(sizeof nccl / sizeof nccl[0]) ? nccl[v] : 0;
    static const struct { const char *n; int b; } tab[] = {
        {"int8", 1}, {"uint8", 1}, {"char", 1}, {"fp8", 1}, {"int32", 4}, {"uint32", 4}, {"int", 4},
        {"int64", 8}, {"uint64", 8}, {"f16", 2}, {"fp16", 2}, {"half", 2}, {"float16", 2}, {"bf16", 2},
        {"bfloat16", 2}, {"f32", 4}, {"fp32", 4}, {"float", 4}, {"float32", 4}, {"f64", 8}, {"fp64", 8},
        {"double", 8}, {"float64", 8},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcasecmp(d, tab[i].n) == 0)
            return tab[i].b;
    return 0;
}

/* Per-rank bytes a collective moves (NCCL's bus-bandwidth convention, docs/collectives.md):
 * S = count x element size; AllReduce 2(w-1)/w S, AllGather and ReduceScatter (w-1) S (count
 * is per rank), AllToAll (w-1)/w S, Broadcast and Reduce S, Send/Recv S. < 0 unknown. */
static double rank_bytes(const char *type, const char *name, size_t len, int64_t w_default)
{
    char c[32], d[32], w[32];
    if (name_field(name, len, "c", c, sizeof c) != 0 || name_field(name, len, "d", d, sizeof d) != 0)
        return -1;
    char *end;
    double count = strtod(c, &end);
    int e = elem_bytes(d);
    if (*end || count < 0 || !e)
        return -1;
    double ws = (double)w_default;
    if (name_field(name, len, "w", w, sizeof w) == 0 && atof(w) >= 1)
        ws = atof(w);
    double s = count * e;
    if (strcmp(type, "AllReduce") == 0)
        return ws > 0 ? 2.0 * (ws - 1) / ws * s : -1;
    if (strcmp(type, "AllGather") == 0 || strcmp(type, "ReduceScatter") == 0)
        return (ws - 1) * s;
    if (strcasecmp(type, "AllToAll") == 0)
        return ws > 0 ? (ws - 1) / ws * s : -1;
    return s;
}

static const char *how_in(const pa_report_req_t *req)
{
    const pa_opt_val_t *v = pa_req_opt(req, "no-graph-mapping");
    return v && v->set ? "(0,2)" : "(0,1,2)";
}

/* pa_op_scan_t callbacks: a range's instance, then each of its kernels (columns of collect()). */
static void inst_begin(void *ctx, void *inst, sqlite3_stmt *st, pa_op_info_t *info, char *name)
{
    (void)ctx;
    inst_t *cur = inst;
    cur->rid = sqlite3_column_int64(st, 0);
    cur->key = info->key;
    snprintf(cur->type, sizeof cur->type, "%s", info->type);
    cur->name = name;
    cur->p2p = strcmp(info->type, "Send") == 0 || strcmp(info->type, "Recv") == 0;
    cur->x.id = cur->rid;
    cur->x.start = sqlite3_column_int64(st, 4);
    cur->x.end = sqlite3_column_int64(st, 5);
    cur->x.pid = sqlite3_column_int64(st, 6);
    cur->x.dev = sqlite3_column_int64(st, 7);
}

static int inst_row(void *ctx, void *inst, sqlite3_stmt *st)
{
    (void)ctx;
    inst_t *cur = inst;
    int64_t a = sqlite3_column_int64(st, 4), b = sqlite3_column_int64(st, 5);
    cur->x.start = a < cur->x.start ? a : cur->x.start;
    cur->x.end = b > cur->x.end ? b : cur->x.end;
    cur->x.ns += b > a ? b - a : 0;
    return 0;
}

static int collect(sqlite3 *db, const pa_report_req_t *req, iset_t *s, char *err, size_t errsz)
{
    char sql[4096], dev[1024] = "";
    if (pa_report_device_clause(req, dev, sizeof dev, err, errsz) != PA_REP_OK)
        return PA_REP_EDATA;
    snprintf(sql, sizeof sql,
        "SELECT DISTINCT r.id, n.value, coalesce(d.value, ''), o.rowid, o.start, o.end, o.tid >> 32, o.deviceId"
        " FROM HGTX_OP_ASSOC x JOIN HGTX_RANGES r ON r.id = x.rangeId JOIN STRING_IDS n ON n.id = r.nameId"
        " LEFT JOIN STRING_IDS d ON d.id = r.domainId AND r.domainId != 0"
        " JOIN ZE_OPS o ON o.rowid = x.opId JOIN STRING_IDS k ON k.id = o.nameId"
        " WHERE o.kind = 1 AND r.unterminated = 0 AND x.how IN %s%s"
        " AND (ze_kname(k.value, 0) REGEXP ?2 OR k.value REGEXP ?2)"
        " AND (?1 IS NULL OR EXISTS (SELECT 1 FROM HGTX_OP_ASSOC y JOIN HGTX_RANGES_NAMED q ON q.id = y.rangeId"
        "  WHERE y.opId = o.rowid AND y.how IN %s AND q.name REGEXP ?1))"
        " ORDER BY r.id, o.start, o.rowid", how_in(req), dev, how_in(req));
    sqlite3_stmt *st;
    int rc = pa_report_prepare_ze(db, req, sql, &st, err, errsz);
    if (rc)
        return rc;
    const pa_opt_val_t *re = pa_req_opt(req, "range"), *ccl = pa_req_opt(req, "ccl");
    if (re && re->set)
        sqlite3_bind_text(st, 1, re->s, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ccl && ccl->set ? ccl->s : PA_PCCL_DEFAULT_RE, -1, SQLITE_STATIC);
    pa_op_merge_t mg = {0, 0, 0, 0};
    pa_op_scan_t sc = {.mg = &mg, .family = PA_OP_PCCL, .v = (void **)&s->v, .n = &s->n, .cap = &s->cap,
                       .elem = sizeof *s->v, .begin = inst_begin, .row = inst_row, .ctx = s};
    return pa_op_scan_rows(db, st, &sc, req->def->name, err, errsz);
}

static int inst_by_key_start(const void *x, const void *y)
{
    const inst_t *a = x, *b = y;
    int c = strcmp(a->key ? a->key : "", b->key ? b->key : "");
    if (c)
        return c;
    if (a->x.start != b->x.start)
        return a->x.start < b->x.start ? -1 : 1;
    return a->x.end < b->x.end ? -1 : a->x.end > b->x.end;
}

typedef struct grp {
    const char *name;
    int64_t trans, total, instances;
    uint64_t mask;
    double size;  /* < 0 unknown */
} grp_t;

static int grp_cmp(const void *x, const void *y)
{
    const grp_t *a = x, *b = y;
    if (a->trans != b->trans)
        return a->trans > b->trans ? -1 : 1;
    return strcmp(a->name, b->name);
}

static const pa_report_col_t cols_op[] = {
    {"Trans Time (ns)", "Collectives: per communication the shortest participating instance x the number of "
                        "devices taking part, summed; point-to-point: the sum of the instances' times"},
    {"Trans Percent (%)", "Trans Time as a percentage of Total Time"},
    {"Total Time (ns)", "Sum of the device times of all collective kernels of the operator's instances"},
    {"Instances", "Collectives: communications (one per collective call of all ranks); point-to-point: "
                  "operator instances"},
    {"Device Mask", "Bitmap of the device ids that took part (bit i = device i)"},
    {"Trans Size (bytes)", "Bytes moved by all participating devices (c:, d:, w: of the name; '-' unknown)"},
    {"Trans Bandwidth (B/s)", "Trans Size / Trans Time"},
    {"OP Name", "Operator name (instances with other buffers merged: b:*)"},
};

static int produce_op(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, char *err, size_t errsz)
{
    iset_t s = {0};
    int rc = collect(db, req, &s, err, errsz);
    pa_pccl_exec_t *x = malloc((s.n ? s.n : 1) * sizeof *x);
    size_t *first = malloc((s.n + 1) * sizeof *first);
    grp_t *g = calloc(s.n ? s.n : 1, sizeof *g);
    if (rc == PA_REP_OK && (!x || !first || !g)) {
        snprintf(err, errsz, "report '%s': out of memory", req->def->name);
        rc = PA_REP_EDATA;
    }
    size_t ng = 0;
    if (rc == PA_REP_OK) {
        if (s.n)
            qsort(s.v, s.n, sizeof *s.v, inst_by_key_start);
        for (size_t i = 0; i < s.n;) {
            size_t j = i;
            while (j < s.n && strcmp(s.v[j].key ? s.v[j].key : "", s.v[i].key ? s.v[i].key : "") == 0)
                j++;
            grp_t *G = &g[ng++];
            G->name = s.v[i].name ? s.v[i].name : "";
            for (size_t q = i; q < j; q++) {
                x[q - i] = s.v[q].x;
                if (!s.v[q].name || strcmp(s.v[q].name, G->name) != 0)
                    G->name = s.v[i].key ? s.v[i].key : "";
            }
            size_t nc = pa_pccl_group(x, j - i, first);
            for (size_t c = 0; c < nc; c++) {
                size_t a = first[c], b = first[c + 1];
                int64_t min = x[a].ns;
                for (size_t q = a; q < b; q++) {
                    const inst_t *in = &s.v[i + q];
                    min = x[q].ns < min ? x[q].ns : min;
                    G->total += x[q].ns;
                    if (x[q].dev >= 0 && x[q].dev < 64)
                        G->mask |= 1ull << x[q].dev;
                    double by = rank_bytes(in->type, in->name ? in->name : "", in->name ? strlen(in->name) : 0,
                                           (int64_t)(b - a));
                    G->size = G->size < 0 || by < 0 ? -1 : G->size + by;
                    if (in->p2p) {
                        G->trans += x[q].ns;
                        G->instances++;
                    }
                }
                if (!s.v[i + a].p2p) {
                    G->trans += min * (int64_t)(b - a);
                    G->instances++;
                }
            }
            i = j;
        }
        qsort(g, ng, sizeof *g, grp_cmp);
        for (size_t i = 0; i < ng; i++) {
            const grp_t *G = &g[i];
            char mask[24];
            int ml = snprintf(mask, sizeof mask, "0x%llX", (unsigned long long)G->mask);
            pa_table_add_int(t, G->trans);
            pa_table_add_double(t, G->total ? 100.0 * (double)G->trans / (double)G->total : 0, 1);
            pa_table_add_int(t, G->total);
            pa_table_add_int(t, G->instances);
            pa_table_add_str(t, mask, (size_t)ml);
            if (G->size < 0) {
                pa_table_add_none(t);
                pa_table_add_none(t);
            } else {
                pa_table_add_double(t, G->size, 0);
                if (G->trans > 0)
                    pa_table_add_double(t, G->size * 1e9 / (double)G->trans, 0);
                else
                    pa_table_add_none(t);
            }
            pa_table_add_str(t, G->name, strlen(G->name));
        }
    }
    free(g);
    free(first);
    free(x);
    iset_free(&s);
    return rc;
}

static const pa_report_opt_t opts_op[] = {
    PA_REPORT_OPT_DEVICE,
    {"range", PA_OPT_REGEX, "<regex_filter>", "Perl-compatible regular expression (PCRE2): only kernels inside an HGTX range\nwhose name matches (the operator's own range or one around it) count.\nDefault is all ranges.", NULL},
    {"no-graph-mapping", PA_OPT_FLAG, "", "Do not map HGTX ranges open when a regular command list (graph) was\nrecorded to its executions: an executed list's kernels then belong only\nto the operators open around zeCommandQueueExecuteCommandLists.", NULL},
    PA_PCCL_OPT_CCL,
};

const pa_report_def_t pa_report_pccl_op_sum = {
    .name = "pccl_op_sum", .title = "PCCL Operator Summary", .aliases = {NULL},
    .description =
    "Collective operators grouped by communicator, type and data size (the range name with the\n"
    "buffers b: masked), sorted by Trans Time (descending) (spec \"PCCL operator summary\").\n"
    "An operator is an HGTX range named '<Type>, p:.., c:<count>, d:<dtype>, r:.., w:<ranks>, h:<comm>,\n"
    "t:.., b:<send>/<recv>' (Type AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll;\n"
    "point-to-point Send, Recv); its kernels are the collective kernels (ccl=) associated with the\n"
    "range. One instance per range; instances of the group whose kernel spans overlap, one per device\n"
    "of a process, are one communication (as in pccl_desync_trace). d: is NCCL's ncclDataType_t\n"
    "number (9 = bfloat16) or a type name. Trans Size per rank and instance: AllReduce 2(w-1)/w x S,\n"
    "AllGather/ReduceScatter (w-1) x S, AllToAll (w-1)/w x S, others S, S = count x element size\n"
    "(w = w: or the devices in the communication). docs/collectives.md.",
    .opts = opts_op, .nopts = sizeof opts_op / sizeof opts_op[0],
    .cols = cols_op, .ncols = sizeof cols_op / sizeof cols_op[0],
    .produce = produce_op,
};
