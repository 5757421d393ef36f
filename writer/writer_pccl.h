/* writer_pccl.h - collective (PCCL) kernels and communications, shared by the reports of
 * report_pccl.c (desync trace/summary, transfer stages) and report_pccl_op.c (operators). */
#ifndef PA_WRITER_PCCL_H
#define PA_WRITER_PCCL_H

#include <stddef.h>
#include <stdint.h>

/* Default collective-kernel pattern (PCRE2, unanchored, matched against the demangled and the
 * stored kernel name): oneCCL's Level Zero kernels (src/kernels/kernels.cl: allreduce_kernel_*,
 * alltoallv_kernel_*, reduce_local_{in,outof}place_kernel_*, reduce_single_local_inplace_kernel_*,
 * {reduce,write,read_write}_monolithic_kernel_*, ring_allreduce), oneCCL's SYCL kernels (names in
 * namespace ccl:: with a collective in them) and the samples' allreduce_* (simdev
 * allreduce_sum_f32). docs/collectives.md. */
#define PA_PCCL_DEFAULT_RE \
    "(?i)^(allreduce|allgatherv?|alltoallv?|reduce_scatter|broadcast|bcast|" \
    "reduce_local_(in|outof)place|reduce_single_local_inplace|(reduce|write|read_write)_monolithic)_" \
    "|^ring_allreduce|\\bccl::.*(allreduce|allgather|alltoall|reduce_scatter|broadcast)"

#define PA_PCCL_OPT_CCL {"ccl", PA_OPT_REGEX, "<regex>", "Perl-compatible regular expression (PCRE2) naming the collective kernels\n(matched, unanchored, against the demangled and the stored name). Default:\noneCCL's kernels and the samples' allreduce_* (docs/collectives.md).", NULL}

/* One execution taking part in a communication: a kernel (desync reports) or an operator
 * instance (pccl_op_sum: its kernels' span and summed time). */
typedef struct pa_pccl_exec {
    int64_t start, end;   /* ns */
    int64_t pid, dev;     /* process (globalTid >> 32) and device id */
    int64_t id;           /* kernel: corrId; operator instance: range id */
    int64_t ns;           /* time that counts: kernel end - start, or the instance's kernel sum */
    size_t name;          /* caller's index of its name */
} pa_pccl_exec_t;

/*! pa_pccl_group() : splits `v` (n executions sorted by start, then end) into communications:
 *  maximal runs in which each execution starts before the latest end so far and no (pid, dev)
 *  repeats (a device's next collective starts the next communication). Writes the index of each
 *  run's first execution to `first` (n + 1 entries; first[ng] = n) and returns ng. */
size_t pa_pccl_group(const pa_pccl_exec_t *v, size_t n, size_t *first);

#endif
