/* test_spool_enc.c - the spool's compact record encoding: exact round trip of edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <zstd.h>

#include "pa_spool.h"

static char path[64];

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/test_spool_enc_%d.zst", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

/* Case i: a header and a payload length; the payload bytes are (k * 13 + i) with 0xFF/NUL. */
typedef struct ecase {
    pa_record_t rec;
    uint32_t len;
} ecase_t;

static void payload_of(uint8_t *p, uint32_t i, uint32_t len)
{
    for (uint32_t k = 0; k < len; k++)
        p[k] = (uint8_t)(k % 3 == 0 ? 0xFF : k % 3 == 1 ? 0 : k * 13 + i);
}

/* Every 8-byte word set to `v`, except word 0 (kind; nslots/len are the spool's). */
static pa_record_t words(uint16_t kind, uint64_t v)
{
    pa_record_t r;
    uint64_t w[8];
    for (int i = 0; i < 8; i++)
        w[i] = v;
    memcpy(&r, w, sizeof r);
    r.kind = kind;
    r.nslots = 1;
    r.len = 0;
    return r;
}

static size_t make_cases(ecase_t *c)
{
    size_t n = 0;
    memset(c, 0, 32 * sizeof *c);
    c[n++].rec.kind = PA_SP_OSRT;                           /* all zero */
    c[n++].rec = words(PA_SP_HGTX_RANGE, ~0ull);            /* all 0xFF words: t0 delta wraps */
    c[n++].rec = words(0xFFFF, 0x8000000000000000ull);      /* only the top bits */
    c[n].rec = words(PA_SP_ZE_API, 0x00000001FFFFFFFFull);  /* halves 0xFFFFFFFF and 1 */
    c[n++].rec.t0 = 5;                                      /* t0 goes back: negative delta */
    c[n].rec.kind = PA_SP_OSRT;
    c[n].rec.t0 = 0;                                        /* t0 absent, t1 present */
    c[n++].rec.t1 = 123456789;
    c[n].rec.kind = PA_SP_OSRT;
    c[n].rec.t0 = 1000000000000ull;
    c[n++].rec.t1 = 999999999999ull;                        /* t1 < t0 */
    uint32_t lens[] = { 0, 1, 63, 64, 65, 128, 100000 };
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        c[n].rec.kind = PA_SP_STRING;
        c[n].rec.u.str.id = k + 1;
        c[n].rec.t0 = 1000000000000ull + k;
        c[n].rec.flags = PA_RF_TRUNCATED;
        c[n++].len = lens[k];
    }
    c[n].rec = words(PA_SP_MEM_FRAME, ~0ull);               /* 0xFF header and a 65-byte payload */
    c[n++].len = 65;
    return n;
}

static void write_cases(const ecase_t *c, size_t n, uint8_t *buf)
{
    pa_spool_writer_t *w = pa_spool_open_write(path, 1);
    assert_non_null(w);
    for (size_t i = 0; i < n; i++) {
        pa_record_t r = c[i].rec;
        r.len = c[i].len;
        payload_of(buf, (uint32_t)i, c[i].len);
        assert_int_equal(pa_spool_append(w, &r, c[i].len ? buf : NULL), 0);
    }
    assert_int_equal(pa_spool_close_write(w, NULL, NULL), 0);
}

static void test_round_trip(void **state)
{
    (void)state;
    ecase_t c[32];
    size_t n = make_cases(c);
    uint8_t *buf = malloc(100000), *want = malloc(100000);
    assert_non_null(buf);
    assert_non_null(want);
    write_cases(c, n, buf);
    pa_spool_reader_t *r = pa_spool_open_read(path);
    assert_non_null(r);
    const pa_record_t *rec;
    const uint8_t *pl;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(pa_spool_next(r, &rec, &pl), 1);
        pa_record_t exp = c[i].rec;
        exp.len = c[i].len;
        exp.nslots = (uint16_t)(1 + (c[i].len + 63) / 64);
        assert_memory_equal(rec, &exp, sizeof exp);  /* every header byte, word by word */
        if (c[i].len) {
            payload_of(want, (uint32_t)i, c[i].len);
            assert_non_null(pl);
            assert_memory_equal(pl, want, c[i].len);
        } else {
            assert_null(pl);
        }
    }
    assert_int_equal(pa_spool_next(r, &rec, &pl), 0);  /* clean end */
    pa_spool_close_read(r);
    free(buf);
    free(want);
}

/* A header of zeros is 4 bytes + nothing: 1000 of them compress to far less than 1000 slots. */
static void test_zero_records_are_small(void **state)
{
    (void)state;
    pa_spool_writer_t *w = pa_spool_open_write(path, 1);
    assert_non_null(w);
    pa_record_t z = { .kind = PA_SP_OSRT };
    for (int i = 0; i < 1000; i++)
        assert_int_equal(pa_spool_append(w, &z, NULL), 0);
    uint64_t raw = 0, comp = 0;
    assert_int_equal(pa_spool_close_write(w, &raw, &comp), 0);
    assert_int_equal(raw, 1000 * 64);  /* raw counts 64-byte slots, as before the encoding */
    assert_true(comp < 200);
}

/* Appends `n` raw bytes to the spool file as one zstd frame (a hand-made record). */
static void write_raw_frame(const uint8_t *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint8_t out[256];
    size_t k = ZSTD_compress(out, sizeof out, bytes, n, 1);
    assert_false(ZSTD_isError(k));
    assert_int_equal(fwrite(out, 1, k, f), k);
    fclose(f);
}

/* Bytes that decode to no record: a mask bit beyond the 13 defined ones, a payload length of
 * 0 with the "has payload" bit, an overlong varint, a record cut inside its header. */
static void test_malformed(void **state)
{
    (void)state;
    static const uint8_t bad_mask[] = { 0x20, 0x10, 0x00, 0x20 };
    static const uint8_t zero_len[] = { 0x20, 0x10, 0x01, 0x00, 0x00 };
    static const uint8_t long_t0[] = { 0x20, 0x10, 0x02, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    static const uint8_t cut[] = { 0x20, 0x10, 0x06, 0x00, 0x85 };
    const struct { const uint8_t *b; size_t n; } cases[] = {
        { bad_mask, sizeof bad_mask }, { zero_len, sizeof zero_len },
        { long_t0, sizeof long_t0 }, { cut, sizeof cut } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_raw_frame(cases[i].b, cases[i].n);
        pa_spool_reader_t *r = pa_spool_open_read(path);
        assert_non_null(r);
        const pa_record_t *rec;
        const uint8_t *pl;
        assert_int_equal(pa_spool_next(r, &rec, &pl), -1);
        pa_spool_close_read(r);
    }
}

/* ---- the encoding's bytes against a reference encoder written from the format (pa_spool.c's
 * comment), for random record streams: any change to the encoder must keep the bytes ---- */

static uint8_t *ref_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint64_t ref_zz64(uint64_t d) { return (d << 1) ^ (((int64_t)d < 0) ? ~0ull : 0); }
static uint32_t ref_zz32(uint32_t d) { return (d << 1) ^ (((int32_t)d < 0) ? ~0u : 0); }

static uint8_t *ref_encode(uint8_t *p, const pa_record_t *r, uint32_t len, const uint8_t *pl, uint64_t *prev_t0,
                           uint32_t ctx[256][10])
{
    static const int off[10] = {8, 12, 32, 36, 40, 44, 48, 52, 56, 60};
    uint32_t *c = ctx[r->kind & 255], mask = 0;
    uint8_t *s = p;
    p += 4;
    if (len) {
        mask |= 1;
        p = ref_varint(p, len);
    }
    if (r->t0) {
        mask |= 2;
        p = ref_varint(p, ref_zz64(r->t0 - *prev_t0));
        *prev_t0 = r->t0;
    }
    if (r->t1) {
        mask |= 4;
        p = ref_varint(p, ref_zz64(r->t1 - r->t0));
    }
    for (int i = 0; i < 10; i++) {
        uint32_t x;
        memcpy(&x, (const uint8_t *)r + off[i], 4);
        if (x != c[i]) {
            mask |= 1u << (3 + i);
            p = ref_varint(p, ref_zz32(x - c[i]));
            c[i] = x;
        }
    }
    s[0] = (uint8_t)r->kind, s[1] = (uint8_t)(r->kind >> 8), s[2] = (uint8_t)mask, s[3] = (uint8_t)(mask >> 8);
    memcpy(p, pl, len);
    return p + len;
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* A value of a random size: 0, small, 1..4 bytes, or all bits. */
static uint64_t rnd_val(void)
{
    switch (rnd() % 6) {
    case 0: return 0;
    case 1: return rnd() % 4;
    case 2: return rnd() % 300;
    case 3: return rnd() & 0xffffffull;
    case 4: return rnd() & 0xffffffffull;
    default: return rnd();
    }
}

static void same_bytes(int worker)
{
    enum { N = 30000 };
    static const uint16_t kinds[] = {PA_SP_OSRT, PA_SP_HGTX_RANGE, PA_SP_STRING, PA_SP_THREAD, 0x1077};
    static uint32_t ctx[256][10];
    static pa_record_t last[5];
    memset(ctx, 0, sizeof ctx);
    memset(last, 0, sizeof last);
    size_t cap = 16u << 20, n = 0;
    uint8_t *want = malloc(cap), *got = malloc(cap), *pl = malloc(100000);
    assert_non_null(want);
    assert_non_null(got);
    assert_non_null(pl);
    uint64_t prev_t0 = 0, t = 1000000;
    pa_spool_writer_t *w = pa_spool_open_write(path, -1);
    assert_non_null(w);
    if (worker)
        assert_int_equal(pa_spool_start_worker(w, 1u << 16), 0);
    for (int i = 0; i < N; i++) {
        int k = (int)(rnd() % 5);
        pa_record_t r = last[k];
        r.kind = kinds[k];
        uint32_t *h = (uint32_t *)&r;
        for (int j = 0; j < 3; j++) { /* a few halves change, or none */
            int idx = (int)(rnd() % 16);
            if (idx >= 2 && idx != 4 && idx != 5 && idx < 16)
                h[idx] = (uint32_t)(rnd() % 3 == 0 ? h[idx] + 1 : rnd_val());
        }
        t += rnd() % 5000;
        r.t0 = rnd() % 50 == 0 ? 0 : rnd() % 20 == 0 ? t - rnd() % 100000 : rnd() % 200 == 0 ? rnd() : t;
        r.t1 = rnd() % 4 == 0 ? 0 : rnd() % 30 == 0 ? r.t0 - rnd() % 1000 : rnd() % 300 == 0 ? rnd() : r.t0 + rnd_val() % 100000;
        uint32_t len = i == N / 2 ? 100000 : rnd() % 3 == 0 ? (uint32_t)(rnd() % 300) : 0;
        for (uint32_t b = 0; b < len; b++)
            pl[b] = (uint8_t)rnd();
        last[k] = r;
        r.nslots = (uint16_t)pa_record_slots(len);
        r.len = len;
        pa_record_t enc = r;
        enc.nslots = 0, enc.len = 0; /* the spool encodes len itself; the kind word's rest is its */
        n = (size_t)(ref_encode(want + n, &enc, len, pl, &prev_t0, ctx) - want);
        assert_true(n + 200000 < cap);
        assert_int_equal(pa_spool_append(w, &r, len ? pl : NULL), 0);
    }
    assert_int_equal(pa_spool_close_write(w, NULL, NULL), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t file[16u << 20];
    size_t fn = fread(file, 1, sizeof file, f);
    fclose(f);
    size_t gn = ZSTD_decompress(got, cap, file, fn); /* the frames, one after the other */
    assert_false(ZSTD_isError(gn));
    assert_int_equal(gn, n);
    assert_memory_equal(got, want, n);
    free(want);
    free(got);
    free(pl);
}

static void test_same_bytes(void **state)
{
    (void)state;
    same_bytes(0);
}

static void test_same_bytes_worker(void **state)
{
    (void)state;
    same_bytes(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_records_are_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_bytes_worker, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
