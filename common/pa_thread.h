/* pa_thread.h - the agent's own threads: started with every signal blocked. */
#ifndef PA_THREAD_H
#define PA_THREAD_H

#include <pthread.h>
#include <stddef.h>

/*! pa_thread_spawn() : runs fn(arg) on a new thread whose signal mask blocks every signal, so the
 *  application's signals (and SIGXFSZ of a file size limit, SIGPIPE...) are only ever delivered to
 *  the application's own threads. The caller's signal mask is unchanged on return.
 *  th: NULL starts the thread detached; non-NULL receives the id of a joinable thread (the caller
 *  joins or detaches it). stack_bytes: 0 for the default stack size, else at least that much
 *  (PA_THREAD_STACK_WORKER or PA_THREAD_STACK_READER for the agent's threads).
 *  Returns 0, or the pthread_create() error number (no thread started; errno unchanged). */
/* Why the agent's threads get bounded stacks, not the default (8 MiB, RLIMIT_STACK): each stack
 * is reserved address space, so under a virtual memory limit (ulimit -v) the agent's threads took
 * room the application's own threads then lacked. The deepest stack an agent thread touched over
 * the integration suite (its stack mapping's resident size at the thread's end): 148 KiB the
 * finisher (the whole exit: SQLite's load of the spool's tail, symbols, the summary), 28 KiB the
 * DB thread (SQLite inserts and commits), 24 KiB a metrics or PC-sampling reader, 12 KiB the
 * aggregator and the spool thread. The bounds keep 7 times that or more, for deeper SQLite plans
 * and sanitizer builds (a thread that still ran out would stop at its guard page). */
#define PA_THREAD_STACK_WORKER (1u << 20)  /* aggregator, spool, DB thread, finisher */
#define PA_THREAD_STACK_READER (512u << 10) /* a device's metrics or PC-sampling reader */

int pa_thread_spawn(pthread_t *th, size_t stack_bytes, void *(*fn)(void *), void *arg);

/*! pa_thread_cpu_ms() : CPU time (user + system, ms) the calling thread used so far; for the
 *  debug log's account of where an agent thread's time went. */
double pa_thread_cpu_ms(void);

#endif
