/* merge.c - `profagent merge -o OUT.db IN.db...`: the DBs of several processes (MPI ranks) as one. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "writer.h"

static char merge_tmp[PATH_MAX]; /* the temporary output while it exists: removed on a fatal signal */

static void on_signal(int sig)
{
    if (merge_tmp[0])
        unlink(merge_tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void merge_usage(FILE *out)
{
    fprintf(out,
        "usage: profagent merge -o OUT.db [--force-overwrite] IN.db [IN.db ...]\n\n"
        "One DB from the DBs of several processes (e.g. the ranks of an MPI job), in which every report\n"
        "works across them: pids kept (one already taken by an earlier input is renumbered, as\n"
        "MERGE_INPUTS says), device ids unique per host, process and device (RANK_DEVICE_MAP,\n"
        "MERGE_INPUTS.deviceOffset), threads as globalTid = pid << 32 | tid, names re-interned, times\n"
        "on the first input's clock (same machine: the CLOCK_MONOTONIC they share; another host:\n"
        "aligned by the wall-clock anchors of each session, the residual uncertainty in META\n"
        "merge_clock_uncertainty_ns), summary statistics combined, session counters summed.\n"
        "OUT.db is written under a temporary name beside it and renamed at the end: it is never\n"
        "half-written.\n\n"
        "  -o, --output OUT.db    the merged DB (must not exist, unless --force-overwrite)\n"
        "  --force-overwrite      replace an existing OUT.db\n\n"
        "Exit status: 0 done; 2 refused before writing (no input, a file given twice, truncated, not a\n"
        "profagent DB, different schema versions, OUT.db exists); 1 writing failed.\n");
}

int pa_cli_merge_to(const char *cmd, const char *out, const char *const *in, size_t n, int overwrite)
{
    char err[2048];
    struct sigaction sa = {.sa_handler = on_signal}, old[3];
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    pa_merge_opts_t o = {.overwrite = overwrite, .tmp_path = merge_tmp};
    int rc = pa_merge_dbs(out, in, n, &o, err, sizeof err);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    if (rc != PA_REP_OK)
        pa_cli_error("%s: %s", cmd, err);
    return rc == PA_REP_OK ? PA_CLI_OK : rc == PA_REP_EUSAGE ? PA_CLI_EUSAGE : PA_CLI_EDATA;
}

int pa_cli_merge(int argc, char **argv)
{
    const char *out = NULL;
    int overwrite = 0, dashdash = 0;
    const char **in = calloc((size_t)argc + 1, sizeof *in);
    size_t n = 0;
    if (!in)
        return PA_CLI_EDATA;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            merge_usage(stdout);
            free(in);
            return PA_CLI_OK;
        } else if (!dashdash && (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)) {
            if (i + 1 >= argc) {
                pa_cli_error("merge: %s needs a file name", a);
                free(in);
                return PA_CLI_EUSAGE;
            }
            out = argv[++i];
        } else if (!dashdash && strncmp(a, "--output=", 9) == 0) {
            out = a + 9;
        } else if (!dashdash && strcmp(a, "--force-overwrite") == 0) {
            overwrite = 1;
        } else if (!dashdash && strcmp(a, "--") == 0) {
            dashdash = 1;
        } else if (!dashdash && a[0] == '-' && a[1]) {
            pa_cli_error("merge: unknown option '%s' (accepted: -o/--output OUT.db, --force-overwrite, --help)", a);
            free(in);
            return PA_CLI_EUSAGE;
        } else {
            in[n++] = a;
        }
    }
    int rc;
    if (!out) {
        pa_cli_error("merge: no output given (usage: profagent merge -o OUT.db IN.db [IN.db ...])");
        rc = PA_CLI_EUSAGE;
    } else if (n == 0) {
        pa_cli_error("merge: no input DB given (usage: profagent merge -o OUT.db IN.db [IN.db ...])");
        rc = PA_CLI_EUSAGE;
    } else {
        rc = pa_cli_merge_to("merge", out, in, n, overwrite);
    }
    free(in);
    return rc;
}
