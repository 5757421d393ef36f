/* devmetrics_sysman.c - a device's sysman counters (engine activity, memory bandwidth, PCIe) and the
 * properties utilization peaks come from, read beside its metric stream (notes/utilization.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>

#include "../common/pa_clock.h"
#include "devmetrics.h"

#define SM_FN(n) __typeof__(&n) n
static struct {
    int state; /* 0 unresolved, 1 resolved, -1 missing */
    SM_FN(zeDeviceGetProperties); SM_FN(zeDeviceGetMemoryProperties);
    SM_FN(zesDeviceEnumEngineGroups); SM_FN(zesEngineGetProperties); SM_FN(zesEngineGetActivity);
    SM_FN(zesDeviceEnumMemoryModules); SM_FN(zesMemoryGetBandwidth);
    SM_FN(zesDevicePciGetProperties); SM_FN(zesDevicePciGetStats);
} zs;

/* Called from pa_dm_start() before any reader runs (one thread). */
static int sm_resolve(void)
{
    if (zs.state)
        return zs.state > 0 ? 0 : -1;
    zs.state = -1;
    void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return -1;
#define R(n) if (!(*(void **)&zs.n = dlsym(lib, #n))) return -1;
    R(zeDeviceGetProperties) R(zeDeviceGetMemoryProperties) R(zesDeviceEnumEngineGroups)
    R(zesEngineGetProperties) R(zesEngineGetActivity) R(zesDeviceEnumMemoryModules) R(zesMemoryGetBandwidth)
    R(zesDevicePciGetProperties) R(zesDevicePciGetStats)
#undef R
    zs.state = 1;
    return 0;
}

int pa_dm_sysman_open(void *device, pa_dm_sysman_dev_t *s)
{
    memset(s, 0, sizeof *s);
    if (sm_resolve() != 0)
        return -1;
    zes_device_handle_t h = (zes_device_handle_t)device; /* sysman on the core handle (API 1.4) */
    uint32_t n = 0;
    zes_engine_handle_t e[64];
    if (zs.zesDeviceEnumEngineGroups(h, &n, NULL) == ZE_RESULT_SUCCESS && n) {
        if (n > 64)
            n = 64;
        if (zs.zesDeviceEnumEngineGroups(h, &n, e) != ZE_RESULT_SUCCESS)
            n = 0;
        for (uint32_t i = 0; i < n; i++) {
            zes_engine_properties_t p = {.stype = ZES_STRUCTURE_TYPE_ENGINE_PROPERTIES};
            if (zs.zesEngineGetProperties(e[i], &p) != ZE_RESULT_SUCCESS || p.onSubdevice)
                continue;
            int slot = p.type == ZES_ENGINE_GROUP_ALL ? 0 : p.type == ZES_ENGINE_GROUP_COMPUTE_ALL ? 1
                     : p.type == ZES_ENGINE_GROUP_COPY_ALL ? 2 : -1;
            if (slot >= 0 && !s->engine[slot])
                s->engine[slot] = e[i];
        }
    }
    n = 1;
    zes_mem_handle_t m[1];
    if (zs.zesDeviceEnumMemoryModules(h, &n, m) == ZE_RESULT_SUCCESS && n >= 1)
        s->mem = m[0];
    zes_pci_properties_t pp = {.stype = ZES_STRUCTURE_TYPE_PCI_PROPERTIES};
    if (zs.zesDevicePciGetProperties(h, &pp) == ZE_RESULT_SUCCESS) {
        s->pci = 1;
        s->pcie_peak_bps = pp.maxSpeed.maxBandwidth > 0 ? (uint64_t)pp.maxSpeed.maxBandwidth : 0;
        s->pci_counters = pp.haveBandwidthCounters != 0;
    }
    s->device = device;
    return s->engine[0] || s->engine[1] || s->mem || s->pci ? 0 : -1;
}

void pa_dm_sysman_read(const pa_dm_sysman_dev_t *s, uint32_t index, pa_dm_sysman_t *out)
{
    memset(out, 0xff, sizeof *out);
    out->device = index;
    out->pad = 0;
    out->host_ns = pa_clock_ns();
    if (!s->device)
        return;
    for (int i = 0; i < 3; i++) {
        zes_engine_stats_t st = {0};
        if (s->engine[i] && zs.zesEngineGetActivity(s->engine[i], &st) == ZE_RESULT_SUCCESS) {
            out->active_us[i] = st.activeTime;
            out->engine_ts_us = st.timestamp;
        }
    }
    zes_mem_bandwidth_t bw = {0};
    if (s->mem && zs.zesMemoryGetBandwidth(s->mem, &bw) == ZE_RESULT_SUCCESS) {
        out->mem_read = bw.readCounter;
        out->mem_write = bw.writeCounter;
        out->mem_ts_us = bw.timestamp;
    }
    zes_pci_stats_t ps = {0};
    if (s->pci_counters && zs.zesDevicePciGetStats((zes_device_handle_t)s->device, &ps) == ZE_RESULT_SUCCESS) {
        out->pci_rx = ps.rxCounter;
        out->pci_tx = ps.txCounter;
        out->pci_ts_us = ps.timestamp;
    }
}

void pa_dm_peaks_read(const pa_dm_sysman_dev_t *s, void *device, uint32_t index, pa_dm_peaks_t *out)
{
    memset(out, 0, sizeof *out);
    out->device = index;
    if (sm_resolve() != 0)
        return;
    ze_device_handle_t h = (ze_device_handle_t)device;
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    if (zs.zeDeviceGetProperties(h, &p) == ZE_RESULT_SUCCESS) {
        out->xve_count = p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice;
        out->threads_per_xve = p.numThreadsPerEU;
        out->core_mhz = p.coreClockRate;
    }
    zes_mem_bandwidth_t bw = {0};
    if (s->mem && zs.zesMemoryGetBandwidth(s->mem, &bw) == ZE_RESULT_SUCCESS && bw.maxBandwidth)
        out->mem_peak_bps = bw.maxBandwidth;
    if (!out->mem_peak_bps) { /* sysman gave none: the memory properties (units assumed: MHz, bits) */
        uint32_t n = 1;
        ze_device_memory_properties_t mp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
        if (zs.zeDeviceGetMemoryProperties(h, &n, &mp) == ZE_RESULT_SUCCESS && n)
            out->mem_peak_bps = (uint64_t)mp.maxClockRate * 1000000ull * 2 * mp.maxBusWidth / 8;
    }
    out->pcie_peak_bps = s->pcie_peak_bps;
}
