/* bench_drain.c - aggregator drain rate on one core: pre-filled rings drained into the spool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/pa_ring.h"
#include "../common/pa_ze_api_ids.h"
#include "agg_internal.h"

/* Linked without the mem source: its hooks are no-ops (this bench feeds HGTX, OSRT and ze API). */
void pa_agg_mem_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    (void)a, (void)rec, (void)payload;
}
void pa_agg_mem_finish(pa_agg_t *a) { (void)a; }

/* Thread CPU time: "events/s on one core" must not depend on what else runs on the machine. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *names[] = { "iteration", "forward", "backward", "optimizer step" };

static int put(pa_ring_t *r, uint16_t kind, uint64_t t0, uint64_t t1, uint32_t aux, const char *name)
{
    uint32_t len = name ? (uint32_t)strlen(name) : 0, ns = pa_record_slots(len);
    pa_record_t *rec = pa_ring_reserve(r, ns);
    if (!rec)
        return -1;
    memset(rec, 0, sizeof *rec);
    rec->kind = kind;
    rec->nslots = (uint16_t)ns;
    rec->len = len;
    rec->tid = r->tid;
    rec->t0 = t0;
    rec->t1 = t1;
    if (kind == PA_REC_OSRT)
        rec->u.osrt.func = aux;
    else
        rec->u.hgtx.level = (int32_t)aux;
    if (len)
        pa_ring_write_payload(r, name, len);
    pa_ring_commit(r, ns);
    return 0;
}

/* Fills a ring like an instrumented loop: push name, OS call, pop; returns events written. */
static uint64_t fill(pa_ring_t *r, uint64_t *clock)
{
    uint64_t n = 0;
    for (;;) {
        uint64_t t = *clock;
        const char *name = names[(t >> 7) & 3];
        if (r->mask + 1 - (atomic_load(&r->tail) - atomic_load(&r->head)) < 8)
            return n;
        put(r, PA_REC_HGTX_PUSH, t, 0, 0, name);
        put(r, PA_REC_OSRT, t + 100, t + 1100 + (t & 1023), PA_OSRT_NANOSLEEP, NULL);
        put(r, PA_REC_HGTX_POP, t + 2000 + (t & 4095), 0, 0, NULL);
        *clock += 5000;
        n += 3;
    }
}

/* Fills a ring like a tight loop of cheap ze calls (zeKernelSetArgumentValue): one API record per
 * call, its correlation id counting up. Returns events written. */
static uint64_t fill_ze(pa_ring_t *r, uint64_t *clock)
{
    uint64_t n = 0;
    while (r->mask + 1 - (atomic_load(&r->tail) - atomic_load(&r->head)) >= 2) {
        pa_record_t *rec = pa_ring_reserve(r, 1);
        if (!rec)
            break;
        uint64_t t = *clock;
        pa_record_t z = { .kind = PA_REC_ZE_API, .nslots = 1, .tid = r->tid, .t0 = t, .t1 = t + 20 + (t & 7) };
        z.u.ze.corr_id = t / 40;
        z.u.ze.api = PA_ZE_API_KernelSetArgumentValue;
        *rec = z;
        pa_ring_commit(r, 1);
        *clock += 40;
        n++;
    }
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 25;
    int nrings = argc > 2 ? atoi(argv[2]) : 4;
    uint32_t slots = argc > 3 ? (uint32_t)atoi(argv[3]) : (1u << 18);
    int level = argc > 4 ? atoi(argv[4]) : -1; /* the agent's default (session/session.c) */
    int nospool = argc > 5 && strcmp(argv[5], "nospool") == 0; /* to see what zstd costs */
    int ze = argc > 6 && strcmp(argv[6], "ze") == 0; /* ze API records instead of HGTX + OSRT */
    if (rounds < 1 || nrings < 1 || nrings > 64 || slots < 64 || (argc > 6 && !ze && strcmp(argv[6], "hgtx"))) {
        fprintf(stderr, "usage: bench_drain [rounds>=1] [rings 1..64] [slots>=64] [zstd level] [spool|nospool] "
                "[hgtx|ze]\n");
        return 2;
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench_drain_%d.zst", (int)getpid());
    pa_agg_config_t cfg = { .spool_path = nospool ? NULL : path, .zstd_level = level };
    pa_agg_t *a = pa_agg_create(&cfg);
    if (!a)
        return 1;
    pa_ring_t *rings[64];
    uint64_t clocks[64];
    for (int i = 0; i < nrings; i++) {
        rings[i] = pa_ring_create(slots, 1000u + (uint32_t)i);
        pa_ring_register(rings[i]);
        clocks[i] = 1000000;
    }
    double *rates = calloc((size_t)rounds, sizeof *rates);
    uint64_t events = 0, drain_ns = 0;
    for (int k = 0; k < rounds; k++) {
        uint64_t n = 0;
        for (int i = 0; i < nrings; i++)
            n += ze ? fill_ze(rings[i], &clocks[i]) : fill(rings[i], &clocks[i]);
        uint64_t t0 = cpu_ns(), got = 0, c;
        while ((c = pa_agg_drain_once(a)) > 0) /* timed: the aggregator's work only */
            got += c;
        uint64_t dt = cpu_ns() - t0;
        if (got != n) {
            fprintf(stderr, "bench_drain: drained %llu of %llu events\n", (unsigned long long)got,
                    (unsigned long long)n);
            return 1;
        }
        events += n;
        drain_ns += dt;
        rates[k] = (double)n * 1e9 / (double)dt;
    }
    uint64_t t0 = now_ns();
    for (int i = 0; i < nrings; i++)
        atomic_store(&rings[i]->retired, 1);
    const pa_agg_results_t *res = pa_agg_finish(a);
    uint64_t fin_ns = now_ns() - t0;
    /* the spool thread ended in pa_agg_finish: the process's CPU beyond this thread's is its */
    uint64_t spool_ns = process_cpu_ns() - cpu_ns();
    qsort(rates, (size_t)rounds, sizeof *rates, cmp_double);
    printf("events %llu rounds %d rings %d\n", (unsigned long long)events, rounds, nrings);
    printf("agg_drain_rate %.0f events/s\n", rates[rounds / 2]);
    printf("agg_drain_rate_overall %.0f events/s\n", (double)events * 1e9 / (double)drain_ns);
    printf("agg_finish_time %.3f ms\n", (double)fin_ns / 1e6);
    printf("spool_thread_cpu_per_event %.1f ns\n", (double)spool_ns / (double)events);
    printf("agg_plus_spool_thread_rate %.0f events/s\n", (double)events * 1e9 / (double)(drain_ns + spool_ns));
    printf("spool_pipe_waits %llu (%.3f ms)\n", (unsigned long long)res->spool_pipe_waits,
           (double)res->spool_pipe_wait_ns / 1e6);
    printf("spool_bytes_per_event %.2f bytes\n", (double)res->spool_bytes_compressed / (double)events);
    printf("spool_raw_bytes_per_event %.2f bytes\n", (double)res->spool_bytes_raw / (double)events);
    pa_agg_destroy(a);
    free(rates);
    unlink(path);
    return 0;
}
