/* module_parse.c - SPIR-V entry-point and native text module parsing, Itanium base-name demangling. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_sd_internal.h"
#include "pa_sd_module.h"
#include "pa_sd_isa.h"

#define SPIRV_MAGIC 0x07230203u
#define SPIRV_OP_ENTRY_POINT 15u
#define SPIRV_OP_FUNCTION 54u
#define SPIRV_OP_FUNCTION_PARAMETER 55u

/* Skip an Itanium <source-name> "<len><chars>"; returns the name start and length, or NULL. */
static const char *source_name(const char *p, size_t *len, const char **next)
{
    if (!isdigit((unsigned char)*p))
        return NULL;
    char *end;
    unsigned long n = strtoul(p, &end, 10);
    if (n == 0 || strnlen(end, n) < n)
        return NULL;
    *len = n;
    *next = end + n;
    return end;
}

void pa_sd_demangle_base(const char *name, char *out, size_t cap)
{
    const char *p = name, *base = NULL, *next;
    size_t len = 0;
    if (cap == 0)
        return;
    snprintf(out, cap, "%s", name);
    if (strncmp(p, "_Z", 2) != 0)
        return;
    p += 2;
    if (*p == 'L')
        p++;
    if (*p == 'N') { /* nested: N [qualifiers] <len><name>... E, the last name is the function */
        p++;
        while (*p == 'r' || *p == 'V' || *p == 'K')
            p++;
        if (strncmp(p, "St", 2) == 0)
            p += 2;
        const char *s;
        while ((s = source_name(p, &len, &next)) != NULL) {
            base = s;
            p = next;
            if (*p == 'I') /* template args end the simple case */
                break;
        }
    } else {
        base = source_name(p, &len, &next);
    }
    if (base)
        snprintf(out, cap, "%.*s", (int)len, base);
}

/* Resolve which builtin a kernel runs: explicit builtin=, its name, or its demangled base. */
static pa_sd_builtin resolve_builtin(const char *name, const char *explicit_bi)
{
    char base[256];
    if (explicit_bi)
        return pa_sd_builtin_by_name(explicit_bi);
    pa_sd_builtin b = pa_sd_builtin_by_name(name);
    if (b != PA_SD_BI_NONE)
        return b;
    pa_sd_demangle_base(name, base, sizeof base);
    return pa_sd_builtin_by_name(base);
}

static int add_kernel(pa_sd_parsed_module *m, const char *name, size_t len, uint32_t id)
{
    pa_sd_kernel_def *nk = realloc(m->kernels, (m->nkernels + 1) * sizeof *nk);
    if (!nk)
        return -1;
    m->kernels = nk;
    pa_sd_kernel_def *k = &nk[m->nkernels];
    memset(k, 0, sizeof *k);
    k->name = strndup(name, len);
    if (!k->name)
        return -1;
    k->spirv_id = id;
    k->base_ns = pa_sd_config_get()->base_ns;
    k->ns_per_item = pa_sd_config_get()->ns_per_item;
    m->nkernels++;
    return 0;
}

static uint32_t word_at(const uint8_t *p, size_t i, bool swap)
{
    uint32_t w;
    memcpy(&w, p + 4 * i, 4);
    return swap ? __builtin_bswap32(w) : w;
}

/* Extract the literal string of an instruction starting at word 'from', bounded by the words. */
static size_t literal_len(const uint8_t *p, size_t from, size_t end_word, bool swap, char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t w = from; w < end_word; w++) {
        uint32_t v = word_at(p, w, swap);
        for (int b = 0; b < 4; b++) {
            char ch = (char)((v >> (8 * b)) & 0xff);
            if (ch == '\0')
                return n;
            if (n + 1 < cap)
                buf[n++] = ch;
        }
    }
    return n;
}

ze_result_t pa_sd_parse_spirv(const uint8_t *data, size_t size, pa_sd_parsed_module *m, char *err, size_t errcap)
{
    if (!data || size < 20 || size % 4) {
        snprintf(err, errcap, "SPIR-V input of %zu bytes is not a whole number of 32-bit words "
                              "with a 5-word header", size);
        return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    uint32_t magic;
    memcpy(&magic, data, 4);
    bool swap = magic == __builtin_bswap32(SPIRV_MAGIC);
    if (magic != SPIRV_MAGIC && !swap) {
        snprintf(err, errcap, "bad SPIR-V magic 0x%08x (expected 0x07230203)", magic);
        return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    size_t nwords = size / 4, w = 5;
    char name[1024];
    while (w < nwords) {
        uint32_t ins = word_at(data, w, swap);
        uint32_t count = ins >> 16, op = ins & 0xffffu;
        if (count == 0 || w + count > nwords) {
            snprintf(err, errcap, "malformed SPIR-V instruction at word %zu", w);
            return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
        }
        if (op == SPIRV_OP_ENTRY_POINT && count >= 4) {
            size_t len = literal_len(data, w + 3, w + count, swap, name, sizeof name);
            if (add_kernel(m, name, len, word_at(data, w + 2, swap)) != 0)
                return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        } else if (op == SPIRV_OP_FUNCTION && count >= 3) {
            uint32_t id = word_at(data, w + 2, swap);
            size_t p = w + count, nparams = 0;
            while (p < nwords && (word_at(data, p, swap) & 0xffffu) == SPIRV_OP_FUNCTION_PARAMETER &&
                   (word_at(data, p, swap) >> 16) > 0) {
                nparams++;
                p += word_at(data, p, swap) >> 16;
            }
            for (uint32_t k = 0; k < m->nkernels; k++)
                if (m->kernels[k].spirv_id == id)
                    m->kernels[k].nparams = (uint32_t)nparams;
        }
        w += count;
    }
    for (uint32_t k = 0; k < m->nkernels; k++) {
        pa_sd_kernel_def *d = &m->kernels[k];
        d->builtin = resolve_builtin(d->name, NULL);
        if (pa_sd_isa_from_spirv(data, nwords, swap, d->spirv_id, &d->isa) != 0)
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        if (!d->isa && !(d->isa = pa_sd_isa_synthetic(d->builtin, pa_sd_builtin_name(d->builtin))))
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    return ZE_RESULT_SUCCESS;
}

/* Parse "key=value" of a native kernel line into the definition. */
static int parse_attr(pa_sd_kernel_def *k, const char *tok, char *err, size_t errcap, int line)
{
    const char *eq = strchr(tok, '=');
    char *end;
    if (!eq) {
        snprintf(err, errcap, "line %d: \"%s\" is not key=value (accepted keys: builtin, "
                              "ns_per_item, base_ns, slm)", line, tok);
        return -1;
    }
    size_t klen = (size_t)(eq - tok);
    if (klen == 7 && strncmp(tok, "builtin", 7) == 0) {
        k->builtin = pa_sd_builtin_by_name(eq + 1);
        if (k->builtin == PA_SD_BI_NONE) {
            snprintf(err, errcap, "line %d: unknown builtin \"%s\" (accepted: vector_add, saxpy, "
                                  "gemm_f32, fill_u32, reduce_sum_f32, busy_ns, allreduce_sum_f32)",
                     line, eq + 1);
            return -1;
        }
        return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(eq + 1, &end, 10);
    if (errno || *end || eq[1] == '\0' || eq[1] == '-') {
        snprintf(err, errcap, "line %d: value of %.*s must be a non-negative integer", line,
                 (int)klen, tok);
        return -1;
    }
    if (klen == 11 && strncmp(tok, "ns_per_item", 11) == 0)
        k->ns_per_item = v;
    else if (klen == 7 && strncmp(tok, "base_ns", 7) == 0)
        k->base_ns = v;
    else if (klen == 3 && strncmp(tok, "slm", 3) == 0) {
        if (v > PA_SD_SLM_BYTES) { /* more than the device's maxSharedLocalMemory: no such kernel */
            snprintf(err, errcap, "line %d: slm=%llu exceeds the device's %u bytes of shared local memory",
                     line, v, PA_SD_SLM_BYTES);
            return -1;
        }
        k->slm_bytes = (uint32_t)v;
    } else {
        snprintf(err, errcap, "line %d: unknown key \"%.*s\" (accepted: builtin, ns_per_item, "
                              "base_ns, slm)", line, (int)klen, tok);
        return -1;
    }
    return 0;
}

static ze_result_t parse_native_line(char *s, int line, pa_sd_parsed_module *m, char *err, size_t errcap)
{
    char *save = NULL, *tok = strtok_r(s, " \t\r", &save);
    if (!tok || tok[0] == '#')
        return ZE_RESULT_SUCCESS;
    if (strcmp(tok, "kernel") != 0 || !(tok = strtok_r(NULL, " \t\r", &save))) {
        snprintf(err, errcap, "line %d: expected \"kernel <name> [builtin=<name>] "
                              "[ns_per_item=<n>] [base_ns=<n>] [slm=<bytes>]\"", line);
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    if (add_kernel(m, tok, strlen(tok), 0) != 0)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    pa_sd_kernel_def *k = &m->kernels[m->nkernels - 1];
    const char *explicit_bi = NULL;
    while ((tok = strtok_r(NULL, " \t\r", &save)) != NULL) {
        if (parse_attr(k, tok, err, errcap, line) != 0)
            return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
        if (strncmp(tok, "builtin=", 8) == 0)
            explicit_bi = tok + 8;
    }
    k->builtin = resolve_builtin(k->name, explicit_bi);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_parse_native(const uint8_t *data, size_t size, pa_sd_parsed_module *m, char *err, size_t errcap)
{
    size_t mlen = strlen(SIMDEV_NATIVE_MAGIC);
    if (!data || size < mlen || memcmp(data, SIMDEV_NATIVE_MAGIC, mlen) != 0) {
        snprintf(err, errcap, "native module does not start with \"SIMDEV-MODULE 1\\n\"");
        return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    char *text = strndup((const char *)data + mlen, size - mlen);
    if (!text)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    ze_result_t r = ZE_RESULT_SUCCESS;
    int line = 2;
    for (char *s = text, *nl; r == ZE_RESULT_SUCCESS && s && *s; s = nl ? nl + 1 : NULL, line++) {
        nl = strchr(s, '\n');
        if (nl)
            *nl = '\0';
        r = parse_native_line(s, line, m, err, errcap);
    }
    free(text);
    for (uint32_t k = 0; r == ZE_RESULT_SUCCESS && k < m->nkernels; k++) {
        pa_sd_kernel_def *d = &m->kernels[k];
        if (!(d->isa = pa_sd_isa_synthetic(d->builtin, pa_sd_builtin_name(d->builtin))))
            r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    return r;
}

void pa_sd_parsed_free(pa_sd_parsed_module *m)
{
    for (uint32_t i = 0; i < m->nkernels; i++) {
        free(m->kernels[i].name);
        pa_sd_isa_unref(m->kernels[i].isa);
    }
    free(m->kernels);
    m->kernels = NULL;
    m->nkernels = 0;
}
