/* timeline.h - the timeline model of a profagent DB (tracks, slices, flows, counters) that
 * `profagent export` writes as Chrome trace-event JSON or Perfetto protobuf, and `profagent
 * report` draws from. */
#ifndef PA_TIMELINE_H
#define PA_TIMELINE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a slice is; the JSON "cat" and the HTML colours use pa_tl_cat_name(). */
enum pa_tl_cat {
    PA_TL_ZE = 0,     /* a Level Zero API call (ZE_API) */
    PA_TL_OSRT,       /* an OS runtime call (OSRT_API) */
    PA_TL_MEM,        /* a device memory allocation or free call (DEVICE_MEMORY) */
    PA_TL_HGTX,       /* an HGTX push/pop range */
    PA_TL_HGTX_SE,    /* an HGTX start/end range (may overlap others: own lanes) */
    PA_TL_MARK,       /* an HGTX mark (instant, t1 == t0) */
    PA_TL_KERNEL,     /* device operations (ZE_OPS kind 1, 2, 3) */
    PA_TL_COPY,
    PA_TL_FILL,
    PA_TL_NCATS
};

/* Kinds of tracks. A thread track (lane 0 of a thread's own group) is the thread itself; the
 * others are children of a thread, of a process, or of a device. */
enum pa_tl_track_kind { PA_TL_TRACK_THREAD = 0, PA_TL_TRACK_THREAD_CHILD, PA_TL_TRACK_PROCESS_CHILD,
                        PA_TL_TRACK_DEVICE, PA_TL_TRACK_COUNTER };

typedef struct pa_tl_slice {
    int64_t t0, t1;     /* ns relative to the timeline origin (pa_tl_t.origin_ns) */
    uint32_t track;     /* index in pa_tl_t.tracks, set by the lane packing */
    uint32_t group;     /* the logical track before lanes were split */
    uint32_t name;      /* index in pa_tl_t.strings */
    uint8_t cat;        /* enum pa_tl_cat */
    int64_t id;         /* HGTX range id, ZE corrId, DEVICE_MEMORY eventId, ...; 0 none */
    int64_t val;        /* bytes for copies/fills/allocations, range level; 0 none */
} pa_tl_slice_t;

typedef struct pa_tl_track {
    int kind;           /* enum pa_tl_track_kind */
    uint32_t name;      /* string index */
    int64_t pid, tid;   /* JSON pid/tid this track is drawn on (synthetic for non-thread tracks) */
    int64_t parent;     /* index of the thread track (THREAD_CHILD), -1 otherwise */
    int64_t device;     /* device id of DEVICE/COUNTER tracks, -1 otherwise */
    uint64_t uuid;      /* Perfetto track uuid (unique, non-zero) */
    uint32_t nslices;   /* slices on it */
    int unit_bytes;     /* COUNTER: memory in use (bytes); 0: a metric sample track */
} pa_tl_track_t;

typedef struct pa_tl_flow { uint64_t id; uint32_t from, to; } pa_tl_flow_t;  /* slice indexes */
typedef struct pa_tl_counter {
    uint32_t track; int64_t t; int64_t v;
    double d; int is_double;  /* metric samples: a double value (d), memory counters: v */
} pa_tl_counter_t;
typedef struct pa_tl_proc { int64_t pid; uint32_t name; int device; uint64_t uuid; } pa_tl_proc_t;

typedef struct pa_tl {
    int64_t origin_ns;          /* CLOCK_MONOTONIC ns of time 0: the session start (earlier
                                   only if an event is earlier) */
    int64_t start_wall_ns;      /* wall-clock (CLOCK_REALTIME) ns at the session start */
    int64_t start_mono_ns, end_mono_ns;
    char *command, *host;
    pa_tl_slice_t *slices; size_t nslices, cap_slices;
    pa_tl_track_t *tracks; size_t ntracks, cap_tracks;
    pa_tl_flow_t *flows; size_t nflows, cap_flows;
    pa_tl_counter_t *counters; size_t ncounters, cap_counters;
    pa_tl_proc_t *procs; size_t nprocs, cap_procs;
    char **strings; size_t *string_len; size_t nstrings, cap_strings;
    uint32_t *hash; size_t hash_cap;   /* string interning (open addressing, index + 1) */
    int oom;
} pa_tl_t;

/*! pa_tl_load() : reads every trace table present in `db` (ZE_API, ZE_OPS, OSRT_API,
 *  DEVICE_MEMORY, HGTX_RANGES, HGTX_MARKS, THREADS, META; a missing table is no error) into
 *  `tl`, splits each logical track into lanes so that slices on one track nest properly
 *  (thread tracks) or never overlap (device tracks, start/end ranges), links each device
 *  operation to its launching API call (flows) and derives the memory-in-use counters. Metric
 *  tables other sources may add become counter tracks per (device, metric) when they follow the
 *  convention pa_tl_metrics() documents (timeline.c); without them there are none.
 *  Returns 0, or -1 with a message in err (SQL error, out of memory). */
int pa_tl_load(sqlite3 *db, pa_tl_t *tl, char *err, size_t errsz);

/*! pa_tl_free() : releases everything pa_tl_load() allocated. */
void pa_tl_free(pa_tl_t *tl);

/*! pa_tl_cat_name() : "ze", "osrt", "mem", "hgtx", "hgtx_startend", "mark", "kernel", "copy", "fill". */
const char *pa_tl_cat_name(int cat);

/*! pa_tl_order() : slice indexes of each track in nesting order (start ascending, end
 *  descending), tracks in index order: a malloc'd array of tl->nslices entries (NULL: no memory). */
uint32_t *pa_tl_order(const pa_tl_t *tl);

/*! pa_tl_json_str() : s[0..len) as a JSON string: '"', '\\' and control bytes escaped, bytes that
 *  are not valid UTF-8 as \u00XX (their Latin-1 reading), so the output always parses. */
void pa_tl_json_str(FILE *out, const char *s, size_t len);

/*! pa_tl_write_json() : Chrome trace-event JSON ("traceEvents", ts/dur in us with 3 decimals
 *  = exact ns, "displayTimeUnit":"ns", the clock anchor in "otherData" and "metadata").
 *  Returns the number of events written, or -1 on a write error. */
long pa_tl_write_json(const pa_tl_t *tl, FILE *out);

/*! pa_tl_write_pftrace() : Perfetto's native protobuf trace (a `Trace` of `TracePacket`s; field
 *  numbers in timeline_pb.c). Returns the number of track events written, or -1 on a write error. */
long pa_tl_write_pftrace(const pa_tl_t *tl, FILE *out);

#endif
