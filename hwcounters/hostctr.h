/* hostctr.h - interface of the host counter source: libpfm4 events counted per thread, read at HGTX ranges. */
#ifndef PA_HOSTCTR_SRC_H
#define PA_HOSTCTR_SRC_H

#include <perfmon/pfmlib_perf_event.h> /* its perf_event.h, not linux/perf_event.h: they clash */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../common/pa_clock.h"
#include "../common/pa_hostctr.h"

/*
 * PROFAGENT_HOST_COUNTERS=<comma list of libpfm4 event names> (off by default). At session
 * start the names are encoded with libpfm4 (pfm_get_os_event_encoding, user level unless the
 * name carries its own :u/:k modifiers). Nothing is opened then: a thread's group (a dummy
 * software leader plus one member per event, PERF_FORMAT_GROUP with time enabled/running) is
 * opened by that thread's first HGTX push/pop/start/end, read with one read() of the leader
 * at every such record, and closed at its exit. A thread that records no range makes no
 * syscall. The first thread to open decides what works on this machine (fallbacks, messages,
 * outcome records); the others open exactly that set.
 *
 * Why read() and not rdpmc: rdpmc needs the PMU's user-page index of every hardware event
 * (one mmap per event and thread) and only serves hardware counters; the fallback software
 * events (task-clock, context-switches, page-faults) have no rdpmc index at all. One read()
 * of the group returns every value with the same time enabled/running, the pair scaling
 * needs. Cost measured in bench/bench_hostctr.c.
 */

/* Nonzero while host counters are on (set before sources start, cleared when no event can be
 * counted). The HGTX hot path tests only this: one load and a predictable branch when off. */
extern int pa_hc_active;

/*! pa_hc_init() : parses `spec` (the value of PROFAGENT_HOST_COUNTERS; NULL = unset), encodes
 *  every name with libpfm4 and prepares the per-thread open. `set` says the variable was
 *  present (an empty value then gets one warning). Warnings, each at most once: unknown names
 *  (how to list valid ones), more than PA_HC_MAX_EVENTS names, duplicates. Returns the number
 *  of events that will be tried (0: counters off). Slow path; constructor only. */
int pa_hc_init(const char *spec, int set);

/*! pa_hc_sample() : reads the calling thread's group and emits one PA_REC_HC_SAMPLE tagged
 *  with `t0` (the HGTX record that follows carries the same t0). Opens the group on the
 *  thread's first call (slow path, may malloc, bounded). errno preserved; async-signal-safe
 *  once the group is open. */
void pa_hc_sample(uint64_t t0);

/*! pa_hc_exit_thread() : the exiting thread's total (it gets no TLS destructor), read on it
 *  before the session ends elsewhere; its group counts no more after. Async-signal-safe. */
void pa_hc_exit_thread(void);

/*! pa_hc_finish() : session end (the exit thread): when no thread opened a group, emits the
 *  outcome records (status not_tried, or why the names could not be encoded) so the DB still
 *  says what was asked. */
void pa_hc_finish(void);

/*! pa_hc_thread_detach() : at a thread's exit, before its ring is retired: a last read of its
 *  group (PA_RF_HC_EXIT), then the group is closed. */
void pa_hc_thread_detach(void);

/*! pa_hc_after_fork_child() : closes every group fd the parent's threads had (the child is not
 *  profiled) and forgets the forking thread's group. */
void pa_hc_after_fork_child(void);

/*! pa_hc_list_events() : prints the libpfm4 event names usable on this machine (PMUs present,
 *  the perf_events generic ones first), one a line. Returns the count, -1 when libpfm4 fails. */
int pa_hc_list_events(FILE *out);

/* ---- the plan (after pa_hc_init, final after the first open) ---- */

typedef struct pa_hc_event {
    char asked[128];             /* as written in PROFAGENT_HOST_COUNTERS ("" for substitutes) */
    char name[128];              /* shown in messages, the summary and reports: asked, or the
                                    substitute's generic name (task-clock, ...) */
    char encoding[256];          /* libpfm4's fully qualified name ("" when unknown) */
    struct perf_event_attr attr; /* perf_event_open attributes (valid when encoded) */
    uint32_t status;             /* enum pa_hc_status; 0 = encoded, not tried yet */
    int err;                     /* errno of the failed open, 0 if none */
    uint32_t column;             /* index among the counted events, PA_HC_NO_COLUMN if none */
    char detail[192];            /* why not counted, or what changed (user level only) */
} pa_hc_event_t;

/*! pa_hc_events() : the event table (asked ones first, substitutes after); count returned. */
size_t pa_hc_events(const pa_hc_event_t **ev);

/*! pa_hc_ncounted() : events with a column (valid once a group was opened). */
uint32_t pa_hc_ncounted(void);

/* ---- testing hooks: the two syscalls the source makes, replaceable ---- */

typedef long (*pa_hc_open_fn)(struct perf_event_attr *attr, pid_t tid, int cpu, int group_fd,
                              unsigned long flags);
typedef ssize_t (*pa_hc_read_fn)(int fd, void *buf, size_t n);

/*! pa_hc_set_syscalls() : replaces perf_event_open / read (NULL: the real ones). */
void pa_hc_set_syscalls(pa_hc_open_fn open_fn, pa_hc_read_fn read_fn);

/*! pa_hc_read_group() : one read of the group whose leader is `fd` (n counted events besides
 *  the dummy leader) into *s. Returns 0, or -1 when the read failed or its shape is wrong
 *  (count, size). */
int pa_hc_read_group(int fd, uint32_t n, pa_hc_snap_t *s);

/*! pa_hc_fds_in_use() : the counters' fds open (or taken from the budget) in the process now. */
long pa_hc_fds_in_use(void);

/*! pa_hc_reset() : forgets the plan and closes the calling thread's group (tests). */
void pa_hc_reset(void);

#endif
