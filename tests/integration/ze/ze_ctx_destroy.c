/* ze_ctx_destroy.c - two contexts one after the other, each running busy kernels without events
 * of the application's (the agent supplies its own), then destroying every object it made and
 * the context: the context destroy must succeed as it does without the agent.
 * usage: ze_ctx_destroy sync|nosync|leak. sync: host syncs before the destroys; nosync: none (the
 * lists' destroys wait for their work); leak: context A is destroyed with its immediate list
 * still alive (refused by a validating driver), then the list and the context are destroyed.
 * Context A: immediate list, 3 x "kA" of 20 us; regular list executed twice, 2 x "kA2" of 30 us.
 * Context B: immediate list, 4 x "kB" of 50 us. Prints "destroy A: 0x<result>" (and for leak
 * "destroy A again: 0x<result>") and "destroy B: 0x<result>"; exits 0 when every destroy the
 * mode expects to succeed did. */
#include <stdio.h>
#include <string.h>

#include "common.h"

static void launch(ze_command_list_handle_t l, ze_kernel_handle_t k, uint64_t ns)
{
    ze_group_count_t g = { 1, 1, 1 };
    SAMPLE_CHECK(zeKernelSetArgumentValue(k, 0, sizeof ns, &ns));
    SAMPLE_CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
}

/* Waits for immediate list l's work: a barrier signalling an event of a pool made for it (the
 * loader's headers may lack zeCommandListHostSynchronize); the pool is gone again on return. */
static void imm_sync(const sample_env_t *env, ze_command_list_handle_t l)
{
    ze_event_pool_handle_t pool = sample_event_pool(env, 1, 0);
    ze_event_handle_t ev = sample_event(pool, 0);
    SAMPLE_CHECK(zeCommandListAppendBarrier(l, ev, 0, NULL));
    SAMPLE_CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
    SAMPLE_CHECK(zeEventDestroy(ev));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
}

static ze_context_handle_t context_new(const sample_env_t *env)
{
    ze_context_desc_t d = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
    ze_context_handle_t c;
    SAMPLE_CHECK(zeContextCreate(env->driver, &d, &c));
    return c;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "sync";
    int sync = strcmp(mode, "sync") == 0, leak = strcmp(mode, "leak") == 0;
    if (!sync && !leak && strcmp(mode, "nosync") != 0)
        sample_die("ze_ctx_destroy: mode '%s': expected sync, nosync or leak\n", mode);
    sample_env_t env;
    sample_env_init(&env, 1);
    ze_device_handle_t dev = env.devices[0];
    sample_env_t a = env;
    a.context = context_new(&env);
    ze_module_handle_t m = sample_module_native(&a, dev, "SIMDEV-MODULE 1\nkernel kA builtin=busy_ns\n"
                                                         "kernel kA2 builtin=busy_ns\n");
    ze_kernel_handle_t ka = sample_kernel(m, "kA", 1), ka2 = sample_kernel(m, "kA2", 1);
    ze_command_list_handle_t il = sample_immediate(&a, dev, 0, 0);
    for (int i = 0; i < 3; i++)
        launch(il, ka, 20000);
    ze_command_list_handle_t rl = sample_list(&a, dev, 0);
    ze_command_queue_handle_t q = sample_queue(&a, dev, 0, 0);
    for (int i = 0; i < 2; i++)
        launch(rl, ka2, 30000);
    SAMPLE_CHECK(zeCommandListClose(rl));
    for (int e = 0; e < 2; e++) {
        SAMPLE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &rl, NULL));
        if (sync || e == 0) /* in-order: the second execution waits for nothing but the first */
            SAMPLE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    }
    if (sync)
        imm_sync(&a, il);
    SAMPLE_CHECK(zeCommandListDestroy(rl));
    SAMPLE_CHECK(zeCommandQueueDestroy(q));
    SAMPLE_CHECK(zeKernelDestroy(ka));
    SAMPLE_CHECK(zeKernelDestroy(ka2));
    SAMPLE_CHECK(zeModuleDestroy(m));
    int ok = 1;
    if (leak) {
        ze_result_t r = zeContextDestroy(a.context);
        printf("destroy A: 0x%x\n", (unsigned)r);
        imm_sync(&a, il);
    }
    SAMPLE_CHECK(zeCommandListDestroy(il));
    ze_result_t r = zeContextDestroy(a.context);
    printf("destroy A%s: 0x%x\n", leak ? " again" : "", (unsigned)r);
    ok &= r == ZE_RESULT_SUCCESS;

    sample_env_t b = env;
    b.context = context_new(&env);
    m = sample_module_native(&b, dev, "SIMDEV-MODULE 1\nkernel kB builtin=busy_ns\n");
    ze_kernel_handle_t kb = sample_kernel(m, "kB", 1);
    il = sample_immediate(&b, dev, 0, 0);
    for (int i = 0; i < 4; i++)
        launch(il, kb, 50000);
    imm_sync(&b, il);
    SAMPLE_CHECK(zeCommandListDestroy(il));
    SAMPLE_CHECK(zeKernelDestroy(kb));
    SAMPLE_CHECK(zeModuleDestroy(m));
    r = zeContextDestroy(b.context);
    printf("destroy B: 0x%x\n", (unsigned)r);
    ok &= r == ZE_RESULT_SUCCESS;
    sample_env_fini(&env);
    return ok ? 0 : 1;
}
