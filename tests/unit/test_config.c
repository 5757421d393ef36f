/* test_config.c - PROFAGENT_* parser: defaults, each value type, bad values -> default + message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "pa_log.h"

static pa_config_t cfg;
static char messages[8192];

/* Parses envp with stderr captured into `messages`; returns the warning count. */
static int parse(char *const *envp)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int n = pa_config_parse(&cfg, envp);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t got = fread(messages, 1, sizeof messages - 1, tmp);
    messages[got] = '\0';
    fclose(tmp);
    return n;
}

#define ENV(...) ((char *const[]){__VA_ARGS__, NULL})

static void test_defaults(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PATH=/bin", "HOME=/root")), 0);
    assert_string_equal(messages, "");
    assert_int_equal(cfg.enable, 1);
    assert_int_equal(cfg.trace, PA_SRC_HGTX | PA_SRC_OSRT | PA_SRC_ZE | PA_SRC_MEM | PA_SRC_ITT);
    assert_int_equal(cfg.log_level, PA_LOG_WARN);
    assert_string_equal(cfg.output, "profagent-%h-%p.db");
    assert_int_equal(cfg.overwrite, 0);
    assert_int_equal(cfg.summary, PA_SUMMARY_STDERR);
    assert_int_equal(cfg.ring_size, 4194304);
    assert_int_equal(cfg.osrt_threshold_ns, 1000);
    assert_int_equal(cfg.callstack_depth, 32);
    assert_string_equal(cfg.callstack_groups, "");
    assert_string_equal(cfg.spool_dir, "");
    assert_int_equal(cfg.exit_timeout_ms, 5000);
}

static void test_bool(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PROFAGENT_ENABLE=0", "PROFAGENT_OVERWRITE=yes")), 0);
    assert_int_equal(cfg.enable, 0);
    assert_int_equal(cfg.overwrite, 1);
    assert_int_equal(parse(ENV("PROFAGENT_ENABLE=2")), 1);
    assert_int_equal(cfg.enable, 1);
    assert_non_null(strstr(messages, "PROFAGENT_ENABLE=\"2\""));
    assert_non_null(strstr(messages, "accepted: 1, true, yes, on to turn it on; 0, false, no, off to turn it off;"
                                     " any case"));
    /* every yes/no variable takes the same eight words, any case, and nothing else */
    static const struct { const char *v; int on; } words[] = {
        {"1", 1}, {"true", 1}, {"YES", 1}, {"On", 1}, {"0", 0}, {"False", 0}, {"no", 0}, {"OFF", 0},
    };
    static const char *const vars[] = {"PROFAGENT_ENABLE", "PROFAGENT_OVERWRITE", "PROFAGENT_PC_SAMPLING",
                                       "PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
            char e[96];
            snprintf(e, sizeof e, "%s=%s", vars[i], words[w].v);
            assert_int_equal(parse(ENV(e)), 0);
            int got = i == 0 ? cfg.enable : i == 1 ? cfg.overwrite : i == 2 ? cfg.pc_sampling
                                                                           : cfg.symbols_system_debuginfo;
            assert_int_equal(got, words[w].on);
        }
        for (const char *const *bad = (const char *const[]){"2", "y", "n", " 1", "enable", "offf", NULL}; *bad;
             bad++) {
            char e[96], want[128];
            snprintf(e, sizeof e, "%s=%s", vars[i], *bad);
            assert_int_equal(parse(ENV(e)), 1);
            snprintf(want, sizeof want, "profagent: config: %s=\"%s\" is not accepted (accepted: 1, true,", vars[i],
                     *bad);
            assert_true(strncmp(messages, want, strlen(want)) == 0);
            assert_int_equal(strchr(messages, '\n') - messages + 1, (long)strlen(messages)); /* one line */
        }
    }
    /* device metrics and host counters: the "off" words mean off, silently (no group or event has such a name) */
    assert_int_equal(parse(ENV("PROFAGENT_METRICS=0", "PROFAGENT_HOST_COUNTERS=off")), 0);
    assert_string_equal(cfg.metrics, "");
    assert_string_equal(cfg.host_counters, "");
    assert_int_equal(cfg.trace & PA_SRC_DEVMET, 0);
    assert_int_equal(parse(ENV("PROFAGENT_METRICS=ComputeBasic")), 0);
    assert_string_equal(cfg.metrics, "ComputeBasic");
    /* the agent's own note across exec is no unknown variable */
    assert_int_equal(parse(ENV("PROFAGENT_CONFIG_SAID=1:2:3")), 0);
    assert_string_equal(messages, "");
}

static void test_size(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PROFAGENT_RING_SIZE=4K")), 0);
    assert_int_equal(cfg.ring_size, 4096);
    assert_int_equal(parse(ENV("PROFAGENT_RING_SIZE=2m")), 0);
    assert_int_equal(cfg.ring_size, 2097152);
    assert_int_equal(parse(ENV("PROFAGENT_RING_SIZE=65536")), 0);
    assert_int_equal(cfg.ring_size, 65536);
    assert_int_equal(parse(ENV("PROFAGENT_RING_SIZE=1000")), 1); /* below the 4K minimum */
    assert_int_equal(cfg.ring_size, 4194304);
    assert_non_null(strstr(messages, "PROFAGENT_RING_SIZE"));
    assert_non_null(strstr(messages, "4K..1G"));
    assert_int_equal(parse(ENV("PROFAGENT_RING_SIZE=12Q")), 1);
    assert_int_equal(cfg.ring_size, 4194304);
}

static void test_uint(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PROFAGENT_OSRT_THRESHOLD_NS=250", "PROFAGENT_CALLSTACK_DEPTH=8")), 0);
    assert_int_equal(cfg.osrt_threshold_ns, 250);
    assert_int_equal(cfg.callstack_depth, 8);
    assert_int_equal(parse(ENV("PROFAGENT_OSRT_THRESHOLD_NS=-5", "PROFAGENT_CALLSTACK_DEPTH=abc",
                               "PROFAGENT_EXIT_TIMEOUT_MS=0")), 3);
    assert_int_equal(cfg.osrt_threshold_ns, 1000);
    assert_int_equal(cfg.callstack_depth, 32);
    assert_int_equal(cfg.exit_timeout_ms, 5000);
    assert_non_null(strstr(messages, "PROFAGENT_CALLSTACK_DEPTH=\"abc\""));
}

static void test_enum_log(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PROFAGENT_LOG=debug")), 0);
    assert_int_equal(cfg.log_level, PA_LOG_DEBUG);
    assert_int_equal(pa_log_level, PA_LOG_DEBUG);
    assert_int_equal(parse(ENV("PROFAGENT_LOG=loud")), 1);
    assert_int_equal(cfg.log_level, PA_LOG_WARN);
    assert_non_null(strstr(messages, "silent|error|warn|info|debug"));
    /* silent hides the other warnings, which are still counted */
    assert_int_equal(parse(ENV("PROFAGENT_ENABLE=x", "PROFAGENT_LOG=silent")), 1);
    assert_string_equal(messages, "");
    pa_log_level = PA_LOG_WARN;
}

static void test_enum_ring_full(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PATH=/bin")), 0);
    assert_int_equal(cfg.ring_full, PA_RING_FULL_WAIT);
    assert_int_equal(parse(ENV("PROFAGENT_RING_FULL=drop")), 0);
    assert_int_equal(cfg.ring_full, PA_RING_FULL_DROP);
    assert_int_equal(parse(ENV("PROFAGENT_RING_FULL=WAIT")), 0);
    assert_int_equal(cfg.ring_full, PA_RING_FULL_WAIT);
    /* a bad value: one message naming the variable, the value and the accepted words; default */
    assert_int_equal(parse(ENV("PROFAGENT_RING_FULL=block")), 1);
    assert_int_equal(cfg.ring_full, PA_RING_FULL_WAIT);
    assert_non_null(strstr(messages, "PROFAGENT_RING_FULL"));
    assert_non_null(strstr(messages, "block"));
    assert_non_null(strstr(messages, "wait|drop"));
    int lines = 0;
    for (const char *p = messages; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 1);
}

static void test_flags_trace(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=hgtx,osrt")), 0);
    assert_int_equal(cfg.trace, PA_SRC_HGTX | PA_SRC_OSRT);
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=ZE, mem")), 0);
    assert_int_equal(cfg.trace, PA_SRC_ZE | PA_SRC_MEM);
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=none")), 0);
    assert_int_equal(cfg.trace, 0);
    /* qa2 defect 10: only the unknown word is dropped and named; all/none are listed */
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=hgtx,gpu")), 1);
    assert_int_equal(cfg.trace, PA_SRC_HGTX);
    assert_non_null(strstr(messages, "\"gpu\" ignored"));
    assert_null(strstr(messages, "\"hgtx\" ignored"));
    assert_non_null(strstr(messages, "hgtx|osrt|ze|mem|itt|all|none"));
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=gpu")), 1); /* nothing usable: the default */
    assert_int_equal(cfg.trace, PA_SRC_ALL);
    assert_non_null(strstr(messages, "PROFAGENT_TRACE=\"gpu\""));
    /* empty values: warned, default kept */
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=")), 1);
    assert_int_equal(cfg.trace, PA_SRC_ALL);
    assert_non_null(strstr(messages, "PROFAGENT_TRACE is set but empty"));
    assert_int_equal(parse(ENV("PROFAGENT_OUTPUT=")), 1);
    assert_string_equal(cfg.output, "profagent-%h-%p.db");
    assert_non_null(strstr(messages, "PROFAGENT_OUTPUT is set but empty"));
    /* an empty opt-in (no default) is said too, and stays off */
    assert_int_equal(parse(ENV("PROFAGENT_METRICS=")), 1);
    assert_string_equal(cfg.metrics, "");
    assert_int_equal(cfg.trace & PA_SRC_DEVMET, 0);
    assert_non_null(strstr(messages, "PROFAGENT_METRICS is set but empty"));
    /* an empty variable whose default is empty too is said like the others */
    assert_int_equal(parse(ENV("PROFAGENT_SPOOL_DIR=")), 1);
    assert_string_equal(cfg.spool_dir, "");
    assert_string_equal(messages, "profagent: config: PROFAGENT_SPOOL_DIR is set but empty (accepted: a directory); "
                                  "using the default (the DB's directory)\n");
    /* all with none: one line naming the conflict and which applies, in either order */
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=all,none")), 1);
    assert_int_equal(cfg.trace, PA_SRC_ALL);
    assert_string_equal(messages, "profagent: config: PROFAGENT_TRACE=\"all,none\": both all and none are given; "
                                  "all applies (every source is recorded)\n");
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=None,hgtx,ALL")), 1);
    assert_int_equal(cfg.trace, PA_SRC_ALL);
    assert_non_null(strstr(messages, "both all and none are given; all applies"));
    assert_int_equal(parse(ENV("PROFAGENT_TRACE=none,nonexistent")), 1); /* "none" alone: no conflict */
    assert_null(strstr(messages, "both all and none"));
}

static void test_summary(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PROFAGENT_SUMMARY=stdout")), 0);
    assert_int_equal(cfg.summary, PA_SUMMARY_STDOUT);
    assert_int_equal(parse(ENV("PROFAGENT_SUMMARY=none")), 0);
    assert_int_equal(cfg.summary, PA_SUMMARY_NONE);
    assert_int_equal(parse(ENV("PROFAGENT_SUMMARY=file:/tmp/sum.txt")), 0);
    assert_int_equal(cfg.summary, PA_SUMMARY_FILE);
    assert_string_equal(cfg.summary_path, "/tmp/sum.txt");
    assert_int_equal(parse(ENV("PROFAGENT_SUMMARY=file:")), 1);
    assert_int_equal(cfg.summary, PA_SUMMARY_STDERR);
    assert_int_equal(parse(ENV("PROFAGENT_SUMMARY=printer")), 1);
    assert_non_null(strstr(messages, "stderr|stdout|none|file:PATH"));
}

static void test_strings(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PROFAGENT_OUTPUT=/tmp/x-%p.db", "PROFAGENT_SPOOL_DIR=/var/tmp",
                               "PROFAGENT_CALLSTACK_GROUPS=a=libfoo")), 0);
    assert_string_equal(cfg.output, "/tmp/x-%p.db");
    assert_string_equal(cfg.spool_dir, "/var/tmp");
    assert_string_equal(cfg.callstack_groups, "a=libfoo");
}

/* PROFAGENT_RANK is checked once, by common/pa_rank.c with the launchers' variables: a bad or
 * overlong value gets that one message, none from the config (two messages for one mistake). */
static void test_rank_left_to_rank_module(void **state)
{
    (void)state;
    static char huge[PA_CFG_STR_MAX * 4 + 32] = "PROFAGENT_RANK=";
    memset(huge + 15, '9', sizeof huge - 16);
    assert_int_equal(parse(ENV(huge)), 0);
    assert_string_equal(messages, "");
    assert_int_equal(parse(ENV("PROFAGENT_RANK=abc")), 0);
    assert_string_equal(messages, "");
}

static void test_unknown_names(void **state)
{
    (void)state;
    assert_int_equal(parse(ENV("PROFAGENT_FOO=1", "PROFAGENT_ENABLE=1", "PROFAGENT_OUTPT=x.db", "NOT_OURS=1")), 2);
    assert_non_null(strstr(messages, "unknown variable PROFAGENT_FOO"));
    assert_non_null(strstr(messages, "unknown variable PROFAGENT_OUTPT"));
    assert_non_null(strstr(messages, "PROFAGENT_OUTPUT")); /* the list of known names */
    assert_null(strstr(messages, "NOT_OURS"));
    assert_string_equal(cfg.output, "profagent-%h-%p.db");
}

static void test_table_is_consistent(void **state)
{
    (void)state;
    /* every default parses without a warning (checked by test_defaults) and names are unique */
    for (size_t i = 0; i < pa_config_nvars; i++)
        for (size_t j = i + 1; j < pa_config_nvars; j++)
            assert_string_not_equal(pa_config_vars[i].name, pa_config_vars[j].name);
    assert_string_equal(pa_config_vars[0].name, "PROFAGENT_LOG");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_bool),
        cmocka_unit_test(test_size),         cmocka_unit_test(test_uint),
        cmocka_unit_test(test_enum_log),     cmocka_unit_test(test_enum_ring_full),
        cmocka_unit_test(test_flags_trace),
        cmocka_unit_test(test_summary),      cmocka_unit_test(test_strings),
        cmocka_unit_test(test_rank_left_to_rank_module),
        cmocka_unit_test(test_unknown_names), cmocka_unit_test(test_table_is_consistent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
