/* pa_spool.c - streaming zstd spool: compactly encoded records and payloads, one zstd frame per ~1 MiB block. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "pa_spool.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "pa_log.h"
#include "pa_thread.h"

/* Provided by the collector when linked into the agent: the thread is the agent's own, its
 * calls are not recorded. Weak: the spool also links without it (CLI, tests, bench). */
void pa_thread_mark_agent(void) __attribute__((weak));

/* Records are staged in a 1 MiB input buffer so zstd sees large blocks (its speed depends on
 * it) and the per-record cost is a 64-byte memcpy. Each full buffer becomes one complete zstd
 * frame, appended by path: the agent holds no file descriptor between flushes, so an
 * application that closes or dup2()s over "its" fds (closefrom(3)) can never receive spool
 * bytes, and a spool cut short by a crash stays readable up to its last whole frame. */
#define SPOOL_IN_CAP (1u << 20)
#define SPOOL_MAX_LEN (1u << 30) /* reader sanity bound on one payload */

/*
 * Record encoding inside the zstd stream (before compression). Spool records are 64-byte
 * slots that are mostly zero or repeat the previous record of their kind (same thread, same
 * name, ids counting up), and zstd's time grows with its input, so each record is shrunk first:
 *
 *   u16 kind | u16 mask | [len] | [t0] | [t1] | the changed 32-bit halves of the rest | payload
 *
 * all integers little-endian varints (7 bits per byte, low first) except kind and mask.
 * mask bit 0: len != 0 (nslots follows from len); bit 1: t0 != 0, stored as the zigzag
 * delta from the previous record's t0 (records arrive roughly in time order); bit 2:
 * t1 != 0, stored as the zigzag of t1 - t0; bits 3..12: the 32-bit halves (low, high) of
 * header words 1 (tid, flags) and 4..7 (u.raw[0..3]) that differ from the same half of the
 * previous record of the same kind (its context, kind & 0xff; all zero at the start of the
 * stream), each stored as the zigzag of the 32-bit difference. Payload bytes follow exactly
 * (no slot padding). A reader therefore decodes the stream from its start, in order.
 */
#define SPOOL_ENC_MAX (2 + 2 + 5 + 10 + 10 + 10 * 5) /* largest encoded header */
#define SPOOL_NHALF 10
#define SPOOL_NCTX 256 /* contexts: spool kinds are 0x10xx with distinct low bytes */

typedef uint32_t spool_ctx_t[SPOOL_NCTX][SPOOL_NHALF];

/* Byte offsets in pa_record_t of the ten 32-bit halves of mask bits 3..12. */
static const uint8_t half_off[SPOOL_NHALF] = { 8, 12, 32, 36, 40, 44, 48, 52, 56, 60 };
_Static_assert(offsetof(pa_record_t, tid) == 8 && offsetof(pa_record_t, flags) == 12 &&
               offsetof(pa_record_t, t0) == 16 && offsetof(pa_record_t, t1) == 24 &&
               offsetof(pa_record_t, u) == 32, "spool encoding assumes the pa_record_t layout");

static inline uint8_t *enc_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)-(int64_t)(d >> 63);
}

static inline uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
}

/* A 32-bit varint with the common 1- and 2-byte cases unrolled (ids, tids, small counts). */
static inline uint8_t *enc_u32(uint8_t *p, uint32_t v)
{
    if (v < 0x80) {
        *p = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    return enc_varint(p, v);
}

static inline uint32_t zigzag32(uint32_t d)
{
    return (d << 1) ^ (uint32_t)((int32_t)d >> 31);
}

static inline uint32_t unzigzag32(uint32_t z)
{
    return (z >> 1) ^ (uint32_t)-(int32_t)(z & 1);
}

/* A 64-bit varint with the 1- to 3-byte cases (time deltas, durations) unrolled. */
static inline uint8_t *enc_u64(uint8_t *p, uint64_t v)
{
    if (v < 0x4000) {
        if (v < 0x80) {
            *p = (uint8_t)v;
            return p + 1;
        }
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    if (v < 0x200000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7 | 0x80);
        p[2] = (uint8_t)(v >> 14);
        return p + 3;
    }
    return enc_varint(p, v);
}

/* Bit i set: half i of rec differs from c[i]. */
static inline uint32_t halves_changed(const pa_record_t *rec, const uint32_t *c)
{
    const uint8_t *b = (const uint8_t *)rec;
#ifdef __SSE2__
    /* tid, flags (one 8-byte load; its two zero upper lanes are masked off) and u */
    __m128i h0 = _mm_loadl_epi64((const __m128i *)(b + 8)), k0 = _mm_loadl_epi64((const __m128i *)c);
    __m128i u0 = _mm_loadu_si128((const __m128i *)(b + 32)), u1 = _mm_loadu_si128((const __m128i *)(b + 48));
    __m128i c0 = _mm_loadu_si128((const __m128i *)(c + 2)), c1 = _mm_loadu_si128((const __m128i *)(c + 6));
    uint32_t same = ((uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(h0, k0))) & 3u) |
                    (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(u0, c0))) << 2 |
                    (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(u1, c1))) << 6;
    return ~same & 0x3ffu;
#else
    uint32_t diff = 0;
    for (int i = 0; i < SPOOL_NHALF; i++) {
        uint32_t x;
        memcpy(&x, b + half_off[i], 4);
        diff |= (uint32_t)(x != c[i]) << i;
    }
    return diff;
#endif
}

/* Encodes rec's header (payload length `len`) at p (room: SPOOL_ENC_MAX); returns the end.
 * Only the halves that changed against the kind's context are visited (and the context
 * takes their new values). Inline: it is the spool thread's per-record work (a call's
 * register saves were a tenth of it). */
static inline __attribute__((always_inline)) uint8_t *enc_header(uint8_t *p, const pa_record_t *rec, uint32_t len,
                                                                 uint64_t *prev_t0, spool_ctx_t ctx)
{
    uint32_t *c = ctx[rec->kind & (SPOOL_NCTX - 1)];
    uint32_t diff = halves_changed(rec, c);
    uint64_t t0 = rec->t0, t1 = rec->t1;
    uint8_t *s = p;
    uint32_t mask = diff << 3;
    p += 4;
    if (len) {
        mask |= 1;
        p = enc_u32(p, len);
    }
    if (t0) {
        mask |= 2;
        p = enc_u64(p, zigzag(t0 - *prev_t0));
        *prev_t0 = t0;
    }
    if (t1) {
        mask |= 4;
        p = enc_u64(p, zigzag(t1 - t0));
    }
    const uint8_t *b = (const uint8_t *)rec;
    while (diff) {
        int i = __builtin_ctz(diff);
        diff &= diff - 1;
        uint32_t x;
        memcpy(&x, b + half_off[i], 4);
        p = enc_u32(p, zigzag32(x - c[i]));
        c[i] = x;
    }
    uint32_t km = (uint32_t)rec->kind | mask << 16; /* u16 kind, u16 mask, little-endian */
    s[0] = (uint8_t)km;
    s[1] = (uint8_t)(km >> 8);
    s[2] = (uint8_t)(km >> 16);
    s[3] = (uint8_t)(km >> 24);
    return p;
}

/* Reads a varint of at most `bits` bits from [*p, end). 0 ok, 1 when it runs past end,
 * -1 when it is longer than `bits` allow (corrupt). `whole`: [*p, end) is known to hold the
 * longest varint, so the end is not looked at (a record's header read with SPOOL_ENC_MAX bytes
 * available: the checks were a fifth of the reader's decoding). The 1- and 2-byte cases
 * (ids, tids, small deltas) come first. */
static inline __attribute__((always_inline)) int dec_varint(const uint8_t **p, const uint8_t *end, unsigned bits,
                                                            uint64_t *v, int whole)
{
    const uint8_t *s = *p;
    if (whole || end - s >= 2) {
        if (s[0] < 0x80) {
            *v = s[0];
            *p = s + 1;
            return 0;
        }
        if (s[1] < 0x80) {
            *v = (uint64_t)(s[0] & 0x7f) | (uint64_t)s[1] << 7;
            *p = s + 2;
            return 0;
        }
    }
    uint64_t x = 0;
    for (unsigned shift = 0; shift < bits; shift += 7) {
        if (!whole && *p == end)
            return 1;
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* Decodes one header from [p, end) into *rec (nslots and len set) against the contexts `ctx`
 * (not updated: the caller does, once the whole record is there). Returns the bytes used,
 * 0 when [p, end) holds only part of it, -1 when it is malformed. `whole`: end - p >=
 * SPOOL_ENC_MAX (the largest header), so it never returns 0. Every byte of *rec is written
 * (no padding in pa_record_t: the _Static_assert above), each field once. */
static inline __attribute__((always_inline)) long dec_header_in(const uint8_t *p, const uint8_t *end, pa_record_t *rec,
                                                                uint64_t *prev_t0, const spool_ctx_t ctx, int whole)
{
    const uint8_t *s = p;
    if (!whole && end - p < 4)
        return 0;
    uint32_t mask = (uint32_t)p[2] | (uint32_t)p[3] << 8;
    if (mask >> (3 + SPOOL_NHALF))
        return -1;
    uint16_t kind = (uint16_t)(p[0] | p[1] << 8);
    p += 4;
    uint64_t v = 0, t0 = 0, t1 = 0;
    uint32_t len = 0;
    int rc;
    if (mask & 1) {
        if ((rc = dec_varint(&p, end, 35, &v, whole)) != 0)
            return rc > 0 ? 0 : -1;
        if (v == 0 || v > SPOOL_MAX_LEN)
            return -1;
        len = (uint32_t)v;
    }
    if (mask & 2) {
        if ((rc = dec_varint(&p, end, 70, &v, whole)) != 0)
            return rc > 0 ? 0 : -1;
        t0 = *prev_t0 += unzigzag(v);
    }
    if (mask & 4) {
        if ((rc = dec_varint(&p, end, 70, &v, whole)) != 0)
            return rc > 0 ? 0 : -1;
        t1 = t0 + unzigzag(v);
    }
    uint8_t *raw = (uint8_t *)rec;
    const uint32_t *c = ctx[kind & (SPOOL_NCTX - 1)];
    rec->kind = kind;
    rec->nslots = (uint16_t)pa_record_slots(len);
    rec->len = len;
    memcpy(raw + 8, c, 8);       /* tid, flags */
    rec->t0 = t0;
    rec->t1 = t1;
    memcpy(raw + 32, c + 2, 32); /* u */
    for (uint32_t m = mask >> 3; m; m &= m - 1) { /* the changed halves only */
        int i = __builtin_ctz(m);
        if ((rc = dec_varint(&p, end, 35, &v, whole)) != 0)
            return rc > 0 ? 0 : -1;
        uint32_t x = c[i] + unzigzag32((uint32_t)v);
        memcpy(raw + half_off[i], &x, 4);
    }
    return p - s;
}

static long dec_header(const uint8_t *p, const uint8_t *end, pa_record_t *rec, uint64_t *prev_t0,
                       const spool_ctx_t ctx)
{
    return end - p >= SPOOL_ENC_MAX ? dec_header_in(p, end, rec, prev_t0, ctx, 1)
                                    : dec_header_in(p, end, rec, prev_t0, ctx, 0);
}

/*
 * The hand-off pipe (pa_spool_start_worker): a single-producer single-consumer ring of 64-byte
 * slots between the caller (the aggregator) and the spool's own thread, which encodes,
 * compresses and appends. An entry is the record's header slot followed by its payload in
 * the next slots (padded; it may wrap at the array end), exactly as pa_spool_append() got it,
 * so the producer's cost is a copy. Markers (kinds >= SPOOL_PIPE_FLUSH) ask the worker to
 * write its staged bytes as a frame, or to end. Positions are free-running byte counts.
 */
#define SPOOL_PIPE_FLUSH 0xfffeu
#define SPOOL_PIPE_CLOSE 0xffffu
#define SPOOL_WAKE_BYTES (1u << 20)     /* the producer looks at the worker's sleep at most this
                                           often (an eighth of a smaller pipe): fewer wake-ups,
                                           each a context switch on a loaded machine */
#define SPOOL_IDLE_NS 100000000ull      /* worker sleep when the pipe is empty (wakes are explicit) */
#define SPOOL_FULL_NS 1000000ull        /* producer wait slice when the pipe is full */
#define SPOOL_STALL_NS 5000000000ull    /* a worker making no progress this long is given up */
#define SPOOL_JOIN_NS 5000000000ull     /* bound on the close's wait for the worker */

struct spool_pipe {
    _Alignas(64) _Atomic uint64_t tail; /* producer: bytes committed (multiple of 64) */
    _Alignas(64) _Atomic uint64_t head; /* worker: bytes consumed */
    _Alignas(64) _Atomic uint32_t idle; /* futex: the worker sleeps (pipe empty) */
    _Atomic uint32_t full;              /* futex: the producer waits for room */
    pa_record_t *slots;
    uint64_t cap;                       /* bytes, a power of two, multiple of 64 */
    uint64_t wake_step;                 /* bytes between two looks at `idle` (producer) */
    pthread_t th;
};

/* The producer's fields (prod, written per record by the aggregator) and the worker's (in_len,
 * prev_t0, ..., written per record by the spool thread) lie on different cache lines: sharing
 * one made each record move that line between the two cores. */
struct pa_spool_writer {
    pa_spool_prod_t prod;   /* first: pa_spool_slot() casts the writer to it */
    _Alignas(64) char *path;
    ZSTD_CCtx *cc;
    uint8_t *in;
    size_t in_len;
    uint8_t *out;
    size_t out_cap;
    uint64_t comp;          /* compressed bytes written (raw: prod.raw) */
    uint64_t recs_staged;   /* whole records staged since the last frame */
    uint64_t recs_whole;    /* records in the frames written: what a reader of the file gets */
    uint64_t prev_t0;       /* t0 delta base (enc_header) */
    spool_ctx_t ctx;        /* each kind's last halves (enc_header) */
    _Atomic int failed;     /* a write or compression failed: appends are refused */
    _Atomic uint64_t *published; /* file bytes of whole frames, for a reader following the file */
    struct spool_pipe *pipe;   /* non-NULL: a worker thread encodes and writes (pa_spool_start_worker) */
    uint64_t pipe_waits, pipe_wait_ns; /* producer: times it found the pipe full, time waited */
    uint64_t close_by_ns;   /* CLOCK_MONOTONIC bound on the close's wait for the worker; 0: SPOOL_JOIN_NS */
};

struct pa_spool_reader {
    int fd;
    ZSTD_DCtx *dc;
    uint8_t *in;
    size_t in_size, in_pos, in_cap;
    uint8_t *buf;           /* decompressed bytes [pos, len) not yet returned */
    size_t pos, len, cap;
    size_t last_ret;        /* last ZSTD_decompressStream result: 0 = at a frame boundary */
    int eof;
    int follow;             /* reading a file still being written: stop at `limit`, not at EOF */
    char *path;
    int by_path;            /* pa_spool_follow(): opened for each read, no descriptor kept */
    uint64_t limit, file_pos; /* follow mode: file bytes that may be read / were read */
    uint64_t prev_t0;       /* t0 delta base (dec_header) */
    spool_ctx_t ctx;        /* each kind's last halves (dec_header), of the records returned */
    pa_record_t rec;        /* the record last returned */
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Set once, by the first write the file size limit (RLIMIT_FSIZE) refused: the records the
 * spool's whole frames hold (the ones before it), for the session's one message. */
static _Atomic int fsize_cut;
static uint64_t fsize_kept;

int pa_spool_fsize_cut(uint64_t *kept_records)
{
    int cut = atomic_load(&fsize_cut);
    if (cut && kept_records)
        *kept_records = fsize_kept;
    return cut;
}

/* Appends `n` bytes to the spool file: open by path, write, close (no fd kept; O_CLOEXEC so
 * a concurrent exec cannot inherit it). */
static int spool_append_file(pa_spool_writer_t *w, const uint8_t *p, size_t n)
{
    int fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
        pa_err("spool", "cannot reopen spool file '%s': %s", w->path, strerror(errno));
        return -1;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    int rc = write_all(fd, p, n);
    int e = errno;
    /* a write cut at the file size limit leaves the frame's first part, which a reader decodes
     * as far as it goes: cut back to the last whole frame, the spool ends with whole records */
    if (rc < 0 && e == EFBIG && end >= 0 && ftruncate(fd, end) != 0)
        pa_dbg("spool", "cannot cut '%s' back to its last whole frame: %s", w->path, strerror(errno));
    if (close(fd) < 0 && rc == 0)
        rc = -1, e = errno;
    if (rc < 0 && e == EFBIG && !atomic_exchange(&fsize_cut, 1)) {
        /* the session's one message says it, with what the spool kept (pa_spool_fsize_cut) */
        fsize_kept = w->recs_whole;
        pa_dbg("spool", "write to '%s' failed: %s (after %llu records)", w->path, strerror(e),
               (unsigned long long)w->recs_whole);
    } else if (rc < 0 && e != EFBIG) {
        pa_err("spool", "write to '%s' failed: %s", w->path, strerror(e));
    }
    return rc;
}

/* Compresses the staged bytes into one complete frame and appends it. */
static int spool_flush_in(pa_spool_writer_t *w, int force)
{
    if (w->in_len == 0 && !force)
        return 0;
    size_t n = ZSTD_compress2(w->cc, w->out, w->out_cap, w->in, w->in_len);
    w->in_len = 0;
    if (ZSTD_isError(n)) {
        pa_err("spool", "zstd compression failed: %s", ZSTD_getErrorName(n));
        return -1;
    }
    w->comp += n;
    int rc = spool_append_file(w, w->out, n);
    if (rc == 0) {
        w->recs_whole += w->recs_staged;
        w->recs_staged = 0;
    }
    if (rc == 0 && w->published) /* the frame is whole in the file: a follower may read it */
        atomic_store_explicit(w->published, w->comp, memory_order_release);
    return rc;
}

/* Appends bytes through the staging buffer (a record larger than it spans several frames:
 * the reader sees one byte stream). */
static int spool_put(pa_spool_writer_t *w, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        size_t k = SPOOL_IN_CAP - w->in_len;
        if (k > n)
            k = n;
        memcpy(w->in + w->in_len, p, k);
        w->in_len += k;
        p += k;
        n -= k;
        if (w->in_len == SPOOL_IN_CAP && spool_flush_in(w, 0) < 0)
            return -1;
    }
    return 0;
}

static void spool_writer_free(pa_spool_writer_t *w)
{
    int e = errno;
    ZSTD_freeCCtx(w->cc);
    free(w->in);
    free(w->out);
    free(w->path);
    free(w);
    errno = e;
}

pa_spool_writer_t *pa_spool_open_write(const char *path, int level)
{
    pa_spool_writer_t *w = aligned_alloc(_Alignof(pa_spool_writer_t), sizeof *w);
    if (!w)
        return NULL;
    memset(w, 0, sizeof *w);
    w->out_cap = ZSTD_compressBound(SPOOL_IN_CAP);
    w->in = malloc(SPOOL_IN_CAP);
    w->out = malloc(w->out_cap);
    w->cc = ZSTD_createCCtx();
    w->path = strdup(path);
    if (!w->in || !w->out || !w->cc || !w->path) {
        spool_writer_free(w);
        errno = ENOMEM;
        return NULL;
    }
    ZSTD_CCtx_setParameter(w->cc, ZSTD_c_compressionLevel, level);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        pa_err("spool", "cannot create spool file '%s': %s", path, strerror(errno));
        spool_writer_free(w);
        return NULL;
    }
    close(fd);
    return w;
}

void pa_spool_set_publish(pa_spool_writer_t *w, _Atomic uint64_t *published)
{
    if (w)
        w->published = published;
}

/* Stages one record's encoded header and its `len` payload bytes (payload NULL: they follow
 * through spool_put, the worker's case). 0, or -1 on a write error. */
static int spool_stage(pa_spool_writer_t *w, const pa_record_t *rec, uint32_t len, const void *payload)
{
    if (w->in_len + SPOOL_ENC_MAX + (payload ? len : 0) <= SPOOL_IN_CAP) { /* straight into the stage */
        uint8_t *p = enc_header(w->in + w->in_len, rec, len, &w->prev_t0, w->ctx);
        if (payload && len)
            memcpy(p, payload, len), p += len;
        w->in_len = (size_t)(p - w->in);
        w->recs_staged += payload || !len; /* else the worker counts it with its payload */
        return 0;
    }
    uint8_t hdr[SPOOL_ENC_MAX];
    size_t hlen = (size_t)(enc_header(hdr, rec, len, &w->prev_t0, w->ctx) - hdr);
    if (spool_put(w, hdr, hlen) < 0 || (payload && spool_put(w, payload, len) < 0))
        return -1;
    w->recs_staged += payload || !len;
    return 0;
}

static long spool_futex(_Atomic uint32_t *word, int op, uint32_t val, uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
    return syscall(SYS_futex, (uint32_t *)word, op, val, op == FUTEX_WAIT_PRIVATE ? &ts : NULL, NULL, 0);
}

static uint64_t spool_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wakes whoever sleeps on `word` (set to 1 by the sleeper before it re-checks its condition;
 * the fence orders the caller's position store before this look: no lost wake-up). */
static inline void pipe_wake(_Atomic uint32_t *word)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(word, memory_order_relaxed)) {
        atomic_store_explicit(word, 0, memory_order_relaxed);
        spool_futex(word, FUTEX_WAKE_PRIVATE, 1, 0);
    }
}

/* Copies n bytes to pipe byte position pos (wrapping at the array end). */
static inline void pipe_copy(struct spool_pipe *q, uint64_t pos, const void *src, size_t n)
{
    uint64_t idx = pos & (q->cap - 1);
    size_t first = q->cap - idx < n ? (size_t)(q->cap - idx) : n;
    memcpy((uint8_t *)q->slots + idx, src, first);
    if (n > first)
        memcpy(q->slots, (const uint8_t *)src + first, n - first);
}

static inline void pipe_commit(pa_spool_writer_t *w, uint64_t tail, int wake)
{
    pa_spool_prod_t *p = &w->prod;
    p->tail = tail;
    atomic_store_explicit(p->pub, tail, memory_order_release);
    if (wake || tail >= p->wake_at)
        pa_spool_wake_worker(w);
}

void pa_spool_wake_worker(pa_spool_writer_t *w)
{
    w->prod.wake_at = w->prod.tail + w->pipe->wake_step;
    pipe_wake(&w->pipe->idle);
}

/* The room the worker freed: prod.room from its head (0 once the spool failed: pa_spool_slot()
 * then sends every record to pa_spool_append(), which refuses it, counted). */
static inline uint64_t pipe_refresh(pa_spool_writer_t *w)
{
    uint64_t room = atomic_load_explicit(&w->pipe->head, memory_order_acquire) + w->pipe->cap;
    w->prod.room = atomic_load_explicit(&w->failed, memory_order_relaxed) ? 0 : room;
    return room;
}

/* Waits until at least `want` bytes are free (want <= cap). Counted; -1 when the worker made no
 * progress for SPOOL_STALL_NS (the spool is then given up: the app is never held by it). */
static int pipe_wait_room(pa_spool_writer_t *w, uint64_t want)
{
    struct spool_pipe *q = w->pipe;
    uint64_t tail = w->prod.tail, t0 = spool_now_ns(), since = t0;
    uint64_t seen = atomic_load_explicit(&q->head, memory_order_acquire);
    w->pipe_waits++;
    for (;;) {
        atomic_store_explicit(&q->full, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);
        if (tail + want - head <= q->cap)
            break;
        pipe_wake(&q->idle); /* everything committed so far is the worker's to take */
        spool_futex(&q->full, FUTEX_WAIT_PRIVATE, 1, SPOOL_FULL_NS);
        uint64_t now = spool_now_ns();
        if (head != seen) {
            seen = head;
            since = now;
        } else if (now - since > SPOOL_STALL_NS) {
            pa_err("spool", "the spool thread made no progress for %llu s; the DB will lack trace rows "
                   "from here on", (unsigned long long)(SPOOL_STALL_NS / 1000000000ull));
            atomic_store(&w->failed, 1);
            w->prod.room = 0;
            return -1;
        }
    }
    atomic_store_explicit(&q->full, 0, memory_order_relaxed);
    w->pipe_wait_ns += spool_now_ns() - t0;
    return 0;
}

/* Hands one record (or a marker: kind SPOOL_PIPE_*, len 0) to the worker. A payload larger
 * than the free room goes in pieces as the worker frees it. */
static int pipe_put(pa_spool_writer_t *w, const pa_record_t *rec, const void *payload, uint32_t len)
{
    struct spool_pipe *q = w->pipe;
    uint64_t tail = w->prod.tail;
    uint64_t need = (uint64_t)pa_record_slots(len) * PA_SLOT_SIZE;
    int marker = rec->kind >= SPOOL_PIPE_FLUSH;
    uint64_t room = w->prod.room; /* markers go in after a failure too: the worker takes them */
    if (tail + need > room && tail + need > (room = pipe_refresh(w))) {
        uint64_t want = need < q->cap ? need : PA_SLOT_SIZE;
        if (pipe_wait_room(w, want) < 0)
            return -1;
        room = pipe_refresh(w);
    }
    pa_record_t *h = (pa_record_t *)(w->prod.slots + (tail & (q->cap - 1)));
    *h = *rec;
    h->len = len;
    if (tail + need <= room) { /* the common case: all of it at once */
        if (len)
            pipe_copy(q, tail + PA_SLOT_SIZE, payload, len);
        pipe_commit(w, tail + need, marker);
        return 0;
    }
    pipe_commit(w, tail += PA_SLOT_SIZE, 0);
    const uint8_t *p = payload;
    while (len) {
        if (tail + PA_SLOT_SIZE > room) {
            if (pipe_wait_room(w, PA_SLOT_SIZE) < 0)
                return -1;
            room = pipe_refresh(w);
        }
        size_t n = len < room - tail ? len : (size_t)(room - tail); /* whole slots but the last */
        pipe_copy(q, tail, p, n);
        p += n;
        len -= (uint32_t)n;
        tail += (n + PA_SLOT_SIZE - 1) & ~(uint64_t)(PA_SLOT_SIZE - 1);
        pipe_commit(w, tail, 1);
    }
    return 0;
}

/* The worker: takes entries in order, stages them (encoded), writes each full stage as a frame
 * and on each flush marker. After a failure it keeps taking entries (discarded) so the producer
 * never waits for a dead spool. */
static void *spool_worker(void *arg)
{
    pa_spool_writer_t *w = arg;
    struct spool_pipe *q = w->pipe;
    if (pa_thread_mark_agent)
        pa_thread_mark_agent();
    uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed), shown = head;
    uint32_t pending = 0; /* payload bytes of the current record still to take */
    /* tests hold the thread at its close (PA_TEST_SPOOL_CLOSE_STALL_MS) to check that the exit's
     * bounded join gives up on a spool thread that does not end, as one blocked in a lock would */
    const char *stall = getenv("PA_TEST_SPOOL_CLOSE_STALL_MS");
    long stall_ms = stall ? atol(stall) : 0;
    for (;;) {
        uint64_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
        if (head == tail) {
            atomic_store_explicit(&q->head, shown = head, memory_order_release);
            pipe_wake(&q->full);
            atomic_store_explicit(&q->idle, 1, memory_order_relaxed);
            atomic_thread_fence(memory_order_seq_cst);
            if (atomic_load_explicit(&q->tail, memory_order_acquire) == head)
                spool_futex(&q->idle, FUTEX_WAIT_PRIVATE, 1, SPOOL_IDLE_NS);
            atomic_store_explicit(&q->idle, 0, memory_order_relaxed);
            continue;
        }
        while (head < tail) {
            uint64_t idx = head & (q->cap - 1);
            if (pending) { /* payload bytes, contiguous up to the array end */
                uint64_t avail = tail - head < q->cap - idx ? tail - head : q->cap - idx;
                uint32_t n = pending < avail ? pending : (uint32_t)avail;
                if (!atomic_load_explicit(&w->failed, memory_order_relaxed) &&
                    spool_put(w, (const uint8_t *)q->slots + idx, n) < 0)
                    atomic_store(&w->failed, 1);
                pending -= n;
                w->recs_staged += !pending; /* the record is whole in the stage */
                head += (n + PA_SLOT_SIZE - 1) & ~(uint64_t)(PA_SLOT_SIZE - 1);
                continue;
            }
            const pa_record_t *h = (const pa_record_t *)((const uint8_t *)q->slots + idx);
            head += PA_SLOT_SIZE;
            if (__builtin_expect(h->kind >= SPOOL_PIPE_FLUSH, 0)) {
                if (!atomic_load_explicit(&w->failed, memory_order_relaxed) && spool_flush_in(w, 0) < 0)
                    atomic_store(&w->failed, 1);
                if (h->kind == SPOOL_PIPE_CLOSE) {
                    if (stall_ms > 0) {
                        struct timespec ts = {stall_ms / 1000, (stall_ms % 1000) * 1000000L};
                        nanosleep(&ts, NULL);
                    }
                    pa_dbg("spool", "the spool thread used %.1f ms of CPU", pa_thread_cpu_ms());
                    atomic_store_explicit(&q->head, head, memory_order_release);
                    return NULL;
                }
                continue;
            }
            pending = h->len;
            if (atomic_load_explicit(&w->failed, memory_order_relaxed))
                ;
            else if (w->in_len + SPOOL_ENC_MAX <= SPOOL_IN_CAP) { /* spool_stage()'s common case, inline */
                w->in_len = (size_t)(enc_header(w->in + w->in_len, h, pending, &w->prev_t0, w->ctx) - w->in);
                w->recs_staged += !pending;
            } else if (spool_stage(w, h, pending, NULL) < 0)
                atomic_store(&w->failed, 1);
            if (head - shown >= q->wake_step) { /* room for a producer waiting on a full pipe */
                atomic_store_explicit(&q->head, shown = head, memory_order_release);
                pipe_wake(&q->full);
            }
        }
    }
}

int pa_spool_start_worker(pa_spool_writer_t *w, size_t pipe_bytes)
{
    if (!w || w->pipe)
        return -1;
    uint64_t cap = 64u << 10;
    while (cap < pipe_bytes && cap < (1ull << 32))
        cap <<= 1;
    struct spool_pipe *q = aligned_alloc(64, sizeof *q);
    void *slots = aligned_alloc(64, (size_t)cap);
    if (!q || !slots) {
        free(q);
        free(slots);
        return -1;
    }
    memset(q, 0, sizeof *q);
    q->slots = slots;
    q->cap = cap;
    w->pipe = q;
    int rc = pa_thread_spawn(&q->th, PA_THREAD_STACK_WORKER, spool_worker, w);
    if (rc != 0) {
        pa_warn("spool", "cannot start the spool thread (%s); the aggregator compresses itself", strerror(rc));
        w->pipe = NULL;
        free(slots);
        free(q);
        return -1;
    }
    w->prod.slots = slots;
    w->prod.mask = cap - 1;
    w->prod.room = cap;
    q->wake_step = cap / 8 < SPOOL_WAKE_BYTES ? cap / 8 : SPOOL_WAKE_BYTES;
    w->prod.wake_at = q->wake_step;
    w->prod.pub = &q->tail;
    return 0;
}

int pa_spool_append(pa_spool_writer_t *w, const pa_record_t *rec, const void *payload)
{
    if (atomic_load_explicit(&w->failed, memory_order_relaxed))
        return -1;
    uint32_t len = payload ? rec->len : 0;
    w->prod.raw += (size_t)pa_record_slots(len) * PA_SLOT_SIZE;
    if (w->pipe)
        return pipe_put(w, rec, payload, len);
    if (spool_stage(w, rec, len, payload) < 0) {
        atomic_store(&w->failed, 1);
        return -1;
    }
    return 0;
}

int pa_spool_flush(pa_spool_writer_t *w)
{
    if (!w || atomic_load_explicit(&w->failed, memory_order_relaxed))
        return -1;
    if (w->pipe) {
        pa_record_t m = { .kind = SPOOL_PIPE_FLUSH };
        return pipe_put(w, &m, NULL, 0);
    }
    if (spool_flush_in(w, 0) < 0) {
        atomic_store(&w->failed, 1);
        return -1;
    }
    return 0;
}

/* Ends the worker: a close marker, then a bounded join. -1 when it did not end in time (it
 * is left running detached with the writer, which is then never freed). */
static int spool_stop_worker(pa_spool_writer_t *w, uint64_t *waits, uint64_t *wait_ns)
{
    struct spool_pipe *q = w->pipe;
    pa_record_t m = { .kind = SPOOL_PIPE_CLOSE };
    int rc = pipe_put(w, &m, NULL, 0); /* also after a failure: the worker still takes entries */
    if (rc == 0) {
        struct timespec ts;
        uint64_t wait = SPOOL_JOIN_NS, now = spool_now_ns();
        if (w->close_by_ns)
            wait = w->close_by_ns > now ? w->close_by_ns - now : 0;
        clock_gettime(CLOCK_REALTIME, &ts); /* pthread_timedjoin_np's clock */
        uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + wait;
        ts.tv_sec = (time_t)(t / 1000000000ull);
        ts.tv_nsec = (long)(t % 1000000000ull);
        rc = pthread_timedjoin_np(q->th, NULL, &ts) == 0 ? 0 : -1;
    }
    if (rc < 0) {
        pa_err("spool", "the spool thread did not end in time; the spool's last records may be missing");
        pthread_detach(q->th);
        return -1;
    }
    if (waits)
        *waits = w->pipe_waits;
    if (wait_ns)
        *wait_ns = w->pipe_wait_ns;
    w->pipe = NULL;
    w->prod.slots = NULL;
    w->prod.room = 0;
    free(q->slots);
    free(q);
    return 0;
}

void pa_spool_close_by(pa_spool_writer_t *w, uint64_t deadline_ns)
{
    if (w)
        w->close_by_ns = deadline_ns;
}

int pa_spool_close_write(pa_spool_writer_t *w, uint64_t *raw_bytes, uint64_t *compressed_bytes)
{
    return pa_spool_close_write_stats(w, raw_bytes, compressed_bytes, NULL, NULL);
}

int pa_spool_close_write_stats(pa_spool_writer_t *w, uint64_t *raw_bytes, uint64_t *compressed_bytes,
                               uint64_t *pipe_waits, uint64_t *pipe_wait_ns)
{
    if (!w)
        return -1;
    if (w->pipe && spool_stop_worker(w, pipe_waits, pipe_wait_ns) < 0)
        return -1; /* the worker still owns the writer */
    int rc = atomic_load(&w->failed) ? -1 : 0;
    /* an empty session still gets one (empty) frame: a clean end, not a truncated file */
    if (rc == 0 && spool_flush_in(w, w->comp == 0) < 0)
        rc = -1;
    if (raw_bytes)
        *raw_bytes = w->prod.raw;
    if (compressed_bytes)
        *compressed_bytes = w->comp;
    spool_writer_free(w);
    return rc;
}

pa_spool_reader_t *pa_spool_open_read(const char *path)
{
    pa_spool_reader_t *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return NULL;
    }
    r->in_cap = ZSTD_DStreamInSize();
    r->cap = 2u << 20;
    r->in = malloc(r->in_cap);
    r->buf = malloc(r->cap);
    r->dc = ZSTD_createDCtx();
    r->last_ret = 1; /* nothing decoded yet: an empty file is a truncated one */
    r->fd = -1;
    if (!r->in || !r->buf || !r->dc)
        goto fail;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        pa_err("spool", "cannot open spool file '%s': %s", path, strerror(errno));
        goto fail;
    }
    return r;
fail:
    pa_spool_close_read(r);
    return NULL;
}

/* Makes at least `need` undelivered bytes available in buf; returns 0, or -1 when the input
 * ended first (r->len - r->pos tells how many there are) or on a decoding error. */
static int reader_fill(pa_spool_reader_t *r, size_t need)
{
    if (r->len - r->pos >= need)
        return 0;
    if (r->pos > 0) { /* slide the undelivered tail to the front */
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    if (need > r->cap / 2) {
        size_t cap = r->cap;
        while (need > cap / 2)
            cap *= 2;
        uint8_t *nb = realloc(r->buf, cap);
        if (!nb)
            return -1;
        r->buf = nb;
        r->cap = cap;
    }
    while (r->len < need) {
        if (r->in_pos == r->in_size && !r->eof) {
            size_t want = r->in_cap;
            if (r->follow) {
                if (r->file_pos >= r->limit)
                    return -1; /* not written yet: asked again once the limit moved */
                if (want > r->limit - r->file_pos)
                    want = (size_t)(r->limit - r->file_pos);
            }
            ssize_t n;
            if (r->by_path) { /* the application's descriptors are never held */
                int fd = open(r->path, O_RDONLY | O_CLOEXEC);
                n = fd < 0 ? -1 : pread(fd, r->in, want, (off_t)r->file_pos);
                int e = errno;
                if (fd >= 0)
                    close(fd);
                errno = e;
            } else {
                n = read(r->fd, r->in, want);
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n > 0)
                r->file_pos += (uint64_t)n;
            if (n <= 0 && r->follow)
                return -1; /* the published bytes are not readable (yet): retried later */
            if (n <= 0) {
                r->eof = 1;
                n = 0;
            }
            r->in_size = (size_t)n;
            r->in_pos = 0;
        }
        /* called even with no input left: zstd may still hold decoded bytes it could not
         * deliver into a full output buffer */
        ZSTD_inBuffer in = { r->in, r->in_size, r->in_pos };
        ZSTD_outBuffer out = { r->buf, r->cap, r->len };
        size_t ret = ZSTD_decompressStream(r->dc, &out, &in);
        if (ZSTD_isError(ret)) {
            pa_err("spool", "corrupt spool: %s", ZSTD_getErrorName(ret));
            r->eof = 1;
            r->in_pos = r->in_size;
            return -1;
        }
        int progress = out.pos > r->len || in.pos > r->in_pos;
        if (progress) /* an idle call at a frame boundary would report a new frame's hint */
            r->last_ret = ret;
        r->in_pos = in.pos;
        r->len = out.pos;
        if (!progress && r->eof && r->in_pos == r->in_size)
            return -1;
    }
    return 0;
}

int pa_spool_next(pa_spool_reader_t *r, const pa_record_t **rec, const uint8_t **payload)
{
    /* the fill fails near the end of the input, where the last records may be shorter than
     * the largest header: decode what is there and tell a clean end from a cut record */
    if (r->len - r->pos < SPOOL_ENC_MAX) /* (the call only near a buffer's end) */
        reader_fill(r, SPOOL_ENC_MAX);
    if (r->len == r->pos) {
        if (r->follow && !r->eof)
            return 2; /* everything published so far was returned */
        if (r->eof && r->last_ret == 0 && r->in_pos == r->in_size)
            return 0; /* nothing pending and the last frame was complete */
        return -1;
    }
    uint64_t t0 = r->prev_t0;
    long h = dec_header(r->buf + r->pos, r->buf + r->len, &r->rec, &t0, (const uint32_t (*)[SPOOL_NHALF])r->ctx);
    if (h == 0 && r->follow && !r->eof)
        return 2; /* the rest of this record is in a frame not published yet */
    if (h <= 0) {
        if (h < 0)
            pa_err("spool", "corrupt spool record (kind 0x%x): bad length or varint",
                   (unsigned)r->buf[r->pos] | (unsigned)r->buf[r->pos + 1] << 8);
        return -1;
    }
    size_t total = (size_t)h + r->rec.len;
    if (r->len - r->pos < total && reader_fill(r, total) < 0) /* may move the buffer: the payload is located after it */
        return r->follow && !r->eof && r->len - r->pos < total ? 2 : -1;
    r->prev_t0 = t0;
    uint32_t *c = r->ctx[r->rec.kind & (SPOOL_NCTX - 1)];
    memcpy(c, (const uint8_t *)&r->rec + 8, 8);
    memcpy(c + 2, (const uint8_t *)&r->rec + 32, 32);
    *rec = &r->rec;
    *payload = r->rec.len ? r->buf + r->pos + (size_t)h : NULL;
    r->pos += total;
    return 1;
}

void pa_spool_follow(pa_spool_reader_t *r, uint64_t limit, int final)
{
    /* final: the writer closed the file, what it holds is all there is (read to its end) */
    r->follow = !final;
    r->limit = limit;
    if (!r->by_path) { /* from now on by path (the position is kept in file_pos) */
        if (r->fd >= 0)
            close(r->fd);
        r->fd = -1;
        r->by_path = 1;
    }
}

void pa_spool_close_read(pa_spool_reader_t *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->path);
    ZSTD_freeDCtx(r->dc);
    free(r->in);
    free(r->buf);
    free(r);
}
