/* debuginfo.c - zetModuleGetDebugInfo (ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF): an ELF with one DWARF 4
 * compile unit whose .debug_line maps every ISA instruction's device address to its file and line. */
#include <stdlib.h>
#include <string.h>

#include <level_zero/zet_api.h>

#include "pa_sd_internal.h"
#include "pa_sd_isa.h"

/* A growable byte buffer; errors are sticky (oom). */
typedef struct buf { uint8_t *p; size_t n, cap; int oom; } buf_t;

static void put(buf_t *b, const void *d, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *np = realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void u8(buf_t *b, uint8_t v) { put(b, &v, 1); }
static void u16(buf_t *b, uint16_t v) { u8(b, (uint8_t)v); u8(b, (uint8_t)(v >> 8)); }
static void u32(buf_t *b, uint32_t v) { u16(b, (uint16_t)v); u16(b, (uint16_t)(v >> 16)); }
static void u64(buf_t *b, uint64_t v) { u32(b, (uint32_t)v); u32(b, (uint32_t)(v >> 32)); }
static void str(buf_t *b, const char *s) { put(b, s, strlen(s) + 1); }
static void uleb(buf_t *b, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        u8(b, (uint8_t)(c | (v ? 0x80 : 0)));
    } while (v);
}
static void sleb(buf_t *b, int64_t v)
{
    for (;;) {
        uint8_t c = v & 0x7f;
        v >>= 7; /* arithmetic shift */
        int done = (v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40));
        u8(b, (uint8_t)(c | (done ? 0 : 0x80)));
        if (done)
            return;
    }
}
static void patch32(buf_t *b, size_t at, uint32_t v)
{
    if (!b->oom)
        for (int i = 0; i < 4; i++)
            b->p[at + i] = (uint8_t)(v >> (8 * i));
}

/* Module-wide file table: index of `name`, added once. */
static uint32_t file_id(const char ***files, uint32_t *n, const char *name)
{
    for (uint32_t i = 0; i < *n; i++)
        if (strcmp((*files)[i], name) == 0)
            return i;
    const char **nf = realloc(*files, (*n + 1) * sizeof *nf);
    if (!nf)
        return UINT32_MAX;
    *files = nf;
    nf[*n] = name;
    return (*n)++;
}

/* .debug_line of the module: one sequence per kernel, a row per instruction (line 0 = none). */
static void line_program(buf_t *b, const pa_sd_module *m)
{
    const char **files = NULL;
    uint32_t nfiles = 0;
    for (uint32_t k = 0; k < m->nkernels; k++) {
        const pa_sd_isa *isa = m->kernels[k].isa;
        for (uint32_t f = 0; isa && f < isa->nfiles; f++)
            file_id(&files, &nfiles, isa->files[f]);
    }
    size_t len_at = b->n;
    u32(b, 0);             /* unit_length, patched */
    u16(b, 4);             /* version */
    size_t hdr_at = b->n;
    u32(b, 0);             /* header_length, patched */
    size_t hdr_start = b->n;
    u8(b, 1);              /* minimum_instruction_length */
    u8(b, 1);              /* maximum_operations_per_instruction */
    u8(b, 1);              /* default_is_stmt */
    u8(b, (uint8_t)-5);    /* line_base */
    u8(b, 14);             /* line_range */
    u8(b, 13);             /* opcode_base */
    static const uint8_t std_len[12] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
    put(b, std_len, sizeof std_len);
    u8(b, 0);              /* include_directories: none */
    for (uint32_t f = 0; f < nfiles; f++) {
        str(b, files[f]);
        uleb(b, 0);
        uleb(b, 0);
        uleb(b, 0);
    }
    u8(b, 0);
    patch32(b, hdr_at, (uint32_t)(b->n - hdr_start));
    for (uint32_t k = 0; k < m->nkernels; k++) {
        const pa_sd_isa *isa = m->kernels[k].isa;
        if (!isa || !isa->ninstr)
            continue;
        u8(b, 0); uleb(b, 9); u8(b, 2); u64(b, m->kernels[k].gpu_addr); /* DW_LNE_set_address */
        int64_t line = 1;
        uint32_t file = 1;
        for (uint32_t i = 0; i < isa->ninstr; i++) {
            const pa_sd_instr *in = &isa->instr[i];
            if (i) {
                u8(b, 2); /* DW_LNS_advance_pc */
                uleb(b, PA_SD_ISA_INSTR_BYTES);
            }
            uint32_t f = in->file < isa->nfiles ? file_id(&files, &nfiles, isa->files[in->file]) + 1 : 1;
            if (f != file) {
                u8(b, 4); /* DW_LNS_set_file */
                uleb(b, f);
                file = f;
            }
            int64_t l = in->file < isa->nfiles ? in->line : 0;
            if (l != line) {
                u8(b, 3); /* DW_LNS_advance_line */
                sleb(b, l - line);
                line = l;
            }
            u8(b, 1); /* DW_LNS_copy: a row */
        }
        u8(b, 2);
        uleb(b, PA_SD_ISA_INSTR_BYTES);
        u8(b, 0); uleb(b, 1); u8(b, 1); /* DW_LNE_end_sequence */
    }
    patch32(b, len_at, (uint32_t)(b->n - len_at - 4));
    free(files);
}

/* The ELF: null, .debug_abbrev, .debug_info, .debug_line, .shstrtab. */
static int build_elf(const pa_sd_module *m, buf_t *out)
{
    buf_t abbrev = {0}, info = {0}, line = {0}, shstr = {0};
    /* abbrev 1: DW_TAG_compile_unit, no children, DW_AT_name string, DW_AT_stmt_list sec_offset */
    uleb(&abbrev, 1); uleb(&abbrev, 0x11); u8(&abbrev, 0);
    uleb(&abbrev, 0x03); uleb(&abbrev, 0x08); uleb(&abbrev, 0x10); uleb(&abbrev, 0x17);
    uleb(&abbrev, 0); uleb(&abbrev, 0); uleb(&abbrev, 0);
    const pa_sd_isa *first = m->nkernels ? m->kernels[0].isa : NULL;
    const char *cu_name = first && first->nfiles ? first->files[0] : "simdev-module";
    size_t at = info.n;
    u32(&info, 0); u16(&info, 4); u32(&info, 0); u8(&info, 8);
    uleb(&info, 1); str(&info, cu_name); u32(&info, 0);
    patch32(&info, at, (uint32_t)(info.n - at - 4));
    line_program(&line, m);
    static const char names[] = "\0.debug_abbrev\0.debug_info\0.debug_line\0.shstrtab\0";
    put(&shstr, names, sizeof names);
    const uint32_t name_off[5] = {0, 1, 15, 27, 39};
    buf_t *secs[5] = {NULL, &abbrev, &info, &line, &shstr};
    /* header */
    static const uint8_t ident[16] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    put(out, ident, sizeof ident);
    u16(out, 2);      /* ET_EXEC: addresses are final device addresses */
    u16(out, 205);    /* EM_INTELGT */
    u32(out, 1);
    u64(out, 0); u64(out, 0);
    size_t shoff_at = out->n;
    u64(out, 0);      /* e_shoff, patched */
    u32(out, 0); u16(out, 64); u16(out, 0); u16(out, 0); u16(out, 64); u16(out, 5); u16(out, 4);
    uint64_t off[5] = {0};
    for (int s = 1; s < 5; s++) {
        off[s] = out->n;
        put(out, secs[s]->p, secs[s]->n);
    }
    while (out->n % 8)
        u8(out, 0);
    uint64_t shoff = out->n;
    for (int s = 0; s < 5; s++) {
        u32(out, name_off[s]);
        u32(out, s == 0 ? 0 : (s == 4 ? 3 : 1)); /* SHT_NULL, SHT_PROGBITS, SHT_STRTAB */
        u64(out, 0); u64(out, 0);
        u64(out, off[s]);
        u64(out, s ? secs[s]->n : 0);
        u32(out, 0); u32(out, 0); u64(out, 1); u64(out, 0);
    }
    if (!out->oom)
        for (int i = 0; i < 8; i++)
            out->p[shoff_at + i] = (uint8_t)(shoff >> (8 * i));
    int oom = abbrev.oom | info.oom | line.oom | shstr.oom | out->oom;
    free(abbrev.p);
    free(info.p);
    free(line.p);
    free(shstr.p);
    return oom ? -1 : 0;
}

ze_result_t pa_sd_zetModuleGetDebugInfo(zet_module_handle_t h, zet_module_debug_info_format_t format, size_t *pSize,
                                        uint8_t *pDebugInfo)
{
    pa_sd_module *m = (pa_sd_module *)h;
    if (!m || m->magic != PA_SD_MAGIC_MODULE)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pSize)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (format != ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    buf_t elf = {0};
    if (build_elf(m, &elf) != 0) {
        free(elf.p);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (pDebugInfo)
        memcpy(pDebugInfo, elf.p, *pSize < elf.n ? *pSize : elf.n);
    *pSize = pDebugInfo && *pSize < elf.n ? *pSize : elf.n;
    free(elf.p);
    return ZE_RESULT_SUCCESS;
}
