/* ops.c - sample: a fixed schedule of operators from the sample operator library (oplib.h) on
 * simdev: GEMMs, MoE layers (mergeable and not), FMHA prefill+decode steps, AllReduces and plain
 * kernels; prints one line per call (range name, kernels and their device ns) for checking.
 * Run with OPLIB_PERF_INSTRUMENT=1 to get the operator ranges.  usage: ops [STEPS] (default 2) */
#include "oplib.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    uint32_t steps = (uint32_t)sample_arg_u64(argc, argv, 1, "STEPS", 2, 1, 1000);
    sample_env_t env;
    sample_env_init(&env, 1);
    oplib_t *l = oplib_create(&env, env.devices[0], stdout);
    static const uint32_t ids_a[] = {1, 2, 3, 1}, ids_b[] = {4, 5, 6, 6};
    for (uint32_t s = 0; s < steps; s++) {
        oplib_gemm(l, 256, 8, 512, 10000 + 2000 * s);
        oplib_gemm(l, 256, 8, 512, 14000 + 2000 * s);
        const uint64_t m1[5] = {1000, 20000 + 1000 * s, 500, 15000 + 1000 * s, 700};
        const uint64_t m2[5] = {1100, 22000, 600, 16000, 800};
        oplib_moe(l, 8, 16, 512, 128, 2, ids_a, 4, m1);
        oplib_moe(l, 8, 16, 512, 128, 2, ids_b, 4, m2);
        const uint64_t m3[5] = {2000, 60000, 1000, 40000, 1500};
        oplib_moe(l, 64, 16, 512, 128, 2, NULL, 0, m3);
        const uint32_t pq[] = {128}, pk[] = {128}, dq[] = {1, 1, 1, 1}, dk[] = {200, 210, 220, 230};
        oplib_fmha(l, 1, pq, pk, 8, 1, 64, 1000 + s, 40000 + 4000 * s);
        oplib_fmha(l, 4, dq, dk, 8, 1, 64, 1000 + s, 9000);
        oplib_allreduce(l, 16384, 0x643000000ull, 0x643008000ull, 30000);
        oplib_allreduce(l, 16384, 0x700000000ull + 0x10000ull * s, 0x700008000ull, 34000);
        oplib_kernel(l, "fill_kernel", 3000);
        oplib_sync(l);
    }
    oplib_kernel(l, "copy_kernel", 5000);
    oplib_destroy(l);
    sample_env_fini(&env);
    printf("ops: %u steps done\n", steps);
    return 0;
}
