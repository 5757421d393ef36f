/* stats.c - `profagent stats`: parses the report requests, opens the DB, prints the reports. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "writer_internal.h"

#define PA_MAX_REPORTS 32

typedef struct pa_stats_args {
    const char *reports[PA_MAX_REPORTS]; int nreports;
    const char *format, *output, *db, *help_report, *filter_time;
    const char *groups[PA_MAX_REPORTS]; int ngroups;  /* --callstack-group-config rules */
    int list, help;
} pa_stats_args_t;

static void pa_stats_usage(FILE *out)
{
    fprintf(out,
        "usage: profagent stats -r REPORT[:opt[:opt]] [-r ...] [--format csv|table|json]\n"
        "                       [--output FILE] FILE.db\n"
        "       profagent stats --help-report NAME\n"
        "       profagent stats --list\n\n"
        "  -r, --report SPEC   a report and its options, e.g. hgtx_sum:rows=10:thread=42\n"
        "                      (repeatable; options are 'flag' or 'key=value', ':'-separated)\n"
        "  -f, --format F      csv (default, the spec's style), table, json\n"
        "  -o, --output FILE   write to FILE instead of stdout (never partial on error)\n"
        "  --callstack-group-config NAME=RE1/RE2/...\n"
        "                      a call-stack group rule for device_memory_usage_* (repeatable)\n"
        "  --filter-time FROM:TO  only events in [FROM, TO] ns after the session start\n"
        "                      (TO empty or 0: the session end); accepted by\n"
        "                      device_memory_usage_summary/_detail only, an error with others\n"
        "  --help-report NAME  the report's description, options and columns\n"
        "  --list              the report names and aliases\n");
}

/* Value of an option given as "--opt V" or "--opt=V"; advances *i. NULL when missing. */
static const char *pa_opt_arg(int argc, char **argv, int *i, const char *lng, const char *shrt)
{
    const char *a = argv[*i];
    size_t n = strlen(lng);
    if (strncmp(a, lng, n) == 0 && a[n] == '=')
        return a + n + 1;
    if (strcmp(a, lng) == 0 || (shrt && strcmp(a, shrt) == 0)) {
        if (*i + 1 >= argc)
            return NULL;
        return argv[++*i];
    }
    return NULL;
}

static int pa_is_opt(const char *a, const char *lng, const char *shrt)
{
    size_t n = strlen(lng);
    return strcmp(a, lng) == 0 || (strncmp(a, lng, n) == 0 && a[n] == '=') ||
           (shrt && strcmp(a, shrt) == 0);
}

static int pa_stats_parse(int argc, char **argv, pa_stats_args_t *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char **dst = NULL;
        const char *lng = NULL, *shrt = NULL;
        if (pa_is_opt(s, "--report", "-r")) { lng = "--report"; shrt = "-r"; }
        else if (pa_is_opt(s, "--format", "-f")) { lng = "--format"; shrt = "-f"; dst = &a->format; }
        else if (pa_is_opt(s, "--output", "-o")) { lng = "--output"; shrt = "-o"; dst = &a->output; }
        else if (pa_is_opt(s, "--help-report", NULL)) { lng = "--help-report"; dst = &a->help_report; }
        else if (pa_is_opt(s, "--filter-time", NULL)) { lng = "--filter-time"; dst = &a->filter_time; }
        else if (pa_is_opt(s, "--callstack-group-config", NULL)) { lng = "--callstack-group-config"; }
        else if (pa_is_opt(s, "--callstack-group-config", NULL)) {
            /* device_memory_usage_* group rule (mem owner, issue 6); repeatable, in order. A
             * malformed rule gets a message naming it; the valid ones still apply. */
            const char *v = pa_opt_arg(argc, argv, &i, "--callstack-group-config", NULL);
            if (!v) {
                pa_cli_error("stats: option --callstack-group-config needs a value: name=frame_regex1/frame_regex2/...");
                return PA_CLI_EUSAGE;
            }
            pa_report_mem_add_group_rule(v, stderr);
            continue;
        }
        else if (strcmp(s, "--list") == 0) { a->list = 1; continue; }
        else if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) { a->help = 1; continue; }
        else if (s[0] == '-' && s[1]) {
            pa_cli_error("stats: unknown option '%s'; accepted: -r/--report, -f/--format,"
                         " -o/--output, --callstack-group-config, --filter-time, --help-report, --list, --help", s);
            return PA_CLI_EUSAGE;
        } else if (a->db) {
            pa_cli_error("stats: one database file expected, got '%s' and '%s'", a->db, s);
            return PA_CLI_EUSAGE;
        } else {
            a->db = s;
            continue;
        }
        const char *v = pa_opt_arg(argc, argv, &i, lng, shrt);
        if (!v) {
            pa_cli_error("stats: option %s needs a value", lng);
            return PA_CLI_EUSAGE;
        }
        if (dst) {
            *dst = v;
        } else if (strcmp(lng, "--callstack-group-config") == 0) {
            if (a->ngroups == PA_MAX_REPORTS) {
                pa_cli_error("stats: at most %d --callstack-group-config rules", PA_MAX_REPORTS);
                return PA_CLI_EUSAGE;
            }
            a->groups[a->ngroups++] = v;
        } else if (a->nreports == PA_MAX_REPORTS) {
            pa_cli_error("stats: at most %d reports per call", PA_MAX_REPORTS);
            return PA_CLI_EUSAGE;
        } else {
            a->reports[a->nreports++] = v;
        }
    }
    return PA_CLI_OK;
}

static int pa_stats_format(const char *f, int *fmt)
{
    if (!f || strcmp(f, "csv") == 0)
        *fmt = PA_FMT_CSV;
    else if (strcmp(f, "table") == 0)
        *fmt = PA_FMT_TABLE;
    else if (strcmp(f, "json") == 0)
        *fmt = PA_FMT_JSON;
    else {
        pa_cli_error("stats: --format '%s' is not accepted; accepted: csv, table, json", f);
        return PA_CLI_EUSAGE;
    }
    return PA_CLI_OK;
}

/* --filter-time FROM:TO (ns after the session start; TO empty or 0 = the end). */
static int pa_stats_filter_time(const char *v)
{
    char *end;
    unsigned long long from, to = 0;
    if (!v)
        return PA_CLI_OK;
    errno = 0;
    from = strtoull(v, &end, 10);
    if (end == v || *end != ':' || v[0] == '-' || errno)
        goto bad;
    if (end[1]) {
        const char *t = end + 1;
        to = strtoull(t, &end, 10);
        if (*end || t[0] == '-' || errno || (to && to < from))
            goto bad;
    }
    pa_report_mem_set_time_range(from, to);
    return PA_CLI_OK;
bad:
    pa_cli_error("stats: --filter-time '%s' is not accepted; expected FROM:TO in ns after the"
                 " session start, FROM <= TO (TO empty or 0: the session end), e.g. 0:5000000", v);
    return PA_CLI_EUSAGE;
}

/* Runs every parsed report into `out`. JSON has one shape whatever the number of -r: an object
 * keyed by report name (a name given again gets "#2", "#3"...), each value the array of rows. */
static int pa_stats_emit(sqlite3 *db, pa_report_req_t **reqs, int n, int fmt, FILE *out)
{
    char err[2048];
    if (fmt == PA_FMT_JSON)
        fputs("{\n", out);
    for (int i = 0; i < n; i++) {
        if (fmt == PA_FMT_JSON) {
            int seen = 1;
            for (int j = 0; j < i; j++)
                seen += reqs[j]->def == reqs[i]->def;
            fprintf(out, "%s\"%s", i ? ",\n" : "", reqs[i]->def->name);
            if (seen > 1)
                fprintf(out, "#%d", seen);
            fputs("\": ", out);
        } else if (i)
            fputc('\n', out);
        if (pa_report_run(db, reqs[i], fmt, out, err, sizeof err) != PA_REP_OK) {
            pa_cli_error("stats: %s", err);
            return PA_CLI_EDATA;
        }
    }
    if (fmt == PA_FMT_JSON)
        fputs("}\n", out);
    return PA_CLI_OK;
}

/* --filter-time is applied by the device-memory reports only: any other report given with it
 * is a usage error naming the reports that accept it (not a silently ignored option). */
static int pa_stats_check_filter_time(const pa_stats_args_t *a, const pa_report_req_t *req)
{
    static const char pfx[] = "device_memory_usage_";
    if (!a->filter_time || strncmp(req->def->name, pfx, sizeof pfx - 1) == 0)
        return PA_CLI_OK;
    pa_cli_error("stats: --filter-time does not apply to report '%s'; it is accepted by"
                 " device_memory_usage_summary and device_memory_usage_detail only", req->def->name);
    return PA_CLI_EUSAGE;
}

/* The spool "<db>.<pid>.<tag>.spool.zst" a process that died left next to the DB it meant
 * (session/session.c names it so), when `db` does not exist. Returns 0 with its name, or -1. */
static int pa_stats_find_spool(const char *db, char *out, size_t sz)
{
    if (access(db, F_OK) == 0)
        return -1;
    const char *slash = strrchr(db, '/');
    char dir[4096];
    const char *base = slash ? slash + 1 : db;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - db) : 1, slash ? db : ".");
    if (slash == db)
        snprintf(dir, sizeof dir, "/");
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t bl = strlen(base);
    int rc = -1;
    for (struct dirent *e; rc && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > bl + 11 && strncmp(e->d_name, base, bl) == 0 && e->d_name[bl] == '.' &&
            strcmp(e->d_name + n - 10, ".spool.zst") == 0) {
            int w = snprintf(out, sz, "%s%s%s", slash ? dir : "", slash && slash != db ? "/" : "", e->d_name);
            rc = w > 0 && (size_t)w < sz ? 0 : -1;
            if (rc)
                break;
        }
    }
    closedir(d);
    return rc;
}

/* Output goes to a temporary file renamed at the end, so an error leaves no partial file. */
static int pa_stats_reports(const pa_stats_args_t *a, int fmt)
{
    pa_report_req_t *reqs[PA_MAX_REPORTS] = {0};
    char err[2048];
    sqlite3 *db = NULL;
    int rc = PA_CLI_OK;
    for (int i = 0; i < a->nreports && rc == PA_CLI_OK; i++)
        if (pa_report_parse(a->reports[i], &reqs[i], err, sizeof err) != PA_REP_OK) {
            pa_cli_error("stats: %s", err);
            rc = PA_CLI_EUSAGE;
        }
    for (int i = 0; i < a->nreports && rc == PA_CLI_OK; i++)
        rc = pa_stats_check_filter_time(a, reqs[i]);
    if (rc == PA_CLI_OK && pa_report_db_open(a->db, &db, err, sizeof err) != PA_REP_OK) {
        size_t n = strlen(a->db);
        char spool[4096];
        if (n > 10 && strcmp(a->db + n - 10, ".spool.zst") == 0) /* a dead process's spool */
            pa_cli_error("stats: '%s' is a spool, not a DB: the process died before writing its DB; "
                         "build one with: profagent recover %s", a->db, a->db);
        else if (pa_stats_find_spool(a->db, spool, sizeof spool) == 0)
            pa_cli_error("stats: %s; the process left the spool '%s' (it died before writing its DB):"
                         " build the DB with: profagent recover %s", err, spool, spool);
        else
            pa_cli_error("stats: %s", err);
        rc = PA_CLI_EDATA;
    }
    if (rc == PA_CLI_OK) {
        char tmp[4096];
        FILE *out = stdout;
        if (a->output) {
            snprintf(tmp, sizeof tmp, "%s.tmp", a->output);
            out = fopen(tmp, "w");
            if (!out) {
                pa_cli_error("stats: cannot write '%s': %m", tmp);
                rc = PA_CLI_EDATA;
            }
        }
        if (out)
            rc = pa_stats_emit(db, reqs, a->nreports, fmt, out);
        if (out && out != stdout) {
            if (fclose(out) != 0 && rc == PA_CLI_OK) {
                pa_cli_error("stats: writing '%s' failed: %m", tmp);
                rc = PA_CLI_EDATA;
            }
            if (rc == PA_CLI_OK && rename(tmp, a->output) != 0) {
                pa_cli_error("stats: cannot create '%s': %m", a->output);
                rc = PA_CLI_EDATA;
            }
            if (rc != PA_CLI_OK)
                remove(tmp);
        } else if (out && fflush(out) != 0) {
            rc = PA_CLI_EDATA;
        }
    }
    for (int i = 0; i < a->nreports; i++)
        pa_report_req_free(reqs[i]);
    sqlite3_close(db);
    return rc;
}

int pa_cli_stats(int argc, char **argv)
{
    pa_stats_args_t a;
    char err[2048];
    int fmt, rc = pa_stats_parse(argc, argv, &a);
    if (rc)
        return rc;
    if (a.help) {
        pa_stats_usage(stdout);
        return PA_CLI_OK;
    }
    if (a.list) {
        pa_report_list(stdout);
        return PA_CLI_OK;
    }
    if (a.help_report) {
        if (pa_report_help(stdout, a.help_report, err, sizeof err) != PA_REP_OK) {
            pa_cli_error("stats: %s", err);
            return PA_CLI_EUSAGE;
        }
        return PA_CLI_OK;
    }
    if ((rc = pa_stats_format(a.format, &fmt)) != 0)
        return rc;
    if ((rc = pa_stats_filter_time(a.filter_time)) != 0)
        return rc;
    /* a malformed rule gets its own message; the valid rules still apply (issue 6) */
    for (int i = 0; i < a.ngroups; i++)
        pa_report_mem_add_group_rule(a.groups[i], stderr);
    if (a.nreports == 0 || !a.db) {
        pa_cli_error("stats: %s; see 'profagent stats --help'",
                     a.nreports ? "no database file given" : "no report given (-r REPORT)");
        return PA_CLI_EUSAGE;
    }
    return pa_stats_reports(&a, fmt);
}
