/* device.c - zeInit, driver and device discovery, device properties, global timestamps, contexts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pa_sd_metrics.h"

static pa_sd_driver g_driver;
static pa_sd_device g_devices[PA_SD_MAX_DEVICES];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic int g_inited;

static void driver_create(void)
{
    const pa_sd_config *c = pa_sd_config_get();
    (void)pa_sd_clock_ticks_at(pa_sd_clock_host_ns()); /* starts the device clock's session epoch */
    pa_sd_metrics_init(); /* ZET_ENABLE_METRICS counts only when set before zeInit */
    g_driver.ndevices = c->devices;
    for (uint32_t i = 0; i < c->devices; i++) {
        g_devices[i].magic = PA_SD_MAGIC_DEVICE;
        g_devices[i].index = i;
        g_devices[i].driver = &g_driver;
        g_driver.devices[i] = &g_devices[i];
    }
    g_driver.magic = PA_SD_MAGIC_DRIVER;
    atomic_store(&g_inited, 1);
}

pa_sd_driver *pa_sd_driver_get(void) { return atomic_load(&g_inited) ? &g_driver : NULL; }

pa_sd_device *pa_sd_device_of(ze_device_handle_t h)
{
    pa_sd_device *d = (pa_sd_device *)h;
    return (d && d->magic == PA_SD_MAGIC_DEVICE) ? d : NULL;
}

static pa_sd_driver *driver_of(ze_driver_handle_t h)
{
    pa_sd_driver *d = (pa_sd_driver *)h;
    return (d && d->magic == PA_SD_MAGIC_DRIVER) ? d : NULL;
}

/* SIMDEV_INIT_LOG=path: every zeInit the driver receives appends its flags there, so a test can
 * see who initialized Level Zero with what (the loader forwards each call's flags). */
static void init_log(ze_init_flags_t flags)
{
    const char *path = getenv("SIMDEV_INIT_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "zeInit 0x%x\n", (unsigned)flags);
        fclose(f);
    }
}

ze_result_t pa_sd_zeInit(ze_init_flags_t flags)
{
    init_log(flags);
    /* We are a GPU: a VPU-only request finds no device here. */
    if (flags && !(flags & ZE_INIT_FLAG_GPU_ONLY))
        return ZE_RESULT_ERROR_UNINITIALIZED;
    pthread_once(&g_once, driver_create);
    return ZE_RESULT_SUCCESS;
}

/* Two-call convention: *pCount==0 asks for the count, otherwise fill up to *pCount handles. */
ze_result_t pa_sd_zeDriverGet(uint32_t *pCount, ze_driver_handle_t *phDrivers)
{
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!pa_sd_driver_get()) {
        *pCount = 0;
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    if (*pCount == 0 || !phDrivers) {
        *pCount = 1;
        return ZE_RESULT_SUCCESS;
    }
    phDrivers[0] = (ze_driver_handle_t)&g_driver;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDriverGetApiVersion(ze_driver_handle_t h, ze_api_version_t *version)
{
    if (!driver_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!version)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *version = ZE_API_VERSION_1_4;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDriverGetProperties(ze_driver_handle_t h, ze_driver_properties_t *p)
{
    if (!driver_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(p->uuid.id, 0, sizeof p->uuid.id);
    memcpy(p->uuid.id, "simdev-driver-01", 16);
    p->driverVersion = 0x00010000u;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDriverGetIpcProperties(ze_driver_handle_t h, ze_driver_ipc_properties_t *p)
{
    if (!driver_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->flags = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDriverGetExtensionProperties(ze_driver_handle_t h, uint32_t *pCount,
                                              ze_driver_extension_properties_t *props)
{
    (void)props;
    if (!driver_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pCount = 0; /* no extensions */
    return ZE_RESULT_SUCCESS;
}

/* Intel extension functions a tool looks up by name (PTI and unitrace use the kernel base). */
ze_result_t pa_sd_zeDriverGetExtensionFunctionAddress(ze_driver_handle_t h, const char *name, void **ppFunctionAddress)
{
    if (!driver_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!name || !ppFunctionAddress)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (strcmp(name, "zexKernelGetBaseAddress") == 0) {
        *ppFunctionAddress = (void *)pa_sd_zexKernelGetBaseAddress;
        return ZE_RESULT_SUCCESS;
    }
    *ppFunctionAddress = NULL;
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

ze_result_t pa_sd_zeDeviceGet(ze_driver_handle_t h, uint32_t *pCount, ze_device_handle_t *phDevices)
{
    pa_sd_driver *drv = driver_of(h);
    if (!drv)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !phDevices) {
        *pCount = drv->ndevices;
        return ZE_RESULT_SUCCESS;
    }
    uint32_t n = *pCount < drv->ndevices ? *pCount : drv->ndevices;
    for (uint32_t i = 0; i < n; i++)
        phDevices[i] = (ze_device_handle_t)drv->devices[i];
    *pCount = n;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetSubDevices(ze_device_handle_t h, uint32_t *pCount,
                                     ze_device_handle_t *phSub)
{
    (void)phSub;
    if (!pa_sd_device_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}

void pa_sd_device_fill_props(const pa_sd_device *dev, ze_device_properties_t *p)
{
    const pa_sd_config *c = pa_sd_config_get();
    p->type = ZE_DEVICE_TYPE_GPU;
    p->vendorId = SIMDEV_VENDOR_ID;
    p->deviceId = SIMDEV_DEVICE_ID;
    p->flags = 0;
    p->subdeviceId = 0;
    p->coreClockRate = c->core_clock_mhz;
    p->maxMemAllocSize = c->mem_bytes;
    p->maxHardwareContexts = 64;
    p->maxCommandQueuePriority = 0;
    p->numThreadsPerEU = 8;
    p->physicalEUSimdWidth = 8;
    p->numEUsPerSubslice = 16;
    p->numSubslicesPerSlice = 8;
    p->numSlices = 2;
    /* stype 1.2 reports cycles per second; the original struct reports ns per cycle. */
    if (p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2)
        p->timerResolution = c->timer_hz;
    else
        p->timerResolution = (1000000000ull + c->timer_hz / 2) / c->timer_hz;
    p->timestampValidBits = c->timestamp_bits;
    p->kernelTimestampValidBits = c->timestamp_bits;
    memset(p->uuid.id, 0, sizeof p->uuid.id);
    memcpy(p->uuid.id, "SIMDEV-UUID-", 12);
    p->uuid.id[12] = 0x53;
    p->uuid.id[13] = 0x44;
    p->uuid.id[14] = (uint8_t)(dev->index >> 8);
    p->uuid.id[15] = (uint8_t)dev->index;
    snprintf(p->name, sizeof p->name, SIMDEV_DEVICE_NAME_FMT, dev->index);
}

void pa_sd_device_pci(const pa_sd_device *dev, zes_pci_address_t *out)
{
    out->domain = 0;
    out->bus = 0x10 + dev->index;
    out->device = 0;
    out->function = 0;
}

ze_result_t pa_sd_zeDeviceGetProperties(ze_device_handle_t h, ze_device_properties_t *p)
{
    pa_sd_device *dev = pa_sd_device_of(h);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pa_sd_device_fill_props(dev, p);
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetComputeProperties(ze_device_handle_t h, ze_device_compute_properties_t *p)
{
    if (!pa_sd_device_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->maxTotalGroupSize = 1024;
    p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = 1024;
    p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = 0xffffffffu;
    p->maxSharedLocalMemory = PA_SD_SLM_BYTES;
    p->numSubGroupSizes = 3;
    memset(p->subGroupSizes, 0, sizeof p->subGroupSizes);
    p->subGroupSizes[0] = 8;
    p->subGroupSizes[1] = 16;
    p->subGroupSizes[2] = 32;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetModuleProperties(ze_device_handle_t h, ze_device_module_properties_t *p)
{
    if (!pa_sd_device_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->spirvVersionSupported = ZE_MAKE_VERSION(1, 4);
    p->flags = ZE_DEVICE_MODULE_FLAG_FP16 | ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
    p->fp16flags = p->fp32flags = p->fp64flags =
        ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN | ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST;
    p->maxArgumentsSize = PA_SD_MAX_ARGS * 8;
    p->printfBufferSize = 4 << 20;
    memset(&p->nativeKernelSupported, 0x5d, sizeof p->nativeKernelSupported);
    return ZE_RESULT_SUCCESS;
}

/* The checks and the count-only answer every two-call getter below starts with (Level Zero's
 * convention: *pCount == 0 or no array asks for the count). Returns 1 with *r set when the
 * getter must return *r now, 0 when it should fill min(*pCount, have) entries. */
static int count_query(ze_device_handle_t h, uint32_t *pCount, const void *p, uint32_t have,
                       ze_result_t *r)
{
    *r = ZE_RESULT_SUCCESS;
    if (!pa_sd_device_of(h))
        *r = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    else if (!pCount)
        *r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (*pCount == 0 || !p)
        *pCount = have;
    else
        return 0;
    return 1;
}

ze_result_t pa_sd_zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t h, uint32_t *pCount,
                                                      ze_command_queue_group_properties_t *p)
{
    ze_result_t r;
    if (count_query(h, pCount, p, PA_SD_NUM_ORDINALS, &r))
        return r;
    uint32_t n = *pCount < PA_SD_NUM_ORDINALS ? *pCount : PA_SD_NUM_ORDINALS;
    for (uint32_t i = 0; i < n; i++) {
        bool compute = i == SIMDEV_ORDINAL_COMPUTE;
        p[i].flags = compute ? (ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
                                ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY |
                                ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS |
                                ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_METRICS)
                             : ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
        p[i].maxMemoryFillPatternSize = PA_SD_MAX_FILL_PATTERN; /* what AppendMemoryFill accepts */
        p[i].numQueues = compute ? SIMDEV_NUM_COMPUTE_ENGINES : SIMDEV_NUM_COPY_ENGINES;
    }
    *pCount = n;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetMemoryProperties(ze_device_handle_t h, uint32_t *pCount,
                                           ze_device_memory_properties_t *p)
{
    ze_result_t r;
    if (count_query(h, pCount, p, 1, &r))
        return r;
    p->flags = 0;
    p->maxClockRate = 1600; /* MHz */
    p->maxBusWidth = 256;   /* bits */
    p->totalSize = pa_sd_config_get()->mem_bytes;
    snprintf(p->name, sizeof p->name, "SimDev HBM");
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetMemoryAccessProperties(ze_device_handle_t h,
                                                 ze_device_memory_access_properties_t *p)
{
    if (!pa_sd_device_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_memory_access_cap_flags_t rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC |
                                      ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT |
                                      ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC;
    p->hostAllocCapabilities = rw;
    p->deviceAllocCapabilities = rw;
    p->sharedSingleDeviceAllocCapabilities = rw;
    p->sharedCrossDeviceAllocCapabilities = rw;
    p->sharedSystemAllocCapabilities = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetCacheProperties(ze_device_handle_t h, uint32_t *pCount,
                                          ze_device_cache_properties_t *p)
{
    ze_result_t r;
    if (count_query(h, pCount, p, 1, &r))
        return r;
    p->flags = 0;
    p->cacheSize = 16u << 20;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetImageProperties(ze_device_handle_t h, ze_device_image_properties_t *p)
{
    if (!pa_sd_device_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    /* No image support: every limit 0. */
    p->maxImageDims1D = p->maxImageDims2D = p->maxImageDims3D = 0;
    p->maxImageBufferSize = 0;
    p->maxImageArraySlices = p->maxSamplers = p->maxReadImageArgs = p->maxWriteImageArgs = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetExternalMemoryProperties(ze_device_handle_t h,
                                                   ze_device_external_memory_properties_t *p)
{
    if (!pa_sd_device_of(h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->memoryAllocationImportTypes = p->memoryAllocationExportTypes = 0;
    p->imageImportTypes = p->imageExportTypes = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetP2PProperties(ze_device_handle_t h, ze_device_handle_t peer,
                                        ze_device_p2p_properties_t *p)
{
    if (!pa_sd_device_of(h) || !pa_sd_device_of(peer))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->flags = ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceCanAccessPeer(ze_device_handle_t h, ze_device_handle_t peer, ze_bool_t *v)
{
    if (!pa_sd_device_of(h) || !pa_sd_device_of(peer))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!v)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *v = 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeDeviceGetStatus(ze_device_handle_t h)
{
    return pa_sd_device_of(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

/* One host clock read yields both values, so every pair is exactly consistent. */
static _Atomic uint64_t clock_read_once; /* bit i: device i's clocks were read (fault injection) */

ze_result_t pa_sd_zeDeviceGetGlobalTimestamps(ze_device_handle_t h, uint64_t *host, uint64_t *dev)
{
    pa_sd_device *d = pa_sd_device_of(h);
    if (!d)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!host || !dev)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint64_t now = pa_sd_clock_host_ns();
    *host = now;
    *dev = pa_sd_clock_ticks_at(now) & pa_sd_clock_mask();
    uint64_t slow = pa_sd_config_get()->fault_clock_ns;
    uint64_t bit = 1ull << (d->index & 63);
    if (slow && !(atomic_fetch_or(&clock_read_once, bit) & bit)) {
        /* fault injection: the device's first caller held up inside the call after the read
         * (preempted): its pair is then off by the delay, and others find it still in the call */
        struct timespec ts = {(time_t)(slow / 1000000000ull), (long)(slow % 1000000000ull)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    return ZE_RESULT_SUCCESS;
}

/* ---- contexts ---- */
ze_result_t pa_sd_zeContextCreate(ze_driver_handle_t h, const ze_context_desc_t *desc,
                               ze_context_handle_t *ph)
{
    pa_sd_driver *drv = driver_of(h);
    if (!drv)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!desc || !ph)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pa_sd_context *c = calloc(1, sizeof *c);
    if (!c)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    c->magic = PA_SD_MAGIC_CONTEXT;
    c->driver = drv;
    *ph = (ze_context_handle_t)c;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zeContextCreateEx(ze_driver_handle_t h, const ze_context_desc_t *desc,
                                 uint32_t n, ze_device_handle_t *phDevices, ze_context_handle_t *ph)
{
    for (uint32_t i = 0; phDevices && i < n; i++)
        if (!pa_sd_device_of(phDevices[i]))
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return pa_sd_zeContextCreate(h, desc, ph);
}

pa_sd_context *pa_sd_context_of(ze_context_handle_t h)
{
    pa_sd_context *c = (pa_sd_context *)h;
    return (c && c->magic == PA_SD_MAGIC_CONTEXT) ? c : NULL;
}

ze_result_t pa_sd_zeContextDestroy(ze_context_handle_t h)
{
    pa_sd_context *c = pa_sd_context_of(h);
    if (!c)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    /* ze_api.h: "the application must ensure the device is not currently referencing the
     * context" and lists ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE; a validating driver refuses while
     * event pools, command lists or queues of the context are alive (they would dangle), and the
     * context stays usable. Host/device allocations are not counted: the spec lets the destroy
     * free them. */
    if (atomic_load(&c->children))
        return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
    c->magic = PA_SD_MAGIC_DEAD;
    free(c);
    return ZE_RESULT_SUCCESS;
}

void pa_sd_context_child(pa_sd_context *c, int d)
{
    if (c)
        atomic_fetch_add(&c->children, (uint32_t)d);
}

ze_result_t pa_sd_zeContextGetStatus(ze_context_handle_t h)
{
    return pa_sd_context_of(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

ze_result_t pa_sd_zeContextSystemBarrier(ze_context_handle_t h, ze_device_handle_t d)
{
    return (pa_sd_context_of(h) && pa_sd_device_of(d)) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

ze_result_t pa_sd_zeContextMakeMemoryResident(ze_context_handle_t h, ze_device_handle_t d, void *ptr,
                                           size_t size)
{
    (void)size;
    if (!pa_sd_context_of(h) || !pa_sd_device_of(d))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return ptr ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
}

ze_result_t pa_sd_zeContextEvictMemory(ze_context_handle_t h, ze_device_handle_t d, void *ptr,
                                    size_t size)
{
    return pa_sd_zeContextMakeMemoryResident(h, d, ptr, size);
}
