/* bench_pcs_agg.c - PC-sampling aggregation on one core: decoded EU-stall entries (IP + 9 reason
 * counts, as the streamer readers deliver them) mapped to kernels and counted per instruction.
 * usage: bench_pcs_agg [ENTRIES [KERNELS]]  (default 20000000 entries over 400 kernels, 2 devices) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "pa_pcs.h"

#define NR 9
#define BATCH 512 /* entries per ring record (sampling/pcs_reader.c) */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000ull;
    uint32_t nk = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 400;
    if (!n || !nk)
        return 2;
    pa_pcs_table_t t;
    pa_pcs_table_init(&t, 0);
    /* kernels of 256 instructions (4 KiB), 64 KiB apart, half on each device */
    for (uint32_t k = 0; k < nk; k++) {
        char name[32];
        snprintf(name, sizeof name, "kernel_%u", k);
        pa_pcs_kernel_t kd = {.id = k + 1, .device = k & 1, .base = 0x100000u + (k >> 1) * 0x10000u,
                              .size = 4096, .name_len = (uint32_t)strlen(name)};
        pa_pcs_table_add_kernel(&t, &kd, name, NULL, NULL);
    }
    /* a batch pool: IPs mostly in a few hot kernels' hot instructions, 2% unmapped */
    enum { POOL = 64 };
    uint32_t *pool = malloc((size_t)POOL * BATCH * (1 + NR) * sizeof *pool);
    uint64_t pool_samples = 0;
    for (size_t i = 0; i < (size_t)POOL * BATCH; i++) {
        uint32_t *e = pool + i * (1 + NR);
        uint32_t k = (rnd() % 8 == 0) ? rnd() % nk : rnd() % 16 % nk;
        uint32_t base = 0x100000u + (k >> 1) * 0x10000u;
        e[0] = rnd() % 50 == 0 ? 0x40000000u + rnd() % 4096 : base + (rnd() % 256) * 16;
        for (int r = 0; r < NR; r++) {
            e[1 + r] = rnd() % 4 == 0 ? 1 + rnd() % 8 : 0;
            pool_samples += e[1 + r];
        }
    }
    /* the calculator's order: one entry per unique IP, ascending, within a read */
    for (int b = 0; b < POOL; b++) {
        uint32_t *base = pool + (size_t)b * BATCH * (1 + NR);
        for (int i = 1; i < BATCH; i++) /* insertion sort of 512 rows of 10 words by IP */
            for (int j = i; j > 0 && base[(size_t)(j - 1) * (1 + NR)] > base[(size_t)j * (1 + NR)]; j--) {
                uint32_t tmp[1 + NR];
                memcpy(tmp, base + (size_t)j * (1 + NR), sizeof tmp);
                memcpy(base + (size_t)j * (1 + NR), base + (size_t)(j - 1) * (1 + NR), sizeof tmp);
                memcpy(base + (size_t)(j - 1) * (1 + NR), tmp, sizeof tmp);
            }
    }
    uint64_t batches = (n + BATCH - 1) / BATCH, samples = 0;
    uint64_t c0 = bench_cpu_ns();
    for (uint64_t b = 0; b < batches; b++) {
        const uint32_t *src = pool + (b % POOL) * BATCH * (1 + NR);
        /* entries of one read arrive per device, ascending IP within a kernel (the calculator's order) */
        pa_pcs_table_add_samples(&t, (uint32_t)(b & 1), NR, src, BATCH);
    }
    uint64_t c1 = bench_cpu_ns();
    samples = pool_samples * batches / POOL;
    double ns_entry = (double)(c1 - c0) / (double)(batches * BATCH);
    printf("bench_pcs_agg: %llu entries (IP + %d counts) over %u kernels in %.3f s CPU\n",
           (unsigned long long)(batches * BATCH), NR, nk, (double)(c1 - c0) / 1e9);
    printf("  %.1f ns per entry, %.2f M entries/s, %.1f samples per entry -> %.1f M samples/s on one core"
           " (%.2f ns per sample)\n", ns_entry, 1e3 / ns_entry, (double)samples / (double)(batches * BATCH),
           (double)samples / ((double)(c1 - c0) / 1e9) / 1e6, (double)(c1 - c0) / (double)samples);
    printf("  rows %u (bounded by %u), unmapped %llu + %llu samples\n", t.nrows, t.max_rows,
           (unsigned long long)t.dev[0].unmapped, (unsigned long long)t.dev[1].unmapped);
    /* machine-readable (bench/run_bench.py) */
    printf("pcs_agg_ns_per_entry %.2f\npcs_agg_ns_per_sample %.3f\npcs_agg_samples_per_s %.0f\n", ns_entry,
           (double)(c1 - c0) / (double)samples, (double)samples / ((double)(c1 - c0) / 1e9));
    pa_pcs_table_free(&t);
    free(pool);
    return 0;
}
