/* pa_spool.h - the zstd-compressed spool of spool records (aggregator writes, writer reads). */
#ifndef PA_SPOOL_H
#define PA_SPOOL_H

#include <stdatomic.h>
#include <stdint.h>

#include "pa_record.h"

typedef struct pa_spool_writer pa_spool_writer_t;
typedef struct pa_spool_reader pa_spool_reader_t;

/*! pa_spool_open_write() : creates `path` (truncates) for streaming; zstd `level` (1 = fast).
 *  No file descriptor is kept open: each ~1 MiB block is compressed into one complete zstd
 *  frame and appended by path (open O_APPEND|O_CLOEXEC, write, close), so the application's
 *  fds are never touched and a spool cut short stays readable up to its last frame.
 *  Returns NULL (errno set, reason logged) on failure. */
pa_spool_writer_t *pa_spool_open_write(const char *path, int level);

/*! pa_spool_append() : appends one record and its `rec->len` payload bytes (nslots is
 *  recomputed from len). Returns 0, or -1 on a write/compression error. */
int pa_spool_append(pa_spool_writer_t *w, const pa_record_t *rec, const void *payload);

/*! pa_spool_set_publish() : after each frame is whole in the file, its end offset (bytes) is
 *  stored into *published (release order), so another thread can follow the file as it grows
 *  (pa_spool_follow). NULL stops it. */
void pa_spool_set_publish(pa_spool_writer_t *w, _Atomic uint64_t *published);

/*! pa_spool_flush() : writes the staged records now as one frame (e.g. when idle, so a
 *  crash loses little). Returns 0, or -1 on a write error (the writer then refuses appends). */
int pa_spool_flush(pa_spool_writer_t *w);

/*! pa_spool_close_write() : flushes the zstd frame and closes; reports raw and compressed
 *  byte counts (either pointer may be NULL). Returns 0 or -1. */
int pa_spool_close_write(pa_spool_writer_t *w, uint64_t *raw_bytes, uint64_t *compressed_bytes);

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

#endif
