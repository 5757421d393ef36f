/* writer_op.h - operator ranges: names parsed into type, merge key and workload (report_op_parse.c),
 * for ppu_op_sum and moe_op_sum (report_op.c). */
#ifndef PA_WRITER_OP_H
#define PA_WRITER_OP_H

#include <stddef.h>

/*
 * An operator is an HGTX range whose name follows the grammar of spec "PPU operator summary":
 * `<TYPE>:<parameters>` for TYPE MoE, ACBLAS (GEMM) and FMHA, `<Collective>, k:v, ...` for the
 * collectives (AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, Send, Recv),
 * or any range of oneDNN's ITT domain `dnnl::primitive::execute` (type = the primitive kind).
 */

/* Merge switches (report options no-merge-*): 1 keeps the minor parameters apart. */
typedef struct pa_op_merge {
    int no_merge_fmha_param, no_merge_fmha_prefill_decode, no_merge_pccl_param, no_merge_moe_param;
} pa_op_merge_t;

/* Workload of an operator (or of one of MoE's GEMMs); < 0 = unknown. */
typedef struct pa_op_work { double flops, load_bytes, store_bytes; } pa_op_work_t;

enum pa_op_family { PA_OP_NONE = 0, PA_OP_MOE, PA_OP_GEMM, PA_OP_FMHA, PA_OP_PCCL, PA_OP_ONEDNN };

typedef struct pa_op_info {
    int family;               /* enum pa_op_family; PA_OP_NONE: not an operator */
    char type[48];            /* "MoE", "ACBLAS", "FMHA", "AllReduce", "matmul", ... */
    char *key;                /* group key (malloc'd): the name with minor parameters as '*' */
    pa_op_work_t work;        /* the whole operator */
    pa_op_work_t gemm[2];     /* MoE: its first and second GEMM */
    /* FMHA: 1 = decode (one query token per sequence), 0 = prefill; head configuration for
     * pairing a decode with the prefill before it */
    int fmha_decode;
    char fmha_heads[96];
} pa_op_info_t;

/*! pa_op_parse() : classifies range `name` (bytes, not NUL-terminated; `domain` NUL-terminated,
 *  "" for none) and fills *out; out->key is malloc'd when family != PA_OP_NONE (free it with
 *  pa_op_info_free). Returns out->family. Workload formulas: docs/operators.md. */
int pa_op_parse(const char *name, size_t len, const char *domain, const pa_op_merge_t *m, pa_op_info_t *out);
void pa_op_info_free(pa_op_info_t *o);

/*! pa_op_is_collective() : 1 when `type` is a PCCL collective type name. */
int pa_op_is_collective(const char *type);

#endif
