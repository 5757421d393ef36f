/* test_hostctr.c - host counters: libpfm4 encoding, probe and fallbacks (real ENOENT, fake EACCES/EMFILE),
 * the fd budget (threads at once, the probe itself, a fork child's count), group read and multiplex
 * scaling with a fake reader, fds closed at thread exit. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../collector/collector.h"
#include "../../hwcounters/hostctr.h"

/* ---- collector stubs: each thread gets a real ring; records are read back from it ---- */
__thread pa_tls_t pa_tls __attribute__((tls_model("initial-exec")));
_Atomic uint32_t pa_sources = PA_SRC_ALL;
_Atomic uint64_t pa_unrecorded;
_Atomic uint64_t pa_late_no_ring;
_Atomic int pa_thread_no_new_rings;

static pa_ring_t *rings[256];
static _Atomic int nrings;

pa_ring_t *pa_thread_ring_slow(void)
{
    if (!pa_tls.ring) {
        pa_tls.ring = pa_ring_create(1024, (uint32_t)syscall(SYS_gettid));
        rings[atomic_fetch_add(&nrings, 1) % 256] = pa_tls.ring;
    }
    return pa_tls.ring;
}

static pa_record_t got[512];
static uint64_t got_pl[512][PA_HC_MAX_EVENTS];
static size_t ngot;

static void sink(void *ctx, const pa_record_t *rec, const uint8_t *payload)
{
    (void)ctx;
    if (ngot < 512) {
        got[ngot] = *rec;
        if (payload && rec->len)
            memcpy(got_pl[ngot], payload, rec->len < sizeof got_pl[0] ? rec->len : sizeof got_pl[0]);
        ngot++;
    }
}

static void drain_mine(void)
{
    static uint8_t scratch[1024 * 64];
    ngot = 0;
    if (pa_tls.ring)
        pa_ring_drain(pa_tls.ring, sink, NULL, scratch, 0);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static const pa_hc_event_t *find_ev(const char *name)
{
    const pa_hc_event_t *ev;
    size_t n = pa_hc_events(&ev);
    for (size_t i = 0; i < n; i++)
        if (strcmp(ev[i].name, name) == 0)
            return &ev[i];
    return NULL;
}

static int has_cpu_pmu(void) { return access("/sys/bus/event_source/devices/cpu", F_OK) == 0; }

static int teardown(void **state)
{
    (void)state;
    pa_hc_reset();
    pa_hc_set_syscalls(NULL, NULL);
    return 0;
}

/* ---- encoding ---- */

static void test_encoding(void **state)
{
    (void)state;
    assert_int_equal(pa_hc_init("cycles, instructions ,task-clock,context-switches,context-switches:u,page-faults", 1), 6);
    const pa_hc_event_t *c = find_ev("cycles");
    assert_non_null(c);
    assert_int_equal(c->attr.type, PERF_TYPE_HARDWARE);
    assert_int_equal(c->attr.config, PERF_COUNT_HW_CPU_CYCLES);
    assert_int_equal(c->attr.exclude_kernel, 1); /* user level unless asked */
    assert_int_equal(c->attr.exclude_user, 0);
    assert_int_equal(c->attr.size, sizeof c->attr);
    assert_true(c->attr.read_format & PERF_FORMAT_GROUP);
    assert_non_null(strstr(c->encoding, "PERF_COUNT_HW_CPU_CYCLES"));
    const pa_hc_event_t *i = find_ev("instructions");
    assert_int_equal(i->attr.config, PERF_COUNT_HW_INSTRUCTIONS);
    const pa_hc_event_t *t = find_ev("task-clock");
    assert_int_equal(t->attr.type, PERF_TYPE_SOFTWARE);
    assert_int_equal(t->attr.config, PERF_COUNT_SW_TASK_CLOCK);
    const pa_hc_event_t *cs = find_ev("context-switches");
    assert_int_equal(cs->attr.config, PERF_COUNT_SW_CONTEXT_SWITCHES);
    assert_int_equal(cs->attr.exclude_kernel, 0); /* counts 0 at user level: every level by default */
    assert_non_null(strstr(cs->encoding, ":k=1"));
    const pa_hc_event_t *csu = find_ev("context-switches:u");
    assert_int_equal(csu->attr.exclude_kernel, 1); /* the name's own modifier wins */
    assert_int_equal(find_ev("page-faults")->attr.config, PERF_COUNT_SW_PAGE_FAULTS);
    assert_int_equal(pa_hc_active, 1);
}

static void test_bad_names(void **state)
{
    (void)state;
    assert_int_equal(pa_hc_init("bogus,task-clock,,  ,nope::x", 1), 1);
    assert_int_equal(find_ev("bogus")->status, PA_HC_UNKNOWN);
    assert_non_null(strstr(find_ev("bogus")->detail, "not found"));
    assert_int_equal(find_ev("nope::x")->status, PA_HC_UNKNOWN);
    assert_int_equal(find_ev("task-clock")->status, 0);
    assert_int_equal(pa_hc_init("bogus", 1), 0);
    assert_int_equal(pa_hc_active, 0);
    assert_int_equal(pa_hc_init("", 1), 0);
    assert_int_equal(pa_hc_init(" , ,", 1), 0);
    assert_int_equal(pa_hc_init(NULL, 0), 0);
    assert_int_equal(pa_hc_active, 0);
    /* duplicates: the same encoding twice is counted once */
    assert_int_equal(pa_hc_init("task-clock,perf::TASK-CLOCK", 1), 1);
    assert_int_equal(find_ev("perf::TASK-CLOCK")->status, PA_HC_DUPLICATE);
}

static void test_too_many(void **state)
{
    (void)state;
    char spec[4096] = "";
    const char *sw[] = {"task-clock", "page-faults", "context-switches", "cpu-migrations", "cpu-clock",
                        "major-faults", "minor-faults"};
    for (int i = 0; i < 100; i++) /* 7 distinct, the rest duplicates or beyond the kept rows */
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%s%s", i ? "," : "", sw[i % 7]);
    int n = pa_hc_init(spec, 1);
    assert_true(n >= 1 && n <= PA_HC_MAX_EVENTS);
    const pa_hc_event_t *ev;
    size_t nev = pa_hc_events(&ev);
    assert_true(nev <= PA_HC_MAX_EVENTS * 4);
    size_t dup = 0, many = 0;
    for (size_t i = 0; i < nev; i++) {
        dup += ev[i].status == PA_HC_DUPLICATE;
        many += ev[i].status == PA_HC_TOO_MANY;
    }
    assert_int_equal(n, 7);
    assert_true(dup + many + 7 == nev);
    assert_int_equal(many, 0); /* all beyond the 7 are duplicates */
    /* 20 distinct events: the first 16 tried, 4 too many */
    spec[0] = '\0';
    for (int i = 0; i < 20; i++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%sr%x", i ? "," : "", 0x100 + i);
    n = pa_hc_init(spec, 1);
    assert_int_equal(n, PA_HC_MAX_EVENTS);
    nev = pa_hc_events(&ev);
    many = 0;
    for (size_t i = 0; i < nev; i++)
        many += ev[i].status == PA_HC_TOO_MANY;
    assert_int_equal(many, 4);
    /* 100 distinct-looking names past the limit */
    spec[0] = '\0';
    for (int i = 0; i < 100; i++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%scycles:u=%d", i ? "," : "", 1);
    n = pa_hc_init(spec, 1);
    assert_int_equal(n, 1);
}

/* ---- the real machine: no CPU PMU here, so hardware events fail with ENOENT ---- */

static void test_real_enoent_substitutes(void **state)
{
    (void)state;
    if (has_cpu_pmu())
        skip(); /* this machine has a CPU PMU: the no-PMU path cannot be observed */
    int fds0 = count_fds();
    assert_int_equal(pa_hc_init("cycles,instructions", 1), 2);
    pa_hc_sample(1234);
    assert_int_equal(find_ev("cycles")->status, PA_HC_NO_PMU);
    assert_int_equal(find_ev("cycles")->err, ENOENT);
    assert_int_equal(find_ev("instructions")->status, PA_HC_NO_PMU);
    assert_int_equal(pa_hc_ncounted(), 3);
    assert_int_equal(find_ev("task-clock")->status, PA_HC_SUBSTITUTE);
    assert_int_equal(find_ev("context-switches")->status, PA_HC_SUBSTITUTE);
    assert_int_equal(find_ev("page-faults")->status, PA_HC_SUBSTITUTE);
    assert_int_equal(find_ev("task-clock")->column, 0);
    assert_int_equal(count_fds(), fds0 + 4); /* leader + 3 */
    pa_hc_sample(5678);
    drain_mine();
    /* outcomes (5 events), the thread's open, two samples */
    size_t ev = 0, thr = 0, smp = 0;
    uint64_t tc[2] = {0, 0};
    for (size_t i = 0; i < ngot; i++) {
        ev += got[i].kind == PA_REC_HC_EVENT;
        thr += got[i].kind == PA_REC_HC_THREAD && got[i].u.raw[0] == PA_HC_THR_OPENED;
        if (got[i].kind == PA_REC_HC_SAMPLE) {
            assert_int_equal(PA_RF_HC_N(got[i].flags), 3);
            assert_int_equal(got[i].t0, smp ? 5678 : 1234);
            pa_hc_snap_t s;
            assert_int_equal(pa_hc_sample_unpack(&got[i], NULL, &s), 0);
            tc[smp] = s.v[0];
            smp++;
        }
    }
    assert_int_equal(ev, 5);
    assert_int_equal(thr, 1);
    assert_int_equal(smp, 2);
    assert_true(tc[1] > tc[0]); /* task-clock advanced between the two reads */
    pa_hc_reset();
    assert_int_equal(count_fds(), fds0);
}

static void test_asked_that_works_only(void **state)
{
    (void)state;
    if (has_cpu_pmu())
        skip();
    assert_int_equal(pa_hc_init("cycles,page-faults", 1), 2);
    pa_hc_sample(1);
    assert_int_equal(find_ev("cycles")->status, PA_HC_NO_PMU);
    assert_int_equal(find_ev("page-faults")->status, PA_HC_OPENED);
    assert_int_equal(pa_hc_ncounted(), 1); /* no substitutes when something asked works */
    assert_null(find_ev("task-clock"));
}

/* ---- fake syscalls ---- */

static int fake_calls, fake_emfile_after = -1, fake_refuse_kernel, fake_refuse_all;

static long fake_open(struct perf_event_attr *attr, pid_t tid, int cpu, int group_fd, unsigned long flags)
{
    (void)tid; (void)cpu; (void)group_fd; (void)flags;
    fake_calls++;
    if (fake_emfile_after >= 0 && fake_calls > fake_emfile_after) {
        errno = EMFILE;
        return -1;
    }
    if (fake_refuse_all && attr->config != PERF_COUNT_SW_DUMMY) {
        errno = EACCES;
        return -1;
    }
    if (fake_refuse_kernel && !attr->exclude_kernel) {
        errno = EACCES;
        return -1;
    }
    return dup(2); /* a real fd, so closing is checked */
}

static void test_fake_eacces_user_only(void **state)
{
    (void)state;
    pa_hc_set_syscalls(fake_open, NULL);
    fake_calls = 0; fake_emfile_after = -1; fake_refuse_kernel = 1; fake_refuse_all = 0;
    int fds0 = count_fds();
    assert_int_equal(pa_hc_init("context-switches,task-clock:k", 1), 2);
    pa_hc_sample(1);
    const pa_hc_event_t *cs = find_ev("context-switches");
    assert_int_equal(cs->status, PA_HC_USER_ONLY);
    assert_int_equal(cs->err, EACCES);
    assert_int_equal(cs->attr.exclude_kernel, 1);
    assert_int_equal(find_ev("task-clock:k")->status, PA_HC_USER_ONLY);
    assert_int_equal(find_ev("task-clock:k")->attr.exclude_user, 0); /* ":k" alone excluded user level */
    assert_int_equal(pa_hc_ncounted(), 2);
    assert_int_equal(fake_calls, 1 + 2 * 2); /* leader, then each event twice */
    pa_hc_reset();
    assert_int_equal(count_fds(), fds0);
    /* refused even at user level */
    fake_calls = 0; fake_refuse_all = 1;
    assert_int_equal(pa_hc_init("task-clock", 1), 1);
    pa_hc_sample(1);
    assert_int_equal(find_ev("task-clock")->status, PA_HC_REFUSED);
    assert_int_equal(pa_hc_ncounted(), 0);
    assert_int_equal(pa_hc_active, 0);
    assert_int_equal(count_fds(), fds0); /* the leader was closed again */
}

static void *thread_sample(void *arg)
{
    (void)arg;
    pa_hc_sample(42);
    pa_hc_sample(43);
    return NULL;
}

static pthread_barrier_t opened, release;

/* Opens its group, then keeps it open until released. */
static void *thread_hold_open(void *arg)
{
    (void)arg;
    pa_hc_sample(42);
    pthread_barrier_wait(&opened);
    pthread_barrier_wait(&release);
    return NULL;
}

static void test_fake_emfile_stops(void **state)
{
    (void)state;
    pa_hc_set_syscalls(fake_open, NULL);
    fake_calls = 0; fake_emfile_after = -1; fake_refuse_kernel = 0; fake_refuse_all = 0;
    int fds0 = count_fds();
    assert_int_equal(pa_hc_init("task-clock,page-faults", 1), 2);
    pa_hc_sample(1); /* probe: 3 opens */
    assert_int_equal(fake_calls, 3);
    fake_emfile_after = 4; /* the next thread gets its leader, then EMFILE */
    pthread_t th;
    pthread_create(&th, NULL, thread_sample, NULL);
    pthread_join(th, NULL);
    assert_int_equal(fake_calls, 5);
    pthread_create(&th, NULL, thread_sample, NULL); /* stopped opening: no syscall at all */
    pthread_join(th, NULL);
    assert_int_equal(fake_calls, 5);
    assert_int_equal(count_fds(), fds0 + 3); /* only the first thread's group is open */
    pa_hc_reset();
    assert_int_equal(count_fds(), fds0);
}

/* ---- the fd budget (half of RLIMIT_NOFILE) with threads opening their groups at once ---- */

static _Atomic int slow_opened;
static pthread_barrier_t hold;

/* A slow open (2 ms): every thread is between its budget decision and its opens together. */
static long slow_open(struct perf_event_attr *attr, pid_t tid, int cpu, int group_fd, unsigned long flags)
{
    (void)attr; (void)tid; (void)cpu; (void)group_fd; (void)flags;
    usleep(2000);
    int fd = dup(2);
    if (fd >= 0)
        atomic_fetch_add(&slow_opened, 1);
    return fd;
}

static void *thread_hold(void *arg)
{
    (void)arg;
    pa_hc_sample(7);
    pthread_barrier_wait(&hold); /* every group of the round is open at once: none closed yet */
    return NULL;
}

static void test_budget_threads_at_once(void **state)
{
    (void)state;
    struct rlimit rl0, rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl0), 0);
    int fds0 = count_fds();
    rl = rl0;
    rl.rlim_cur = 40; /* budget 20 fds: 6 groups of a leader and 2 events */
    assert_true(fds0 + 20 < 40);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    pa_hc_set_syscalls(slow_open, NULL);
    atomic_store(&slow_opened, 0);
    assert_int_equal(pa_hc_init("task-clock,page-faults", 1), 2);
    pa_hc_sample(1); /* the probe: 3 fds */
    enum { N = 24 };
    pthread_t th[N];
    pthread_barrier_init(&hold, NULL, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_hold, NULL), 0);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&hold);
    /* exactly the budget's 6 groups were opened, however the threads interleaved; a check
     * before the opens (not a reservation) let every thread through: 54 opens, then EMFILE */
    assert_int_equal(atomic_load(&slow_opened), 6 * 3);
    assert_int_equal(count_fds(), fds0 + 3); /* the others closed at their threads' exit */
    pa_hc_reset();
    assert_int_equal(count_fds(), fds0);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl0), 0);
}

/* The probe of more events than the budget holds: it takes each fd from the budget before
 * opening it, so it stops at the budget (it had opened every event, counted after the fact). */
static void test_probe_within_budget(void **state)
{
    (void)state;
    /* 15 distinct events (the fake open takes hardware ones too) */
    static const char *const names[] = {"task-clock", "context-switches", "page-faults", "cpu-migrations",
        "perf::CPU-CLOCK", "cycles", "instructions", "cache-misses", "branch-misses", "perf::CACHE-REFERENCES",
        "perf::BRANCHES", "perf::BUS-CYCLES", "perf::REF-CYCLES", "perf::STALLED-CYCLES-FRONTEND",
        "perf::STALLED-CYCLES-BACKEND"};
    struct rlimit rl0, rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl0), 0);
    int fds0 = count_fds();
    /* budget B: the leader and B - 1 of B + 2 events; the B + 3 opens of an unbounded probe
     * would all succeed below RLIMIT_NOFILE = 2 B */
    long budget = fds0 + 4;
    assert_true(budget + 2 <= (long)(sizeof names / sizeof names[0]));
    char asked[512] = "";
    for (long i = 0; i < budget + 2; i++)
        snprintf(asked + strlen(asked), sizeof asked - strlen(asked), "%s%s", i ? "," : "", names[i]);
    rl = rl0;
    rl.rlim_cur = (rlim_t)(2 * budget);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    pa_hc_set_syscalls(fake_open, NULL);
    fake_calls = 0; fake_emfile_after = -1; fake_refuse_kernel = 0; fake_refuse_all = 0;
    assert_int_equal(pa_hc_init(asked, 1), budget + 2);
    pa_hc_sample(1);
    assert_int_equal(fake_calls, budget);
    assert_int_equal(pa_hc_ncounted(), budget - 1);
    assert_int_equal(pa_hc_fds_in_use(), budget);
    assert_int_equal(count_fds(), fds0 + budget);
    char want[64];
    snprintf(want, sizeof want, "half of RLIMIT_NOFILE (%ld)", budget);
    for (long i = budget - 1; i < budget + 2; i++) {
        const pa_hc_event_t *e = find_ev(names[i]);
        assert_int_equal(e->status, PA_HC_NO_FDS);
        if (i == budget - 1) /* the one refused by the budget; the others not tried after it */
            assert_non_null(strstr(e->detail, want));
    }
    assert_int_equal(find_ev(names[budget - 2])->status, PA_HC_OPENED);
    pa_hc_reset();
    assert_int_equal(pa_hc_fds_in_use(), 0);
    assert_int_equal(count_fds(), fds0);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl0), 0);
}

/* A fork child closes the parent's group fds and counts none open: it had kept the parent's
 * count (3 here, and a thousand with many threads), so its budget was short by them. */
static void test_fork_child_count(void **state)
{
    (void)state;
    pa_hc_set_syscalls(fake_open, NULL);
    fake_calls = 0; fake_emfile_after = -1; fake_refuse_kernel = 0; fake_refuse_all = 0;
    int fds0 = count_fds();
    assert_int_equal(pa_hc_init("task-clock,page-faults", 1), 2);
    pa_hc_sample(1);
    assert_int_equal(pa_hc_fds_in_use(), 3);
    pthread_t th;
    pthread_create(&th, NULL, thread_hold_open, NULL); /* a second thread's group: 6 open */
    pthread_barrier_wait(&opened);
    assert_int_equal(pa_hc_fds_in_use(), 6);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pa_hc_after_fork_child();
        int bad = (pa_hc_fds_in_use() != 0) | (count_fds() != fds0) << 1 | (pa_hc_active != 0) << 2;
        _exit(bad);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(pa_hc_fds_in_use(), 6); /* the parent's own count is untouched */
    pthread_barrier_wait(&release);
    pthread_join(th, NULL);
    assert_int_equal(pa_hc_fds_in_use(), 3);
    pa_hc_reset();
    assert_int_equal(pa_hc_fds_in_use(), 0);
    assert_int_equal(count_fds(), fds0);
}

/* ---- group read with a fake reader ---- */

static uint64_t fake_buf[3 + 1 + PA_HC_MAX_EVENTS];
static size_t fake_len;

static ssize_t fake_read(int fd, void *buf, size_t n)
{
    (void)fd;
    size_t k = fake_len < n ? fake_len : n;
    memcpy(buf, fake_buf, k);
    return (ssize_t)k;
}

static void set_group(uint64_t en, uint64_t run, uint64_t a, uint64_t b)
{
    uint64_t v[] = {3, en, run, 0, a, b};
    memcpy(fake_buf, v, sizeof v);
    fake_len = sizeof v;
}

static void test_group_read_scaling(void **state)
{
    (void)state;
    pa_hc_set_syscalls(NULL, fake_read);
    pa_hc_snap_t s0, s1;
    set_group(1000, 1000, 100, 7);
    assert_int_equal(pa_hc_read_group(3, 2, &s0), 0);
    assert_int_equal(s0.n, 2);
    assert_int_equal(s0.enabled, 1000);
    assert_int_equal(s0.v[0], 100);
    assert_int_equal(s0.v[1], 7);
    /* multiplexed: the group ran 500 of the 1000 ns in between -> deltas doubled */
    set_group(2000, 1500, 300, 57);
    assert_int_equal(pa_hc_read_group(3, 2, &s1), 0);
    int nc = 0;
    assert_int_equal(pa_hc_scaled_delta(&s0, &s1, 0, &nc), 400);
    assert_int_equal(pa_hc_scaled_delta(&s0, &s1, 1, &nc), 100);
    assert_int_equal(nc, 0);
    /* not multiplexed: raw delta */
    set_group(3000, 2500, 310, 58);
    pa_hc_snap_t s2;
    assert_int_equal(pa_hc_read_group(3, 2, &s2), 0);
    assert_int_equal(pa_hc_scaled_delta(&s1, &s2, 0, &nc), 10);
    /* did not run at all in between: 0 and flagged */
    set_group(4000, 2500, 310, 58);
    pa_hc_snap_t s3;
    assert_int_equal(pa_hc_read_group(3, 2, &s3), 0);
    assert_int_equal(pa_hc_scaled_delta(&s2, &s3, 0, &nc), 0);
    assert_int_equal(nc, 1);
    /* a third of the time: x3, rounded */
    set_group(7000, 3500, 311, 58);
    pa_hc_snap_t s4;
    assert_int_equal(pa_hc_read_group(3, 2, &s4), 0);
    assert_int_equal(pa_hc_scaled_delta(&s3, &s4, 0, &nc), 3);
    /* wrong shapes */
    set_group(1, 1, 1, 1);
    fake_buf[0] = 2; /* count does not match */
    assert_int_equal(pa_hc_read_group(3, 2, &s0), -1);
    set_group(1, 1, 1, 1);
    fake_len = 24; /* short read */
    assert_int_equal(pa_hc_read_group(3, 2, &s0), -1);
    assert_int_equal(pa_hc_read_group(3, PA_HC_MAX_EVENTS + 1, &s0), -1);
    /* pack/unpack through a record, with payload beyond three values */
    pa_hc_snap_t big = {.enabled = 9, .running = 8, .n = 5, .v = {1, 2, 3, 4, 5}}, back;
    pa_record_t rec = {.kind = PA_REC_HC_SAMPLE};
    uint64_t pl[PA_HC_MAX_EVENTS];
    uint32_t len = pa_hc_sample_pack(&rec, pl, &big);
    assert_int_equal(len, 16);
    rec.len = len;
    assert_int_equal(pa_hc_sample_unpack(&rec, (const uint8_t *)pl, &back), 0);
    assert_int_equal(back.n, 5);
    assert_int_equal(back.v[4], 5);
    assert_int_equal(back.running, 8);
    rec.len = 8;
    assert_int_equal(pa_hc_sample_unpack(&rec, (const uint8_t *)pl, &back), -1);
}

/* ---- one read() of the whole group per sample (PERF_FORMAT_GROUP), on the real kernel ---- */

static int counted_reads;

static ssize_t counting_read(int fd, void *buf, size_t n)
{
    counted_reads++;
    return syscall(SYS_read, fd, buf, n);
}

static void test_one_read_per_sample(void **state)
{
    (void)state;
    pa_hc_set_syscalls(NULL, counting_read);
    assert_int_equal(pa_hc_init("task-clock,page-faults,context-switches", 1), 3);
    drain_mine(); /* records of the tests before */
    counted_reads = 0;
    pa_hc_sample(1); /* opens the group (no read), then reads it once */
    assert_int_equal(pa_hc_ncounted(), 3);
    assert_int_equal(counted_reads, 1);
    for (int i = 0; i < 10; i++)
        pa_hc_sample(2 + (uint64_t)i);
    assert_int_equal(counted_reads, 11); /* three events, one system call each time */
    drain_mine();
    size_t smp = 0;
    for (size_t i = 0; i < ngot; i++)
        if (got[i].kind == PA_REC_HC_SAMPLE) {
            pa_hc_snap_t s;
            assert_int_equal(pa_hc_sample_unpack(&got[i], NULL, &s), 0);
            assert_int_equal(s.n, 3);
            assert_true(s.running <= s.enabled);
            smp++;
        }
    assert_int_equal(smp, 11);
}

/* ---- fds closed at thread exit: 64 threads ---- */

static void *thread_ranges(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++)
        pa_hc_sample((uint64_t)i + 1);
    return NULL;
}

static void test_threads_close_at_exit(void **state)
{
    (void)state;
    int fds0 = count_fds();
    assert_int_equal(pa_hc_init("task-clock,page-faults", 1), 2);
    pthread_t th[64];
    for (int i = 0; i < 64; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_ranges, NULL), 0);
    for (int i = 0; i < 64; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(pa_hc_ncounted(), 2);
    assert_int_equal(count_fds(), fds0);
    /* a thread that never records a range opens nothing */
    pa_hc_reset();
    assert_int_equal(count_fds(), fds0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_encoding, teardown),
        cmocka_unit_test_teardown(test_bad_names, teardown),
        cmocka_unit_test_teardown(test_too_many, teardown),
        cmocka_unit_test_teardown(test_real_enoent_substitutes, teardown),
        cmocka_unit_test_teardown(test_asked_that_works_only, teardown),
        cmocka_unit_test_teardown(test_fake_eacces_user_only, teardown),
        cmocka_unit_test_teardown(test_fake_emfile_stops, teardown),
        cmocka_unit_test_teardown(test_budget_threads_at_once, teardown),
        cmocka_unit_test_teardown(test_probe_within_budget, teardown),
        cmocka_unit_test_teardown(test_fork_child_count, teardown),
        cmocka_unit_test_teardown(test_group_read_scaling, teardown),
        cmocka_unit_test_teardown(test_one_read_per_sample, teardown),
        cmocka_unit_test_teardown(test_threads_close_at_exit, teardown),
    };
    pthread_barrier_init(&opened, NULL, 2);
    pthread_barrier_init(&release, NULL, 2);
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (int i = 0; i < nrings && i < 256; i++)
        pa_ring_destroy(rings[i]);
    return rc;
}
