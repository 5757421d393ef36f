/* writer_op.h - operator ranges: names parsed into type, merge key and workload (report_op_parse.c),
 * for ppu_op_sum and moe_op_sum (report_op.c). */
#ifndef PA_WRITER_OP_H
#define PA_WRITER_OP_H

#include <sqlite3.h>
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

/* How pa_op_scan_rows() walks a report's (range, kernel) rows into its instance array. */
typedef struct pa_op_scan {
    const pa_op_merge_t *mg;
    int family;            /* keep only this family; PA_OP_NONE keeps every operator */
    void **v;              /* the instance array (elem bytes each), *n used of *cap, grown here */
    size_t *n, *cap, elem;
    /* first row of a kept range: inst is a zeroed element appended to the array; info and name
     * (a NUL-terminated copy of the range name) now belong to the instance */
    void (*begin)(void *ctx, void *inst, sqlite3_stmt *st, pa_op_info_t *info, char *name);
    /* every row of a kept range, its first included: 0, or -1 when out of memory */
    int (*row)(void *ctx, void *inst, sqlite3_stmt *st);
    void *ctx;
} pa_op_scan_t;

/*! pa_op_scan_rows() : steps st, whose rows are ordered by range and start with its id (column 0,
 *  integer), name (1, blob) and domain (2, text or NULL). The first row of each range is parsed
 *  once (pa_op_parse with sc->mg); a range that is no operator, or not of sc->family, is skipped
 *  with all its rows. Finalizes st. Returns PA_REP_OK; PA_REP_EDATA with err set when stepping
 *  failed or memory ran out ("report '<report>': out of memory ..."; never a silently shorter
 *  table): the instances appended so far stay in the array for the caller to free. */
int pa_op_scan_rows(sqlite3 *db, sqlite3_stmt *st, const pa_op_scan_t *sc, const char *report, char *err,
                    size_t errsz);

#endif
