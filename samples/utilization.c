/* utilization.c - sample: workloads of known instruction mix and bytes for device utilization, one
 * HGTX range each: "alu" (arithmetic only), "loadstore" (global loads/stores), "xmx" (the matrix
 * path), "copies" (a copy train of known bytes on the copy engine). Prints each kernel's device
 * code as the driver gives it (zeModuleGetNativeBinary) so a test computes the mix by hand.
 *
 * usage: utilization SPIRV_DIR [RUNS]
 * Output (one line each, parsed by the tests):
 *   kernel <range> <name> items <n> group <g> runs <r>
 *   isa <name> <index> <class id> <loop depth> <bytes>      (simdev README "ISA model" encoding)
 *   copy <range> <path h2d|d2h|d2d> <bytes> ordinal <o>     (one line per copy appended)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <profagent/hgtx.h>

#include "common.h"

#define ITEMS 16384u
#define GROUP 64u
#define ITERS 16u

typedef ze_result_t (*base_fn_t)(ze_kernel_handle_t, uint64_t *);

/* The kernel's instructions from the module's code range: 16 bytes each from its base address up
 * to the first all-zero slot (padding) or the end (simdev README "Addresses"). */
static void print_isa(const sample_env_t *env, ze_module_handle_t mod, ze_kernel_handle_t k, const char *name)
{
    base_fn_t base_of = NULL;
    SAMPLE_CHECK(zeDriverGetExtensionFunctionAddress(env->driver, "zexKernelGetBaseAddress", (void **)&base_of));
    size_t n = 0;
    SAMPLE_CHECK(zeModuleGetNativeBinary(mod, &n, NULL));
    uint8_t *bin = malloc(n ? n : 1);
    SAMPLE_CHECK(zeModuleGetNativeBinary(mod, &n, bin));
    uint64_t base = 0;
    SAMPLE_CHECK(base_of(k, &base));
    /* the module range starts at its first kernel: the lowest base of its kernels */
    uint32_t nk = 0;
    SAMPLE_CHECK(zeModuleGetKernelNames(mod, &nk, NULL));
    const char **names = calloc(nk, sizeof *names);
    SAMPLE_CHECK(zeModuleGetKernelNames(mod, &nk, names));
    uint64_t first = base;
    for (uint32_t i = 0; i < nk; i++) {
        ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = names[i]};
        ze_kernel_handle_t o;
        uint64_t b = 0;
        SAMPLE_CHECK(zeKernelCreate(mod, &kd, &o));
        SAMPLE_CHECK(base_of(o, &b));
        SAMPLE_CHECK(zeKernelDestroy(o));
        if (b < first)
            first = b;
    }
    free(names);
    for (size_t off = (size_t)(base - first), i = 0; off + 16 <= n; off += 16, i++) {
        const uint8_t *p = bin + off;
        static const uint8_t zero[16];
        if (memcmp(p, zero, 16) == 0)
            break;
        uint32_t bytes = (uint32_t)p[8] | (uint32_t)p[9] << 8 | (uint32_t)p[10] << 16 | (uint32_t)p[11] << 24;
        printf("isa %s %zu %u %u %u\n", name, i, p[2], p[3], bytes);
    }
    free(bin);
}

/* One SPIR-V kernel phase: `runs` launches over ITEMS items, groups of GROUP, inside range `range`. */
static void kernel_phase(sample_env_t *env, const char *dir, const char *range, const char *name, uint32_t runs,
                         const size_t *arg_bytes, uint32_t nargs)
{
    ze_device_handle_t dev = env->devices[0];
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.spv", dir, name);
    ze_module_handle_t mod = sample_module_spirv_file(env, dev, path);
    ze_kernel_handle_t k = sample_kernel(mod, name, GROUP);
    print_isa(env, mod, k, name);
    void *bufs[8] = {0};
    uint32_t iters = ITERS;
    for (uint32_t a = 0; a < nargs; a++) {
        if (arg_bytes[a] == 0) { /* the loop count */
            sample_set_arg(k, a, sizeof iters, &iters);
            continue;
        }
        bufs[a] = sample_alloc_device(env, dev, arg_bytes[a]);
        sample_set_arg(k, a, sizeof bufs[a], &bufs[a]);
    }
    ze_command_list_handle_t list = sample_immediate(env, dev, 0, 0);
    ze_event_pool_handle_t pool = sample_event_pool(env, 1, 0);
    ze_event_handle_t done = sample_event(pool, 0);
    printf("kernel %s %s items %u group %u runs %u\n", range, name, ITEMS, GROUP, runs);
    hgtxRangePushA(range);
    for (uint32_t i = 0; i < runs; i++) {
        sample_launch_1d(list, k, ITEMS, GROUP, done);
        SAMPLE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
        SAMPLE_CHECK(zeEventHostReset(done));
    }
    hgtxRangePop();
    SAMPLE_CHECK(zeEventDestroy(done));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(list));
    for (uint32_t a = 0; a < nargs; a++)
        if (bufs[a])
            SAMPLE_CHECK(zeMemFree(env->context, bufs[a]));
    SAMPLE_CHECK(zeKernelDestroy(k));
    SAMPLE_CHECK(zeModuleDestroy(mod));
}

/* A copy train on the copy engine (ordinal 1): host->device, device->host, device->device. */
static void copy_phase(sample_env_t *env)
{
    ze_device_handle_t dev = env->devices[0];
    static const struct { const char *path; size_t bytes; int n; } train[] = {
        {"h2d", 1u << 20, 6}, {"d2h", 512u << 10, 4}, {"d2d", 256u << 10, 2}};
    uint8_t *host = sample_alloc_host(env, 1u << 20);
    uint8_t *d0 = sample_alloc_device(env, dev, 1u << 20), *d1 = sample_alloc_device(env, dev, 1u << 20);
    memset(host, 7, 1u << 20);
    ze_command_list_handle_t list = sample_immediate(env, dev, 1, 0);
    ze_event_pool_handle_t pool = sample_event_pool(env, 1, 0);
    ze_event_handle_t done = sample_event(pool, 0);
    hgtxRangePushA("copies");
    for (size_t t = 0; t < sizeof train / sizeof train[0]; t++)
        for (int i = 0; i < train[t].n; i++) {
            void *dst = t == 0 ? (void *)d0 : t == 1 ? (void *)host : (void *)d1;
            const void *src = t == 0 ? (const void *)host : (const void *)d0;
            SAMPLE_CHECK(zeCommandListAppendMemoryCopy(list, dst, src, train[t].bytes, done, 0, NULL));
            SAMPLE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
            SAMPLE_CHECK(zeEventHostReset(done));
            printf("copy copies %s %zu ordinal 1\n", train[t].path, train[t].bytes);
        }
    hgtxRangePop();
    if (host[12345] != 7)
        sample_die("copy train: the bytes did not come back");
    SAMPLE_CHECK(zeEventDestroy(done));
    SAMPLE_CHECK(zeEventPoolDestroy(pool));
    SAMPLE_CHECK(zeCommandListDestroy(list));
    SAMPLE_CHECK(zeMemFree(env->context, host));
    SAMPLE_CHECK(zeMemFree(env->context, d0));
    SAMPLE_CHECK(zeMemFree(env->context, d1));
}

int main(int argc, char **argv)
{
    if (argc < 2)
        sample_die("usage: utilization SPIRV_DIR [RUNS]");
    uint32_t runs = (uint32_t)sample_arg_u64(argc, argv, 2, "RUNS", 4, 1, 10000);
    sample_env_t env;
    sample_env_init(&env, 1);
    /* a pause between phases, longer than a metric interval, so no interval holds two phases */
    const size_t alu[] = {ITEMS * 4, 0}, ls[] = {4096 * 64, 4096 * 64, 0};
    const size_t xmx[] = {64 * 16, 64 * 32, ITEMS * 32, 0};
    kernel_phase(&env, argv[1], "alu", "alu_only", runs, alu, 2);
    usleep(3000);
    kernel_phase(&env, argv[1], "loadstore", "loadstore", runs, ls, 3);
    usleep(3000);
    kernel_phase(&env, argv[1], "xmx", "xmx_mad", runs, xmx, 4);
    usleep(3000);
    copy_phase(&env);
    sample_env_fini(&env);
    printf("utilization: OK\n");
    return 0;
}
