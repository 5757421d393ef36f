/* main.c - the profagent command: dispatches to stats / run / recover, prints help and version. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "hostctr.h"
#include "writer_internal.h"

void pa_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("profagent: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int pa_cli_output_is_device(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

static void pa_cli_usage(FILE *out)
{
    fprintf(out,
        "usage: profagent <command> [options]\n\n"
        "Commands:\n"
        "  stats [-r REPORT[:opt[:opt]][,REPORT...]] [--format csv|tsv|table|json[,...]]\n"
        "        [--output PREFIX|-] [--timeunit ns|us|ms|s] [--force-overwrite] FILE.db\n"
        "        print reports from a profagent database (default format csv; without -r the\n"
        "        default set, see 'profagent stats --help')\n"
        "  stats --help-reports         every report with its one-line description\n"
        "  stats --help-report NAME     describe a report: options and columns\n"
        "  stats --list                 list the report names\n"
        "  run [--output TEMPLATE] [--trace LIST] [--summary DEST] -- CMD [ARGS...]\n"
        "        run CMD under the agent (sets PROFAGENT_* and LD_PRELOAD, then execs)\n"
        "  export [--format perfetto|perfetto-proto] FILE.db [-o OUT.json|OUT.pftrace]\n"
        "        the timeline for Perfetto (Chrome trace-event JSON, or Perfetto's protobuf)\n"
        "  report FILE.db [-o report.html] [--rows N]\n"
        "        one self-contained HTML page: session, device busy overview, reports with charts\n"
        "  merge -o OUT.db [--force-overwrite] IN.db [IN.db ...]\n"
        "        one DB from the DBs of several processes (MPI ranks): every report then covers them\n"
        "        all (pids kept, device ids unique, times on one clock; 'profagent merge --help')\n"
        "  recover FILE.spool.zst [-o OUT.db]\n"
        "        build the DB of a process that died before writing it (SIGKILL, abort, crash)\n"
        "  counters     the libpfm4 event names PROFAGENT_HOST_COUNTERS accepts on this machine\n\n"
        "Options:\n"
        "  --help       this text\n"
        "  --version    the version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        pa_cli_usage(stderr);
        return PA_CLI_EUSAGE;
    }
    const char *cmd = argv[1];
    int help = strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0;
    if ((help || strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) && argc > 2) {
        pa_cli_error("%s takes no arguments (got '%s'); for a command's help: profagent COMMAND --help", cmd,
                     argv[2]);
        return PA_CLI_EUSAGE;
    }
    if (help) {
        pa_cli_usage(stdout);
        return PA_CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("profagent %s (DB schema version %d)\n", PA_WRITER_AGENT_VERSION, PA_SCHEMA_VERSION);
        return PA_CLI_OK;
    }
    if (strcmp(cmd, "stats") == 0)
        return pa_cli_stats(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return pa_cli_run(argc - 1, argv + 1);
    if (strcmp(cmd, "merge") == 0)
        return pa_cli_merge(argc - 1, argv + 1);
    if (strcmp(cmd, "recover") == 0)
        return pa_cli_recover(argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0)
        return pa_cli_export(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0)
        return pa_cli_report(argc - 1, argv + 1);
    if (strcmp(cmd, "counters") == 0) {
        if (argc > 2) {
            pa_cli_error("counters takes no arguments");
            return PA_CLI_EUSAGE;
        }
        if (pa_hc_list_events(stdout) < 0) {
            pa_cli_error("libpfm4 could not be initialized: no event names to list");
            return PA_CLI_EDATA;
        }
        return PA_CLI_OK;
    }
    pa_cli_error("unknown command '%s'; accepted: stats, merge, export, report, run, recover, counters, --help, --version", cmd);
    return PA_CLI_EUSAGE;
}
