/* bench_write.c - the exit path's throughput without a process around it: EVENTS events
 * (HGTX push, OS call, pop) drained into the zstd spool, then the spool recompressed alone
 * (compression throughput) and the SQLite DB written from it (rows/s).
 * usage: bench_write [EVENTS [ZSTD_LEVEL]]  prints `name value unit` lines. */
#include <string.h>
#include <unistd.h>

#include "../common/pa_ring.h"
#include "agg_internal.h"
#include "bench_util.h"
#include "pa_spool.h"
#include "writer.h"

static const char *const names[4] = {"iteration", "forward", "backward", "optimizer step"};

static void put(pa_ring_t *r, uint16_t kind, uint64_t t0, uint64_t t1, const char *name)
{
    uint32_t len = name ? (uint32_t)strlen(name) : 0, ns = pa_record_slots(len);
    pa_record_t *rec;
    while (!(rec = pa_ring_reserve(r, ns)))
        ; /* never: the caller drains before the ring can fill */
    memset(rec, 0, sizeof *rec);
    rec->kind = kind;
    rec->nslots = (uint16_t)ns;
    rec->len = len;
    rec->tid = r->tid;
    rec->t0 = t0;
    rec->t1 = t1;
    if (kind == PA_REC_OSRT)
        rec->u.osrt.func = PA_OSRT_NANOSLEEP;
    if (len)
        pa_ring_write_payload(r, name, len);
    pa_ring_commit(r, ns);
}

/* Produces `events` events in chunks that fit the ring, draining after each chunk. */
static void produce(pa_agg_t *a, pa_ring_t *r, uint64_t events)
{
    uint64_t t = 1000000, done = 0;
    while (done < events) {
        for (int i = 0; i < 4096 && done < events; i++, done += 3, t += 5000) {
            put(r, PA_REC_HGTX_PUSH, t, 0, names[(t >> 7) & 3]);
            put(r, PA_REC_OSRT, t + 100, t + 1100 + (t & 1023), NULL);
            put(r, PA_REC_HGTX_POP, t + 2000 + (t & 4095), 0, NULL);
        }
        while (pa_agg_drain_once(a) > 0)
            ;
    }
}

/* CPU ns to read `in` alone, or (out != NULL) to read it and append every record to a fresh
 * spool at `level`; the difference of the two is the compression's cost. */
static uint64_t respool(const char *in, const char *out, int level, uint64_t *raw, uint64_t *comp)
{
    uint64_t t0 = bench_cpu_ns();
    pa_spool_reader_t *rd = pa_spool_open_read(in);
    pa_spool_writer_t *w = out ? pa_spool_open_write(out, level) : NULL;
    if (!rd || (out && !w))
        exit(1);
    const pa_record_t *rec;
    const uint8_t *payload;
    while (pa_spool_next(rd, &rec, &payload) == 1)
        if (w)
            pa_spool_append(w, rec, payload);
    if (w)
        pa_spool_close_write(w, raw, comp);
    pa_spool_close_read(rd);
    return bench_cpu_ns() - t0;
}

int main(int argc, char **argv)
{
    uint64_t events = bench_arg(argc, argv, 1, "EVENTS", 3000000, 3, 1ull << 34);
    int level = argc > 2 ? atoi(argv[2]) : -1; /* default: the agent's (session/session.c) */
    if (level < -22 || level > 19) {
        fprintf(stderr, "bench_write: ZSTD_LEVEL must be in -22..19\n");
        return 2;
    }
    char spool[64], spool2[64], db[64];
    snprintf(spool, sizeof spool, "/tmp/bench_write_%d.zst", (int)getpid());
    snprintf(spool2, sizeof spool2, "/tmp/bench_write_%d.2.zst", (int)getpid());
    snprintf(db, sizeof db, "/tmp/bench_write_%d.db", (int)getpid());
    pa_agg_config_t cfg = {.spool_path = spool, .zstd_level = level};
    pa_agg_t *a = pa_agg_create(&cfg);
    pa_ring_t *r = pa_ring_create(1u << 16, 4242);
    if (!a || !r)
        return 1;
    pa_ring_register(r);
    produce(a, r, events);
    atomic_store(&r->retired, 1);
    uint64_t t0 = bench_now_ns();
    const pa_agg_results_t *res = pa_agg_finish(a);
    uint64_t fin = bench_now_ns() - t0;
    uint64_t raw = 0, comp = 0, rd_only = respool(spool, NULL, level, NULL, NULL);
    uint64_t both = respool(spool, spool2, level, &raw, &comp);
    uint64_t zcpu = both > rd_only ? both - rd_only : 1;
    unlink(spool2);
    pa_session_meta_t meta = {.pid = (uint32_t)getpid(), .hostname = "bench", .cmdline = "bench_write",
                              .start_mono_ns = 1000000, .end_mono_ns = res->last_ns + 1, .rank = -1,
                              .complete = 1};
    unlink(db);
    t0 = bench_now_ns();
    uint64_t c0 = bench_cpu_ns();
    int rc = pa_writer_write_db(db, spool, &meta, res);
    uint64_t wr = bench_now_ns() - t0, wcpu = bench_cpu_ns() - c0;
    FILE *devnull = fopen("/dev/null", "w");
    t0 = bench_now_ns();
    pa_summary_print(devnull ? devnull : stderr, &meta, res, db);
    uint64_t sum = bench_now_ns() - t0;
    if (devnull)
        fclose(devnull);
    unlink(db);
    unlink(spool);
    if (rc != 0)
        return 1;
    double ev = (double)events;
    printf("spool_records %llu\n", (unsigned long long)res->spool_records);
    printf("db_write_rate %.0f rows/s\n", (double)res->spool_records * 1e9 / (double)wr);
    printf("db_write_time_per_1M_events %.3f s\n", (double)wr / ev * 1e6 / 1e9);
    /* the same on this thread's CPU time: what the DB thread needs per row on a busy machine */
    printf("db_write_cpu_rate %.0f rows/s\n", (double)res->spool_records * 1e9 / (double)(wcpu ? wcpu : 1));
    printf("agg_finish_time_per_1M_events %.3f s\n", (double)fin / ev * 1e6 / 1e9);
    printf("summary_time %.3f ms\n", (double)sum / 1e6);
    printf("spool_bytes_per_event %.2f bytes\n", (double)comp / ev);
    printf("spool_compress_rate %.1f MB/s\n", (double)raw / ((double)zcpu / 1e9) / 1e6);
    printf("spool_compress_event_rate %.0f events/s\n", ev / ((double)zcpu / 1e9));
    pa_agg_destroy(a); /* the retired ring was freed by pa_agg_finish() */
    return 0;
}
