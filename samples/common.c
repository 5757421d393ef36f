/* common.c - helpers shared by the Level Zero samples (see common.h). */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sample_result_name(ze_result_t r)
{
    switch (r) {
#define N_(x) case x: return #x
    N_(ZE_RESULT_SUCCESS);
    N_(ZE_RESULT_NOT_READY);
    N_(ZE_RESULT_ERROR_UNINITIALIZED);
    N_(ZE_RESULT_ERROR_DEVICE_LOST);
    N_(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    N_(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    N_(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
    N_(ZE_RESULT_ERROR_UNSUPPORTED_VERSION);
    N_(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    N_(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    N_(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    N_(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    N_(ZE_RESULT_ERROR_INVALID_SIZE);
    N_(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    N_(ZE_RESULT_ERROR_INVALID_ENUMERATION);
    N_(ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
    N_(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
    N_(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
    N_(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
    N_(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);
    N_(ZE_RESULT_ERROR_UNKNOWN);
#undef N_
    default: return "ZE_RESULT_<unknown>";
    }
}

void sample_die_ze(const char *call, ze_result_t r, const char *file, int line)
{
    fprintf(stderr, "sample: %s failed: %s (0x%x) at %s:%d\n", call, sample_result_name(r),
            (unsigned)r, file, line);
    exit(1);
}

void sample_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sample: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

uint64_t sample_arg_u64(int argc, char **argv, int idx, const char *what, uint64_t dflt,
                        uint64_t min, uint64_t max)
{
    if (argc <= idx)
        return dflt;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(argv[idx], &end, 10);
    if (errno || end == argv[idx] || *end || argv[idx][0] == '-' || v < min || v > max) {
        fprintf(stderr, "%s: bad %s '%s': expected an integer in [%llu, %llu]\n", argv[0], what,
                argv[idx], (unsigned long long)min, (unsigned long long)max);
        exit(2);
    }
    return v;
}

void sample_env_init(sample_env_t *env, uint32_t min_devices)
{
    memset(env, 0, sizeof(*env));
    SAMPLE_CHECK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
    uint32_t n = 1;
    SAMPLE_CHECK(zeDriverGet(&n, &env->driver));
    if (n == 0)
        sample_die("no Level Zero driver");
    n = 0;
    SAMPLE_CHECK(zeDeviceGet(env->driver, &n, NULL));
    if (n > SAMPLE_MAX_DEVICES)
        n = SAMPLE_MAX_DEVICES;
    SAMPLE_CHECK(zeDeviceGet(env->driver, &n, env->devices));
    if (n < min_devices)
        sample_die("need at least %u devices, the driver has %u", min_devices, n);
    env->num_devices = n;
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    SAMPLE_CHECK(zeContextCreate(env->driver, &cd, &env->context));
}

void sample_env_fini(sample_env_t *env)
{
    if (env->context)
        SAMPLE_CHECK(zeContextDestroy(env->context));
    env->context = NULL;
}

static ze_module_handle_t module_create(const sample_env_t *env, ze_device_handle_t dev,
                                        ze_module_format_t fmt, const void *data, size_t size)
{
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = fmt,
                           .inputSize = size,
                           .pInputModule = data};
    ze_module_handle_t m = NULL;
    SAMPLE_CHECK(zeModuleCreate(env->context, dev, &md, &m, NULL));
    return m;
}

ze_module_handle_t sample_module_native(const sample_env_t *env, ze_device_handle_t dev,
                                        const char *text)
{
    return module_create(env, dev, ZE_MODULE_FORMAT_NATIVE, text, strlen(text));
}

ze_module_handle_t sample_module_spirv_file(const sample_env_t *env, ze_device_handle_t dev, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        sample_die("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        sample_die("cannot read %s", path);
    fclose(f);
    ze_module_handle_t m = module_create(env, dev, ZE_MODULE_FORMAT_IL_SPIRV, buf, (size_t)n);
    free(buf); /* the driver keeps its own copy */
    return m;
}

/* --- SPIR-V builder: SPIR-V 1.0, Addresses+Kernel+Int64, Physical64/OpenCL. --- */

enum { SPV_MAGIC = 0x07230203u, SPV_V10 = 0x00010000u };
enum {                             /* opcodes */
    OP_NAME = 5, OP_MEMORY_MODEL = 14, OP_ENTRY_POINT = 15, OP_CAPABILITY = 17,
    OP_TYPE_VOID = 19, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_POINTER = 32,
    OP_TYPE_FUNCTION = 33, OP_FUNCTION = 54, OP_FUNCTION_PARAMETER = 55, OP_FUNCTION_END = 56,
    OP_LABEL = 248, OP_RETURN = 253
};
enum { CAP_ADDRESSES = 4, CAP_KERNEL = 6, CAP_INT64 = 11, SC_CROSS_WORKGROUP = 5 };
/* fixed type ids */
enum { ID_VOID = 1, ID_U32, ID_U64, ID_F32, ID_PF, ID_PU, ID_FIRST_FREE };

typedef struct spv_out { uint32_t *w; size_t cap, n; int overflow; } spv_out_t;

static void spv_word(spv_out_t *o, uint32_t v)
{
    if (o->n < o->cap)
        o->w[o->n] = v;
    else
        o->overflow = 1;
    o->n++;
}

static void spv_op(spv_out_t *o, uint32_t op, uint32_t nwords)
{
    spv_word(o, (nwords << 16) | op);
}

/* A literal string: UTF-8 bytes, NUL terminated, padded to a word, little-endian packing. */
static void spv_string(spv_out_t *o, const char *s)
{
    size_t len = strlen(s) + 1;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t v = 0;
        for (size_t b = 0; b < 4 && i + b < len; b++)
            v |= (uint32_t)(unsigned char)s[i + b] << (8 * b);
        spv_word(o, v);
    }
}

static uint32_t spv_string_words(const char *s) { return (uint32_t)(strlen(s) + 1 + 3) / 4; }

static int spv_param_type(char c)
{
    switch (c) {
    case 'p': return ID_PF;
    case 'q': return ID_PU;
    case 'f': return ID_F32;
    case 'u': return ID_U32;
    case 'l': return ID_U64;
    default: return -1;
    }
}

size_t sample_spirv_build(uint32_t *words, size_t cap, const sample_spirv_kernel_t *kernels,
                          size_t n)
{
    spv_out_t o = {.w = words, .cap = cap};
    /* ids: one OpTypeFunction per distinct signature, one function per kernel, then its
     * parameters and one label. */
    uint32_t next = ID_FIRST_FREE;
    uint32_t fnty[64], fn[64];
    if (n > 64)
        return 0;
    for (size_t k = 0; k < n; k++) {
        for (const char *p = kernels[k].params; *p; p++)
            if (spv_param_type(*p) < 0)
                return 0;
        fnty[k] = 0;
        for (size_t j = 0; j < k; j++)       /* duplicate OpTypeFunction is invalid SPIR-V */
            if (strcmp(kernels[j].params, kernels[k].params) == 0)
                fnty[k] = fnty[j];
        if (!fnty[k])
            fnty[k] = next++;
        fn[k] = next++;
    }
    uint32_t params_total = 0;
    for (size_t k = 0; k < n; k++)
        params_total += (uint32_t)strlen(kernels[k].params) + 1; /* + label */
    uint32_t bound = next + params_total;

    spv_word(&o, SPV_MAGIC); spv_word(&o, SPV_V10); spv_word(&o, 0);
    spv_word(&o, bound); spv_word(&o, 0);
    spv_op(&o, OP_CAPABILITY, 2); spv_word(&o, CAP_ADDRESSES);
    spv_op(&o, OP_CAPABILITY, 2); spv_word(&o, CAP_KERNEL);
    spv_op(&o, OP_CAPABILITY, 2); spv_word(&o, CAP_INT64);
    spv_op(&o, OP_MEMORY_MODEL, 3); spv_word(&o, 2 /* Physical64 */); spv_word(&o, 2 /* OpenCL */);
    for (size_t k = 0; k < n; k++) {
        spv_op(&o, OP_ENTRY_POINT, 3 + spv_string_words(kernels[k].name));
        spv_word(&o, 6 /* Kernel */); spv_word(&o, fn[k]); spv_string(&o, kernels[k].name);
    }
    for (size_t k = 0; k < n; k++) {
        spv_op(&o, OP_NAME, 2 + spv_string_words(kernels[k].name));
        spv_word(&o, fn[k]); spv_string(&o, kernels[k].name);
    }
    spv_op(&o, OP_TYPE_VOID, 2); spv_word(&o, ID_VOID);
    spv_op(&o, OP_TYPE_INT, 4); spv_word(&o, ID_U32); spv_word(&o, 32); spv_word(&o, 0);
    spv_op(&o, OP_TYPE_INT, 4); spv_word(&o, ID_U64); spv_word(&o, 64); spv_word(&o, 0);
    spv_op(&o, OP_TYPE_FLOAT, 3); spv_word(&o, ID_F32); spv_word(&o, 32);
    spv_op(&o, OP_TYPE_POINTER, 4); spv_word(&o, ID_PF); spv_word(&o, SC_CROSS_WORKGROUP);
    spv_word(&o, ID_F32);
    spv_op(&o, OP_TYPE_POINTER, 4); spv_word(&o, ID_PU); spv_word(&o, SC_CROSS_WORKGROUP);
    spv_word(&o, ID_U32);
    for (size_t k = 0; k < n; k++) {
        int first = 1;
        for (size_t j = 0; j < k; j++)
            if (fnty[j] == fnty[k])
                first = 0;
        if (!first)
            continue;
        uint32_t np = (uint32_t)strlen(kernels[k].params);
        spv_op(&o, OP_TYPE_FUNCTION, 3 + np); spv_word(&o, fnty[k]); spv_word(&o, ID_VOID);
        for (uint32_t i = 0; i < np; i++)
            spv_word(&o, (uint32_t)spv_param_type(kernels[k].params[i]));
    }
    uint32_t id = next;
    for (size_t k = 0; k < n; k++) {
        spv_op(&o, OP_FUNCTION, 5); spv_word(&o, ID_VOID); spv_word(&o, fn[k]);
        spv_word(&o, 0 /* None */); spv_word(&o, fnty[k]);
        for (const char *p = kernels[k].params; *p; p++) {
            spv_op(&o, OP_FUNCTION_PARAMETER, 3);
            spv_word(&o, (uint32_t)spv_param_type(*p)); spv_word(&o, id++);
        }
        spv_op(&o, OP_LABEL, 2); spv_word(&o, id++);
        spv_op(&o, OP_RETURN, 1);
        spv_op(&o, OP_FUNCTION_END, 1);
    }
    return o.overflow ? 0 : o.n;
}

ze_module_handle_t sample_module_spirv(const sample_env_t *env, ze_device_handle_t dev,
                                       const sample_spirv_kernel_t *kernels, size_t n)
{
    static uint32_t words[4096];              /* samples build modules from one thread */
    size_t nw = sample_spirv_build(words, sizeof(words) / sizeof(words[0]), kernels, n);
    if (nw == 0)
        sample_die("SPIR-V builder: module too large or bad parameter kind");
    return module_create(env, dev, ZE_MODULE_FORMAT_IL_SPIRV, words, nw * sizeof(uint32_t));
}

ze_kernel_handle_t sample_kernel(ze_module_handle_t module, const char *name, uint32_t gx)
{
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = name};
    ze_kernel_handle_t k = NULL;
    SAMPLE_CHECK(zeKernelCreate(module, &kd, &k));
    SAMPLE_CHECK(zeKernelSetGroupSize(k, gx, 1, 1));
    return k;
}

ze_command_queue_handle_t sample_queue(const sample_env_t *env, ze_device_handle_t dev,
                                       uint32_t ordinal, uint32_t index)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = ordinal,
                                  .index = index,
                                  .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                  .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_queue_handle_t q = NULL;
    SAMPLE_CHECK(zeCommandQueueCreate(env->context, dev, &qd, &q));
    return q;
}

ze_command_list_handle_t sample_list(const sample_env_t *env, ze_device_handle_t dev,
                                     uint32_t ordinal)
{
    ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                                 .commandQueueGroupOrdinal = ordinal};
    ze_command_list_handle_t l = NULL;
    SAMPLE_CHECK(zeCommandListCreate(env->context, dev, &ld, &l));
    return l;
}

ze_command_list_handle_t sample_immediate(const sample_env_t *env, ze_device_handle_t dev,
                                          uint32_t ordinal, uint32_t index)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = ordinal,
                                  .index = index,
                                  .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                  .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t l = NULL;
    SAMPLE_CHECK(zeCommandListCreateImmediate(env->context, dev, &qd, &l));
    return l;
}

ze_event_pool_handle_t sample_event_pool(const sample_env_t *env, uint32_t count, int kernel_ts)
{
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                               .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
                                        (kernel_ts ? ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP : 0),
                               .count = count};
    ze_event_pool_handle_t p = NULL;
    SAMPLE_CHECK(zeEventPoolCreate(env->context, &pd, env->num_devices,
                                   (ze_device_handle_t *)env->devices, &p));
    return p;
}

ze_event_handle_t sample_event(ze_event_pool_handle_t pool, uint32_t index)
{
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                          .index = index,
                          .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                          .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t e = NULL;
    SAMPLE_CHECK(zeEventCreate(pool, &ed, &e));
    return e;
}

void *sample_alloc_device(const sample_env_t *env, ze_device_handle_t dev, size_t bytes)
{
    ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *p = NULL;
    SAMPLE_CHECK(zeMemAllocDevice(env->context, &dd, bytes, 64, dev, &p));
    return p;
}

void *sample_alloc_host(const sample_env_t *env, size_t bytes)
{
    ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    void *p = NULL;
    SAMPLE_CHECK(zeMemAllocHost(env->context, &hd, bytes, 64, &p));
    return p;
}

void *sample_alloc_shared(const sample_env_t *env, ze_device_handle_t dev, size_t bytes)
{
    ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    void *p = NULL;
    SAMPLE_CHECK(zeMemAllocShared(env->context, &dd, &hd, bytes, 64, dev, &p));
    return p;
}

void sample_set_arg(ze_kernel_handle_t k, uint32_t idx, size_t size, const void *value)
{
    SAMPLE_CHECK(zeKernelSetArgumentValue(k, idx, size, value));
}

void sample_launch_1d(ze_command_list_handle_t list, ze_kernel_handle_t k, uint32_t items,
                      uint32_t gx, ze_event_handle_t ev)
{
    ze_group_count_t gc = {.groupCountX = (items + gx - 1) / gx, .groupCountY = 1,
                           .groupCountZ = 1};
    SAMPLE_CHECK(zeCommandListAppendLaunchKernel(list, k, &gc, ev, 0, NULL));
}

void sample_busy_init(const sample_env_t *env, int kernel_ts, sample_busy_t *b)
{
    b->module = sample_module_native(env, env->devices[0], "SIMDEV-MODULE 1\nkernel busy_ns\n");
    b->kernel = sample_kernel(b->module, "busy_ns", 1);
    b->list = sample_immediate(env, env->devices[0], 0, 0);
    b->pool = sample_event_pool(env, 1, kernel_ts);
    b->event = sample_event(b->pool, 0);
}

void sample_busy_fini(sample_busy_t *b)
{
    SAMPLE_CHECK(zeEventDestroy(b->event));
    SAMPLE_CHECK(zeEventPoolDestroy(b->pool));
    SAMPLE_CHECK(zeCommandListDestroy(b->list));
    SAMPLE_CHECK(zeKernelDestroy(b->kernel));
    SAMPLE_CHECK(zeModuleDestroy(b->module));
    memset(b, 0, sizeof *b);
}

void sample_busy_run(const sample_busy_t *b, uint64_t ns, int wait)
{
    sample_set_arg(b->kernel, 0, sizeof ns, &ns);
    sample_launch_1d(b->list, b->kernel, 1, 1, b->event);
    if (wait) {
        SAMPLE_CHECK(zeEventHostSynchronize(b->event, UINT64_MAX));
        SAMPLE_CHECK(zeEventHostReset(b->event));
    }
}

size_t sample_check_floats(const char *what, const float *got, const float *want, size_t n,
                           float rel)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float scale = fabsf(want[i]) > 1.0f ? fabsf(want[i]) : 1.0f;
        if (!(fabsf(got[i] - want[i]) <= rel * scale)) {   /* also catches NaN */
            if (bad == 0)
                fprintf(stderr, "%s: mismatch at %zu: got %g want %g\n", what, i,
                        (double)got[i], (double)want[i]);
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "%s: %zu of %zu values wrong\n", what, bad, n);
    return bad;
}

uint64_t sample_ticks_to_ns(uint64_t start, uint64_t end, uint32_t valid_bits, uint64_t hz)
{
    uint64_t mask = valid_bits >= 64 ? UINT64_MAX : ((UINT64_C(1) << valid_bits) - 1);
    uint64_t ticks = ((end & mask) - (start & mask)) & mask;   /* modular: handles one wrap */
    /* ticks * 1e9 / hz without overflow for any realistic tick count */
    return (uint64_t)((unsigned __int128)ticks * 1000000000u / (hz ? hz : 1));
}
