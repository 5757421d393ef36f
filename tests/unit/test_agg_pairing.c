/* test_agg_pairing.c - HGTX pairing through the aggregator: nesting, cross-thread start/end,
 * misuse counts, unterminated ranges, domains, OSRT; and the real thread draining real rings. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../common/pa_ring.h"
#include "agg_internal.h"
#include "pa_spool.h"

/* This test links agg without the ze/mem sources: their hooks are no-ops here. */
void pa_agg_ze_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    (void)a, (void)rec, (void)payload;
}
void pa_agg_ze_api(pa_agg_t *a, const pa_record_t *rec)
{
    (void)a, (void)rec;
}
void pa_agg_ze_finish(pa_agg_t *a) { (void)a; }
void pa_agg_mem_record(pa_agg_t *a, const pa_record_t *rec, const uint8_t *payload)
{
    (void)a, (void)rec, (void)payload;
}
void pa_agg_mem_finish(pa_agg_t *a) { (void)a; }

/* The collector's start/end drop counts (collector/hgtx.c), set by the tests below: the
 * aggregator reads them at its finish. */
_Atomic uint64_t pa_hgtx_ends_unstarted, pa_hgtx_starts_lost, pa_hgtx_ends_lost;

static void drop_counts(uint64_t ends_unstarted, uint64_t starts_lost, uint64_t ends_lost)
{
    pa_hgtx_ends_unstarted = ends_unstarted;
    pa_hgtx_starts_lost = starts_lost;
    pa_hgtx_ends_lost = ends_lost;
}

static char path[64];

/* What the spool holds after pa_agg_finish(). */
static struct {
    pa_record_t ranges[64];
    size_t nranges;
    pa_record_t marks[8];
    size_t nmarks;
    pa_record_t osrt[8];
    size_t nosrt;
    char *str[64];   /* by id, NUL-terminated copies */
    size_t nstrings, nthreads;
} sp;

static void read_back(void)
{
    for (size_t i = 0; i < 64; i++)
        free(sp.str[i]);
    memset(&sp, 0, sizeof sp);
    pa_spool_reader_t *r = pa_spool_open_read(path);
    assert_non_null(r);
    const pa_record_t *rec;
    const uint8_t *pl;
    int rc;
    while ((rc = pa_spool_next(r, &rec, &pl)) == 1) {
        switch (rec->kind) {
        case PA_SP_STRING:
            assert_true(rec->u.str.id > 0 && rec->u.str.id < 64);
            assert_null(sp.str[rec->u.str.id]); /* each string is spooled once */
            sp.str[rec->u.str.id] = calloc(1, rec->len + 1);
            memcpy(sp.str[rec->u.str.id], pl ? (const char *)pl : "", rec->len);
            sp.nstrings++;
            break;
        case PA_SP_HGTX_RANGE: sp.ranges[sp.nranges++] = *rec; break;
        case PA_SP_HGTX_MARK: sp.marks[sp.nmarks++] = *rec; break;
        case PA_SP_OSRT: sp.osrt[sp.nosrt++] = *rec; break;
        case PA_SP_THREAD: sp.nthreads++; break;
        default: fail_msg("unexpected spool kind 0x%x", rec->kind);
        }
    }
    assert_int_equal(rc, 0);
    pa_spool_close_read(r);
}

static pa_agg_t *new_agg(void)
{
    snprintf(path, sizeof path, "/tmp/test_agg_pairing_%d.zst", (int)getpid());
    pa_agg_config_t cfg = { .spool_path = path };
    pa_agg_t *a = pa_agg_create(&cfg);
    assert_non_null(a);
    return a;
}

static void feed(pa_agg_t *a, uint16_t kind, uint32_t tid, uint64_t t0, uint64_t id, uint32_t domain,
                 int32_t level, const char *name)
{
    pa_record_t r = { .kind = kind, .tid = tid, .t0 = t0 };
    r.u.hgtx.id = id;
    r.u.hgtx.domain = domain;
    r.u.hgtx.level = level;
    r.len = name ? (uint32_t)strlen(name) : 0;
    r.nslots = (uint16_t)pa_record_slots(r.len);
    pa_agg_process_for_test(a, &r, (const uint8_t *)name);
}

static const pa_stat_row_t *find_row(const pa_agg_results_t *res, int cat, const char *key)
{
    for (size_t i = 0; i < res->nrows; i++)
        if (res->rows[i].cat == cat && res->rows[i].key_len == strlen(key) &&
            memcmp(res->rows[i].key, key, res->rows[i].key_len) == 0)
            return &res->rows[i];
    return NULL;
}

static void test_nested_push_pop(void **state)
{
    (void)state;
    pa_agg_t *a = new_agg();
    for (int rep = 0; rep < 2; rep++) { /* outer 1000..5000 (+10000 rep), inner 2000..3000 */
        uint64_t b = (uint64_t)rep * 10000;
        feed(a, PA_REC_HGTX_PUSH, 7, b + 1000, 0, 0, 0, "outer");
        feed(a, PA_REC_HGTX_PUSH, 7, b + 2000, 0, 0, 1, "inner");
        feed(a, PA_REC_HGTX_POP, 7, b + 3000, 0, 0, 1, NULL);
        feed(a, PA_REC_HGTX_POP, 7, b + 5000 + (uint64_t)rep * 2000, 0, 0, 0, NULL);
    }
    const pa_agg_results_t *res = pa_agg_finish(a);
    read_back();
    assert_int_equal(sp.nranges, 4);
    const pa_record_t *in = &sp.ranges[0], *out = &sp.ranges[1]; /* pops come inner first */
    assert_string_equal(sp.str[in->u.range.name_id], "inner");
    assert_string_equal(sp.str[out->u.range.name_id], "outer");
    assert_int_equal(in->t0, 2000);
    assert_int_equal(in->t1, 3000);
    assert_int_equal(in->u.range.level, 1);
    assert_int_equal(out->u.range.level, 0);
    assert_int_equal(out->u.range.parent_id, 0);
    assert_int_equal(in->u.range.parent_id, out->u.range.range_id);
    assert_true(out->u.range.range_id > 0 && in->u.range.range_id != out->u.range.range_id);
    assert_int_equal(in->flags, 0);
    assert_int_equal(in->tid, 7);
    assert_int_equal(in->u.range.end_tid, 7);
    /* stats: outer 4000 and 6000, inner 1000 twice; rows sorted by total desc */
    assert_int_equal(res->nrows, 2);
    assert_string_equal(res->rows[0].key, "outer");
    assert_int_equal(res->rows[0].st.count, 2);
    assert_int_equal(res->rows[0].st.total, 10000);
    assert_int_equal(res->rows[0].st.min, 4000);
    assert_int_equal(res->rows[0].st.max, 6000);
    assert_true(res->rows[0].st.median == 5000.0);
    assert_int_equal(res->rows[0].st.median_exact, 1);
    assert_int_equal(res->rows[0].tag, 0);
    assert_string_equal(res->rows[1].key, "inner");
    assert_int_equal(res->rows[1].st.total, 2000);
    assert_true(pa_stat_stddev(&res->rows[1].st) == 0.0);
    assert_int_equal(res->hgtx_misuse_pop_empty, 0);
    assert_int_equal(res->hgtx_unterminated, 0);
    assert_int_equal(res->first_ns, 1000);
    assert_int_equal(res->last_ns, 17000);
    pa_agg_destroy(a);
    unlink(path);
}

static void test_end_before_start_across_threads(void **state)
{
    (void)state;
    pa_agg_t *a = new_agg();
    feed(a, PA_REC_HGTX_END, 20, 9000, 7, 0, 0, NULL);          /* thread B's ring first */
    feed(a, PA_REC_HGTX_START, 10, 4000, 7, 0, 0, "job");       /* then thread A's */
    feed(a, PA_REC_HGTX_START, 10, 5000, 8, 0, 0, "job");       /* normal order */
    feed(a, PA_REC_HGTX_END, 20, 5500, 8, 0, 0, NULL);
    const pa_agg_results_t *res = pa_agg_finish(a);
    read_back();
    assert_int_equal(sp.nranges, 2);
    const pa_record_t *r = &sp.ranges[0];
    assert_int_equal(r->t0, 4000);
    assert_int_equal(r->t1, 9000);
    assert_int_equal(r->tid, 10);
    assert_int_equal(r->u.range.end_tid, 20);
    assert_int_equal(r->flags, PA_RF_STARTEND);
    assert_int_equal(r->u.range.level, -1);
    assert_int_equal(sp.ranges[1].t1 - sp.ranges[1].t0, 500);
    const pa_stat_row_t *row = find_row(res, PA_CAT_HGTX_RANGE, "job");
    assert_non_null(row);
    assert_int_equal(row->tag, 1);
    assert_int_equal(row->st.count, 2);
    assert_int_equal(row->st.total, 5500);
    assert_true(row->st.median == 2750.0);
    assert_int_equal(res->hgtx_misuse_bad_end, 0);
    assert_int_equal(res->hgtx_unterminated, 0);
    pa_agg_destroy(a);
    unlink(path);
}

static void test_misuse(void **state)
{
    (void)state;
    pa_agg_t *a = new_agg();
    feed(a, PA_REC_HGTX_POP, 5, 100, 0, 0, -1, NULL);           /* pop on an empty stack */
    feed(a, PA_REC_HGTX_END, 5, 200, 0, 0, 0, NULL);            /* id 0 */
    feed(a, PA_REC_HGTX_START, 5, 300, 3, 0, 0, "x");
    feed(a, PA_REC_HGTX_END, 5, 400, 3, 0, 0, NULL);
    feed(a, PA_REC_HGTX_END, 6, 500, 3, 0, 0, NULL);            /* already ended */
    feed(a, PA_REC_HGTX_END, 6, 600, 99, 0, 0, NULL);           /* never started */
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_int_equal(res->hgtx_misuse_pop_empty, 1);
    assert_int_equal(res->hgtx_misuse_bad_end, 3);
    assert_int_equal(res->hgtx_unterminated, 0);
    read_back();
    assert_int_equal(sp.nranges, 1);
    pa_agg_destroy(a);
    unlink(path);
}

static void test_unterminated_and_domains(void **state)
{
    (void)state;
    pa_agg_t *a = new_agg();
    feed(a, PA_REC_HGTX_DOMAIN, 1, 0, 0, 3, 0, "dom");
    feed(a, PA_REC_HGTX_PUSH, 1, 100, 0, 3, 0, "r");
    feed(a, PA_REC_HGTX_PUSH, 1, 150, 0, 0, 1, "open");
    feed(a, PA_REC_HGTX_MARK, 1, 160, 0, 3, 0, "m");
    feed(a, PA_REC_HGTX_START, 2, 200, 5, 0, 0, "started");
    feed(a, PA_REC_HGTX_PUSH, 2, 210, 0, 3, 0, "r");
    feed(a, PA_REC_HGTX_POP, 2, 260, 0, 3, 0, NULL);
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_int_equal(res->hgtx_unterminated, 3);
    assert_int_equal(res->nrows, 1); /* only the closed range feeds statistics */
    assert_string_equal(res->rows[0].key, "dom:r");
    assert_int_equal(res->rows[0].st.total, 50);
    read_back();
    assert_int_equal(sp.nranges, 4);
    size_t unterm = 0;
    for (size_t i = 0; i < sp.nranges; i++) {
        const pa_record_t *r = &sp.ranges[i];
        if (r->flags & PA_RF_UNTERMINATED) {
            unterm++;
            assert_true(r->t1 >= res->last_ns && r->t1 >= r->t0);
        }
        if (strcmp(sp.str[r->u.range.name_id], "r") == 0)
            assert_string_equal(sp.str[r->u.range.domain_id], "dom");
        if (strcmp(sp.str[r->u.range.name_id], "open") == 0) { /* default domain: own stack */
            assert_int_equal(r->u.range.level, 0);
            assert_int_equal(r->u.range.parent_id, 0);
            assert_int_equal(r->u.range.domain_id, 0);
        }
    }
    assert_int_equal(unterm, 3);
    assert_int_equal(sp.nmarks, 1);
    assert_int_equal(sp.marks[0].t0, 160);
    assert_string_equal(sp.str[sp.marks[0].u.range.name_id], "m");
    assert_string_equal(sp.str[sp.marks[0].u.range.domain_id], "dom");
    pa_agg_destroy(a);
    unlink(path);
}

/* ---- the real thread draining real rings ---- */

#define PRODUCERS 4
#define PAIRS 50000

static _Atomic uint64_t refused; /* reserve failures: each is counted by the ring as a drop */

static void ring_put(pa_ring_t *r, uint16_t kind, uint64_t t0, uint64_t t1, const char *name)
{
    uint32_t len = name ? (uint32_t)strlen(name) : 0, ns = pa_record_slots(len);
    pa_record_t *rec;
    while (!(rec = pa_ring_reserve(r, ns))) { /* keep every record: wait for room */
        atomic_fetch_add(&refused, 1);
        usleep(50);
    }
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

static void *producer(void *arg)
{
    uint32_t tid = (uint32_t)(uintptr_t)arg;
    pa_ring_t *r = pa_ring_create(256, tid);
    pa_ring_register(r);
    for (uint64_t i = 0; i < PAIRS; i++) {
        ring_put(r, PA_REC_HGTX_PUSH, 1000 + i * 10, 0, "iter");
        ring_put(r, PA_REC_HGTX_POP, 1000 + i * 10 + 4, 0, NULL);
        ring_put(r, PA_REC_OSRT, 1000 + i * 10 + 5, 1000 + i * 10 + 8, NULL);
    }
    ring_put(r, PA_REC_THREAD_EXIT, 1000 + PAIRS * 10, 0, NULL);
    atomic_store(&r->retired, 1);
    return NULL;
}

/* NVTX semantics: per-domain stacks. push A:a @0, push B:b @1000, pop A @3000, pop B @7000:
 * A:a lasts 3000 and B:b 6000, both at level 0 of their own domain, B:b not a child of A:a. */
static void test_domain_stacks_interleaved(void **state)
{
    (void)state;
    pa_agg_t *a = new_agg();
    feed(a, PA_REC_HGTX_DOMAIN, 1, 0, 0, 1, 0, "A");
    feed(a, PA_REC_HGTX_DOMAIN, 1, 0, 0, 2, 0, "B");
    feed(a, PA_REC_HGTX_PUSH, 1, 10, 0, 1, 0, "a");
    feed(a, PA_REC_HGTX_PUSH, 1, 1010, 0, 2, 0, "b");
    feed(a, PA_REC_HGTX_PUSH, 1, 1500, 0, 2, 1, "b2");
    feed(a, PA_REC_HGTX_POP, 1, 1600, 0, 2, 1, NULL);
    feed(a, PA_REC_HGTX_POP, 1, 3010, 0, 1, 0, NULL);
    feed(a, PA_REC_HGTX_POP, 1, 7010, 0, 2, 0, NULL);
    feed(a, PA_REC_HGTX_POP, 1, 8000, 0, 1, -1, NULL); /* A is empty now: misuse */
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_int_equal(res->hgtx_misuse_pop_empty, 1);
    assert_int_equal(res->hgtx_unterminated, 0);
    const pa_stat_row_t *ra = find_row(res, PA_CAT_HGTX_RANGE, "A:a");
    const pa_stat_row_t *rb = find_row(res, PA_CAT_HGTX_RANGE, "B:b");
    assert_non_null(ra);
    assert_non_null(rb);
    assert_int_equal(ra->st.total, 3000);
    assert_int_equal(rb->st.total, 6000);
    read_back();
    assert_int_equal(sp.nranges, 3);
    const pa_record_t *b2 = &sp.ranges[0], *ea = &sp.ranges[1], *eb = &sp.ranges[2];
    assert_string_equal(sp.str[b2->u.range.name_id], "b2");
    assert_int_equal(b2->u.range.level, 1);
    assert_int_equal(b2->u.range.parent_id, eb->u.range.range_id);
    assert_int_equal(ea->u.range.level, 0);
    assert_int_equal(ea->u.range.parent_id, 0);
    assert_int_equal(eb->u.range.level, 0);
    assert_int_equal(eb->u.range.parent_id, 0);
    assert_string_equal(sp.str[eb->u.range.domain_id], "B");
    pa_agg_destroy(a);
    unlink(path);
}

/* Inline names (PA_RF_INLINE), bad-domain misuse, summary row key ids = spooled string ids. */
static void test_inline_names_bad_domain_key_ids(void **state)
{
    (void)state;
    pa_agg_t *a = new_agg();
    pa_record_t r = { .kind = PA_REC_HGTX_PUSH, .tid = 4, .t0 = 100, .nslots = 1 };
    memcpy((uint8_t *)&r + pa_hgtx_inline_off(r.kind), "inl", 3);
    r.flags = PA_RF_INLINE | 3u << 16 | PA_RF_BAD_DOMAIN;
    pa_agg_process_for_test(a, &r, NULL);
    feed(a, PA_REC_HGTX_POP, 4, 350, 0, 0, 0, NULL);
    pa_record_t s = { .kind = PA_REC_HGTX_START, .tid = 4, .t0 = 400, .nslots = 1 };
    s.u.hgtx.id = 77;
    memcpy((uint8_t *)&s + pa_hgtx_inline_off(s.kind), "0123456789abcdef", 16);
    s.flags = PA_RF_INLINE | 16u << 16;
    pa_agg_process_for_test(a, &s, NULL);
    feed(a, PA_REC_HGTX_END, 4, 900, 77, 0, 0, NULL);
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_int_equal(res->hgtx_misuse_bad_domain, 1);
    const pa_stat_row_t *ri = find_row(res, PA_CAT_HGTX_RANGE, "inl");
    const pa_stat_row_t *rs = find_row(res, PA_CAT_HGTX_RANGE, "0123456789abcdef");
    assert_non_null(ri);
    assert_non_null(rs);
    assert_int_equal(ri->st.total, 250);
    assert_int_equal(rs->st.total, 500);
    read_back();
    assert_string_equal(sp.str[ri->key_id], "inl"); /* the writer reuses these ids */
    assert_string_equal(sp.str[rs->key_id], "0123456789abcdef");
    assert_int_equal(sp.nranges, 2);
    assert_int_equal(sp.ranges[0].u.range.domain_id, 0);
    pa_agg_destroy(a);
    unlink(path);
}

/* 5000-deep nesting is kept whole by default; a configured limit counts what it refuses. */
static void test_deep_nesting_and_limit(void **state)
{
    (void)state;
    pa_agg_t *a = new_agg();
    for (int i = 0; i < 5000; i++)
        feed(a, PA_REC_HGTX_PUSH, 9, 1000 + (uint64_t)i, 0, 0, i, "d");
    for (int i = 4999; i >= 0; i--)
        feed(a, PA_REC_HGTX_POP, 9, 100000 - (uint64_t)i, 0, 0, i, NULL);
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_int_equal(res->hgtx_depth_overflow, 0);
    assert_int_equal(res->hgtx_misuse_pop_empty, 0);
    assert_int_equal(find_row(res, PA_CAT_HGTX_RANGE, "d")->st.count, 5000);
    pa_agg_destroy(a);
    unlink(path);

    pa_agg_config_t cfg = { .spool_path = path, .max_stack_depth = 3 };
    a = pa_agg_create(&cfg);
    assert_non_null(a);
    for (int i = 0; i < 5; i++)
        feed(a, PA_REC_HGTX_PUSH, 9, 1000 + (uint64_t)i, 0, 0, i, "d");
    for (int i = 4; i >= 0; i--)
        feed(a, PA_REC_HGTX_POP, 9, 2000 + (uint64_t)(4 - i), 0, 0, i, NULL);
    res = pa_agg_finish(a);
    assert_int_equal(res->hgtx_depth_overflow, 2);
    assert_int_equal(res->hgtx_misuse_pop_empty, 0);
    const pa_stat_row_t *d = find_row(res, PA_CAT_HGTX_RANGE, "d");
    assert_int_equal(d->st.count, 3);
    assert_int_equal(d->st.max, 2004 - 1000); /* the outermost kept range: push 1000, last pop */
    pa_agg_destroy(a);
    unlink(path);
}

/* A thread writes after its ring's exit-time cut-off and exits (or is about to) just after the
 * exit drain's loop ended: its records are drained by the last pass, not counted late (before:
 * late_records 2, the records missing from the stats). The seam runs between loop and pass. */
static pa_ring_t *late_ring;
static int late_retire;

void pa_agg_test_after_final_drain(void);
void pa_agg_test_after_final_drain(void)
{
    if (!late_ring)
        return;
    ring_put(late_ring, PA_REC_OSRT, 5000, 5010, NULL);
    ring_put(late_ring, PA_REC_OSRT, 5020, 5030, NULL);
    if (late_retire)
        atomic_store(&late_ring->retired, 1);
}

static void test_written_after_the_drain_loop(void **state)
{
    (void)state;
    for (late_retire = 0; late_retire < 2; late_retire++) {
        pa_agg_t *a = new_agg();
        late_ring = pa_ring_create(256, 300 + (uint32_t)late_retire);
        pa_ring_register(late_ring);
        ring_put(late_ring, PA_REC_OSRT, 1000, 1010, NULL); /* before the exit: below the cut-off */
        const pa_agg_results_t *res = pa_agg_finish(a);
        assert_int_equal(res->records_total, 3);
        assert_int_equal(res->late_records, 0);
        const pa_stat_row_t *ns = find_row(res, PA_CAT_OSRT, "nanosleep");
        assert_non_null(ns);
        assert_int_equal(ns->st.count, 3);
        assert_int_equal(ns->st.total, 30);
        if (!late_retire) /* a retired ring was freed by the drain that emptied it */
            atomic_store(&late_ring->retired, 1);
        late_ring = NULL;
        pa_agg_destroy(a);
        pa_ring_unlink_retired(NULL, NULL); /* drained to its end: freed */
        assert_null(pa_ring_list);
        unlink(path);
    }
}

static void test_thread_drains_rings(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/test_agg_thread_%d.zst", (int)getpid());
    pa_agg_config_t cfg = { .spool_path = path, .poll_interval_ns = 100000 };
    assert_int_equal(pa_agg_start(&cfg), 0);
    pthread_t th[PRODUCERS];
    for (uintptr_t i = 0; i < PRODUCERS; i++)
        pthread_create(&th[i], NULL, producer, (void *)(i + 100));
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(th[i], NULL);
    const pa_agg_results_t *res = pa_agg_stop(10ull * 1000000000ull);
    assert_non_null(res);
    uint64_t want = (uint64_t)PRODUCERS * (PAIRS * 3 + 1);
    assert_int_equal(res->records_total, want);
    assert_int_equal(res->drops_total, atomic_load(&refused));
    uint64_t drops = 0;
    for (size_t i = 0; i < res->nthreads; i++)
        drops += res->threads[i].drops;
    assert_int_equal(drops, res->drops_total);
    assert_int_equal(res->late_records, 0);
    assert_int_equal(res->nthreads, PRODUCERS);
    for (size_t i = 0; i < res->nthreads; i++)
        assert_int_equal(res->threads[i].records, PAIRS * 3 + 1);
    const pa_stat_row_t *it = find_row(res, PA_CAT_HGTX_RANGE, "iter");
    const pa_stat_row_t *ns = find_row(res, PA_CAT_OSRT, "nanosleep");
    assert_non_null(it);
    assert_non_null(ns);
    assert_int_equal(it->st.count, (uint64_t)PRODUCERS * PAIRS);
    assert_int_equal(it->st.total, (uint64_t)PRODUCERS * PAIRS * 4);
    assert_int_equal(ns->st.count, (uint64_t)PRODUCERS * PAIRS);
    assert_true(ns->st.median == 3.0);
    assert_int_equal(res->spool_records, (uint64_t)PRODUCERS * PAIRS * 2 + 2 + PRODUCERS);
    assert_null(pa_ring_list); /* every retired ring was unlinked and freed */
    pa_agg_free();
    unlink(path);
}

/* A thread's ring retired (it exited) and drained: its row stays, named from its STRING id (at
 * most 15 bytes shown), its records counted; a later thread given the same tid merges into that
 * row, and a range it left open is still reported, unterminated. */
static void test_retired_thread_row(void **state)
{
    (void)state;
    pa_agg_t *a = new_agg();
    pa_ring_t *r = pa_ring_create(256, 7);
    memcpy(r->name, "worker-seven-abc", 16);
    pa_ring_register(r);
    ring_put(r, PA_REC_THREAD_NAME, 100, 0, "worker-seven-abc");
    ring_put(r, PA_REC_HGTX_PUSH, 200, 0, "a");
    ring_put(r, PA_REC_HGTX_POP, 300, 0, NULL);
    ring_put(r, PA_REC_THREAD_EXIT, 400, 0, NULL);
    atomic_store(&r->retired, 1);
    pa_agg_drain_once(a);
    assert_null(pa_ring_list); /* drained: unlinked and freed */
    r = pa_ring_create(256, 7); /* the tid handed out again */
    pa_ring_register(r);
    ring_put(r, PA_REC_HGTX_PUSH, 500, 0, "b");
    ring_put(r, PA_REC_THREAD_EXIT, 600, 0, NULL);
    atomic_store(&r->retired, 1);
    pa_agg_drain_once(a);
    assert_null(pa_ring_list);
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_int_equal(res->nthreads, 1);
    assert_int_equal(res->threads[0].tid, 7);
    assert_string_equal(res->threads[0].name, "worker-seven-ab");
    assert_int_equal(res->threads[0].records, 6);
    assert_int_equal(res->threads[0].first_ns, 100);
    assert_int_equal(res->threads[0].last_ns, 600);
    assert_int_equal(res->hgtx_unterminated, 1);
    read_back();
    assert_int_equal(sp.nranges, 2);
    assert_string_equal(sp.str[sp.ranges[0].u.range.name_id], "a");
    assert_int_equal(sp.ranges[0].t1, 300);
    assert_string_equal(sp.str[sp.ranges[1].u.range.name_id], "b");
    assert_true(sp.ranges[1].flags & PA_RF_UNTERMINATED);
    assert_int_equal(sp.nthreads, 1);
    pa_agg_destroy(a);
    unlink(path);
}

/* A start refused by a full ring, then its end: the end's id carries PA_HGTX_ID_LOST (the
 * collector counts the ends it did not record; one that reached the ring counts the same way):
 * a drop's consequence, no misuse, no range. */
static void test_dropped_start_then_end(void **state)
{
    (void)state;
    drop_counts(2, 0, 0); /* two more ends of refused starts, not recorded */
    pa_agg_t *a = new_agg();
    feed(a, PA_REC_HGTX_START, 5, 100, 1, 0, 0, "kept");
    feed(a, PA_REC_HGTX_END, 5, 200, 1, 0, 0, NULL);
    feed(a, PA_REC_HGTX_END, 6, 300, 2 | PA_HGTX_ID_LOST, 0, 0, NULL); /* start 2 was dropped */
    const pa_agg_results_t *res = pa_agg_finish(a);
    assert_int_equal(res->hgtx_drop_end_no_start, 3);
    assert_int_equal(res->hgtx_drop_start_no_end, 0);
    assert_int_equal(res->hgtx_misuse_bad_end, 0);
    assert_int_equal(res->hgtx_unterminated, 0);
    read_back();
    assert_int_equal(sp.nranges, 1);
    assert_int_equal(sp.ranges[0].t1 - sp.ranges[0].t0, 100);
    pa_agg_destroy(a);
    unlink(path);
    drop_counts(0, 0, 0);
}

/* Starts whose id was handed out before the ring refused them (a stashed start, ITT keys) are
 * only counted: that many ends of unknown ids are the drops', the rest stays misuse. An end's
 * refusal likewise explains one range open at exit. A double end of a kept start, an end of an
 * id never started, stay misuse. */
static void test_counted_drops_and_misuse(void **state)
{
    (void)state;
    drop_counts(0, 1, 1);
    pa_agg_t *a = new_agg();
    feed(a, PA_REC_HGTX_END, 5, 100, 42, 0, 0, NULL);               /* start 42 was refused */
    feed(a, PA_REC_HGTX_END, 5, 110, 99, 0, 0, NULL);               /* never started: misuse */
    feed(a, PA_REC_HGTX_START, 5, 120, 3, 0, 0, "twice");
    feed(a, PA_REC_HGTX_END, 5, 130, 3, 0, 0, NULL);
    feed(a, PA_REC_HGTX_END, 6, 140, 3, 0, 0, NULL);                /* double end: misuse */
    feed(a, PA_REC_HGTX_START, 5, 150, 7, 0, 0, "end dropped");     /* its end was refused */
    feed(a, PA_REC_HGTX_START, 5, 160, 8, 0, 0, "never ended");     /* the program's */
    const pa_agg_results_t *res = pa_agg_finish(a);
    /* unmatched ends 42, 99 and the second 3: one explained by the refused start */
    assert_int_equal(res->hgtx_drop_end_no_start, 1);
    assert_int_equal(res->hgtx_misuse_bad_end, 2);
    /* open 7 and 8: one explained by the refused end */
    assert_int_equal(res->hgtx_drop_start_no_end, 1);
    assert_int_equal(res->hgtx_unterminated, 1);
    read_back();
    assert_int_equal(sp.nranges, 3); /* "twice" closed, both open ones stored as open */
    pa_agg_destroy(a);
    unlink(path);
    drop_counts(0, 0, 0);
}

/* No drops: the same sequence is all misuse and open ranges, as before; more counted refusals
 * than unmatched ends or open ranges explain only those there are. */
static void test_no_drops_all_misuse(void **state)
{
    (void)state;
    for (int drops = 0; drops < 2; drops++) {
        drop_counts(0, drops ? 5 : 0, drops ? 5 : 0);
        pa_agg_t *a = new_agg();
        feed(a, PA_REC_HGTX_END, 5, 100, 99, 0, 0, NULL);
        feed(a, PA_REC_HGTX_START, 5, 120, 3, 0, 0, "x");
        feed(a, PA_REC_HGTX_END, 5, 130, 3, 0, 0, NULL);
        feed(a, PA_REC_HGTX_END, 6, 140, 3, 0, 0, NULL);
        feed(a, PA_REC_HGTX_START, 5, 160, 8, 0, 0, "open");
        const pa_agg_results_t *res = pa_agg_finish(a);
        assert_int_equal(res->hgtx_drop_end_no_start, drops ? 2 : 0);
        assert_int_equal(res->hgtx_misuse_bad_end, drops ? 0 : 2);
        assert_int_equal(res->hgtx_drop_start_no_end, drops ? 1 : 0);
        assert_int_equal(res->hgtx_unterminated, drops ? 0 : 1);
        pa_agg_destroy(a);
        unlink(path);
    }
    drop_counts(0, 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_push_pop),
        cmocka_unit_test(test_end_before_start_across_threads),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_unterminated_and_domains),
        cmocka_unit_test(test_domain_stacks_interleaved),
        cmocka_unit_test(test_inline_names_bad_domain_key_ids),
        cmocka_unit_test(test_deep_nesting_and_limit),
        cmocka_unit_test(test_written_after_the_drain_loop),
        cmocka_unit_test(test_thread_drains_rings),
        cmocka_unit_test(test_retired_thread_row),
        cmocka_unit_test(test_dropped_start_then_end),
        cmocka_unit_test(test_counted_drops_and_misuse),
        cmocka_unit_test(test_no_drops_all_misuse),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (size_t i = 0; i < 64; i++)
        free(sp.str[i]);
    return rc;
}
