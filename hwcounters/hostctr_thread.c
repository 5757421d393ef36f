/* hostctr_thread.c - per-thread counter groups: lazy open (first one probes the machine), read, close at exit. */
#define _GNU_SOURCE /* strerrorname_np, syscall */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostctr_internal.h"
#include "../collector/collector.h"
#include "../common/pa_log.h"

int pa_hc_active;

enum { HC_NEW = 0, HC_OPENING, HC_OPEN, HC_FAILED, HC_CLOSED };

typedef struct hc_tls {
    int state;
    int leader;
    int nfd;
    int fd[PA_HC_MAX_EVENTS];
} hc_tls_t;

static __thread hc_tls_t hc_tls __attribute__((tls_model("initial-exec")));

static _Atomic int probe_state;   /* 0 not yet, 1 a thread is probing, 2 done */
static _Atomic int stop_opening;  /* EMFILE seen: no more groups */
static _Atomic int emfile_warned;
/* The counters never take more than half of RLIMIT_NOFILE (at session start): the application
 * (and the agent's spool and DB) keep the other half. Threads beyond it are not counted. A
 * thread takes its whole group's share before opening it (budget_take), so threads opening at
 * the same time cannot together go over (a check before the opens let a 64-thread pool reach
 * RLIMIT_NOFILE under load: EMFILE, and the agent could not open its DB). */
static _Atomic long fds_in_use;
static long fd_budget = 512;
static _Atomic int budget_warned;
static pthread_key_t exit_key;
static int exit_key_ok;

/* Every group fd open in the process, one bit each (fds below 65536): a fork child closes them. */
#define PA_HC_FDMAP_BITS 65536
static _Atomic uint64_t fdmap[PA_HC_FDMAP_BITS / 64];

static long real_open(struct perf_event_attr *attr, pid_t tid, int cpu, int group_fd, unsigned long flags)
{
    return syscall(SYS_perf_event_open, attr, tid, cpu, group_fd, flags);
}

/* syscall(), not read(): the OS runtime source interposes read() */
static ssize_t real_read(int fd, void *buf, size_t n) { return syscall(SYS_read, fd, buf, n); }

static pa_hc_open_fn sys_open = real_open;
static pa_hc_read_fn sys_read = real_read;

void pa_hc_set_syscalls(pa_hc_open_fn open_fn, pa_hc_read_fn read_fn)
{
    sys_open = open_fn ? open_fn : real_open;
    sys_read = read_fn ? read_fn : real_read;
}

static void fd_track(int fd, int on)
{
    if (fd < 0 || fd >= PA_HC_FDMAP_BITS)
        return;
    if (on)
        atomic_fetch_or(&fdmap[fd / 64], 1ull << (fd % 64));
    else
        atomic_fetch_and(&fdmap[fd / 64], ~(1ull << (fd % 64)));
}

/*! budget_take() : takes n fds of the counters' budget: 0, or -1 (nothing taken) when that
 *  would go over it. Every fd open is in fds_in_use, taken before it is opened: a whole group
 *  at once (group_open), one fd at a time in the probe (which decides what a group is, so it
 *  cannot know the group's size first); close_fd() gives it back. */
static int budget_take(long n)
{
    long cur = atomic_load(&fds_in_use);
    do {
        if (cur + n > fd_budget)
            return -1;
    } while (!atomic_compare_exchange_weak(&fds_in_use, &cur, cur + n));
    return 0;
}

/* Opens one event of the calling thread; the caller accounts for the fd in fds_in_use. */
static int open_event(struct perf_event_attr *attr, int group_fd, int *err)
{
    long fd = sys_open(attr, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    fd_track((int)fd, 1);
    return (int)fd;
}

/* 1 once the probe stopped at the budget (not at the kernel's EMFILE): its message says so. */
static int probe_over_budget;

/* open_event() for the probe: its fd taken from the budget first (a probe of more events than
 * half of RLIMIT_NOFILE had opened them all, beyond the budget); -1 with *err = EMFILE when the
 * budget is used up. */
static int probe_open(struct perf_event_attr *attr, int group_fd, int *err)
{
    if (budget_take(1) != 0) {
        *err = EMFILE;
        probe_over_budget = 1;
        return -1;
    }
    int fd = open_event(attr, group_fd, err);
    if (fd < 0)
        atomic_fetch_sub(&fds_in_use, 1);
    return fd;
}

static void close_fd(int fd)
{
    if (fd < 0)
        return;
    fd_track(fd, 0);
    atomic_fetch_sub(&fds_in_use, 1);
    close(fd);
}

static void group_close(hc_tls_t *h)
{
    for (int i = h->nfd - 1; i >= 0; i--)
        close_fd(h->fd[i]);
    close_fd(h->leader);
    h->nfd = 0;
    h->leader = -1;
}

/* The group leader: a dummy software event that counts nothing, so every asked event is a
 * member (one that fails leaves the others alone), and a timer-based event never leads
 * (with task-clock as leader the kernel missed the first context switch after the open). */
static void leader_attr(struct perf_event_attr *a)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_DUMMY;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->read_format = PA_HC_READ_FORMAT;
}

int pa_hc_read_group(int fd, uint32_t n, pa_hc_snap_t *s)
{
    uint64_t buf[3 + 1 + PA_HC_MAX_EVENTS];
    if (n > PA_HC_MAX_EVENTS)
        return -1;
    size_t want = (3 + 1 + (size_t)n) * 8;
    ssize_t got = sys_read(fd, buf, want);
    if (got != (ssize_t)want || buf[0] != n + 1)
        return -1;
    s->n = n;
    s->enabled = buf[1];
    s->running = buf[2];
    memcpy(s->v, &buf[4], (size_t)n * 8); /* buf[3]: the dummy leader */
    return 0;
}

static int status_of(int err)
{
    switch (err) {
    case ENOENT: case ENODEV: case EOPNOTSUPP:
        return PA_HC_NO_PMU;
    case EACCES: case EPERM:
        return PA_HC_REFUSED;
    case EMFILE: case ENFILE:
        return PA_HC_NO_FDS;
    default:
        return PA_HC_FAILED;
    }
}

static int read_paranoid(void)
{
    int v = -100;
    int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char b[16] = {0};
        if (read(fd, b, sizeof b - 1) > 0)
            v = atoi(b);
        close(fd);
    }
    return v;
}

static void msg_add(char *buf, size_t sz, const char *name)
{
    size_t n = strlen(buf), len = strlen(name);
    if (n + len + 8 >= sz) {
        if (n + 5 < sz && (n < 4 || strcmp(buf + n - 3, "...") != 0))
            memcpy(buf + n, ", ...", 6);
        return;
    }
    if (n)
        memcpy(buf + n, ", ", 2), n += 2;
    memcpy(buf + n, name, len + 1);
}

static const char *ev_label(const pa_hc_event_t *e) { return e->name; }

/* Opens one member of the probing thread's group; on EACCES/EPERM at kernel level retries at
 * user level. Sets status, err, detail, column. Returns the fd or -1. */
static int probe_member(hc_tls_t *h, pa_hc_event_t *e, uint32_t ok_status)
{
    int err = 0;
    int fd = probe_open(&e->attr, h->leader, &err);
    if (fd < 0 && (err == EACCES || err == EPERM) && !e->attr.exclude_kernel) {
        e->attr.exclude_kernel = 1; /* user level only (":k" alone had excluded user level) */
        e->attr.exclude_user = 0;
        e->attr.exclude_hv = 1;
        int err2 = 0;
        fd = probe_open(&e->attr, h->leader, &err2);
        if (fd >= 0) {
            ok_status = PA_HC_USER_ONLY;
            e->err = err;
            int kside = e->attr.type == PERF_TYPE_SOFTWARE && (e->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
                                                               e->attr.config == PERF_COUNT_SW_CPU_MIGRATIONS);
            snprintf(e->detail, sizeof e->detail, "kernel level refused (%s): counted at user level only%s",
                     strerrorname_np(err) ? strerrorname_np(err) : "EACCES",
                     kside ? " (where this event always counts 0)" : "");
        } else {
            err = err2;
        }
    }
    if (fd < 0) {
        e->status = (uint32_t)status_of(err);
        e->err = err;
        if (probe_over_budget)
            snprintf(e->detail, sizeof e->detail, "the counters' file descriptors reached half of RLIMIT_NOFILE"
                     " (%ld)", fd_budget);
        else
            snprintf(e->detail, sizeof e->detail, "perf_event_open: %s (%s)",
                     strerrorname_np(err) ? strerrorname_np(err) : "?", strerror(err));
        return -1;
    }
    e->status = ok_status;
    e->column = pa_hc_plan.ncounted;
    pa_hc_plan.col_ev[pa_hc_plan.ncounted++] = (int)(e - pa_hc_plan.ev);
    h->fd[h->nfd++] = fd;
    return fd;
}

static const char *const subst_names[PA_HC_NSUBST] = {"task-clock", "context-switches", "page-faults"};

/* No asked event works and some failed for lack of a PMU: the software events in their place. */
static void probe_substitutes(hc_tls_t *h)
{
    for (int i = 0; i < PA_HC_NSUBST && pa_hc_plan.ncounted < PA_HC_MAX_EVENTS; i++) {
        pa_hc_event_t *e = &pa_hc_plan.ev[pa_hc_plan.nev];
        memset(e, 0, sizeof *e);
        e->column = PA_HC_NO_COLUMN;
        snprintf(e->name, sizeof e->name, "%s", subst_names[i]);
        if (pa_hc_encode(subst_names[i], e) != 0)
            continue;
        int dup = 0;
        for (size_t k = 0; k < pa_hc_plan.nev; k++)
            dup |= pa_hc_plan.ev[k].encoding[0] && pa_hc_same_event(&pa_hc_plan.ev[k].attr, &e->attr);
        if (dup)
            continue;
        pa_hc_plan.nev++;
        if (probe_member(h, e, PA_HC_SUBSTITUTE) < 0 && e->status == PA_HC_NO_FDS)
            break;
    }
}

/* One message per kind of outcome, after the probe. */
static void probe_messages(void)
{
    char nopmu[256] = "", refused[256] = "", useronly[256] = "", failed[256] = "", subst[128] = "", ok[256] = "";
    int nofds = 0;
    for (size_t i = 0; i < pa_hc_plan.nev; i++) {
        const pa_hc_event_t *e = &pa_hc_plan.ev[i];
        switch (e->status) {
        case PA_HC_NO_PMU: msg_add(nopmu, sizeof nopmu, ev_label(e)); break;
        case PA_HC_REFUSED: msg_add(refused, sizeof refused, ev_label(e)); break;
        case PA_HC_USER_ONLY: msg_add(useronly, sizeof useronly, ev_label(e)); msg_add(ok, sizeof ok, ev_label(e)); break;
        case PA_HC_NO_FDS: nofds++; break;
        case PA_HC_FAILED: msg_add(failed, sizeof failed, ev_label(e)); msg_add(failed, sizeof failed, e->detail); break;
        case PA_HC_SUBSTITUTE: msg_add(subst, sizeof subst, ev_label(e)); break;
        case PA_HC_OPENED: msg_add(ok, sizeof ok, ev_label(e)); break;
        default: break;
        }
    }
    if (nopmu[0]) {
        pa_warn("hostctr", "host counters: no CPU PMU for %s (perf_event_open: ENOENT; a VM without a virtual"
                " PMU?); %s%s%s", nopmu, subst[0] ? "counting the software events " : (ok[0] ? "counting only " : "nothing is counted"),
                subst[0] ? subst : ok, subst[0] ? " in their place" : "");
    }
    if (refused[0] || useronly[0])
        pa_warn("hostctr", "host counters: the kernel refused %s%s%s%s%s; /proc/sys/kernel/perf_event_paranoid"
                " is %d (2: unprivileged users count their own threads at user level only; 3 or more: not at"
                " all; root or CAP_PERFMON count everything)", refused[0] ? refused : "",
                refused[0] ? " (EACCES/EPERM, not counted)" : "", refused[0] && useronly[0] ? " and " : "",
                useronly[0] ? useronly : "", useronly[0] ? " at kernel level (counted at user level only)" : "",
                read_paranoid());
    if (failed[0])
        pa_warn("hostctr", "host counters: cannot open %s", failed);
    if (nofds && probe_over_budget)
        pa_warn("hostctr", "host counters: their file descriptors reached half of RLIMIT_NOFILE (%ld of %ld)"
                " while opening the counters: %d events not counted (raise the limit with ulimit -n, or count"
                " fewer events)", fd_budget, fd_budget * 2, nofds);
    else if (nofds)
        pa_warn("hostctr", "host counters: out of file descriptors (EMFILE) while opening the counters: %d"
                " events not counted", nofds);
}

/* Emits the outcome of every event (the DB's HOST_COUNTERS rows): payload
 * "name\0asked\0encoding\0detail". */
static void emit_outcomes(void)
{
    for (size_t i = 0; i < pa_hc_plan.nev; i++) {
        const pa_hc_event_t *e = &pa_hc_plan.ev[i];
        char pl[sizeof e->name + sizeof e->asked + sizeof e->encoding + sizeof e->detail];
        const char *parts[4] = {e->name, e->asked, e->encoding, e->detail};
        size_t caps[4] = {sizeof e->name, sizeof e->asked, sizeof e->encoding, sizeof e->detail}, n = 0;
        for (int k = 0; k < 4; k++) {
            size_t l = strnlen(parts[k], caps[k] - 1);
            memcpy(pl + n, parts[k], l);
            n += l;
            pl[n++] = '\0';
        }
        pa_record_t rec = {.kind = PA_REC_HC_EVENT, .t0 = pa_clock_ns()};
        rec.u.raw[0] = e->status | (uint64_t)e->column << 32;
        rec.u.raw[1] = (uint64_t)(uint32_t)e->err;
        rec.u.raw[2] = (uint64_t)e->attr.type << 32 | (uint64_t)e->attr.exclude_kernel << 1 | e->attr.exclude_user;
        rec.u.raw[3] = e->attr.config;
        pa_emit(&rec, pl, (uint32_t)n);
    }
}

static void emit_thread(uint32_t status, int err)
{
    pa_record_t rec = {.kind = PA_REC_HC_THREAD, .t0 = pa_clock_ns()};
    rec.u.raw[0] = status;
    rec.u.raw[1] = (uint64_t)(uint32_t)err;
    pa_emit(&rec, NULL, 0);
}

/* First group of the process: tries every event, decides the fallbacks, tells the user. */
static void probe(hc_tls_t *h)
{
    int err = 0;
    struct perf_event_attr la;
    leader_attr(&la);
    h->leader = probe_open(&la, -1, &err);
    if (h->leader < 0) {
        int st = status_of(err);
        for (size_t i = 0; i < pa_hc_plan.nev; i++) {
            pa_hc_event_t *e = &pa_hc_plan.ev[i];
            if (e->status)
                continue;
            e->status = (uint32_t)(st == PA_HC_NO_PMU ? PA_HC_FAILED : st);
            e->err = err;
            snprintf(e->detail, sizeof e->detail, "the group leader (a dummy software event) cannot be opened:"
                     " %s (%s)", strerrorname_np(err) ? strerrorname_np(err) : "?", strerror(err));
        }
        if (st == PA_HC_REFUSED)
            pa_warn("hostctr", "host counters: perf_event_open refused (%s); /proc/sys/kernel/perf_event_paranoid"
                    " is %d (3 or more forbids perf events to unprivileged users): no host counters",
                    strerrorname_np(err), read_paranoid());
        else
            pa_warn("hostctr", "host counters: perf_event_open failed (%s: %s): no host counters",
                    strerrorname_np(err) ? strerrorname_np(err) : "?", strerror(err));
        return;
    }
    int nopmu = 0;
    for (size_t i = 0; i < pa_hc_plan.nev; i++) {
        pa_hc_event_t *e = &pa_hc_plan.ev[i];
        if (e->status)
            continue;
        if (probe_member(h, e, PA_HC_OPENED) < 0) {
            nopmu |= e->status == PA_HC_NO_PMU;
            if (e->status == PA_HC_NO_FDS) {
                for (size_t k = i + 1; k < pa_hc_plan.nev; k++)
                    if (!pa_hc_plan.ev[k].status) {
                        pa_hc_plan.ev[k].status = PA_HC_NO_FDS;
                        pa_hc_plan.ev[k].err = EMFILE;
                        snprintf(pa_hc_plan.ev[k].detail, sizeof pa_hc_plan.ev[k].detail, "not tried after EMFILE");
                    }
                break;
            }
        }
    }
    if (pa_hc_plan.ncounted == 0 && nopmu)
        probe_substitutes(h);
    probe_messages();
    if (pa_hc_plan.ncounted == 0)
        group_close(h);
}

/* Opens the thread's group with exactly the probed set. 0, or -1 with *err. */
static int group_open(hc_tls_t *h, int *err)
{
    long need = (long)pa_hc_plan.ncounted + 1;
    if (budget_take(need) != 0) {
        *err = EMFILE;
        return -2; /* over the budget: this thread only */
    }
    struct perf_event_attr la;
    leader_attr(&la);
    h->leader = open_event(&la, -1, err);
    if (h->leader < 0) {
        atomic_fetch_sub(&fds_in_use, need);
        return -1;
    }
    for (uint32_t c = 0; c < pa_hc_plan.ncounted; c++) {
        int fd = open_event(&pa_hc_plan.ev[pa_hc_plan.col_ev[c]].attr, h->leader, err);
        if (fd < 0) {
            atomic_fetch_sub(&fds_in_use, need - 1 - h->nfd); /* the fds not opened */
            group_close(h);                                   /* gives back the others */
            return -1;
        }
        h->fd[h->nfd++] = fd;
    }
    return 0;
}

/* Waits (bounded, yielding) for another thread's probe to finish. 0 when done. */
static int probe_wait(void)
{
    uint64_t until = pa_clock_ns() + 2000000000ull;
    while (atomic_load(&probe_state) == 1) {
        if (pa_clock_ns() > until)
            return -1;
        sched_yield();
    }
    return 0;
}

/* The calling thread's first range. Returns 0 when its group is open. */
static int thread_open(hc_tls_t *h)
{
    int saved = errno;
    h->state = HC_OPENING; /* a signal handler recording now gets no counters (no re-entry) */
    h->leader = -1;
    h->nfd = 0;
    int expected = 0, prober = atomic_compare_exchange_strong(&probe_state, &expected, 1);
    if (!prober && probe_wait() != 0) {
        h->state = HC_NEW; /* try again at the next range */
        errno = saved;
        return -1;
    }
    pa_guard_enter(); /* open(), setspecific's calloc: not recorded */
    uint32_t st = PA_HC_THR_OPENED;
    int err = 0, rc;
    if (prober) {
        probe(h);
        atomic_store(&probe_state, 2);
        if (pa_hc_plan.ncounted == 0)
            pa_hc_active = 0;
        st = h->leader >= 0 ? PA_HC_THR_OPENED : PA_HC_THR_FAILED;
    } else if (pa_hc_plan.ncounted == 0 || atomic_load(&stop_opening)) {
        st = 0; /* nothing to count, or EMFILE was seen: no syscall */
    } else if ((rc = group_open(h, &err)) != 0) {
        st = (err == EMFILE || err == ENFILE) ? PA_HC_THR_NO_FDS : PA_HC_THR_FAILED;
        if (rc == -2) {
            if (!atomic_exchange(&budget_warned, 1))
                pa_warn("hostctr", "host counters: their file descriptors reached half of RLIMIT_NOFILE (%ld of"
                        " %ld); threads starting a range while that many groups are open are not counted (raise"
                        " the limit with ulimit -n, or count fewer events)", fd_budget, fd_budget * 2);
        } else if (st == PA_HC_THR_NO_FDS) {
            atomic_store(&stop_opening, 1);
            if (!atomic_exchange(&emfile_warned, 1))
                pa_warn("hostctr", "host counters: out of file descriptors (%s) opening the group of thread"
                        " %u: no more groups are opened; threads without counters are counted in the summary",
                        strerrorname_np(err), (unsigned)syscall(SYS_gettid));
        }
    }
    if (h->leader >= 0 && exit_key_ok)
        pthread_setspecific(exit_key, (void *)1);
    pa_guard_leave();
    h->state = h->leader >= 0 ? HC_OPEN : HC_FAILED;
    if (prober)
        emit_outcomes();
    if (st)
        emit_thread(st, err);
    errno = saved;
    return h->state == HC_OPEN ? 0 : -1;
}

static void emit_sample(hc_tls_t *h, uint64_t t0, uint32_t flags)
{
    pa_hc_snap_t s;
    if (pa_hc_read_group(h->leader, pa_hc_plan.ncounted, &s) != 0)
        return;
    pa_record_t rec = {.kind = PA_REC_HC_SAMPLE, .t0 = t0, .flags = flags};
    uint64_t pl[PA_HC_MAX_EVENTS];
    uint32_t len = pa_hc_sample_pack(&rec, pl, &s);
    pa_emit(&rec, pl, len);
}

void pa_hc_sample(uint64_t t0)
{
    hc_tls_t *h = &hc_tls;
    if (PA_UNLIKELY(h->state != HC_OPEN) && (h->state != HC_NEW || thread_open(h) != 0))
        return;
    int saved = errno;
    emit_sample(h, t0, 0);
    errno = saved;
}

/* Thread exit: a last read while the thread's ring is still there (`ring_ok`), then close. */
static void thread_close(int ring_ok)
{
    hc_tls_t *h = &hc_tls;
    if (h->state != HC_OPEN)
        return;
    int saved = errno;
    if (ring_ok && pa_tls.ring && (atomic_load_explicit(&pa_sources, memory_order_relaxed) & PA_SRC_HGTX))
        emit_sample(h, pa_clock_ns(), PA_RF_HC_EXIT);
    group_close(h);
    h->state = HC_CLOSED;
    errno = saved;
}

/* The collector's thread_detach (before the ring is retired): read at the exit itself. */
void pa_hc_thread_detach(void) { thread_close(1); }

/* Our own TLS destructor: closes the group of a thread whose detach did not run (no ring, or
 * the collector's destructor ran first); reads only if the ring is still there. */
static void thread_exit_cb(void *arg)
{
    (void)arg;
    thread_close(1);
}

static void key_create(void) { exit_key_ok = pthread_key_create(&exit_key, thread_exit_cb) == 0; }

void pa_hc_thread_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, key_create);
}

void pa_hc_exit_thread(void)
{
    /* the exit thread (main, usually) gets no TLS destructor: its total is read now */
    if (hc_tls.state == HC_OPEN && pa_tls.ring) {
        int saved = errno;
        emit_sample(&hc_tls, pa_clock_ns(), PA_RF_HC_EXIT);
        hc_tls.state = HC_CLOSED; /* read once (pa_hc_finish may run on this thread too) */
        errno = saved;
    }
}

void pa_hc_finish(void)
{
    pa_hc_exit_thread(); /* when the session ends on the exiting thread itself */
    if (pa_hc_plan.nev == 0 || atomic_load(&probe_state) == 2)
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&probe_state, &expected, 2))
        return;
    for (size_t i = 0; i < pa_hc_plan.nev; i++) {
        pa_hc_event_t *e = &pa_hc_plan.ev[i];
        if (e->status == 0) {
            e->status = PA_HC_NOT_TRIED;
            snprintf(e->detail, sizeof e->detail, "no thread recorded an HGTX range: nothing was opened");
        }
    }
    emit_outcomes();
}

void pa_hc_after_fork_child(void)
{
    for (size_t w = 0; w < PA_HC_FDMAP_BITS / 64; w++) {
        uint64_t bits = atomic_exchange(&fdmap[w], 0);
        while (bits) {
            int b = __builtin_ctzll(bits);
            bits &= bits - 1;
            close((int)(w * 64 + (size_t)b));
        }
    }
    /* none of them is open any more: the count starts again from 0 (it said the parent's groups
     * were still open, so the budget the child has was smaller by them) */
    atomic_store(&fds_in_use, 0);
    hc_tls.state = HC_CLOSED;
    hc_tls.nfd = 0;
    hc_tls.leader = -1;
    pa_hc_active = 0;
}

long pa_hc_fds_in_use(void) { return atomic_load(&fds_in_use); }

void pa_hc_reset(void)
{
    if (hc_tls.state == HC_OPEN)
        group_close(&hc_tls);
    memset(&hc_tls, 0, sizeof hc_tls);
    pa_hc_plan_clear();
    atomic_store(&probe_state, 0);
    atomic_store(&stop_opening, 0);
    atomic_store(&emfile_warned, 0);
    atomic_store(&budget_warned, 0);
    atomic_store(&fds_in_use, 0);
    probe_over_budget = 0;
    struct rlimit rl;
    fd_budget = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)(rl.rlim_cur / 2) : 512;
    if (fd_budget < 4)
        fd_budget = 4;
    pa_hc_active = 0;
    pa_hc_thread_init();
}
