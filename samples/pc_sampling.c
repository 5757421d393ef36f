/* pc_sampling.c - sample: the PTI PC-sampling usage sequence step by step (Enable, Configure, Start,
 * run kernels, Stop, then every query), printing per-instruction stall samples with source lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pti/pti_pc_sampling.h"

/*
 * usage: pc_sampling [SPIRV_FILE KERNEL [RUNS [ITEMS]]]
 *   With a SPIR-V module (e.g. OpenCL C built with clang -g and llvm-spirv), runs KERNEL RUNS
 *   times over ITEMS work items (default 10 runs of 1048576; buffer arguments: device allocations
 *   of ITEMS floats; 32-bit scalar arguments: 16); without, runs simdev's busy_ns builtin (20 ms).
 * Output (one line each, parsed by the tests):
 *   kernel <handle> <name> device <index> samples <total> instructions <n> reasons <c0> <c1> ...
 *   instr <handle> 0x<offset> <file>:<line>|- <c0> <c1> ...
 */

#define PTI_CHECK(call)                                                                                   \
    do {                                                                                                  \
        pti_result r_ = (call);                                                                           \
        if (r_ != PTI_SUCCESS) {                                                                          \
            fprintf(stderr, "%s failed: %s (%d)\n", #call, ptiResultTypeToString(r_), (int)r_);         \
            exit(r_ == PTI_ERROR_PC_SAMPLING_UNSUPPORTED ? 3 : 1);                                        \
        }                                                                                                 \
    } while (0)

/* Runs the workload: the SPIR-V kernel `name` runs times, or busy_ns. */
static void workload(sample_env_t *env, int argc, char **argv)
{
    ze_device_handle_t dev = env->devices[0];
    ze_command_list_handle_t list = sample_immediate(env, dev, 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(env, 1, 0);
    ze_event_handle_t done = sample_event(pool, 0);
    if (argc < 3) {
        ze_module_handle_t mod = sample_module_native(env, dev, "SIMDEV-MODULE 1\nkernel busy_ns\n");
        ze_kernel_handle_t k = sample_kernel(mod, "busy_ns", 1);
        uint64_t ns = 20000000;
        sample_set_arg(k, 0, sizeof ns, &ns);
        sample_launch_1d(list, k, 1, 1, done);
        SAMPLE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
        SAMPLE_CHECK(zeKernelDestroy(k));
        SAMPLE_CHECK(zeModuleDestroy(mod));
        goto out;
    }
    uint64_t runs = sample_arg_u64(argc, argv, 3, "RUNS", 10, 1, 1000000);
    uint32_t items = (uint32_t)sample_arg_u64(argc, argv, 4, "ITEMS", 1u << 20, 64, 1u << 26);
    uint32_t scalar = 16; /* e.g. a loop count */
    ze_module_handle_t mod = sample_module_spirv_file(env, dev, argv[1]);
    ze_kernel_handle_t k = sample_kernel(mod, argv[2], 64);
    ze_kernel_properties_t kp = {.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES};
    SAMPLE_CHECK(zeKernelGetProperties(k, &kp));
    void *bufs[16] = {0};
    /* arguments: a device buffer of ITEMS floats where the kernel takes a pointer, 16 where it
     * takes a 32-bit scalar (the size check of zeKernelSetArgumentValue tells them apart) */
    for (uint32_t a = 0; a < kp.numKernelArgs && a < 16; a++) {
        bufs[a] = sample_alloc_device(env, dev, (size_t)items * sizeof(float));
        if (zeKernelSetArgumentValue(k, a, sizeof bufs[a], &bufs[a]) != ZE_RESULT_SUCCESS)
            SAMPLE_CHECK(zeKernelSetArgumentValue(k, a, sizeof scalar, &scalar));
    }
    for (uint64_t i = 0; i < runs; i++) {
        sample_launch_1d(list, k, items, 64, done);
        SAMPLE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
        SAMPLE_CHECK(zeEventHostReset(done));
    }
    for (uint32_t a = 0; a < 16; a++)
        if (bufs[a])
            SAMPLE_CHECK(zeMemFree(env->context, bufs[a]));
    SAMPLE_CHECK(zeKernelDestroy(k));
    SAMPLE_CHECK(zeModuleDestroy(mod));
out:
    SAMPLE_CHECK(zeEventDestroy(done));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(list));
}

int main(int argc, char **argv)
{
    sample_env_t env;
    sample_env_init(&env, 1);

    /* 1. Enable: one collection handle */
    pti_pc_sampling_handle_t h = NULL;
    PTI_CHECK(ptiPcSamplingEnable(&h));
    /* 2. Configure: all devices (NULL), the default period (0 = 100000 ns) */
    PTI_CHECK(ptiPcSamplingConfigure(h, NULL, 0, 0));
    /* 3./4. buffer sizes: not implemented (spec), the library sizes its buffers itself */
    size_t bsize = 0;
    if (ptiPcSamplingQueryCollectionBufferSize(h, &bsize) != PTI_ERROR_NOT_IMPLEMENTED)
        sample_die("QueryCollectionBufferSize: expected PTI_ERROR_NOT_IMPLEMENTED");
    /* 5. Start, the work, 6. Stop */
    PTI_CHECK(ptiPcSamplingStartCollection(h));
    workload(&env, argc, argv);
    PTI_CHECK(ptiPcSamplingStopCollection(h));

    /* 7. stall reasons (two calls) */
    size_t nreasons = 0;
    PTI_CHECK(ptiPcSamplingGetStallReasons(h, NULL, &nreasons));
    pti_pc_sampling_stall_reason_info_t *reasons = calloc(nreasons, sizeof *reasons);
    for (size_t i = 0; i < nreasons; i++)
        reasons[i]._struct_size = sizeof reasons[i];
    PTI_CHECK(ptiPcSamplingGetStallReasons(h, reasons, &nreasons));
    printf("reasons");
    for (size_t i = 0; i < nreasons; i++)
        printf(" %s", reasons[i]._name);
    printf("\n");

    /* 8. profiled devices (two calls) */
    size_t ndev = 0;
    PTI_CHECK(ptiPcSamplingGetProfiledDevices(h, NULL, &ndev));
    pti_device_handle_t *devs = calloc(ndev ? ndev : 1, sizeof *devs);
    PTI_CHECK(ptiPcSamplingGetProfiledDevices(h, devs, &ndev));
    for (size_t d = 0; d < ndev; d++) {
        uint32_t di = 0;
        for (uint32_t i = 0; i < env.num_devices; i++)
            if (env.devices[i] == devs[d])
                di = i;
        /* 9. device status */
        pti_pc_sampling_device_status_t st = {._struct_size = sizeof st};
        PTI_CHECK(ptiPcSamplingGetDeviceStatus(h, devs[d], &st));
        printf("device %u samples %llu pcs %llu dropped %u\n", di, (unsigned long long)st._total_sample_count,
               (unsigned long long)st._total_pc_count, st._samples_dropped);
        /* 10. observed kernels (two calls) */
        size_t nk = 0;
        PTI_CHECK(ptiPcSamplingGetObservedKernelHandles(h, devs[d], NULL, &nk));
        uint64_t *ks = calloc(nk ? nk : 1, sizeof *ks);
        PTI_CHECK(ptiPcSamplingGetObservedKernelHandles(h, devs[d], ks, &nk));
        for (size_t k = 0; k < nk; k++) {
            /* 11. kernel info with per-reason totals */
            uint64_t *agg = calloc(nreasons, sizeof *agg);
            pti_pc_sampling_kernel_info_t ki = {._struct_size = sizeof ki, ._aggregated_samples = agg};
            PTI_CHECK(ptiPcSamplingGetObservedKernelInfo(h, devs[d], ks[k], &ki));
            uint64_t total = 0;
            for (size_t r = 0; r < ki._reason_count; r++)
                total += agg[r];
            printf("kernel %llu %s device %u samples %llu instructions %zu reasons", (unsigned long long)ks[k],
                   ki._kernel_name, di, (unsigned long long)total, ki._instructions_with_samples_count);
            for (size_t r = 0; r < ki._reason_count; r++)
                printf(" %llu", (unsigned long long)agg[r]);
            printf("\n");
            /* 12. samples per instruction: samples[i * _reason_count + j] */
            size_t ni = ki._instructions_with_samples_count;
            pti_pc_sampling_instruction_t *ins = calloc(ni ? ni : 1, sizeof *ins);
            uint64_t *smp = calloc(ni * ki._reason_count + 1, sizeof *smp);
            PTI_CHECK(ptiPcSamplingGetSamplesPerInstruction(h, devs[d], ks[k], ins, ni, smp, ni * ki._reason_count));
            for (size_t i = 0; i < ni; i++) {
                printf("instr %llu 0x%llx ", (unsigned long long)ks[k], (unsigned long long)ins[i]._instruction_offset);
                if (ins[i]._source_info && ins[i]._source_info->_file_path)
                    printf("%s:%llu", ins[i]._source_info->_file_path,
                           (unsigned long long)ins[i]._source_info->_file_line);
                else
                    printf("-");
                for (size_t r = 0; r < ki._reason_count; r++)
                    printf(" %llu", (unsigned long long)smp[i * ki._reason_count + r]);
                printf("\n");
            }
            free(ins);
            free(smp);
            free(agg);
        }
        free(ks);
    }
    /* 13. Disable frees everything the library owns */
    PTI_CHECK(ptiPcSamplingDisable(h));
    free(devs);
    free(reasons);
    sample_env_fini(&env);
    return 0;
}
