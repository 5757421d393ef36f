/* kernels_builtin.c - built-in kernels computing real results, incl. the cross-device all-reduce. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pa_sd_internal.h"

typedef struct builtin_info {
    const char *name;
    uint32_t nargs;
    uint8_t size[6]; /* bytes of each argument */
} builtin_info;

static const builtin_info g_info[PA_SD_BI_COUNT] = {
    [PA_SD_BI_NONE] = {"", 0, {0}},
    [PA_SD_BI_VECTOR_ADD] = {SIMDEV_K_VECTOR_ADD, 4, {8, 8, 8, 4}},
    [PA_SD_BI_SAXPY] = {SIMDEV_K_SAXPY, 4, {4, 8, 8, 4}},
    [PA_SD_BI_GEMM] = {SIMDEV_K_GEMM_F32, 6, {8, 8, 8, 4, 4, 4}},
    [PA_SD_BI_FILL_U32] = {SIMDEV_K_FILL_U32, 3, {8, 4, 4}},
    [PA_SD_BI_REDUCE_SUM] = {SIMDEV_K_REDUCE_SUM_F32, 3, {8, 8, 4}},
    [PA_SD_BI_BUSY_NS] = {SIMDEV_K_BUSY_NS, 1, {8}},
    [PA_SD_BI_ALLREDUCE] = {SIMDEV_K_ALLREDUCE_SUM_F32, 5, {8, 4, 4, 4, 8}},
};

pa_sd_builtin pa_sd_builtin_by_name(const char *name)
{
    for (int b = PA_SD_BI_NONE + 1; b < PA_SD_BI_COUNT; b++)
        if (name && strcmp(name, g_info[b].name) == 0)
            return (pa_sd_builtin)b;
    return PA_SD_BI_NONE;
}

const char *pa_sd_builtin_name(pa_sd_builtin b) { return b < PA_SD_BI_COUNT ? g_info[b].name : ""; }

uint32_t pa_sd_builtin_nargs(pa_sd_builtin b) { return b < PA_SD_BI_COUNT ? g_info[b].nargs : 0; }

uint32_t pa_sd_builtin_arg_size(pa_sd_builtin b, uint32_t i)
{
    return (b < PA_SD_BI_COUNT && i < g_info[b].nargs) ? g_info[b].size[i] : 0;
}

static void *arg_ptr(uint8_t (*args)[PA_SD_ARG_BYTES], int i)
{
    void *p;
    memcpy(&p, args[i], sizeof p);
    return p;
}
static uint32_t arg_u32(uint8_t (*args)[PA_SD_ARG_BYTES], int i)
{
    uint32_t v;
    memcpy(&v, args[i], sizeof v);
    return v;
}
static uint64_t arg_u64(uint8_t (*args)[PA_SD_ARG_BYTES], int i)
{
    uint64_t v;
    memcpy(&v, args[i], sizeof v);
    return v;
}

/* A kernel must not crash the process on a bad pointer: require [p, p+bytes) inside one
 * simdev allocation, as a real device would fault instead of touching host memory. */
static bool span_ok(const char *kernel, const void *p, uint64_t bytes)
{
    void *base;
    size_t size;
    if (bytes == 0)
        return true;
    if (p && pa_sd_mem_lookup(p, &base, &size, NULL, NULL) &&
        (uint64_t)((const char *)p - (const char *)base) + bytes <= size)
        return true;
    fprintf(stderr, "simdev: kernel %s: buffer %p of %llu bytes is not inside a Level Zero "
                    "allocation; kernel skipped\n", kernel, p, (unsigned long long)bytes);
    return false;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static void run_vector_add(uint8_t (*a)[PA_SD_ARG_BYTES], uint64_t items)
{
    const float *x = arg_ptr(a, 0), *y = arg_ptr(a, 1);
    float *z = arg_ptr(a, 2);
    uint64_t n = min_u64(arg_u32(a, 3), items);
    if (!span_ok("vector_add", x, n * 4) || !span_ok("vector_add", y, n * 4) ||
        !span_ok("vector_add", z, n * 4))
        return;
    for (uint64_t i = 0; i < n; i++)
        z[i] = x[i] + y[i];
}

static void run_saxpy(uint8_t (*a)[PA_SD_ARG_BYTES], uint64_t items)
{
    float alpha;
    memcpy(&alpha, a[0], sizeof alpha);
    const float *x = arg_ptr(a, 1);
    float *y = arg_ptr(a, 2);
    uint64_t n = min_u64(arg_u32(a, 3), items);
    if (!span_ok("saxpy", x, n * 4) || !span_ok("saxpy", y, n * 4))
        return;
    for (uint64_t i = 0; i < n; i++)
        y[i] = alpha * x[i] + y[i];
}

/* C[M x N] = A[M x K] * B[K x N], row-major; computed whole regardless of the launch shape. */
static void run_gemm(uint8_t (*a)[PA_SD_ARG_BYTES])
{
    const float *A = arg_ptr(a, 0), *B = arg_ptr(a, 1);
    float *C = arg_ptr(a, 2);
    uint64_t M = arg_u32(a, 3), N = arg_u32(a, 4), K = arg_u32(a, 5);
    if (!span_ok("gemm_f32", A, M * K * 4) || !span_ok("gemm_f32", B, K * N * 4) ||
        !span_ok("gemm_f32", C, M * N * 4))
        return;
    for (uint64_t i = 0; i < M; i++)
        for (uint64_t j = 0; j < N; j++) {
            float s = 0.0f;
            for (uint64_t k = 0; k < K; k++)
                s += A[i * K + k] * B[k * N + j];
            C[i * N + j] = s;
        }
}

static void run_fill(uint8_t (*a)[PA_SD_ARG_BYTES], uint64_t items)
{
    uint32_t *d = arg_ptr(a, 0);
    uint32_t v = arg_u32(a, 1);
    uint64_t n = min_u64(arg_u32(a, 2), items);
    if (!span_ok("fill_u32", d, n * 4))
        return;
    for (uint64_t i = 0; i < n; i++)
        d[i] = v;
}

static void run_reduce(uint8_t (*a)[PA_SD_ARG_BYTES])
{
    const float *x = arg_ptr(a, 0);
    float *out = arg_ptr(a, 1);
    uint64_t n = arg_u32(a, 2);
    if (!span_ok("reduce_sum_f32", x, n * 4) || !span_ok("reduce_sum_f32", out, 4))
        return;
    double s = 0.0; /* double accumulation: exact for the test sizes, stable otherwise */
    for (uint64_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
}

/* ---- all-reduce: the rendezvous lives in collective.c (across devices and processes) ---- */
static uint64_t run_allreduce(uint8_t (*a)[PA_SD_ARG_BYTES])
{
    float *buf = arg_ptr(a, 0);
    uint32_t n = arg_u32(a, 1), rank = arg_u32(a, 2), nranks = arg_u32(a, 3);
    if (!span_ok("allreduce_sum_f32", buf, (uint64_t)n * 4))
        return 0;
    return pa_sd_coll_allreduce_f32(buf, n, rank, nranks, arg_u64(a, 4));
}

void pa_sd_builtin_release_waiters(const struct timespec *dl)
{
    pa_sd_coll_wake_all(dl);
}

uint64_t pa_sd_builtin_run(pa_sd_builtin b, uint8_t (*args)[PA_SD_ARG_BYTES], uint64_t items, uint64_t *done_ns)
{
    *done_ns = 0;
    switch (b) {
    case PA_SD_BI_VECTOR_ADD: run_vector_add(args, items); break;
    case PA_SD_BI_SAXPY: run_saxpy(args, items); break;
    case PA_SD_BI_GEMM: run_gemm(args); break;
    case PA_SD_BI_FILL_U32: run_fill(args, items); break;
    case PA_SD_BI_REDUCE_SUM: run_reduce(args); break;
    case PA_SD_BI_BUSY_NS: return arg_u64(args, 0) ? arg_u64(args, 0) : 1;
    case PA_SD_BI_ALLREDUCE: *done_ns = run_allreduce(args); break;
    default: break;
    }
    return 0;
}

/* A fork child has none of the parent's workers: it forgets the parent's communicators. */
void pa_sd_builtin_atfork(int phase)
{
    pa_sd_coll_atfork(phase);
}
