/* bench_mem.c - cost of a device allocation whose call stack is deep (>= 32 frames), with LIVE
 * other allocations alive. usage: bench_mem [LIVE [ALLOCS [DEPTH]]]  prints "alloc_ns X" =
 * median ns of zeMemAllocDevice (each timed alone; the matching free is not timed). */
#include "common.h"

#include "bench_util.h"

static sample_env_t env;
static ze_device_mem_alloc_desc_t desc = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};

/* Timed allocation at the bottom of a `depth`-frame recursion; noinline and the volatile
 * sum keep every frame real (no tail calls). */
static __attribute__((noinline)) double alloc_deep(int depth)
{
    if (depth > 0) {
        volatile double r = alloc_deep(depth - 1);
        return r;
    }
    void *p = NULL;
    uint64_t t0 = bench_now_ns();
    SAMPLE_CHECK(zeMemAllocDevice(env.context, &desc, 256, 64, env.devices[0], &p));
    double dt = (double)(bench_now_ns() - t0);
    SAMPLE_CHECK(zeMemFree(env.context, p));
    return dt;
}

int main(int argc, char **argv)
{
    uint64_t live = bench_arg(argc, argv, 1, "LIVE", 1000, 0, 10000000);
    uint64_t allocs = bench_arg(argc, argv, 2, "ALLOCS", 2000, 1, 10000000);
    int depth = (int)bench_arg(argc, argv, 3, "DEPTH", 40, 0, 1000);
    sample_env_init(&env, 1);
    void **keep = malloc((live ? live : 1) * sizeof *keep);
    double *per = malloc(allocs * sizeof *per);
    if (!keep || !per)
        return 1;
    for (uint64_t i = 0; i < live; i++) /* the live set: small, shallow allocations */
        SAMPLE_CHECK(zeMemAllocDevice(env.context, &desc, 64, 64, env.devices[0], &keep[i]));
    for (uint64_t i = 0; i < allocs; i++)
        per[i] = alloc_deep(depth);
    printf("alloc_ns %.2f\n", bench_median(per, allocs));
    /* newest first: simdev keeps allocations in an address-sorted array, and freeing the
     * oldest first would move the whole array every time (minutes at 1M) */
    for (uint64_t i = live; i-- > 0;)
        SAMPLE_CHECK(zeMemFree(env.context, keep[i]));
    free(keep);
    free(per);
    sample_env_fini(&env);
    bench_main_end();
    return 0;
}
