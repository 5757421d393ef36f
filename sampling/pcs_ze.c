/* pcs_ze.c - Level Zero side of PC sampling: loader entry points, devices and their EuStallSampling
 * metric group (IP metric + EVENT stall reasons, as PTI finds them), per-driver contexts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcs_internal.h"

pcs_fns_t pcs_ze;
pcs_dev_t pcs_devs[PCS_MAX_DEVICES];
uint32_t pcs_ndevs;
uint32_t pcs_nsupported;

static void noop(void) {}
pcs_host_t pcs_host = {.guard_enter = noop, .guard_leave = noop};

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int init_done;
static int init_result = -1;

static int resolve(void)
{
    void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        lib = dlopen("libze_loader.so.1", RTLD_NOW);
    if (!lib)
        return -1;
#define R(n) if (!(*(void **)&pcs_ze.n = dlsym(lib, #n))) return -1;
    R(zeInit) R(zeDriverGet) R(zeDeviceGet) R(zeDeviceGetProperties) R(zeContextCreate) R(zeContextDestroy)
    R(zeEventPoolCreate) R(zeEventPoolDestroy) R(zeEventCreate) R(zeEventDestroy)
    R(zeEventHostSynchronize) R(zeEventHostReset) R(zeModuleGetNativeBinary)
    R(zeDriverGetExtensionFunctionAddress) R(zetMetricGroupGet) R(zetMetricGroupGetProperties)
    R(zetMetricGet) R(zetMetricGetProperties) R(zetContextActivateMetricGroups) R(zetMetricStreamerOpen)
    R(zetMetricStreamerReadData) R(zetMetricStreamerClose) R(zetMetricGroupCalculateMetricValues)
#undef R
    /* optional: debug info (source lines) and the tracer (kernel address ranges) */
    *(void **)&pcs_ze.zetModuleGetDebugInfo = dlsym(lib, "zetModuleGetDebugInfo");
    *(void **)&pcs_ze.zelTracerCreate = dlsym(lib, "zelTracerCreate");
    *(void **)&pcs_ze.zelTracerSetEnabled = dlsym(lib, "zelTracerSetEnabled");
    *(void **)&pcs_ze.zelTracerKernelCreateRegisterCallback = dlsym(lib, "zelTracerKernelCreateRegisterCallback");
    *(void **)&pcs_ze.zelTracerModuleCreateRegisterCallback = dlsym(lib, "zelTracerModuleCreateRegisterCallback");
    *(void **)&pcs_ze.zelTracerDestroy = dlsym(lib, "zelTracerDestroy");
    return 0;
}

/* The EuStallSampling group of a device, as PTI finds it: by name, TIME_BASED; the IP metric by
 * name; every other EVENT metric is a stall reason, in group order. */
static void find_group(pcs_dev_t *d)
{
    uint32_t n = 0;
    if (pcs_ze.zetMetricGroupGet(d->h, &n, NULL) != ZE_RESULT_SUCCESS || n == 0)
        return;
    zet_metric_group_handle_t *g = calloc(n, sizeof *g);
    if (!g || pcs_ze.zetMetricGroupGet(d->h, &n, g) != ZE_RESULT_SUCCESS) {
        free(g);
        return;
    }
    for (uint32_t i = 0; i < n && !d->group; i++) {
        zet_metric_group_properties_t p = {.stype = ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES};
        if (pcs_ze.zetMetricGroupGetProperties(g[i], &p) != ZE_RESULT_SUCCESS)
            continue;
        if (strcmp(p.name, "EuStallSampling") != 0 || !(p.samplingType & ZET_METRIC_GROUP_SAMPLING_TYPE_FLAG_TIME_BASED))
            continue;
        uint32_t nm = 0;
        if (pcs_ze.zetMetricGet(g[i], &nm, NULL) != ZE_RESULT_SUCCESS || nm == 0 || nm > 64)
            continue;
        zet_metric_handle_t m[64];
        if (pcs_ze.zetMetricGet(g[i], &nm, m) != ZE_RESULT_SUCCESS)
            continue;
        int ip = -1;
        uint32_t nr = 0;
        for (uint32_t k = 0; k < nm; k++) {
            zet_metric_properties_t mp = {.stype = ZET_STRUCTURE_TYPE_METRIC_PROPERTIES};
            if (pcs_ze.zetMetricGetProperties(m[k], &mp) != ZE_RESULT_SUCCESS)
                continue;
            if (strcmp(mp.name, "IP") == 0) {
                ip = (int)k;
            } else if (mp.metricType == ZET_METRIC_TYPE_EVENT && nr < PA_PCS_MAX_REASONS) {
                d->reason_metric[nr] = k;
                snprintf(d->reason_name[nr], sizeof d->reason_name[nr], "%s", mp.name);
                snprintf(d->reason_desc[nr], sizeof d->reason_desc[nr], "%s", mp.description);
                nr++;
            }
        }
        if (ip < 0 || nr == 0)
            continue; /* a group without the IP or any reason is of no use (degrade: unsupported) */
        d->group = g[i];
        d->nmetrics = nm;
        d->ip_metric = (uint32_t)ip;
        d->nreasons = nr;
    }
    free(g);
}

static void enumerate(void)
{
    uint32_t nd = 0;
    ze_driver_handle_t drv[8];
    if (pcs_ze.zeDriverGet(&nd, NULL) != ZE_RESULT_SUCCESS)
        return;
    if (nd > 8)
        nd = 8;
    if (pcs_ze.zeDriverGet(&nd, drv) != ZE_RESULT_SUCCESS)
        return;
    for (uint32_t i = 0; i < nd; i++) {
        pcs_base_fn base = NULL;
        if (pcs_ze.zeDriverGetExtensionFunctionAddress(drv[i], "zexKernelGetBaseAddress", (void **)&base) !=
            ZE_RESULT_SUCCESS)
            base = NULL;
        ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
        ze_context_handle_t ctx = NULL;
        if (pcs_ze.zeContextCreate(drv[i], &cd, &ctx) != ZE_RESULT_SUCCESS)
            ctx = NULL;
        uint32_t n = 0;
        if (pcs_ze.zeDeviceGet(drv[i], &n, NULL) != ZE_RESULT_SUCCESS)
            continue;
        if (n > PCS_MAX_DEVICES - pcs_ndevs)
            n = PCS_MAX_DEVICES - pcs_ndevs;
        ze_device_handle_t devs[PCS_MAX_DEVICES];
        if (pcs_ze.zeDeviceGet(drv[i], &n, devs) != ZE_RESULT_SUCCESS)
            continue;
        for (uint32_t k = 0; k < n; k++) {
            pcs_dev_t *d = &pcs_devs[pcs_ndevs];
            memset(d, 0, sizeof *d);
            d->drv = drv[i];
            d->h = devs[k];
            d->ctx = ctx;
            d->base_fn = base;
            d->index = pcs_ndevs++;
            if (ctx)
                find_group(d);
            if (d->group)
                pcs_nsupported++;
        }
    }
}

int pcs_engine_init(int may_init)
{
    pthread_mutex_lock(&init_mu);
    if (!init_done && pa_ze_call_enter()) {
        pcs_host.guard_enter();
        uint32_t n = 0;
        if (resolve() == 0) {
            if (may_init) /* the PTI API: Enable initializes Level Zero, as PTI does */
                init_done = 1;
            /* GPU drivers only, as PTI asks (zeInit(ZE_INIT_FLAG_GPU_ONLY)): flags 0 also loaded and
             * initialized every other driver type (VPU) behind the application, which then found
             * them in zeDriverGet after its own zeInit(ZE_INIT_FLAG_GPU_ONLY) */
            ze_result_t r = may_init ? pcs_ze.zeInit(ZE_INIT_FLAG_GPU_ONLY) : pcs_ze.zeDriverGet(&n, NULL);
            if (r == ZE_RESULT_SUCCESS) {
                init_done = 1;
                enumerate();
                init_result = (int)pcs_nsupported;
            }
        }
        pcs_host.guard_leave();
        pa_ze_call_leave();
    }
    int r = init_result;
    pthread_mutex_unlock(&init_mu);
    return r;
}

/* A context is shared by the devices of its driver: destroyed once, at its first device. */
static void contexts_destroy(void)
{
    for (uint32_t i = 0; i < pcs_ndevs; i++) {
        ze_context_handle_t c = pcs_devs[i].ctx;
        int first = c != NULL;
        for (uint32_t k = 0; k < i && first; k++)
            first = pcs_devs[k].ctx != c;
        if (first)
            pcs_ze.zeContextDestroy(c);
    }
}

void pcs_engine_fini(void)
{
    pthread_mutex_lock(&init_mu);
    if (init_done && pcs_stream_left() == 0 && pa_ze_call_enter()) {
        pcs_host.guard_enter();
        contexts_destroy();
        pcs_host.guard_leave();
        pa_ze_call_leave();
        pcs_kernels_free();
        memset(pcs_devs, 0, sizeof pcs_devs);
        pcs_ndevs = pcs_nsupported = 0;
        init_done = 0;
        init_result = -1;
    }
    pthread_mutex_unlock(&init_mu);
}
