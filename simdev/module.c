/* module.c - zeModule* and zeKernel* entry points: kernels, arguments, group sizes, properties. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_sd_internal.h"
#include "pa_sd_module.h"
#include "pa_sd_isa.h"

static pa_sd_module *module_of(ze_module_handle_t h)
{
    pa_sd_module *m = (pa_sd_module *)h;
    return (m && m->magic == PA_SD_MAGIC_MODULE) ? m : NULL;
}

static pa_sd_kernel *kernel_of(ze_kernel_handle_t h)
{
    pa_sd_kernel *k = (pa_sd_kernel *)h;
    return (k && k->magic == PA_SD_MAGIC_KERNEL) ? k : NULL;
}

pa_sd_kernel *pa_sd_kernel_of(ze_kernel_handle_t h) { return kernel_of(h); }

static ze_module_build_log_handle_t make_log(const char *text)
{
    pa_sd_build_log *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->magic = PA_SD_MAGIC_BUILDLOG;
    l->text = strdup(text ? text : "");
    return (ze_module_build_log_handle_t)l;
}

/* FNV-1a: stable kernel/module UUIDs derived from names and content. */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Kernels' code lies back to back (64-byte aligned) in one device range per module. */
static void layout_code(pa_sd_module *m)
{
    uint64_t off = 0;
    for (uint32_t i = 0; i < m->nkernels; i++) {
        m->kernels[i].gpu_addr = off;
        off += (pa_sd_isa_bytes(m->kernels[i].isa) + PA_SD_ISA_KERNEL_ALIGN - 1) & ~(uint64_t)(PA_SD_ISA_KERNEL_ALIGN - 1);
    }
    m->code_size = off;
    m->code_base = pa_sd_isa_reserve(off);
    for (uint32_t i = 0; i < m->nkernels; i++)
        m->kernels[i].gpu_addr += m->code_base;
}

ze_result_t pa_sd_zeModuleCreate(ze_context_handle_t hc, ze_device_handle_t hd, const ze_module_desc_t *desc,
                              ze_module_handle_t *phModule, ze_module_build_log_handle_t *phLog)
{
    pa_sd_device *dev = pa_sd_device_of(hd);
    if (phLog)
        *phLog = NULL;
    if (!pa_sd_context_of(hc) || !dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !phModule || !desc->pInputModule)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->inputSize == 0)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    pa_sd_parsed_module pm = {0, NULL};
    char err[512] = "";
    ze_result_t r;
    if (desc->format == ZE_MODULE_FORMAT_IL_SPIRV)
        r = pa_sd_parse_spirv(desc->pInputModule, desc->inputSize, &pm, err, sizeof err);
    else if (desc->format == ZE_MODULE_FORMAT_NATIVE)
        r = pa_sd_parse_native(desc->pInputModule, desc->inputSize, &pm, err, sizeof err);
    else
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (phLog)
        *phLog = make_log(err);
    if (r != ZE_RESULT_SUCCESS) {
        pa_sd_parsed_free(&pm);
        return r;
    }
    pa_sd_module *m = calloc(1, sizeof *m);
    if (!m) {
        pa_sd_parsed_free(&pm);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    m->magic = PA_SD_MAGIC_MODULE;
    m->device = dev;
    m->nkernels = pm.nkernels;
    m->kernels = pm.kernels;
    layout_code(m);
    uint64_t h = fnv1a(desc->pInputModule, desc->inputSize, 0xcbf29ce484222325ull);
    memcpy(m->uuid, &h, sizeof h);
    memcpy(m->uuid + 8, &m, sizeof m);
    *phModule = (ze_module_handle_t)m;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeModuleDestroy(ze_module_handle_t h)
{
    pa_sd_module *m = module_of(h);
    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    m->magic = PA_SD_MAGIC_DEAD;
    pa_sd_parsed_module pm = {m->nkernels, m->kernels};
    pa_sd_parsed_free(&pm);
    free(m);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeModuleDynamicLink(uint32_t n, ze_module_handle_t *phModules, ze_module_build_log_handle_t *phLog)
{
    if (phLog)
        *phLog = make_log("");
    for (uint32_t i = 0; i < n; i++)
        if (!phModules || !module_of(phModules[i]))
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeModuleGetKernelNames(ze_module_handle_t h, uint32_t *pCount, const char **pNames)
{
    pa_sd_module *m = module_of(h);
    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !pNames) {
        *pCount = m->nkernels;
        return ZE_RESULT_SUCCESS;
    }
    uint32_t n = *pCount < m->nkernels ? *pCount : m->nkernels;
    for (uint32_t i = 0; i < n; i++)
        pNames[i] = m->kernels[i].name;
    *pCount = n;
    return ZE_RESULT_SUCCESS;
}

/* The native binary is the module's code range: every kernel's 16-byte instructions at its offset
 * from the module base (zero padding between kernels), so its size covers all kernels. */
ze_result_t pa_sd_zeModuleGetNativeBinary(ze_module_handle_t h, size_t *pSize, uint8_t *pBinary)
{
    pa_sd_module *m = module_of(h);
    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pSize)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    size_t size = (size_t)m->code_size;
    if (!pBinary) {
        *pSize = size;
        return ZE_RESULT_SUCCESS;
    }
    size_t n = *pSize < size ? *pSize : size;
    uint8_t *all = calloc(1, size ? size : 1);
    if (!all)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; i < m->nkernels; i++)
        pa_sd_isa_encode(m->kernels[i].isa, all + (m->kernels[i].gpu_addr - m->code_base));
    memcpy(pBinary, all, n);
    free(all);
    *pSize = n;
    return ZE_RESULT_SUCCESS;
}

/* Intel extension (zeDriverGetExtensionFunctionAddress "zexKernelGetBaseAddress"): device
 * address of the kernel's first instruction. */
ze_result_t ZE_APICALL pa_sd_zexKernelGetBaseAddress(ze_kernel_handle_t h, uint64_t *baseAddress)
{
    pa_sd_kernel *k = kernel_of(h);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!baseAddress)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *baseAddress = k->def->gpu_addr;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeModuleGetProperties(ze_module_handle_t h, ze_module_properties_t *p)
{
    if (!module_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->flags = 0;
    return ZE_RESULT_SUCCESS;
}

static pa_sd_build_log *log_of(ze_module_build_log_handle_t h)
{
    pa_sd_build_log *l = (pa_sd_build_log *)h;
    return (l && l->magic == PA_SD_MAGIC_BUILDLOG) ? l : NULL;
}

ze_result_t pa_sd_zeModuleBuildLogDestroy(ze_module_build_log_handle_t h)
{
    pa_sd_build_log *l = log_of(h);
    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    l->magic = PA_SD_MAGIC_DEAD;
    free(l->text);
    free(l);
    return ZE_RESULT_SUCCESS;
}

/* Two-call convention: pBuildLog NULL asks for the size including the terminating NUL. */
static ze_result_t copy_string(const char *s, size_t *pSize, char *out)
{
    size_t need = strlen(s) + 1;
    if (!out || *pSize == 0) {
        *pSize = need;
        return ZE_RESULT_SUCCESS;
    }
    size_t n = *pSize < need ? *pSize : need;
    memcpy(out, s, n - 1);
    out[n - 1] = '\0';
    *pSize = n;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeModuleBuildLogGetString(ze_module_build_log_handle_t h, size_t *pSize, char *pLog)
{
    pa_sd_build_log *l = log_of(h);
    if (!l)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pSize)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return copy_string(l->text ? l->text : "", pSize, pLog);
}

ze_result_t pa_sd_zeKernelCreate(ze_module_handle_t h, const ze_kernel_desc_t *desc, ze_kernel_handle_t *ph)
{
    pa_sd_module *m = module_of(h);
    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !ph || !desc->pKernelName)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    for (uint32_t i = 0; i < m->nkernels; i++) {
        if (strcmp(m->kernels[i].name, desc->pKernelName) != 0)
            continue;
        pa_sd_kernel *k = calloc(1, sizeof *k);
        if (!k)
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        k->magic = PA_SD_MAGIC_KERNEL;
        k->module = m;
        k->def = &m->kernels[i];
        k->gsize[0] = k->gsize[1] = k->gsize[2] = 1;
        k->nargs = pa_sd_builtin_nargs(k->def->builtin);
        k->nargs_required = k->nargs ? k->nargs : k->def->nparams;
        if (k->nargs == 0)
            k->nargs = k->def->nparams ? k->def->nparams : PA_SD_MAX_ARGS;
        *ph = (ze_kernel_handle_t)k;
        return ZE_RESULT_SUCCESS;
    }
    return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
}

ze_result_t pa_sd_zeKernelDestroy(ze_kernel_handle_t h)
{
    pa_sd_kernel *k = kernel_of(h);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    /* Commands snapshot what they need (def, args), so in-flight work does not read *k. */
    k->magic = PA_SD_MAGIC_DEAD;
    free(k);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeKernelSetCacheConfig(ze_kernel_handle_t h, ze_cache_config_flags_t flags)
{
    (void)flags;
    return kernel_of(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

ze_result_t pa_sd_zeKernelSetGroupSize(ze_kernel_handle_t h, uint32_t x, uint32_t y, uint32_t z)
{
    pa_sd_kernel *k = kernel_of(h);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!x || !y || !z || x > 1024 || y > 1024 || z > 1024 || (uint64_t)x * y * z > 1024)
        return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    k->gsize[0] = x;
    k->gsize[1] = y;
    k->gsize[2] = z;
    return ZE_RESULT_SUCCESS;
}

/* Largest power of two <= cap dividing n (1 for n == 0). */
static uint32_t pow2_divisor(uint32_t n, uint32_t cap)
{
    uint32_t g = 1;
    while (g * 2 <= cap && n && n % (g * 2) == 0)
        g *= 2;
    return g;
}

ze_result_t pa_sd_zeKernelSuggestGroupSize(ze_kernel_handle_t h, uint32_t gx, uint32_t gy, uint32_t gz,
                                        uint32_t *x, uint32_t *y, uint32_t *z)
{
    if (!kernel_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!x || !y || !z)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *x = pow2_divisor(gx, 256);
    *y = pow2_divisor(gy, 1024 / *x < 4 ? 1024 / *x : 4);
    *z = pow2_divisor(gz, 1024 / (*x * *y) < 4 ? 1024 / (*x * *y) : 4);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeKernelSuggestMaxCooperativeGroupCount(ze_kernel_handle_t h, uint32_t *total)
{
    if (!kernel_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!total)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *total = 2 * 8 * 16; /* slices * subslices * EUs */
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeKernelSetArgumentValue(ze_kernel_handle_t h, uint32_t index, size_t size, const void *value)
{
    pa_sd_kernel *k = kernel_of(h);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (index >= k->nargs)
        return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    uint32_t want = pa_sd_builtin_arg_size(k->def->builtin, index);
    if ((want && size != want) || size == 0)
        return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    memset(k->args[index], 0, PA_SD_ARG_BYTES);
    k->args_set |= 1u << index;
    if (value) /* NULL value = NULL buffer or local-memory size only */
        memcpy(k->args[index], value, size < PA_SD_ARG_BYTES ? size : PA_SD_ARG_BYTES);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeKernelSetIndirectAccess(ze_kernel_handle_t h, ze_kernel_indirect_access_flags_t f)
{
    pa_sd_kernel *k = kernel_of(h);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    k->indirect = f;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeKernelGetIndirectAccess(ze_kernel_handle_t h, ze_kernel_indirect_access_flags_t *f)
{
    pa_sd_kernel *k = kernel_of(h);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!f)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *f = k->indirect;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeKernelGetSourceAttributes(ze_kernel_handle_t h, uint32_t *pSize, char **pString)
{
    if (!kernel_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pSize)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (pString && *pString && *pSize > 0)
        (*pString)[0] = '\0';
    *pSize = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeKernelGetProperties(ze_kernel_handle_t h, ze_kernel_properties_t *p)
{
    pa_sd_kernel *k = kernel_of(h);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->numKernelArgs = pa_sd_builtin_nargs(k->def->builtin) ? pa_sd_builtin_nargs(k->def->builtin)
                                                         : k->def->nparams;
    p->requiredGroupSizeX = p->requiredGroupSizeY = p->requiredGroupSizeZ = 0;
    p->requiredNumSubGroups = 0;
    p->requiredSubgroupSize = 0;
    p->maxSubgroupSize = 32;
    p->maxNumSubgroups = 32;
    p->localMemSize = k->def->slm_bytes; /* static SLM (native slm=; SPIR-V kernels declare none here) */
    p->privateMemSize = 0;
    p->spillMemSize = 0;
    uint64_t kid = fnv1a(k->def->name, strlen(k->def->name), 0xcbf29ce484222325ull);
    memset(&p->uuid, 0, sizeof p->uuid);
    memcpy(p->uuid.kid, &kid, sizeof kid);
    memcpy(p->uuid.mid, k->module->uuid, sizeof p->uuid.mid);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeKernelGetName(ze_kernel_handle_t h, size_t *pSize, char *pName)
{
    pa_sd_kernel *k = kernel_of(h);
    if (!k)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pSize)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return copy_string(k->def->name, pSize, pName);
}
