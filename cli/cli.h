/* cli.h - the profagent command's subcommands (stats, run, recover). */
#ifndef PA_CLI_H
#define PA_CLI_H

#include <stddef.h>

/* Exit statuses: 0 ok, 1 data error (bad DB, failed report), 2 usage error. */
#define PA_CLI_OK 0
#define PA_CLI_EDATA 1
#define PA_CLI_EUSAGE 2

/*! pa_cli_stats() : `profagent stats ...` (argv[0] = "stats"). Returns the exit status. */
int pa_cli_stats(int argc, char **argv);

/*! pa_cli_run() : `profagent run [opts] -- CMD ARGS`: sets PROFAGENT_* and LD_PRELOAD, then
 *  execvp. Returns only on error (the exit status). */
int pa_cli_run(int argc, char **argv);

/*! pa_cli_recover() : `profagent recover FILE.spool.zst [-o OUT.db]` (argv[0] = "recover"):
 *  the DB of a process that died before writing it. Returns the exit status. */
int pa_cli_recover(int argc, char **argv);

/*! pa_cli_export() : `profagent export [--format perfetto|perfetto-proto] FILE.db [-o OUT]`: the
 *  timeline as Chrome trace-event JSON or Perfetto protobuf (cli/timeline.h). Returns the exit status. */
int pa_cli_export(int argc, char **argv);

/*! pa_cli_report() : `profagent report FILE.db [-o report.html]`: one self-contained HTML page
 *  with the session, every report that has data (table + the spec's chart) and a device-busy
 *  overview. Returns the exit status. */
int pa_cli_report(int argc, char **argv);

/*! pa_cli_merge() : `profagent merge -o OUT.db IN.db...` (argv[0] = "merge"). Returns the exit
 *  status: 0, 2 inputs refused before writing, 1 writing failed. */
int pa_cli_merge(int argc, char **argv);

/*! pa_cli_merge_to() : merges in[0..n) into `out` (pa_merge_dbs), removing the temporary file on
 *  SIGINT/SIGTERM/SIGHUP; prints the one error, prefixed `cmd` (the subcommand the user ran). Returns the exit status as pa_cli_merge(). */
int pa_cli_merge_to(const char *cmd, const char *out, const char *const *in, size_t n, int overwrite);

/*! pa_cli_output_is_device() : 1 when PATH exists and is neither a regular file nor a directory
 *  (a device such as /dev/stdout or /dev/null, a FIFO, a socket): written in place, never
 *  replaced through a temporary file and a rename (that would put a regular file where the
 *  device node was); 0 otherwise. */
int pa_cli_output_is_device(const char *path);

/*! pa_cli_error() : prints "profagent: <message>" on stderr. */
void pa_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
