/* pa_spool.h - the zstd-compressed spool of spool records (aggregator writes, writer reads). */
#ifndef PA_SPOOL_H
#define PA_SPOOL_H

#include <stdatomic.h>
#include <stdint.h>

#include "pa_record.h"

typedef struct pa_spool_writer pa_spool_writer_t;

/* The appending side of a writer with a worker (pa_spool_start_worker), the writer's first
 * member so that a one-slot record can be put inline (pa_spool_slot). The spool's own fields:
 * callers only use pa_spool_slot() and pa_spool_slot_commit(). */
typedef struct pa_spool_prod {
    uint8_t *slots;              /* the pipe; NULL: no worker */
    uint64_t mask;               /* pipe bytes - 1 */
    uint64_t tail;               /* bytes put (published to the worker at each commit) */
    uint64_t room;               /* tail may reach this without looking at the worker; 0: none */
    uint64_t wake_at;            /* at this tail the producer looks whether the worker sleeps */
    uint64_t raw;                /* bytes appended, as 64-byte slots */
    _Atomic uint64_t *pub;       /* the tail the worker reads */
} pa_spool_prod_t;
typedef struct pa_spool_reader pa_spool_reader_t;

/*! pa_spool_open_write() : creates `path` (truncates) for streaming; zstd `level` (1 = fast).
 *  No file descriptor is kept open: each ~1 MiB block is compressed into one complete zstd
 *  frame and appended by path (open O_APPEND|O_CLOEXEC, write, close), so the application's
 *  fds are never touched and a spool cut short stays readable up to its last frame.
 *  Returns NULL (errno set, reason logged) on failure. */
pa_spool_writer_t *pa_spool_open_write(const char *path, int level);

/*! pa_spool_start_worker() : from now on a thread of the spool's own encodes, compresses and
 *  appends: pa_spool_append() copies the record into a bounded hand-off pipe of `pipe_bytes`
 *  (rounded up to a power of two, at least 64 KiB) and returns. When the pipe is full the
 *  caller waits for room (counted: pa_spool_close_write_stats), at most until the worker made
 *  no progress for 5 s, then the spool is given up (appends return -1). Call once, from the
 *  thread that appends, after pa_spool_set_publish(). Returns 0, or -1 (no thread: the writer
 *  stays synchronous, nothing lost). */
int pa_spool_start_worker(pa_spool_writer_t *w, size_t pipe_bytes);

/*! pa_spool_slot() : with a worker and room in its pipe, the slot where the caller writes one
 *  whole record without payload (all 64 bytes: len 0, nslots 1; unset fields zero), then calls
 *  pa_spool_slot_commit(). NULL otherwise: append it with pa_spool_append(). */
static inline pa_record_t *pa_spool_slot(pa_spool_writer_t *w)
{
    pa_spool_prod_t *p = (pa_spool_prod_t *)w;
    return __builtin_expect(p->tail < p->room, 1) ? (pa_record_t *)(p->slots + (p->tail & p->mask)) : NULL;
}

/* the worker's wake-up, out of line (pa_spool_slot_commit) */
void pa_spool_wake_worker(pa_spool_writer_t *w);

/*! pa_spool_slot_commit() : hands the record written at pa_spool_slot() to the worker. */
static inline void pa_spool_slot_commit(pa_spool_writer_t *w)
{
    pa_spool_prod_t *p = (pa_spool_prod_t *)w;
    p->tail += PA_SLOT_SIZE;
    p->raw += PA_SLOT_SIZE;
    atomic_store_explicit(p->pub, p->tail, memory_order_release);
    if (__builtin_expect(p->tail >= p->wake_at, 0))
        pa_spool_wake_worker(w);
}

/*! pa_spool_append() : appends one record and its `rec->len` payload bytes (nslots is
 *  recomputed from len). Returns 0, or -1 on a write/compression error. */
int pa_spool_append(pa_spool_writer_t *w, const pa_record_t *rec, const void *payload);

/*! pa_spool_set_publish() : after each frame is whole in the file, its end offset (bytes) is
 *  stored into *published (release order), so another thread can follow the file as it grows
 *  (pa_spool_follow). NULL stops it. */
void pa_spool_set_publish(pa_spool_writer_t *w, _Atomic uint64_t *published);

/*! pa_spool_flush() : writes the staged records now as one frame (e.g. when idle, so a
 *  crash loses little); with a worker, asks it to (it does once it took what came before).
 *  Returns 0, or -1 on a write error (the writer then refuses appends). */
int pa_spool_flush(pa_spool_writer_t *w);

/*! pa_spool_close_write() : flushes the zstd frame and closes; reports raw and compressed
 *  byte counts (either pointer may be NULL). Returns 0 or -1. */
int pa_spool_close_write(pa_spool_writer_t *w, uint64_t *raw_bytes, uint64_t *compressed_bytes);

/*! pa_spool_close_by() : the close's wait for the worker ends at `deadline_ns` (CLOCK_MONOTONIC
 *  ns: the exit's deadline) instead of after 5 s. */
void pa_spool_close_by(pa_spool_writer_t *w, uint64_t deadline_ns);

/*! pa_spool_close_write_stats() : pa_spool_close_write(), also reporting how often appends found
 *  the worker's pipe full and how long they waited for it (ns); either pointer may be NULL.
 *  With a worker, waits at most 5 s (or until pa_spool_close_by()'s deadline) for it to end; -1
 *  when it did not (the writer is then left to it, never freed). */
int pa_spool_close_write_stats(pa_spool_writer_t *w, uint64_t *raw_bytes, uint64_t *compressed_bytes,
                               uint64_t *pipe_waits, uint64_t *pipe_wait_ns);

/*! pa_spool_open_read() : opens a spool written by pa_spool_open_write(). NULL on failure. */
pa_spool_reader_t *pa_spool_open_read(const char *path);

/*! pa_spool_next() : next record. Returns 1 and sets *rec / *payload (valid until the next
 *  call), 0 at a clean end, -1 when the file is truncated or corrupt (what was read stays valid). */
int pa_spool_next(pa_spool_reader_t *r, const pa_record_t **rec, const uint8_t **payload);

/*! pa_spool_follow() : reads a spool still being written: only the first `limit` bytes of the
 *  file (what the writer published) are read, and pa_spool_next() returns 2 when every whole
 *  record before the limit was returned (call again after raising the limit). `final` != 0:
 *  the writer closed the file; the reader reads to its end and ends as a normal reader. */
void pa_spool_follow(pa_spool_reader_t *r, uint64_t limit, int final);

void pa_spool_close_read(pa_spool_reader_t *r);

/*! pa_spool_fsize_cut() : 1 when a spool write of this process failed with EFBIG (the file size
 *  limit RLIMIT_FSIZE): the spool then ends with the records before it, *kept_records of them
 *  (whole in the file: what a reader gets); nothing after it is written. 0 otherwise. */
int pa_spool_fsize_cut(uint64_t *kept_records);

#endif
