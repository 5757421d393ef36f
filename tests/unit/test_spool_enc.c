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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_records_are_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
