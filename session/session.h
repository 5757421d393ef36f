/* session.h - the session room: lifecycle of one profiling session (start, stop, exit paths, DB + summary). */
#ifndef PA_SESSION_H
#define PA_SESSION_H

#include <stdint.h>

/*
 * The only room that knows the sources (collector/, sampling/, hwcounters/), the aggregator
 * (agg/) and the writer (writer/). Sources plug in through one table of descriptors
 * (common/pa_source.h, session/sources.c); nothing below this folder calls up into it.
 *
 *   session.c    constructor (config, paths, aggregator, sources), pa_finish() (stop the
 *                sources and the aggregator within PROFAGENT_EXIT_TIMEOUT_MS, DB under a free
 *                name, summary), fork child
 *   sources.c    the source table and the loops over it (init, thread attach, finish, fork)
 *   exitpaths.c  endings without exit(): exec, _exit/_Exit, fatal signals (finisher thread)
 *   signals.c    the finalizing SIGTERM/INT/HUP/QUIT handler, invisible to the application
 */

/* ---- session.c ---- */

/*! pa_finish() : the exit path (stop the sources and the aggregator within
 *  PROFAGENT_EXIT_TIMEOUT_MS, write the DB, print the summary, remove the spool). Runs once,
 *  only in the process owning the session; later calls return at once. Not
 *  async-signal-safe: see pa_exitpaths_finish_bounded(). */
void pa_finish(void);

/*! pa_exit_deadline_arm() : the exit's one deadline (pa_clock_ns() ns: CLOCK_MONOTONIC), now +
 *  PROFAGENT_EXIT_TIMEOUT_MS when first called, the same value on every later call: the first
 *  ending to begin (exit handler, _exit, exec, fatal signal) arms it, every wait of the exit
 *  shares it. Async-signal-safe, lock-free. */
uint64_t pa_exit_deadline_arm(void);

/*! pa_exit_left_ns() : ns left before the exit's deadline (0 once passed; the whole budget
 *  while not armed). Async-signal-safe. */
uint64_t pa_exit_left_ns(void);

struct pa_session_meta;
/*! pa_session_identity() : rank (common/pa_rank.h, warnings logged once), boot id and the
 *  wall-clock anchor (session/identity.c) into *m, at session start. */
void pa_session_identity(struct pa_session_meta *m);

/*! pa_session_active() : 1 in the owning process while the session has not been finalized. */
int pa_session_active(void);

/*! pa_session_early() : HGTX's first call before the agent's constructor: starts the
 *  session's core (config, aggregator, exit paths) now, HGTX records from here on; the other
 *  sources start in the constructor. Returns 1 when HGTX records now. */
int pa_session_early(void);

extern _Atomic int pa_finish_signal; /* set before pa_finish() when a signal ends the session */
extern _Atomic int pa_finish_by_exec; /* set before pa_finish() when an exec ends the session */
extern _Atomic int pa_finish_state;  /* 0 not started, 1 running, 2 done */

/* ---- sources.c ---- */

/*! pa_sources_init() : init() of every source whose mask meets `trace` (PA_SRC_* of
 *  PROFAGENT_TRACE), in table order; checks once that the record-kind ranges are disjoint.
 *  Returns `trace` without the bits of sources whose init failed: the mask to record with. */
uint32_t pa_sources_init(uint32_t trace);

/*! pa_sources_finish() : finish(budget_ns) of every source that init()ed, in reverse order. */
void pa_sources_finish(uint64_t budget_ns);

/*! pa_sources_exit_thread() : exit_thread() of every source that init()ed, in reverse order, on
 *  the thread whose exit() ends the session. */
void pa_sources_exit_thread(void);

/*! pa_sources_fork_child() : fork_child() of every source that init()ed. */
void pa_sources_fork_child(void);

/* ---- exitpaths.c ---- */

/* ---- handoff.c ---- */
/*! pa_handoff_install() : registers the exit's hand-off of the DB's rest (PROFAGENT_EXIT_LOAD)
 *  with the writer (pa_writer_stream_handoff). */
void pa_handoff_install(void);
/*! pa_session_under_run() : 1 when `profagent run` started this process or an ancestor
 *  (PROFAGENT_RUN_PID in the environment at the constructor), else 0. */
int pa_session_under_run(void);
/*! pa_handoff_wait() : under `profagent run` (pa_session_under_run), after a hand-off: waits
 *  until the finisher completed the DB, at most PA_FINISH_WAIT_MS, or until stop() says a signal
 *  wants the process to end (polled every 5 ms). No-op otherwise. */
void pa_handoff_wait(int (*stop)(void));
/*! pa_session_db_failed() : the one message saying the DB could not be written (the limit that
 *  stopped it, what was kept), at the agent's log (the finisher: its note file). */
void pa_session_db_failed(void);
/*! pa_handoff_pid() : the finisher's pid once the exit handed the DB over, else 0. */
long pa_handoff_pid(void);

/*! pa_exitpaths_init() : (constructor, after the aggregator opened) resolves the real exec
 *  functions and installs the finalizing handler for SIGTERM,
 *  SIGINT, SIGHUP and SIGQUIT where their disposition is still the default. */
void pa_exitpaths_init(void);

/*! pa_exitpaths_start_finisher() : starts the finisher thread (with the session's other threads,
 *  at its first record); without it every ending runs pa_finish() on the ending thread. */
void pa_exitpaths_start_finisher(void);

/*! pa_exitpaths_finish_bounded() : async-signal-safe: asks the finisher thread to run
 *  pa_finish() and waits for it while the agent's threads make progress: at most until they used
 *  no CPU for PROFAGENT_EXIT_TIMEOUT_MS + 1 s, or 10 times that in all. `sig` is the signal
 *  ending the session (0: exec or _exit). Returns 0 once finished or timed out; 1 when `sig`
 *  interrupted pa_finish() on this very thread: nothing is waited for, pa_finish() raises
 *  the signal once it is done (pa_exitpaths_take_deferred), the handler just returns. */
int pa_exitpaths_finish_bounded(int sig);

/*! pa_exitpaths_signal_in_finish() : the fatal signal that came while pa_finish() ran (any
 *  thread; 0: none): the exit's DB load stops for it. Async-signal-safe, lock-free. */
int pa_exitpaths_signal_in_finish(void);

/*! pa_exitpaths_finish_elsewhere() : the exit handler's ending: unless called on the finisher
 *  thread itself, has it run pa_finish() while this thread waits with raw syscalls, bounded as in
 *  pa_exitpaths_finish_bounded(0) (never allocates on this thread: it may be a signal handler's
 *  exit() that interrupted malloc). Returns 1 when the finisher took it (done or timed out), 0
 *  when the caller must run pa_finish() itself (no finisher thread, or this is it). */
int pa_exitpaths_finish_elsewhere(void);

/*! pa_exitpaths_watch_exit() : (the exit handler, after pa_finish() ran on this thread) lets the
 *  watchdog watch the rest of the exit (pa_exitwatch_arm); no-op without a finisher, on
 *  it, or in another process than the session's. Async-signal-safe. */
void pa_exitpaths_watch_exit(void);

/*! pa_exitwatch_note_status() : (the exit() interposer, the ending's owner) remembers the status
 *  exit() was called with (the first call's); async-signal-safe, never allocates. */
void pa_exitwatch_note_status(int status);

/*! pa_exitwatch_start() : (with the session's other threads) starts the exit watchdog's thread,
 *  which sleeps on a futex until pa_exitwatch_arm(); no thread when it cannot be created. */
void pa_exitwatch_start(void);

/*! pa_exitwatch_arm() : (once the agent's exit part is done, or its wait gave up on the finisher)
 *  returns 0 at once unless exit() was called (pa_exitwatch_note_status) and the watchdog's thread
 *  runs; else wakes that thread, which from then on watches the process until it ends and, when
 *  every application thread waited on a private futex without a timeout or in
 *  pause()/sigsuspend() and none used CPU for PROFAGENT_EXIT_TIMEOUT_MS + 1 s (a deadlock nothing
 *  can end), ends it by exit_group(status) after one warning, and returns 1. Async-signal-safe:
 *  raw syscalls only, here and on the watchdog's thread once started. */
int pa_exitwatch_arm(void);

/*! pa_exitwatch_stuck_wait() : 1 when a /proc/<pid>/task/<tid>/syscall text (NUL-terminated:
 *  "nr a0 a1 ..." with hex arguments, or "running") is a wait only the process's own threads can
 *  end and no timeout ends (untimed private futex wait or PI lock, pause, rt_sigsuspend), else 0. */
int pa_exitwatch_stuck_wait(const char *sc);

/*! pa_exitpaths_take_deferred() : the signal deferred by pa_exitpaths_finish_bounded() (0:
 *  none), cleared. */
int pa_exitpaths_take_deferred(void);

extern _Atomic int pa_finish_tid; /* gettid() of the thread running pa_finish() */

/* ---- signals.c ---- */

/*! pa_signals_install() : (from pa_exitpaths_init) installs the finalizing handler for SIGTERM,
 *  SIGINT, SIGHUP and SIGQUIT where the disposition is SIG_DFL. The application never sees it:
 *  sigaction()/signal()/bsd_signal()/sysv_signal()/__sysv_signal()/sigset()/siginterrupt() are
 *  interposed so queries report SIG_DFL as the kernel held it, the app's own actions replace the
 *  agent's handler, and a SIG_DFL set while the session runs is taken back by the agent. */
void pa_signals_install(void);

/*! pa_signals_die_by() : the default action of fatal signal `sig` now (SIG_DFL, raised,
 *  unblocked): the process ends as that signal would have ended it. */
void pa_signals_die_by(int sig);

#endif
