/* config.c - the table of PROFAGENT_* variables and its parser (unknown names, bad values warned). */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/pa_log.h"

extern char **environ;

pa_config_t pa_config;

/* 1 when the comma/space list s holds `word` (any case). */
static int flags_has_word(const char *s, const char *word)
{
    size_t wn = strlen(word);
    for (const char *p = s; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (n == wn && strncasecmp(p, word, n) == 0)
            return 1;
        p += n;
    }
    return 0;
}

static int parse_summary(const pa_config_var_t *v, const char *value, pa_config_t *cfg);

#define OFF(f) offsetof(pa_config_t, f)
/* The one spelling list of every yes/no variable, parsed and printed from here (any case): the
 * first four turn it on, the last four off. */
#define PA_BOOL_WORDS "1|true|yes|on|0|false|no|off"
#define PA_BOOL_NON 4
#define KI 1024ull
#define MI (1024ull * 1024ull)

/* One row per variable. Keep PROFAGENT_LOG first: it is applied before the others. */
const pa_config_var_t pa_config_vars[] = {
    {"PROFAGENT_LOG", PA_CFG_ENUM, OFF(log_level), "warn", "silent|error|warn|info|debug", 0, 0, NULL,
     "the agent's own diagnostics level"},
    {"PROFAGENT_ENABLE", PA_CFG_BOOL, OFF(enable), "1", PA_BOOL_WORDS, 0, 0, NULL,
     "0 turns the agent off entirely"},
    {"PROFAGENT_TRACE", PA_CFG_FLAGS, OFF(trace), "all", "hgtx|osrt|ze|mem|itt", 0, 0, NULL,
     "comma list of sources to record (also all, none)"},
    {"PROFAGENT_OUTPUT", PA_CFG_STRING, OFF(output), "profagent-%h-%p.db",
     "a path; %p pid, %h host, %r rank, %q{VAR}, %%", 0, 0, NULL,
     "output DB path template (default with a rank: profagent-%h-rank%r-%p.db)"},
    {"PROFAGENT_OVERWRITE", PA_CFG_BOOL, OFF(overwrite), "0", PA_BOOL_WORDS, 0, 0, NULL,
     "1 replaces an existing DB instead of adding -1, -2, ..."},
    {"PROFAGENT_SUMMARY", PA_CFG_CUSTOM, OFF(summary), "stderr", "stderr|stdout|none|file:PATH", 0, 0,
     parse_summary, "where the exit summary goes"},
    {"PROFAGENT_RING_SIZE", PA_CFG_SIZE, OFF(ring_size), "4M", "bytes, suffix K or M, 4K..1G", 4 * KI,
     1024 * MI, NULL, "per-thread ring size"},
    /* collector/emit_full.c pa_emit_full(): wait holds the calling thread (bounded) so that no
     * Level Zero, HGTX, OSRT or ITT record is lost; drop leaves the application's timing alone */
    {"PROFAGENT_RING_FULL", PA_CFG_ENUM, OFF(ring_full), "wait", "wait|drop", 0, 0, NULL,
     "a record that finds its thread's ring full: wait for room (the thread is held) or drop"},
    {"PROFAGENT_OSRT_THRESHOLD_NS", PA_CFG_UINT, OFF(osrt_threshold_ns), "1000", "ns, 0..1000000000000", 0,
     1000000000000ull, NULL, "OS runtime calls shorter than this are not recorded"},
    {"PROFAGENT_CALLSTACK_DEPTH", PA_CFG_UINT, OFF(callstack_depth), "32", "frames, 0..256", 0, 256, NULL,
     "native frames captured per device allocation"},
    {"PROFAGENT_CALLSTACK_GROUPS", PA_CFG_STRING, OFF(callstack_groups), "", "name=re1/re2;... rules", 0, 0,
     NULL, "call-stack group rules for device memory"},
    {"PROFAGENT_SPOOL_DIR", PA_CFG_STRING, OFF(spool_dir), "", "a directory", 0, 0, NULL,
     "where the temporary spool goes (default: the DB's directory)"},
    /* the agent's timestamp events grow by pools of 1024 per context up to this bound; device
     * operations beyond it in flight at once are counted as uncollected */
    {"PROFAGENT_ZE_MAX_EVENTS", PA_CFG_SIZE, OFF(ze_max_events), "256K", "events, suffix K or M, 1K..4M",
     KI, 4 * MI, NULL, "Level Zero timestamp events the agent keeps in flight per context"},
    /* how ze calls are intercepted (collector/ze_entry.c): auto = the loader's entry points when
     * provably equivalent, else the loader's tracing layer */
    {"PROFAGENT_ZE_INTERCEPT", PA_CFG_ENUM, OFF(ze_intercept), "auto", "auto|entry|tracer", 0, 0, NULL,
     "Level Zero interception: auto, entry (the loader's entry points), tracer (its tracing layer)"},
    {"PROFAGENT_EXIT_TIMEOUT_MS", PA_CFG_UINT, OFF(exit_timeout_ms), "5000", "ms, 1..3600000", 1, 3600000,
     NULL, "longest wait for the aggregator at exit"},
    /* session/handoff.c: a large rest of the DB's load at exit goes to a finisher process, which
     * holds SQLite's EXCLUSIVE lock on the DB from before the process ends until the DB is
     * complete: another program's SQLite waits (busy handler) or gets SQLITE_BUSY, never a part */
    {"PROFAGENT_EXIT_LOAD", PA_CFG_ENUM, OFF(exit_load), "auto", "auto|inline|handoff", 0, 0, NULL,
     "who completes the DB at exit: auto (a finisher process when much is left), inline, handoff"},
    /* writer/stream.c: the DB thread commits the rows at most this many ms apart while the
     * program runs, and 50 ms apart while 32 KiB of spool wait (the bound keeps the exit's tail
     * short). Why 500, not 200: each look reopens the DB (~0.7 ms: SQLite parses the whole
     * schema again) and commits and closes it (~0.8 ms), whatever it loads: samples/gemm's ~8 k
     * records per second paid 6 looks for ~6 ms of rows (DB thread 25.5 -> 15.9 ms of CPU, 5
     * alternated runs); a kill still finds everything up to ~0.55 s before it in the DB */
    {"PROFAGENT_DB_COMMIT_MS", PA_CFG_UINT, OFF(db_commit_ms), "500", "ms, 0..60000", 0, 60000, NULL,
     "the DB is committed while the program runs, every this many ms (50 while 32 KiB of spool wait); 0 writes it at exit only"},
    /* 4 bytes per sample: the default 2M = 8 MiB is the bound on the aggregator's median
     * state (peak RSS must not follow the run length); medians of keys beyond it come from the
     * DB's rows (at exit when cheap, else by the first reader) */
    {"PROFAGENT_MEDIAN_BUDGET", PA_CFG_SIZE, OFF(median_budget), "2M", "samples, suffix K or M, 1K..1G",
     KI, 1024 * MI, NULL, "samples kept for exact medians (4 bytes each)"},
    /* encoded by hwcounters/ (libpfm4); empty = off */
    {"PROFAGENT_HOST_COUNTERS", PA_CFG_STRING, OFF(host_counters), "", "a comma list of libpfm4 event names",
     0, 0, NULL, "host counters per thread and HGTX range (profagent counters lists names)"},
    {"PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO", PA_CFG_BOOL, OFF(symbols_system_debuginfo), "0", PA_BOOL_WORDS, 0, 0, NULL,
     "1 reads the DWARF (source lines) of /lib, /usr/lib libraries at exit"},
    {"PROFAGENT_PC_SAMPLING", PA_CFG_BOOL, OFF(pc_sampling), "0", PA_BOOL_WORDS, 0, 0, NULL,
     "1 samples EU stalls per instruction (EuStallSampling streamers; sets ZET_ENABLE_METRICS=1)"},
    {"PROFAGENT_PC_SAMPLING_PERIOD_NS", PA_CFG_UINT, OFF(pc_sampling_period_ns), "100000", "ns, 1000..1000000000",
     1000, 1000000000, NULL, "EU-stall sampling period (the driver rounds it to what it supports)"},
    /* opened by hwcounters/devmetrics*.c; an unknown group is warned about there (naming those that exist) */
    {"PROFAGENT_METRICS", PA_CFG_STRING, OFF(metrics), "", "a metric group name of the device (e.g. ComputeBasic)",
     0, 0, NULL, "time-based device metric group streamed per device (sets ZET_ENABLE_METRICS=1)"},
    {"PROFAGENT_RANK", PA_CFG_STRING, OFF(rank), "", "a decimal number 0..2147483647", 0, 0, NULL,
     "the process's rank, before any launcher's variable (README: Ranks)"},
    {"PROFAGENT_METRICS_PERIOD_US", PA_CFG_UINT, OFF(metrics_period_us), "100", "us, 10..1000000", 10, 1000000,
     NULL, "device metric sampling period (the driver rounds it to what it supports)"},
    /* a test fault, read by the clock itself at its first calibration (common/pa_clock.h): the row
     * is here so the name is known and a bad value is named */
    {"PROFAGENT_FAULT_TSC_PAIRS", PA_CFG_UINT, OFF(fault_tsc_pairs), "0", "pairs, 0..1000000000", 0, 1000000000,
     NULL, "test fault: the first N TSC calibration readings count as interrupted"},
};
const size_t pa_config_nvars = sizeof pa_config_vars / sizeof pa_config_vars[0];

/* Index of `word` (length n) in "a|b|c", or -1. Case-insensitive. */
static int word_index(const char *accepted, const char *word, size_t n)
{
    int i = 0;
    for (const char *p = accepted; *p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncasecmp(p, word, n) == 0)
            return i;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

static int parse_bool(const char *s, int *out)
{
    int i = word_index(PA_BOOL_WORDS, s, strlen(s));
    if (i < 0)
        return -1;
    *out = i < PA_BOOL_NON;
    return 0;
}

/* Decimal integer with an optional K/M/G suffix (only when `suffix`), bounded. */
static int parse_uint(const char *s, int suffix, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    uint64_t mul = 1;
    if (suffix && *end) {
        char c = (char)toupper((unsigned char)*end);
        mul = c == 'K' ? KI : c == 'M' ? MI : c == 'G' ? 1024 * MI : 0;
        if (!mul)
            return -1;
        end++;
        if (toupper((unsigned char)*end) == 'B' || toupper((unsigned char)*end) == 'I') /* 4KB, 1MiB */
            end += (toupper((unsigned char)end[0]) == 'I' && toupper((unsigned char)end[1]) == 'B') ? 2 : 1;
    }
    if (*end || (v && mul > UINT64_MAX / v) || v * mul < min || v * mul > max)
        return -1;
    *out = v * mul;
    return 0;
}

/* "hgtx,osrt" -> mask; "all" and "none" accepted. Words not in `accepted` are skipped and
 * copied (comma-separated) into bad[bsize] so the caller can name exactly those; returns the
 * number of accepted words (-1 when there was none at all). */
static int parse_flags(const char *accepted, const char *s, uint32_t *out, char *bad, size_t bsize)
{
    uint32_t mask = 0;
    int good = 0;
    size_t bl = 0;
    if (bsize)
        bad[0] = '\0';
    for (const char *p = s; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (n == 0)
            break;
        int i = word_index(accepted, p, n);
        if (i >= 0)
            mask |= 1u << i, good++;
        else if (n == 3 && strncasecmp(p, "all", 3) == 0)
            mask |= PA_SRC_ALL, good++;
        else if (n == 4 && strncasecmp(p, "none", 4) == 0)
            good++;
        else if (bl + n + 2 < bsize) {
            bl += (size_t)snprintf(bad + bl, bsize - bl, "%s%.*s", bl ? "," : "", (int)n, p);
        }
        p += n;
    }
    *out = mask;
    return good ? good : -1;
}

static int parse_summary(const pa_config_var_t *v, const char *value, pa_config_t *cfg)
{
    (void)v;
    if (strncmp(value, "file:", 5) == 0) {
        size_t n = strlen(value + 5);
        if (n == 0 || n >= sizeof cfg->summary_path)
            return -1;
        memcpy(cfg->summary_path, value + 5, n + 1);
        cfg->summary = PA_SUMMARY_FILE;
        return 0;
    }
    int i = word_index("stderr|stdout|none", value, strlen(value));
    if (i < 0)
        return -1;
    cfg->summary = i;
    cfg->summary_path[0] = '\0';
    return 0;
}

/* Stores `value` into the field of `v`. Returns 0, or -1 when the value is not accepted. */
static int apply(const pa_config_var_t *v, const char *value, pa_config_t *cfg)
{
    void *f = (char *)cfg + v->offset;
    switch (v->type) {
    case PA_CFG_BOOL:
        return parse_bool(value, f);
    case PA_CFG_UINT:
    case PA_CFG_SIZE:
        return parse_uint(value, v->type == PA_CFG_SIZE, v->min, v->max, f);
    case PA_CFG_ENUM: {
        int i = word_index(v->accepted, value, strlen(value));
        return i < 0 ? -1 : (*(int *)f = i, 0);
    }
    case PA_CFG_FLAGS: {
        char bad[256];
        return parse_flags(v->accepted, value, f, bad, sizeof bad) < 0 || bad[0] ? -1 : 0;
    }
    case PA_CFG_STRING: {
        size_t n = strlen(value);
        if (n >= PA_CFG_STR_MAX)
            return -1;
        memcpy(f, value, n + 1);
        return 0;
    }
    case PA_CFG_CUSTOM:
        return v->parse(v, value, cfg);
    }
    return -1;
}

static const pa_config_var_t *find_var(const char *name, size_t n)
{
    for (size_t i = 0; i < pa_config_nvars; i++)
        if (strlen(pa_config_vars[i].name) == n && memcmp(pa_config_vars[i].name, name, n) == 0)
            return &pa_config_vars[i];
    return NULL;
}

/* Each configuration message of this process is printed once: an exec'd image of the process
 * is told (pa_config_load) which ones its earlier images printed, by their hashes. */
#define PA_CFG_SAID_MAX 16
static uint64_t said[PA_CFG_SAID_MAX];    /* printed by this process (this image or an earlier one) */
static int nsaid, ninherited;             /* said[0..ninherited) came from the earlier images (the
                                             rest is this parse's: a second parse says them again) */

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}
#define FNV_START 1469598103934665603ull

__attribute__((format(printf, 1, 2))) static void cfg_warn(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    uint64_t h = fnv1a(FNV_START, msg, n > 0 ? ((size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) : 0);
    for (int i = 0; i < nsaid; i++)
        if (said[i] == h)
            return; /* this process said it already */
    pa_warn("config", "%s", msg);
    if (nsaid < PA_CFG_SAID_MAX)
        said[nsaid++] = h;
}

/* What `v` accepts, as the messages print it. */
static const char *accepted_text(const pa_config_var_t *v)
{
    if (v->type == PA_CFG_BOOL)
        return "1, true, yes, on to turn it on; 0, false, no, off to turn it off; any case";
    return v->type == PA_CFG_FLAGS ? NULL : v->accepted; /* lists: printed with all|none */
}

/* Applies one environment entry of a known variable; warns on a bad value. An empty value
 * is a mistake (PROFAGENT_OUTPUT= would name no file, PROFAGENT_TRACE= would record nothing
 * silently): warned, default kept. In a list, only the unknown words are dropped. */
static int apply_entry(const pa_config_var_t *v, const char *value, pa_config_t *cfg)
{
    if (v->offset == OFF(rank)) /* read and checked once, with the launchers' variables, by common/pa_rank.c */
        return 0;
    const char *acc = v->type == PA_CFG_FLAGS ? "|all|none" : "";
    const char *words = accepted_text(v) ? accepted_text(v) : v->accepted;
    if (value[0] == '\0' && v->def[0] != '\0') {
        apply(v, v->def, cfg);
        cfg_warn("%s is set but empty (accepted: %s%s); using the default \"%s\"", v->name, words, acc,
                 v->def);
        return 1;
    }
    if (value[0] == '\0' && v->offset == OFF(spool_dir)) { /* empty: as unset, but said like the others */
        cfg_warn("%s is set but empty (accepted: %s); using the default (the DB's directory)", v->name,
                 v->accepted);
        return 1;
    }
    if (value[0] == '\0' && v->offset == OFF(metrics)) { /* an opt-in left empty: said, stays off */
        cfg_warn("%s is set but empty (accepted: %s); no device metrics are collected", v->name,
                 v->accepted);
        return 1;
    }
    /* an opt-in naming a group or events: the yes/no words that mean "off" are taken as off (a
     * group or event named "0" or "off" does not exist), the others are names */
    if ((v->offset == OFF(metrics) || v->offset == OFF(host_counters)) &&
        word_index(PA_BOOL_WORDS, value, strlen(value)) >= PA_BOOL_NON) {
        apply(v, "", cfg);
        return 0;
    }
    if (v->type == PA_CFG_FLAGS) {
        char bad[256];
        if (parse_flags(v->accepted, value, (uint32_t *)((char *)cfg + v->offset), bad, sizeof bad) > 0) {
            int all = flags_has_word(value, "all"), none = flags_has_word(value, "none");
            if (all && none) /* all wins: parse_flags() ORs the words, none adds nothing */
                cfg_warn("%s=\"%.200s\": both all and none are given; all applies (every source is recorded)",
                         v->name, value);
            if (!bad[0])
                return all && none;
            cfg_warn("%s: \"%s\" ignored (accepted: %s%s); the rest of \"%.200s\" applies", v->name, bad,
                     v->accepted, acc, value);
            return 1;
        }
    }
    if (apply(v, value, cfg) == 0)
        return 0;
    apply(v, v->def, cfg); /* a failed parse may have half-written the field */
    cfg_warn("%s=\"%.200s\" is not accepted (accepted: %s%s); using the default \"%s\"", v->name, value,
             words, acc, v->def);
    return 1;
}

/* "PROFAGENT_LOG, PROFAGENT_ENABLE, ..." into buf (cut when too long). */
static void known_names(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < pa_config_nvars && used + 1 < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", pa_config_vars[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int pa_config_parse(pa_config_t *cfg, char *const *envp)
{
    memset(cfg, 0, sizeof *cfg);
    nsaid = ninherited;
    for (size_t i = 0; i < pa_config_nvars; i++)
        apply(&pa_config_vars[i], pa_config_vars[i].def, cfg);
    int warnings = 0;
    /* Pass 0: PROFAGENT_LOG only (sets the level the other messages obey); pass 1: the rest. */
    for (int pass = 0; pass < 2; pass++) {
        for (char *const *e = envp; e && *e; e++) {
            if (strncmp(*e, "PROFAGENT_", 10) != 0)
                continue;
            const char *eq = strchr(*e, '=');
            size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
            if (n == sizeof PA_CONFIG_ONCE_VAR - 1 && memcmp(*e, PA_CONFIG_ONCE_VAR, n) == 0)
                continue; /* the agent's own note across exec (pa_config_load) */
            if (n == sizeof PA_CONFIG_RUN_PID_VAR - 1 && memcmp(*e, PA_CONFIG_RUN_PID_VAR, n) == 0)
                continue; /* `profagent run`'s mark (session.c) */
            const pa_config_var_t *v = find_var(*e, n);
            int is_log = v == &pa_config_vars[0];
            if (pass == 0 && is_log) {
                warnings += apply_entry(v, eq ? eq + 1 : "", cfg);
                pa_log_level = cfg->log_level;
            } else if (pass == 1 && v && !is_log) {
                warnings += apply_entry(v, eq ? eq + 1 : "", cfg);
            } else if (pass == 1 && !v) {
                char known[768];
                known_names(known, sizeof known);
                cfg_warn("unknown variable %.*s ignored (known: %s)", (int)(n > 100 ? 100 : n), *e,
                         known);
                warnings++;
            }
        }
    }
    pa_log_level = cfg->log_level;
    if (cfg->pc_sampling) /* opt-in sources get their PROFAGENT_TRACE bit from their own variable */
        cfg->trace |= PA_SRC_PCSAMP;
    if (cfg->metrics[0])
        cfg->trace |= PA_SRC_DEVMET;
    return warnings;
}

/* The PROFAGENT_* entries of /proc/self/environ as a NULL-terminated array (malloc'd, kept):
 * the environment before the C library published `environ` (a session started from the
 * executable's preinit_array). */
static char **proc_environ(void)
{
    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (ssize_t r; buf && (r = read(fd, buf + n, cap - n)) > 0;) {
        n += (size_t)r;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    size_t count = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        count++;
    char **env = calloc(count + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; env && i < n; i += strlen(buf + i) + 1)
        if (strncmp(buf + i, "PROFAGENT_", 10) == 0)
            env[k++] = buf + i;
    return env;
}

/* "pid:starttime:" of this process: the kernel's start time (/proc/self/stat field 22, ticks
 * since boot) and the pid stay the same across exec and together name one process. */
static void once_key(char *out, size_t size)
{
    char stat[1024] = "";
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
    if (fd >= 0)
        close(fd);
    stat[n > 0 ? n : 0] = '\0';
    const char *p = strrchr(stat, ')'); /* after the command name, which may hold spaces */
    for (int field = 2; p && *p && field < 22; p++)
        if (*p == ' ')
            field++;
    unsigned long long start = p ? strtoull(p, NULL, 10) : 0;
    snprintf(out, size, "%ld:%llu:", (long)getpid(), start);
}

static char once_entry[sizeof PA_CONFIG_ONCE_VAR + 48 + 17 * PA_CFG_SAID_MAX]; /* VAR=pid:start:h.h.h */
static pid_t once_pid;

int pa_config_load(void)
{
    static char *const none[] = {NULL};
    char **env = environ;
    if (!env) /* before libc set it up (preinit_array): read what the kernel passed */
        env = proc_environ();
    if (!env)
        env = (char **)none;
    char key[64];
    once_key(key, sizeof key);
    const char *prev = NULL;
    for (char **e = env; *e; e++)
        if (strncmp(*e, PA_CONFIG_ONCE_VAR "=", sizeof PA_CONFIG_ONCE_VAR) == 0)
            prev = *e + sizeof PA_CONFIG_ONCE_VAR;
    nsaid = ninherited = 0;
    /* the messages the images that exec'd this one printed (same process) */
    if (prev && strncmp(prev, key, strlen(key)) == 0)
        for (const char *p = prev + strlen(key); *p && nsaid < PA_CFG_SAID_MAX;) {
            char *end;
            said[nsaid++] = strtoull(p, &end, 16);
            p = *end == '.' ? end + 1 : "";
        }
    ninherited = nsaid;
    int n = pa_config_parse(&pa_config, env);
    ninherited = 0;
    if (nsaid > 0) {
        size_t len = (size_t)snprintf(once_entry, sizeof once_entry, "%s=%s", PA_CONFIG_ONCE_VAR, key);
        for (int i = 0; i < nsaid && len < sizeof once_entry; i++)
            len += (size_t)snprintf(once_entry + len, sizeof once_entry - len, "%s%016llx", i ? "." : "",
                                    (unsigned long long)said[i]);
        once_pid = getpid();
    }
    if (prev && env == environ)
        unsetenv(PA_CONFIG_ONCE_VAR); /* the application never sees the agent's note */
    return n;
}

const char *pa_config_exec_entry(void)
{
    /* a fork child is another process: its exec'd image has not said them yet */
    return once_entry[0] && getpid() == once_pid ? once_entry : NULL;
}

void pa_config_print_help(void)
{
    for (size_t i = 0; i < pa_config_nvars; i++) {
        const pa_config_var_t *v = &pa_config_vars[i];
        fprintf(stderr, "  %-28s default \"%s\", accepted: %s\n      %s\n", v->name, v->def, v->accepted, v->help);
    }
}
