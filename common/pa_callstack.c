/* pa_callstack.c - call-stack group rules: parsing, built-in defaults, matching (spec 2.3.1). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "pa_callstack.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

typedef struct cs_rule {
    size_t group;        /* index into rs->groups */
    size_t nre;
    pcre2_code **re;     /* parent -> child */
} cs_rule_t;

struct pa_cs_rules {
    cs_rule_t *rules; size_t nrules;
    char **groups; size_t ngroups;   /* distinct names, in order of first appearance */
    pcre2_match_data *md;
    const char *origin;              /* where the rules come from, named in rejections */
};

pa_cs_rules_t *pa_cs_rules_new(void)
{
    pa_cs_rules_t *rs = calloc(1, sizeof(*rs));
    if (rs && !(rs->md = pcre2_match_data_create(4, NULL))) {
        free(rs);
        return NULL;
    }
    return rs;
}

static void rule_free(cs_rule_t *r)
{
    for (size_t i = 0; i < r->nre; i++)
        pcre2_code_free(r->re[i]);
    free(r->re);
}

void pa_cs_rules_free(pa_cs_rules_t *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->nrules; i++)
        rule_free(&rs->rules[i]);
    for (size_t i = 0; i < rs->ngroups; i++)
        free(rs->groups[i]);
    free(rs->rules);
    free(rs->groups);
    pcre2_match_data_free(rs->md);
    free(rs);
}

size_t pa_cs_rules_count(const pa_cs_rules_t *rs) { return rs ? rs->nrules : 0; }

void pa_cs_rules_set_origin(pa_cs_rules_t *rs, const char *origin)
{
    if (rs)
        rs->origin = origin;
}

static void reject(const pa_cs_rules_t *rs, FILE *err, const char *rule, const char *why)
{
    if (err)
        fprintf(err, "profagent: %s%scallstack group rule \"%s\" ignored: %s "
                     "(accepted: name=frame_regex1/frame_regex2/..., PCRE2 regexes, parent frame first, \\/ for a literal /)\n",
                rs->origin ? rs->origin : "", rs->origin ? ": " : "", rule, why);
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* The next separator '/' at or after p, skipping "\/" (a literal '/' inside a frame regex:
 * an odd run of backslashes escapes it, PCRE2 then reads "\/" as '/'); NULL when none. */
static const char *next_separator(const char *p)
{
    for (size_t bs = 0; *p; p++) {
        if (*p == '/' && bs % 2 == 0)
            return p;
        bs = *p == '\\' ? bs + 1 : 0;
    }
    return NULL;
}

/* Compiles the '/'-separated frame regexes of `filters` into r, each with its surrounding
 * blanks trimmed; 0 or -1 after reject(). */
static int rule_compile(const pa_cs_rules_t *rs, cs_rule_t *r, const char *rule, const char *filters, FILE *err)
{
    const char *p = filters;
    for (;;) {
        const char *slash = next_separator(p);
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        while (len && is_blank(*p))
            p++, len--;
        while (len && is_blank(p[len - 1]) && !(len > 1 && p[len - 2] == '\\'))
            len--;
        if (len == 0) {
            reject(rs, err, rule, "empty frame regex");
            return -1;
        }
        int ec; PCRE2_SIZE off;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)p, len, 0, &ec, &off, NULL);
        if (!re) {
            char msg[160], why[256];
            pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof(msg));
            snprintf(why, sizeof(why), "invalid regex \"%.*s\" at offset %zu: %s", (int)len, p, (size_t)off, msg);
            reject(rs, err, rule, why);
            return -1;
        }
        pcre2_code **nre = realloc(r->re, (r->nre + 1) * sizeof(*nre));
        if (!nre) {
            pcre2_code_free(re);
            reject(rs, err, rule, "out of memory");
            return -1;
        }
        r->re = nre;
        r->re[r->nre++] = re;
        if (!slash)
            return 0;
        p = slash + 1;
    }
}

/* Index of group `name` (added when new), or (size_t)-1 when out of memory. */
static size_t group_index(pa_cs_rules_t *rs, const char *name, size_t len)
{
    for (size_t i = 0; i < rs->ngroups; i++)
        if (strlen(rs->groups[i]) == len && memcmp(rs->groups[i], name, len) == 0)
            return i;
    char **g = realloc(rs->groups, (rs->ngroups + 1) * sizeof(*g));
    if (!g)
        return (size_t)-1;
    rs->groups = g;
    if (!(g[rs->ngroups] = strndup(name, len)))
        return (size_t)-1;
    return rs->ngroups++;
}

int pa_cs_rules_add(pa_cs_rules_t *rs, const char *rule, FILE *err)
{
    const char *eq = strchr(rule, '=');
    if (!eq) { reject(rs, err, rule, "missing '='"); return -1; }
    /* the name without surrounding blanks */
    const char *name = rule, *name_end = eq;
    while (name < name_end && is_blank(*name)) name++;
    while (name_end > name && is_blank(name_end[-1])) name_end--;
    if (name == name_end) { reject(rs, err, rule, "empty group name"); return -1; }
    if (memchr(name, '/', (size_t)(name_end - name))) {
        reject(rs, err, rule, "group name contains '/' (it separates the groups of a group list)");
        return -1;
    }
    const char *re = eq + 1;
    while (is_blank(*re)) re++;
    if (*re == '\0') { reject(rs, err, rule, "no frame regex after '='"); return -1; }
    cs_rule_t r = {0};
    if (rule_compile(rs, &r, rule, eq + 1, err) < 0) {
        rule_free(&r);
        return -1;
    }
    cs_rule_t *nr = realloc(rs->rules, (rs->nrules + 1) * sizeof(*nr));
    size_t gi = nr ? (rs->rules = nr, group_index(rs, name, (size_t)(name_end - name))) : (size_t)-1;
    if (gi == (size_t)-1) {
        rule_free(&r);
        reject(rs, err, rule, "out of memory");
        return -1;
    }
    r.group = gi;
    rs->rules[rs->nrules++] = r;
    return 0;
}

int pa_cs_rules_add_list(pa_cs_rules_t *rs, const char *text, FILE *err)
{
    int bad = 0;
    const char *p = text;
    while (p && *p) {
        size_t len = strcspn(p, ";\n");
        /* trim blanks and a trailing '\r' so hand-written lists work */
        const char *s = p, *e = p + len;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
        if (e > s) {
            char *one = strndup(s, (size_t)(e - s));
            if (!one || pa_cs_rules_add(rs, one, err) < 0)
                bad++;
            free(one);
        }
        p += len;
        if (*p)
            p++;
    }
    return bad;
}

void pa_cs_rules_add_defaults(pa_cs_rules_t *rs, const char *exe_name)
{
    /* Layers of a oneAPI stack, outermost first in the list order users see. */
    pa_cs_rules_add(rs, "level_zero=(libze_intel|libze_simdev|libur_adapter_level_zero|libpi_level_zero|libigdrcl)", NULL);
    pa_cs_rules_add(rs, "sycl=(libsycl|libmkl|libdnnl|libonednn|libccl|libur_loader|libOpenCL|libtbb)", NULL);
    pa_cs_rules_add(rs, "python=(libpython|\\.py$)", NULL);
    if (exe_name && *exe_name) {
        /* the main executable's file name, matched literally at the end of the module path
         * ('/' separates frame regexes, so only the base name is used) */
        const char *base = strrchr(exe_name, '/');
        char rule[512];
        snprintf(rule, sizeof(rule), "application=\\Q%s\\E$", base ? base + 1 : exe_name);
        pa_cs_rules_add(rs, rule, NULL);
    }
}

static int re_find(pa_cs_rules_t *rs, pcre2_code *re, const char *s)
{
    return s && pcre2_match(re, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, rs->md, NULL) >= 0;
}

/* The file name of a module path: rules match "libfoo.so", never the folders above it. */
static const char *base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path;
}

/* Ordered match: regex k must match the frame regex k-1 matched or one below it (a child);
 * the same frame may satisfy consecutive regexes, so "libfoo/LaunchKernel" matches libfoo's
 * own LaunchKernel frame. Taking the earliest frame for each regex is optimal. */
static int frame_matches(pa_cs_rules_t *rs, pcre2_code *re, const pa_cs_frame_t *f)
{
    return re_find(rs, re, base_name(f->module)) || re_find(rs, re, f->function);
}

static int rule_matches(pa_cs_rules_t *rs, const cs_rule_t *r, const pa_cs_frame_t *f, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < r->nre; i++)
        while (k < r->nre && frame_matches(rs, r->re[k], &f[i]))
            k++;
    return k == r->nre;
}

int pa_cs_group_list(const pa_cs_rules_t *crs, const pa_cs_frame_t *frames, size_t n,
                     int first_only, char *out, size_t outsz)
{
    pa_cs_rules_t *rs = (pa_cs_rules_t *)crs; /* match data is scratch */
    unsigned char hit[256] = {0};
    size_t ng = rs && rs->ngroups < sizeof(hit) ? rs->ngroups : (rs ? sizeof(hit) : 0);
    for (size_t i = 0; rs && i < rs->nrules; i++)
        if (rs->rules[i].group < ng && !hit[rs->rules[i].group] && rule_matches(rs, &rs->rules[i], frames, n))
            hit[rs->rules[i].group] = 1;
    int matched = 0;
    size_t used = 0;
    if (outsz)
        out[0] = '\0';
    for (size_t g = 0; g < ng; g++) {
        if (!hit[g] || (first_only && matched))
            continue;
        int w = snprintf(out + used, outsz > used ? outsz - used : 0, "%s%s", matched ? "/" : "", rs->groups[g]);
        used += w > 0 ? (size_t)w : 0;
        if (used >= outsz)
            used = outsz ? outsz - 1 : 0;
        matched++;
    }
    if (!matched && outsz)
        snprintf(out, outsz, "others");
    return matched;
}
