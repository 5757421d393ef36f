/* pa_thread.h - the agent's own threads: started with every signal blocked. */
#ifndef PA_THREAD_H
#define PA_THREAD_H

#include <pthread.h>
#include <stddef.h>

/*! pa_thread_spawn() : runs fn(arg) on a new thread whose signal mask blocks every signal, so the
 *  application's signals (and SIGXFSZ of a file size limit, SIGPIPE...) are only ever delivered to
 *  the application's own threads. The caller's signal mask is unchanged on return.
 *  th: NULL starts the thread detached; non-NULL receives the id of a joinable thread (the caller
 *  joins or detaches it). stack_bytes: 0 for the default stack size, else at least that much.
 *  Returns 0, or the pthread_create() error number (no thread started; errno unchanged). */
int pa_thread_spawn(pthread_t *th, size_t stack_bytes, void *(*fn)(void *), void *arg);

/*! pa_thread_cpu_ms() : CPU time (user + system, ms) the calling thread used so far; for the
 *  debug log's account of where an agent thread's time went. */
double pa_thread_cpu_ms(void);

#endif
