/* sysman.c - the zes (sysman) device and PCI queries a tool uses for device attributes. */
#include <stdio.h>
#include <string.h>

#include "pa_sd_activity.h"

ze_result_t pa_sd_zesDeviceGetProperties(zes_device_handle_t h, zes_device_properties_t *p)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)h);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->core.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    p->core.pNext = NULL;
    pa_sd_device_fill_props(dev, &p->core);
    p->numSubdevices = 0;
    snprintf(p->serialNumber, sizeof p->serialNumber, "SD%08u", 1000 + dev->index);
    snprintf(p->boardNumber, sizeof p->boardNumber, "SIMDEV-BOARD-%u", dev->index);
    snprintf(p->brandName, sizeof p->brandName, "SimDev");
    snprintf(p->modelName, sizeof p->modelName, SIMDEV_DEVICE_NAME_FMT, dev->index);
    snprintf(p->vendorName, sizeof p->vendorName, "profagent simdev");
    snprintf(p->driverVersion, sizeof p->driverVersion, "1.0.0");
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zesDevicePciGetProperties(zes_device_handle_t h, zes_pci_properties_t *p)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)h);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pa_sd_device_pci(dev, &p->address);
    p->maxSpeed.gen = 4;
    p->maxSpeed.width = 16;
    p->maxSpeed.maxBandwidth = (int64_t)SIMDEV_PCIE_PEAK_BPS; /* bytes/s, PCIe 4.0 x16 */
    p->haveBandwidthCounters = 1;
    p->havePacketCounters = 0;
    p->haveReplayCounters = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zesDevicePciGetState(zes_device_handle_t h, zes_pci_state_t *s)
{
    if (!pa_sd_device_of((ze_device_handle_t)h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!s)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    s->status = ZES_PCI_LINK_STATUS_GOOD;
    s->qualityIssues = 0;
    s->stabilityIssues = 0;
    s->speed.gen = 4;
    s->speed.width = 16;
    s->speed.maxBandwidth = (int64_t)SIMDEV_PCIE_PEAK_BPS;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zesDevicePciGetBars(zes_device_handle_t h, uint32_t *pCount, zes_pci_bar_properties_t *p)
{
    (void)p;
    if (!pa_sd_device_of((ze_device_handle_t)h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}

/* PCIe traffic: bytes the device received (host-to-device copies) and sent (device-to-host), at
 * the same instant the activity timeline is complete for (README "Sysman"). */
ze_result_t pa_sd_zesDevicePciGetStats(zes_device_handle_t h, zes_pci_stats_t *st)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)h);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!st)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pa_sd_counters c;
    pa_sd_activity_read(dev, &c);
    st->timestamp = c.at_ns / 1000;
    st->replayCounter = 0;
    st->packetCounter = 0;
    st->rxCounter = c.c[PA_SD_C_H2D];
    st->txCounter = c.c[PA_SD_C_D2H];
    st->speed.gen = 4;
    st->speed.width = 16;
    st->speed.maxBandwidth = (int64_t)SIMDEV_PCIE_PEAK_BPS;
    return ZE_RESULT_SUCCESS;
}

/* ---- engine groups: ALL, COMPUTE_ALL, COPY_ALL, then each compute and copy engine ---- */
enum { PA_SD_MAGIC_ZES_ENGINE = 0x5344656eu, PA_SD_MAGIC_ZES_MEM = 0x53446d6du };
#define ZES_ENGINES (3 + PA_SD_ENGINES)
typedef struct zes_engine { uint32_t magic; pa_sd_device *dev; uint32_t slot; } zes_engine;
typedef struct zes_mem { uint32_t magic; pa_sd_device *dev; } zes_mem;
static zes_engine g_engines[PA_SD_MAX_DEVICES][ZES_ENGINES];
static zes_mem g_mems[PA_SD_MAX_DEVICES];
static pthread_mutex_t g_zes_mu = PTHREAD_MUTEX_INITIALIZER;

static zes_engine_group_t engine_type(uint32_t slot)
{
    if (slot == 0)
        return ZES_ENGINE_GROUP_ALL;
    if (slot == 1)
        return ZES_ENGINE_GROUP_COMPUTE_ALL;
    if (slot == 2)
        return ZES_ENGINE_GROUP_COPY_ALL;
    return slot - 3 < SIMDEV_NUM_COMPUTE_ENGINES ? ZES_ENGINE_GROUP_COMPUTE_SINGLE : ZES_ENGINE_GROUP_COPY_SINGLE;
}

ze_result_t pa_sd_zesDeviceEnumEngineGroups(zes_device_handle_t h, uint32_t *pCount, zes_engine_handle_t *ph)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)h);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !ph) {
        *pCount = ZES_ENGINES;
        return ZE_RESULT_SUCCESS;
    }
    if (*pCount > ZES_ENGINES)
        *pCount = ZES_ENGINES;
    pthread_mutex_lock(&g_zes_mu);
    for (uint32_t i = 0; i < *pCount; i++) {
        zes_engine *e = &g_engines[dev->index % PA_SD_MAX_DEVICES][i];
        *e = (zes_engine){PA_SD_MAGIC_ZES_ENGINE, dev, i};
        ph[i] = (zes_engine_handle_t)e;
    }
    pthread_mutex_unlock(&g_zes_mu);
    return ZE_RESULT_SUCCESS;
}

static zes_engine *engine_of(zes_engine_handle_t h)
{
    zes_engine *e = (zes_engine *)h;
    if (!e || e < &g_engines[0][0] || e >= &g_engines[PA_SD_MAX_DEVICES - 1][ZES_ENGINES])
        return NULL;
    return e->magic == PA_SD_MAGIC_ZES_ENGINE ? e : NULL;
}

ze_result_t pa_sd_zesEngineGetProperties(zes_engine_handle_t h, zes_engine_properties_t *p)
{
    zes_engine *e = engine_of(h);
    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->type = engine_type(e->slot);
    p->onSubdevice = 0;
    p->subdeviceId = 0;
    return ZE_RESULT_SUCCESS;
}

/* activeTime = time the engine (a group: any engine of it) was busy, in us, at timestamp (us of
 * CLOCK_MONOTONIC); utilization = delta activeTime / delta timestamp. */
ze_result_t pa_sd_zesEngineGetActivity(zes_engine_handle_t h, zes_engine_stats_t *st)
{
    zes_engine *e = engine_of(h);
    if (!e)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!st)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pa_sd_counters c;
    pa_sd_activity_read(e->dev, &c);
    uint64_t ns = e->slot == 0 ? c.busy[PA_SD_BUSY_ANY] : e->slot == 1 ? c.busy[PA_SD_BUSY_COMPUTE]
                : e->slot == 2 ? c.busy[PA_SD_BUSY_COPY] : c.engine_busy[e->slot - 3];
    st->activeTime = ns / 1000;
    st->timestamp = c.at_ns / 1000;
    return ZE_RESULT_SUCCESS;
}

/* ---- one memory module per device ---- */
ze_result_t pa_sd_zesDeviceEnumMemoryModules(zes_device_handle_t h, uint32_t *pCount, zes_mem_handle_t *ph)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)h);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !ph) {
        *pCount = 1;
        return ZE_RESULT_SUCCESS;
    }
    *pCount = 1;
    pthread_mutex_lock(&g_zes_mu);
    g_mems[dev->index % PA_SD_MAX_DEVICES] = (zes_mem){PA_SD_MAGIC_ZES_MEM, dev};
    pthread_mutex_unlock(&g_zes_mu);
    ph[0] = (zes_mem_handle_t)&g_mems[dev->index % PA_SD_MAX_DEVICES];
    return ZE_RESULT_SUCCESS;
}

static zes_mem *mem_of(zes_mem_handle_t h)
{
    zes_mem *m = (zes_mem *)h;
    if (!m || m < &g_mems[0] || m >= &g_mems[PA_SD_MAX_DEVICES])
        return NULL;
    return m->magic == PA_SD_MAGIC_ZES_MEM ? m : NULL;
}

ze_result_t pa_sd_zesMemoryGetProperties(zes_mem_handle_t h, zes_mem_properties_t *p)
{
    if (!mem_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->type = ZES_MEM_TYPE_HBM;
    p->onSubdevice = 0;
    p->subdeviceId = 0;
    p->location = ZES_MEM_LOC_DEVICE;
    p->physicalSize = pa_sd_config_get()->mem_bytes;
    p->busWidth = 256;
    p->numChannels = 8;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zesMemoryGetState(zes_mem_handle_t h, zes_mem_state_t *st)
{
    zes_mem *m = mem_of(h);
    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!st)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint64_t size = pa_sd_config_get()->mem_bytes, used = atomic_load(&m->dev->mem_used);
    st->health = ZES_MEM_HEALTH_OK;
    st->size = size;
    st->free = used < size ? size - used : 0;
    return ZE_RESULT_SUCCESS;
}

/* Bytes read from / written to device memory by kernels and copies, and the peak
 * (maxClockRate 1600 MHz x 2 x 256 bit / 8 = 102.4e9 B/s). */
ze_result_t pa_sd_zesMemoryGetBandwidth(zes_mem_handle_t h, zes_mem_bandwidth_t *bw)
{
    zes_mem *m = mem_of(h);
    if (!m)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!bw)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pa_sd_counters c;
    pa_sd_activity_read(m->dev, &c);
    bw->readCounter = c.c[PA_SD_C_GMEM_READ];
    bw->writeCounter = c.c[PA_SD_C_GMEM_WRITE];
    bw->maxBandwidth = SIMDEV_MEM_PEAK_MBPS * 1000000ull;
    bw->timestamp = c.at_ns / 1000;
    return ZE_RESULT_SUCCESS;
}
