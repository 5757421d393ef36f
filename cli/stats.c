/* stats.c - `profagent stats`: parses the report requests, opens the DB, prints the reports. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "writer_internal.h"

#define PA_MAX_REPORTS 32
#define PA_MAX_FORMATS 4

typedef struct pa_stats_args {
    const char *reports[PA_MAX_REPORTS]; int nreports;
    char *report_buf[PA_MAX_REPORTS]; int nbufs;      /* pieces of comma lists (freed at exit) */
    const char *format, *output, *db, *help_report, *filter_time, *timeunit;
    const char *groups[PA_MAX_REPORTS]; int ngroups;  /* --callstack-group-config rules */
    int list, help, help_reports, force;
    const char **dbs; int ndbs;                       /* every FILE.db given (several: merged first) */
} pa_stats_args_t;

/* `profagent stats FILE.db` without -r: nsys's habit of a default set, here the summaries of
 * each source (a report whose source recorded nothing says so on stderr and prints its header). */
static const char *const pa_stats_default_set[] = {
    "ze_api_sum", "kern_sum", "mem_time_sum", "mem_size_sum", "hgtx_sum", "osrt_sum", NULL,
};

static void pa_stats_usage(FILE *out)
{
    fprintf(out,
        "usage: profagent stats [-r REPORT[:opt[:opt]][,REPORT...]] [-r ...] [--format F[,F...]]\n"
        "                       [--output PREFIX|-] [--timeunit ns|us|ms|s] [--force-overwrite] FILE.db [FILE.db ...]\n"
        "       profagent stats --help-report NAME | --help-reports[=NAME] | --list\n\n"
        "  -r, --report SPEC   a report and its options, e.g. hgtx_sum:rows=10:thread=42\n"
        "                      (repeatable, or a comma list; options are 'flag' or 'key=value',\n"
        "                      ':'-separated; names are case-insensitive). Without -r: the default\n"
        "                      set ze_api_sum, kern_sum, mem_time_sum, mem_size_sum, hgtx_sum, osrt_sum\n"
        "  -f, --format F      csv (default, the spec's layout), tsv, table, json; case-insensitive;\n"
        "                      a comma list (csv,json) needs --output PREFIX: one file per format\n"
        "  -o, --output PREFIX one file per report and format: PREFIX_<report>.<csv|tsv|txt|json>\n"
        "                      ('-' or no --output: stdout; a device or FIFO: written as is);\n"
        "                      never partial on error; an existing\n"
        "                      file is refused unless --force-overwrite\n"
        "  --timeunit U        time columns in ns (default), us, ms or s (exact decimal shift;\n"
        "                      column titles say the unit)\n"
        "  --force-overwrite   replace existing output files\n"
        "  --callstack-group-config NAME=RE1/RE2/...\n"
        "                      a call-stack group rule for device_memory_usage_* (repeatable)\n"
        "  --filter-time FROM:TO  only events in [FROM, TO] ns after the session start\n"
        "                      (TO empty or 0: the session end); accepted by\n"
        "                      device_memory_usage_summary/_detail only, an error with others\n"
        "  --help-report NAME  the report's description, options and columns\n"
        "  --help-reports      every report with its one-line description (=NAME: as --help-report)\n"
        "  --list              the report names and aliases\n"
        "  several FILE.db     merged first (as 'profagent merge' does, into a temporary file that is\n"
        "                      removed afterwards): the reports cover all their processes\n\n"
        "Exit status: 0 ok (a report without data is noted on stderr), 1 bad or missing DB,\n"
        "unwritable or existing output, 2 usage error.\n");
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

/* 1 when the text up to the first ':' or ',' (or the end) names a report. */
static int pa_names_report(const char *s, size_t len)
{
    char name[128];
    size_t n = strcspn(s, ":,");
    if (n > len)
        n = len;
    if (n == 0 || n >= sizeof name)
        return 0;
    memcpy(name, s, n);
    name[n] = '\0';
    return pa_report_find(name) != NULL;
}

/* -r a,b:opt,c: splits at the commas that start another report name, so a regex option
 * holding a comma (range=a,b) stays whole. */
static int pa_stats_add_reports(pa_stats_args_t *a, const char *v)
{
    /* an empty element (",b", "a,", "a,,b"): one message, not "unknown report 'a,'" */
    size_t vl = strlen(v);
    int empty = vl == 0 || v[0] == ',' || v[vl - 1] == ',';
    for (const char *c = strstr(v, ",,"); c && !empty; c = strstr(c + 1, ",,"))
        empty = pa_names_report(c + 2, strlen(c + 2)) || c[2] == ',';
    if (empty) {
        pa_cli_error("stats: -r '%s': empty report name in the list (a comma at the start or the end, or two"
                     " in a row); accepted: report names separated by single commas, e.g. -r ze_api_sum,osrt_sum"
                     " (profagent stats --help-reports lists them)", v);
        return PA_CLI_EUSAGE;
    }
    const char *p = v;
    while (1) {
        const char *q = p;
        for (const char *c = strchr(p, ','); c; c = strchr(c + 1, ','))
            if (pa_names_report(c + 1, strlen(c + 1))) {
                q = c;
                break;
            }
        size_t len = q != p ? (size_t)(q - p) : strlen(p);
        if (a->nreports == PA_MAX_REPORTS) {
            pa_cli_error("stats: at most %d reports per call", PA_MAX_REPORTS);
            return PA_CLI_EUSAGE;
        }
        char *piece = strndup(p, len);
        if (!piece)
            return PA_CLI_EDATA;
        a->report_buf[a->nbufs++] = piece;
        a->reports[a->nreports++] = piece;
        if (q == p)
            return PA_CLI_OK;
        p = q + 1;
    }
}

static void pa_stats_free(pa_stats_args_t *a)
{
    for (int i = 0; i < a->nbufs; i++)
        free(a->report_buf[i]);
    a->nbufs = 0;
    free(a->dbs);
    a->dbs = NULL;
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
        else if (pa_is_opt(s, "--timeunit", NULL)) { lng = "--timeunit"; dst = &a->timeunit; }
        else if (pa_is_opt(s, "--help-report", NULL)) { lng = "--help-report"; dst = &a->help_report; }
        else if (pa_is_opt(s, "--filter-time", NULL)) { lng = "--filter-time"; dst = &a->filter_time; }
        else if (pa_is_opt(s, "--callstack-group-config", NULL)) { lng = "--callstack-group-config"; }
        else if (strcmp(s, "--help-reports") == 0) { a->help_reports = 1; continue; }
        else if (strncmp(s, "--help-reports=", 15) == 0) { a->help_report = s + 15; continue; }
        else if (strcmp(s, "--force-overwrite") == 0) { a->force = 1; continue; }
        else if (strcmp(s, "--list") == 0) { a->list = 1; continue; }
        else if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) { a->help = 1; continue; }
        else if (s[0] == '-' && s[1]) {
            pa_cli_error("stats: unknown option '%s'; accepted: -r/--report, -f/--format,"
                         " -o/--output, --timeunit, --force-overwrite, --callstack-group-config,"
                         " --filter-time, --help-report, --help-reports, --list, --help", s);
            return PA_CLI_EUSAGE;
        } else {
            if (!a->dbs && !(a->dbs = calloc((size_t)argc, sizeof *a->dbs)))
                return PA_CLI_EDATA;
            a->dbs[a->ndbs++] = s;
            a->db = a->dbs[0];
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
        } else {
            int rc = pa_stats_add_reports(a, v);
            if (rc)
                return rc;
        }
    }
    return PA_CLI_OK;
}

typedef struct pa_stats_fmt { int fmt; const char *ext; } pa_stats_fmt_t;

/* --format F[,F...] (case-insensitive) into fmts; returns their count, or -1 after the message. */
static int pa_stats_formats(const char *f, pa_stats_fmt_t *fmts)
{
    static const struct { const char *name; int fmt; const char *ext; } known[] = {
        {"csv", PA_FMT_CSV, "csv"}, {"tsv", PA_FMT_TSV, "tsv"},
        {"table", PA_FMT_TABLE, "txt"}, {"json", PA_FMT_JSON, "json"},
    };
    int n = 0;
    if (!f) {
        fmts[0].fmt = PA_FMT_CSV;
        fmts[0].ext = "csv";
        return 1;
    }
    for (const char *p = f;; p++) {
        size_t len = strcspn(p, ",");
        size_t k = 0;
        if (len == 0) { /* "csv,", ",json", "csv,,json" */
            pa_cli_error("stats: --format '%s' has an empty format in its list; accepted: csv, tsv, table, json,"
                         " or a comma list of them (e.g. csv,json) with --output PREFIX", f);
            return -1;
        }
        while (k < 4 && !(strlen(known[k].name) == len && strncasecmp(known[k].name, p, len) == 0))
            k++;
        if (k == 4) {
            pa_cli_error("stats: --format '%.*s' is not accepted; accepted: csv, tsv, table, json"
                         " (or a comma list of them with --output PREFIX)", (int)len, p);
            return -1;
        }
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= fmts[j].fmt == known[k].fmt;
        if (!dup && n < PA_MAX_FORMATS) {
            fmts[n].fmt = known[k].fmt;
            fmts[n++].ext = known[k].ext;
        }
        p += len;
        if (!*p)
            break;
    }
    return n;
}

/* --timeunit ns|us|ms|s (case-insensitive): the decimal shift; -1 after the message. */
static int pa_stats_timeunit(const char *u)
{
    static const char *const names[4] = {"ns", "us", "ms", "s"};
    if (!u)
        return 0;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(u, names[i]) == 0)
            return 3 * i;
    pa_cli_error("stats: --timeunit '%s' is not accepted; accepted: ns, us, ms, s", u);
    return -1;
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

/* The spool a process that died left next to the DB it meant (session/session.c names it
 * "<db>.<pid>.<tag>.spool.zst"), when `db` does not exist. Returns 0 with its name, or -1. */
static int pa_stats_find_spool(const char *db, char *out, size_t sz)
{
    return access(db, F_OK) == 0 ? -1 : pa_spool_beside(db, out, sz);
}

/* One report in one format: the table banner (table form, nsys's " ** Title (name):"), the
 * rows, and a note on stderr when the DB has no data for it. JSON: one object keyed by report
 * name (a name given again gets "#2", "#3"...), the shape whatever the number of reports. */
static int pa_stats_one(sqlite3 *db, const pa_stats_args_t *a, pa_report_req_t *const *reqs, int i,
                        int fmt, int shift, FILE *out, int first, int note)
{
    char err[2048];
    size_t nrows = 0;
    if (fmt == PA_FMT_JSON) {
        int seen = 1;
        for (int j = 0; j < i; j++)
            seen += pa_report_name(reqs[j]) == pa_report_name(reqs[i]);
        fprintf(out, "%s\"%s", first ? "" : ",\n", pa_report_name(reqs[i]));
        if (seen > 1)
            fprintf(out, "#%d", seen);
        fputs("\": ", out);
    } else if (!first)
        fputc('\n', out);
    if (fmt == PA_FMT_TABLE)
        fprintf(out, " ** %s (%s):\n\n", pa_report_title(reqs[i]), pa_report_name(reqs[i]));
    if (pa_report_run_unit(db, reqs[i], fmt, shift, out, &nrows, err, sizeof err) != PA_REP_OK) {
        pa_cli_error("stats: %s", err);
        return PA_CLI_EDATA;
    }
    if (nrows == 0 && note)
        fprintf(stderr, "profagent: stats: note: %s%s has no data for report '%s' (%s): header only\n",
                a->ndbs > 1 ? "the merge of " : "", a->ndbs > 1 ? "the given DBs"  : a->db, pa_report_name(reqs[i]),
                pa_report_title(reqs[i]));
    return PA_CLI_OK;
}

/* Closes a temporary output and renames it over `path`; on any error removes it. */
static int pa_stats_commit(FILE *f, const char *tmp, const char *path, int rc)
{
    if ((ferror(f) || fclose(f) != 0) && rc == PA_CLI_OK) {
        pa_cli_error("stats: writing '%s' failed: %m", path);
        rc = PA_CLI_EDATA;
    }
    if (rc == PA_CLI_OK && rename(tmp, path) != 0) {
        pa_cli_error("stats: cannot create '%s': %m", path);
        rc = PA_CLI_EDATA;
    }
    if (rc != PA_CLI_OK)
        remove(tmp);
    return rc;
}

/* PREFIX_<report>[_N].<ext> (N when the report is asked again). */
static void pa_stats_path(const pa_stats_args_t *a, pa_report_req_t *const *reqs, int i,
                          const char *ext, char *buf, size_t sz)
{
    int seen = 1;
    for (int j = 0; j < i; j++)
        seen += pa_report_name(reqs[j]) == pa_report_name(reqs[i]);
    if (seen > 1)
        snprintf(buf, sz, "%s_%s_%d.%s", a->output, pa_report_name(reqs[i]), seen, ext);
    else
        snprintf(buf, sz, "%s_%s.%s", a->output, pa_report_name(reqs[i]), ext);
}

/* --output names a stream rather than a file prefix: absent or '-' (stdout), or an existing
 * device or FIFO (/dev/stdout, /dev/full, a named pipe) that is written as it is. */
static int pa_stats_output_is_stream(const char *output)
{
    struct stat st;
    return !output || strcmp(output, "-") == 0 ||
           (stat(output, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}

/* Every report to stdout, or the device --output names, in one format; a write error (full
 * disk, /dev/full, a closed pipe) is an error with its cause, exit status 1. */
static int pa_stats_to_stdout(sqlite3 *db, const pa_stats_args_t *a, pa_report_req_t *const *reqs,
                              int n, int fmt, int shift)
{
    int rc = PA_CLI_OK;
    int dev = a->output && strcmp(a->output, "-") != 0;
    FILE *out = dev ? fopen(a->output, "w") : stdout;
    if (!out) {
        pa_cli_error("stats: cannot write '%s': %m", a->output);
        return PA_CLI_EDATA;
    }
    if (fmt == PA_FMT_JSON)
        fputs("{\n", out);
    for (int i = 0; i < n && rc == PA_CLI_OK; i++)
        rc = pa_stats_one(db, a, reqs, i, fmt, shift, out, i == 0, 1);
    if (fmt == PA_FMT_JSON && rc == PA_CLI_OK)
        fputs("}\n", out);
    int bad = fflush(out) != 0 || ferror(out);
    int e = errno;
    if (dev && fclose(out) != 0 && !bad)
        bad = 1, e = errno;
    if (bad && rc == PA_CLI_OK) {
        errno = e;
        pa_cli_error("stats: writing the output failed (%s): %m", dev ? a->output : "stdout");
        rc = PA_CLI_EDATA;
    }
    return rc;
}

/* One file per report and format; all names are checked before anything is written, so an
 * existing file (without --force-overwrite) leaves nothing behind. */
static int pa_stats_to_files(sqlite3 *db, const pa_stats_args_t *a, pa_report_req_t *const *reqs,
                             int n, const pa_stats_fmt_t *fmts, int nf, int shift)
{
    char path[4096], tmp[4200];
    for (int i = 0; i < n && !a->force; i++)
        for (int f = 0; f < nf; f++) {
            pa_stats_path(a, reqs, i, fmts[f].ext, path, sizeof path);
            if (access(path, F_OK) == 0) {
                pa_cli_error("stats: '%s' exists; give --force-overwrite to replace it", path);
                return PA_CLI_EDATA;
            }
        }
    for (int i = 0; i < n; i++)
        for (int f = 0; f < nf; f++) {
            pa_stats_path(a, reqs, i, fmts[f].ext, path, sizeof path);
            snprintf(tmp, sizeof tmp, "%s.tmp", path);
            FILE *out = fopen(tmp, "w");
            if (!out) {
                pa_cli_error("stats: cannot write '%s': %m", path);
                return PA_CLI_EDATA;
            }
            if (fmts[f].fmt == PA_FMT_JSON)
                fputs("{\n", out);
            int rc = pa_stats_one(db, a, reqs, i, fmts[f].fmt, shift, out, 1, f == 0);
            if (fmts[f].fmt == PA_FMT_JSON)
                fputs("}\n", out);
            if ((rc = pa_stats_commit(out, tmp, path, rc)) != PA_CLI_OK)
                return rc;
        }
    return PA_CLI_OK;
}

static int pa_stats_reports(const pa_stats_args_t *a, const pa_stats_fmt_t *fmts, int nf, int shift)
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
        char spool[4096], why[2048];
        if (n > 10 && strcmp(a->db + n - 10, ".spool.zst") == 0) /* a dead process's spool */
            pa_cli_error("stats: '%s' is a spool, not a DB: the process died before writing its DB; "
                         "build one with: profagent recover %s", a->db, a->db);
        else if (pa_stats_find_spool(a->db, spool, sizeof spool) == 0 && pa_spool_why(spool, why, sizeof why) == 0)
            pa_cli_error("stats: %s; the DB's finisher process could not write it: %s", err, why);
        else if (pa_stats_find_spool(a->db, spool, sizeof spool) == 0)
            pa_cli_error("stats: %s; the process left the spool '%s' (it died before writing its DB):"
                         " build the DB with: profagent recover %s", err, spool, spool);
        else
            pa_cli_error("stats: %s", err);
        rc = PA_CLI_EDATA;
    }
    if (rc == PA_CLI_OK) {
        if (pa_stats_output_is_stream(a->output))
            rc = pa_stats_to_stdout(db, a, reqs, a->nreports, fmts[0].fmt, shift);
        else
            rc = pa_stats_to_files(db, a, reqs, a->nreports, fmts, nf, shift);
    }
    for (int i = 0; i < a->nreports; i++)
        pa_report_req_free(reqs[i]);
    sqlite3_close(db);
    return rc;
}

/* Several DBs: merged into a temporary directory (TMPDIR or /tmp), the reports run on the
 * merged DB, which is removed afterwards. */
static int pa_stats_merged(pa_stats_args_t *a, const pa_stats_fmt_t *fmts, int nf, int shift)
{
    const char *tmpdir = getenv("TMPDIR");
    char dir[4096], db[4200];
    snprintf(dir, sizeof dir, "%s/profagent-stats-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        pa_cli_error("stats: cannot create a temporary directory for merging %d DBs (%s): %s", a->ndbs, dir,
                     strerror(errno));
        return PA_CLI_EDATA;
    }
    snprintf(db, sizeof db, "%s/merged.db", dir);
    int rc = pa_cli_merge_to("stats", db, a->dbs, (size_t)a->ndbs, 0);
    if (rc == PA_CLI_OK) {
        a->db = db;
        rc = pa_stats_reports(a, fmts, nf, shift);
        a->db = a->dbs[0];
    }
    unlink(db);
    rmdir(dir);
    return rc;
}

static int pa_stats_main(pa_stats_args_t *a)
{
    char err[2048];
    pa_stats_fmt_t fmts[PA_MAX_FORMATS];
    int nf, shift, rc;
    if (a->help) {
        pa_stats_usage(stdout);
        return PA_CLI_OK;
    }
    if (a->list || a->help_reports) {
        if (a->db || a->nreports) { /* "--list extra": not silently ignored */
            pa_cli_error("stats: --list%s takes no database or report (got '%s'); usage: profagent stats --list",
                         a->list ? "" : "/--help-reports", a->db ? a->db : a->reports[0]);
            return PA_CLI_EUSAGE;
        }
        pa_report_list(stdout);
        return PA_CLI_OK;
    }
    if (a->help_report) {
        if (pa_report_help(stdout, a->help_report, err, sizeof err) != PA_REP_OK) {
            pa_cli_error("stats: %s", err);
            return PA_CLI_EUSAGE;
        }
        return PA_CLI_OK;
    }
    if ((nf = pa_stats_formats(a->format, fmts)) < 0 || (shift = pa_stats_timeunit(a->timeunit)) < 0)
        return PA_CLI_EUSAGE;
    if (nf > 1 && pa_stats_output_is_stream(a->output)) {
        pa_cli_error("stats: --format '%s' lists %d formats: give --output PREFIX (one file per"
                     " report and format), stdout takes one", a->format, nf);
        return PA_CLI_EUSAGE;
    }
    if (a->output && !a->output[0]) {
        pa_cli_error("stats: --output needs a file name prefix, or '-' for stdout");
        return PA_CLI_EUSAGE;
    }
    if ((rc = pa_stats_filter_time(a->filter_time)) != 0)
        return rc;
    /* a malformed rule is a usage error (its own message names it), not a report grouped otherwise
     * than asked */
    for (int i = 0; i < a->ngroups; i++) {
        char *why = NULL;
        size_t wlen = 0;
        FILE *m = open_memstream(&why, &wlen);
        int bad = !m || pa_report_mem_add_group_rule(a->groups[i], m) != 0;
        if (m)
            fclose(m);
        if (bad) {
            /* the rule parser's words are the agent's, which goes on without the rule: here it is refused */
            char *at = why ? strstr(why, " ignored: ") : NULL, *nl = why ? strchr(why, '\n') : NULL;
            if (nl)
                *nl = '\0';
            if (at)
                pa_cli_error("stats: --callstack-group-config '%s' is not accepted: %s", a->groups[i],
                             at + strlen(" ignored: "));
            else
                pa_cli_error("stats: --callstack-group-config '%s' is not accepted%s%s", a->groups[i], why ? ": " : "",
                             why ? why : "");
            free(why);
            return PA_CLI_EUSAGE;
        }
        free(why);
    }
    if (!a->db) {
        pa_cli_error("stats: no database file given; see 'profagent stats --help'");
        return PA_CLI_EUSAGE;
    }
    if (a->nreports == 0)
        for (int i = 0; pa_stats_default_set[i]; i++)
            if (pa_report_find(pa_stats_default_set[i]))
                a->reports[a->nreports++] = pa_stats_default_set[i];
    if (a->ndbs > 1)
        return pa_stats_merged(a, fmts, nf, shift);
    return pa_stats_reports(a, fmts, nf, shift);
}

int pa_cli_stats(int argc, char **argv)
{
    pa_stats_args_t a;
    int rc = pa_stats_parse(argc, argv, &a);
    if (rc == PA_CLI_OK)
        rc = pa_stats_main(&a);
    pa_stats_free(&a);
    return rc;
}
