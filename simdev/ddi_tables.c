/* ddi_tables.c - the exported *GetProcAddrTable getters the loader requires (all ze, zet, zes). */
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "sd_internal.h"

/* Any 1.x table version is accepted: the structs only grow, and we fill the fields we know. */
static ze_result_t check(ze_api_version_t version, const void *table)
{
    if (!table)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (ZE_MAJOR_VERSION(version) != 1)
        return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetGlobalProcAddrTable(ze_api_version_t version, ze_global_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnInit = sd_zeInit;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t version, ze_driver_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGet = sd_zeDriverGet;
    t->pfnGetApiVersion = sd_zeDriverGetApiVersion;
    t->pfnGetProperties = sd_zeDriverGetProperties;
    t->pfnGetIpcProperties = sd_zeDriverGetIpcProperties;
    t->pfnGetExtensionProperties = sd_zeDriverGetExtensionProperties;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t version, ze_device_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGet = sd_zeDeviceGet;
    t->pfnGetSubDevices = sd_zeDeviceGetSubDevices;
    t->pfnGetProperties = sd_zeDeviceGetProperties;
    t->pfnGetComputeProperties = sd_zeDeviceGetComputeProperties;
    t->pfnGetModuleProperties = sd_zeDeviceGetModuleProperties;
    t->pfnGetCommandQueueGroupProperties = sd_zeDeviceGetCommandQueueGroupProperties;
    t->pfnGetMemoryProperties = sd_zeDeviceGetMemoryProperties;
    t->pfnGetMemoryAccessProperties = sd_zeDeviceGetMemoryAccessProperties;
    t->pfnGetCacheProperties = sd_zeDeviceGetCacheProperties;
    t->pfnGetImageProperties = sd_zeDeviceGetImageProperties;
    t->pfnGetExternalMemoryProperties = sd_zeDeviceGetExternalMemoryProperties;
    t->pfnGetP2PProperties = sd_zeDeviceGetP2PProperties;
    t->pfnCanAccessPeer = sd_zeDeviceCanAccessPeer;
    t->pfnGetStatus = sd_zeDeviceGetStatus;
    t->pfnGetGlobalTimestamps = sd_zeDeviceGetGlobalTimestamps;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceExpProcAddrTable(ze_api_version_t version, ze_device_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetContextProcAddrTable(ze_api_version_t version, ze_context_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = sd_zeContextCreate;
    t->pfnCreateEx = sd_zeContextCreateEx;
    t->pfnDestroy = sd_zeContextDestroy;
    t->pfnGetStatus = sd_zeContextGetStatus;
    t->pfnSystemBarrier = sd_zeContextSystemBarrier;
    t->pfnMakeMemoryResident = sd_zeContextMakeMemoryResident;
    t->pfnEvictMemory = sd_zeContextEvictMemory;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandQueueProcAddrTable(ze_api_version_t version, ze_command_queue_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = sd_zeCommandQueueCreate;
    t->pfnDestroy = sd_zeCommandQueueDestroy;
    t->pfnExecuteCommandLists = sd_zeCommandQueueExecuteCommandLists;
    t->pfnSynchronize = sd_zeCommandQueueSynchronize;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandListProcAddrTable(ze_api_version_t version, ze_command_list_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = sd_zeCommandListCreate;
    t->pfnCreateImmediate = sd_zeCommandListCreateImmediate;
    t->pfnDestroy = sd_zeCommandListDestroy;
    t->pfnClose = sd_zeCommandListClose;
    t->pfnReset = sd_zeCommandListReset;
    t->pfnAppendWriteGlobalTimestamp = sd_zeCommandListAppendWriteGlobalTimestamp;
    t->pfnAppendBarrier = sd_zeCommandListAppendBarrier;
    t->pfnAppendMemoryRangesBarrier = sd_zeCommandListAppendMemoryRangesBarrier;
    t->pfnAppendMemoryCopy = sd_zeCommandListAppendMemoryCopy;
    t->pfnAppendMemoryFill = sd_zeCommandListAppendMemoryFill;
    t->pfnAppendMemoryCopyRegion = sd_zeCommandListAppendMemoryCopyRegion;
    t->pfnAppendMemoryCopyFromContext = sd_zeCommandListAppendMemoryCopyFromContext;
    t->pfnAppendMemoryPrefetch = sd_zeCommandListAppendMemoryPrefetch;
    t->pfnAppendMemAdvise = sd_zeCommandListAppendMemAdvise;
    t->pfnAppendSignalEvent = sd_zeCommandListAppendSignalEvent;
    t->pfnAppendWaitOnEvents = sd_zeCommandListAppendWaitOnEvents;
    t->pfnAppendEventReset = sd_zeCommandListAppendEventReset;
    t->pfnAppendQueryKernelTimestamps = sd_zeCommandListAppendQueryKernelTimestamps;
    t->pfnAppendLaunchKernel = sd_zeCommandListAppendLaunchKernel;
    t->pfnAppendLaunchCooperativeKernel = sd_zeCommandListAppendLaunchCooperativeKernel;
    t->pfnAppendLaunchKernelIndirect = sd_zeCommandListAppendLaunchKernelIndirect;
    t->pfnAppendLaunchMultipleKernelsIndirect = sd_zeCommandListAppendLaunchMultipleKernelsIndirect;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetImageProcAddrTable(ze_api_version_t version, ze_image_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetImageExpProcAddrTable(ze_api_version_t version, ze_image_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetFenceProcAddrTable(ze_api_version_t version, ze_fence_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = sd_zeFenceCreate;
    t->pfnDestroy = sd_zeFenceDestroy;
    t->pfnHostSynchronize = sd_zeFenceHostSynchronize;
    t->pfnQueryStatus = sd_zeFenceQueryStatus;
    t->pfnReset = sd_zeFenceReset;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventPoolProcAddrTable(ze_api_version_t version, ze_event_pool_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = sd_zeEventPoolCreate;
    t->pfnDestroy = sd_zeEventPoolDestroy;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventProcAddrTable(ze_api_version_t version, ze_event_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = sd_zeEventCreate;
    t->pfnDestroy = sd_zeEventDestroy;
    t->pfnHostSignal = sd_zeEventHostSignal;
    t->pfnHostSynchronize = sd_zeEventHostSynchronize;
    t->pfnQueryStatus = sd_zeEventQueryStatus;
    t->pfnHostReset = sd_zeEventHostReset;
    t->pfnQueryKernelTimestamp = sd_zeEventQueryKernelTimestamp;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventExpProcAddrTable(ze_api_version_t version, ze_event_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetModuleProcAddrTable(ze_api_version_t version, ze_module_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = sd_zeModuleCreate;
    t->pfnDestroy = sd_zeModuleDestroy;
    t->pfnDynamicLink = sd_zeModuleDynamicLink;
    t->pfnGetKernelNames = sd_zeModuleGetKernelNames;
    t->pfnGetProperties = sd_zeModuleGetProperties;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetModuleBuildLogProcAddrTable(ze_api_version_t version, ze_module_build_log_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnDestroy = sd_zeModuleBuildLogDestroy;
    t->pfnGetString = sd_zeModuleBuildLogGetString;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetKernelProcAddrTable(ze_api_version_t version, ze_kernel_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = sd_zeKernelCreate;
    t->pfnDestroy = sd_zeKernelDestroy;
    t->pfnSetCacheConfig = sd_zeKernelSetCacheConfig;
    t->pfnSetGroupSize = sd_zeKernelSetGroupSize;
    t->pfnSuggestGroupSize = sd_zeKernelSuggestGroupSize;
    t->pfnSuggestMaxCooperativeGroupCount = sd_zeKernelSuggestMaxCooperativeGroupCount;
    t->pfnSetArgumentValue = sd_zeKernelSetArgumentValue;
    t->pfnSetIndirectAccess = sd_zeKernelSetIndirectAccess;
    t->pfnGetIndirectAccess = sd_zeKernelGetIndirectAccess;
    t->pfnGetSourceAttributes = sd_zeKernelGetSourceAttributes;
    t->pfnGetProperties = sd_zeKernelGetProperties;
    t->pfnGetName = sd_zeKernelGetName;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetKernelExpProcAddrTable(ze_api_version_t version, ze_kernel_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetSamplerProcAddrTable(ze_api_version_t version, ze_sampler_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetPhysicalMemProcAddrTable(ze_api_version_t version, ze_physical_mem_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetMemProcAddrTable(ze_api_version_t version, ze_mem_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnAllocShared = sd_zeMemAllocShared;
    t->pfnAllocDevice = sd_zeMemAllocDevice;
    t->pfnAllocHost = sd_zeMemAllocHost;
    t->pfnFree = sd_zeMemFree;
    t->pfnGetAllocProperties = sd_zeMemGetAllocProperties;
    t->pfnGetAddressRange = sd_zeMemGetAddressRange;
    t->pfnFreeExt = sd_zeMemFreeExt;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetVirtualMemProcAddrTable(ze_api_version_t version, ze_virtual_mem_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetFabricVertexExpProcAddrTable(ze_api_version_t version, ze_fabric_vertex_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetFabricEdgeExpProcAddrTable(ze_api_version_t version, ze_fabric_edge_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetDeviceProcAddrTable(ze_api_version_t version, zet_device_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetContextProcAddrTable(ze_api_version_t version, zet_context_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetCommandListProcAddrTable(ze_api_version_t version, zet_command_list_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetModuleProcAddrTable(ze_api_version_t version, zet_module_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetKernelProcAddrTable(ze_api_version_t version, zet_kernel_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricGroupProcAddrTable(ze_api_version_t version, zet_metric_group_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricGroupExpProcAddrTable(ze_api_version_t version, zet_metric_group_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricProcAddrTable(ze_api_version_t version, zet_metric_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricStreamerProcAddrTable(ze_api_version_t version, zet_metric_streamer_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricQueryPoolProcAddrTable(ze_api_version_t version, zet_metric_query_pool_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricQueryProcAddrTable(ze_api_version_t version, zet_metric_query_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetTracerExpProcAddrTable(ze_api_version_t version, zet_tracer_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetDebugProcAddrTable(ze_api_version_t version, zet_debug_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetDriverProcAddrTable(ze_api_version_t version, zes_driver_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetDeviceProcAddrTable(ze_api_version_t version, zes_device_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGetProperties = sd_zesDeviceGetProperties;
    t->pfnPciGetProperties = sd_zesDevicePciGetProperties;
    t->pfnPciGetState = sd_zesDevicePciGetState;
    t->pfnPciGetBars = sd_zesDevicePciGetBars;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetSchedulerProcAddrTable(ze_api_version_t version, zes_scheduler_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetPerformanceFactorProcAddrTable(ze_api_version_t version, zes_performance_factor_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetPowerProcAddrTable(ze_api_version_t version, zes_power_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetFrequencyProcAddrTable(ze_api_version_t version, zes_frequency_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetEngineProcAddrTable(ze_api_version_t version, zes_engine_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetStandbyProcAddrTable(ze_api_version_t version, zes_standby_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetFirmwareProcAddrTable(ze_api_version_t version, zes_firmware_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetMemoryProcAddrTable(ze_api_version_t version, zes_memory_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetFabricPortProcAddrTable(ze_api_version_t version, zes_fabric_port_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetTemperatureProcAddrTable(ze_api_version_t version, zes_temperature_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetPsuProcAddrTable(ze_api_version_t version, zes_psu_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetFanProcAddrTable(ze_api_version_t version, zes_fan_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetLedProcAddrTable(ze_api_version_t version, zes_led_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetRasProcAddrTable(ze_api_version_t version, zes_ras_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetDiagnosticsProcAddrTable(ze_api_version_t version, zes_diagnostics_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}
