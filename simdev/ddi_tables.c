/* ddi_tables.c - the exported *GetProcAddrTable getters the loader requires (all ze, zet, zes). */
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "pa_sd_internal.h"

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
    t->pfnInit = pa_sd_zeInit;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t version, ze_driver_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGet = pa_sd_zeDriverGet;
    t->pfnGetApiVersion = pa_sd_zeDriverGetApiVersion;
    t->pfnGetProperties = pa_sd_zeDriverGetProperties;
    t->pfnGetIpcProperties = pa_sd_zeDriverGetIpcProperties;
    t->pfnGetExtensionProperties = pa_sd_zeDriverGetExtensionProperties;
    t->pfnGetExtensionFunctionAddress = pa_sd_zeDriverGetExtensionFunctionAddress;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t version, ze_device_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGet = pa_sd_zeDeviceGet;
    t->pfnGetSubDevices = pa_sd_zeDeviceGetSubDevices;
    t->pfnGetProperties = pa_sd_zeDeviceGetProperties;
    t->pfnGetComputeProperties = pa_sd_zeDeviceGetComputeProperties;
    t->pfnGetModuleProperties = pa_sd_zeDeviceGetModuleProperties;
    t->pfnGetCommandQueueGroupProperties = pa_sd_zeDeviceGetCommandQueueGroupProperties;
    t->pfnGetMemoryProperties = pa_sd_zeDeviceGetMemoryProperties;
    t->pfnGetMemoryAccessProperties = pa_sd_zeDeviceGetMemoryAccessProperties;
    t->pfnGetCacheProperties = pa_sd_zeDeviceGetCacheProperties;
    t->pfnGetImageProperties = pa_sd_zeDeviceGetImageProperties;
    t->pfnGetExternalMemoryProperties = pa_sd_zeDeviceGetExternalMemoryProperties;
    t->pfnGetP2PProperties = pa_sd_zeDeviceGetP2PProperties;
    t->pfnCanAccessPeer = pa_sd_zeDeviceCanAccessPeer;
    t->pfnGetStatus = pa_sd_zeDeviceGetStatus;
    t->pfnGetGlobalTimestamps = pa_sd_zeDeviceGetGlobalTimestamps;
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
    t->pfnCreate = pa_sd_zeContextCreate;
    t->pfnCreateEx = pa_sd_zeContextCreateEx;
    t->pfnDestroy = pa_sd_zeContextDestroy;
    t->pfnGetStatus = pa_sd_zeContextGetStatus;
    t->pfnSystemBarrier = pa_sd_zeContextSystemBarrier;
    t->pfnMakeMemoryResident = pa_sd_zeContextMakeMemoryResident;
    t->pfnEvictMemory = pa_sd_zeContextEvictMemory;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandQueueProcAddrTable(ze_api_version_t version, ze_command_queue_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = pa_sd_zeCommandQueueCreate;
    t->pfnDestroy = pa_sd_zeCommandQueueDestroy;
    t->pfnExecuteCommandLists = pa_sd_zeCommandQueueExecuteCommandLists;
    t->pfnSynchronize = pa_sd_zeCommandQueueSynchronize;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandListProcAddrTable(ze_api_version_t version, ze_command_list_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = pa_sd_zeCommandListCreate;
    t->pfnCreateImmediate = pa_sd_zeCommandListCreateImmediate;
    t->pfnDestroy = pa_sd_zeCommandListDestroy;
    t->pfnClose = pa_sd_zeCommandListClose;
    t->pfnReset = pa_sd_zeCommandListReset;
    t->pfnAppendWriteGlobalTimestamp = pa_sd_zeCommandListAppendWriteGlobalTimestamp;
    t->pfnAppendBarrier = pa_sd_zeCommandListAppendBarrier;
    t->pfnAppendMemoryRangesBarrier = pa_sd_zeCommandListAppendMemoryRangesBarrier;
    t->pfnAppendMemoryCopy = pa_sd_zeCommandListAppendMemoryCopy;
    t->pfnAppendMemoryFill = pa_sd_zeCommandListAppendMemoryFill;
    t->pfnAppendMemoryCopyRegion = pa_sd_zeCommandListAppendMemoryCopyRegion;
    t->pfnAppendMemoryCopyFromContext = pa_sd_zeCommandListAppendMemoryCopyFromContext;
    t->pfnAppendMemoryPrefetch = pa_sd_zeCommandListAppendMemoryPrefetch;
    t->pfnAppendMemAdvise = pa_sd_zeCommandListAppendMemAdvise;
    t->pfnAppendSignalEvent = pa_sd_zeCommandListAppendSignalEvent;
    t->pfnAppendWaitOnEvents = pa_sd_zeCommandListAppendWaitOnEvents;
    t->pfnAppendEventReset = pa_sd_zeCommandListAppendEventReset;
    t->pfnAppendQueryKernelTimestamps = pa_sd_zeCommandListAppendQueryKernelTimestamps;
    t->pfnAppendLaunchKernel = pa_sd_zeCommandListAppendLaunchKernel;
    t->pfnAppendLaunchCooperativeKernel = pa_sd_zeCommandListAppendLaunchCooperativeKernel;
    t->pfnAppendLaunchKernelIndirect = pa_sd_zeCommandListAppendLaunchKernelIndirect;
    t->pfnAppendLaunchMultipleKernelsIndirect = pa_sd_zeCommandListAppendLaunchMultipleKernelsIndirect;
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
    t->pfnCreate = pa_sd_zeFenceCreate;
    t->pfnDestroy = pa_sd_zeFenceDestroy;
    t->pfnHostSynchronize = pa_sd_zeFenceHostSynchronize;
    t->pfnQueryStatus = pa_sd_zeFenceQueryStatus;
    t->pfnReset = pa_sd_zeFenceReset;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventPoolProcAddrTable(ze_api_version_t version, ze_event_pool_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = pa_sd_zeEventPoolCreate;
    t->pfnDestroy = pa_sd_zeEventPoolDestroy;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventProcAddrTable(ze_api_version_t version, ze_event_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = pa_sd_zeEventCreate;
    t->pfnDestroy = pa_sd_zeEventDestroy;
    t->pfnHostSignal = pa_sd_zeEventHostSignal;
    t->pfnHostSynchronize = pa_sd_zeEventHostSynchronize;
    t->pfnQueryStatus = pa_sd_zeEventQueryStatus;
    t->pfnHostReset = pa_sd_zeEventHostReset;
    t->pfnQueryKernelTimestamp = pa_sd_zeEventQueryKernelTimestamp;
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
    t->pfnCreate = pa_sd_zeModuleCreate;
    t->pfnDestroy = pa_sd_zeModuleDestroy;
    t->pfnDynamicLink = pa_sd_zeModuleDynamicLink;
    t->pfnGetKernelNames = pa_sd_zeModuleGetKernelNames;
    t->pfnGetProperties = pa_sd_zeModuleGetProperties;
    t->pfnGetNativeBinary = pa_sd_zeModuleGetNativeBinary;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetModuleBuildLogProcAddrTable(ze_api_version_t version, ze_module_build_log_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnDestroy = pa_sd_zeModuleBuildLogDestroy;
    t->pfnGetString = pa_sd_zeModuleBuildLogGetString;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetKernelProcAddrTable(ze_api_version_t version, ze_kernel_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCreate = pa_sd_zeKernelCreate;
    t->pfnDestroy = pa_sd_zeKernelDestroy;
    t->pfnSetCacheConfig = pa_sd_zeKernelSetCacheConfig;
    t->pfnSetGroupSize = pa_sd_zeKernelSetGroupSize;
    t->pfnSuggestGroupSize = pa_sd_zeKernelSuggestGroupSize;
    t->pfnSuggestMaxCooperativeGroupCount = pa_sd_zeKernelSuggestMaxCooperativeGroupCount;
    t->pfnSetArgumentValue = pa_sd_zeKernelSetArgumentValue;
    t->pfnSetIndirectAccess = pa_sd_zeKernelSetIndirectAccess;
    t->pfnGetIndirectAccess = pa_sd_zeKernelGetIndirectAccess;
    t->pfnGetSourceAttributes = pa_sd_zeKernelGetSourceAttributes;
    t->pfnGetProperties = pa_sd_zeKernelGetProperties;
    t->pfnGetName = pa_sd_zeKernelGetName;
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
    t->pfnAllocShared = pa_sd_zeMemAllocShared;
    t->pfnAllocDevice = pa_sd_zeMemAllocDevice;
    t->pfnAllocHost = pa_sd_zeMemAllocHost;
    t->pfnFree = pa_sd_zeMemFree;
    t->pfnGetAllocProperties = pa_sd_zeMemGetAllocProperties;
    t->pfnGetAddressRange = pa_sd_zeMemGetAddressRange;
    t->pfnFreeExt = pa_sd_zeMemFreeExt;
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
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnActivateMetricGroups = pa_sd_zetContextActivateMetricGroups;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetCommandListProcAddrTable(ze_api_version_t version, zet_command_list_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetModuleProcAddrTable(ze_api_version_t version, zet_module_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGetDebugInfo = pa_sd_zetModuleGetDebugInfo;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetKernelProcAddrTable(ze_api_version_t version, zet_kernel_dditable_t *t)
{
    ze_result_t r = check(version, t);
    return r; /* nothing implemented: entries stay NULL -> UNSUPPORTED_FEATURE */
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricGroupProcAddrTable(ze_api_version_t version, zet_metric_group_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGet = pa_sd_zetMetricGroupGet;
    t->pfnGetProperties = pa_sd_zetMetricGroupGetProperties;
    t->pfnCalculateMetricValues = pa_sd_zetMetricGroupCalculateMetricValues;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricGroupExpProcAddrTable(ze_api_version_t version, zet_metric_group_exp_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnCalculateMultipleMetricValuesExp = pa_sd_zetMetricGroupCalculateMultipleMetricValuesExp;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricProcAddrTable(ze_api_version_t version, zet_metric_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGet = pa_sd_zetMetricGet;
    t->pfnGetProperties = pa_sd_zetMetricGetProperties;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricStreamerProcAddrTable(ze_api_version_t version, zet_metric_streamer_dditable_t *t)
{
    ze_result_t r = check(version, t);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnOpen = pa_sd_zetMetricStreamerOpen;
    t->pfnReadData = pa_sd_zetMetricStreamerReadData;
    t->pfnClose = pa_sd_zetMetricStreamerClose;
    return ZE_RESULT_SUCCESS;
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
    t->pfnGetProperties = pa_sd_zesDeviceGetProperties;
    t->pfnPciGetProperties = pa_sd_zesDevicePciGetProperties;
    t->pfnPciGetState = pa_sd_zesDevicePciGetState;
    t->pfnPciGetBars = pa_sd_zesDevicePciGetBars;
    t->pfnPciGetStats = pa_sd_zesDevicePciGetStats;
    t->pfnEnumEngineGroups = pa_sd_zesDeviceEnumEngineGroups;
    t->pfnEnumMemoryModules = pa_sd_zesDeviceEnumMemoryModules;
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
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGetProperties = pa_sd_zesEngineGetProperties;
    t->pfnGetActivity = pa_sd_zesEngineGetActivity;
    return ZE_RESULT_SUCCESS;
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
    if (r != ZE_RESULT_SUCCESS)
        return r;
    t->pfnGetProperties = pa_sd_zesMemoryGetProperties;
    t->pfnGetState = pa_sd_zesMemoryGetState;
    t->pfnGetBandwidth = pa_sd_zesMemoryGetBandwidth;
    return ZE_RESULT_SUCCESS;
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
