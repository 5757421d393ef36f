/* pcs_kernels.c - kernel address ranges for IP -> kernel: base from zexKernelGetBaseAddress, size from
 * zeModuleGetNativeBinary, source lines from the module's debug info; recorded at zeKernelCreate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pcs_internal.h"

#define PCS_MAX_KERNELS 65536u
#define PCS_MAX_MODULES 4096u

static pcs_kernel_t *kernels[PCS_MAX_KERNELS];
static _Atomic uint32_t nkernels;
static pthread_mutex_t kmu = PTHREAD_MUTEX_INITIALIZER;
static zel_tracer_handle_t tracer;
static int attached;

/* module -> device index (zeModuleCreate epilogue); a small ring of the latest modules */
static struct { ze_module_handle_t m; ze_device_handle_t dev; } modules[PCS_MAX_MODULES];
static uint32_t nmodules;

uint32_t pcs_kernels_count(void)
{
    return atomic_load_explicit(&nkernels, memory_order_acquire);
}

const pcs_kernel_t *pcs_kernels_get(uint32_t i)
{
    return kernels[i];
}

uint64_t pcs_kernels_register(uint32_t device, uint32_t base, uint32_t size, const char *name,
                              char **files, uint32_t nfiles, pa_pcs_line_t *lines, uint32_t nlines)
{
    pcs_kernel_t *k = calloc(1, sizeof *k);
    if (!k)
        return 0;
    k->name = strdup(name ? name : "");
    if (!k->name) {
        free(k);
        return 0;
    }
    k->k.device = device;
    k->k.base = base;
    k->k.size = size;
    k->k.name_len = (uint32_t)strlen(k->name);
    k->files = files;
    k->k.nfiles = nfiles;
    k->lines = lines;
    k->k.nlines = nlines;
    pthread_mutex_lock(&kmu);
    uint32_t n = atomic_load_explicit(&nkernels, memory_order_relaxed);
    uint64_t id = 0;
    if (n < PCS_MAX_KERNELS) {
        id = n + 1;
        k->k.id = id;
        kernels[n] = k;
        atomic_store_explicit(&nkernels, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&kmu);
    if (!id) { /* registry full: its samples count as unmapped */
        free(k->name);
        free(k);
    }
    return id;
}

void pcs_kernels_free(void)
{
    pthread_mutex_lock(&kmu);
    uint32_t n = atomic_load_explicit(&nkernels, memory_order_relaxed);
    atomic_store_explicit(&nkernels, 0, memory_order_release);
    for (uint32_t i = 0; i < n; i++) {
        pcs_kernel_t *k = kernels[i];
        for (uint32_t f = 0; f < k->k.nfiles; f++)
            free(k->files[f]);
        free(k->files);
        free(k->lines);
        free(k->name);
        free(k);
        kernels[i] = NULL;
    }
    nmodules = 0;
    pthread_mutex_unlock(&kmu);
}

/* the device index of module m, UINT32_MAX when unknown (the device handle is kept: a module may
 * be created before the engine enumerated the devices) */
static uint32_t module_device(ze_module_handle_t m)
{
    ze_device_handle_t h = NULL;
    pthread_mutex_lock(&kmu);
    for (uint32_t i = nmodules; i-- > 0 && i + PCS_MAX_MODULES >= nmodules;)
        if (modules[i % PCS_MAX_MODULES].m == m) {
            h = modules[i % PCS_MAX_MODULES].dev;
            break;
        }
    pthread_mutex_unlock(&kmu);
    for (uint32_t i = 0; h && i < pcs_ndevs; i++)
        if (pcs_devs[i].h == h)
            return i;
    return UINT32_MAX;
}

void pcs_kernels_module_created(ze_module_handle_t m, ze_device_handle_t device)
{
    int saved = errno;
    pthread_mutex_lock(&kmu);
    modules[nmodules % PCS_MAX_MODULES].m = m;
    modules[nmodules % PCS_MAX_MODULES].dev = device;
    nmodules++;
    pthread_mutex_unlock(&kmu);
    errno = saved;
}

static void on_module_create(ze_module_create_params_t *p, ze_result_t r, void *user, void **inst)
{
    (void)user;
    (void)inst;
    if (r == ZE_RESULT_SUCCESS && p->pphModule && *p->pphModule && **p->pphModule)
        pcs_kernels_module_created(**p->pphModule, *p->phDevice);
}

static void on_kernel_create(ze_kernel_create_params_t *p, ze_result_t r, void *user, void **inst)
{
    (void)user;
    (void)inst;
    if (r == ZE_RESULT_SUCCESS && p->pphKernel && *p->pphKernel && **p->pphKernel && p->pdesc && *p->pdesc)
        pcs_kernels_kernel_created(*p->phModule, **p->pphKernel, (*p->pdesc)->pKernelName);
}

void pcs_kernels_kernel_created(ze_module_handle_t module, ze_kernel_handle_t kernel, const char *name)
{
    if (!pcs_ndevs) /* the engine is not initialized (the agent with no PC sampling yet) */
        return;
    uint32_t dev = module_device(module);
    if (dev >= pcs_ndevs || !pcs_devs[dev].base_fn)
        return;
    int saved = errno; /* the application's errno survives our calls */
    if (!pa_ze_call_enter())
        return;
    pcs_host.guard_enter();
    uint64_t base = 0;
    size_t bin = 0;
    if (pcs_devs[dev].base_fn(kernel, &base) != ZE_RESULT_SUCCESS) {
        pcs_host.guard_leave();
        pa_ze_call_leave();
        errno = saved;
        return;
    }
    /* the module's binary bounds the kernel; the next kernel's base caps it further (unitrace) */
    if (pcs_ze.zeModuleGetNativeBinary(module, &bin, NULL) != ZE_RESULT_SUCCESS)
        bin = 0;
    pa_ze_call_leave(); /* pcs_lines_of() takes its own window: its parse is not in one */
    uint32_t b32 = (uint32_t)(base & 0xffffffffu);
    uint64_t size = bin ? bin : (uint64_t)UINT32_MAX - b32;
    if (size > (uint64_t)UINT32_MAX - b32)
        size = (uint64_t)UINT32_MAX - b32;
    char **files = NULL;
    pa_pcs_line_t *lines = NULL;
    uint32_t nfiles = 0, nlines = 0;
    pcs_lines_of(module, name, b32, &files, &nfiles, &lines, &nlines);
    pcs_kernels_register(dev, b32, (uint32_t)size, name, files, nfiles, lines, nlines);
    pcs_host.guard_leave();
    errno = saved;
}

/* Under kmu, in a window: the engine's tracer with its two epilogues. 1 when enabled. */
static int tracer_create(void)
{
    if (!pcs_ze.zelTracerCreate || !pcs_ze.zelTracerKernelCreateRegisterCallback ||
        !pcs_ze.zelTracerModuleCreateRegisterCallback)
        return 0;
    zel_tracer_desc_t desc = {ZEL_STRUCTURE_TYPE_TRACER_EXP_DESC, NULL, NULL};
    if (pcs_ze.zelTracerCreate(&desc, &tracer) == ZE_RESULT_SUCCESS &&
        pcs_ze.zelTracerModuleCreateRegisterCallback(tracer, ZEL_REGISTER_EPILOGUE, on_module_create) ==
            ZE_RESULT_SUCCESS &&
        pcs_ze.zelTracerKernelCreateRegisterCallback(tracer, ZEL_REGISTER_EPILOGUE, on_kernel_create) ==
            ZE_RESULT_SUCCESS &&
        pcs_ze.zelTracerSetEnabled(tracer, 1) == ZE_RESULT_SUCCESS)
        attached = 1;
    return attached;
}

int pcs_kernels_attach(void)
{
    pthread_mutex_lock(&kmu);
    int ok = attached || atomic_load(&pcs_host.kernels_hooked);
    if (!ok && pa_ze_call_enter()) {
        ok = tracer_create();
        pa_ze_call_leave();
    }
    pthread_mutex_unlock(&kmu);
    return ok ? 0 : -1;
}

void pcs_kernels_detach(void)
{
    pthread_mutex_lock(&kmu);
    if (attached && pa_ze_call_enter()) {
        pcs_ze.zelTracerSetEnabled(tracer, 0);
        if (pcs_ze.zelTracerDestroy)
            pcs_ze.zelTracerDestroy(tracer);
        attached = 0;
        pa_ze_call_leave();
    }
    pthread_mutex_unlock(&kmu);
}
