/* test_spool.c - zstd spool round trip (1 M records, 100 KB payload; synchronous and through the spool thread) and truncated files. */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "pa_spool.h"

#define NREC 1000000u
#define BIG_AT 500000u
#define BIG_LEN (100u * 1024u)

static char path[64];

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/test_spool_%d.zst", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

/* Record i carries i in t0 and a payload of (i % 97) bytes (0xFF and NUL included), except
 * record BIG_AT which carries BIG_LEN bytes. */
static uint32_t payload_len(uint32_t i)
{
    return i == BIG_AT ? BIG_LEN : i % 97;
}

static void fill_payload(uint8_t *p, uint32_t i, uint32_t len)
{
    for (uint32_t k = 0; k < len; k++)
        p[k] = (uint8_t)(i * 31 + k * 7 + (k % 5 == 0 ? 0xFF : 0));
}

/* pipe: 0 = synchronous writer, else the worker's pipe bytes; records without payload then go
 * through pa_spool_slot() when it has room. Returns the times the pipe was found full. */
static uint64_t write_spool_pipe(uint32_t n, size_t pipe)
{
    pa_spool_writer_t *w = pa_spool_open_write(path, 1);
    assert_non_null(w);
    if (pipe)
        assert_int_equal(pa_spool_start_worker(w, pipe), 0);
    uint8_t *buf = malloc(BIG_LEN);
    for (uint32_t i = 0; i < n; i++) {
        pa_record_t r = { .kind = PA_SP_OSRT, .tid = i ^ 0x5a5a, .t0 = i, .t1 = (uint64_t)i * 3 };
        r.len = payload_len(i);
        r.nslots = 77; /* wrong on purpose: append recomputes it */
        pa_record_t *slot = pipe && !r.len ? pa_spool_slot(w) : NULL;
        if (slot) {
            *slot = r;
            pa_spool_slot_commit(w);
            continue;
        }
        fill_payload(buf, i, r.len);
        assert_int_equal(pa_spool_append(w, &r, r.len ? buf : NULL), 0);
    }
    uint64_t raw = 0, comp = 0, waits = 0, wait_ns = 0;
    assert_int_equal(pa_spool_close_write_stats(w, &raw, &comp, &waits, &wait_ns), 0);
    assert_true(raw >= (uint64_t)n * 64);
    assert_true(comp > 0 && (n == 0 || comp < raw));
    free(buf);
    return waits;
}

static void write_spool(uint32_t n)
{
    write_spool_pipe(n, 0);
}

/* Reads back; returns the number of good records and the final status in *last. */
static uint32_t read_spool(int *last)
{
    pa_spool_reader_t *r = pa_spool_open_read(path);
    assert_non_null(r);
    uint8_t *want = malloc(BIG_LEN);
    const pa_record_t *rec;
    const uint8_t *pl;
    uint32_t i = 0;
    int rc;
    while ((rc = pa_spool_next(r, &rec, &pl)) == 1) {
        uint32_t len = payload_len(i);
        assert_int_equal(rec->t0, i);
        assert_int_equal(rec->t1, (uint64_t)i * 3);
        assert_int_equal(rec->tid, i ^ 0x5a5a);
        assert_int_equal(rec->len, len);
        assert_int_equal(rec->nslots, pa_record_slots(len));
        if (len) {
            fill_payload(want, i, len);
            assert_memory_equal(pl, want, len);
        }
        i++;
    }
    *last = rc;
    free(want);
    pa_spool_close_read(r);
    return i;
}

static void test_round_trip(void **state)
{
    (void)state;
    write_spool(NREC);
    int last;
    assert_int_equal(read_spool(&last), NREC);
    assert_int_equal(last, 0);
}

/* The same records through the spool's own thread and a 64 KiB pipe: the 100 KB payload cannot
 * fit in it (it goes in pieces, so the producer waited at least once) and the file reads back
 * byte for byte in order. */
static void test_round_trip_worker(void **state)
{
    (void)state;
    assert_true(write_spool_pipe(NREC, 64u << 10) >= 1);
    int last;
    assert_int_equal(read_spool(&last), NREC);
    assert_int_equal(last, 0);
    write_spool_pipe(0, 64u << 10); /* an empty session through the worker: one empty frame */
    assert_int_equal(read_spool(&last), 0);
    assert_int_equal(last, 0);
}

/* With a worker, pa_spool_flush() is a request: what came before it becomes a published frame
 * (the file follows) while the writer stays open. */
static void test_worker_flush_publishes(void **state)
{
    (void)state;
    static _Atomic uint64_t published;
    atomic_store(&published, 0);
    pa_spool_writer_t *w = pa_spool_open_write(path, 1);
    assert_non_null(w);
    pa_spool_set_publish(w, &published);
    assert_int_equal(pa_spool_start_worker(w, 1u << 20), 0);
    for (uint32_t i = 0; i < 3000; i++) {
        pa_record_t r = { .kind = PA_SP_OSRT, .tid = i ^ 0x5a5a, .t0 = i, .t1 = (uint64_t)i * 3 };
        r.len = payload_len(i);
        uint8_t buf[128];
        fill_payload(buf, i, r.len);
        assert_int_equal(pa_spool_append(w, &r, r.len ? buf : NULL), 0);
    }
    assert_int_equal(pa_spool_flush(w), 0);
    for (int k = 0; k < 5000 && atomic_load(&published) == 0; k++) /* bounded: a stuck worker fails */
        usleep(1000);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal((uint64_t)st.st_size, atomic_load(&published));
    int last;
    assert_int_equal(read_spool(&last), 3000);
    assert_int_equal(last, 0);
    pa_spool_close_write(w, NULL, NULL);
}

static void test_truncated(void **state)
{
    (void)state;
    write_spool(200000);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, size / 2), 0);
    int last;
    uint32_t n = read_spool(&last); /* every record before the cut is intact */
    assert_int_equal(last, -1);
    assert_true(n > 0 && n < 200000);
    assert_int_equal(truncate(path, 0), 0);
    assert_int_equal(read_spool(&last), 0);
    assert_int_equal(last, -1); /* an empty file is a truncated spool, not an empty one */
}

static void test_empty_spool(void **state)
{
    (void)state;
    write_spool(0);
    int last;
    assert_int_equal(read_spool(&last), 0);
    assert_int_equal(last, 0);
}

/* Defect qa2#1: the writer keeps no fd between flushes. After open_write and appends, the
 * lowest free fd is unchanged (an app's closefrom()+open() can't get ours), a file opened by
 * "the app" in between receives nothing, and pa_spool_flush() makes what was appended so far
 * readable even if the rest never comes (crash). */
static void test_no_fd_held_and_flush(void **state)
{
    (void)state;
    int probe = dup(0);
    close(probe); /* lowest free fd before */
    pa_spool_writer_t *w = pa_spool_open_write(path, 1);
    assert_non_null(w);
    int after = dup(0);
    assert_int_equal(after, probe);
    close(after);
    char app[80];
    snprintf(app, sizeof app, "%s.app", path);
    FILE *af = fopen(app, "w"); /* takes the fd a kept spool fd would have had */
    assert_non_null(af);
    for (uint32_t i = 0; i < 3000; i++) {
        pa_record_t r = { .kind = PA_SP_OSRT, .tid = i ^ 0x5a5a, .t0 = i, .t1 = (uint64_t)i * 3 };
        r.len = payload_len(i);
        uint8_t buf[128];
        fill_payload(buf, i, r.len);
        assert_int_equal(pa_spool_append(w, &r, r.len ? buf : NULL), 0);
    }
    assert_int_equal(pa_spool_flush(w), 0);
    fclose(af);
    struct stat st;
    assert_int_equal(stat(app, &st), 0);
    assert_int_equal(st.st_size, 0); /* the app's file got no spool bytes */
    unlink(app);
    int last;
    assert_int_equal(read_spool(&last), 3000); /* readable up to the flush, writer still open */
    assert_int_equal(last, 0);
    pa_spool_close_write(w, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_flush_publishes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_spool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_fd_held_and_flush, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
