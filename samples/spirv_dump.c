/* spirv_dump.c - test helper: writes the SPIR-V module that sample_spirv_build() makes for the
 * kernels the samples use to stdout, so a test can run spirv-val on it.  usage: spirv_dump */
#include "common.h"

#include <stdio.h>

int main(void)
{
    static const sample_spirv_kernel_t kernels[] = {
        {"_Z5saxpyfPKfPfj", "fppu"}, {"vector_add", "pppu"}, {"fill_u32", "quu"},
        {"busy_ns", "l"},           {"other_add", "pppu"},   {"allreduce_sum_f32", "puuul"}};
    uint32_t words[1024];
    size_t n = sample_spirv_build(words, 1024, kernels, sizeof(kernels) / sizeof(kernels[0]));
    if (n == 0 || sample_spirv_build(words, 8, kernels, 1) != 0) {
        fprintf(stderr, "spirv_dump: builder failed (or did not report a too-small buffer)\n");
        return 1;
    }
    n = sample_spirv_build(words, 1024, kernels, sizeof(kernels) / sizeof(kernels[0]));
    return fwrite(words, sizeof(uint32_t), n, stdout) == n ? 0 : 1;
}
