/* itt_api.c - the ittnotify collector protocol: __itt_api_init fills the static part's table,
 * entry points the agent does not map are accepted and counted; INTEL_LIBITTNOTIFY64 setup. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "itt_internal.h"
#include "../common/pa_log.h"
#include "../common/pa_source.h"

/*
 * An entry point we do not implement still gets a function of ours: a counting stub that
 * ignores its arguments and returns 0 (NULL for handles). On x86-64 SysV the caller owns its
 * arguments (registers, or stack space it pops itself), so a callee declared without
 * parameters may ignore them. Each distinct name gets its own stub (and counter), up to
 * PA_ITT_UNMAPPED; names beyond that get the entry's null_func (not counted).
 */
#define PA_ITT_UNMAPPED 256
static const char *unmapped_name[PA_ITT_UNMAPPED];
static _Atomic uint64_t unmapped_calls[PA_ITT_UNMAPPED];
static int unmapped_n;

static long unmapped_hit(int i)
{
    atomic_fetch_add_explicit(&unmapped_calls[i], 1, memory_order_relaxed);
    return 0;
}

#define PA_U1(n) static long itt_unmapped_##n(void) { return unmapped_hit(0x##n); }
#define PA_U16(h) PA_U1(h##0) PA_U1(h##1) PA_U1(h##2) PA_U1(h##3) PA_U1(h##4) PA_U1(h##5) PA_U1(h##6) \
    PA_U1(h##7) PA_U1(h##8) PA_U1(h##9) PA_U1(h##a) PA_U1(h##b) PA_U1(h##c) PA_U1(h##d) PA_U1(h##e) PA_U1(h##f)
PA_U16(0) PA_U16(1) PA_U16(2) PA_U16(3) PA_U16(4) PA_U16(5) PA_U16(6) PA_U16(7)
PA_U16(8) PA_U16(9) PA_U16(a) PA_U16(b) PA_U16(c) PA_U16(d) PA_U16(e) PA_U16(f)
#undef PA_U1
#define PA_U1(n) itt_unmapped_##n,
static long (*const unmapped_fn[PA_ITT_UNMAPPED])(void) = {
    PA_U16(0) PA_U16(1) PA_U16(2) PA_U16(3) PA_U16(4) PA_U16(5) PA_U16(6) PA_U16(7)
    PA_U16(8) PA_U16(9) PA_U16(a) PA_U16(b) PA_U16(c) PA_U16(d) PA_U16(e) PA_U16(f)
};
#undef PA_U1
#undef PA_U16

/* The counting stub of `name` (shared by every library that lists it), NULL when full. */
static void *unmapped_stub(const char *name)
{
    for (int i = 0; i < unmapped_n; i++)
        if (strcmp(unmapped_name[i], name) == 0)
            return (void *)unmapped_fn[i];
    if (unmapped_n >= PA_ITT_UNMAPPED)
        return NULL;
    char *copy = strdup(name);
    if (!copy)
        return NULL;
    unmapped_name[unmapped_n] = copy;
    return (void *)unmapped_fn[unmapped_n++];
}

static _Atomic uint64_t api_inits; /* instrumented libraries that loaded us as their collector */

/*! __itt_api_init() : called once per instrumented library by its static part, under its
 *  mutex: every entry of g->api_list_ptr in `groups` gets our implementation or a counting
 *  stub; entries outside `groups` get their null_func. Domains and string handles the static
 *  part created already are adopted. */
PA_EXPORT void __itt_api_init(pa_itt_global_t *g, int groups)
{
    if (!g || !g->api_list_ptr)
        return;
    pa_guard_enter();
    pa_itt_lock();
    for (pa_itt_api_info_t *e = g->api_list_ptr; e->name; e++) {
        if (!e->func_ptr)
            continue;
        void *f = NULL;
        if (e->group & groups) {
            f = pa_itt_lookup(e->name);
            if (!f)
                f = unmapped_stub(e->name);
        }
        *e->func_ptr = f ? f : e->null_func;
    }
    pa_itt_unlock();
    /* the lists sit after fields older static parts may lack: trusted only with the ITT magic
     * of a 3.x descriptor */
    static const unsigned char magic[8] = {0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30};
    if (memcmp(g->magic, magic, sizeof magic) == 0 && g->version_major >= 3)
        pa_itt_adopt(g->domain_list, g->string_list);
    atomic_fetch_add(&api_inits, 1);
    pa_guard_leave();
    pa_info("itt", "ITT collector attached to an instrumented library (ittnotify %lu.%lu)", g->version_major,
            g->version_minor);
}

/*! __itt_api_fini() : the static part finalizes (its pointers are reset by itself). */
PA_EXPORT void __itt_api_fini(pa_itt_global_t *g) { (void)g; }

/* init: instrumented libraries load the agent as their collector on their first ITT call. */
static int itt_setup(void)
{
    const char *cur = getenv("INTEL_LIBITTNOTIFY64");
    if (cur) { /* the user's collector (e.g. VTune's) wins */
        pa_info("itt", "INTEL_LIBITTNOTIFY64=%s is set: ITT calls go there", cur);
        return 0;
    }
    Dl_info di;
    char path[PATH_MAX];
    if (!dladdr((void *)itt_setup, &di) || !di.dli_fname || !realpath(di.dli_fname, path)) {
        pa_warn("itt", "cannot find the agent's own path: ITT tasks are not recorded");
        return -1;
    }
    if (setenv("INTEL_LIBITTNOTIFY64", path, 0) != 0) {
        pa_warn("itt", "cannot set INTEL_LIBITTNOTIFY64: ITT tasks are not recorded");
        return -1;
    }
    return 0;
}

static const char *const counter_names[PA_ITT_NCOUNTERS] = {
    [PA_ITT_NULL_DOMAIN] = "misuse_null_domain",
    [PA_ITT_NULL_NAME] = "misuse_null_name",
    [PA_ITT_END_WITHOUT_BEGIN] = "misuse_end_without_begin",
    [PA_ITT_PAUSED_CALLS] = "paused_calls",
};

/* "name value\n" lines of every non-zero counter: misuse, paused calls, libraries attached,
 * and "unmapped:<entry>" per entry point called but not mapped. */
static void itt_finish(uint64_t budget_ns)
{
    (void)budget_ns;
    static char buf[PA_ITT_UNMAPPED * 64 + 512];
    size_t n = 0;
    uint64_t libs = atomic_load(&api_inits);
    if (libs)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "libraries %llu\n", (unsigned long long)libs);
    for (int i = 0; i < PA_ITT_NCOUNTERS; i++) {
        uint64_t v = atomic_load(&pa_itt_counters[i]);
        if (v && n < sizeof buf)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s %llu\n", counter_names[i], (unsigned long long)v);
    }
    pa_itt_lock();
    for (int i = 0; i < unmapped_n; i++) {
        uint64_t v = atomic_load(&unmapped_calls[i]);
        if (v && n < sizeof buf)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "unmapped:%.48s %llu\n", unmapped_name[i],
                                  (unsigned long long)v);
    }
    pa_itt_unlock();
    if (!n || n >= sizeof buf)
        return;
    pa_record_t rec = {.kind = PA_REC_ITT_COUNTS, .t0 = pa_clock_ns()};
    pa_emit(&rec, buf, (uint32_t)n);
}

/* The ITT source (common/pa_source.h): its ranges and marks are HGTX records, its own kinds
 * carry the exit counters. */
const pa_source_t pa_source_itt = {
    .name = "itt", .mask = PA_SRC_ITT, .rec_first = PA_REC_ITT_FIRST, .rec_last = PA_REC_ITT_LAST,
    .init = itt_setup, .finish = itt_finish,
};
