/* pa_source.h - how a source plugs into the session: one descriptor per source, one line in session/sources.c. */
#ifndef PA_SOURCE_H
#define PA_SOURCE_H

#include <stdint.h>

/*
 * A source is what records events on the application's threads (collector/: hgtx, osrt, ze,
 * mem; sampling/: pcsamp; hwcounters/: hwctr). It lives in its own folder, uses only common/
 * and the collector's emission interface (collector/collector.h: pa_emit, pa_tls, guards,
 * pa_config), and never includes an agg/ or writer/ header. The session (session/) is the
 * only room that knows sources, aggregator and writer together; it drives every source
 * through the descriptor below:
 *
 *     constructor: config -> aggregator started -> init() of each enabled source, in table
 *                  order -> recording switched on (pa_sources)
 *     first event of an application thread (its ring was just created): thread_attach()
 *     its exit (TLS destructors, before its ring is retired): thread_detach()
 *     exit path:   recording of new threads stops -> finish() of each source that init()ed,
 *                  in reverse table order, each bounded by budget_ns -> last drain -> DB
 *     fork child:  recording is off in the child -> fork_child()
 *
 * To add a source: define `const pa_source_t pa_source_<name>` in its folder, add
 * `PA_SOURCE(<name>)` to the list in session/sources.c, emit record kinds of its own range
 * (pa_record.h reserves one per source; its consumer goes in agg_consumers[], agg/agg_core.c),
 * and give it a PA_SRC_* bit (collector/config.h). Every hook may be NULL. Hooks run with the calling thread's guard raised (pa_guard_enter): what they
 * call (dlsym, malloc, Level Zero, perf_event_open) is never recorded by the other sources.
 */

/* Ring record kinds: each source owns one range of enum pa_rec_kind (common/pa_record.h):
 * hgtx 0x10-0x1f, osrt 0x20-0x3f, ze 0x40-0x7f, mem 0x80-0x9f, pcsamp 0xa0-0xbf
 * (PA_REC_PCSAMP_FIRST/LAST), hwctr 0xc0-0xdf (PA_REC_HWCTR_*), itt 0xe0-0xef (PA_REC_ITT_*);
 * 0xf0-0xff free. Spool kinds mirror them at 0x1000 | kind (PA_SP_*_FIRST/LAST). The session
 * checks at start that the table's ranges do not overlap. */

typedef struct pa_source_desc {
    const char *name;       /* PROFAGENT_TRACE word and log tag: "hgtx", "osrt", "ze", ... */
    uint32_t mask;          /* PA_SRC_* bits (collector/config.h) that enable it: init() runs
                               when pa_config.trace has any of them. An opt-in source (pcsamp,
                               hwctr) gets its bit from its own variable (config.c). */
    uint16_t rec_first, rec_last; /* its ring record kinds (PA_REC_<SRC>_FIRST/LAST), inclusive */

    /*! init() : constructor, after the aggregator started and before recording is switched
     *  on; resolve functions, attach to a runtime, start reader threads (agent threads call
     *  pa_thread_mark_agent() first). Returns 0, or -1 when the source cannot run (it said
     *  why, once): its mask bits are then left off for the session. */
    int (*init)(void);

    /*! thread_attach() : on an application thread, at its first event, right after its ring
     *  was created (slow path: may allocate, open per-thread counters). Async-signal-safe
     *  only if the source records from signal handlers. */
    void (*thread_attach)(void);

    /*! finish() : exit path, before the aggregator's last drain: stop producing, turn what is
     *  in flight into records (or count it as lost), within `budget_ns` (a share of
     *  PROFAGENT_EXIT_TIMEOUT_MS). Called once, only if init() succeeded. May run on the
     *  agent's finisher thread while application threads still call into the source: what
     *  they can still reach must stay valid (callbacks stay installed; state is not freed). */
    void (*finish)(uint64_t budget_ns);

    /*! fork_child() : in a fork child (collection is off there): forget inherited threads,
     *  handles and fds that belong to the parent. */
    void (*fork_child)(void);

    /*! thread_detach() : on an application thread that had a ring, among its TLS destructors,
     *  just before its ring is retired (its last records still go into it; guard raised):
     *  final per-thread reads, closing per-thread handles. */
    void (*thread_detach)(void);

    /*! exit_thread() : on the thread whose exit() ends the session, just before the session
     *  ends on the finisher thread (session/exitpaths.c): that thread's final per-thread reads
     *  (its TLS destructors never run). May run in a signal handler's exit(): async-signal-safe,
     *  no allocation. */
    void (*exit_thread)(void);
} pa_source_t;

/* The session's table (session/sources.c), in init order. */
extern const pa_source_t *const pa_source_table[];
extern const unsigned pa_source_count;

#endif
