/* export.c - `profagent export --format perfetto|perfetto-proto FILE.db -o OUT`: the session's
 * timeline for Perfetto (Chrome trace-event JSON, or Perfetto's native protobuf). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "timeline.h"
#include "writer_internal.h"

static void pa_export_usage(FILE *out)
{
    fprintf(out,
        "usage: profagent export [--format perfetto|perfetto-json|perfetto-proto|pftrace] FILE.db\n"
        "                        [-o OUT] [--force-overwrite]\n\n"
        "  --format perfetto, perfetto-json   Chrome trace-event JSON (default; ui.perfetto.dev,\n"
        "                      Perfetto's trace processor and chrome://tracing open it)\n"
        "  --format perfetto-proto, pftrace   Perfetto's native protobuf trace (smaller, faster to\n"
        "                      load for large sessions)\n"
        "  -o, --output OUT    the file to write (default FILE.json / FILE.pftrace next to the DB;\n"
        "                      '-' = stdout); an existing file is refused unless --force-overwrite\n\n"
        "Tracks: per process and thread (Level Zero API calls and OS runtime calls on the thread,\n"
        "device memory calls and each HGTX domain's push/pop ranges on child tracks, start/end\n"
        "ranges per process and domain), per device engine and queue (kernels, copies, fills; split\n"
        "into numbered sub-tracks where operations overlap, so no track holds overlapping slices),\n"
        "flows from each launching call to its device operations, counters of memory in use per\n"
        "device. Times are ns from the session start; the absolute anchor (CLOCK_MONOTONIC and\n"
        "CLOCK_REALTIME of time 0) is in the JSON's \"otherData\" and the protobuf's clock snapshot\n"
        "and 'session start' event.\n");
}

int pa_cli_export(int argc, char **argv)
{
    const char *fmt = "perfetto", *db_path = NULL, *out_path = NULL;
    int force = 0, proto = 0;
    char err[2048], defpath[4096], tmp[4200];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            pa_export_usage(stdout);
            return PA_CLI_OK;
        } else if (strcmp(a, "--force-overwrite") == 0) {
            force = 1;
        } else if ((strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0 || strcmp(a, "-o") == 0 ||
                    strcmp(a, "--output") == 0)) {
            if (i + 1 >= argc) {
                pa_cli_error("export: option %s needs a value", a);
                return PA_CLI_EUSAGE;
            }
            if (a[1] == 'o' || a[2] == 'o')
                out_path = argv[++i];
            else
                fmt = argv[++i];
        } else if (strncmp(a, "--format=", 9) == 0) {
            fmt = a + 9;
        } else if (strncmp(a, "--output=", 9) == 0) {
            out_path = a + 9;
        } else if (a[0] == '-' && a[1]) {
            pa_cli_error("export: unknown option '%s'; accepted: --format, -o/--output, --force-overwrite, --help", a);
            return PA_CLI_EUSAGE;
        } else if (db_path) {
            pa_cli_error("export: one database file expected, got '%s' and '%s'", db_path, a);
            return PA_CLI_EUSAGE;
        } else
            db_path = a;
    }
    if (strcasecmp(fmt, "perfetto") == 0 || strcasecmp(fmt, "perfetto-json") == 0 || strcasecmp(fmt, "json") == 0)
        proto = 0;
    else if (strcasecmp(fmt, "perfetto-proto") == 0 || strcasecmp(fmt, "pftrace") == 0 ||
             strcasecmp(fmt, "proto") == 0)
        proto = 1;
    else {
        pa_cli_error("export: --format '%s' is not accepted; accepted: perfetto (JSON), perfetto-json,"
                     " perfetto-proto, pftrace", fmt);
        return PA_CLI_EUSAGE;
    }
    if (!db_path) {
        pa_cli_error("export: no database file given; see 'profagent export --help'");
        return PA_CLI_EUSAGE;
    }
    /* "-o trace.pftrace" with the default format means the protobuf */
    if (out_path && strcmp(fmt, "perfetto") == 0) {
        size_t n = strlen(out_path);
        proto = n > 8 && strcmp(out_path + n - 8, ".pftrace") == 0;
    }
    if (!out_path) {
        size_t n = strlen(db_path);
        int cut = n > 3 && strcmp(db_path + n - 3, ".db") == 0 ? 3 : 0;
        snprintf(defpath, sizeof defpath, "%.*s.%s", (int)(n - (size_t)cut), db_path, proto ? "pftrace" : "json");
        out_path = defpath;
    }
    int to_stdout = strcmp(out_path, "-") == 0;
    int dev = !to_stdout && pa_cli_output_is_device(out_path); /* /dev/stdout, a FIFO: in place */
    if (!to_stdout && !dev && !force && access(out_path, F_OK) == 0) {
        pa_cli_error("export: '%s' exists; give --force-overwrite to replace it", out_path);
        return PA_CLI_EDATA;
    }
    sqlite3 *db = NULL;
    if (pa_report_db_open(db_path, &db, err, sizeof err) != PA_REP_OK) {
        pa_cli_error("export: %s", err);
        return PA_CLI_EDATA;
    }
    pa_tl_t tl;
    if (pa_tl_load(db, &tl, err, sizeof err) != 0) {
        pa_cli_error("export: %s: %s", db_path, err);
        sqlite3_close(db);
        return PA_CLI_EDATA;
    }
    sqlite3_close(db);
    FILE *out = stdout;
    if (!to_stdout) {
        snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
        out = fopen(dev ? out_path : tmp, "wb");
        if (!out) {
            pa_cli_error("export: cannot write '%s': %m", out_path);
            pa_tl_free(&tl);
            return PA_CLI_EDATA;
        }
    }
    long n = proto ? pa_tl_write_pftrace(&tl, out) : pa_tl_write_json(&tl, out);
    int rc = n < 0 ? PA_CLI_EDATA : PA_CLI_OK;
    if (to_stdout) {
        if ((fflush(stdout) != 0 || ferror(stdout)) && rc == PA_CLI_OK)
            rc = PA_CLI_EDATA;
        if (rc)
            pa_cli_error("export: writing the output failed: %m");
    } else {
        if ((fclose(out) != 0 || n < 0) && rc == PA_CLI_OK)
            rc = PA_CLI_EDATA;
        if (rc == PA_CLI_EDATA)
            pa_cli_error("export: writing '%s' failed: %m", out_path);
        else if (!dev && rename(tmp, out_path) != 0) {
            pa_cli_error("export: cannot create '%s': %m", out_path);
            rc = PA_CLI_EDATA;
        }
        if (rc && !dev)
            remove(tmp);
    }
    if (rc == PA_CLI_OK && !to_stdout) {
        /* the timeline's own counts, the same whatever the format; the format's unit after
         * them (a slice is one "X" event in JSON, a begin and an end TrackEvent in the proto,
         * a flow two JSON events but a field of the slices in the proto) */
        size_t marks = 0;
        for (size_t i = 0; i < tl.nslices; i++)
            marks += tl.slices[i].cat == PA_TL_MARK;
        fprintf(stderr, "profagent: export: %s: %zu slices, %zu instants, %zu counter samples, %zu flows on %zu"
                " tracks (%ld %s)\n", out_path, tl.nslices - marks, marks, tl.ncounters, tl.nflows, tl.ntracks, n,
                proto ? "TrackEvents" : "JSON trace events");
    }
    pa_tl_free(&tl);
    return rc;
}
