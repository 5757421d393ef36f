/* pa_names.c - name tables for the record enums (OS runtime function names). */
#include "pa_names.h"

#include "pa_record.h"

/* Indexed by enum pa_osrt_func; designated initialisers keep the table in step with the enum. */
static const char *const osrt_names[PA_OSRT_COUNT] = {
    [PA_OSRT_PTHREAD_COND_WAIT] = "pthread_cond_wait",
    [PA_OSRT_PTHREAD_COND_TIMEDWAIT] = "pthread_cond_timedwait",
    [PA_OSRT_PTHREAD_MUTEX_LOCK] = "pthread_mutex_lock",
    [PA_OSRT_PTHREAD_JOIN] = "pthread_join",
    [PA_OSRT_POLL] = "poll",
    [PA_OSRT_PPOLL] = "ppoll",
    [PA_OSRT_SELECT] = "select",
    [PA_OSRT_PSELECT] = "pselect",
    [PA_OSRT_EPOLL_WAIT] = "epoll_wait",
    [PA_OSRT_EPOLL_PWAIT] = "epoll_pwait",
    [PA_OSRT_NANOSLEEP] = "nanosleep",
    [PA_OSRT_CLOCK_NANOSLEEP] = "clock_nanosleep",
    [PA_OSRT_USLEEP] = "usleep",
    [PA_OSRT_SLEEP] = "sleep",
    [PA_OSRT_SEM_WAIT] = "sem_wait",
    [PA_OSRT_SEM_TIMEDWAIT] = "sem_timedwait",
    [PA_OSRT_READ] = "read",
    [PA_OSRT_WRITE] = "write",
    [PA_OSRT_OPEN] = "open",
    [PA_OSRT_WAITPID] = "waitpid",
    [PA_OSRT_PTHREAD_RWLOCK_RDLOCK] = "pthread_rwlock_rdlock",
    [PA_OSRT_PTHREAD_RWLOCK_WRLOCK] = "pthread_rwlock_wrlock",
    [PA_OSRT_PTHREAD_BARRIER_WAIT] = "pthread_barrier_wait",
};

const char *pa_osrt_name(uint32_t func)
{
    if (func >= PA_OSRT_COUNT || !osrt_names[func])
        return "unknown";
    return osrt_names[func];
}
