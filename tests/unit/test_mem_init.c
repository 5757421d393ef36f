/* test_mem_init.c - mem source: an allocation recorded while another thread is still inside the
 * walker's one-time init (dlopen of libunwind, under the loader lock) must not wait for it:
 * it is recorded at once, without a stack. mem.c is built in with stubs for the collector. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../collector/mem.c"

/* collector stubs: one ring for the test thread, every source collecting */
__thread pa_tls_t pa_tls __attribute__((tls_model("initial-exec")));
_Atomic uint32_t pa_sources = ~0u;
_Atomic uint64_t pa_unrecorded;
_Atomic uint64_t pa_late_no_ring;
_Atomic int pa_thread_no_new_rings;
_Atomic int pa_thread_no_new_rings;
pa_config_t pa_config;
static pa_ring_t *test_ring;
pa_ring_t *pa_thread_ring_slow(void) { return pa_tls.ring = test_ring; }
uint32_t pa_mem_dl_gen_now(void) { return 7; }
void pa_mem_python_init(void) {}
static int py_calls;
uint32_t pa_mem_python_capture(char *buf, uint32_t cap, uint32_t *nframes, uint32_t *omitted)
{
    (void)buf, (void)cap;
    py_calls++;
    *nframes = *omitted = 0;
    return 0;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_mem_init: pa_mem_on_alloc waited for the init in progress\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

static pa_mem_stack_hdr_t last_hdr;
static pa_record_t last_rec;
static void sink(void *ctx, const pa_record_t *rec, const uint8_t *payload)
{
    (void)ctx;
    last_rec = *rec;
    memcpy(&last_hdr, payload, sizeof last_hdr);
}

static void test_no_wait_while_initializing(void **s)
{
    (void)s;
    test_ring = pa_ring_create(1024, 1);
    pa_config.callstack_depth = 8;
    atomic_store(&mem_state, 1); /* another thread is inside mem_init_once() */
    signal(SIGALRM, on_alarm);
    alarm(5);
    pa_mem_on_alloc(100, 200, 1, (void *)0x10, NULL, 4096, (void *)0x5000, 0);
    alarm(0);
    static uint8_t scratch[1024 * 64];
    assert_int_equal(pa_ring_drain(test_ring, sink, NULL, scratch, 0), 1);
    assert_int_equal(last_rec.kind, PA_REC_MEM_ALLOC);
    assert_int_equal(last_rec.u.mem.size, 4096);
    assert_int_equal(last_rec.u.mem.ptr, 0x5000);
    assert_int_equal(last_hdr.nframes, 0); /* no stack: the walker is not ready */
    assert_int_equal(last_hdr.gen, 7);
    assert_int_equal(py_calls, 0);         /* nor the Python hooks */
    assert_int_equal(atomic_load(&mem_state), 1); /* the other thread still owns the init */
    pa_ring_destroy(test_ring);
}

int main(void)
{
    const struct CMUnitTest t[] = {cmocka_unit_test(test_no_wait_while_initializing)};
    return cmocka_run_group_tests(t, NULL, NULL);
}
