/* collective.c - the all-reduce rendezvous of allreduce_sum_f32: ranks of one job meet in a
 * keyed shared-memory segment (across devices of a process and across processes), bounded waits. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pa_sd_internal.h"

/*
 * A communicator is (job, key). The job is SIMDEV_COMM_JOB, set by the application (as a NCCL
 * application broadcasts its unique id; samples/allreduce_ranks takes its mpirun launch's id) or
 * the user; without it the communicator is the process's own: private memory, only devices of
 * this process meet (a single-process program run N times under mpirun stays N programs).
 * A job segment is the POSIX shared memory object /simdev-ar-<uid>-<job>-<key>.
 *
 * Each operation: every rank stores its element count, barrier, n = the smallest count; then per
 * chunk of COLL_CHUNK floats: copy in, barrier, each rank sums all ranks' chunks (rank order, float
 * accumulator, so every rank gets the same bits), barrier. Waiting is a futex on the barrier's
 * generation word, in slices of 20 ms (shutdown, timeout); the robust mutex is held only for a
 * few stores, so a rank killed at any point never blocks the others past their timeout.
 */
#define COLL_MAGIC 0x53444152u         /* "SDAR" once the creator initialised the header */
#define COLL_MAX_RANKS 64u
#define COLL_MAX_PROCS 64u
#define COLL_CHUNK 16384u              /* floats per rank and round: 64 KiB */
#define COLL_SEGS 64
#define COLL_SLICE_NS 20000000ull

typedef struct coll_hdr {
    _Atomic uint32_t ready;            /* COLL_MAGIC when usable */
    uint32_t nranks;
    pthread_mutex_t mu;                /* robust, process-shared; guards everything below */
    uint32_t unlinked;                 /* 1: the name is gone; an opener that sees it retries */
    uint32_t nprocs;
    int32_t procs[COLL_MAX_PROCS];     /* attached processes (pids), for the stale check */
    uint32_t count;                    /* ranks arrived at the current barrier */
    uint64_t mask;                     /* which ranks */
    _Atomic uint32_t gen;              /* completed barriers: the futex word */
    uint32_t rank_n[COLL_MAX_RANKS];   /* element count of each rank's current operation */
    uint64_t released_ns;              /* CLOCK_MONOTONIC when the last barrier completed */
} coll_hdr;

#define COLL_HDR_BYTES ((sizeof(coll_hdr) + 4095u) & ~(size_t)4095u)

typedef struct coll_seg {
    int used, shared;
    uint64_t key;
    uint32_t nranks;
    coll_hdr *h;
    size_t bytes;
    char name[128];
} coll_seg;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static coll_seg g_seg[COLL_SEGS];

static float *coll_data(coll_hdr *h) { return (float *)((char *)h + COLL_HDR_BYTES); }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The job this process belongs to, "" when none (private communicators). */
static const char *coll_job(char *buf, size_t sz)
{
    const char *v;
    if ((v = getenv("SIMDEV_COMM_JOB")) && *v)
        snprintf(buf, sz, "%s", v);
    else
        buf[0] = '\0';
    for (char *p = buf; *p; p++) /* a shm name allows no '/' after the first */
        if (*p == '/' || (unsigned char)*p < 0x20)
            *p = '_';
    return buf;
}

/* Locks the header's robust mutex; a dead owner's lock is taken over (its state is only counters
 * of a barrier that will time out anyway). 0, or -1 when the mutex is unusable. */
static int hdr_lock(coll_hdr *h)
{
    int rc = pthread_mutex_lock(&h->mu);
    if (rc == EOWNERDEAD) {
        pthread_mutex_consistent(&h->mu);
        rc = 0;
    }
    return rc == 0 ? 0 : -1;
}

static void hdr_init(coll_hdr *h, uint32_t nranks)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&h->mu, &a);
    pthread_mutexattr_destroy(&a);
    h->nranks = nranks;
    atomic_store_explicit(&h->ready, COLL_MAGIC, memory_order_release);
}

/* Drops attached processes that no longer exist; with none left a half-done barrier of a dead
 * job is cleared, so a stale segment (its processes were killed) works again. Under the lock. */
static void hdr_purge_dead(coll_hdr *h)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < h->nprocs && i < COLL_MAX_PROCS; i++)
        if (kill(h->procs[i], 0) == 0 || errno != ESRCH)
            h->procs[k++] = h->procs[i];
    h->nprocs = k;
    if (k == 0) {
        h->count = 0;
        h->mask = 0;
    }
}

/* Opens or creates the job segment `name` for nranks ranks; returns the mapped header or NULL
 * with *why set. The opener of an unlinked segment (its last process left meanwhile) retries. */
static coll_hdr *seg_open_shared(const char *name, uint32_t nranks, size_t bytes, const char **why)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        int created = 1;
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST) {
            created = 0;
            fd = shm_open(name, O_RDWR, 0600);
        }
        if (fd < 0) {
            if (errno == ENOENT)
                continue;
            *why = "shm_open failed";
            return NULL;
        }
        if (created && (errno = posix_fallocate(fd, 0, (off_t)bytes)) != 0) {
            *why = "no room in /dev/shm for the segment";
            close(fd);
            shm_unlink(name);
            return NULL;
        }
        /* an opener waits (bounded) until the creator sized it */
        struct stat st;
        for (int i = 0; !created && i < 1000 && fstat(fd, &st) == 0 && (size_t)st.st_size < bytes; i++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        if (!created && (fstat(fd, &st) != 0 || (size_t)st.st_size < bytes)) {
            close(fd);
            *why = "the segment has another size (nranks differ between the ranks?)";
            return NULL;
        }
        coll_hdr *h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (h == MAP_FAILED) {
            *why = "mmap failed";
            return NULL;
        }
        if (created)
            hdr_init(h, nranks);
        for (int i = 0; i < 1000 && atomic_load_explicit(&h->ready, memory_order_acquire) != COLL_MAGIC; i++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        if (atomic_load_explicit(&h->ready, memory_order_acquire) != COLL_MAGIC || hdr_lock(h) != 0) {
            munmap(h, bytes);
            *why = "the segment was never initialised";
            return NULL;
        }
        if (h->unlinked) {
            pthread_mutex_unlock(&h->mu);
            munmap(h, bytes);
            continue;
        }
        hdr_purge_dead(h);
        if (h->nranks != nranks) {
            pthread_mutex_unlock(&h->mu);
            munmap(h, bytes);
            *why = "nranks differs from the ranks that opened the communicator";
            return NULL;
        }
        if (h->nprocs < COLL_MAX_PROCS)
            h->procs[h->nprocs++] = (int32_t)getpid();
        pthread_mutex_unlock(&h->mu);
        return h;
    }
    *why = "the segment kept disappearing";
    return NULL;
}

/* The segment of (job, key) for this process, opened on first use. NULL after one message. */
static coll_seg *seg_get(uint64_t key, uint32_t nranks)
{
    char job[96];
    coll_job(job, sizeof job);
    pthread_mutex_lock(&g_mu);
    coll_seg *s = NULL, *free_seg = NULL;
    for (int i = 0; i < COLL_SEGS; i++) {
        if (g_seg[i].used && g_seg[i].key == key) {
            s = &g_seg[i];
            break;
        }
        if (!g_seg[i].used && !free_seg)
            free_seg = &g_seg[i];
    }
    const char *why = NULL;
    if (!s && free_seg) {
        size_t bytes = COLL_HDR_BYTES + (size_t)nranks * COLL_CHUNK * sizeof(float);
        coll_hdr *h;
        if (job[0]) {
            snprintf(free_seg->name, sizeof free_seg->name, "/simdev-ar-%u-%s-%llu", (unsigned)getuid(), job,
                     (unsigned long long)key);
            h = seg_open_shared(free_seg->name, nranks, bytes, &why);
        } else {
            h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (h == MAP_FAILED) {
                h = NULL;
                why = "out of memory";
            } else {
                hdr_init(h, nranks);
            }
        }
        if (h) {
            s = free_seg;
            s->used = 1;
            s->shared = job[0] != '\0';
            s->key = key;
            s->nranks = nranks;
            s->h = h;
            s->bytes = bytes;
        }
    } else if (!s) {
        why = "too many communicators in this process (64)";
    }
    pthread_mutex_unlock(&g_mu);
    if (!s)
        fprintf(stderr, "simdev: allreduce_sum_f32 key %llu%s%s: %s; kernel skipped\n", (unsigned long long)key,
                job[0] ? " job " : "", job, why ? why : "no segment");
    else if (s->nranks != nranks) {
        fprintf(stderr, "simdev: allreduce_sum_f32 key %llu: nranks %u differs from the %u of the first "
                        "launch with this key; kernel skipped\n", (unsigned long long)key, nranks, s->nranks);
        return NULL;
    }
    return s;
}

static void futex_wait(_Atomic uint32_t *w, uint32_t val, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Waits until all ranks arrived. 0; -1 on timeout or shutdown (this rank withdrew); -2 when the
 * rank is already waiting there (two launches with one rank). h->released_ns is then the time the
 * last rank arrived (written before the wake-up; rewritten only once every rank arrived at the
 * next barrier, so this rank reads its own barrier's however late it wakes). */
static int coll_barrier(coll_hdr *h, uint32_t rank, uint64_t deadline)
{
    uint64_t bit = 1ull << rank;
    if (hdr_lock(h) != 0)
        return -1;
    if (h->mask & bit) {
        pthread_mutex_unlock(&h->mu);
        return -2;
    }
    uint32_t g = atomic_load(&h->gen);
    h->mask |= bit;
    if (++h->count == h->nranks) {
        h->count = 0;
        h->mask = 0;
        h->released_ns = now_ns();
        atomic_fetch_add(&h->gen, 1);
        pthread_mutex_unlock(&h->mu);
        futex_wake(&h->gen);
        return 0;
    }
    pthread_mutex_unlock(&h->mu);
    for (;;) {
        if (atomic_load(&h->gen) != g)
            return 0;
        uint64_t t = now_ns();
        if (t >= deadline || pa_sd_shutting_down()) {
            if (hdr_lock(h) != 0)
                return -1;
            int done = atomic_load(&h->gen) != g;
            if (!done) {
                h->count--;
                h->mask &= ~bit;
            }
            pthread_mutex_unlock(&h->mu);
            return done ? 0 : -1;
        }
        uint64_t left = deadline - t;
        futex_wait(&h->gen, g, left < COLL_SLICE_NS ? left : COLL_SLICE_NS);
    }
}

/* One message for a rank that gives up (none at shutdown); 0: the operation did not complete. */
static uint64_t coll_fail(const coll_seg *s, uint32_t rank, int rc, uint64_t timeout_ns)
{
    if (pa_sd_shutting_down())
        return 0;
    if (rc == -2)
        fprintf(stderr, "simdev: allreduce_sum_f32 key %llu: rank %u launched twice at once; kernel skipped\n",
                (unsigned long long)s->key, rank);
    else
        fprintf(stderr, "simdev: allreduce_sum_f32 key %llu: rank %u waited %llu ms for the other of %u ranks"
                        "%s%s; giving up (its buffer is undefined)\n", (unsigned long long)s->key, rank,
                (unsigned long long)(timeout_ns / 1000000ull), s->nranks, s->shared ? " in shared segment " : "",
                s->shared ? s->name : "");
    return 0;
}

uint64_t pa_sd_coll_allreduce_f32(float *buf, uint32_t n, uint32_t rank, uint32_t nranks, uint64_t key)
{
    if (nranks == 0 || nranks > COLL_MAX_RANKS || rank >= nranks) {
        fprintf(stderr, "simdev: allreduce_sum_f32: rank %u of %u is invalid (accepted: rank < nranks <= %u); "
                        "kernel skipped\n", rank, nranks, COLL_MAX_RANKS);
        return 0;
    }
    coll_seg *s = seg_get(key, nranks);
    if (!s)
        return 0;
    coll_hdr *h = s->h;
    float *data = coll_data(h);
    uint64_t timeout = pa_sd_config_get()->allreduce_timeout_ns;
    uint64_t deadline = now_ns() + timeout;
    h->rank_n[rank] = n;
    int rc = coll_barrier(h, rank, deadline);
    if (rc)
        return coll_fail(s, rank, rc, timeout);
    uint32_t nmin = n;
    for (uint32_t r = 0; r < nranks; r++)
        if (h->rank_n[r] < nmin)
            nmin = h->rank_n[r];
    /* at least one round, so no rank stores its next count before all read this one */
    for (uint32_t off = 0; off == 0 || off < nmin; off += COLL_CHUNK) {
        uint32_t m = nmin - off < COLL_CHUNK ? nmin - off : COLL_CHUNK;
        memcpy(data + (size_t)rank * COLL_CHUNK, buf + off, (size_t)m * sizeof(float));
        if ((rc = coll_barrier(h, rank, deadline)) != 0)
            return coll_fail(s, rank, rc, timeout);
        for (uint32_t i = 0; i < m; i++) {
            float sum = 0.0f;
            for (uint32_t r = 0; r < nranks; r++)
                sum += data[(size_t)r * COLL_CHUNK + i];
            buf[off + i] = sum;
        }
        if ((rc = coll_barrier(h, rank, deadline)) != 0)
            return coll_fail(s, rank, rc, timeout);
    }
    return h->released_ns; /* the last barrier's: every rank returns the same */
}

void pa_sd_coll_wake_all(const struct timespec *dl)
{
    if (pa_sd_lock_until(&g_mu, dl) != 0)
        return;
    for (int i = 0; i < COLL_SEGS; i++)
        if (g_seg[i].used)
            futex_wake(&g_seg[i].h->gen);
    pthread_mutex_unlock(&g_mu);
}

void pa_sd_coll_detach_all(const struct timespec *dl)
{
    if (pa_sd_lock_until(&g_mu, dl) != 0)
        return;
    for (int i = 0; i < COLL_SEGS; i++) {
        coll_seg *s = &g_seg[i];
        if (!s->used || !s->shared)
            continue;
        int rc = pa_sd_lock_until(&s->h->mu, dl);
        if (rc == EOWNERDEAD)
            rc = pthread_mutex_consistent(&s->h->mu);
        if (rc != 0)
            continue;
        coll_hdr *h = s->h;
        for (uint32_t k = 0; k < h->nprocs; k++)
            if (h->procs[k] == (int32_t)getpid()) {
                h->procs[k] = h->procs[--h->nprocs];
                break;
            }
        hdr_purge_dead(h);
        if (h->nprocs == 0 && !h->unlinked) {
            h->unlinked = 1;
            shm_unlink(s->name);
        }
        pthread_mutex_unlock(&h->mu);
        s->shared = 0; /* detached once */
    }
    pthread_mutex_unlock(&g_mu);
}

void pa_sd_coll_atfork(int phase)
{
    if (phase == PA_SD_FORK_PREPARE) {
        pthread_mutex_lock(&g_mu);
        return;
    }
    if (phase == PA_SD_FORK_CHILD) /* the mappings stay (harmless); the child is no rank */
        memset(g_seg, 0, sizeof g_seg);
    pthread_mutex_unlock(&g_mu);
}
