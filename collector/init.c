/* init.c - the agent's lifecycle: constructor, session meta, aggregator start, exit path, fork. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "../agg/agg.h"
#include "../common/pa_log.h"
#include "../common/pa_outname.h"
#include "../writer/writer.h"
#include "ze.h"

static _Atomic int init_done;   /* constructor ran (it may be called twice: run once) */
static _Atomic int finish_done; /* exit path ran (atexit handler or destructor, first wins) */
static pid_t owner_pid;         /* the process whose session this is (not a fork child) */
static int agg_running;

static char db_path[PATH_MAX];
static char spool_path[PATH_MAX + 16];
static char hostname[256];
static char cmdline[8192];
static pa_session_meta_t meta;

/* argv joined by spaces, from /proc/self/cmdline (works before main and in any library). */
static void read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, cmdline, sizeof cmdline - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        strcpy(cmdline, "?");
        return;
    }
    while (n > 0 && cmdline[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (cmdline[i] == '\0')
            cmdline[i] = ' ';
    cmdline[n] = '\0';
}

static uint64_t clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void record_meta(void)
{
    meta.pid = (uint32_t)getpid();
    if (gethostname(hostname, sizeof hostname) != 0)
        strcpy(hostname, "unknown");
    hostname[sizeof hostname - 1] = '\0';
    meta.hostname = hostname;
    read_cmdline();
    meta.cmdline = cmdline;
    meta.start_wall_ns = clock_ns(CLOCK_REALTIME);
    meta.start_mono_ns = pa_clock_ns();
    const char *rank = getenv("PMI_RANK");
    if (!rank)
        rank = getenv("OMPI_COMM_WORLD_RANK");
    meta.rank = rank ? atoi(rank) : -1;
}

/* DB name from PROFAGENT_OUTPUT; spool "<spool dir>/<db base name>.spool.zst". */
static int choose_paths(void)
{
    if (pa_outname_resolve(pa_config.output, pa_config.overwrite, db_path, sizeof db_path) < 0) {
        pa_err("output", "PROFAGENT_OUTPUT=\"%s\" gives no usable file name (too long or no free suffix); "
               "profiling is off", pa_config.output);
        return -1;
    }
    const char *slash = strrchr(db_path, '/');
    const char *base = slash ? slash + 1 : db_path;
    int n;
    if (pa_config.spool_dir[0])
        n = snprintf(spool_path, sizeof spool_path, "%s/%s.spool.zst", pa_config.spool_dir, base);
    else
        n = snprintf(spool_path, sizeof spool_path, "%s.spool.zst", db_path);
    if (n < 0 || (size_t)n >= sizeof spool_path) {
        pa_err("output", "spool path for \"%s\" is too long; profiling is off", db_path);
        return -1;
    }
    return 0;
}

static FILE *summary_stream(int *close_it)
{
    *close_it = 0;
    switch (pa_config.summary) {
    case PA_SUMMARY_STDOUT:
        return stdout;
    case PA_SUMMARY_NONE:
        return NULL;
    case PA_SUMMARY_FILE: {
        char path[PATH_MAX];
        if (pa_outname_expand(pa_config.summary_path, path, sizeof path) < 0)
            return NULL;
        FILE *f = fopen(path, "w");
        if (!f)
            pa_warn("summary", "cannot write %s: %s; the summary goes to stderr", path, strerror(errno));
        *close_it = f != NULL;
        return f ? f : stderr;
    }
    default:
        return stderr;
    }
}

/* The exit path: stop the aggregator (bounded), write the DB, print the summary, remove the
 * spool. Runs once, only in the process that owns the session; never changes exit status. */
static void pa_finish(void)
{
    if (atomic_exchange(&finish_done, 1) || !agg_running || getpid() != owner_pid)
        return;
    int saved = errno;
    pa_guard_enter();
    /* Existing rings keep recording (the aggregator counts what comes after its last drain
     * as late); no new ring is created from now on. */
    atomic_store(&pa_thread_no_new_rings, 1);
    /* source detach hooks go here (e.g. the Level Zero tracer flushes before the last drain) */
    pa_ze_detach(pa_config.exit_timeout_ms * 1000000ull / 2); /* in-flight device ops, bounded */
    meta.end_mono_ns = pa_clock_ns();
    const pa_agg_results_t *res = pa_agg_stop(pa_config.exit_timeout_ms * 1000000ull);
    atomic_store(&pa_sources, 0);
    if (!res) {
        pa_err("agent", "the aggregator did not finish within PROFAGENT_EXIT_TIMEOUT_MS=%llu; no DB written "
               "(spool kept: %s)", (unsigned long long)pa_config.exit_timeout_ms, spool_path);
        goto out;
    }
    meta.complete = 1;
    if (pa_config.overwrite)
        unlink(db_path);
    int wrote = pa_writer_write_db(db_path, spool_path, &meta, res) == 0;
    int close_it;
    FILE *out = summary_stream(&close_it);
    if (out) {
        pa_summary_print(out, &meta, res, wrote ? db_path : NULL);
        fflush(out);
        if (close_it)
            fclose(out);
    }
    if (wrote)
        unlink(spool_path);
    else
        pa_err("agent", "the DB %s could not be written; spool kept: %s", db_path, spool_path);
    if (atomic_load(&pa_unrecorded))
        pa_warn("agent", "%llu events had no ring (no memory, or produced after the exit path began)",
                (unsigned long long)atomic_load(&pa_unrecorded));
out:
    pa_guard_leave();
    errno = saved;
}

static void pa_atexit_handler(void) { pa_finish(); }

__attribute__((destructor)) static void pa_destructor(void) { pa_finish(); }

/* Fork child: collection is OFF in the child (documented choice): the parent's rings and
 * aggregator thread do not exist there, and the parent's session name must not be reused.
 * An exec'd child starts a session of its own (LD_PRELOAD is inherited). */
static void pa_fork_child(void)
{
    if (!agg_running)
        return;
    atomic_store(&pa_sources, 0);
    atomic_store(&pa_thread_no_new_rings, 1);
    pa_thread_after_fork_child();
    pa_agg_after_fork_child();
    agg_running = 0;
    pa_info("agent", "fork: collection is off in child %ld (an exec'd program is profiled again)", (long)getpid());
}

/* Safe to call twice (a second call returns at once); also safe on a thread other than main. */
__attribute__((constructor)) static void pa_init(void)
{
    if (atomic_exchange(&init_done, 1))
        return;
    int saved = errno;
    pa_guard_enter();
    /* registered first, so it runs after the handlers the application registers later */
    atexit(pa_atexit_handler);
    pa_config_load();
    if (!pa_config.enable) {
        pa_info("agent", "PROFAGENT_ENABLE=0: the agent is off");
        goto out;
    }
    owner_pid = getpid();
    pa_osrt_init();
    record_meta();
    if (choose_paths() < 0)
        goto out;
    pa_thread_init();
    pa_agg_config_t acfg = {.spool_path = spool_path, .poll_interval_ns = 1000000, .median_budget = 16u << 20,
                            .zstd_level = 1};
    if (pa_agg_start(&acfg) != 0) {
        pa_err("agent", "cannot start the aggregator (spool %s): %s; profiling is off", spool_path,
               strerror(errno));
        goto out;
    }
    agg_running = 1;
    pthread_atfork(NULL, NULL, pa_fork_child);
    /* source attach hooks go here (e.g. the Level Zero tracer) */
    pa_ze_attach(); /* only when the app maps libze_loader (collector/ze.h) */
    atomic_store_explicit(&pa_sources, pa_config.trace, memory_order_release);
    pa_info("agent", "profiling %s into %s", cmdline, db_path);
out:
    pa_guard_leave();
    errno = saved;
}
