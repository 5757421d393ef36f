/* test_hgtx.c - the agent's HGTX definitions and pa_emit: records, levels, ids, truncation, push names
 * near a page end, off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "collector.h"
#include <profagent/hgtx.h>

extern _Atomic uint64_t pa_hgtx_ends_unstarted; /* collector/hgtx.c */

typedef struct got {
    size_t n;
    pa_record_t rec[64];
    uint8_t payload[64][4096];
} got_t;

static void collect(void *ctx, const pa_record_t *rec, const uint8_t *payload)
{
    got_t *g = ctx;
    g->rec[g->n] = *rec;
    if (rec->len)
        memcpy(g->payload[g->n], payload, rec->len);
    g->n++;
}

static uint8_t scratch[4096];

/* The inline name bytes of an HGTX ring record (PA_RF_INLINE). */
static const uint8_t *inline_name(const pa_record_t *r)
{
    return (const uint8_t *)r + pa_hgtx_inline_off(r->kind);
}

static got_t *drain(void)
{
    static got_t g;
    memset(&g, 0, sizeof g);
    pa_ring_drain(pa_tls.ring, collect, &g, scratch, 0);
    return &g;
}

static int setup(void **state)
{
    (void)state;
    pa_config.ring_size = 4096; /* 64 slots: max payload (32 - 1) * 64 = 1984 bytes */
    atomic_store(&pa_sources, PA_SRC_ALL);
    return 0;
}

static void test_push_pop_records_and_levels(void **state)
{
    (void)state;
    assert_int_equal(hgtxRangePushA("outer"), 0);
    assert_int_equal(hgtxRangePushA(NULL), 1);
    assert_int_equal(hgtxRangePop(), 1);
    assert_int_equal(hgtxRangePop(), 0);
    assert_int_equal(hgtxRangePop(), -1); /* empty: misuse, still recorded */
    got_t *g = drain();
    assert_int_equal(g->n, 6);
    assert_int_equal(g->rec[0].kind, PA_REC_THREAD_NAME); /* first event of the thread */
    assert_int_equal(g->rec[1].kind, PA_REC_HGTX_PUSH);
    assert_int_equal(g->rec[1].len, 0); /* a short name travels inside the header slot */
    assert_true(g->rec[1].flags & PA_RF_INLINE);
    assert_int_equal(PA_RF_INLINE_LEN(g->rec[1].flags), 5);
    assert_memory_equal(inline_name(&g->rec[1]), "outer", 5);
    assert_int_equal(g->rec[1].nslots, 1);
    assert_int_equal(g->rec[1].u.hgtx.level, 0);
    assert_int_equal(g->rec[1].tid, pa_tls.tid);
    assert_true(g->rec[1].t0 > 0);
    assert_int_equal(g->rec[2].len, 0); /* NULL name = "" */
    assert_int_equal(g->rec[2].nslots, 1);
    assert_int_equal(g->rec[3].kind, PA_REC_HGTX_POP);
    assert_int_equal(g->rec[3].u.hgtx.level, 1);
    assert_int_equal(g->rec[5].u.hgtx.level, -1);
    assert_true(g->rec[1].t0 <= g->rec[3].t0);
}

static void test_start_end_ids_and_domains(void **state)
{
    (void)state;
    hgtxRangeId_t a = hgtxRangeStartA("a"), b = hgtxRangeStartA("b");
    assert_true(a > 0);
    assert_int_equal(b, a + 1);
    hgtxRangeEnd(a);
    hgtxDomainHandle_t d = hgtxDomainCreateA("dom");
    assert_non_null(d);
    assert_int_equal(hgtxDomainRangePushA(d, "in"), 0);
    assert_int_equal(hgtxDomainRangePop(d), 0);
    hgtxDomainMarkA(d, "m");
    got_t *g = drain();
    assert_int_equal(g->n, 7);
    assert_int_equal(g->rec[0].kind, PA_REC_HGTX_START);
    assert_int_equal(g->rec[0].u.hgtx.id, a);
    assert_int_equal(g->rec[2].kind, PA_REC_HGTX_END);
    assert_int_equal(g->rec[2].u.hgtx.id, a);
    assert_int_equal(g->rec[3].kind, PA_REC_HGTX_DOMAIN);
    assert_int_equal(g->rec[3].u.hgtx.domain, (uint32_t)(uintptr_t)d);
    assert_int_equal(PA_RF_INLINE_LEN(g->rec[3].flags), 3);
    assert_memory_equal(inline_name(&g->rec[3]), "dom", 3);
    assert_int_equal(g->rec[4].u.hgtx.domain, (uint32_t)(uintptr_t)d);
    assert_int_equal(g->rec[6].kind, PA_REC_HGTX_MARK);
}

static void test_long_name_truncated(void **state)
{
    (void)state;
    char name[3001];
    for (int i = 0; i < 3000; i++)
        name[i] = (char)('a' + i % 26);
    name[3000] = '\0';
    hgtxMarkA(name);
    got_t *g = drain();
    assert_int_equal(g->n, 1);
    assert_int_equal(g->rec[0].len, 1984);
    assert_int_equal(g->rec[0].nslots, 32);
    assert_true(g->rec[0].flags & PA_RF_TRUNCATED);
    assert_memory_equal(g->payload[0], name, 1984);
}

static void test_full_ring_counts_drops(void **state)
{
    (void)state;
    uint64_t before = atomic_load(&pa_tls.ring->drops);
    for (int i = 0; i < 100; i++) /* 100 x 1 slot (inline name) into 64 */
        hgtxMarkA("x");
    /* every record but a range end leaves PA_KEEP_ENDS slots free */
    assert_int_equal(atomic_load(&pa_tls.ring->drops) - before, 100 - (64 - PA_KEEP_ENDS));
    drain();
}

/* A full ring and start/end ranges: a refused start hands out an id its end recognizes (counted
 * as an end of a dropped start, nothing recorded); the end of a kept start finds the room kept
 * for ends; an end refused all the same is counted. */
static void test_full_ring_start_end(void **state)
{
    (void)state;
    drain();
    assert_int_equal(pa_tls.hgtx_open, 0);
    uint64_t unstarted = atomic_load(&pa_hgtx_ends_unstarted), lost = atomic_load(&pa_hgtx_ends_lost);
    uint64_t starts = atomic_load(&pa_hgtx_starts_lost);
    hgtxRangeId_t kept = hgtxRangeStartA("kept");
    assert_int_equal(kept >> 62, 0);
    uint64_t d0 = atomic_load(&pa_tls.ring->drops);
    int marks = 0;
    while (atomic_load(&pa_tls.ring->drops) == d0 && marks < 100) {
        hgtxMarkA("m");
        marks++;
    }
    assert_int_equal(marks, 64 - PA_KEEP_ENDS - 1 + 1); /* the start, the marks; the last refused */
    uint64_t drops = atomic_load(&pa_tls.ring->drops);
    hgtxRangeId_t refused = hgtxRangeStartA("refused");
    assert_int_equal(atomic_load(&pa_tls.ring->drops), drops + 1);
    assert_int_equal(refused >> 62, 1); /* PA_HGTX_ID_LOST: its end knows */
    hgtxRangeEnd(refused);
    assert_int_equal(atomic_load(&pa_hgtx_ends_unstarted), unstarted + 1);
    assert_int_equal(atomic_load(&pa_tls.ring->drops), drops + 1); /* nothing written, nothing refused */
    hgtxRangeEnd(kept); /* in the room kept for ends */
    for (int i = 0; i < PA_KEEP_ENDS - 1; i++)
        hgtxRangeEnd(1000 + (uint64_t)i); /* unknown ids: the aggregator's misuse, room all the same */
    assert_int_equal(atomic_load(&pa_hgtx_ends_lost), lost);
    hgtxRangeEnd(2000); /* the ring is full now */
    assert_int_equal(atomic_load(&pa_hgtx_ends_lost), lost + 1);
    assert_int_equal(atomic_load(&pa_hgtx_starts_lost), starts);
    got_t *g = drain();
    assert_int_equal(g->n, 64);
    assert_int_equal(g->rec[0].kind, PA_REC_HGTX_START);
    assert_int_equal(g->rec[0].u.hgtx.id, kept);
    assert_int_equal(g->rec[64 - PA_KEEP_ENDS].kind, PA_REC_HGTX_END);
    assert_int_equal(g->rec[64 - PA_KEEP_ENDS].u.hgtx.id, kept);
    assert_int_equal(g->rec[63].u.hgtx.id, 1000 + PA_KEEP_ENDS - 2);
}

/* Names up to the header's spare room are inline (24 bytes; 16 for start), longer ones payload. */
static void test_inline_boundaries(void **state)
{
    (void)state;
    const char *n24 = "abcdefghijklmnopqrstuvwx", *n25 = "abcdefghijklmnopqrstuvwxy";
    hgtxMarkA(n24);
    hgtxMarkA(n25);
    hgtxRangeId_t id16 = hgtxRangeStartA("0123456789abcdef");
    hgtxRangeId_t id17 = hgtxRangeStartA("0123456789abcdefg");
    got_t *g = drain();
    assert_int_equal(g->n, 4);
    assert_int_equal(g->rec[0].nslots, 1);
    assert_int_equal(PA_RF_INLINE_LEN(g->rec[0].flags), 24);
    assert_memory_equal(inline_name(&g->rec[0]), n24, 24);
    assert_false(g->rec[1].flags & PA_RF_INLINE);
    assert_int_equal(g->rec[1].nslots, 2);
    assert_int_equal(g->rec[1].len, 25);
    assert_memory_equal(g->payload[1], n25, 25);
    assert_int_equal(g->rec[2].nslots, 1); /* 16 inline next to the id */
    assert_int_equal(g->rec[2].u.hgtx.id, id16);
    assert_memory_equal(inline_name(&g->rec[2]), "0123456789abcdef", 16);
    assert_int_equal(g->rec[3].nslots, 2);
    assert_int_equal(g->rec[3].u.hgtx.id, id17);
    assert_int_equal(g->rec[3].len, 17);
}

/* A push's name of every length 0..30 ending at every distance 0..40 before an unmapped page
 * (the name's words are read up to 24 bytes past the NUL within the page only), and within a
 * page: inline up to 24 bytes with the bytes after it zero, as payload beyond. */
static void test_push_names_near_page_end(void **state)
{
    (void)state;
    long pg = 4096;
    uint8_t *m = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
    for (size_t len = 0; len <= 30; len++) {
        for (size_t gap = 0; gap <= 40; gap++) {
            for (int mid = 0; mid < 2; mid++) {
                /* the NUL `gap` bytes before the guard page; mid: the name in the page's middle */
                char *s = (char *)m + (mid ? 1000 + gap : (size_t)pg - 1 - gap - len);
                memset((char *)m + (mid ? 0 : (size_t)pg - 80), 'Z', 80 - 1); /* garbage past the NUL */
                for (size_t i = 0; i < len; i++)
                    s[i] = (char)('a' + (i + gap) % 26);
                s[len] = 0;
                assert_int_equal(hgtxRangePushA(s), 0);
                assert_int_equal(hgtxRangePop(), 0);
                got_t *g = drain();
                assert_int_equal(g->n, 2);
                const pa_record_t *r = &g->rec[0];
                assert_int_equal(r->kind, PA_REC_HGTX_PUSH);
                if (len <= 24) {
                    assert_true(r->flags & PA_RF_INLINE);
                    assert_int_equal(PA_RF_INLINE_LEN(r->flags), len);
                    assert_int_equal(r->nslots, 1);
                    assert_memory_equal(inline_name(r), s, len);
                    for (size_t i = len; i < 24; i++)
                        assert_int_equal(inline_name(r)[i], 0);
                } else {
                    assert_false(r->flags & PA_RF_INLINE);
                    assert_int_equal(r->len, len);
                    assert_memory_equal(g->payload[0], s, len);
                }
            }
        }
    }
    munmap(m, 2 * (size_t)pg);
}

/* Levels are per (thread, domain); garbage and destroyed handles are flagged, domain 0. */
static void test_domain_stacks_and_bad_handles(void **state)
{
    (void)state;
    hgtxDomainHandle_t a = hgtxDomainCreateA("A"), b = hgtxDomainCreateA("B");
    assert_int_equal(hgtxDomainRangePushA(a, "a"), 0);
    assert_int_equal(hgtxDomainRangePushA(b, "b"), 0);  /* B's own stack */
    assert_int_equal(hgtxRangePushA("plain"), 0);       /* default domain's own stack */
    assert_int_equal(hgtxDomainRangePushA(a, "a2"), 1);
    assert_int_equal(hgtxDomainRangePop(a), 1);
    assert_int_equal(hgtxDomainRangePop(a), 0);        /* closes A:a although B:b is newer */
    assert_int_equal(hgtxDomainRangePop(a), -1);
    assert_int_equal(hgtxDomainRangePop(b), 0);
    assert_int_equal(hgtxRangePop(), 0);
    got_t *g = drain();
    for (size_t i = 0; i < g->n; i++)
        assert_false(g->rec[i].flags & PA_RF_BAD_DOMAIN);
    hgtxDomainHandle_t junk = (hgtxDomainHandle_t)(uintptr_t)0x5678;
    assert_int_equal(hgtxDomainRangePushA(junk, "j"), 0); /* acts on the default domain */
    assert_int_equal(hgtxRangePop(), 0);
    hgtxDomainDestroy(b);
    hgtxDomainMarkA(b, "late");
    hgtxDomainDestroy(b);
    g = drain();
    assert_int_equal(g->n, 5);
    assert_int_equal(g->rec[0].kind, PA_REC_HGTX_PUSH);
    assert_true(g->rec[0].flags & PA_RF_BAD_DOMAIN);
    assert_int_equal(g->rec[0].u.hgtx.domain, 0);
    assert_false(g->rec[1].flags & PA_RF_BAD_DOMAIN);
    assert_int_equal(g->rec[2].kind, PA_REC_HGTX_DOMAIN_DESTROY);
    assert_false(g->rec[2].flags & PA_RF_BAD_DOMAIN); /* first destroy is fine */
    assert_true(g->rec[3].flags & PA_RF_BAD_DOMAIN);  /* used after destroy */
    assert_true(g->rec[4].flags & PA_RF_BAD_DOMAIN);  /* destroyed twice */
}

static void test_off_returns_plausible_values(void **state)
{
    (void)state;
    atomic_store(&pa_sources, PA_SRC_OSRT); /* hgtx not traced */
    assert_int_equal(hgtxRangePushA("x"), 0);
    assert_int_equal(hgtxRangePushA("y"), 1);
    assert_int_equal(hgtxRangePop(), 1);
    assert_int_equal(hgtxRangePop(), 0);
    assert_int_equal(hgtxRangeStartA("s"), 0);
    assert_null(hgtxDomainCreateA("d"));
    assert_int_equal(drain()->n, 0);
    pa_guard_enter(); /* agent code on this thread: nothing recorded either */
    atomic_store(&pa_sources, PA_SRC_ALL);
    hgtxMarkA("guarded");
    pa_guard_leave();
    assert_int_equal(drain()->n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_pop_records_and_levels), cmocka_unit_test(test_start_end_ids_and_domains),
        cmocka_unit_test(test_long_name_truncated),         cmocka_unit_test(test_full_ring_counts_drops),
        cmocka_unit_test(test_full_ring_start_end),
        cmocka_unit_test(test_inline_boundaries),         cmocka_unit_test(test_push_names_near_page_end),
        cmocka_unit_test(test_domain_stacks_and_bad_handles),
        cmocka_unit_test(test_off_returns_plausible_values),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
