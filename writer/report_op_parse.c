/* report_op_parse.c - operator range names (spec "PPU operator summary" grammar) -> type, merge
 * key with the minor parameters masked, and workload (FLOPs, HBM bytes) per docs/operators.md. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "writer_op.h"

static const char *const collectives[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
                                          "AllToAll", "AlltoAll", "Send", "Recv", NULL};

int pa_op_is_collective(const char *type)
{
    for (int i = 0; collectives[i]; i++)
        if (strcmp(collectives[i], type) == 0)
            return 1;
    return 0;
}

/* Bytes per element of a data type token (BF16, 32F, fp16, half, F32, fp8, ...); 0 unknown. */
static int dtype_bytes(const char *s, size_t n)
{
    char t[16];
    if (n == 0 || n >= sizeof t)
        return 0;
    for (size_t i = 0; i < n; i++)
        t[i] = (char)tolower((unsigned char)s[i]);
    t[n] = '\0';
    static const struct { const char *name; int bytes; } tab[] = {
        {"bf16", 2}, {"16bf", 2}, {"f16", 2}, {"fp16", 2}, {"16f", 2}, {"half", 2},
        {"f32", 4}, {"fp32", 4}, {"32f", 4}, {"float", 4}, {"f64", 8}, {"fp64", 8}, {"64f", 8},
        {"fp8", 1}, {"f8", 1}, {"8f", 1}, {"e4m3", 1}, {"e5m2", 1}, {"i8", 1}, {"8i", 1}, {"int8", 1},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(t, tab[i].name) == 0)
            return tab[i].bytes;
    return 0;
}

static const pa_op_work_t unknown_work = {-1, -1, -1};

/* ---- comma fields, brackets kept together ("a,b:[1, 2],c") ---- */

typedef struct field { const char *p; size_t n; } field_t;

static size_t split_fields(const char *s, size_t len, field_t *f, size_t max)
{
    size_t nf = 0, start = 0;
    int depth = 0;
    for (size_t i = 0; i <= len && nf < max; i++) {
        if (i < len && s[i] == '[')
            depth++;
        else if (i < len && s[i] == ']' && depth)
            depth--;
        else if (i == len || (s[i] == ',' && !depth)) {
            size_t a = start, b = i;
            while (a < b && s[a] == ' ')
                a++;
            f[nf].p = s + a;
            f[nf].n = b - a;
            nf++;
            start = i + 1;
        }
    }
    return nf;
}

/* "key:value" field -> value when the key matches. */
static int field_kv(const field_t *f, const char *key, const char **v, size_t *vn)
{
    size_t kl = strlen(key);
    if (f->n > kl && strncmp(f->p, key, kl) == 0 && f->p[kl] == ':') {
        *v = f->p + kl + 1;
        *vn = f->n - kl - 1;
        return 1;
    }
    return 0;
}

static int num_of(const char *p, size_t n, double *out)
{
    char b[40];
    if (!n || n >= sizeof b)
        return 0;
    memcpy(b, p, n);
    b[n] = '\0';
    char *e;
    double v = strtod(b, &e);
    if (*e || e == b || !isfinite(v) || v < 0) /* "inf", "nan", "-8": no size */
        return 0;
    *out = v;
    return 1;
}

/* A workload is a count of FLOPs or bytes: one that does not fit 64 bits (parameters like
 * M_99999999999999999999) is no real operator's, and its Util % would be absurd: unknown. */
#define PA_OP_WORK_MAX 9223372036854775807.0

static void work_sane(pa_op_work_t *w)
{
    double *v[3] = {&w->flops, &w->load_bytes, &w->store_bytes};
    for (int i = 0; i < 3; i++)
        if (!isfinite(*v[i]) || *v[i] > PA_OP_WORK_MAX)
            *v[i] = -1;
}

/* Rebuilds the name with the fields whose key is in `minor` (NULL-terminated) as "key:*". */
static char *mask_fields(const char *prefix, const field_t *f, size_t nf, const char *const *minor, const char *sep)
{
    size_t cap = strlen(prefix) + 1;
    for (size_t i = 0; i < nf; i++)
        cap += f[i].n + strlen(sep) + 2;
    char *out = malloc(cap), *w = out;
    if (!out)
        return NULL;
    w += sprintf(w, "%s", prefix);
    for (size_t i = 0; i < nf; i++) {
        if (i)
            w += sprintf(w, "%s", sep);
        const char *v;
        size_t vn;
        int masked = 0;
        for (int k = 0; minor && minor[k]; k++)
            if (field_kv(&f[i], minor[k], &v, &vn)) {
                w += sprintf(w, "%s:*", minor[k]);
                masked = 1;
                break;
            }
        if (!masked) {
            memcpy(w, f[i].p, f[i].n);
            w += f[i].n;
            *w = '\0';
        }
    }
    return out;
}

/* ---- GEMM: ACBLAS:GemmEx,ta,tb,M,N,K,lda,ldb,ldc,alpha,beta,batch,...,<dtype>,... ---- */

static void parse_gemm(const char *s, size_t len, pa_op_info_t *o)
{
    field_t f[32];
    size_t nf = split_fields(s, len, f, 32);
    double m, n, k, beta = 0, batch = 1;
    o->work = unknown_work;
    if (nf < 6 || !num_of(f[3].p, f[3].n, &m) || !num_of(f[4].p, f[4].n, &n) || !num_of(f[5].p, f[5].n, &k))
        return;
    if (nf > 10)
        num_of(f[10].p, f[10].n, &beta);
    if (nf > 11 && (!num_of(f[11].p, f[11].n, &batch) || batch < 1))
        batch = 1;
    int e = 0;
    for (size_t i = 6; i < nf && !e; i++)
        e = dtype_bytes(f[i].p, f[i].n);
    o->work.flops = 2.0 * m * n * k * batch;
    if (e) {
        o->work.load_bytes = (m * k + k * n + (beta != 0 ? m * n : 0)) * e * batch;
        o->work.store_bytes = m * n * e * batch;
    }
}

/* ---- MoE:M_<m>_E_<e>_H_<h>_In_<in>_topk_<k>[_topkids[...]][_unique_<u>][_<routing>] ---- */

static int moe_num(const char *s, size_t len, const char *key, double *v)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl + 1 < len; i++) {
        if ((i == 0 || s[i - 1] == '_' || s[i - 1] == ':') && strncmp(s + i, key, kl) == 0 && s[i + kl] == '_') {
            size_t j = i + kl + 1, a = j;
            while (j < len && isdigit((unsigned char)s[j]))
                j++;
            return num_of(s + a, j - a, v);
        }
    }
    return 0;
}

static void parse_moe(const char *s, size_t len, pa_op_info_t *o)
{
    double m, e, h, in, k, u = -1;
    o->work = o->gemm[0] = o->gemm[1] = unknown_work;
    if (!moe_num(s, len, "M", &m) || !moe_num(s, len, "E", &e) || !moe_num(s, len, "H", &h) ||
        !moe_num(s, len, "In", &in) || !moe_num(s, len, "topk", &k))
        return;
    if (!moe_num(s, len, "unique", &u))
        u = -1;
    int el = 2; /* MoE names carry no data type: bf16 (docs/operators.md) */
    for (size_t i = 0; i < len; i++)
        if (s[i] == '_') {
            size_t j = i + 1;
            while (j < len && s[j] != '_')
                j++;
            int b = dtype_bytes(s + i + 1, j - i - 1);
            if (b)
                el = b;
        }
    double half = in / 2;
    pa_op_work_t *g1 = &o->gemm[0], *g2 = &o->gemm[1];
    g1->flops = 2 * m * k * h * in;
    g1->load_bytes = u >= 0 ? (m * h + u * h * in) * el : -1;
    g1->store_bytes = m * in * el;
    g2->flops = 2 * m * k * half * h;
    g2->load_bytes = u >= 0 ? (m * half + u * half * h) * el : -1;
    g2->store_bytes = m * h * el;
    o->work.flops = g1->flops + g2->flops;
    o->work.load_bytes = u >= 0 ? g1->load_bytes + g2->load_bytes : -1;
    o->work.store_bytes = g1->store_bytes + g2->store_bytes;
}

/* MoE key: the exact expert ids (topkids[...]) are minor. */
static char *moe_key(const char *s, size_t len)
{
    const char *t = NULL;
    for (size_t i = 0; i + 8 <= len; i++)
        if (strncmp(s + i, "topkids[", 8) == 0) {
            t = s + i;
            break;
        }
    if (!t)
        return strndup(s, len);
    const char *close = memchr(t, ']', len - (size_t)(t - s));
    if (!close)
        return strndup(s, len);
    size_t pre = (size_t)(t - s) + 8, post = len - (size_t)(close - s);
    char *k = malloc(pre + 1 + post + 1);
    if (!k)
        return NULL;
    memcpy(k, s, pre);
    k[pre] = '*';
    memcpy(k + pre + 1, close, post);
    k[pre + 1 + post] = '\0';
    return k;
}

/* ---- FMHA:<impl>,<Forward|Backward>,k:v,... ---- */

static size_t list_nums(const char *v, size_t vn, double *out, size_t max)
{
    size_t n = 0, i = 0;
    if (!vn || v[0] != '[')
        return 0;
    for (i = 1; i < vn && n < max;) {
        while (i < vn && (v[i] == ' ' || v[i] == ','))
            i++;
        size_t a = i;
        while (i < vn && v[i] != ',' && v[i] != ']')
            i++;
        if (i > a && num_of(v + a, i - a, &out[n]))
            n++;
        if (i < vn && v[i] == ']')
            break;
    }
    return n;
}

#define FMHA_MAX_SEQS 4096

static void parse_fmha(const char *s, size_t len, const pa_op_merge_t *mg, pa_op_info_t *o)
{
    field_t f[64];
    size_t nf = split_fields(s, len, f, 64);
    double hd = -1, hdv = -1, nh = -1, nhk = -1, bs = -1, sq = -1, sk = -1, fixed = 0, mask = 0;
    const char *cuq = NULL, *sks = NULL, *dt = NULL;
    size_t cuqn = 0, sksn = 0, dtn = 0;
    int forward = nf > 1 && f[1].n == 7 && strncmp(f[1].p, "Forward", 7) == 0;
    for (size_t i = 2; i < nf; i++) {
        const char *v;
        size_t vn;
        if (field_kv(&f[i], "head_dim", &v, &vn)) num_of(v, vn, &hd);
        else if (field_kv(&f[i], "head_dim_value", &v, &vn)) num_of(v, vn, &hdv);
        else if (field_kv(&f[i], "num_heads_k", &v, &vn)) num_of(v, vn, &nhk);
        else if (field_kv(&f[i], "num_heads", &v, &vn)) num_of(v, vn, &nh);
        else if (field_kv(&f[i], "batch_size", &v, &vn)) num_of(v, vn, &bs);
        else if (field_kv(&f[i], "seqlen_q", &v, &vn)) num_of(v, vn, &sq);
        else if (field_kv(&f[i], "seqlen_k", &v, &vn)) num_of(v, vn, &sk);
        else if (field_kv(&f[i], "is_fixed_seqs", &v, &vn)) num_of(v, vn, &fixed);
        else if (field_kv(&f[i], "custom_mask", &v, &vn)) num_of(v, vn, &mask);
        else if (field_kv(&f[i], "cu_seqlens_q", &v, &vn)) cuq = v, cuqn = vn;
        else if (field_kv(&f[i], "seqlens_k", &v, &vn)) sks = v, sksn = vn;
        else if (field_kv(&f[i], "data_type", &v, &vn)) dt = v, dtn = vn;
    }
    if (hdv < 0)
        hdv = hd;
    if (nhk < 0)
        nhk = nh;
    snprintf(o->fmha_heads, sizeof o->fmha_heads, "%.0f/%.0f/%.0f/%.0f/%.*s", hd, hdv, nh, nhk, (int)(dtn < 16 ? dtn : 16),
             dt ? dt : "");
    o->work = unknown_work;
    static double q[FMHA_MAX_SEQS], k[FMHA_MAX_SEQS], cu[FMHA_MAX_SEQS + 1];
    size_t nseq = 0;
    size_t ncu = cuq ? list_nums(cuq, cuqn, cu, FMHA_MAX_SEQS + 1) : 0;
    size_t nk = sks ? list_nums(sks, sksn, k, FMHA_MAX_SEQS) : 0;
    if (ncu >= 2 && nk == ncu - 1) {
        nseq = nk;
        for (size_t i = 0; i < nseq; i++)
            q[i] = cu[i + 1] - cu[i];
    } else if (bs >= 1 && bs <= FMHA_MAX_SEQS && sq >= 0 && sk >= 0 && (fixed == 1 || bs == 1)) {
        nseq = (size_t)bs;
        for (size_t i = 0; i < nseq; i++)
            q[i] = sq, k[i] = sk;
    }
    int decode = nseq > 0;
    for (size_t i = 0; i < nseq; i++)
        if (q[i] != 1)
            decode = 0;
    if (!nseq && bs >= 1 && sq >= 0)
        decode = sq == bs;
    o->fmha_decode = decode;
    int el = dt ? dtype_bytes(dt, dtn) : 0;
    if (!forward || !nseq || hd <= 0 || nh <= 0)
        return;
    /* causal (custom_mask:1): queries sit at the end of their keys, query t sees k - q + t keys */
    double pairs = 0, sumq = 0, sumk = 0;
    for (size_t i = 0; i < nseq; i++) {
        double p = q[i] * k[i];
        if (mask == 1 && q[i] <= k[i])
            p -= q[i] * (q[i] - 1) / 2;
        pairs += p;
        sumq += q[i];
        sumk += k[i];
    }
    o->work.flops = 2 * nh * pairs * (hd + hdv);
    if (el) {
        o->work.load_bytes = el * (sumq * nh * hd + sumk * nhk * (hd + hdv));
        o->work.store_bytes = el * sumq * nh * hdv;
    }
    (void)mg;
}

/* ---- entry ---- */

int pa_op_parse(const char *name, size_t len, const char *domain, const pa_op_merge_t *m, pa_op_info_t *out)
{
    static const pa_op_merge_t none = {0, 0, 0, 0};
    if (!m)
        m = &none;
    memset(out, 0, sizeof *out);
    out->work = out->gemm[0] = out->gemm[1] = unknown_work;
    if (domain && strcmp(domain, "dnnl::primitive::execute") == 0) {
        out->family = PA_OP_ONEDNN;
        snprintf(out->type, sizeof out->type, "%.*s", (int)(len < 47 ? len : 47), name);
        out->key = strndup(name, len);
    } else if (len > 4 && strncmp(name, "MoE:", 4) == 0) {
        out->family = PA_OP_MOE;
        strcpy(out->type, "MoE");
        parse_moe(name, len, out);
        out->key = m->no_merge_moe_param ? strndup(name, len) : moe_key(name, len);
    } else if (len > 7 && strncmp(name, "ACBLAS:", 7) == 0) {
        out->family = PA_OP_GEMM;
        strcpy(out->type, "ACBLAS");
        parse_gemm(name + 7, len - 7, out);
        out->key = strndup(name, len);
    } else if (len > 5 && strncmp(name, "FMHA:", 5) == 0) {
        out->family = PA_OP_FMHA;
        strcpy(out->type, "FMHA");
        parse_fmha(name + 5, len - 5, m, out);
        if (m->no_merge_fmha_param) {
            out->key = strndup(name, len);
        } else {
            static const char *const minor[] = {"num_blocks", "cu_seqlens_q", "seqlens_k", NULL};
            field_t f[64];
            size_t nf = split_fields(name + 5, len - 5, f, 64);
            out->key = mask_fields("FMHA:", f, nf, minor, ",");
        }
    } else {
        const char *comma = memchr(name, ',', len);
        size_t tl = comma ? (size_t)(comma - name) : 0;
        char t[48];
        if (!tl || tl >= sizeof t)
            return PA_OP_NONE;
        memcpy(t, name, tl);
        t[tl] = '\0';
        if (!pa_op_is_collective(t))
            return PA_OP_NONE;
        out->family = PA_OP_PCCL;
        strcpy(out->type, t);
        if (m->no_merge_pccl_param) {
            out->key = strndup(name, len);
        } else {
            static const char *const minor[] = {"b", NULL};
            field_t f[64];
            size_t nf = split_fields(comma + 1, len - tl - 1, f, 64);
            char prefix[64];
            snprintf(prefix, sizeof prefix, "%s, ", t);
            out->key = mask_fields(prefix, f, nf, minor, ", ");
        }
    }
    if (!out->key) {
        out->family = PA_OP_NONE;
        return PA_OP_NONE;
    }
    work_sane(&out->work);
    work_sane(&out->gemm[0]);
    work_sane(&out->gemm[1]);
    return out->family;
}

void pa_op_info_free(pa_op_info_t *o)
{
    free(o->key);
    o->key = NULL;
}
