/* pa_spool.c - streaming zstd spool: compactly encoded records and payloads, one zstd frame per ~1 MiB block. */
#include "pa_spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "pa_log.h"

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
    __m128i u0 = _mm_loadu_si128((const __m128i *)(b + 32)), u1 = _mm_loadu_si128((const __m128i *)(b + 48));
    __m128i c0 = _mm_loadu_si128((const __m128i *)(c + 2)), c1 = _mm_loadu_si128((const __m128i *)(c + 6));
    uint32_t same = (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(u0, c0))) |
                    (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(u1, c1))) << 4;
    uint32_t diff = (~same & 0xffu) << 2;
#else
    uint32_t diff = 0;
    for (int i = 2; i < SPOOL_NHALF; i++) {
        uint32_t x;
        memcpy(&x, b + half_off[i], 4);
        diff |= (uint32_t)(x != c[i]) << i;
    }
#endif
    return diff | (uint32_t)(rec->tid != c[0]) | (uint32_t)(rec->flags != c[1]) << 1;
}

/* Encodes rec's header (payload length `len`) at p (room: SPOOL_ENC_MAX); returns the end.
 * Only the halves that changed against the kind's context are visited (and the context
 * takes their new values). */
static uint8_t *enc_header(uint8_t *p, const pa_record_t *rec, uint32_t len, uint64_t *prev_t0, spool_ctx_t ctx)
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
    s[0] = (uint8_t)rec->kind;
    s[1] = (uint8_t)(rec->kind >> 8);
    s[2] = (uint8_t)mask;
    s[3] = (uint8_t)(mask >> 8);
    return p;
}

/* Reads a varint of at most `bits` bits from [*p, end). 0 ok, 1 when it runs past end,
 * -1 when it is longer than `bits` allow (corrupt). */
static inline int dec_varint(const uint8_t **p, const uint8_t *end, unsigned bits, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < bits; shift += 7) {
        if (*p == end)
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
 * 0 when [p, end) holds only part of it, -1 when it is malformed. */
static long dec_header(const uint8_t *p, const uint8_t *end, pa_record_t *rec, uint64_t *prev_t0,
                       const spool_ctx_t ctx)
{
    const uint8_t *s = p;
    if (end - p < 4)
        return 0;
    uint32_t mask = (uint32_t)p[2] | (uint32_t)p[3] << 8;
    if (mask >> (3 + SPOOL_NHALF))
        return -1;
    memset(rec, 0, sizeof *rec);
    rec->kind = (uint16_t)(p[0] | p[1] << 8);
    p += 4;
    uint64_t v = 0;
    int rc;
    if (mask & 1) {
        if ((rc = dec_varint(&p, end, 35, &v)) != 0)
            return rc > 0 ? 0 : -1;
        if (v == 0 || v > SPOOL_MAX_LEN)
            return -1;
        rec->len = (uint32_t)v;
    }
    rec->nslots = (uint16_t)pa_record_slots(rec->len);
    if (mask & 2) {
        if ((rc = dec_varint(&p, end, 70, &v)) != 0)
            return rc > 0 ? 0 : -1;
        rec->t0 = *prev_t0 += unzigzag(v);
    }
    if (mask & 4) {
        if ((rc = dec_varint(&p, end, 70, &v)) != 0)
            return rc > 0 ? 0 : -1;
        rec->t1 = rec->t0 + unzigzag(v);
    }
    uint8_t *raw = (uint8_t *)rec;
    const uint32_t *c = ctx[rec->kind & (SPOOL_NCTX - 1)];
    memcpy(raw + 8, c, 8);       /* tid, flags */
    memcpy(raw + 32, c + 2, 32); /* u */
    for (uint32_t m = mask >> 3; m; m &= m - 1) { /* the changed halves only */
        int i = __builtin_ctz(m);
        if ((rc = dec_varint(&p, end, 35, &v)) != 0)
            return rc > 0 ? 0 : -1;
        uint32_t x = c[i] + unzigzag32((uint32_t)v);
        memcpy(raw + half_off[i], &x, 4);
    }
    return p - s;
}

struct pa_spool_writer {
    char *path;
    ZSTD_CCtx *cc;
    uint8_t *in;
    size_t in_len;
    uint8_t *out;
    size_t out_cap;
    uint64_t raw, comp;     /* raw: bytes as 64-byte slots (what the encoding saves) */
    uint64_t prev_t0;       /* t0 delta base (enc_header) */
    spool_ctx_t ctx;        /* each kind's last halves (enc_header) */
    int failed;
    _Atomic uint64_t *published; /* file bytes of whole frames, for a reader following the file */
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

/* Appends `n` bytes to the spool file: open by path, write, close (no fd kept; O_CLOEXEC so
 * a concurrent exec cannot inherit it). */
static int spool_append_file(pa_spool_writer_t *w, const uint8_t *p, size_t n)
{
    int fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
        pa_err("spool", "cannot reopen spool file '%s': %s", w->path, strerror(errno));
        return -1;
    }
    int rc = write_all(fd, p, n);
    int e = errno;
    if (close(fd) < 0 && rc == 0)
        rc = -1, e = errno;
    if (rc < 0)
        pa_err("spool", "write to '%s' failed: %s", w->path, strerror(e));
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
    pa_spool_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
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

int pa_spool_append(pa_spool_writer_t *w, const pa_record_t *rec, const void *payload)
{
    if (w->failed)
        return -1;
    uint32_t len = payload ? rec->len : 0;
    w->raw += (size_t)pa_record_slots(len) * PA_SLOT_SIZE;
    if (w->in_len + SPOOL_ENC_MAX + len <= SPOOL_IN_CAP) { /* fast path: straight into the stage */
        uint8_t *p = enc_header(w->in + w->in_len, rec, len, &w->prev_t0, w->ctx);
        if (len)
            memcpy(p, payload, len), p += len;
        w->in_len = (size_t)(p - w->in);
        return 0;
    }
    uint8_t hdr[SPOOL_ENC_MAX];
    size_t hlen = (size_t)(enc_header(hdr, rec, len, &w->prev_t0, w->ctx) - hdr);
    if (spool_put(w, hdr, hlen) < 0 || spool_put(w, payload, len) < 0) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

int pa_spool_flush(pa_spool_writer_t *w)
{
    if (!w || w->failed)
        return -1;
    if (spool_flush_in(w, 0) < 0) {
        w->failed = 1;
        return -1;
    }
    return 0;
}

int pa_spool_close_write(pa_spool_writer_t *w, uint64_t *raw_bytes, uint64_t *compressed_bytes)
{
    if (!w)
        return -1;
    int rc = w->failed ? -1 : 0;
    /* an empty session still gets one (empty) frame: a clean end, not a truncated file */
    if (rc == 0 && spool_flush_in(w, w->comp == 0) < 0)
        rc = -1;
    if (raw_bytes)
        *raw_bytes = w->raw;
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
    if (reader_fill(r, total) < 0) /* may move the buffer: the payload is located after it */
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
