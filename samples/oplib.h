/* oplib.h - a sample operator library: GEMM, MoE (two GEMMs), FMHA prefill/decode and AllReduce
 * operators, each a sequence of simdev kernels with exact device times (busy_ns). With
 * OPLIB_PERF_INSTRUMENT=1 in the environment each operator call is wrapped in an HGTX range
 * named by the operator grammar of the spec's libraries (`<TYPE>:<parameters>`), so profagent's
 * ppu_op_sum / moe_op_sum can be checked against known workloads; otherwise no range is made. */
#ifndef PA_SAMPLES_OPLIB_H
#define PA_SAMPLES_OPLIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

typedef struct oplib oplib_t;

/*! oplib_create() : kernels on `dev`, launched on an immediate list; reads OPLIB_PERF_INSTRUMENT.
 *  `log` (may be NULL) gets one line per operator call: "op <range name>\t<kernel>=<ns>,...". */
oplib_t *oplib_create(const sample_env_t *env, ze_device_handle_t dev, FILE *log);
/*! oplib_sync() : waits for every launched kernel. */
void oplib_sync(oplib_t *l);
void oplib_destroy(oplib_t *l);

/*! oplib_gemm() : C[m,n] = A x B in bf16 (ACBLAS:GemmEx,t,n,...): one kernel of `ns`. */
void oplib_gemm(oplib_t *l, uint32_t m, uint32_t n, uint32_t k, uint64_t ns);

/*! oplib_moe() : a mixture-of-experts layer for m tokens, e experts, hidden h, intermediate in,
 *  topk: five kernels route, gemm1, act, gemm2, combine with ns[0..4]. `experts` (n_experts ids,
 *  may be NULL) names the routed expert ids: the name then carries topkids[...]_unique_<n>,
 *  else "random". */
void oplib_moe(oplib_t *l, uint32_t m, uint32_t e, uint32_t h, uint32_t in, uint32_t topk, const uint32_t *experts,
               size_t n_experts, const uint64_t ns[5]);

/*! oplib_fmha() : flash attention forward over nseq sequences with q[i] query and k[i] key tokens
 *  (causal), heads/kv_heads of head_dim; num_blocks is the paged KV cache size. One kernel. */
void oplib_fmha(oplib_t *l, size_t nseq, const uint32_t *q, const uint32_t *k, uint32_t heads, uint32_t kv_heads,
                uint32_t head_dim, uint32_t num_blocks, uint64_t ns);

/*! oplib_allreduce() : an AllReduce of `count` bf16 values between buffers at send/recv. */
void oplib_allreduce(oplib_t *l, uint32_t count, uint64_t send, uint64_t recv, uint64_t ns);

/*! oplib_kernel() : a plain kernel outside any operator. */
void oplib_kernel(oplib_t *l, const char *name, uint64_t ns);

#endif
