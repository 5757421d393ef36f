/* agg_mem_sym.c - symbolizes captured stacks once per unique address at exit (libdwfl, cxa demangle). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "../common/pa_callstack.h"
#include "agg_internal.h"

typedef char *(*pa_demangle_fn)(const char *, char *, size_t *, int *);

/* libdw is loaded with dlopen at exit, so nothing links it: the agent's other users (the
 * CLI, unit tests of the aggregator) need not, and without libdw frames print as addresses. */
static struct {
    __typeof__(dwfl_begin) *begin;
    __typeof__(dwfl_end) *end;
    __typeof__(dwfl_report_begin) *report_begin;
    __typeof__(dwfl_report_end) *report_end;
    __typeof__(dwfl_linux_proc_report) *proc_report;
    __typeof__(dwfl_addrmodule) *addrmodule;
    __typeof__(dwfl_module_info) *module_info;
    __typeof__(dwfl_module_addrname) *addrname;
    __typeof__(dwfl_module_getsrc) *getsrc;
    __typeof__(dwfl_lineinfo) *lineinfo;
    __typeof__(dwfl_report_elf) *report_elf;
    __typeof__(dwfl_module_getelf) *getelf;
    Dwfl_Callbacks cb;
} dw;

/* 1 when `path` lies under /lib/, /lib64/ or /usr/lib/ (distribution
 * libraries), else 0 (also NULL). */
static int sym_is_system(const char *path)
{
    static const char *const dirs[] = {"/lib/", "/lib64/", "/usr/lib/"};
    for (size_t i = 0; path && i < sizeof dirs / sizeof dirs[0]; i++)
        if (strncmp(path, dirs[i], strlen(dirs[i])) == 0)
            return 1;
    return 0;
}

static int dw_load(void)
{
    if (dw.begin)
        return 0;
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
#define PA_DW(field, name) (*(void **)&dw.field = dlsym(h, name))
    int ok = (PA_DW(end, "dwfl_end") && PA_DW(report_begin, "dwfl_report_begin") &&
        PA_DW(report_end, "dwfl_report_end") && PA_DW(proc_report, "dwfl_linux_proc_report") &&
        PA_DW(addrmodule, "dwfl_addrmodule") && PA_DW(module_info, "dwfl_module_info") &&
        PA_DW(addrname, "dwfl_module_addrname") && PA_DW(getsrc, "dwfl_module_getsrc") &&
        PA_DW(lineinfo, "dwfl_lineinfo") && PA_DW(report_elf, "dwfl_report_elf") &&
        PA_DW(getelf, "dwfl_module_getelf") &&
        (*(void **)&dw.cb.find_elf = dlsym(h, "dwfl_linux_proc_find_elf")) &&
        (*(void **)&dw.cb.find_debuginfo = dlsym(h, "dwfl_standard_find_debuginfo")));
#undef PA_DW
    if (ok)
        *(void **)&dw.begin = dlsym(h, "dwfl_begin");
    return dw.begin ? 0 : -1;
}

typedef struct sym_entry { pa_sym_frame_t f; uint64_t pc; } sym_entry_t;

/* A module dlclose'd before exit (pa_sym_add_unloaded); its Dwfl is built on first use. */
typedef struct sym_unloaded {
    uint32_t gen;
    uint64_t bias, lo, hi;
    char *path;
    Dwfl *dwfl;
    int tried;
    pa_map_t by_pc;           /* pc -> entry index + 1 (own cache: the address meant another file) */
} sym_unloaded_t;

struct pa_sym {
    Dwfl *dwfl;
    sym_unloaded_t *unl; size_t nunl;
    pa_demangle_fn demangle;  /* abi::__cxa_demangle from libstdc++, loaded RTLD_LOCAL */
    char self_path[4096];     /* the agent's own .so: its frames are dropped */
    pa_map_t by_pc;           /* pc -> entry index + 1 */
    sym_entry_t *ents; size_t nents, cap;
    char **strs; size_t nstrs, strs_cap;  /* everything returned, freed at close */
    int system_lines;         /* source lines of /lib, /usr/lib frames too (pa_sym_open) */
};

/* Source lines of system libraries are not looked up unless PROFAGENT_SYMBOLS_SYSTEM_DEBUGINFO=1:
 * for a few libc frames, decompressing the DWARF of libc6-dbg's separate .debug file cost
 * ~90 ms of every exit. Function names still come from the symbol table (that file's .symtab
 * or the library's .dynsym), which needs no DWARF. */
static int sym_wants_lines(const pa_sym_t *sy, const char *module)
{
    return sy->system_lines || !sym_is_system(module);
}

/* Keeps `s` (malloc'd) until close; returns it, or "" when NULL. */
static const char *sym_keep(pa_sym_t *sy, char *s)
{
    if (!s)
        return "";
    if (sy->nstrs == sy->strs_cap) {
        size_t nc = sy->strs_cap ? sy->strs_cap * 2 : 256;
        char **n = realloc(sy->strs, nc * sizeof(*n));
        if (!n) {
            free(s);
            return "";
        }
        sy->strs = n;
        sy->strs_cap = nc;
    }
    return sy->strs[sy->nstrs++] = s;
}

pa_sym_t *pa_sym_open(int system_lines)
{
    pa_sym_t *sy = calloc(1, sizeof(*sy));
    if (!sy)
        return NULL;
    sy->system_lines = system_lines;
    sy->dwfl = dw_load() == 0 ? dw.begin(&dw.cb) : NULL;
    if (sy->dwfl) {
        dw.report_begin(sy->dwfl);
        if (dw.proc_report(sy->dwfl, getpid()) != 0 || dw.report_end(sy->dwfl, NULL, NULL) != 0) {
            dw.end(sy->dwfl);
            sy->dwfl = NULL;
        }
    }
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (cxx)
        *(void **)&sy->demangle = dlsym(cxx, "__cxa_demangle");
    Dl_info di;
    if (dladdr((void *)pa_sym_open, &di) && di.dli_fname)
        snprintf(sy->self_path, sizeof sy->self_path, "%s", di.dli_fname);
    return sy;
}

void pa_sym_close(pa_sym_t *sy)
{
    if (!sy)
        return;
    if (sy->dwfl)
        dw.end(sy->dwfl);
    for (size_t i = 0; i < sy->nunl; i++) {
        if (sy->unl[i].dwfl)
            dw.end(sy->unl[i].dwfl);
        free(sy->unl[i].path);
        pa_map_free(&sy->unl[i].by_pc);
    }
    free(sy->unl);
    for (size_t i = 0; i < sy->nstrs; i++)
        free(sy->strs[i]);
    free(sy->strs);
    free(sy->ents);
    pa_map_free(&sy->by_pc);
    free(sy);
}

/* The demangled `name` without its ELF symbol version ("__libc_start_main@@GLIBC_2.34" ->
 * "__libc_start_main"): the version is not part of the function's name. */
static char *sym_demangle(pa_sym_t *sy, const char *name)
{
    char *base = strndup(name, strcspn(name, "@"));
    if (base && base[0] && sy->demangle && base[0] == '_' && base[1] == 'Z') {
        int status = -1;
        char *d = sy->demangle(base, NULL, NULL, &status);
        if (d && status == 0) {
            free(base);
            return d;
        }
        free(d);
    }
    if (base && !base[0]) { /* "@..." alone: keep what there is */
        free(base);
        return strdup(name);
    }
    return base;
}

/* "name+0x<offset>" for an address without a symbol: the file-relative offset, so a stripped
 * PIE prints the same in every run ("deep_stripped+0x11f9"). */
static const char *sym_offset_name(pa_sym_t *sy, const char *module, uint64_t off)
{
    const char *b = strrchr(module, '/');
    char *s = NULL;
    if (asprintf(&s, "%s+0x%llx", b ? b + 1 : module, (unsigned long long)off) < 0)
        return "";
    return sym_keep(sy, s);
}

/* Resolves one return address in `dwfl` (looked up at pc - 1: inside the call instruction). */
static pa_sym_frame_t sym_resolve(pa_sym_t *sy, Dwfl *dwfl, uint64_t pc)
{
    pa_sym_frame_t f = {"[unknown]", "", ""};
    Dwfl_Module *mod = dwfl && pc ? dw.addrmodule(dwfl, pc - 1) : NULL;
    const char *fn = NULL;
    if (mod) {
        Dwarf_Addr start = 0;
        const char *mname = dw.module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
        if (mname)
            f.module = sym_keep(sy, strdup(mname));
        fn = dw.addrname(mod, pc - 1);
        Dwfl_Line *line = sym_wants_lines(sy, mname) ? dw.getsrc(mod, pc - 1) : NULL;
        int lineno = 0;
        const char *file = line ? dw.lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
        if (file) {
            char *src = NULL;
            const char *b = strrchr(file, '/');
            if (asprintf(&src, "%s:%d", b ? b + 1 : file, lineno) > 0)
                f.source = sym_keep(sy, src);
        }
        if (!fn) {
            GElf_Addr bias = start;
            if (!dw.getelf(mod, &bias))
                bias = start;
            f.function = sym_offset_name(sy, f.module, pc - bias);
            return f;
        }
    }
    if (fn) {
        f.function = sym_keep(sy, sym_demangle(sy, fn));
    } else {
        char *hex = NULL;
        if (asprintf(&hex, "0x%llx", (unsigned long long)pc) > 0)
            f.function = sym_keep(sy, hex);
    }
    return f;
}

/* Caches f for pc in `map`; returns f. */
static pa_sym_frame_t sym_cache(pa_sym_t *sy, pa_map_t *map, uint64_t pc, pa_sym_frame_t f)
{
    if (sy->nents == sy->cap) {
        size_t nc = sy->cap ? sy->cap * 2 : 256;
        sym_entry_t *n = realloc(sy->ents, nc * sizeof(*n));
        if (!n)
            return f;
        sy->ents = n;
        sy->cap = nc;
    }
    sy->ents[sy->nents] = (sym_entry_t){f, pc};
    if (pa_map_put(map, pc ? pc : 1, (uint32_t)++sy->nents) != 0)
        sy->nents--;
    return f;
}

/* The unloaded module that held pc at generation `gen`: the first one unloaded after that
 * generation whose range contains pc (an address range is only reused after its unload). */
static sym_unloaded_t *sym_unloaded_at(pa_sym_t *sy, uint64_t pc, uint32_t gen)
{
    sym_unloaded_t *best = NULL;
    for (size_t i = 0; i < sy->nunl; i++) {
        sym_unloaded_t *u = &sy->unl[i];
        if (u->gen > gen && pc - 1 >= u->lo && pc - 1 < u->hi && (!best || u->gen < best->gen))
            best = u;
    }
    return best;
}

/* pc of an unloaded module, resolved from its file placed at its recorded bias. */
static pa_sym_frame_t sym_unloaded_pc(pa_sym_t *sy, sym_unloaded_t *u, uint64_t pc)
{
    uint32_t *v = pa_map_get(&u->by_pc, pc);
    if (v)
        return sy->ents[*v - 1].f;
    if (!u->tried) {
        u->tried = 1;
        u->dwfl = dw_load() == 0 ? dw.begin(&dw.cb) : NULL;
        if (u->dwfl) {
            dw.report_begin(u->dwfl);
            if (!dw.report_elf(u->dwfl, u->path, u->path, -1, u->bias, true) ||
                dw.report_end(u->dwfl, NULL, NULL) != 0) {
                dw.end(u->dwfl);
                u->dwfl = NULL;
            }
        }
    }
    pa_sym_frame_t f = sym_resolve(sy, u->dwfl, pc);
    if (!strcmp(f.module, "[unknown]")) { /* file gone or unreadable: name + offset */
        f.module = u->path;
        f.function = sym_offset_name(sy, u->path, pc - u->bias);
    }
    return sym_cache(sy, &u->by_pc, pc, f);
}

int pa_sym_add_unloaded(pa_sym_t *sy, uint32_t gen, uint64_t bias, uint64_t lo, uint64_t hi,
                        const char *path)
{
    if (!sy)
        return -1;
    sym_unloaded_t *n = realloc(sy->unl, (sy->nunl + 1) * sizeof(*n));
    if (!n)
        return -1;
    sy->unl = n;
    char *p = strdup(path);
    if (!p)
        return -1;
    sy->unl[sy->nunl++] = (sym_unloaded_t){.gen = gen, .bias = bias, .lo = lo, .hi = hi, .path = p};
    return 0;
}

static pa_sym_frame_t sym_pc(pa_sym_t *sy, uint64_t pc, uint32_t gen)
{
    sym_unloaded_t *u = sy->nunl ? sym_unloaded_at(sy, pc, gen) : NULL;
    if (u)
        return sym_unloaded_pc(sy, u, pc);
    uint32_t *v = pa_map_get(&sy->by_pc, pc ? pc : 1);
    if (v)
        return sy->ents[*v - 1].f;
    return sym_cache(sy, &sy->by_pc, pc, sym_resolve(sy, sy->dwfl, pc));
}

/* The module of `pc` alone, without its function and line: all the skip of the agent's and the
 * loader's innermost frames needs. A line lookup there parses the line table of one of the
 * agent's own (non-system) units: ~60 M instructions, ~20 ms of CPU at the exit of every program
 * that allocated device memory, for frames that are dropped. */
static const char *sym_pc_module(pa_sym_t *sy, uint64_t pc, uint32_t gen)
{
    sym_unloaded_t *u = sy->nunl ? sym_unloaded_at(sy, pc, gen) : NULL;
    if (u)
        return sym_unloaded_pc(sy, u, pc).module;
    uint32_t *v = pa_map_get(&sy->by_pc, pc ? pc : 1);
    if (v)
        return sy->ents[*v - 1].f.module;
    Dwfl_Module *mod = sy->dwfl && pc ? dw.addrmodule(sy->dwfl, pc - 1) : NULL;
    const char *mname = mod ? dw.module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : NULL;
    return mname ? mname : "[unknown]";
}

static int is_loader(const char *module)
{
    const char *b = strrchr(module, '/');
    b = b ? b + 1 : module;
    return !strncmp(b, "libze_loader", 12) || !strncmp(b, "libze_tracing_layer", 19) ||
           !strncmp(b, "libze_validation_layer", 22);
}

static int is_eval_frame(const char *fn)
{
    return !strncmp(fn, "_PyEval_EvalFrameDefault", 24) || !strncmp(fn, "PyEval_EvalFrame", 16);
}

/* Parses the Python frame text into out (innermost first); returns the count. */
static size_t sym_python(pa_sym_t *sy, const char *py, size_t len, pa_sym_frame_t *out, size_t max)
{
    size_t n = 0, i = 0;
    while (i < len && n < max) {
        const char *line = py + i;
        const char *nl = memchr(line, '\n', len - i);
        size_t ll = nl ? (size_t)(nl - line) : len - i;
        const char *s1 = memchr(line, '\x1f', ll);
        const char *s2 = s1 ? memchr(s1 + 1, '\x1f', (size_t)(line + ll - s1 - 1)) : NULL;
        if (s2) {
            char *file = strndup(line, (size_t)(s1 - line));
            char *func = strndup(s1 + 1, (size_t)(s2 - s1 - 1));
            char *src = NULL;
            const char *b = file ? strrchr(file, '/') : NULL;
            if (file && asprintf(&src, "%s:%.*s", b ? b + 1 : file, (int)(line + ll - s2 - 1), s2 + 1) < 0)
                src = NULL;
            out[n].module = sym_keep(sy, file);
            out[n].function = sym_keep(sy, func);
            out[n].source = sym_keep(sy, src);
            n++;
        }
        i += ll + 1;
    }
    return n;
}

/* The marker frame that ends a cut stack. */
static pa_sym_frame_t sym_marker(pa_sym_t *sy, size_t omitted)
{
    pa_sym_frame_t f = {"[truncated]", "[... more frames omitted]", ""};
    char *s = NULL;
    if (omitted && asprintf(&s, "[... %zu frame%s omitted]", omitted, omitted == 1 ? "" : "s") > 0)
        f.function = sym_keep(sy, s);
    return f;
}

size_t pa_sym_chain(pa_sym_t *sy, const uint64_t *pcs, size_t n, uint32_t gen, const char *py,
                    size_t py_len, size_t depth, int64_t more, pa_sym_frame_t *out, size_t max)
{
    static pa_sym_t none; /* no symbolizer: addresses only */
    if (!sy)
        sy = &none;
    if (max == 0)
        return 0;
    size_t first = 0;
    /* innermost frames of the agent itself, then of the loader and its tracing layer */
    while (first < n && sy->self_path[0] && !strcmp(sym_pc_module(sy, pcs[first], gen), sy->self_path))
        first++;
    while (first < n && is_loader(sym_pc_module(sy, pcs[first], gen)))
        first++;
    pa_sym_frame_t pyf[64];
    size_t npy = py_len ? sym_python(sy, py, py_len, pyf, 64) : 0;
    /* keep `lim` frames (one slot stays free for the marker); count what does not fit */
    size_t lim = depth && depth < max - 1 ? depth : max - 1;
    size_t k = 0, omitted = 0;
    int py_done = npy == 0;
    for (size_t i = first; i < n; i++) {
        pa_sym_frame_t f = sym_pc(sy, pcs[i], gen);
        if (!py_done && is_eval_frame(f.function)) {
            for (size_t j = 0; j < npy; j++)
                k < lim ? (void)(out[k++] = pyf[j]) : (void)omitted++;
            py_done = 1;
        }
        k < lim ? (void)(out[k++] = f) : (void)omitted++;
    }
    for (size_t j = 0; !py_done && j < npy; j++)
        k < lim ? (void)(out[k++] = pyf[j]) : (void)omitted++;
    if (omitted || more)
        out[k++] = sym_marker(sy, more < 0 ? 0 : omitted + (size_t)more);
    return k;
}
