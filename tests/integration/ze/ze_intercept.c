/* ze_intercept.c - an application with a Level Zero tracer of its own (when the tracing layer is
 * enabled) that makes a known number of calls, one of them invalid (a NULL kernel handle: the
 * validation layer, when enabled, answers it), and prints what it saw:
 *   tracer 0|1          its zelTracerCreate/enable succeeded
 *   pro_setarg N        its prologue count of zeKernelSetArgumentValue
 *   epi_setarg N        its epilogue count of zeKernelSetArgumentValue
 *   pro_groupsize N     its prologue count of zeKernelSetGroupSize
 *   bad_result 0xR      result of zeKernelSetArgumentValue(NULL, ...)
 *   badpool_result 0xR  result of zeEventPoolCreate with undefined flag bits (0xff00): the
 *                       validation layer's INVALID_ENUMERATION; the device accepts them
 * usage: ze_intercept CALLS   (zeKernelSetArgumentValue CALLS times, zeKernelSetGroupSize 7 times) */
#include "common.h"

#include <level_zero/layers/zel_tracing_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned pro_setarg, epi_setarg, pro_groupsize;

static void on_setarg_pro(ze_kernel_set_argument_value_params_t *p, ze_result_t r, void *user, void **inst)
{
    (void)p, (void)r, (void)user, (void)inst;
    pro_setarg++;
}

static void on_setarg_epi(ze_kernel_set_argument_value_params_t *p, ze_result_t r, void *user, void **inst)
{
    (void)p, (void)r, (void)user, (void)inst;
    epi_setarg++;
}

static void on_groupsize_pro(ze_kernel_set_group_size_params_t *p, ze_result_t r, void *user, void **inst)
{
    (void)p, (void)r, (void)user, (void)inst;
    pro_groupsize++;
}

/* 1 when a tracer of our own could be created and enabled (the tracing layer is loaded). */
static int own_tracer(void)
{
    zel_tracer_desc_t desc = {ZEL_STRUCTURE_TYPE_TRACER_EXP_DESC, NULL, NULL};
    zel_tracer_handle_t t;
    zel_core_callbacks_t pro, epi;
    memset(&pro, 0, sizeof pro);
    memset(&epi, 0, sizeof epi);
    pro.Kernel.pfnSetArgumentValueCb = on_setarg_pro;
    pro.Kernel.pfnSetGroupSizeCb = on_groupsize_pro;
    epi.Kernel.pfnSetArgumentValueCb = on_setarg_epi;
    return zelTracerCreate(&desc, &t) == ZE_RESULT_SUCCESS && zelTracerSetPrologues(t, &pro) == ZE_RESULT_SUCCESS &&
           zelTracerSetEpilogues(t, &epi) == ZE_RESULT_SUCCESS && zelTracerSetEnabled(t, 1) == ZE_RESULT_SUCCESS;
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    if (calls < 1 || calls > 100000000)
        sample_die("CALLS must be 1..100000000");
    sample_env_t env;
    sample_env_init(&env, 1);
    int tracer = own_tracer();
    ze_module_handle_t mod = sample_module_native(&env, env.devices[0], "SIMDEV-MODULE 1\nkernel gemm_f32\n");
    ze_kernel_handle_t k = sample_kernel(mod, "gemm_f32", 8);
    for (long i = 0; i < calls; i++) {
        uint32_t m = (uint32_t)i;
        SAMPLE_CHECK(zeKernelSetArgumentValue(k, 3, sizeof m, &m));
    }
    for (int i = 0; i < 7; i++)
        SAMPLE_CHECK(zeKernelSetGroupSize(k, 8, 1, 1));
    uint32_t m = 0;
    ze_result_t bad = zeKernelSetArgumentValue(NULL, 3, sizeof m, &m);
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, 0xff00, 1};
    ze_event_pool_handle_t pool = NULL;
    ze_result_t badpool = zeEventPoolCreate(env.context, &pd, 1, &env.devices[0], &pool);
    if (badpool == ZE_RESULT_SUCCESS)
        SAMPLE_CHECK(zeEventPoolDestroy(pool));
    printf("tracer %d\npro_setarg %u\nepi_setarg %u\npro_groupsize %u\nbad_result 0x%x\nbadpool_result 0x%x\n",
           tracer, pro_setarg, epi_setarg, pro_groupsize, (unsigned)bad, (unsigned)badpool);
    SAMPLE_CHECK(zeKernelDestroy(k));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    sample_env_fini(&env);
    return 0;
}
