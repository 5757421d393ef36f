/* config.h - the PROFAGENT_* environment variables: one table, parsed once into pa_config. */
#ifndef PA_CONFIG_H
#define PA_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* Sources selectable with PROFAGENT_TRACE (bit mask in pa_config.trace; bit i = the i-th word
 * of its accepted list). A new source takes the next bit (common/pa_source.h: its descriptor's
 * mask); an opt-in one (enabled by its own variable, not by "all") sets its bit after parsing. */
enum pa_source {
    PA_SRC_HGTX = 1u << 0,
    PA_SRC_OSRT = 1u << 1,
    PA_SRC_ZE = 1u << 2,
    PA_SRC_MEM = 1u << 3,
    PA_SRC_ITT = 1u << 4,
    PA_SRC_ALL = 0x1fu,
    PA_SRC_PCSAMP = 1u << 5,  /* opt-in (PROFAGENT_PC_SAMPLING=1), not part of "all" */
    PA_SRC_DEVMET = 1u << 6,  /* opt-in (PROFAGENT_METRICS=<group>), not part of "all" */
};

/* PROFAGENT_SUMMARY destinations. */
enum pa_ze_intercept { PA_ZE_INTERCEPT_AUTO = 0, PA_ZE_INTERCEPT_ENTRY, PA_ZE_INTERCEPT_TRACER };
enum pa_ring_full { PA_RING_FULL_WAIT = 0, PA_RING_FULL_DROP };
enum pa_exit_load { PA_EXIT_LOAD_AUTO = 0, PA_EXIT_LOAD_INLINE, PA_EXIT_LOAD_HANDOFF };
enum pa_summary_dest { PA_SUMMARY_STDERR = 0, PA_SUMMARY_STDOUT, PA_SUMMARY_NONE, PA_SUMMARY_FILE };

/* Parsed configuration. Strings are owned by the struct (static storage per field, see
 * PA_CFG_STR_MAX) so the application may change its environment afterwards.
 * To add a variable: add a field here and ONE row in pa_config_vars[] (config.c). */
#define PA_CFG_STR_MAX 4096
typedef struct pa_config {
    int enable;                        /* PROFAGENT_ENABLE */
    uint32_t trace;                    /* PROFAGENT_TRACE: PA_SRC_* mask */
    int log_level;                     /* PROFAGENT_LOG: enum pa_log_level */
    char output[PA_CFG_STR_MAX];       /* PROFAGENT_OUTPUT: template, see common/pa_outname.h */
    int overwrite;                     /* PROFAGENT_OVERWRITE */
    int summary;                       /* PROFAGENT_SUMMARY: enum pa_summary_dest */
    char summary_path[PA_CFG_STR_MAX]; /* the PATH of file:PATH */
    uint64_t ring_size;                /* PROFAGENT_RING_SIZE: bytes per thread ring */
    int ring_full;                     /* PROFAGENT_RING_FULL: enum pa_ring_full */
    uint64_t osrt_threshold_ns;        /* PROFAGENT_OSRT_THRESHOLD_NS */
    uint64_t callstack_depth;          /* PROFAGENT_CALLSTACK_DEPTH: frames */
    char callstack_groups[PA_CFG_STR_MAX]; /* PROFAGENT_CALLSTACK_GROUPS: parsed by the mem source */
    char spool_dir[PA_CFG_STR_MAX];    /* PROFAGENT_SPOOL_DIR: "" = directory of the output DB */
    int ze_intercept;                  /* PROFAGENT_ZE_INTERCEPT: enum pa_ze_intercept */
    uint64_t exit_timeout_ms;          /* PROFAGENT_EXIT_TIMEOUT_MS */
    int exit_load;                     /* PROFAGENT_EXIT_LOAD: enum pa_exit_load */
    uint64_t db_commit_ms;             /* PROFAGENT_DB_COMMIT_MS: 0 = the DB is written at exit */
    uint64_t median_budget;            /* PROFAGENT_MEDIAN_BUDGET: samples kept for exact medians */
    uint64_t ze_max_events;            /* PROFAGENT_ZE_MAX_EVENTS: agent timestamp events in flight per context */
    char host_counters[PA_CFG_STR_MAX]; /* PROFAGENT_HOST_COUNTERS: libpfm4 names, parsed by hwcounters/ */
    int symbols_system_debuginfo;      /* PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO: separate debug info of /lib, /usr/lib */
    int pc_sampling;                   /* PROFAGENT_PC_SAMPLING: EU-stall sampling (sampling/) */
    uint64_t pc_sampling_period_ns;    /* PROFAGENT_PC_SAMPLING_PERIOD_NS */
    char metrics[PA_CFG_STR_MAX];      /* PROFAGENT_METRICS: device metric group name, "" = off */
    uint64_t metrics_period_us;        /* PROFAGENT_METRICS_PERIOD_US */
    char rank[PA_CFG_STR_MAX];         /* PROFAGENT_RANK: read (and checked) by common/pa_rank.c */
    uint64_t fault_tsc_pairs;          /* PROFAGENT_FAULT_TSC_PAIRS: checked here, read by common/pa_clock.h */
} pa_config_t;

/* Value kinds of the table. */
enum pa_cfg_type {
    PA_CFG_BOOL,    /* 0/1 (also false/true, no/yes, off/on) -> int */
    PA_CFG_UINT,    /* decimal integer in [min, max] -> uint64_t */
    PA_CFG_SIZE,    /* integer bytes with optional K/M/G suffix (x1024), in [min, max] -> uint64_t */
    PA_CFG_ENUM,    /* one word of `accepted` ("a|b|c") -> int index */
    PA_CFG_FLAGS,   /* comma list of words of `accepted`, or "all"/"none" -> uint32_t bit mask */
    PA_CFG_STRING,  /* any text up to PA_CFG_STR_MAX-1 bytes -> char[PA_CFG_STR_MAX] */
    PA_CFG_CUSTOM,  /* parsed by `parse` */
};

struct pa_config_var;
/* A custom parser: returns 0 and stores into cfg, or -1 (the caller warns and keeps the default). */
typedef int (*pa_cfg_parse_fn)(const struct pa_config_var *v, const char *value, pa_config_t *cfg);

typedef struct pa_config_var {
    const char *name;      /* full name, "PROFAGENT_..." */
    int type;              /* enum pa_cfg_type */
    size_t offset;         /* offsetof(pa_config_t, field) */
    const char *def;       /* default, as text in the variable's own syntax */
    const char *accepted;  /* words for ENUM/FLAGS ("a|b|c"); description of the syntax otherwise */
    uint64_t min, max;     /* UINT/SIZE bounds */
    pa_cfg_parse_fn parse; /* PA_CFG_CUSTOM only */
    const char *help;      /* one line */
} pa_config_var_t;

extern const pa_config_var_t pa_config_vars[];
extern const size_t pa_config_nvars;

/* The process-wide configuration, filled by pa_config_load() in the constructor. */
extern pa_config_t pa_config;

/*! pa_config_parse() : fills *cfg with every default, then applies the PROFAGENT_* entries of
 *  `envp` (a NULL-terminated "NAME=value" array like environ). PROFAGENT_LOG is applied first
 *  (it sets pa_log_level) so it governs the other messages. Each unknown PROFAGENT_* name and
 *  each bad value gets one warning naming the variable and what is accepted; a bad value keeps
 *  the default. Returns the number of warnings. */
int pa_config_parse(pa_config_t *cfg, char *const *envp);

/*! pa_config_load() : pa_config_parse(&pa_config, environ). */
int pa_config_load(void);

/* The environment entry by which an exec'd image of a process that printed configuration
 * messages knows it need not print them again (removed from the environment at load). */
#define PA_CONFIG_ONCE_VAR "PROFAGENT_CONFIG_SAID"
/* Set by `profagent run` to its pid, which the program it execs keeps: that program's empty
 * session prints its one line (session.c); not a setting, so not in the table. */
#define PA_CONFIG_RUN_PID_VAR "PROFAGENT_RUN_PID"

/*! pa_config_exec_entry() : "PROFAGENT_CONFIG_SAID=pid:start:hash" when this process printed (or
 *  was told its earlier image printed) configuration messages, else NULL: the exec wrappers add it
 *  to the new image's environment, whose pa_config_load() then prints the same messages no second
 *  time in the same process (pid and kernel start time) given the same PROFAGENT_* entries. Only
 *  getpid(): async-signal-safe, usable between fork and exec. */
const char *pa_config_exec_entry(void);

/*! pa_config_print_help() : one line per variable (name, default, accepted, help) to fd 2. */
void pa_config_print_help(void);

#endif
