/* run.c - `profagent run`: sets PROFAGENT_* and LD_PRELOAD (the agent beside the binary), execs. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The file execvp would run: `cmd` itself when it has a '/', else the first executable in PATH. */
static int pa_find_exe(const char *cmd, char *buf, size_t sz)
{
    if (strchr(cmd, '/'))
        return snprintf(buf, sz, "%s", cmd) < (int)sz ? 0 : -1;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        if (snprintf(buf, sz, "%.*s%s%s", (int)n, p, n ? "/" : "", cmd) < (int)sz && access(buf, X_OK) == 0)
            return 0;
        p += n;
        if (*p == ':')
            p++;
    }
    return -1;
}

/* 1 when `path` is an ELF executable without a PT_INTERP (statically linked: the dynamic
 * loader never runs, so LD_PRELOAD cannot load the agent). 0 otherwise or when unreadable. */
static int pa_is_static_elf(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    Elf64_Ehdr eh;
    int st = 0;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
        st = 1; /* static, also static-pie (PT_DYNAMIC but no interpreter): ld.so never runs */
        for (int i = 0; i < eh.e_phnum && st; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph ||
                ph.p_type == PT_INTERP)
                st = 0;
        }
    }
    close(fd);
    return st;
}

/* <bindir>/../lib/libprofagent.so, from /proc/self/exe. Returns 0 or -1 (message printed). */
static int pa_agent_path(char *buf, size_t sz)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        pa_cli_error("run: cannot find my own binary (/proc/self/exe): %s", strerror(errno));
        return -1;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    if ((size_t)snprintf(buf, sz, "%s/../lib/libprofagent.so", exe) >= sz) {
        pa_cli_error("run: path too long");
        return -1;
    }
    char real[PATH_MAX];
    if (!realpath(buf, real) || access(real, R_OK) != 0) {
        pa_cli_error("run: the agent library '%s' is missing (expected next to the profagent"
                     " binary, in ../lib)", buf);
        return -1;
    }
    snprintf(buf, sz, "%s", real);
    return 0;
}

static int pa_setenv(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0) {
        pa_cli_error("run: cannot set %s: %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

#if defined(__SANITIZE_ADDRESS__)
extern void __asan_init(void) __attribute__((weak));
#endif

/* The sanitizer runtime this binary runs with ("" in a normal build). The agent of a sanitizer
 * build links the same runtime, which must come first in the initial library list, so it is
 * preloaded before the agent (as the tests do for a preloaded sanitizer agent). */
static const char *pa_sanitizer_runtime(void)
{
#if defined(__SANITIZE_ADDRESS__)
    Dl_info di;
    if (__asan_init && dladdr((void *)__asan_init, &di) && di.dli_fname && strchr(di.dli_fname, '/'))
        return di.dli_fname;
#endif
    return "";
}

/* LD_PRELOAD = [sanitizer runtime:]agent, then whatever the user preloads already. */
static int pa_set_preload(const char *agent)
{
    const char *old = getenv("LD_PRELOAD");
    const char *san = pa_sanitizer_runtime();
    if (old && *san && strstr(old, san))
        san = ""; /* already preloaded by the user */
    size_t n = strlen(san) + strlen(agent) + (old ? strlen(old) : 0) + 3;
    char *v = malloc(n);
    if (!v)
        return -1;
    snprintf(v, n, "%s%s%s%s%s", san, *san ? ":" : "", agent, old && *old ? ":" : "", old && *old ? old : "");
    int rc = pa_setenv("LD_PRELOAD", v);
    free(v);
    return rc;
}

static void pa_run_usage(FILE *out)
{
    fprintf(out, "usage: profagent run [--output TEMPLATE] [--trace LIST] [--summary DEST] [--pc-sampling]\n"
                 "                     [--pc-sampling-period NS] -- CMD [ARGS...]\n"
                 "  --output TEMPLATE  DB path (PROFAGENT_OUTPUT; %%p pid, %%h host, %%r rank, %%q{VAR})\n"
                 "  --trace LIST       sources, e.g. hgtx,osrt,ze,mem (PROFAGENT_TRACE)\n"
                 "  --summary DEST     stderr|stdout|none|file:PATH (PROFAGENT_SUMMARY)\n"
                 "  --pc-sampling      EU-stall (PC) sampling per instruction (PROFAGENT_PC_SAMPLING=1)\n"
                 "  --pc-sampling-period NS  its period, 1000..1000000000 ns, default 100000\n"
                 "                     (PROFAGENT_PC_SAMPLING_PERIOD_NS)\n");
}

int pa_cli_run(int argc, char **argv)
{
    static const struct { const char *opt, *env, *what; } map[] = {
        {"--output", "PROFAGENT_OUTPUT", "a DB path template, e.g. --output prof-%p.db (%p pid, %h host, %r rank,"
         " %q{VAR})"},
        {"--trace", "PROFAGENT_TRACE", "a comma list of sources, e.g. --trace hgtx,osrt,ze,mem"},
        {"--summary", "PROFAGENT_SUMMARY", "stderr, stdout, none or file:PATH"},
        {"--pc-sampling-period", "PROFAGENT_PC_SAMPLING_PERIOD_NS", "a period in ns, 1000..1000000000"},
    };
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            pa_run_usage(stdout);
            return PA_CLI_OK;
        }
        if (a[0] != '-')
            break;  /* the command itself, without "--" */
        if (strcmp(a, "--pc-sampling") == 0) { /* a flag: no value */
            if (pa_setenv("PROFAGENT_PC_SAMPLING", "1") != 0)
                return PA_CLI_EDATA;
            continue;
        }
        size_t k = 0, nmap = sizeof map / sizeof map[0];
        const char *val = NULL;
        int separate = 0;
        for (; k < nmap; k++) {
            size_t n = strlen(map[k].opt);
            if (strncmp(a, map[k].opt, n) == 0 && a[n] == '=') {
                val = a + n + 1;
                break;
            }
            if (strcmp(a, map[k].opt) == 0) {
                val = i + 1 < argc ? argv[++i] : NULL;
                separate = 1;
                break;
            }
        }
        if (k == nmap) {
            pa_cli_error("run: unknown option '%s'; accepted: --output, --trace, --summary, --pc-sampling,"
                         " --pc-sampling-period, --", a);
            return PA_CLI_EUSAGE;
        }
        /* "--output -- CMD": the "--" (or the next option) is not the value, the value is missing */
        if (!val || !*val || (separate && strncmp(val, "--", 2) == 0)) {
            pa_cli_error("run: option %s needs a value%s%s%s: %s", map[k].opt, val && *val ? " (got '" : "",
                         val && *val ? val : "", !val || !*val ? "" : strcmp(val, "--") == 0 ? "', which ends the options)"
                         : "', an option)", map[k].what);
            return PA_CLI_EUSAGE;
        }
        if (pa_setenv(map[k].env, val) != 0)
            return PA_CLI_EDATA;
    }
    if (i >= argc) {
        pa_cli_error("run: no command given");
        pa_run_usage(stderr);
        return PA_CLI_EUSAGE;
    }
    char agent[PATH_MAX];
    if (pa_agent_path(agent, sizeof agent) != 0 || pa_set_preload(agent) != 0)
        return PA_CLI_EDATA;
    char exe[PATH_MAX];
    if (pa_find_exe(argv[i], exe, sizeof exe) == 0 && pa_is_static_elf(exe))
        pa_cli_error("run: warning: '%s' is statically linked: LD_PRELOAD cannot load the agent into it, so "
                     "nothing will be profiled (running it anyway)", exe);
    /* the program exec'd keeps this pid: its agent says "nothing recorded" when it records
     * nothing (a shim it execs, or a child, stays quiet) */
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    if (pa_setenv("PROFAGENT_RUN_PID", pid) != 0) /* PA_CONFIG_RUN_PID_VAR (collector/config.h) */
        return PA_CLI_EDATA;
    execvp(argv[i], argv + i);
    pa_cli_error("run: cannot execute '%s': %s", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
