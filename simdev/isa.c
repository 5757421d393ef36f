/* isa.c - the device ISA model: instruction lists, EU-stall weights, instruction mix, encoding,
 * synthetic bodies of built-in kernels, code address reservation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_sd_internal.h"
#include "pa_sd_isa.h"

/* Relative cost of one execution (how long a hardware thread stays on the instruction). */
static const uint32_t g_weight[PA_SD_IC_COUNT] = {
    [PA_SD_IC_ALU0] = 1, [PA_SD_IC_ALU1] = 4, [PA_SD_IC_XMX] = 8, [PA_SD_IC_LOAD] = 16,
    [PA_SD_IC_STORE] = 8, [PA_SD_IC_SLM_LOAD] = 4, [PA_SD_IC_SLM_STORE] = 2, [PA_SD_IC_ATOMIC] = 32,
    [PA_SD_IC_BARRIER] = 8, [PA_SD_IC_CONTROL] = 2, [PA_SD_IC_OTHER] = 1,
};

/* Sixteenths of a class's samples per stall reason (rows sum to 16), in metric order:
 * Active, Control, Pipe, Send, Dist, Sbid, Sync, InstFetch, Other. */
static const uint8_t g_share[PA_SD_IC_COUNT][PA_SD_SR_COUNT] = {
    [PA_SD_IC_ALU0] = {10, 0, 3, 0, 2, 0, 0, 1, 0},
    [PA_SD_IC_ALU1] = {6, 0, 8, 0, 2, 0, 0, 0, 0},
    [PA_SD_IC_XMX] = {6, 0, 8, 0, 2, 0, 0, 0, 0},
    [PA_SD_IC_LOAD] = {2, 0, 0, 9, 0, 5, 0, 0, 0},
    [PA_SD_IC_STORE] = {2, 0, 0, 12, 0, 2, 0, 0, 0},
    [PA_SD_IC_SLM_LOAD] = {2, 0, 0, 6, 0, 8, 0, 0, 0},
    [PA_SD_IC_SLM_STORE] = {4, 0, 0, 10, 0, 2, 0, 0, 0},
    [PA_SD_IC_ATOMIC] = {2, 0, 0, 10, 0, 4, 0, 0, 0},
    [PA_SD_IC_BARRIER] = {2, 0, 0, 0, 0, 0, 14, 0, 0},
    [PA_SD_IC_CONTROL] = {4, 10, 0, 0, 0, 0, 0, 2, 0},
    [PA_SD_IC_OTHER] = {8, 0, 0, 0, 0, 0, 0, 0, 8},
};

uint32_t pa_sd_isa_weight(pa_sd_iclass cls) { return cls < PA_SD_IC_COUNT ? g_weight[cls] : 0; }

uint32_t pa_sd_isa_reason_share(pa_sd_iclass cls, uint32_t reason)
{
    return (cls < PA_SD_IC_COUNT && reason < PA_SD_SR_COUNT) ? g_share[cls][reason] : 0;
}

pa_sd_isa *pa_sd_isa_new(void)
{
    pa_sd_isa *isa = calloc(1, sizeof *isa);
    if (isa)
        atomic_store(&isa->refs, 1);
    return isa;
}

int pa_sd_isa_push(pa_sd_isa *isa, uint16_t op, pa_sd_iclass cls, uint32_t depth, uint32_t line,
                   uint32_t file, uint32_t bytes)
{
    if ((isa->ninstr & (isa->ninstr - 1)) == 0) { /* grow at powers of two */
        uint32_t cap = isa->ninstr ? isa->ninstr * 2 : 16;
        pa_sd_instr *n = realloc(isa->instr, cap * sizeof *n);
        if (!n)
            return -1;
        isa->instr = n;
    }
    pa_sd_instr *in = &isa->instr[isa->ninstr++];
    in->opcode = op;
    in->iclass = (uint8_t)cls;
    in->depth = (uint8_t)(depth > PA_SD_ISA_MAX_DEPTH ? PA_SD_ISA_MAX_DEPTH : depth);
    in->line = line;
    in->file = file;
    in->bytes = bytes;
    return 0;
}

uint32_t pa_sd_isa_file(pa_sd_isa *isa, const char *name)
{
    for (uint32_t i = 0; i < isa->nfiles; i++)
        if (strcmp(isa->files[i], name) == 0)
            return i;
    char **n = realloc(isa->files, (isa->nfiles + 1) * sizeof *n);
    if (!n)
        return UINT32_MAX;
    isa->files = n;
    if (!(n[isa->nfiles] = strdup(name)))
        return UINT32_MAX;
    return isa->nfiles++;
}

/* Executions per work item of an instruction at a loop depth: trips^depth (saturating). */
static uint64_t executions_of(uint32_t depth, uint64_t trips)
{
    uint64_t e = 1;
    for (uint32_t d = 0; d < depth; d++)
        e = (trips && e > UINT64_MAX / trips) ? UINT64_MAX : e * trips;
    return e;
}

static uint64_t executions(uint32_t depth) { return executions_of(depth, pa_sd_config_get()->isa_loop_trips); }

int pa_sd_isa_finish(pa_sd_isa *isa)
{
    if (isa->ninstr == 0 && pa_sd_isa_push(isa, 0, PA_SD_IC_OTHER, 0, 0, UINT32_MAX, 0) != 0)
        return -1;
    size_t n = (size_t)isa->ninstr * PA_SD_SR_COUNT + 1;
    uint64_t *cum = malloc(n * sizeof *cum);
    if (!cum)
        return -1;
    cum[0] = 0;
    size_t k = 1;
    for (uint32_t i = 0; i < isa->ninstr; i++) {
        const pa_sd_instr *in = &isa->instr[i];
        uint64_t w = (uint64_t)g_weight[in->iclass] * executions(in->depth);
        for (uint32_t r = 0; r < PA_SD_SR_COUNT; r++, k++)
            cum[k] = cum[k - 1] + w * g_share[in->iclass][r];
    }
    free(isa->cum);
    isa->cum = cum;
    return 0;
}

pa_sd_isa *pa_sd_isa_ref(pa_sd_isa *isa)
{
    if (isa)
        atomic_fetch_add(&isa->refs, 1);
    return isa;
}

void pa_sd_isa_unref(pa_sd_isa *isa)
{
    if (!isa || atomic_fetch_sub(&isa->refs, 1) != 1)
        return;
    for (uint32_t i = 0; i < isa->nfiles; i++)
        free(isa->files[i]);
    free(isa->files);
    free(isa->instr);
    free(isa->cum);
    free(isa);
}

uint64_t pa_sd_isa_bytes(const pa_sd_isa *isa) { return (uint64_t)isa->ninstr * PA_SD_ISA_INSTR_BYTES; }

void pa_sd_isa_active_share(const pa_sd_isa *isa, uint64_t *num, uint64_t *den)
{
    *num = 0;
    *den = 1;
    if (!isa || !isa->cum || !isa->ninstr)
        return;
    for (uint32_t i = 0; i < isa->ninstr; i++)
        *num += isa->cum[(size_t)i * PA_SD_SR_COUNT + PA_SD_SR_ACTIVE + 1] - isa->cum[(size_t)i * PA_SD_SR_COUNT + PA_SD_SR_ACTIVE];
    *den = isa->cum[(size_t)isa->ninstr * PA_SD_SR_COUNT];
    if (*den == 0)
        *den = 1;
}

void pa_sd_isa_get_mix(const pa_sd_isa *isa, uint64_t trips, pa_sd_isa_mix *m)
{
    memset(m, 0, sizeof *m);
    for (uint32_t i = 0; isa && i < isa->ninstr; i++) {
        const pa_sd_instr *in = &isa->instr[i];
        uint64_t e = executions_of(in->depth, trips), b = e * in->bytes;
        m->per_class[in->iclass] += e;
        m->total += e;
        switch (in->iclass) {
        case PA_SD_IC_ALU0: m->alu0 += e; break;
        case PA_SD_IC_ALU1: m->alu1 += e; break;
        case PA_SD_IC_XMX: m->xmx += e; break;
        case PA_SD_IC_CONTROL: m->control += e; break;
        case PA_SD_IC_LOAD: m->send += e; m->global_read += b; break;
        case PA_SD_IC_STORE: m->send += e; m->global_write += b; break;
        case PA_SD_IC_SLM_LOAD: m->send += e; m->slm_read += b; break;
        case PA_SD_IC_SLM_STORE: m->send += e; m->slm_write += b; break;
        case PA_SD_IC_ATOMIC: m->send += e; m->global_read += b; m->global_write += b; break;
        case PA_SD_IC_BARRIER: m->send += e; break;
        default: break;
        }
    }
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void pa_sd_isa_encode(const pa_sd_isa *isa, uint8_t *out)
{
    for (uint32_t i = 0; i < isa->ninstr; i++, out += PA_SD_ISA_INSTR_BYTES) {
        const pa_sd_instr *in = &isa->instr[i];
        put_le(out + 0, in->opcode, 2);
        out[2] = in->iclass;
        out[3] = in->depth;
        put_le(out + 4, in->line, 4);
        put_le(out + 8, in->bytes, 4);
        put_le(out + 12, in->file, 4);
    }
}

/* ---- synthetic bodies ---- */
typedef struct syn_instr { uint16_t op; uint8_t cls, depth; uint16_t line; uint16_t bytes; } syn_instr;

/* SPIR-V opcodes the synthetic instructions stand for. */
enum {
    OP_LOAD = 61, OP_STORE = 62, OP_IADD = 128, OP_FADD = 129, OP_ISUB = 130, OP_IMUL = 132,
    OP_FMUL = 133, OP_ULT = 176, OP_BR = 249, OP_BRC = 250, OP_RET = 253, OP_ATOMIC_FADD = 6035,
    OP_CONTROL_BARRIER = 224, OP_READ_CLOCK = 5056,
};
#define A PA_SD_IC_ALU0
#define L PA_SD_IC_LOAD
#define S PA_SD_IC_STORE
#define C PA_SD_IC_CONTROL

/* Line n of "simdev/builtin/<name>.cl"; see README "Synthetic bodies" for the listing. */
static const syn_instr g_generic[] = {
    {OP_LOAD, A, 0, 1, 0}, {OP_ULT, A, 0, 2, 0}, {OP_BRC, C, 0, 2, 0}, {OP_LOAD, L, 0, 3, 4},
    {OP_FADD, A, 0, 3, 0}, {OP_STORE, S, 0, 3, 4}, {OP_RET, C, 0, 4, 0},
};
static const syn_instr g_vector_add[] = {
    {OP_LOAD, A, 0, 1, 0}, {OP_ULT, A, 0, 2, 0}, {OP_BRC, C, 0, 2, 0}, {OP_LOAD, L, 0, 3, 4},
    {OP_LOAD, L, 0, 3, 4}, {OP_FADD, A, 0, 3, 0}, {OP_STORE, S, 0, 3, 4}, {OP_RET, C, 0, 4, 0},
};
static const syn_instr g_saxpy[] = {
    {OP_LOAD, A, 0, 1, 0}, {OP_ULT, A, 0, 2, 0}, {OP_BRC, C, 0, 2, 0}, {OP_LOAD, L, 0, 3, 4},
    {OP_LOAD, L, 0, 3, 4}, {OP_FMUL, A, 0, 3, 0}, {OP_FADD, A, 0, 3, 0}, {OP_STORE, S, 0, 3, 4},
    {OP_RET, C, 0, 4, 0},
};
static const syn_instr g_gemm[] = {
    {OP_LOAD, A, 0, 1, 0}, {OP_IMUL, A, 0, 2, 0}, {OP_LOAD, L, 1, 3, 4}, {OP_LOAD, L, 1, 3, 4},
    {OP_FMUL, A, 1, 4, 0}, {OP_FADD, A, 1, 4, 0}, {OP_IADD, A, 1, 3, 0}, {OP_ULT, A, 1, 3, 0},
    {OP_BRC, C, 1, 3, 0}, {OP_STORE, S, 0, 5, 4}, {OP_RET, C, 0, 6, 0},
};
static const syn_instr g_fill[] = {
    {OP_LOAD, A, 0, 1, 0}, {OP_ULT, A, 0, 2, 0}, {OP_BRC, C, 0, 2, 0}, {OP_STORE, S, 0, 3, 4},
    {OP_RET, C, 0, 4, 0},
};
static const syn_instr g_reduce[] = {
    {OP_LOAD, A, 0, 1, 0}, {OP_LOAD, L, 1, 2, 4}, {OP_FADD, A, 1, 2, 0}, {OP_IADD, A, 1, 2, 0},
    {OP_ULT, A, 1, 2, 0}, {OP_BRC, C, 1, 2, 0}, {OP_ATOMIC_FADD, PA_SD_IC_ATOMIC, 0, 3, 4},
    {OP_RET, C, 0, 4, 0},
};
static const syn_instr g_busy[] = {
    {OP_READ_CLOCK, A, 0, 1, 0}, {OP_READ_CLOCK, A, 1, 2, 0}, {OP_ISUB, A, 1, 2, 0},
    {OP_ULT, A, 1, 2, 0}, {OP_BRC, C, 1, 2, 0}, {OP_RET, C, 0, 3, 0},
};
static const syn_instr g_allreduce[] = {
    {OP_LOAD, A, 0, 1, 0}, {OP_CONTROL_BARRIER, PA_SD_IC_BARRIER, 0, 2, 0}, {OP_LOAD, L, 1, 3, 4},
    {OP_LOAD, L, 1, 3, 4}, {OP_FADD, A, 1, 3, 0}, {OP_STORE, S, 1, 3, 4}, {OP_IADD, A, 1, 3, 0},
    {OP_ULT, A, 1, 3, 0}, {OP_BRC, C, 1, 3, 0}, {OP_RET, C, 0, 4, 0},
};
#undef A
#undef L
#undef S
#undef C

pa_sd_isa *pa_sd_isa_synthetic(int builtin, const char *name)
{
    const syn_instr *body = g_generic;
    size_t n = sizeof g_generic / sizeof g_generic[0];
#define BODY(b, arr) case b: body = arr; n = sizeof arr / sizeof arr[0]; break;
    switch (builtin) {
    BODY(PA_SD_BI_VECTOR_ADD, g_vector_add)
    BODY(PA_SD_BI_SAXPY, g_saxpy)
    BODY(PA_SD_BI_GEMM, g_gemm)
    BODY(PA_SD_BI_FILL_U32, g_fill)
    BODY(PA_SD_BI_REDUCE_SUM, g_reduce)
    BODY(PA_SD_BI_BUSY_NS, g_busy)
    BODY(PA_SD_BI_ALLREDUCE, g_allreduce)
    default: break;
    }
#undef BODY
    pa_sd_isa *isa = pa_sd_isa_new();
    if (!isa)
        return NULL;
    isa->synthetic = true;
    char file[320];
    snprintf(file, sizeof file, "simdev/builtin/%s.cl", builtin ? name : "generic");
    uint32_t f = pa_sd_isa_file(isa, file);
    for (size_t i = 0; i < n; i++)
        if (f == UINT32_MAX || pa_sd_isa_push(isa, body[i].op, (pa_sd_iclass)body[i].cls, body[i].depth,
                                              body[i].line, f, body[i].bytes) != 0) {
            pa_sd_isa_unref(isa);
            return NULL;
        }
    if (pa_sd_isa_finish(isa) != 0) {
        pa_sd_isa_unref(isa);
        return NULL;
    }
    return isa;
}

/* Code lives in [1 MiB, 3.75 GiB): module ranges are handed out in order with a 4 KiB gap and
 * wrap around when exhausted (addresses of live modules are then no longer unique). */
#define ISA_VA_START 0x00100000ull
#define ISA_VA_END 0xF0000000ull
static _Atomic uint64_t g_next_va = ISA_VA_START;

uint64_t pa_sd_isa_reserve(uint64_t bytes)
{
    uint64_t span = ((bytes + 4095) & ~4095ull) + 4096;
    if (span > ISA_VA_END - ISA_VA_START)
        span = ISA_VA_END - ISA_VA_START;
    uint64_t cur = atomic_load(&g_next_va);
    for (;;) {
        uint64_t va = cur, next = va + span;
        if (next > ISA_VA_END) {
            va = ISA_VA_START;
            next = va + span;
        }
        if (atomic_compare_exchange_weak(&g_next_va, &cur, next))
            return va;
    }
}
