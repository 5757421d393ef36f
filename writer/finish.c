/* finish.c - the finisher's lock file "<DB>.finishing": held while a process other than the session completes its DB. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "writer.h"

/* Why flock() and not a pid: the kernel drops the lock when the last descriptor of the finisher
 * closes, also when it is killed, so a reader never waits for a pid that died or was reused;
 * and a flock (unlike an fcntl lock) belongs to the open file, which the session's fork child
 * inherits with the descriptor: the lock is held from before the fork to the finisher's end. */
static int lock_name(const char *db, char *out, size_t size)
{
    return snprintf(out, size, "%s.finishing", db) < (int)size ? 0 : -1;
}

int pa_finish_lock_create(const char *db, char *path, size_t size)
{
    if (lock_name(db, path, size) != 0)
        return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void pa_finish_lock_set_pid(int fd, long pid)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", pid);
    if (pwrite(fd, buf, (size_t)n, 0) != n) {
        /* readers then name no pid; the lock itself is what they wait for */
    }
}

long pa_finish_running(const char *db)
{
    char path[PATH_MAX + 16], buf[32];
    if (lock_name(db, path, sizeof path) != 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    long pid = 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        pid = strtol(buf, NULL, 10);
        pid = pid > 0 ? pid : -1;
    }
    close(fd);
    return pid;
}

int pa_finish_wait(const char *db, unsigned timeout_ms, FILE *msg)
{
    long pid = pa_finish_running(db);
    if (!pid)
        return 0;
    if (msg) {
        char who[40] = "";
        if (pid > 0)
            snprintf(who, sizeof who, " (pid %ld)", pid);
        fprintf(msg, "profagent: %s is being completed by its finisher process%s; waiting for it (at most %u s)\n",
                db, who, timeout_ms / 1000);
        fflush(msg);
    }
    struct timespec step = {0, 10000000};
    for (unsigned waited = 0; waited < timeout_ms; waited += 10) {
        nanosleep(&step, NULL);
        if (!pa_finish_running(db))
            return 0;
    }
    if (msg)
        fprintf(msg, "profagent: the finisher of %s still runs after %u s; reading what it has committed so far\n", db,
                timeout_ms / 1000);
    return 1;
}

void pa_finish_lock_remove_stale(const char *db)
{
    char path[PATH_MAX + 16];
    if (lock_name(db, path, sizeof path) == 0 && !pa_finish_running(db))
        unlink(path);
}

/* Why every static mutex: a fork child inherits them in the state another thread left them, and
 * the DB's load takes them (allocator statistics, the page cache's LRU, the VFS's inode list). A
 * held one blocks here for ever; the session sees the child asleep and starts another. */
void pa_finish_probe_sqlite(void)
{
    static const int ids[] = {SQLITE_MUTEX_STATIC_MAIN, SQLITE_MUTEX_STATIC_MEM, SQLITE_MUTEX_STATIC_OPEN,
                              SQLITE_MUTEX_STATIC_PRNG, SQLITE_MUTEX_STATIC_LRU, SQLITE_MUTEX_STATIC_PMEM,
                              SQLITE_MUTEX_STATIC_APP1, SQLITE_MUTEX_STATIC_APP2, SQLITE_MUTEX_STATIC_APP3,
                              SQLITE_MUTEX_STATIC_VFS1, SQLITE_MUTEX_STATIC_VFS2, SQLITE_MUTEX_STATIC_VFS3};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        sqlite3_mutex *m = sqlite3_mutex_alloc(ids[i]);
        if (m) {
            sqlite3_mutex_enter(m);
            sqlite3_mutex_leave(m);
        }
    }
}
