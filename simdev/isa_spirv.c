/* isa_spirv.c - builds a kernel's device ISA from its SPIR-V function: one instruction per SPIR-V
 * instruction with the OpLine that precedes it, classes from opcodes and pointer storage classes. */
#include <stdlib.h>
#include <string.h>

#include "pa_sd_internal.h"
#include "pa_sd_isa.h"

enum {
    OP_NOP = 0, OP_STRING = 7, OP_LINE = 8, OP_EXT_INST_IMPORT = 11, OP_EXT_INST = 12,
    OP_TYPE_BOOL = 20, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_VECTOR = 23, OP_TYPE_ARRAY = 28,
    OP_TYPE_STRUCT = 30, OP_TYPE_POINTER = 32, OP_CONSTANT = 43, OP_FUNCTION = 54, OP_FUNCTION_PARAMETER = 55,
    OP_FUNCTION_END = 56, OP_FUNCTION_CALL = 57, OP_VARIABLE = 59, OP_LOAD = 61, OP_STORE = 62,
    OP_COPY_MEMORY = 63, OP_COPY_MEMORY_SIZED = 64, OP_CONTROL_BARRIER = 224, OP_MEMORY_BARRIER = 225,
    OP_ATOMIC_FIRST = 227, OP_ATOMIC_STORE = 228, OP_ATOMIC_LAST = 242, OP_PHI = 245, OP_LOOP_MERGE = 246,
    OP_SELECTION_MERGE = 247, OP_LABEL = 248, OP_BRANCH = 249, OP_BRANCH_CONDITIONAL = 250, OP_SWITCH = 251,
    OP_KILL = 252, OP_RETURN = 253, OP_RETURN_VALUE = 254, OP_UNREACHABLE = 255, OP_UNDEF = 1,
    OP_NO_LINE = 317, OP_ATOMIC_FLAG_TEST_AND_SET = 318, OP_ATOMIC_FLAG_CLEAR = 319,
    OP_COOP_MATRIX_LOAD_KHR = 4457, OP_COOP_MATRIX_STORE_KHR = 4458, OP_COOP_MATRIX_MULADD_KHR = 4459,
    OP_SUBGROUP_BLOCK_READ_INTEL = 5575, OP_SUBGROUP_BLOCK_WRITE_INTEL = 5576, OP_ATOMIC_FMIN_EXT = 5614,
    OP_ATOMIC_FMAX_EXT = 5615, OP_ATOMIC_FADD_EXT = 6035, OP_JOINT_MATRIX_MAD_INTEL = 6122,
    OP_SUBGROUP_MATRIX_MAD_INTEL = 6237,
};
/* Storage classes (SPIR-V 3.7) */
enum { SC_INPUT = 1, SC_WORKGROUP = 4, SC_PRIVATE = 6, SC_FUNCTION = 7, SC_NONE = 0xff };
enum { EXT_NONE, EXT_MATH, EXT_DEBUG };

typedef struct ids {
    uint32_t bound;
    uint32_t *val_type;  /* result type of a value id */
    uint32_t *type_size; /* bytes of a type id (0 unknown) */
    uint8_t *is_type;
    uint8_t *ptr_sc;     /* storage class of a pointer type id, SC_NONE otherwise */
    uint8_t *ext;        /* EXT_* of an OpExtInstImport id */
    uint32_t *const_val; /* 32-bit OpConstant values (array lengths) */
    uint32_t *str_word;  /* word index of an OpString's literal + 1 (0 = none) */
    uint32_t *name_word; /* word index of an OpName's literal + 1 (0 = none) */
} ids;

typedef struct walker { const uint8_t *p; size_t n; bool swap; } walker;

static uint32_t W(const walker *w, size_t i)
{
    uint32_t v;
    memcpy(&v, w->p + 4 * i, 4);
    return w->swap ? __builtin_bswap32(v) : v;
}

static bool id_ok(const ids *t, uint32_t id) { return id < t->bound; }

static void ids_free(ids *t)
{
    free(t->val_type); free(t->type_size); free(t->is_type); free(t->ptr_sc); free(t->ext);
    free(t->const_val); free(t->str_word); free(t->name_word);
}

static int ids_alloc(ids *t, uint32_t bound)
{
    memset(t, 0, sizeof *t);
    t->bound = bound;
    t->val_type = calloc(bound, 4); t->type_size = calloc(bound, 4); t->is_type = calloc(bound, 1);
    t->ptr_sc = malloc(bound); t->ext = calloc(bound, 1); t->const_val = calloc(bound, 4);
    t->str_word = calloc(bound, 4);
    t->name_word = calloc(bound, 4);
    if (!t->val_type || !t->type_size || !t->is_type || !t->ptr_sc || !t->ext || !t->const_val || !t->str_word ||
        !t->name_word) {
        ids_free(t);
        return -1;
    }
    memset(t->ptr_sc, SC_NONE, bound);
    return 0;
}

/* Compare an instruction's literal string (from word 'from') with s. */
static bool literal_is(const walker *w, size_t from, size_t end, const char *s)
{
    size_t len = strlen(s), k = 0;
    for (size_t i = from; i < end; i++) {
        uint32_t v = W(w, i);
        for (int b = 0; b < 4; b++, k++) {
            char ch = (char)(v >> (8 * b));
            if (k == len)
                return ch == '\0';
            if (ch != s[k])
                return false;
        }
    }
    return false;
}

static void literal_copy(const walker *w, size_t from, size_t end, char *buf, size_t cap)
{
    size_t k = 0;
    for (size_t i = from; i < end && k + 1 < cap; i++) {
        uint32_t v = W(w, i);
        for (int b = 0; b < 4 && k + 1 < cap; b++) {
            char ch = (char)(v >> (8 * b));
            if (!ch)
                goto done;
            buf[k++] = ch;
        }
    }
done:
    buf[k] = '\0';
}

/* Global declarations: types, sizes, pointer storage classes, strings, import sets, value types. */
static void scan_decls(const walker *w, ids *t)
{
    for (size_t i = 5; i < w->n;) {
        uint32_t ins = W(w, i), cnt = ins >> 16, op = ins & 0xffff;
        if (cnt == 0 || i + cnt > w->n)
            break;
        uint32_t a = cnt > 1 ? W(w, i + 1) : 0, b = cnt > 2 ? W(w, i + 2) : 0, c = cnt > 3 ? W(w, i + 3) : 0;
        if (op == OP_STRING && id_ok(t, a))
            t->str_word[a] = (uint32_t)(i + 2 + 1);
        else if (op == 5 /* OpName */ && cnt > 2 && id_ok(t, a))
            t->name_word[a] = (uint32_t)(i + 2 + 1);
        else if (op == OP_EXT_INST_IMPORT && id_ok(t, a))
            t->ext[a] = literal_is(w, i + 2, i + cnt, "OpenCL.std") ? EXT_MATH : EXT_DEBUG;
        else if (op >= 19 && op <= 39 && id_ok(t, a)) {
            t->is_type[a] = 1;
            if (op == OP_TYPE_BOOL) t->type_size[a] = 1;
            else if ((op == OP_TYPE_INT || op == OP_TYPE_FLOAT) && cnt > 2) t->type_size[a] = b / 8;
            else if (op == OP_TYPE_VECTOR && cnt > 3 && id_ok(t, b)) t->type_size[a] = t->type_size[b] * c;
            else if (op == OP_TYPE_ARRAY && cnt > 3 && id_ok(t, b) && id_ok(t, c))
                t->type_size[a] = t->type_size[b] * t->const_val[c];
            else if (op == OP_TYPE_STRUCT) {
                for (uint32_t k = 2; k < cnt; k++)
                    if (id_ok(t, W(w, i + k)))
                        t->type_size[a] += t->type_size[W(w, i + k)];
            } else if (op == OP_TYPE_POINTER && cnt > 2) {
                t->type_size[a] = 8;
                t->ptr_sc[a] = (uint8_t)(b > 0xfe ? 0xfe : b);
            }
        } else if (op == 4456 || op == 6119) { /* cooperative / joint matrix types */
            if (id_ok(t, a)) t->is_type[a] = 1;
        } else if (cnt > 2 && id_ok(t, a) && t->is_type[a] && id_ok(t, b)) {
            t->val_type[b] = a; /* (result type, result id, ...) */
            if (op == OP_CONSTANT && cnt > 3)
                t->const_val[b] = c;
        }
        i += cnt;
    }
}

static uint8_t sc_of(const ids *t, uint32_t ptr)
{
    if (!id_ok(t, ptr) || !id_ok(t, t->val_type[ptr]))
        return SC_NONE;
    return t->ptr_sc[t->val_type[ptr]];
}

static uint32_t size_of_val(const ids *t, uint32_t v)
{
    return (id_ok(t, v) && id_ok(t, t->val_type[v])) ? t->type_size[t->val_type[v]] : 0;
}

/* Register-like storage (function/private variables, built-in inputs) is a move, not a send. */
static bool sc_register(uint8_t sc) { return sc == SC_FUNCTION || sc == SC_PRIVATE || sc == SC_INPUT; }

/* OpenCL.std instructions 0..94 are the math functions; the extended-math pipe runs the
 * transcendental ones, while rounding, min/max, abs and multiply-add are plain FPU work (ALU0), as
 * are the common (95..) and integer (141..) functions. */
static bool opencl_std_is_math(uint32_t n)
{
    static const uint8_t simple[] = {12, 13, 23, 24, 25, 26, 27, 28, 30, 42, 43, 44, 53, 55, 66};
    if (n > 94)
        return false;
    for (size_t i = 0; i < sizeof simple; i++)
        if (simple[i] == n)
            return false;
    return true;
}

/* Class and bytes of one executable instruction; returns false for markers that are not code. */
static bool classify(const walker *w, const ids *t, size_t i, uint32_t op, uint32_t cnt,
                     pa_sd_iclass *cls, uint32_t *bytes)
{
    uint32_t a = cnt > 1 ? W(w, i + 1) : 0, b = cnt > 2 ? W(w, i + 2) : 0, c = cnt > 3 ? W(w, i + 3) : 0;
    *bytes = 0;
    *cls = PA_SD_IC_ALU0;
    switch (op) {
    case OP_NOP: case OP_LINE: case OP_NO_LINE: case OP_FUNCTION: case OP_FUNCTION_PARAMETER:
    case OP_FUNCTION_END: case OP_LABEL: case OP_LOOP_MERGE: case OP_SELECTION_MERGE:
        return false;
    case OP_EXT_INST:
        if (!id_ok(t, c) || t->ext[c] != EXT_MATH)
            return false; /* debug-info sets are not code */
        *cls = opencl_std_is_math(cnt > 4 ? W(w, i + 4) : 0) ? PA_SD_IC_ALU1 : PA_SD_IC_ALU0;
        return true;
    case OP_VARIABLE: case OP_UNDEF:
        *cls = PA_SD_IC_OTHER;
        return true;
    case OP_LOAD: case OP_SUBGROUP_BLOCK_READ_INTEL: case OP_COOP_MATRIX_LOAD_KHR: {
        uint8_t sc = sc_of(t, c);
        *bytes = id_ok(t, a) ? t->type_size[a] : 0;
        *cls = sc_register(sc) ? PA_SD_IC_ALU0 : sc == SC_WORKGROUP ? PA_SD_IC_SLM_LOAD : PA_SD_IC_LOAD;
        if (*cls == PA_SD_IC_ALU0)
            *bytes = 0;
        return true;
    }
    case OP_STORE: case OP_SUBGROUP_BLOCK_WRITE_INTEL: case OP_COOP_MATRIX_STORE_KHR: {
        uint8_t sc = sc_of(t, a);
        *bytes = size_of_val(t, b);
        *cls = sc_register(sc) ? PA_SD_IC_ALU0 : sc == SC_WORKGROUP ? PA_SD_IC_SLM_STORE : PA_SD_IC_STORE;
        if (*cls == PA_SD_IC_ALU0)
            *bytes = 0;
        return true;
    }
    case OP_COPY_MEMORY: case OP_COPY_MEMORY_SIZED:
        *cls = sc_register(sc_of(t, a)) ? PA_SD_IC_ALU0 : PA_SD_IC_STORE;
        *bytes = *cls == PA_SD_IC_ALU0 ? 0 : (uint32_t)(size_of_val(t, b) ? 8 : 0);
        return true;
    case OP_CONTROL_BARRIER: case OP_MEMORY_BARRIER:
        *cls = PA_SD_IC_BARRIER;
        return true;
    case OP_BRANCH: case OP_BRANCH_CONDITIONAL: case OP_SWITCH: case OP_KILL: case OP_RETURN:
    case OP_RETURN_VALUE: case OP_UNREACHABLE: case OP_FUNCTION_CALL:
        *cls = PA_SD_IC_CONTROL;
        return true;
    case OP_COOP_MATRIX_MULADD_KHR: case OP_JOINT_MATRIX_MAD_INTEL: case OP_SUBGROUP_MATRIX_MAD_INTEL:
        *cls = PA_SD_IC_XMX;
        return true;
    default:
        break;
    }
    if ((op >= OP_ATOMIC_FIRST && op <= OP_ATOMIC_LAST) || op == OP_ATOMIC_FLAG_TEST_AND_SET ||
        op == OP_ATOMIC_FLAG_CLEAR || op == OP_ATOMIC_FMIN_EXT || op == OP_ATOMIC_FMAX_EXT ||
        op == OP_ATOMIC_FADD_EXT) {
        uint32_t ptr = (op == OP_ATOMIC_STORE || op == OP_ATOMIC_FLAG_CLEAR) ? a : c;
        *cls = PA_SD_IC_ATOMIC;
        *bytes = op == OP_ATOMIC_STORE ? size_of_val(t, cnt > 4 ? W(w, i + 4) : 0)
                                       : (id_ok(t, a) ? t->type_size[a] : 0);
        (void)ptr;
        return true;
    }
    return true; /* arithmetic, logic, compare, conversion, composite, phi, select, ... */
}

/* A basic block of the function being walked: its ISA range and successor labels. */
typedef struct block {
    uint32_t label, first, end; /* ISA indices [first, end) incl. inlined callees */
    uint32_t nsucc, succ_off;   /* successors: labels in body.succ[succ_off ..] */
} block;

/* State of one body walk, shared by the entry function and the functions it calls (inlined, as
 * the device compiler does). */
typedef struct body {
    const walker *w;
    const ids *t;
    pa_sd_isa *isa;
    uint32_t line, file;
} body;

#define MAX_INLINE 4u /* call depth inlined; deeper calls stay a call instruction */

static int walk_function(body *b, size_t start, uint32_t level);

typedef struct cfg {
    block *blk;
    uint32_t nblk, cap;
    uint32_t *succ;
    uint32_t nsucc, scap;
} cfg;

static int cfg_block(cfg *g, uint32_t label, uint32_t first)
{
    if (g->nblk == g->cap) {
        uint32_t cap = g->cap ? g->cap * 2 : 16;
        block *n = realloc(g->blk, cap * sizeof *n);
        if (!n)
            return -1;
        g->blk = n;
        g->cap = cap;
    }
    g->blk[g->nblk++] = (block){label, first, first, 0, g->nsucc};
    return 0;
}

static int cfg_succ(cfg *g, uint32_t label)
{
    if (!g->nblk)
        return 0;
    if (g->nsucc == g->scap) {
        uint32_t cap = g->scap ? g->scap * 2 : 32;
        uint32_t *n = realloc(g->succ, cap * sizeof *n);
        if (!n)
            return -1;
        g->succ = n;
        g->scap = cap;
    }
    g->succ[g->nsucc++] = label;
    g->blk[g->nblk - 1].nsucc++;
    return 0;
}

/* Successor labels of a terminator. */
static int note_successors(cfg *g, const walker *w, size_t i, uint32_t op, uint32_t cnt)
{
    int rc = 0;
    if (op == OP_BRANCH && cnt >= 2)
        rc = cfg_succ(g, W(w, i + 1));
    else if (op == OP_BRANCH_CONDITIONAL && cnt >= 4)
        rc = cfg_succ(g, W(w, i + 2)) | cfg_succ(g, W(w, i + 3));
    else if (op == OP_SWITCH && cnt >= 3) {
        rc = cfg_succ(g, W(w, i + 2));
        for (uint32_t k = 4; rc == 0 && k < cnt; k += 2) /* (literal, label) pairs, 32-bit literals */
            rc = cfg_succ(g, W(w, i + k));
    }
    return rc;
}

static uint32_t block_of(const cfg *g, uint32_t label)
{
    for (uint32_t i = 0; i < g->nblk; i++)
        if (g->blk[i].label == label)
            return i;
    return UINT32_MAX;
}

/* Natural loops from dominators: an edge u -> h with h dominating u is a back edge; the loop of
 * header h is h plus every block reaching u without passing h. Each instruction of a block gets
 * one depth level per loop containing the block. */
static int apply_loops(const cfg *g, pa_sd_isa *isa)
{
    uint32_t n = g->nblk, words = (n + 63) / 64;
    if (n == 0 || n > 4096)
        return 0; /* no blocks, or too big to analyse: no loop depth */
    uint64_t *dom = malloc((size_t)n * words * 8);
    uint32_t *sb = malloc((size_t)(g->nsucc ? g->nsucc : 1) * 4), *depth = calloc(n, 4), *stack = malloc(n * 4);
    uint8_t *in = malloc(n), *loop_of_header = calloc(n, 1);
    int rc = (dom && sb && depth && stack && in && loop_of_header) ? 0 : -1;
    for (uint32_t e = 0; rc == 0 && e < g->nsucc; e++)
        sb[e] = block_of(g, g->succ[e]);
    for (uint32_t v = 0; rc == 0 && v < n; v++)
        for (uint32_t k = 0; k < words; k++)
            dom[(size_t)v * words + k] = v == 0 ? (k == 0 ? 1 : 0) : ~0ull;
    for (bool changed = rc == 0; changed;) { /* dom(v) = {v} + intersection of dom(preds) */
        changed = false;
        for (uint32_t v = 1; v < n; v++) {
            uint64_t acc[64];
            bool any = false;
            for (uint32_t u = 0; u < n; u++)
                for (uint32_t e = 0; e < g->blk[u].nsucc; e++)
                    if (sb[g->blk[u].succ_off + e] == v) {
                        for (uint32_t k = 0; k < words; k++)
                            acc[k] = any ? acc[k] & dom[(size_t)u * words + k] : dom[(size_t)u * words + k];
                        any = true;
                    }
            if (!any)
                memset(acc, 0, words * 8); /* unreachable block: dominated by nothing but itself */
            acc[v / 64] |= 1ull << (v % 64);
            if (memcmp(acc, &dom[(size_t)v * words], words * 8) != 0) {
                memcpy(&dom[(size_t)v * words], acc, words * 8);
                changed = true;
            }
        }
    }
    for (uint32_t h = 0; rc == 0 && h < n; h++) {
        memset(in, 0, n);
        bool loop = false;
        uint32_t sp = 0;
        for (uint32_t u = 0; u < n; u++)
            for (uint32_t e = 0; e < g->blk[u].nsucc; e++)
                if (sb[g->blk[u].succ_off + e] == h && (dom[(size_t)u * words + h / 64] >> (h % 64) & 1)) {
                    loop = true; /* back edge u -> h */
                    if (!in[u] && u != h) {
                        in[u] = 1;
                        stack[sp++] = u;
                    }
                }
        if (!loop)
            continue;
        in[h] = 1;
        while (sp) { /* predecessors of the body, up to the header */
            uint32_t x = stack[--sp];
            for (uint32_t u = 0; u < n; u++)
                for (uint32_t e = 0; e < g->blk[u].nsucc; e++)
                    if (sb[g->blk[u].succ_off + e] == x && !in[u]) {
                        in[u] = 1;
                        stack[sp++] = u;
                    }
        }
        for (uint32_t v = 0; v < n; v++)
            depth[v] += in[v];
    }
    for (uint32_t v = 0; rc == 0 && v < n; v++)
        for (uint32_t k = g->blk[v].first; k < g->blk[v].end && k < isa->ninstr; k++) {
            uint32_t d = isa->instr[k].depth + depth[v];
            isa->instr[k].depth = (uint8_t)(d > PA_SD_ISA_MAX_DEPTH ? PA_SD_ISA_MAX_DEPTH : d);
        }
    free(dom); free(sb); free(depth); free(stack); free(in); free(loop_of_header);
    return rc;
}

/* A function with no OpLabel before its OpFunctionEnd is a declaration (an import). */
static bool is_declaration(const walker *w, size_t start)
{
    for (size_t i = start + (W(w, start) >> 16); i < w->n;) {
        uint32_t ins = W(w, i), cnt = ins >> 16, op = ins & 0xffff;
        if (cnt == 0 || op == OP_FUNCTION_END)
            return true;
        if (op == OP_LABEL)
            return false;
        i += cnt;
    }
    return true;
}

/* Imported device builtins the compiler turns into a systolic (XMX) instruction, by name. */
static bool is_matrix_builtin(const walker *w, const ids *t, uint32_t fn)
{
    char name[256];
    if (!id_ok(t, fn) || !t->name_word[fn])
        return false;
    literal_copy(w, t->name_word[fn] - 1, w->n, name, sizeof name);
    return strstr(name, "matrix_mad") || strstr(name, "dpas") || strstr(name, "MatrixMultiplyAccumulate");
}

/* Word index of the OpFunction defining id, or 0. */
static size_t function_start(const walker *w, uint32_t id)
{
    for (size_t i = 5; i < w->n;) {
        uint32_t ins = W(w, i), cnt = ins >> 16;
        if (cnt == 0 || i + cnt > w->n)
            return 0;
        if ((ins & 0xffff) == OP_FUNCTION && cnt >= 3 && W(w, i + 2) == id)
            return i;
        i += cnt;
    }
    return 0;
}

static int walk_function(body *b, size_t start, uint32_t level)
{
    const walker *w = b->w;
    char name[512];
    cfg g = {0};
    int rc = 0;
    for (size_t i = start + (W(w, start) >> 16); rc == 0 && i < w->n;) {
        uint32_t ins = W(w, i), cnt = ins >> 16, op = ins & 0xffff;
        if (cnt == 0 || i + cnt > w->n || op == OP_FUNCTION_END)
            break;
        uint32_t a = cnt > 1 ? W(w, i + 1) : 0;
        if (op == OP_LINE && cnt >= 3) {
            b->line = W(w, i + 2);
            b->file = UINT32_MAX;
            if (id_ok(b->t, a) && b->t->str_word[a]) {
                literal_copy(w, b->t->str_word[a] - 1, w->n, name, sizeof name);
                b->file = pa_sd_isa_file(b->isa, name);
            }
        } else if (op == OP_NO_LINE) {
            b->line = 0;
            b->file = UINT32_MAX;
        } else if (op == OP_LABEL) {
            if (g.nblk)
                g.blk[g.nblk - 1].end = b->isa->ninstr;
            rc = cfg_block(&g, a, b->isa->ninstr);
        }
        pa_sd_iclass cls;
        uint32_t bytes;
        if (rc == 0 && classify(w, b->t, i, op, cnt, &cls, &bytes)) {
            uint32_t here = b->isa->ninstr;
            if (pa_sd_isa_push(b->isa, (uint16_t)op, cls, 0, b->line, b->file, bytes) != 0)
                rc = -1;
            else if (cls == PA_SD_IC_CONTROL)
                rc = note_successors(&g, w, i, op, cnt);
            if (rc == 0 && op == OP_FUNCTION_CALL && cnt >= 4) {
                size_t callee = function_start(w, W(w, i + 3));
                if ((!callee || is_declaration(w, callee)) && is_matrix_builtin(w, b->t, W(w, i + 3)))
                    b->isa->instr[here].iclass = PA_SD_IC_XMX;
                uint32_t line = b->line, file = b->file;
                if (level < MAX_INLINE && callee && callee != start)
                    rc = walk_function(b, callee, level + 1);
                b->line = line; /* back in the caller */
                b->file = file;
            }
        }
        i += cnt;
    }
    if (g.nblk)
        g.blk[g.nblk - 1].end = b->isa->ninstr;
    if (rc == 0)
        rc = apply_loops(&g, b->isa);
    free(g.blk);
    free(g.succ);
    return rc;
}

/* Walk the function body: instructions, lines, blocks; natural loops give loop depths. */
static int build_body(const walker *w, const ids *t, size_t start, pa_sd_isa *isa)
{
    body b = {w, t, isa, 0, UINT32_MAX};
    return walk_function(&b, start, 0);
}

int pa_sd_isa_from_spirv(const uint8_t *data, size_t nwords, bool swap, uint32_t func_id, pa_sd_isa **out)
{
    walker w = {data, nwords, swap};
    *out = NULL;
    if (nwords < 5)
        return 0;
    uint32_t bound = W(&w, 3);
    if (bound == 0 || bound > (1u << 24) || func_id >= bound)
        return 0; /* implausible bound: no body (the kernel gets the generic synthetic one) */
    ids t;
    if (ids_alloc(&t, bound) != 0)
        return -1;
    scan_decls(&w, &t);
    int rc = 0;
    for (size_t i = 5; i < nwords;) {
        uint32_t ins = W(&w, i), cnt = ins >> 16, op = ins & 0xffff;
        if (cnt == 0 || i + cnt > nwords)
            break;
        if (op == OP_FUNCTION && cnt >= 3 && W(&w, i + 2) == func_id) {
            pa_sd_isa *isa = pa_sd_isa_new();
            if (!isa || build_body(&w, &t, i, isa) != 0) {
                pa_sd_isa_unref(isa);
                rc = -1;
            } else if (isa->ninstr == 0) {
                pa_sd_isa_unref(isa); /* a declaration: no body */
            } else if (pa_sd_isa_finish(isa) != 0) {
                pa_sd_isa_unref(isa);
                rc = -1;
            } else {
                *out = isa;
            }
            break;
        }
        i += cnt;
    }
    ids_free(&t);
    return rc;
}
