/* report.c - the report registry: lookup by name/alias, option parsing, --help-report, running. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report_util.h"

/* Reports of this file's owner; others add theirs through the weak tables pa_reports_ze,
 * pa_reports_hgtxdev, pa_reports_mem, pa_reports_misc (writer_internal.h). */
static const pa_report_def_t *const pa_reports_core[] = {
    &pa_report_hgtx_sum, &pa_report_hgtx_pushpop_trace, &pa_report_osrt_sum, NULL,
};

static const pa_report_def_t *const *pa_report_tables(size_t i)
{
    switch (i) {
    case 0: return pa_reports_core;
    case 1: return pa_reports_ze;
    case 2: return pa_reports_hgtxdev;
    case 3: return pa_reports_mem;
    case 4: return pa_reports_misc;
    case 5: return pa_reports_hostctr;
    case 6: return pa_reports_op;
    case 7: return pa_reports_pcs;
    case 8: return pa_reports_dm;
    case 9: return pa_reports_pccl;
    default: return NULL;
    }
}
#define PA_NTABLES 10

/* rows=<limit>: every report takes it (applied by pa_report_run() after the report sorted its
 * rows); a report that lists it in its own options just documents it there. */
static const pa_report_opt_t pa_opt_rows = {"rows", PA_OPT_INT, "<limit>", PA_REPORT_ROWS_HELP, NULL};

/* 1 when d declares an option of that name. */
static int pa_def_has_opt(const pa_report_def_t *d, const char *name)
{
    for (size_t i = 0; i < d->nopts && i < PA_REPORT_MAX_OPTS; i++)
        if (strcmp(d->opts[i].name, name) == 0)
            return 1;
    return 0;
}

const pa_report_def_t *pa_report_find(const char *name)
{
    for (size_t t = 0; t < PA_NTABLES; t++) {
        const pa_report_def_t *const *tab = pa_report_tables(t);
        for (size_t i = 0; tab && tab[i]; i++) {
            /* case-insensitive, as nsys takes report names */
            if (strcasecmp(tab[i]->name, name) == 0)
                return tab[i];
            for (size_t a = 0; a < 4 && tab[i]->aliases[a]; a++)
                if (strcasecmp(tab[i]->aliases[a], name) == 0)
                    return tab[i];
        }
    }
    return NULL;
}

void pa_report_list(FILE *out)
{
    for (size_t t = 0; t < PA_NTABLES; t++) {
        const pa_report_def_t *const *tab = pa_report_tables(t);
        for (size_t i = 0; tab && tab[i]; i++) {
            fprintf(out, "%s", tab[i]->name);
            for (size_t a = 0; a < 4 && tab[i]->aliases[a]; a++)
                fprintf(out, "%s%s", a ? ", " : " (alias: ", tab[i]->aliases[a]);
            fprintf(out, "%s -- %s\n", tab[i]->aliases[0] ? ")" : "", tab[i]->title);
        }
    }
}

void pa_report_names(char *buf, size_t sz)
{
    size_t n = 0;
    if (sz)
        buf[0] = '\0';
    for (size_t t = 0; t < PA_NTABLES; t++) {
        const pa_report_def_t *const *tab = pa_report_tables(t);
        for (size_t i = 0; tab && tab[i] && n < sz; i++) {
            int w = snprintf(buf + n, sz - n, "%s%s", n ? ", " : "", tab[i]->name);
            if (w < 0)
                return;
            n += (size_t)w;
        }
    }
}

int pa_report_help(FILE *out, const char *name, char *err, size_t errsz)
{
    const pa_report_def_t *d = pa_report_find(name);
    if (!d) {
        char names[1024];
        pa_report_names(names, sizeof names);
        snprintf(err, errsz, "unknown report '%s'; valid reports: %s", name, names);
        return PA_REP_EUSAGE;
    }
    fprintf(out, "%s -- %s\n\n", d->name, d->title);
    if (d->aliases[0]) {
        fprintf(out, "    Aliases:");
        for (size_t a = 0; a < 4 && d->aliases[a]; a++)
            fprintf(out, " %s", d->aliases[a]);
        fprintf(out, "\n\n");
    }
    fprintf(out, "    Options:\n");
    int extra_rows = !pa_def_has_opt(d, "rows");
    for (size_t i = 0; i < d->nopts + (size_t)extra_rows; i++) {
        const pa_report_opt_t *o = i < d->nopts ? &d->opts[i] : &pa_opt_rows;
        int takes_value = o->kind != PA_OPT_FLAG && o->arg && o->arg[0];
        fprintf(out, "        %s%s%s\n", o->name, takes_value ? "=" : "", takes_value ? o->arg : "");
        for (const char *p = o->help; p && *p;) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            fprintf(out, "            %.*s\n", (int)len, p);
            p += len + (nl ? 1 : 0);
        }
    }
    fprintf(out, "        Try 'profagent stats --help' for more information.\n\n    Output:\n");
    fprintf(out, "        Row# : Row number\n");
    for (size_t i = 0; i < d->ncols; i++)
        fprintf(out, "        %s : %s\n", d->cols[i].title, d->cols[i].help);
    fprintf(out, "\n");
    for (const char *p = d->description; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(out, "    %.*s\n", (int)len, p);
        p += len + (nl ? 1 : 0);
    }
    /* one column-name convention for every report, so output diffs against the spec */
    fprintf(out, "\n    Column names are the spec's verbatim (PPU = the Level Zero device, Stream/Strm =\n"
                 "    the command queue or immediate list); the descriptions give their Level Zero meaning.\n");
    return PA_REP_OK;
}

const pa_opt_val_t *pa_req_opt(const pa_report_req_t *req, const char *name)
{
    for (size_t i = 0; i < req->def->nopts && i < PA_REPORT_MAX_OPTS; i++)
        if (strcmp(req->def->opts[i].name, name) == 0)
            return req->vals[i].set ? &req->vals[i] : NULL;
    if (strcmp(name, "rows") == 0)
        return req->rows.set ? &req->rows : NULL;
    return NULL;
}

void pa_report_req_free(pa_report_req_t *req)
{
    if (!req)
        return;
    for (size_t i = 0; i < PA_REPORT_MAX_OPTS; i++)
        free(req->vals[i].s);
    free(req->rows.s);
    free(req);
}

/* "name1, name2=<arg>, ..." for error messages. */
static void pa_opt_names(const pa_report_def_t *d, char *buf, size_t sz)
{
    size_t n = 0;
    int extra_rows = !pa_def_has_opt(d, "rows");
    buf[0] = '\0';
    for (size_t i = 0; i < d->nopts + (size_t)extra_rows && n < sz; i++) {
        const pa_report_opt_t *o = i < d->nopts ? &d->opts[i] : &pa_opt_rows;
        int takes_value = o->kind != PA_OPT_FLAG && o->arg && o->arg[0];
        int w = snprintf(buf + n, sz - n, "%s%s%s%s", i ? ", " : "", o->name,
                         takes_value ? "=" : "", takes_value ? o->arg : "");
        if (w < 0)
            return;
        n += (size_t)w;
    }
}

static int pa_parse_u64(const char *s, int64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9') /* strtoull would skip blanks and take a sign: "rows= 5" is an error */
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > INT64_MAX)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* Parses one option value of kind o->kind into v. Returns 0 or PA_REP_EUSAGE. */
static int pa_parse_opt_value(const pa_report_def_t *d, const pa_report_opt_t *o, const char *val,
                              pa_opt_val_t *v, char *err, size_t errsz)
{
    if (v->set) { /* "rows=5:rows=6": which one was meant is not ours to guess */
        snprintf(err, errsz, "report '%s': option '%s' is given twice; give it once", d->name, o->name);
        return PA_REP_EUSAGE;
    }
    if (o->kind == PA_OPT_FLAG) {
        if (val) {
            snprintf(err, errsz, "report '%s': option '%s' takes no value (got '%s=%s')", d->name,
                     o->name, o->name, val);
            return PA_REP_EUSAGE;
        }
        v->set = 1;
        return 0;
    }
    if (!val || (!*val && o->kind != PA_OPT_REGEX)) {
        snprintf(err, errsz, "report '%s': option '%s' needs a value: %s=%s", d->name, o->name,
                 o->name, o->arg ? o->arg : "<value>");
        return PA_REP_EUSAGE;
    }
    free(v->s);
    v->s = strdup(val);
    v->nids = 0;
    if (!v->s) {
        snprintf(err, errsz, "out of memory");
        return PA_REP_EUSAGE;
    }
    switch (o->kind) {
    case PA_OPT_INT:
        if (pa_parse_u64(val, &v->i) != 0) {
            snprintf(err, errsz, "report '%s': option %s='%s' is not a non-negative integer",
                     d->name, o->name, val);
            return PA_REP_EUSAGE;
        }
        break;
    case PA_OPT_IDLIST: {
        const char *p = val;
        while (1) {
            char tok[32];
            size_t len = strcspn(p, "/");
            if (len == 0 || len >= sizeof tok || v->nids == PA_REPORT_MAX_IDS) {
                snprintf(err, errsz, "report '%s': option %s='%s' must be a '/'-separated list of"
                         " at most %d numeric ids, e.g. %s=1234/5678", d->name, o->name, val,
                         PA_REPORT_MAX_IDS, o->name);
                return PA_REP_EUSAGE;
            }
            memcpy(tok, p, len);
            tok[len] = '\0';
            if (pa_parse_u64(tok, &v->ids[v->nids]) != 0) {
                snprintf(err, errsz, "report '%s': option %s='%s': '%s' is not a numeric id",
                         d->name, o->name, val, tok);
                return PA_REP_EUSAGE;
            }
            v->nids++;
            if (!p[len])
                break;
            p += len + 1;
        }
        break;
    }
    case PA_OPT_REGEX:  /* checked once the ':'-split parts are joined (pa_check_regexes) */
        break;
    case PA_OPT_ENUM: {
        char acc[256];
        size_t n = 0;
        acc[0] = '\0';
        for (size_t i = 0; o->choices && o->choices[i]; i++) {
            if (strcmp(o->choices[i], val) == 0) {
                v->set = 1; /* (was returning before marking the option set) */
                return 0;
            }
            int w = snprintf(acc + n, sizeof acc - n, "%s'%s'", i ? ", " : "", o->choices[i]);
            if (w > 0 && (size_t)w < sizeof acc - n)
                n += (size_t)w;
        }
        snprintf(err, errsz, "report '%s': option %s='%s' is not accepted; accepted values: %s",
                 d->name, o->name, val, acc);
        return PA_REP_EUSAGE;
    }
    default:
        break;
    }
    v->set = 1;
    return 0;
}

/* The option `tok` ("name" or "name=value") names: *idx its index in d->opts, or
 * PA_REPORT_MAX_OPTS for the engine's rows= (pa_opt_rows). NULL when d takes no such option. */
static const pa_report_opt_t *pa_find_opt(const pa_report_def_t *d, const char *tok, size_t *idx)
{
    size_t klen = strcspn(tok, "=");
    for (size_t i = 0; i < d->nopts && i < PA_REPORT_MAX_OPTS; i++)
        if (strlen(d->opts[i].name) == klen && strncmp(d->opts[i].name, tok, klen) == 0) {
            *idx = i;
            return &d->opts[i];
        }
    if (klen == 4 && strncmp(tok, "rows", 4) == 0) {
        *idx = PA_REPORT_MAX_OPTS;
        return &pa_opt_rows;
    }
    return NULL;
}

static pa_opt_val_t *pa_req_val(pa_report_req_t *req, size_t idx)
{
    return idx == PA_REPORT_MAX_OPTS ? &req->rows : &req->vals[idx];
}

/* Compiles every regex option: an invalid one is named with its pattern and failing offset. */
static int pa_check_regexes(const pa_report_req_t *req, char *err, size_t errsz)
{
    const pa_report_def_t *d = req->def;
    char rerr[512];
    for (size_t i = 0; i < d->nopts && i < PA_REPORT_MAX_OPTS; i++) {
        if (d->opts[i].kind != PA_OPT_REGEX || !req->vals[i].set)
            continue;
        if (pa_regex_check(req->vals[i].s, rerr, sizeof rerr) != 0) {
            snprintf(err, errsz, "report '%s': option %s: %s", d->name, d->opts[i].name, rerr);
            return PA_REP_EUSAGE;
        }
    }
    return PA_REP_OK;
}

/* Options that exclude each other (kernel name modes): both given is a usage error, not a
 * silent choice. Returns 0, or -1 with err set. */
static int pa_check_conflicts(const pa_report_req_t *req, char *err, size_t errsz)
{
    static const char *const pairs[][2] = {{"base", "mangled"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pa_req_opt(req, pairs[i][0]) && pa_req_opt(req, pairs[i][1])) {
            snprintf(err, errsz, "report '%s': options '%s' and '%s' exclude each other; give one",
                     req->def->name, pairs[i][0], pairs[i][1]);
            return -1;
        }
    return 0;
}

/* Splits "a:b=c:d" at ':' into tokens; a token that names no option right after a regex
 * option is glued back to it, so range=a:b keeps its ':'. */
static int pa_parse_opts(pa_report_req_t *req, char *opts, char *err, size_t errsz)
{
    const pa_report_def_t *d = req->def;
    int last_regex = -1;
    for (char *tok = opts; tok;) {
        char *colon = strchr(tok, ':');
        if (colon)
            *colon = '\0';
        size_t idx;
        const pa_report_opt_t *o = pa_find_opt(d, tok, &idx);
        if (!o && last_regex >= 0) {
            pa_opt_val_t *v = &req->vals[last_regex];
            size_t n = strlen(v->s), m = strlen(tok);
            char *ns = realloc(v->s, n + m + 2);
            if (!ns)
                return PA_REP_EUSAGE;
            ns[n] = ':';
            memcpy(ns + n + 1, tok, m + 1);
            v->s = ns;
        } else if (!o) {
            char names[512];
            pa_opt_names(d, names, sizeof names);
            snprintf(err, errsz, "report '%s': unknown option '%s'; accepted options: %s", d->name,
                     tok, names);
            return PA_REP_EUSAGE;
        } else {
            const char *eq = strchr(tok, '=');
            if (pa_req_val(req, idx)->set) { /* a repeated option is a mistake, not "the last wins" */
                snprintf(err, errsz, "report '%s': option '%s' given twice; give it once", d->name, o->name);
                return PA_REP_EUSAGE;
            }
            int rc = pa_parse_opt_value(d, o, eq ? eq + 1 : NULL, pa_req_val(req, idx), err, errsz);
            if (rc)
                return rc;
            last_regex = o->kind == PA_OPT_REGEX ? (int)idx : -1;
        }
        tok = colon ? colon + 1 : NULL;
    }
    return pa_check_conflicts(req, err, errsz) ? PA_REP_EUSAGE : pa_check_regexes(req, err, errsz);
}

int pa_report_parse(const char *spec, pa_report_req_t **out, char *err, size_t errsz)
{
    *out = NULL;
    char *copy = strdup(spec ? spec : "");
    if (!copy) {
        snprintf(err, errsz, "out of memory");
        return PA_REP_EUSAGE;
    }
    char *colon = strchr(copy, ':');
    if (colon)
        *colon = '\0';
    const pa_report_def_t *d = pa_report_find(copy);
    if (!d) {
        char names[1024];
        pa_report_names(names, sizeof names);
        snprintf(err, errsz, "unknown report '%s'; valid reports: %s", copy, names);
        free(copy);
        return PA_REP_EUSAGE;
    }
    pa_report_req_t *req = calloc(1, sizeof *req);
    if (!req) {
        snprintf(err, errsz, "out of memory");
        free(copy);
        return PA_REP_EUSAGE;
    }
    int rc = PA_REP_OK;
    req->def = d;
    if (colon)
        rc = pa_parse_opts(req, colon + 1, err, errsz);
    free(copy);
    if (rc) {
        pa_report_req_free(req);
        return rc;
    }
    *out = req;
    return PA_REP_OK;
}

int pa_sql_tid_filter(const pa_report_req_t *req, const char *gtid_col, char *buf, size_t sz)
{
    static const char *const opt[2] = {"process", "thread"};
    static const char *const expr[2] = {"(%s >> 32)", "(%s & 4294967295)"};
    size_t n = strlen(buf);
    for (int k = 0; k < 2; k++) {
        const pa_opt_val_t *v = pa_req_opt(req, opt[k]);
        if (!v || !v->nids)
            continue;
        char col[128];
        snprintf(col, sizeof col, expr[k], gtid_col);
        int w = snprintf(buf + n, sz - n, " AND %s IN (", col);
        if (w < 0 || (size_t)w >= sz - n)
            return -1;
        n += (size_t)w;
        for (size_t i = 0; i < v->nids; i++) {
            w = snprintf(buf + n, sz - n, "%s%lld", i ? "," : "", (long long)v->ids[i]);
            if (w < 0 || (size_t)w >= sz - n)
                return -1;
            n += (size_t)w;
        }
        if (n + 2 > sz)
            return -1;
        buf[n++] = ')';
        buf[n] = '\0';
    }
    return 0;
}

const char *pa_report_title(const pa_report_req_t *req)
{
    return req->def->title;
}

const char *pa_report_name(const pa_report_req_t *req)
{
    return req->def->name;
}

int pa_report_run(sqlite3 *db, const pa_report_req_t *req, int fmt, FILE *out, char *err,
                  size_t errsz)
{
    return pa_report_run_unit(db, req, fmt, 0, out, NULL, err, errsz);
}

int pa_report_produce(sqlite3 *db, const pa_report_req_t *req, pa_table_t *t, const char **titles,
                      char *err, size_t errsz)
{
    const pa_report_def_t *d = req->def;
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < d->ncols && i < 64; i++)
        titles[i] = d->cols[i].title;
    t->ncols = (int)(d->ncols < 64 ? d->ncols : 64);
    t->titles = titles;
    pa_report_req_t all = *req;  /* every row: rows= is not applied */
    all.rows.set = 0;
    for (size_t i = 0; i < d->nopts && i < PA_REPORT_MAX_OPTS; i++)
        if (strcmp(d->opts[i].name, "rows") == 0)
            all.vals[i].set = 0;
    int rc = d->produce(db, &all, t, err, errsz);
    if (rc == 0 && t->oom) {
        snprintf(err, errsz, "report '%s': out of memory", d->name);
        rc = PA_REP_EDATA;
    }
    if (rc)
        pa_table_free(t);
    return rc ? PA_REP_EDATA : PA_REP_OK;
}

/* The streamed run of pa_report_run_unit(): rows written as they come; the aligned table runs
 * the report twice (its widths, then its rows): twice the time, the memory of one row. */
typedef struct pa_run_sink {
    pa_table_out_t o;
    size_t limit;   /* rows= (SIZE_MAX: all) */
    int widths;     /* 1: this pass only measures */
} pa_run_sink_t;

static int pa_run_sink(const pa_table_t *t, void *arg)
{
    pa_run_sink_t *k = arg;
    if (t->sunk >= k->limit)
        return 1;
    if (k->widths)
        pa_table_out_widen(t, &k->o, t->cells, t->sunk + 1);
    else
        pa_table_out_row(t, &k->o, t->cells, t->sunk + 1);
    return t->sunk + 1 >= k->limit;
}

static int pa_run_streamed(sqlite3 *db, const pa_report_req_t *lim, int fmt, int shift, FILE *out, size_t limit,
                           size_t *nrows, char *err, size_t errsz)
{
    const pa_report_def_t *d = lim->def;
    const char *titles[64];
    pa_table_t t;
    pa_run_sink_t k = {{fmt, shift, NULL, out}, limit, fmt == PA_FMT_TABLE};
    int rc = 0;
    for (size_t i = 0; i < d->ncols && i < 64; i++)
        titles[i] = d->cols[i].title;
    for (int pass = k.widths ? 0 : 1; pass < 2 && !rc; pass++) {
        memset(&t, 0, sizeof t);
        t.ncols = (int)(d->ncols < 64 ? d->ncols : 64);
        t.titles = titles;
        t.sink = pa_run_sink;
        t.sink_arg = &k;
        if (pass == 0) {
            if (!(k.o.w = calloc((size_t)t.ncols + 1, sizeof *k.o.w)))
                rc = 1;
            else
                pa_table_out_widen(&t, &k.o, NULL, 0);
        } else {
            k.widths = 0;
            pa_table_out_head(&t, &k.o);
        }
        if (!rc)
            rc = d->produce(db, lim, &t, err, errsz);
        if (rc == 0 && t.oom) {
            snprintf(err, errsz, "report '%s': out of memory", d->name);
            rc = PA_REP_EDATA;
        }
        if (rc == 0 && pass == 1) {
            if (nrows)
                *nrows = pa_table_nrows(&t);
            pa_table_out_end(&t, &k.o, pa_table_nrows(&t) < limit ? pa_table_nrows(&t) : limit);
        }
        pa_table_free(&t);
    }
    free(k.o.w);
    return rc ? PA_REP_EDATA : PA_REP_OK;
}

int pa_report_produce_each(sqlite3 *db, const pa_report_req_t *req, const char **titles,
                           int (*sink)(const pa_table_t *t, void *arg), void *arg, size_t *nrows,
                           char *err, size_t errsz)
{
    const pa_report_def_t *d = req->def;
    pa_table_t t;
    *nrows = 0;
    if (!d->streams) {
        if (pa_report_produce(db, req, &t, titles, err, errsz) != PA_REP_OK)
            return PA_REP_EDATA;
        size_t n = pa_table_nrows(&t);
        pa_table_t one = t;  /* each row as the sink sees a streamed one: cells[0..ncols) */
        for (size_t r = 0; r < n; r++) {
            one.cells = &t.cells[r * (size_t)t.ncols];
            one.ncells = (size_t)t.ncols;
            one.sunk = r;
            if (sink(&one, arg))
                break;
        }
        *nrows = n;
        pa_table_free(&t);
        return PA_REP_OK;
    }
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < d->ncols && i < 64; i++)
        titles[i] = d->cols[i].title;
    t.ncols = (int)(d->ncols < 64 ? d->ncols : 64);
    t.titles = titles;
    t.sink = sink;
    t.sink_arg = arg;
    pa_report_req_t all = *req;  /* every row: rows= is not applied */
    all.rows.set = 0;
    for (size_t i = 0; i < d->nopts && i < PA_REPORT_MAX_OPTS; i++)
        if (strcmp(d->opts[i].name, "rows") == 0)
            all.vals[i].set = 0;
    int rc = d->produce(db, &all, &t, err, errsz);
    if (rc == 0 && t.oom) {
        snprintf(err, errsz, "report '%s': out of memory", d->name);
        rc = PA_REP_EDATA;
    }
    *nrows = pa_table_nrows(&t);
    pa_table_free(&t);
    return rc ? PA_REP_EDATA : PA_REP_OK;
}

int pa_report_run_unit(sqlite3 *db, const pa_report_req_t *req, int fmt, int shift, FILE *out,
                       size_t *nrows, char *err, size_t errsz)
{
    const pa_report_def_t *d = req->def;
    const char *titles[64];
    pa_table_t t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < d->ncols && i < 64; i++)
        titles[i] = d->cols[i].title;
    t.ncols = (int)d->ncols;
    t.titles = titles;
    if (pa_report_check_devices(db, req, err, errsz) != PA_REP_OK)
        return PA_REP_EUSAGE;
    /* some producers apply rows= themselves, so it cuts their work (a deep hgtx_pushpop_trace
     * must not build every row to print five); the limit is applied below for the others.
     * rows=0 still asks for one row, so *nrows tells whether the DB has data for the report. */
    pa_report_req_t lim = *req;
    if (lim.rows.set && lim.rows.i == 0)
        lim.rows.i = 1;
    for (size_t i = 0; i < d->nopts && i < PA_REPORT_MAX_OPTS; i++)
        if (strcmp(d->opts[i].name, "rows") == 0 && lim.vals[i].set && lim.vals[i].i == 0)
            lim.vals[i].i = 1;
    if (d->streams) {
        const pa_opt_val_t *rows = pa_req_opt(req, "rows");
        return pa_run_streamed(db, &lim, fmt, shift, out, rows ? (size_t)rows->i : SIZE_MAX, nrows, err, errsz);
    }
    int rc = d->produce(db, &lim, &t, err, errsz);
    if (rc == 0 && t.oom) {
        snprintf(err, errsz, "report '%s': out of memory", d->name);
        rc = PA_REP_EDATA;
    }
    if (rc == 0) {
        if (nrows)
            *nrows = pa_table_nrows(&t);
        pa_report_limit_rows(req, &t);  /* rows=, once for every report, after its sorting */
        pa_table_write_unit(&t, fmt, shift, out);
    }
    pa_table_free(&t);
    return rc ? PA_REP_EDATA : PA_REP_OK;
}
