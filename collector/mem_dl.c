/* mem_dl.c - dlclose interposer: records every module it unloads so older stacks symbolize from its file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

#include "../common/pa_export.h"
#include "collector.h"
#include "mem.h"

/*
 * Stacks are symbolized at exit against the exit-time address map. A library dlclose'd
 * before exit is gone from it, and another one may sit at its addresses by then. So before
 * the real dlclose we note the module (path, load bias, address range) and bump a global
 * generation; every captured stack carries the generation current at capture. After the
 * real dlclose, if the module is really unmapped (not just a reference dropped), one
 * PA_REC_MEM_MODULE record carries it to the aggregator, which resolves addresses of older
 * stacks inside that range from the file (agg/agg_mem_sym.c). The generation is bumped
 * BEFORE the unmap so a stack captured after any unload in the same range never looks
 * older than it; a dlclose that unmaps nothing only costs a generation number.
 */

static _Atomic uint32_t dl_gen;

uint32_t pa_mem_dl_gen_now(void) { return atomic_load_explicit(&dl_gen, memory_order_relaxed); }

typedef struct dl_find {
    const char *name;
    uintptr_t base;
    uint64_t lo, hi;
    int found;
} dl_find_t;

static int dl_find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    dl_find_t *f = arg;
    if (info->dlpi_addr != f->base || !info->dlpi_name || strcmp(info->dlpi_name, f->name) != 0)
        return 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
        lo = s < lo ? s : lo;
        hi = e > hi ? e : hi;
    }
    f->lo = lo;
    f->hi = hi;
    f->found = hi > lo;
    return 1;
}

/* Fills f (path copied into `path`) for handle h; 0 when h is a module with a file name. */
static int dl_describe(void *h, dl_find_t *f, char *path, size_t pathsz)
{
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || !lm->l_name[0])
        return -1;
    size_t n = strlen(lm->l_name);
    if (n >= pathsz)
        return -1;
    memcpy(path, lm->l_name, n + 1);
    *f = (dl_find_t){.name = path, .base = lm->l_addr};
    dl_iterate_phdr(dl_find_cb, f);
    return f->found ? 0 : -1;
}

/* Records the unloaded module (bounded wait like every memory record, see mem.c). */
static void dl_emit(const dl_find_t *f, uint32_t gen)
{
    pa_record_t rec = {.kind = PA_REC_MEM_MODULE, .t0 = pa_clock_ns()};
    rec.u.raw[0] = gen;
    rec.u.raw[1] = f->base;
    rec.u.raw[2] = f->lo;
    rec.u.raw[3] = f->hi;
    pa_mem_emit(&rec, f->name, (uint32_t)strlen(f->name));
}

PA_EXPORT int dlclose(void *h)
{
    static int (*real_dlclose)(void *);
    if (!real_dlclose)
        *(void **)&real_dlclose = dlsym(RTLD_NEXT, "dlclose");
    if (!real_dlclose)
        return -1;
    if (!pa_agent_collecting(PA_SRC_MEM))
        return real_dlclose(h);
    int saved = errno;
    char path[PATH_MAX];
    dl_find_t f;
    pa_guard_enter();
    int known = dl_describe(h, &f, path, sizeof path) == 0;
    pa_guard_leave();
    uint32_t gen = known ? atomic_fetch_add(&dl_gen, 1) + 1 : 0;
    errno = saved;
    int rc = real_dlclose(h);
    if (known) {
        saved = errno;
        dl_find_t still = {.name = f.name, .base = f.base};
        pa_guard_enter();
        dl_iterate_phdr(dl_find_cb, &still);
        pa_guard_leave();
        if (!still.found)
            dl_emit(&f, gen);
        errno = saved;
    }
    return rc;
}
