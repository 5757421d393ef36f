/* test_outname.c - output name placeholders (%p %h %q{VAR} %%) and never-overwrite suffixes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pa_outname.h"
#include "pa_rank.h"

static char out[4096], want[4096];

static void test_pid_host_percent(void **state)
{
    (void)state;
    assert_int_equal(pa_outname_expand("run-%p.db", out, sizeof out), 0);
    snprintf(want, sizeof want, "run-%ld.db", (long)getpid());
    assert_string_equal(out, want);
    char host[256];
    gethostname(host, sizeof host);
    assert_int_equal(pa_outname_expand("%h/%%/100%%", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/%%/100%%", host);
    assert_string_equal(out, want);
    assert_int_equal(pa_outname_expand("plain", out, sizeof out), 0);
    assert_string_equal(out, "plain");
}

static void test_env_var(void **state)
{
    (void)state;
    setenv("PA_TEST_RANK", "7", 1);
    assert_int_equal(pa_outname_expand("r%q{PA_TEST_RANK}-%q{PA_TEST_RANK}.db", out, sizeof out), 0);
    assert_string_equal(out, "r7-7.db");
    unsetenv("PA_TEST_RANK");
    assert_int_equal(pa_outname_expand("r%q{PA_TEST_RANK}.db", out, sizeof out), 0); /* unset: empty */
    assert_string_equal(out, "r.db");
    /* at the start of a file name nothing would give the hidden ".db" */
    assert_int_equal(pa_outname_expand("%q{PA_TEST_RANK}.db", out, sizeof out), 0);
    assert_string_equal(out, "unset-PA_TEST_RANK.db");
    assert_int_equal(pa_outname_expand("/tmp/%q{PA_TEST_RANK}.db", out, sizeof out), 0);
    assert_string_equal(out, "/tmp/unset-PA_TEST_RANK.db");
    setenv("PA_TEST_RANK", "", 1);
    assert_int_equal(pa_outname_expand("%q{PA_TEST_RANK}-x.db", out, sizeof out), 0);
    assert_string_equal(out, "unset-PA_TEST_RANK-x.db");
    unsetenv("PA_TEST_RANK");
    assert_int_equal(pa_outname_expand("a%q{OPEN", out, sizeof out), 0); /* unclosed: literal */
    assert_string_equal(out, "a%q{OPEN");
}

static char messages[4096];

/* stderr (the agent's warnings) from here to msg_end() into `messages` */
static FILE *msg_tmp;
static int msg_saved;
static void msg_begin(void)
{
    fflush(stderr);
    msg_tmp = tmpfile();
    assert_non_null(msg_tmp);
    msg_saved = dup(2);
    dup2(fileno(msg_tmp), 2);
}
static void msg_end(void)
{
    fflush(stderr);
    dup2(msg_saved, 2);
    close(msg_saved);
    rewind(msg_tmp);
    size_t got = fread(messages, 1, sizeof messages - 1, msg_tmp);
    messages[got] = '\0';
    fclose(msg_tmp);
}

static void test_unknown_placeholder_kept(void **state)
{
    (void)state;
    msg_begin();
    assert_int_equal(pa_outname_expand("a%zb%", out, sizeof out), 0);
    msg_end();
    assert_string_equal(out, "a%zb%");
    /* one line: the unknown letter named; the lone trailing % said as such, not as "% " */
    assert_string_equal(messages,
                        "profagent: output: \"a%zb%\": '%z', a lone '%' at the end are not placeholders, kept as is "
                        "(accepted: %p pid, %h host, %r rank, %q{VAR} an environment variable, %% a literal %)\n");
    msg_begin();
    assert_int_equal(pa_outname_expand("/tmp/x/%", out, sizeof out), 0);
    msg_end();
    assert_string_equal(out, "/tmp/x/%");
    assert_string_equal(messages,
                        "profagent: output: \"/tmp/x/%\": a lone '%' at the end is not a placeholder, kept as is "
                        "(accepted: %p pid, %h host, %r rank, %q{VAR} an environment variable, %% a literal %)\n");
}

/* %r without a rank (none of the launcher variables set here): never a hidden or empty name */
static void test_rank_none(void **state)
{
    (void)state;
    static const struct { const char *tmpl, *want, *what; } c[] = {
        {"out-%r.db", "out.db", "nothing, with the separator before it"},
        {"dir/a_%r_%%.db", "dir/a_%.db", "nothing, with the separator before it"},
        {"a.%r.db", "a.db", "nothing, with the separator before it"},
        {"rank%r.db", "rank.db", "nothing"},
        {"%r.db", "norank.db", "\"norank\" (at the start"},
        {"/tmp/x/%r-1.db", "/tmp/x/norank-1.db", "\"norank\" (at the start"},
        {"/tmp/x/-%r.db", "/tmp/x/-.db", "nothing"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        msg_begin();
        assert_int_equal(pa_outname_expand(c[i].tmpl, out, sizeof out), 0);
        msg_end();
        assert_string_equal(out, c[i].want);
        assert_non_null(strstr(messages, "%r: no rank in the environment"));
        assert_non_null(strstr(messages, c[i].what));
        assert_int_equal(strchr(messages, '\n') - messages + 1, (long)strlen(messages)); /* one line */
    }
}

static void test_too_long(void **state)
{
    (void)state;
    char small[8];
    assert_int_equal(pa_outname_expand("12345678", small, sizeof small), -1);
    assert_string_equal(small, "1234567");
    assert_int_equal(pa_outname_expand("1234567", small, sizeof small), 0);
    assert_int_equal(pa_outname_expand("%p%p%p%p", small, sizeof small), -1);
}

static void touch(const char *p)
{
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static void test_unique_suffixes(void **state)
{
    (void)state;
    char dir[] = "/tmp/pa_outname_XXXXXX", p[512];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/t.db", dir);
    assert_int_equal(pa_outname_unique(p, out, sizeof out), 0);
    assert_string_equal(out, p); /* free: unchanged */
    touch(p);
    assert_int_equal(pa_outname_unique(p, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/t-1.db", dir);
    assert_string_equal(out, want);
    touch(want);
    assert_int_equal(pa_outname_unique(p, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/t-2.db", dir);
    assert_string_equal(out, want);
    /* overwrite requested: same name even though it exists */
    assert_int_equal(pa_outname_resolve(p, 1, out, sizeof out), 0);
    assert_string_equal(out, p);
    assert_int_equal(pa_outname_resolve(p, 0, out, sizeof out), 0);
    assert_string_equal(out, want);

    char q[512];
    snprintf(q, sizeof q, "%s/noext", dir); /* no extension: suffix at the end */
    touch(q);
    assert_int_equal(pa_outname_unique(q, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/noext-1", dir);
    assert_string_equal(out, want);
    snprintf(q, sizeof q, "%s/.hidden", dir); /* leading dot is not an extension */
    touch(q);
    assert_int_equal(pa_outname_unique(q, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/.hidden-1", dir);
    assert_string_equal(out, want);
    snprintf(q, sizeof q, "%s/a.b.db", dir); /* only the last extension */
    touch(q);
    assert_int_equal(pa_outname_unique(q, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/a.b-1.db", dir);
    assert_string_equal(out, want);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_unique_dot_in_directory(void **state)
{
    (void)state;
    char dir[] = "/tmp/pa.outname_XXXXXX", p[512];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/file", dir);
    touch(p);
    assert_int_equal(pa_outname_unique(p, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/file-1", dir);
    assert_string_equal(out, want);
    unlink(p);
    rmdir(dir);
}

/* Claiming: each call gets its own name, even when the files are left empty (a racing
 * process that has not written its DB yet still owns its name). */
static void test_claim_atomic(void **state)
{
    (void)state;
    char dir[] = "/tmp/pa_claim_XXXXXX", p[512];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/c.db", dir);
    const char *want_base[] = {"c.db", "c-1.db", "c-2.db"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pa_outname_claim(p, 0, out, sizeof out), 0);
        snprintf(want, sizeof want, "%s/%s", dir, want_base[i]);
        assert_string_equal(out, want);
        struct stat st;
        assert_int_equal(stat(out, &st), 0);
        assert_int_equal(st.st_size, 0);
    }
    assert_int_equal(pa_outname_claim(p, 1, out, sizeof out), 0); /* overwrite: the name itself */
    assert_string_equal(out, p);
    snprintf(want, sizeof want, "%s/none/c.db", dir);
    assert_int_equal(pa_outname_claim(want, 0, out, sizeof out), -1);
    assert_int_equal(errno, ENOENT);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Linking: the first free name becomes the file itself (same inode, whole content) in one
 * step; taken names are skipped, a free name's stale side files removed, a taken one's kept. */
static void test_link_atomic(void **state)
{
    (void)state;
    char dir[] = "/tmp/pa_link_XXXXXX", p[512], src[512], side[600];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/l.db", dir);
    snprintf(src, sizeof src, "%s/l.db.1.creating", dir);
    static const char *const sides[] = {"-wal", "-shm", NULL};
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs("0123456789", f);
    fclose(f);
    struct stat s0, st;
    assert_int_equal(stat(src, &s0), 0);
    /* l.db is taken (with its -wal: someone's), l-1.db is free with a stale -wal */
    snprintf(side, sizeof side, "%s-wal", p);
    fclose(fopen(p, "w"));
    fclose(fopen(side, "w"));
    snprintf(side, sizeof side, "%s/l-1.db-wal", dir);
    fclose(fopen(side, "w"));
    assert_int_equal(pa_outname_link(src, p, 0, sides, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/l-1.db", dir);
    assert_string_equal(out, want);
    assert_int_equal(stat(out, &st), 0);
    assert_true(st.st_ino == s0.st_ino && st.st_size == 10);
    assert_int_equal(access(side, F_OK), -1); /* the free name's stale -wal went */
    snprintf(side, sizeof side, "%s-wal", p);
    assert_int_equal(access(side, F_OK), 0); /* the taken name's stays */
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, 0);
    /* overwrite: the name itself, replaced by the file */
    assert_int_equal(pa_outname_link(src, p, 1, NULL, out, sizeof out), 0);
    assert_string_equal(out, p);
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_ino == s0.st_ino);
    /* a missing source or directory: link's errno, nothing claimed */
    snprintf(want, sizeof want, "%s/none/l.db", dir);
    assert_int_equal(pa_outname_link(src, want, 0, sides, out, sizeof out), -1);
    assert_int_equal(errno, ENOENT);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Placement: directories get the default name, devices are refused, results are absolute. */
static void test_place(void **state)
{
    (void)state;
    char dflt[256], cwd[2048];
    assert_int_equal(pa_outname_expand(PA_OUTNAME_DEFAULT, dflt, sizeof dflt), 0);
    assert_non_null(getcwd(cwd, sizeof cwd));
    if (access("/", W_OK) == 0) { /* root: a file can be created in "/" */
        assert_int_equal(pa_outname_place("V", "/", "/", out, sizeof out), 0);
        snprintf(want, sizeof want, "/%s", dflt);
        assert_string_equal(out, want);
    }
    assert_int_equal(pa_outname_place("V", "/tmp/", "/tmp/", out, sizeof out), 0);
    snprintf(want, sizeof want, "/tmp/%s", dflt);
    assert_string_equal(out, want);
    assert_int_equal(pa_outname_place("V", "/dev/null", "/dev/null", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/%s", cwd, dflt);
    assert_string_equal(out, want);
    assert_int_equal(pa_outname_place("V", "a.db", "a.db", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/a.db", cwd);
    assert_string_equal(out, want);
    assert_int_equal(pa_outname_absolute("./x/y", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/x/y", cwd);
    assert_string_equal(out, want);
    /* the spool's name fits NAME_MAX even for a DB base of 249 bytes */
    char db[400];
    memset(db, 'b', sizeof db);
    memcpy(db, "/tmp/", 5);
    db[5 + 249] = '\0';
    assert_int_equal(pa_outname_spool(db, "", 12345, 0xabcdef, out, sizeof out), 0);
    assert_true(strlen(strrchr(out, '/') + 1) <= 255);
    assert_non_null(strstr(out, ".12345.abcdef.spool.zst"));
    /* a spool directory that exists but takes no file (/proc: creating gives ENOENT) is not
     * writable, not missing; one that is missing does not exist */
    msg_begin();
    assert_int_equal(pa_outname_spool("/tmp/a.db", "/proc", 1, 2, out, sizeof out), 0);
    assert_int_equal(pa_outname_spool("/tmp/a.db", "/nonexistent-pa-dir", 1, 2, out, sizeof out), 0);
    msg_end();
    assert_string_equal(messages, "profagent: output: PROFAGENT_SPOOL_DIR=\"/proc\": the directory is not writable; "
                                  "the spool goes to the DB's directory /tmp\n"
                                  "profagent: output: PROFAGENT_SPOOL_DIR=\"/nonexistent-pa-dir\": the directory does "
                                  "not exist; the spool goes to the DB's directory /tmp\n");
    assert_string_equal(out, "/tmp/a.db.1.000002.spool.zst");
}

int main(void)
{
    for (const pa_rank_var_t *v = pa_rank_vars; v->var; v++)
        unsetenv(v->var); /* no rank in this process, even under a launcher (test_rank_none) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pid_host_percent), cmocka_unit_test(test_env_var),
        cmocka_unit_test(test_unknown_placeholder_kept), cmocka_unit_test(test_rank_none),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_unique_suffixes), cmocka_unit_test(test_unique_dot_in_directory),
        cmocka_unit_test(test_claim_atomic), cmocka_unit_test(test_link_atomic), cmocka_unit_test(test_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
