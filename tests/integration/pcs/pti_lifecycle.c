/* pti_lifecycle.c - the PTI library's lifetime against the application's: unloaded while it
 * collects, and enabled before the application's own zeInit.
 * Built twice: pti_dlopen (PTI_DLOPEN_ONLY, not linked to the library: dlclose) and
 * pti_lifecycle (linked: early).
 * usage: pti_dlopen dlclose LIBPATH
 *          dlopen()s the library, starts a collection, runs busy_ns 20 ms, dlclose()s it while
 *          the collection runs ("mapped_after_dlclose 0|1": the library still in the process),
 *          runs busy_ns 20 ms, then dlopen()s it again and runs busy_ns 100 ms in a second
 *          collection ("second_start <pti_result>", "second_samples <n>"), dlclose()s, destroys
 *          its own objects and context (so a leak check sees only the library's), exits 0
 *        pti_lifecycle early FLAGS
 *          ptiPcSamplingEnable before any zeInit (prints "enable <result>"), then the
 *          application's zeInit(FLAGS) ("init 0x<result>") and zeDriverGet ("drivers <n>"); when it
 *          initialized GPU drivers: busy_ns 10 ms in a collection, "samples <n> kernels <k>" */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "profagent/pti_pc_sampling.h"

typedef pti_result (*enable_fn)(pti_pc_sampling_handle_t *);
typedef pti_result (*handle_fn)(pti_pc_sampling_handle_t);
typedef pti_result (*configure_fn)(pti_pc_sampling_handle_t, const pti_device_handle_t *, size_t, uint32_t);

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        sample_die("%s not in the library: %s", name, dlerror());
    return p;
}

static int run_dlclose(const char *path)
{
    sample_env_t env;
    sample_env_init(&env, 1);
    sample_busy_t b;
    sample_busy_init(&env, 0, &b);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        sample_die("dlopen %s: %s", path, dlerror());
    enable_fn enable = (enable_fn)sym(lib, "ptiPcSamplingEnable");
    configure_fn configure = (configure_fn)sym(lib, "ptiPcSamplingConfigure");
    handle_fn start = (handle_fn)sym(lib, "ptiPcSamplingStartCollection");
    pti_pc_sampling_handle_t h = NULL;
    if (enable(&h) != PTI_SUCCESS || configure(h, NULL, 0, 0) != PTI_SUCCESS || start(h) != PTI_SUCCESS)
        sample_die("enable/configure/start failed");
    sample_busy_run(&b, 20000000, 1);
    if (dlclose(lib) != 0)
        sample_die("dlclose: %s", dlerror());
    void *again = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    printf("mapped_after_dlclose %d\n", again != NULL);
    fflush(stdout);
    sample_busy_run(&b, 20000000, 1); /* the application goes on */
    /* a new copy of the library: a collection on the same device */
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        sample_die("dlopen %s again: %s", path, dlerror());
    enable = (enable_fn)sym(lib, "ptiPcSamplingEnable");
    configure = (configure_fn)sym(lib, "ptiPcSamplingConfigure");
    start = (handle_fn)sym(lib, "ptiPcSamplingStartCollection");
    handle_fn stop = (handle_fn)sym(lib, "ptiPcSamplingStopCollection");
    handle_fn disable = (handle_fn)sym(lib, "ptiPcSamplingDisable");
    pti_result (*status)(pti_pc_sampling_handle_t, pti_device_handle_t, pti_pc_sampling_device_status_t *);
    *(void **)&status = sym(lib, "ptiPcSamplingGetDeviceStatus");
    h = NULL;
    pti_result er = enable(&h), cr = er == PTI_SUCCESS ? configure(h, NULL, 0, 0) : er;
    pti_result sr = cr == PTI_SUCCESS ? start(h) : cr;
    printf("second_start %d\n", (int)sr);
    sample_busy_run(&b, 100000000, 1);
    if (sr == PTI_SUCCESS) {
        pti_pc_sampling_device_status_t st = {._struct_size = sizeof st};
        if (stop(h) != PTI_SUCCESS || status(h, env.devices[0], &st) != PTI_SUCCESS)
            sample_die("second collection: stop/status failed");
        printf("second_samples %llu\n", (unsigned long long)st._total_sample_count);
        disable(h);
    }
    if (dlclose(lib) != 0)
        sample_die("dlclose: %s", dlerror());
    /* everything of the application's goes: under ASan's leak check what is left is the library's */
    sample_busy_fini(&b);
    sample_env_fini(&env);
    return 0;
}

#ifndef PTI_DLOPEN_ONLY
static int run_early(const char *flags_arg)
{
    ze_init_flags_t flags = (ze_init_flags_t)strtoul(flags_arg, NULL, 0);
    pti_pc_sampling_handle_t h = NULL;
    pti_result er = ptiPcSamplingEnable(&h);
    printf("enable %s\n", ptiResultTypeToString(er));
    ze_result_t r = zeInit(flags);
    printf("init 0x%x\n", (unsigned)r);
    uint32_t n = 0;
    ze_result_t dr = zeDriverGet(&n, NULL);
    printf("drivers %u\n", dr == ZE_RESULT_SUCCESS ? n : 0);
    fflush(stdout);
    if (er != PTI_SUCCESS || r != ZE_RESULT_SUCCESS || n == 0)
        return 0;
    sample_env_t env;
    sample_env_init(&env, 1);
    sample_busy_t b;
    sample_busy_init(&env, 0, &b);
    if (ptiPcSamplingConfigure(h, NULL, 0, 0) != PTI_SUCCESS || ptiPcSamplingStartCollection(h) != PTI_SUCCESS)
        sample_die("configure/start failed");
    sample_busy_run(&b, 10000000, 1);
    if (ptiPcSamplingStopCollection(h) != PTI_SUCCESS)
        sample_die("stop failed");
    pti_pc_sampling_device_status_t st = {._struct_size = sizeof st};
    size_t nk = 0;
    if (ptiPcSamplingGetDeviceStatus(h, env.devices[0], &st) != PTI_SUCCESS ||
        ptiPcSamplingGetObservedKernelHandles(h, env.devices[0], NULL, &nk) != PTI_SUCCESS)
        sample_die("queries failed");
    printf("samples %llu kernels %zu\n", (unsigned long long)st._total_sample_count, nk);
    ptiPcSamplingDisable(h);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dlclose") == 0)
        return run_dlclose(argv[2]);
#ifndef PTI_DLOPEN_ONLY
    if (argc == 3 && strcmp(argv[1], "early") == 0)
        return run_early(argv[2]);
#endif
    sample_die("usage: %s dlclose LIBPATH | early FLAGS", argv[0]);
}
