/* ze_stall.c - the exit flush's measure of time the device could not use: how long the process's
 * threads waited for a CPU (schedstat run_delay), so a starved engine is not taken for a hung one. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/pa_clock.h"
#include "collector.h"
#include "ze_internal.h"

/* The threads seen by the previous reading: their time on a CPU and waiting for one then. Only
 * the exit flush reads (one thread, once per process): no lock. Threads past the table are not
 * looked at. */
#define PA_ZE_STALL_TASKS 256
typedef struct task_times {
    uint64_t run_ns, wait_ns;
} task_times_t;
static struct {
    uint32_t tid;
    task_times_t t;
} seen[PA_ZE_STALL_TASKS];
static uint32_t nseen;
static int read_once;
static uint64_t read_at;  /* pa_clock_ns() of the previous reading */

/* The first two fields of /proc/self/task/<tid>/schedstat: ns on a CPU, ns runnable on a run
 * queue without running (the kernel's sched_info run_delay, present with CONFIG_SCHED_INFO, which
 * Debian and most distribution kernels enable). 0 ok, -1 unreadable (no schedstat, thread gone). */
static int task_times_read(const char *tid, task_times_t *out)
{
    char path[300], buf[128];
    snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p, *q;
    out->run_ns = strtoull(buf, &p, 10);
    if (p == buf || *p != ' ')
        return -1;
    out->wait_ns = strtoull(p + 1, &q, 10);
    return q == p + 1 ? -1 : 0;
}

/* 1 when thread tid is runnable (state R in /proc/self/task/<tid>/stat: on a CPU or waiting
 * for one), else 0. */
static int task_runnable(const char *tid)
{
    char path[300], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* "tid (comm) S ...": comm may hold spaces */
    return rp && rp[1] == ' ' && rp[2] == 'R';
}

/* What thread tid (times now `t`) did since the previous reading, in *d; records t. A thread not
 * seen before did all of t since then (born after it), except at the first reading (nothing). */
static void task_delta(uint32_t tid, const task_times_t *t, task_times_t *d)
{
    for (uint32_t i = 0; i < nseen; i++)
        if (seen[i].tid == tid) {
            d->run_ns = t->run_ns > seen[i].t.run_ns ? t->run_ns - seen[i].t.run_ns : 0;
            d->wait_ns = t->wait_ns > seen[i].t.wait_ns ? t->wait_ns - seen[i].t.wait_ns : 0;
            seen[i].t = *t;
            return;
        }
    if (nseen < PA_ZE_STALL_TASKS) {
        seen[nseen].tid = tid;
        seen[nseen++].t = *t;
    }
    if (read_once)
        *d = *t;
    else
        d->run_ns = d->wait_ns = 0;
}

/* Which threads count: neither the agent's own (the aggregator waits for a CPU at each of its
 * wake-ups: not device work) nor the caller (the flush itself: its being late to look does not
 * stop the device). Of those, a wait is credited only from a thread that waited for at least 3/4
 * of the time since the previous reading, i.e. was runnable about all of it: a driver thread
 * working through a backlog (simdev's engine under load 35: 98-140 ms of waits per 100 ms). One
 * that sleeps through a long kernel and waits for a CPU at each wake-up waited 12-67 % of it on
 * that machine; credited, those waits stretched the window past the kernel's end, and the flush
 * waited for all of the application's queued work (bounded by its timeout only).
 * The kernel adds a wait to run_delay only once the thread gets a CPU: a thread starved right now
 * shows nothing yet. So a counted thread that is runnable and barely ran (1/8 of the time) since
 * the previous reading is reported in *starved: the caller looks again shortly. */
uint64_t pa_ze_stall_wait_ns(int *starved)
{
    *starved = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    uint64_t most = 0, now = pa_clock_ns(), span = now - read_at;
    uint32_t self = (uint32_t)syscall(SYS_gettid);
    for (struct dirent *e; (e = readdir(d));) {
        task_times_t t, dt;
        if (e->d_name[0] == '.' || task_times_read(e->d_name, &t) != 0)
            continue;
        uint32_t tid = (uint32_t)strtoul(e->d_name, NULL, 10);
        task_delta(tid, &t, &dt);
        if (!read_once || tid == self || pa_thread_is_agent_tid(tid))
            continue;
        if (dt.wait_ns >= span / 4 * 3 && dt.wait_ns > most)
            most = dt.wait_ns;
        if (!*starved && dt.run_ns <= span / 8 && task_runnable(e->d_name))
            *starved = 1;
    }
    closedir(d);
    read_once = 1;
    read_at = now;
    return most;
}
