/* exitpaths.h - how a session ends besides exit(): fatal signals, exec, _exit (internal to collector/). */
#ifndef PA_EXITPATHS_H
#define PA_EXITPATHS_H

/* ---- provided by init.c ---- */

/*! pa_finish() : the exit path (stop the aggregator within PROFAGENT_EXIT_TIMEOUT_MS, write the
 *  DB, print the summary, remove the spool). Runs once, only in the process owning the session;
 *  later calls return at once. Not async-signal-safe: see pa_exitpaths_finish_bounded(). */
void pa_finish(void);

/*! pa_session_active() : 1 in the owning process while the session has not been finalized. */
int pa_session_active(void);

extern _Atomic int pa_finish_signal; /* set before pa_finish() when a signal ends the session */
extern _Atomic int pa_finish_state;  /* 0 not started, 1 running, 2 done */

/* ---- provided by exitpaths.c ---- */

/*! pa_exitpaths_init() : (constructor, after the aggregator started) resolves the real exec
 *  functions, starts the finisher thread and installs the finalizing handler for SIGTERM,
 *  SIGINT, SIGHUP and SIGQUIT where their disposition is still the default. */
void pa_exitpaths_init(void);

/*! pa_exitpaths_finish_bounded() : async-signal-safe: asks the finisher thread to run
 *  pa_finish() and waits for it at most PROFAGENT_EXIT_TIMEOUT_MS + 1 s. `sig` is the signal
 *  ending the session (0: exec or _exit). Returns once finished or timed out. */
void pa_exitpaths_finish_bounded(int sig);

/* ---- provided by signals.c ---- */

/*! pa_signals_install() : (from pa_exitpaths_init) installs the finalizing handler for SIGTERM,
 *  SIGINT, SIGHUP and SIGQUIT where the disposition is SIG_DFL. The application never sees it:
 *  sigaction()/signal()/bsd_signal()/sysv_signal()/__sysv_signal()/sigset()/siginterrupt() are
 *  interposed so queries report SIG_DFL as the kernel held it, the app's own actions replace the
 *  agent's handler, and a SIG_DFL set while the session runs is taken back by the agent. */
void pa_signals_install(void);

#endif
