/* pa_spool.c - streaming zstd spool: 64-byte records plus slot-padded payloads, one zstd frame per ~1 MiB block. */
#include "pa_spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "pa_log.h"

/* Records are staged in a 1 MiB input buffer so zstd sees large blocks (its speed depends on
 * it) and the per-record cost is a 64-byte memcpy. Each full buffer becomes one complete zstd
 * frame, appended by path: the agent holds no file descriptor between flushes, so an
 * application that closes or dup2()s over "its" fds (closefrom(3)) can never receive spool
 * bytes, and a spool cut short by a crash stays readable up to its last whole frame. */
#define SPOOL_IN_CAP (1u << 20)
#define SPOOL_MAX_LEN (1u << 30) /* reader sanity bound on one payload */

struct pa_spool_writer {
    char *path;
    ZSTD_CCtx *cc;
    uint8_t *in;
    size_t in_len;
    uint8_t *out;
    size_t out_cap;
    uint64_t raw, comp;
    int failed;
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
    return spool_append_file(w, w->out, n);
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

int pa_spool_append(pa_spool_writer_t *w, const pa_record_t *rec, const void *payload)
{
    if (w->failed)
        return -1;
    uint32_t len = payload ? rec->len : 0;
    uint32_t ns = pa_record_slots(len);
    size_t total = (size_t)ns * PA_SLOT_SIZE;
    w->raw += total;
    if (len == 0 && w->in_len + PA_SLOT_SIZE < SPOOL_IN_CAP) { /* fast path: header only */
        pa_record_t *dst = (pa_record_t *)(w->in + w->in_len);
        memcpy(dst, rec, sizeof *dst);
        dst->nslots = 1;
        dst->len = 0;
        w->in_len += PA_SLOT_SIZE;
        return 0;
    }
    pa_record_t hdr = *rec;
    hdr.nslots = (uint16_t)ns;
    hdr.len = len;
    static const uint8_t zeros[PA_SLOT_SIZE];
    size_t pad = total - PA_SLOT_SIZE - len;
    if (spool_put(w, &hdr, sizeof hdr) < 0 || spool_put(w, payload, len) < 0 ||
        spool_put(w, zeros, pad) < 0) {
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
    if (!r)
        return NULL;
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
            ssize_t n = read(r->fd, r->in, r->in_cap);
            if (n < 0 && errno == EINTR)
                continue;
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
    if (reader_fill(r, PA_SLOT_SIZE) < 0) {
        /* a clean end: nothing pending and the last frame was complete */
        if (r->len == r->pos && r->eof && r->last_ret == 0 && r->in_pos == r->in_size)
            return 0;
        return -1;
    }
    pa_record_t hdr;
    memcpy(&hdr, r->buf + r->pos, sizeof hdr);
    if (hdr.len > SPOOL_MAX_LEN || hdr.nslots != pa_record_slots(hdr.len)) {
        pa_err("spool", "corrupt spool record (kind 0x%x, nslots %u, len %u)", hdr.kind, hdr.nslots,
               hdr.len);
        return -1;
    }
    size_t total = (size_t)hdr.nslots * PA_SLOT_SIZE;
    if (reader_fill(r, total) < 0)
        return -1;
    *rec = (const pa_record_t *)(r->buf + r->pos);
    *payload = hdr.len ? r->buf + r->pos + PA_SLOT_SIZE : NULL;
    r->pos += total;
    return 1;
}

void pa_spool_close_read(pa_spool_reader_t *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dc);
    free(r->in);
    free(r->buf);
    free(r);
}
