/* pa_outname.c - expands %p %h %r %q{VAR} %% in output names and picks a name that is not taken. */
#include "pa_outname.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pa_log.h"
#include "pa_rank.h"

/* Appends n bytes of s at *used; returns -1 (and stops writing) when out is full. */
static int put(char *out, size_t size, size_t *used, const char *s, size_t n)
{
    if (*used + n >= size) {
        size_t room = size - 1 - *used;
        memcpy(out + *used, s, room);
        *used = size - 1;
        out[*used] = '\0';
        return -1;
    }
    memcpy(out + *used, s, n);
    *used += n;
    out[*used] = '\0';
    return 0;
}

int pa_outname_expand(const char *tmpl, char *out, size_t size)
{
    if (size == 0)
        return -1;
    size_t used = 0, nunk = 0;
    char unk[64] = ""; /* the unknown placeholders, for one message at the end */
    out[0] = '\0';
    for (const char *p = tmpl; *p;) {
        if (*p != '%') {
            size_t n = strcspn(p, "%");
            if (put(out, size, &used, p, n) < 0)
                return -1;
            p += n;
            continue;
        }
        char buf[256];
        const char *s = buf;
        size_t n = 0, adv = 2;
        switch (p[1]) {
        case 'p':
            n = (size_t)snprintf(buf, sizeof buf, "%ld", (long)getpid());
            break;
        case 'h':
            if (gethostname(buf, sizeof buf) != 0)
                strcpy(buf, "unknown");
            buf[sizeof buf - 1] = '\0';
            n = strlen(buf);
            break;
        case 'r': {
            const pa_rank_info_t *ri = pa_rank_self();
            if (ri->rank >= 0) {
                n = (size_t)snprintf(buf, sizeof buf, "%ld", ri->rank);
                break;
            }
            /* no rank: nothing, and the separator before it with it ("out-%r.db" -> "out.db"); at the
             * start of a file name "norank" ("%r.db" -> "norank.db", not the hidden ".db") */
            const char *what = "nothing";
            int base_start = used == 0 || out[used - 1] == '/';
            if (!base_start && strchr("-_.", out[used - 1]) && used >= 2 && out[used - 2] != '/') {
                out[--used] = '\0';
                what = "nothing, with the separator before it";
            } else if (base_start) {
                s = "norank", n = 6;
                what = "\"norank\" (at the start of the file name: nothing would leave a hidden or empty name)";
            }
            pa_warn("output", "\"%s\": %%r: no rank in the environment (no launcher variable such as "
                    "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID is set); it expands to %s", tmpl, what);
            break;
        }
        case '%':
            s = "%", n = 1;
            break;
        case 'q': {
            const char *close = p[2] == '{' ? strchr(p + 3, '}') : NULL;
            if (!close) {
                pa_warn("output", "\"%s\": %%q must be followed by {VAR}; kept as is", tmpl);
                s = p, n = 2;
                break;
            }
            size_t vn = (size_t)(close - (p + 3));
            char var[256];
            if (vn >= sizeof var)
                vn = sizeof var - 1;
            memcpy(var, p + 3, vn);
            var[vn] = '\0';
            s = vn ? getenv(var) : "";
            /* nothing at the start of a file name would leave a hidden or empty name ("%q{JOB}.db" ->
             * ".db"): there it expands to "unset-VAR" instead, as %r expands to "norank" */
            int base_start = used == 0 || out[used - 1] == '/';
            if ((!s || !*s) && base_start) {
                n = (size_t)snprintf(buf, sizeof buf, "unset-%s", vn ? var : "var");
                pa_warn("output", "\"%s\": %%q{%s} %s at the start of the file name; it expands to \"%s\" (nothing "
                        "would leave a hidden or empty name)", tmpl, var, !vn ? "names no environment variable" :
                        s ? "is empty" : "is not set", buf);
                s = buf;
            } else if (!vn)
                pa_warn("output", "\"%s\": %%q{} names no environment variable (write %%q{VAR}); it expands to "
                        "nothing", tmpl);
            else if (!s) {
                pa_warn("output", "\"%s\": environment variable %s is not set; %%q{%s} expands to nothing", tmpl,
                        var, var);
                s = "";
            }
            if (s != buf)
                n = strlen(s);
            adv = (size_t)(close - p) + 1;
            break;
        }
        default:
            if (nunk + 32 < sizeof unk) /* a lone % at the end is named as such, not as "% " */
                nunk += (size_t)snprintf(unk + nunk, sizeof unk - nunk, p[1] ? "%s'%%%.1s'" : "%sa lone '%%' at the end",
                                         nunk ? ", " : "", p + 1);
            s = p, n = p[1] ? 2 : 1, adv = n;
        }
        if (put(out, size, &used, s, n) < 0)
            return -1;
        p += adv;
    }
    if (nunk)
        pa_warn("output", "\"%s\": %s %s, kept as is (accepted: %%p pid, %%h host, %%r rank, %%q{VAR}"
                " an environment variable, %%%% a literal %%)", tmpl, unk, strchr(unk, ',') ? "are not placeholders" : "is not a placeholder");
    return 0;
}

const char *pa_outname_default(void)
{
    return pa_rank_self()->rank >= 0 ? PA_OUTNAME_DEFAULT_RANK : PA_OUTNAME_DEFAULT;
}

int pa_outname_unique(const char *path, char *out, size_t size)
{
    size_t len = strlen(path);
    if (len >= size)
        return -1;
    if (access(path, F_OK) != 0) {
        memcpy(out, path, len + 1);
        return 0;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base ? (size_t)(dot - path) : len;
    for (int i = 1; i < 100000; i++) {
        int n = snprintf(out, size, "%.*s-%d%s", (int)stem, path, i, path + stem);
        if (n < 0 || (size_t)n >= size)
            return -1;
        if (access(out, F_OK) != 0)
            return 0;
    }
    return -1;
}

int pa_outname_resolve(const char *tmpl, int overwrite, char *out, size_t size)
{
    char expanded[4096];
    if (pa_outname_expand(tmpl, expanded, sizeof expanded) < 0)
        return -1;
    if (overwrite) {
        size_t n = strlen(expanded);
        if (n >= size)
            return -1;
        memcpy(out, expanded, n + 1);
        return 0;
    }
    return pa_outname_unique(expanded, out, size);
}
