/* test_ring.c - per-thread ring: fill, payload wrapping the array end, exact drop counts, drain order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pa_ring.h"

typedef struct sink {
    size_t n;
    uint64_t t0[256];
    uint32_t len[256];
    const uint8_t *payload_ptr[256];
    uint8_t payload[256][512];
} sink_t;

static void collect(void *ctx, const pa_record_t *rec, const uint8_t *payload)
{
    sink_t *s = ctx;
    s->t0[s->n] = rec->t0;
    s->len[s->n] = rec->len;
    s->payload_ptr[s->n] = payload;
    if (rec->len)
        memcpy(s->payload[s->n], payload, rec->len);
    s->n++;
}

/* One-slot record with t0 = v; returns 0 when stored, -1 when refused. */
static int put(pa_ring_t *r, uint64_t v)
{
    pa_record_t *slot = pa_ring_reserve(r, 1);
    if (!slot)
        return -1;
    memset(slot, 0, sizeof *slot);
    slot->kind = PA_REC_HGTX_MARK;
    slot->nslots = 1;
    slot->t0 = v;
    pa_ring_commit(r, 1);
    return 0;
}

static int put_payload(pa_ring_t *r, uint64_t v, const uint8_t *data, uint32_t len)
{
    uint32_t ns = pa_record_slots(len);
    pa_record_t *slot = pa_ring_reserve(r, ns);
    if (!slot)
        return -1;
    memset(slot, 0, sizeof *slot);
    slot->kind = PA_REC_HGTX_PUSH;
    slot->nslots = (uint16_t)ns;
    slot->len = len;
    slot->t0 = v;
    pa_ring_write_payload(r, data, len);
    pa_ring_commit(r, ns);
    return 0;
}

static uint8_t scratch[64 * 64];

static void test_create_rounds_up(void **state)
{
    (void)state;
    pa_ring_t *r = pa_ring_create(100, 7);
    assert_non_null(r);
    assert_int_equal(r->mask + 1, 128);
    assert_int_equal(r->tid, 7);
    pa_ring_destroy(r);
    r = pa_ring_create(1, 7); /* minimum 64 */
    assert_int_equal(r->mask + 1, 64);
    pa_ring_destroy(r);
}

static void test_fill_then_drain_in_order(void **state)
{
    (void)state;
    pa_ring_t *r = pa_ring_create(64, 1);
    for (uint64_t i = 0; i < 64; i++)
        assert_int_equal(put(r, 1000 + i), 0);
    assert_int_equal(put(r, 9999), -1); /* 65th: full */
    assert_int_equal(atomic_load(&r->drops), 1);
    assert_int_equal(atomic_load(&r->records), 64);
    sink_t *s = test_calloc(1, sizeof *s);
    assert_int_equal(pa_ring_drain(r, collect, s, scratch, 0), 64);
    for (uint64_t i = 0; i < 64; i++)
        assert_int_equal(s->t0[i], 1000 + i);
    assert_int_equal(pa_ring_drain(r, collect, s, scratch, 0), 0); /* empty now */
    test_free(s);
    pa_ring_destroy(r);
}

static void test_drop_count_exact(void **state)
{
    (void)state;
    pa_ring_t *r = pa_ring_create(64, 1);
    int stored = 0;
    for (int i = 0; i < 100; i++)
        stored += put(r, (uint64_t)i) == 0;
    assert_int_equal(stored, 64);
    assert_int_equal(atomic_load(&r->drops), 36);
    sink_t *s = test_calloc(1, sizeof *s);
    assert_int_equal(pa_ring_drain(r, collect, s, scratch, 10), 10); /* frees 10 slots */
    assert_int_equal(s->t0[9], 9);
    stored = 0;
    for (int i = 0; i < 20; i++)
        stored += put(r, (uint64_t)(200 + i)) == 0;
    assert_int_equal(stored, 10);
    assert_int_equal(atomic_load(&r->drops), 46);
    assert_int_equal(atomic_load(&r->records), 74);
    /* the rest drains in production order: 10..63 then 200..209 */
    s->n = 0;
    assert_int_equal(pa_ring_drain(r, collect, s, scratch, 0), 64);
    assert_int_equal(s->t0[0], 10);
    assert_int_equal(s->t0[53], 63);
    assert_int_equal(s->t0[54], 200);
    assert_int_equal(s->t0[63], 209);
    test_free(s);
    pa_ring_destroy(r);
}

static void test_payload_wraps_array_end(void **state)
{
    (void)state;
    pa_ring_t *r = pa_ring_create(64, 1);
    sink_t *s = test_calloc(1, sizeof *s);
    for (int i = 0; i < 60; i++)
        put(r, (uint64_t)i);
    assert_int_equal(pa_ring_drain(r, collect, s, scratch, 0), 60);
    /* header at slot 60, 300 payload bytes = 5 slots: 61, 62, 63, then 0, 1 */
    uint8_t data[300];
    for (int i = 0; i < 300; i++)
        data[i] = (uint8_t)(i * 7 + 1);
    assert_int_equal(put_payload(r, 42, data, 300), 0);
    assert_int_equal(put(r, 43), 0); /* lands at slot 2 */
    s->n = 0;
    assert_int_equal(pa_ring_drain(r, collect, s, scratch, 0), 2);
    assert_int_equal(s->t0[0], 42);
    assert_int_equal(s->len[0], 300);
    assert_ptr_equal(s->payload_ptr[0], scratch); /* reassembled from both pieces */
    assert_memory_equal(s->payload[0], data, 300);
    assert_int_equal(s->t0[1], 43);
    assert_int_equal(atomic_load(&r->head), 60 + 6 + 1);
    /* a payload that does not wrap is handed over in place */
    assert_int_equal(put_payload(r, 44, data, 100), 0);
    s->n = 0;
    assert_int_equal(pa_ring_drain(r, collect, s, scratch, 0), 1);
    assert_ptr_equal(s->payload_ptr[0], (const uint8_t *)&r->slots[4]);
    assert_memory_equal(s->payload[0], data, 100);
    test_free(s);
    pa_ring_destroy(r);
}

/* Sink reading every payload byte it is given (ASan: no read past scratch or the slots). */
static void collect_sum(void *ctx, const pa_record_t *rec, const uint8_t *payload)
{
    sink_t *s = ctx;
    s->t0[s->n] = rec->t0;
    s->len[s->n] = rec->len;
    uint32_t sum = 0;
    for (uint32_t i = 0; i < rec->len; i++)
        sum += payload[i];
    s->payload[s->n][0] = (uint8_t)sum;
    s->n++;
}

/* A header overwritten by a stray write: a huge len and/or nslots beyond what was committed
 * must neither overflow scratch nor read past the committed slots. */
static void test_forged_header_clamped(void **state)
{
    (void)state;
    pa_ring_t *r = pa_ring_create(64, 1);
    sink_t *s = test_calloc(1, sizeof *s);
    for (int i = 0; i < 60; i++)
        put(r, (uint64_t)i);
    assert_int_equal(pa_ring_drain(r, collect, s, scratch, 0), 60);
    /* a 6-slot record at slot 60 wraps (61..63, 0, 1); its len forged to 4 GiB - 1 */
    uint8_t data[300] = {0};
    assert_int_equal(put_payload(r, 7, data, 300), 0);
    r->slots[60].len = UINT32_MAX;
    /* then a 1-slot record claiming 60000 slots and 1 MB: only 1 slot was committed */
    assert_int_equal(put(r, 8), 0);
    r->slots[2].nslots = 60000;
    r->slots[2].len = 1u << 20;
    s->n = 0;
    assert_int_equal(pa_ring_drain(r, collect_sum, s, scratch, 0), 2);
    assert_int_equal(s->t0[0], 7);
    assert_int_equal(s->len[0], 5 * 64); /* clamped to the 5 continuation slots */
    assert_int_equal(s->t0[1], 8);
    assert_int_equal(s->len[1], 0);      /* clamped to the 1 committed slot: no payload */
    assert_int_equal(atomic_load(&r->head), 60 + 6 + 1);
    assert_int_equal(atomic_load(&r->head), atomic_load(&r->tail));
    test_free(s);
    pa_ring_destroy(r);
}

static void test_payload_refused_when_no_room(void **state)
{
    (void)state;
    pa_ring_t *r = pa_ring_create(64, 1);
    for (int i = 0; i < 60; i++)
        put(r, (uint64_t)i);
    uint8_t data[320] = {0}; /* 1 + 5 slots > 4 free */
    assert_int_equal(put_payload(r, 1, data, 320), -1);
    assert_int_equal(atomic_load(&r->drops), 1);
    assert_int_equal(put_payload(r, 1, data, 192), 0); /* 1 + 3 slots = exactly the 4 free */
    assert_int_equal(atomic_load(&r->records), 61);
    pa_ring_destroy(r);
}

static size_t retired_calls;
static uint64_t retired_records;
static void on_retire(void *ctx, const pa_ring_t *r)
{
    (void)ctx;
    retired_calls++;
    retired_records = atomic_load(&r->records);
}

static void test_unlink_retired_only_when_drained(void **state)
{
    (void)state;
    pa_ring_t *a = pa_ring_create(64, 1), *b = pa_ring_create(64, 2);
    pa_ring_register(a);
    pa_ring_register(b);
    put(a, 1);
    put(a, 2);
    atomic_store(&a->retired, 1);
    assert_int_equal(pa_ring_unlink_retired(on_retire, NULL), 0); /* tail not drained yet */
    sink_t *s = test_calloc(1, sizeof *s);
    assert_int_equal(pa_ring_drain(a, collect, s, scratch, 0), 2);
    assert_int_equal(pa_ring_unlink_retired(on_retire, NULL), 1);
    assert_int_equal(retired_calls, 1);
    assert_int_equal(retired_records, 2);
    assert_ptr_equal(atomic_load(&pa_ring_list), b);
    assert_null(b->next);
    atomic_store(&b->retired, 1);
    assert_int_equal(pa_ring_unlink_retired(on_retire, NULL), 1);
    assert_null(atomic_load(&pa_ring_list));
    test_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rounds_up),
        cmocka_unit_test(test_fill_then_drain_in_order),
        cmocka_unit_test(test_drop_count_exact),
        cmocka_unit_test(test_payload_wraps_array_end),
        cmocka_unit_test(test_payload_refused_when_no_room),
        cmocka_unit_test(test_forged_header_clamped),
        cmocka_unit_test(test_unlink_retired_only_when_drained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
