/* pcs_lines.c - source lines of a kernel's instructions from the module's debug info
 * (zetModuleGetDebugInfo, ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF: .debug_line read with libdw). */
#include <stdlib.h>
#include <string.h>

#include "pcs_internal.h"

#ifdef PA_HAVE_LIBDW
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <libelf.h>

/* libdw is loaded with dlopen when a module has debug info (as agg_mem_sym.c does): nothing links
 * it, and without it kernels simply have no source lines. */
static struct {
    int tried, ok;
    __typeof__(elf_version) *version; __typeof__(elf_memory) *memory; __typeof__(elf_end) *end;
    __typeof__(dwarf_begin_elf) *begin; __typeof__(dwarf_end) *dend; __typeof__(dwarf_nextcu) *nextcu;
    __typeof__(dwarf_offdie) *offdie; __typeof__(dwarf_getsrclines) *getsrclines;
    __typeof__(dwarf_onesrcline) *onesrcline; __typeof__(dwarf_lineaddr) *lineaddr;
    __typeof__(dwarf_lineno) *lineno; __typeof__(dwarf_linesrc) *linesrc;
} dw;
static pthread_mutex_t dw_mu = PTHREAD_MUTEX_INITIALIZER;

static int dw_load(void)
{
    pthread_mutex_lock(&dw_mu);
    if (!dw.tried) {
        dw.tried = 1;
        void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
        if (h) {
            dw.ok = 1;
#define L(f, n) if (!(*(void **)&dw.f = dlsym(h, #n))) dw.ok = 0;
            L(version, elf_version) L(memory, elf_memory) L(end, elf_end) L(begin, dwarf_begin_elf)
            L(dend, dwarf_end) L(nextcu, dwarf_nextcu) L(offdie, dwarf_offdie) L(getsrclines, dwarf_getsrclines)
            L(onesrcline, dwarf_onesrcline) L(lineaddr, dwarf_lineaddr) L(lineno, dwarf_lineno)
            L(linesrc, dwarf_linesrc)
#undef L
        }
    }
    int ok = dw.ok;
    pthread_mutex_unlock(&dw_mu);
    return ok;
}

static int line_cmp(const void *a, const void *b)
{
    const pa_pcs_line_t *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static uint32_t file_index(char ***files, uint32_t *nfiles, const char *name)
{
    for (uint32_t i = 0; i < *nfiles; i++)
        if (strcmp((*files)[i], name) == 0)
            return i;
    char **n = realloc(*files, (*nfiles + 1) * sizeof *n);
    if (!n)
        return UINT32_MAX;
    *files = n;
    if (!(n[*nfiles] = strdup(name)))
        return UINT32_MAX;
    return (*nfiles)++;
}

/* Lines whose address (low 32 bits, as the IP) lies in [base, base + limit). */
static void read_dwarf(const void *elf_bytes, size_t size, uint32_t base, uint64_t limit, char ***files,
                       uint32_t *nfiles, pa_pcs_line_t **lines, uint32_t *nlines)
{
    dw.version(EV_CURRENT);
    Elf *elf = dw.memory((char *)elf_bytes, size);
    if (!elf)
        return;
    Dwarf *dbg = dw.begin(elf, DWARF_C_READ, NULL);
    if (!dbg) {
        dw.end(elf);
        return;
    }
    uint32_t cap = 0;
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dw.nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        if (dw.offdie(dbg, off + hsize, &cu)) {
            Dwarf_Lines *dl;
            size_t n;
            if (dw.getsrclines(&cu, &dl, &n) == 0) {
                for (size_t i = 0; i < n; i++) {
                    Dwarf_Line *l = dw.onesrcline(dl, i);
                    Dwarf_Addr addr;
                    int line;
                    const char *src;
                    if (!l || dw.lineaddr(l, &addr) != 0 || dw.lineno(l, &line) != 0 || line < 0)
                        continue;
                    if (!(src = dw.linesrc(l, NULL, NULL)))
                        src = "";
                    uint32_t a32 = (uint32_t)(addr & 0xffffffffu);
                    if (a32 < base || (uint64_t)(a32 - base) >= limit)
                        continue;
                    uint32_t f = file_index(files, nfiles, src);
                    if (f == UINT32_MAX)
                        continue;
                    if (*nlines == cap) {
                        cap = cap ? cap * 2 : 64;
                        pa_pcs_line_t *nl = realloc(*lines, cap * sizeof *nl);
                        if (!nl)
                            break;
                        *lines = nl;
                    }
                    /* line 0 (no source) is kept: it ends the previous row's range */
                    (*lines)[(*nlines)++] = (pa_pcs_line_t){a32 - base, (uint32_t)line, f};
                }
            }
        }
        off = next;
    }
    dw.dend(dbg);
    dw.end(elf);
    if (*nlines)
        qsort(*lines, *nlines, sizeof **lines, line_cmp);
}
#endif

void pcs_lines_of(ze_module_handle_t module, const char *name, uint32_t base, char ***files, uint32_t *nfiles,
                  pa_pcs_line_t **lines, uint32_t *nlines)
{
    (void)name;
    *files = NULL;
    *lines = NULL;
    *nfiles = *nlines = 0;
#ifdef PA_HAVE_LIBDW
    if (!pcs_ze.zetModuleGetDebugInfo || !dw_load() || !pa_ze_call_enter())
        return;
    /* the loader's calls in a window, the parse (milliseconds for a large module) after it */
    size_t size = 0, bin = 0;
    uint8_t *buf = NULL;
    if (pcs_ze.zetModuleGetDebugInfo((zet_module_handle_t)module, ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF, &size,
                                     NULL) == ZE_RESULT_SUCCESS &&
        size != 0 && size <= (256u << 20) && (buf = malloc(size)) != NULL &&
        pcs_ze.zetModuleGetDebugInfo((zet_module_handle_t)module, ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF, &size,
                                     buf) == ZE_RESULT_SUCCESS) {
        if (pcs_ze.zeModuleGetNativeBinary(module, &bin, NULL) != ZE_RESULT_SUCCESS || bin == 0)
            bin = UINT32_MAX;
    } else {
        free(buf);
        buf = NULL;
    }
    pa_ze_call_leave();
    if (buf)
        read_dwarf(buf, size, base, bin, files, nfiles, lines, nlines);
    free(buf);
#else
    (void)module;
    (void)base;
#endif
}
