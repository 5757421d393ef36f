/* bench_ze_calls.c - cost of a cheap traced Level Zero call: zeKernelSetArgumentValue.
 * usage: bench_ze_calls CALLS [BATCH [PAUSE_US]]  prints "call_ns X" = median over batches of ns per call.
 * Run with only ZE_ENABLE_TRACING_LAYER=1 (baseline) and with the agent preloaded.
 * BENCH_ZE_EMPTY_TRACER=1 (with ZE_ENABLE_TRACING_LAYER=1, no agent) registers a tracer of its
 * own whose prologue/epilogue do nothing: that run minus the baseline is the loader tracing
 * layer's dispatch cost once any tracer is enabled; the agent run minus it is the agent's. */
#include "common.h"

#include <level_zero/layers/zel_tracing_api.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

static void empty_cb(ze_kernel_set_argument_value_params_t *p, ze_result_t r, void *user, void **inst)
{
    (void)p, (void)r, (void)user, (void)inst;
}

/* An enabled tracer with empty callbacks on zeKernelSetArgumentValue (after zeInit). */
static void empty_tracer(void)
{
    zel_tracer_desc_t desc = { ZEL_STRUCTURE_TYPE_TRACER_EXP_DESC, NULL, NULL };
    zel_tracer_handle_t t;
    zel_core_callbacks_t cb;
    memset(&cb, 0, sizeof cb);
    cb.Kernel.pfnSetArgumentValueCb = empty_cb;
    if (zelTracerCreate(&desc, &t) != ZE_RESULT_SUCCESS || zelTracerSetPrologues(t, &cb) != ZE_RESULT_SUCCESS ||
        zelTracerSetEpilogues(t, &cb) != ZE_RESULT_SUCCESS || zelTracerSetEnabled(t, 1) != ZE_RESULT_SUCCESS)
        sample_die("BENCH_ZE_EMPTY_TRACER: cannot enable a tracer (is ZE_ENABLE_TRACING_LAYER=1?)");
}

int main(int argc, char **argv)
{
    uint64_t calls = bench_arg(argc, argv, 1, "CALLS", 10000000, 1, 1ull << 36);
    uint64_t batch = bench_arg(argc, argv, 2, "BATCH", 1000, 1, 1u << 20);
    /* untimed pause after each batch: lets the aggregator catch up, so a tight loop measures
     * recorded events (not the cheaper drop path) in a ring that stays cache-warm */
    uint64_t pause_us = bench_arg(argc, argv, 3, "PAUSE_US", 0, 0, 1000000);
    sample_env_t env;
    sample_env_init(&env, 1);
    const char *et = getenv("BENCH_ZE_EMPTY_TRACER");
    if (et && strcmp(et, "1") == 0)
        empty_tracer();
    ze_module_handle_t mod = sample_module_native(&env, env.devices[0], "SIMDEV-MODULE 1\nkernel gemm_f32\n");
    ze_kernel_handle_t k = sample_kernel(mod, "gemm_f32", 8);
    size_t nb = (size_t)((calls + batch - 1) / batch);
    double *per = malloc(nb * sizeof *per);
    if (!per)
        return 1;
    uint64_t done = 0;
    uint32_t bad = 0;
    for (size_t b = 0; b < nb; b++) {
        uint64_t n = calls - done < batch ? calls - done : batch;
        uint64_t t0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++) {
            uint32_t m = (uint32_t)i; /* argument 3 of gemm_f32: M, a uint32_t */
            bad |= (uint32_t)zeKernelSetArgumentValue(k, 3, sizeof m, &m);
        }
        per[b] = (double)(bench_now_ns() - t0) / (double)n;
        done += n;
        if (pause_us)
            usleep((useconds_t)pause_us);
    }
    if (bad)
        sample_die("zeKernelSetArgumentValue failed");
    printf("call_ns %.2f\n", bench_median(per, nb));
    free(per);
    SAMPLE_CHECK(zeKernelDestroy(k));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    sample_env_fini(&env);
    bench_main_end();
    return 0;
}
