/* pa_sd_api.h - generated list of the Level Zero entry points simdev implements (pa_sd_ + API name). */
/* Regenerate by hand when adding an entry point; ddi_tables.c wires the same list. */
#define PA_SD_DECL(f) PA_SD_HIDDEN extern __typeof__(f) pa_sd_##f;
#define PA_SD_TABLE_LIST(X) \
    X(Global, Init, zeInit) \
    X(Driver, Get, zeDriverGet) \
    X(Driver, GetApiVersion, zeDriverGetApiVersion) \
    X(Driver, GetProperties, zeDriverGetProperties) \
    X(Driver, GetIpcProperties, zeDriverGetIpcProperties) \
    X(Driver, GetExtensionProperties, zeDriverGetExtensionProperties) \
    X(Driver, GetExtensionFunctionAddress, zeDriverGetExtensionFunctionAddress) \
    X(Device, Get, zeDeviceGet) \
    X(Device, GetSubDevices, zeDeviceGetSubDevices) \
    X(Device, GetProperties, zeDeviceGetProperties) \
    X(Device, GetComputeProperties, zeDeviceGetComputeProperties) \
    X(Device, GetModuleProperties, zeDeviceGetModuleProperties) \
    X(Device, GetCommandQueueGroupProperties, zeDeviceGetCommandQueueGroupProperties) \
    X(Device, GetMemoryProperties, zeDeviceGetMemoryProperties) \
    X(Device, GetMemoryAccessProperties, zeDeviceGetMemoryAccessProperties) \
    X(Device, GetCacheProperties, zeDeviceGetCacheProperties) \
    X(Device, GetImageProperties, zeDeviceGetImageProperties) \
    X(Device, GetExternalMemoryProperties, zeDeviceGetExternalMemoryProperties) \
    X(Device, GetP2PProperties, zeDeviceGetP2PProperties) \
    X(Device, CanAccessPeer, zeDeviceCanAccessPeer) \
    X(Device, GetStatus, zeDeviceGetStatus) \
    X(Device, GetGlobalTimestamps, zeDeviceGetGlobalTimestamps) \
    X(Context, Create, zeContextCreate) \
    X(Context, CreateEx, zeContextCreateEx) \
    X(Context, Destroy, zeContextDestroy) \
    X(Context, GetStatus, zeContextGetStatus) \
    X(Context, SystemBarrier, zeContextSystemBarrier) \
    X(Context, MakeMemoryResident, zeContextMakeMemoryResident) \
    X(Context, EvictMemory, zeContextEvictMemory) \
    X(CommandQueue, Create, zeCommandQueueCreate) \
    X(CommandQueue, Destroy, zeCommandQueueDestroy) \
    X(CommandQueue, ExecuteCommandLists, zeCommandQueueExecuteCommandLists) \
    X(CommandQueue, Synchronize, zeCommandQueueSynchronize) \
    X(CommandList, Create, zeCommandListCreate) \
    X(CommandList, CreateImmediate, zeCommandListCreateImmediate) \
    X(CommandList, Destroy, zeCommandListDestroy) \
    X(CommandList, Close, zeCommandListClose) \
    X(CommandList, Reset, zeCommandListReset) \
    X(CommandList, AppendWriteGlobalTimestamp, zeCommandListAppendWriteGlobalTimestamp) \
    X(CommandList, AppendBarrier, zeCommandListAppendBarrier) \
    X(CommandList, AppendMemoryRangesBarrier, zeCommandListAppendMemoryRangesBarrier) \
    X(CommandList, AppendMemoryCopy, zeCommandListAppendMemoryCopy) \
    X(CommandList, AppendMemoryFill, zeCommandListAppendMemoryFill) \
    X(CommandList, AppendMemoryCopyRegion, zeCommandListAppendMemoryCopyRegion) \
    X(CommandList, AppendMemoryCopyFromContext, zeCommandListAppendMemoryCopyFromContext) \
    X(CommandList, AppendMemoryPrefetch, zeCommandListAppendMemoryPrefetch) \
    X(CommandList, AppendMemAdvise, zeCommandListAppendMemAdvise) \
    X(CommandList, AppendSignalEvent, zeCommandListAppendSignalEvent) \
    X(CommandList, AppendWaitOnEvents, zeCommandListAppendWaitOnEvents) \
    X(CommandList, AppendEventReset, zeCommandListAppendEventReset) \
    X(CommandList, AppendQueryKernelTimestamps, zeCommandListAppendQueryKernelTimestamps) \
    X(CommandList, AppendLaunchKernel, zeCommandListAppendLaunchKernel) \
    X(CommandList, AppendLaunchCooperativeKernel, zeCommandListAppendLaunchCooperativeKernel) \
    X(CommandList, AppendLaunchKernelIndirect, zeCommandListAppendLaunchKernelIndirect) \
    X(CommandList, AppendLaunchMultipleKernelsIndirect, zeCommandListAppendLaunchMultipleKernelsIndirect) \
    X(Fence, Create, zeFenceCreate) \
    X(Fence, Destroy, zeFenceDestroy) \
    X(Fence, HostSynchronize, zeFenceHostSynchronize) \
    X(Fence, QueryStatus, zeFenceQueryStatus) \
    X(Fence, Reset, zeFenceReset) \
    X(EventPool, Create, zeEventPoolCreate) \
    X(EventPool, Destroy, zeEventPoolDestroy) \
    X(Event, Create, zeEventCreate) \
    X(Event, Destroy, zeEventDestroy) \
    X(Event, HostSignal, zeEventHostSignal) \
    X(Event, HostSynchronize, zeEventHostSynchronize) \
    X(Event, QueryStatus, zeEventQueryStatus) \
    X(Event, HostReset, zeEventHostReset) \
    X(Event, QueryKernelTimestamp, zeEventQueryKernelTimestamp) \
    X(Module, Create, zeModuleCreate) \
    X(Module, Destroy, zeModuleDestroy) \
    X(Module, DynamicLink, zeModuleDynamicLink) \
    X(Module, GetKernelNames, zeModuleGetKernelNames) \
    X(Module, GetProperties, zeModuleGetProperties) \
    X(Module, GetNativeBinary, zeModuleGetNativeBinary) \
    X(ModuleBuildLog, Destroy, zeModuleBuildLogDestroy) \
    X(ModuleBuildLog, GetString, zeModuleBuildLogGetString) \
    X(Kernel, Create, zeKernelCreate) \
    X(Kernel, Destroy, zeKernelDestroy) \
    X(Kernel, SetCacheConfig, zeKernelSetCacheConfig) \
    X(Kernel, SetGroupSize, zeKernelSetGroupSize) \
    X(Kernel, SuggestGroupSize, zeKernelSuggestGroupSize) \
    X(Kernel, SuggestMaxCooperativeGroupCount, zeKernelSuggestMaxCooperativeGroupCount) \
    X(Kernel, SetArgumentValue, zeKernelSetArgumentValue) \
    X(Kernel, SetIndirectAccess, zeKernelSetIndirectAccess) \
    X(Kernel, GetIndirectAccess, zeKernelGetIndirectAccess) \
    X(Kernel, GetSourceAttributes, zeKernelGetSourceAttributes) \
    X(Kernel, GetProperties, zeKernelGetProperties) \
    X(Kernel, GetName, zeKernelGetName) \
    X(Mem, AllocShared, zeMemAllocShared) \
    X(Mem, AllocDevice, zeMemAllocDevice) \
    X(Mem, AllocHost, zeMemAllocHost) \
    X(Mem, Free, zeMemFree) \
    X(Mem, GetAllocProperties, zeMemGetAllocProperties) \
    X(Mem, GetAddressRange, zeMemGetAddressRange) \
    X(Mem, FreeExt, zeMemFreeExt)
#define PA_SD_ZES_TABLE_LIST(X) \
    X(Device, GetProperties, zesDeviceGetProperties) \
    X(Device, PciGetProperties, zesDevicePciGetProperties) \
    X(Device, PciGetState, zesDevicePciGetState) \
    X(Device, PciGetBars, zesDevicePciGetBars) \
    X(Device, PciGetStats, zesDevicePciGetStats) \
    X(Device, EnumEngineGroups, zesDeviceEnumEngineGroups) \
    X(Device, EnumMemoryModules, zesDeviceEnumMemoryModules) \
    X(Engine, GetProperties, zesEngineGetProperties) \
    X(Engine, GetActivity, zesEngineGetActivity) \
    X(Memory, GetProperties, zesMemoryGetProperties) \
    X(Memory, GetState, zesMemoryGetState) \
    X(Memory, GetBandwidth, zesMemoryGetBandwidth)
#define PA_SD_ZET_TABLE_LIST(X) \
    X(MetricGroup, Get, zetMetricGroupGet) \
    X(MetricGroup, GetProperties, zetMetricGroupGetProperties) \
    X(MetricGroup, CalculateMetricValues, zetMetricGroupCalculateMetricValues) \
    X(MetricGroupExp, CalculateMultipleMetricValuesExp, zetMetricGroupCalculateMultipleMetricValuesExp) \
    X(Metric, Get, zetMetricGet) \
    X(Metric, GetProperties, zetMetricGetProperties) \
    X(Context, ActivateMetricGroups, zetContextActivateMetricGroups) \
    X(MetricStreamer, Open, zetMetricStreamerOpen) \
    X(MetricStreamer, ReadData, zetMetricStreamerReadData) \
    X(MetricStreamer, Close, zetMetricStreamerClose) \
    X(Module, GetDebugInfo, zetModuleGetDebugInfo)
#define PA_SD_DECL3(t, f, api) PA_SD_DECL(api)
PA_SD_TABLE_LIST(PA_SD_DECL3)
PA_SD_ZES_TABLE_LIST(PA_SD_DECL3)
PA_SD_ZET_TABLE_LIST(PA_SD_DECL3)
