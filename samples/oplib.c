/* oplib.c - the sample operator library (oplib.h): operators as simdev busy_ns kernels inside
 * HGTX ranges named like the spec's instrumented libraries, when OPLIB_PERF_INSTRUMENT=1. */
#include "oplib.h"

#include <profagent/hgtx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const KERNELS[] = {"gemm_bf16_tn", "moe_route", "moe_gemm1_bf16", "moe_act", "moe_gemm2_bf16",
                                      "moe_combine", "fmha_fwd_bf16", "allreduce_bf16", "fill_kernel", "copy_kernel"};
#define NKERN (sizeof KERNELS / sizeof KERNELS[0])

struct oplib {
    ze_command_list_handle_t list;
    ze_module_handle_t mod;
    ze_kernel_handle_t k[NKERN];
    ze_event_pool_handle_t pool;
    ze_event_handle_t done;
    int instrument;
    FILE *log;
    char line[4096];
    size_t line_len;
};

oplib_t *oplib_create(const sample_env_t *env, ze_device_handle_t dev, FILE *log)
{
    oplib_t *l = calloc(1, sizeof *l);
    if (!l)
        sample_die("out of memory");
    char text[1024] = "SIMDEV-MODULE 1\n";
    for (size_t i = 0; i < NKERN; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "kernel %s builtin=busy_ns\n", KERNELS[i]);
    l->mod = sample_module_native(env, dev, text);
    for (size_t i = 0; i < NKERN; i++)
        l->k[i] = sample_kernel(l->mod, KERNELS[i], 1);
    l->list = sample_immediate(env, dev, 0, 0);
    l->pool = sample_event_pool(env, 1, 0);
    l->done = sample_event(l->pool, 0);
    const char *v = getenv("OPLIB_PERF_INSTRUMENT");
    l->instrument = v && strcmp(v, "1") == 0;
    l->log = log;
    return l;
}

static void op_begin(oplib_t *l, const char *name)
{
    if (l->instrument)
        hgtxRangePushA(name);
    l->line_len = (size_t)snprintf(l->line, sizeof l->line, "op %s\t", l->instrument ? name : "-");
}

static void op_end(oplib_t *l)
{
    if (l->instrument)
        hgtxRangePop();
    if (l->log)
        fprintf(l->log, "%s\n", l->line);
}

static void launch(oplib_t *l, size_t idx, uint64_t ns)
{
    sample_set_arg(l->k[idx], 0, sizeof ns, &ns);
    ze_group_count_t gc = {1, 1, 1};
    SAMPLE_CHECK(zeCommandListAppendLaunchKernel(l->list, l->k[idx], &gc, NULL, 0, NULL));
    if (l->line_len < sizeof l->line)
        l->line_len += (size_t)snprintf(l->line + l->line_len, sizeof l->line - l->line_len, "%s%s=%llu",
                                        l->line[l->line_len - 1] == '\t' ? "" : ",", KERNELS[idx],
                                        (unsigned long long)ns);
}

void oplib_gemm(oplib_t *l, uint32_t m, uint32_t n, uint32_t k, uint64_t ns)
{
    char name[256];
    snprintf(name, sizeof name, "ACBLAS:GemmEx,t,n,%u,%u,%u,%u,%u,%u,1,0,1,DEFAULT,BF16,ACBLAS_GEMM_DEFAULT_TENSOR_OP,"
             "32F,EPILOGUE_DEFAULT", m, n, k, k, k, m);
    op_begin(l, name);
    launch(l, 0, ns);
    op_end(l);
}

void oplib_moe(oplib_t *l, uint32_t m, uint32_t e, uint32_t h, uint32_t in, uint32_t topk, const uint32_t *experts,
               size_t n_experts, const uint64_t ns[5])
{
    char name[1024];
    int n = snprintf(name, sizeof name, "MoE:M_%u_E_%u_H_%u_In_%u_topk_%u_", m, e, h, in, topk);
    if (experts && n_experts) {
        n += snprintf(name + n, sizeof name - (size_t)n, "topkids[");
        size_t uniq = 0;
        for (size_t i = 0; i < n_experts; i++) {
            n += snprintf(name + n, sizeof name - (size_t)n, "%s%u", i ? "," : "", experts[i]);
            size_t j = 0;
            while (j < i && experts[j] != experts[i])
                j++;
            uniq += j == i;
        }
        snprintf(name + n, sizeof name - (size_t)n, "]_unique_%zu", uniq);
    } else {
        snprintf(name + n, sizeof name - (size_t)n, "random");
    }
    op_begin(l, name);
    for (size_t i = 0; i < 5; i++)
        launch(l, 1 + i, ns[i]);
    op_end(l);
}

void oplib_fmha(oplib_t *l, size_t nseq, const uint32_t *q, const uint32_t *k, uint32_t heads, uint32_t kv_heads,
                uint32_t head_dim, uint32_t num_blocks, uint64_t ns)
{
    uint32_t maxq = 0, maxk = 0;
    for (size_t i = 0; i < nseq; i++) {
        maxq = q[i] > maxq ? q[i] : maxq;
        maxk = k[i] > maxk ? k[i] : maxk;
    }
    char name[2048], cu[512] = "[0", ks[512] = "[";
    uint32_t acc = 0;
    for (size_t i = 0; i < nseq; i++) {
        acc += q[i];
        snprintf(cu + strlen(cu), sizeof cu - strlen(cu), ", %u", acc);
        snprintf(ks + strlen(ks), sizeof ks - strlen(ks), "%s%u", i ? ", " : "", k[i]);
    }
    strcat(cu, "]");
    strcat(ks, "]");
    snprintf(name, sizeof name, "FMHA:flash_attn_v2.7.2,Forward,custom_mask:1,seqlen_q:%u,is_fixed_seqs:0,head_dim:%u,"
             "head_dim_value:%u,num_heads_k:%u,num_heads:%u,batch_size:%zu,seqlen_k:%u,data_type:bf16,"
             "softcap:0.0000,paged_kv:1,num_blocks:%u,page_block_size:16,cu_seqlens_q:%s,seqlens_k:%s",
             maxq, head_dim, head_dim, kv_heads, heads, nseq, maxk, num_blocks, cu, ks);
    op_begin(l, name);
    launch(l, 6, ns);
    op_end(l);
}

void oplib_allreduce(oplib_t *l, uint32_t count, uint64_t send, uint64_t recv, uint64_t ns)
{
    char name[256];
    snprintf(name, sizeof name, "AllReduce, p:0, c:%u, d:9, r:1, w:1, h:5a3e91c07b2d4f18, t:1, b:0x%llx/0x%llx", count,
             (unsigned long long)send, (unsigned long long)recv);
    op_begin(l, name);
    launch(l, 7, ns);
    op_end(l);
}

void oplib_kernel(oplib_t *l, const char *name, uint64_t ns)
{
    for (size_t i = 8; i < NKERN; i++)
        if (strcmp(KERNELS[i], name) == 0) {
            l->line_len = (size_t)snprintf(l->line, sizeof l->line, "kernel\t");
            launch(l, i, ns);
            if (l->log)
                fprintf(l->log, "%s\n", l->line);
            return;
        }
    sample_die("oplib_kernel: no kernel '%s'", name);
}

void oplib_sync(oplib_t *l)
{
    SAMPLE_CHECK(zeCommandListAppendBarrier(l->list, l->done, 0, NULL));
    SAMPLE_CHECK(zeEventHostSynchronize(l->done, UINT64_MAX));
    SAMPLE_CHECK(zeEventHostReset(l->done));
}

void oplib_destroy(oplib_t *l)
{
    oplib_sync(l);
    SAMPLE_CHECK(zeEventDestroy(l->done));
    SAMPLE_CHECK(zeEventPoolDestroy(l->pool));
    for (size_t i = 0; i < NKERN; i++)
        SAMPLE_CHECK(zeKernelDestroy(l->k[i]));
    SAMPLE_CHECK(zeModuleDestroy(l->mod));
    SAMPLE_CHECK(zeCommandListDestroy(l->list));
    free(l);
}
