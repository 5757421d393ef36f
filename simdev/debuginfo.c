/* debuginfo.c - zetModuleGetDebugInfo: an ELF with the module's code (one .text.<kernel> section
 * at the kernel's device address) and DWARF 4 line tables mapping each instruction to its source
 * line, as the Intel driver hands out the relocated debug ELF of a module. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "pa_sd_internal.h"
#include "pa_sd_isa.h"

typedef struct buf { uint8_t *p; size_t n, cap; bool oom; } buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    if (d)
        memcpy(b->p + b->n, d, n);
    else
        memset(b->p + b->n, 0, n);
    b->n += n;
}
static void u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void u16(buf *b, uint16_t v) { put(b, &v, 2); }
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void str(buf *b, const char *s) { put(b, s, strlen(s) + 1); }
static void uleb(buf *b, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        u8(b, (uint8_t)(c | (v ? 0x80 : 0)));
    } while (v);
}
static void sleb(buf *b, int64_t v)
{
    for (;;) {
        uint8_t c = v & 0x7f;
        v >>= 7; /* arithmetic shift */
        bool done = (v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40));
        u8(b, (uint8_t)(c | (done ? 0 : 0x80)));
        if (done)
            return;
    }
}
static void patch32(buf *b, size_t at, uint32_t v)
{
    if (!b->oom)
        memcpy(b->p + at, &v, 4);
}

enum { DW_TAG_compile_unit = 0x11, DW_TAG_subprogram = 0x2e, DW_AT_name = 0x03, DW_AT_stmt_list = 0x10,
       DW_AT_low_pc = 0x11, DW_AT_high_pc = 0x12, DW_AT_language = 0x13, DW_AT_producer = 0x25,
       DW_FORM_addr = 0x01, DW_FORM_data2 = 0x05, DW_FORM_data8 = 0x07, DW_FORM_string = 0x08,
       DW_FORM_sec_offset = 0x17, DW_LANG_OpenCL = 0x15 };

static void abbrevs(buf *b)
{
    u8(b, 1); u8(b, DW_TAG_compile_unit); u8(b, 1);
    u8(b, DW_AT_producer); u8(b, DW_FORM_string); u8(b, DW_AT_name); u8(b, DW_FORM_string);
    u8(b, DW_AT_stmt_list); u8(b, DW_FORM_sec_offset); u8(b, DW_AT_low_pc); u8(b, DW_FORM_addr);
    u8(b, DW_AT_high_pc); u8(b, DW_FORM_data8); u8(b, DW_AT_language); u8(b, DW_FORM_data2);
    u8(b, 0); u8(b, 0);
    u8(b, 2); u8(b, DW_TAG_subprogram); u8(b, 0);
    u8(b, DW_AT_name); u8(b, DW_FORM_string); u8(b, DW_AT_low_pc); u8(b, DW_FORM_addr);
    u8(b, DW_AT_high_pc); u8(b, DW_FORM_data8); u8(b, 0); u8(b, 0);
    u8(b, 0);
}

/* One line program per kernel: a row at every instruction whose (file, line) changes. */
static void line_program(buf *b, const pa_sd_kernel_def *k)
{
    const pa_sd_isa *isa = k->isa;
    size_t start = b->n;
    u32(b, 0); /* unit_length, patched */
    u16(b, 4);
    size_t hl = b->n;
    u32(b, 0); /* header_length, patched */
    u8(b, 1);  /* minimum_instruction_length: addresses advance in bytes */
    u8(b, 1);  /* maximum_operations_per_instruction */
    u8(b, 1);  /* default_is_stmt */
    u8(b, (uint8_t)-5);
    u8(b, 14);
    u8(b, 13); /* opcode_base */
    static const uint8_t lens[12] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
    put(b, lens, sizeof lens);
    u8(b, 0); /* no include directories */
    for (uint32_t f = 0; f < isa->nfiles; f++) {
        str(b, isa->files[f]);
        uleb(b, 0); uleb(b, 0); uleb(b, 0);
    }
    if (isa->nfiles == 0) {
        str(b, "<unknown>");
        uleb(b, 0); uleb(b, 0); uleb(b, 0);
    }
    u8(b, 0);
    patch32(b, hl, (uint32_t)(b->n - hl - 4));
    u8(b, 0); uleb(b, 9); u8(b, 2); u64(b, k->gpu_addr); /* DW_LNE_set_address */
    int64_t line = 1;
    uint32_t file = 0, prev_file = UINT32_MAX - 1, prev_line = UINT32_MAX;
    uint64_t addr = 0;
    for (uint32_t i = 0; i < isa->ninstr; i++) {
        const pa_sd_instr *in = &isa->instr[i];
        uint32_t f = in->file == UINT32_MAX ? 0 : in->file;
        if (in->file == prev_file && in->line == prev_line)
            continue;
        if (f != file) {
            u8(b, 4); uleb(b, f + 1); /* DW_LNS_set_file */
            file = f;
        }
        if ((int64_t)in->line != line) {
            u8(b, 3); sleb(b, (int64_t)in->line - line); /* DW_LNS_advance_line */
            line = in->line;
        }
        uint64_t at = (uint64_t)i * PA_SD_ISA_INSTR_BYTES;
        if (at != addr) {
            u8(b, 2); uleb(b, at - addr); /* DW_LNS_advance_pc */
            addr = at;
        }
        u8(b, 1); /* DW_LNS_copy */
        prev_file = in->file;
        prev_line = in->line;
    }
    u8(b, 2); uleb(b, pa_sd_isa_bytes(isa) - addr);
    u8(b, 0); uleb(b, 1); u8(b, 1); /* DW_LNE_end_sequence */
    patch32(b, start, (uint32_t)(b->n - start - 4));
}

static void compile_unit(buf *b, const pa_sd_kernel_def *k, uint32_t stmt)
{
    size_t start = b->n;
    u32(b, 0);
    u16(b, 4);
    u32(b, 0); /* abbrev offset */
    u8(b, 8);
    u8(b, 1);
    str(b, "simdev ISA model");
    str(b, k->isa->nfiles ? k->isa->files[0] : "<unknown>");
    u32(b, stmt);
    u64(b, k->gpu_addr);
    u64(b, pa_sd_isa_bytes(k->isa));
    u16(b, DW_LANG_OpenCL);
    u8(b, 2);
    str(b, k->name);
    u64(b, k->gpu_addr);
    u64(b, pa_sd_isa_bytes(k->isa));
    u8(b, 0);
    patch32(b, start, (uint32_t)(b->n - start - 4));
}

/* .debug_aranges: one set per CU (the kernel's code range), for address -> CU lookups. */
static void aranges(buf *b, const pa_sd_kernel_def *k, uint32_t info_off)
{
    size_t start = b->n;
    u32(b, 0);
    u16(b, 2);
    u32(b, info_off);
    u8(b, 8);
    u8(b, 0);
    put(b, NULL, 4); /* tuples align to 16 */
    u64(b, k->gpu_addr);
    u64(b, pa_sd_isa_bytes(k->isa));
    u64(b, 0);
    u64(b, 0);
    patch32(b, start, (uint32_t)(b->n - start - 4));
}

/* ELF64: header, section contents, section headers. */
static int build_elf(const pa_sd_module *m, buf *out)
{
    buf abbrev = {0}, info = {0}, line = {0}, shstr = {0}, text = {0}, ar = {0};
    uint32_t n = m->nkernels, nsec = n + 6;
    uint32_t *name_off = calloc(nsec, sizeof *name_off);
    size_t *text_off = calloc(n ? n : 1, sizeof *text_off);
    int rc = -1;
    if (!name_off || !text_off)
        goto out;
    abbrevs(&abbrev);
    u8(&shstr, 0);
    for (uint32_t i = 0; i < n; i++) {
        const pa_sd_kernel_def *k = &m->kernels[i];
        aranges(&ar, k, (uint32_t)info.n);
        compile_unit(&info, k, (uint32_t)line.n);
        line_program(&line, k);
        name_off[1 + i] = (uint32_t)shstr.n;
        put(&shstr, ".text.", 6);
        str(&shstr, k->name);
        text_off[i] = text.n;
        put(&text, NULL, pa_sd_isa_bytes(k->isa));
        if (!text.oom)
            pa_sd_isa_encode(k->isa, text.p + text_off[i]);
    }
    static const char *dbg[] = {".debug_abbrev", ".debug_info", ".debug_line", ".debug_aranges", ".shstrtab"};
    for (int d = 0; d < 5; d++) {
        name_off[1 + n + d] = (uint32_t)shstr.n;
        str(&shstr, dbg[d]);
    }
    if (abbrev.oom || info.oom || line.oom || shstr.oom || text.oom || ar.oom)
        goto out;
    Elf64_Ehdr eh;
    memset(&eh, 0, sizeof eh);
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_INTELGT;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = (uint16_t)nsec;
    eh.e_shstrndx = (uint16_t)(nsec - 1);
    size_t o_text = sizeof eh, o_abbrev = o_text + text.n, o_info = o_abbrev + abbrev.n,
           o_line = o_info + info.n, o_ar = o_line + line.n, o_shstr = o_ar + ar.n,
           o_sh = (o_shstr + shstr.n + 7) & ~(size_t)7;
    eh.e_shoff = o_sh;
    put(out, &eh, sizeof eh);
    put(out, text.p, text.n);
    put(out, abbrev.p, abbrev.n);
    put(out, info.p, info.n);
    put(out, line.p, line.n);
    put(out, ar.p, ar.n);
    put(out, shstr.p, shstr.n);
    put(out, NULL, o_sh - (o_shstr + shstr.n));
    Elf64_Shdr sh;
    memset(&sh, 0, sizeof sh);
    put(out, &sh, sizeof sh);
    for (uint32_t i = 0; i < n; i++) {
        memset(&sh, 0, sizeof sh);
        sh.sh_name = name_off[1 + i];
        sh.sh_type = SHT_PROGBITS;
        sh.sh_flags = SHF_ALLOC | SHF_EXECINSTR;
        sh.sh_addr = m->kernels[i].gpu_addr;
        sh.sh_offset = o_text + text_off[i];
        sh.sh_size = pa_sd_isa_bytes(m->kernels[i].isa);
        sh.sh_addralign = PA_SD_ISA_KERNEL_ALIGN;
        put(out, &sh, sizeof sh);
    }
    size_t offs[5] = {o_abbrev, o_info, o_line, o_ar, o_shstr}, sizes[5] = {abbrev.n, info.n, line.n, ar.n, shstr.n};
    for (int d = 0; d < 5; d++) {
        memset(&sh, 0, sizeof sh);
        sh.sh_name = name_off[1 + n + d];
        sh.sh_type = d == 4 ? SHT_STRTAB : SHT_PROGBITS;
        sh.sh_offset = offs[d];
        sh.sh_size = sizes[d];
        sh.sh_addralign = 1;
        put(out, &sh, sizeof sh);
    }
    rc = out->oom ? -1 : 0;
out:
    free(abbrev.p); free(info.p); free(line.p); free(shstr.p); free(text.p); free(ar.p);
    free(name_off);
    free(text_off);
    return rc;
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
    buf elf = {0};
    if (build_elf(m, &elf) != 0) {
        free(elf.p);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (!pDebugInfo) {
        *pSize = elf.n;
    } else {
        size_t n = *pSize < elf.n ? *pSize : elf.n;
        memcpy(pDebugInfo, elf.p, n);
        *pSize = n;
    }
    free(elf.p);
    return ZE_RESULT_SUCCESS;
}
