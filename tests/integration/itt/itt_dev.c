/* itt_dev.c - ITT tasks around device work: oneDNN-style tasks (domain dnnl::primitive::execute,
 * named by primitive kind) each launching one simdev busy_ns kernel, inside an application ITT
 * task "step"; so the HGTX device projection and ppu_op_sum can be checked on ITT data.
 * usage: itt_dev  (3 matmul tasks of 10 us, 2 eltwise of 4 us, per step; 2 steps) */
#include "itt_static.h"
#include "common.h"

#include <stdio.h>

int main(void)
{
    itt_static_init(NULL);
    itt_domain *prim = ITT_CALL(domain_create, "dnnl::primitive::execute");
    itt_domain *app = ITT_CALL(domain_create, "app");
    itt_string *s_mm = ITT_CALL(string_handle_create, "matmul"), *s_el = ITT_CALL(string_handle_create, "eltwise");
    itt_string *s_step = ITT_CALL(string_handle_create, "step");
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_module_handle_t mod = sample_module_native(&env, env.devices[0], "SIMDEV-MODULE 1\n"
                                                  "kernel gemm_kernel builtin=busy_ns\nkernel relu_kernel builtin=busy_ns\n");
    ze_kernel_handle_t kmm = sample_kernel(mod, "gemm_kernel", 1), kel = sample_kernel(mod, "relu_kernel", 1);
    ze_command_list_handle_t list = sample_immediate(&env, env.devices[0], 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(&env, 1, 0);
    ze_event_handle_t done = sample_event(pool, 0);
    ze_group_count_t gc = {1, 1, 1};
    uint64_t ns_mm = 10000, ns_el = 4000;
    sample_set_arg(kmm, 0, sizeof ns_mm, &ns_mm);
    sample_set_arg(kel, 0, sizeof ns_el, &ns_el);
    for (int step = 0; step < 2; step++) {
        ITT_CALLV(task_begin, app, itt_null, itt_null, s_step);
        for (int i = 0; i < 3; i++) {
            ITT_CALLV(task_begin, prim, itt_null, itt_null, s_mm);
            SAMPLE_CHECK(zeCommandListAppendLaunchKernel(list, kmm, &gc, NULL, 0, NULL));
            ITT_CALLV(task_end, prim);
        }
        for (int i = 0; i < 2; i++) {
            ITT_CALLV(task_begin, prim, itt_null, itt_null, s_el);
            SAMPLE_CHECK(zeCommandListAppendLaunchKernel(list, kel, &gc, NULL, 0, NULL));
            ITT_CALLV(task_end, prim);
        }
        SAMPLE_CHECK(zeCommandListAppendBarrier(list, done, 0, NULL));
        SAMPLE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
        SAMPLE_CHECK(zeEventHostReset(done));
        ITT_CALLV(task_end, app);
    }
    SAMPLE_CHECK(zeEventDestroy(done));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(list));
    SAMPLE_CHECK(zeKernelDestroy(kmm));
    SAMPLE_CHECK(zeKernelDestroy(kel));
    SAMPLE_CHECK(zeModuleDestroy(mod));
    sample_env_fini(&env);
    printf("itt_dev: ok\n");
    return 0;
}
