/* onednn_prims.c - a real third-party ITT producer: Debian's oneDNN (C API) runs a matmul, a
 * convolution, an eltwise (ReLU) and a reorder a known number of times each, checks every result
 * against a plain C computation, prints one line per primitive and exits 0 when all are right.
 * usage: onednn_prims [MATMUL CONV ELTWISE REORDER]  (executions; default 3 2 5 4) */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        dnnl_status_t s_ = (call);                                                         \
        if (s_ != dnnl_success) {                                                          \
            fprintf(stderr, "onednn_prims: %s failed: status %d at line %d\n", #call, (int)s_, \
                    __LINE__);                                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static dnnl_memory_t mem(const dnnl_memory_desc_t *md, float **data)
{
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, md, engine, DNNL_MEMORY_ALLOCATE));
    void *p;
    CHECK(dnnl_memory_get_data_handle(m, &p));
    *data = p;
    return m;
}

static dnnl_primitive_t prim(const_dnnl_op_desc_t desc)
{
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK(dnnl_primitive_desc_create(&pd, desc, NULL, engine, NULL));
    CHECK(dnnl_primitive_create(&p, pd));
    CHECK(dnnl_primitive_desc_destroy(pd));
    return p;
}

static void run(dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args, int times)
{
    for (int i = 0; i < times; i++)
        CHECK(dnnl_primitive_execute(p, stream, nargs, args));
    CHECK(dnnl_stream_wait(stream));
}

static int times_arg(int argc, char **argv, int i, int dflt)
{
    if (argc <= i)
        return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < 0 || v > 100000) {
        fprintf(stderr, "onednn_prims: bad count '%s' (0..100000)\n", argv[i]);
        exit(2);
    }
    return (int)v;
}

/* C[M,N] = A[M,K] x B[K,N], small integers: exact in float. */
static int do_matmul(int times)
{
    enum { M = 4, K = 5, N = 3 };
    dnnl_dims_t da = {M, K}, db = {K, N}, dc = {M, N};
    dnnl_memory_desc_t ma, mb, mc;
    CHECK(dnnl_memory_desc_init_by_tag(&ma, 2, da, dnnl_f32, dnnl_ab));
    CHECK(dnnl_memory_desc_init_by_tag(&mb, 2, db, dnnl_f32, dnnl_ab));
    CHECK(dnnl_memory_desc_init_by_tag(&mc, 2, dc, dnnl_f32, dnnl_ab));
    float *a, *b, *c;
    dnnl_memory_t A = mem(&ma, &a), B = mem(&mb, &b), C = mem(&mc, &c);
    for (int i = 0; i < M * K; i++)
        a[i] = (float)(i % 7 - 3);
    for (int i = 0; i < K * N; i++)
        b[i] = (float)(i % 5 - 2);
    dnnl_matmul_desc_t d;
    CHECK(dnnl_matmul_desc_init(&d, &ma, &mb, NULL, &mc));
    dnnl_primitive_t p = prim(&d);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, B}, {DNNL_ARG_DST, C}};
    run(p, 3, args, times);
    int bad = 0;
    for (int i = 0; i < M && times; i++)
        for (int j = 0; j < N; j++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s += a[i * K + k] * b[k * N + j];
            bad += c[i * N + j] != s;
        }
    dnnl_primitive_destroy(p);
    dnnl_memory_destroy(A), dnnl_memory_destroy(B), dnnl_memory_destroy(C);
    return bad;
}

/* 1 image, 1 channel 5x5, one 3x3 kernel, no padding: 3x3 output. */
static int do_conv(int times)
{
    dnnl_dims_t ds = {1, 1, 5, 5}, dw = {1, 1, 3, 3}, dd = {1, 1, 3, 3}, st = {1, 1}, pad = {0, 0};
    dnnl_memory_desc_t ms, mw, md;
    CHECK(dnnl_memory_desc_init_by_tag(&ms, 4, ds, dnnl_f32, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&mw, 4, dw, dnnl_f32, dnnl_oihw));
    CHECK(dnnl_memory_desc_init_by_tag(&md, 4, dd, dnnl_f32, dnnl_nchw));
    float *s, *w, *o;
    dnnl_memory_t S = mem(&ms, &s), W = mem(&mw, &w), D = mem(&md, &o);
    for (int i = 0; i < 25; i++)
        s[i] = (float)(i % 4);
    for (int i = 0; i < 9; i++)
        w[i] = (float)(i % 3 - 1);
    dnnl_convolution_desc_t d;
    CHECK(dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, &ms, &mw, NULL,
                                             &md, st, pad, pad));
    dnnl_primitive_t p = prim(&d);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, S}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_DST, D}};
    run(p, 3, args, times);
    int bad = 0;
    for (int y = 0; y < 3 && times; y++)
        for (int x = 0; x < 3; x++) {
            float acc = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    acc += s[(y + i) * 5 + x + j] * w[i * 3 + j];
            bad += o[y * 3 + x] != acc;
        }
    dnnl_primitive_destroy(p);
    dnnl_memory_destroy(S), dnnl_memory_destroy(W), dnnl_memory_destroy(D);
    return bad;
}

/* ReLU over 16 values, in place semantics on a separate dst. */
static int do_eltwise(int times)
{
    dnnl_dims_t dims = {16};
    dnnl_memory_desc_t m;
    CHECK(dnnl_memory_desc_init_by_tag(&m, 1, dims, dnnl_f32, dnnl_a));
    float *x, *y;
    dnnl_memory_t X = mem(&m, &x), Y = mem(&m, &y);
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i - 8);
    dnnl_eltwise_desc_t d;
    CHECK(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, dnnl_eltwise_relu, &m, 0.f, 0.f));
    dnnl_primitive_t p = prim(&d);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, X}, {DNNL_ARG_DST, Y}};
    run(p, 2, args, times);
    int bad = 0;
    for (int i = 0; i < 16 && times; i++)
        bad += y[i] != (x[i] > 0 ? x[i] : 0);
    dnnl_primitive_destroy(p);
    dnnl_memory_destroy(X), dnnl_memory_destroy(Y);
    return bad;
}

/* 3x4 row-major -> column-major (a transpose in memory). */
static int do_reorder(int times)
{
    dnnl_dims_t dims = {3, 4};
    dnnl_memory_desc_t ms, md;
    CHECK(dnnl_memory_desc_init_by_tag(&ms, 2, dims, dnnl_f32, dnnl_ab));
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, dnnl_ba));
    float *s, *o;
    dnnl_memory_t S = mem(&ms, &s), D = mem(&md, &o);
    for (int i = 0; i < 12; i++)
        s[i] = (float)i;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK(dnnl_reorder_primitive_desc_create(&pd, &ms, engine, &md, engine, NULL));
    CHECK(dnnl_primitive_create(&p, pd));
    CHECK(dnnl_primitive_desc_destroy(pd));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, S}, {DNNL_ARG_TO, D}};
    run(p, 2, args, times);
    int bad = 0;
    for (int i = 0; i < 3 && times; i++)
        for (int j = 0; j < 4; j++)
            bad += o[j * 3 + i] != s[i * 4 + j];
    dnnl_primitive_destroy(p);
    dnnl_memory_destroy(S), dnnl_memory_destroy(D);
    return bad;
}

int main(int argc, char **argv)
{
    int n_mm = times_arg(argc, argv, 1, 3), n_cv = times_arg(argc, argv, 2, 2);
    int n_el = times_arg(argc, argv, 3, 5), n_ro = times_arg(argc, argv, 4, 4);
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    int bad_mm = do_matmul(n_mm), bad_cv = do_conv(n_cv), bad_el = do_eltwise(n_el), bad_ro = do_reorder(n_ro);
    printf("matmul %d executions, %d wrong\n", n_mm, bad_mm);
    printf("convolution %d executions, %d wrong\n", n_cv, bad_cv);
    printf("eltwise %d executions, %d wrong\n", n_el, bad_el);
    printf("reorder %d executions, %d wrong\n", n_ro, bad_ro);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    return bad_mm || bad_cv || bad_el || bad_ro;
}
