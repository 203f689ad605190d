// The exported zeGet*ProcAddrTable / zetGet* / zesGet* getters the loader resolves.
//
// The Debian loader (1.8.12) refuses a driver that lacks any non-Exp ze getter or any zet
// / zes getter, calls every getter (at API 1.4) before the driver's zeInit, and treats
// UNSUPPORTED_VERSION from a non-Exp getter as fatal. Entries are filled only where they
// exist at the requested version (the loader lays tables side by side, so writing a field
// that its version lacks would overwrite the next table). zet/zes tables stay null.
#include "api.hpp"
#include "objects.hpp"

#include <ze_ddi.h>
#include <zes_ddi.h>
#include <zet_ddi.h>

namespace {

template <class Fn>
struct Unsupported;
template <class... A>
struct Unsupported<ze_result_t(ZE_APICALL*)(A...)> {
    static ze_result_t ZE_APICALL fn(A...) { return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; }
};

// Fills an entry with a typed stub answering ZE_RESULT_ERROR_UNSUPPORTED_FEATURE.
#define ZECL_UNSUPPORTED(entry) (entry) = Unsupported<decltype(entry)>::fn

bool versionOk(ze_api_version_t version) {
    return ZE_MAJOR_VERSION(version) == ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT);
}

// Whether the table of the requested version has entries introduced at `since`.
bool has(ze_api_version_t version, ze_api_version_t since) { return version >= since; }

template <class T>
ze_result_t checkTable(ze_api_version_t version, T* table) {
    if (table == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return versionOk(version) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
}

}  // namespace

using namespace zecl::api;

extern "C" {

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetGlobalProcAddrTable(ze_api_version_t version, ze_global_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnInit = Init;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t version, ze_driver_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnGet = DriverGet;
    t->pfnGetApiVersion = DriverGetApiVersion;
    t->pfnGetProperties = DriverGetProperties;
    t->pfnGetIpcProperties = DriverGetIpcProperties;
    t->pfnGetExtensionProperties = DriverGetExtensionProperties;
    if (has(version, ZE_API_VERSION_1_1)) ZECL_UNSUPPORTED(t->pfnGetExtensionFunctionAddress);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t version, ze_device_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnGet = DeviceGet;
    t->pfnGetSubDevices = DeviceGetSubDevices;
    t->pfnGetProperties = DeviceGetProperties;
    t->pfnGetComputeProperties = DeviceGetComputeProperties;
    t->pfnGetModuleProperties = DeviceGetModuleProperties;
    t->pfnGetCommandQueueGroupProperties = DeviceGetCommandQueueGroupProperties;
    t->pfnGetMemoryProperties = DeviceGetMemoryProperties;
    t->pfnGetMemoryAccessProperties = DeviceGetMemoryAccessProperties;
    t->pfnGetCacheProperties = DeviceGetCacheProperties;
    t->pfnGetImageProperties = DeviceGetImageProperties;
    t->pfnGetExternalMemoryProperties = DeviceGetExternalMemoryProperties;
    t->pfnGetP2PProperties = DeviceGetP2PProperties;
    t->pfnCanAccessPeer = DeviceCanAccessPeer;
    t->pfnGetStatus = DeviceGetStatus;
    if (has(version, ZE_API_VERSION_1_1)) t->pfnGetGlobalTimestamps = DeviceGetGlobalTimestamps;
    if (has(version, ZE_API_VERSION_1_2)) {
        ZECL_UNSUPPORTED(t->pfnReserveCacheExt);
        ZECL_UNSUPPORTED(t->pfnSetCacheAdviceExt);
    }
    if (has(version, ZE_API_VERSION_1_3)) ZECL_UNSUPPORTED(t->pfnPciGetPropertiesExt);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetContextProcAddrTable(ze_api_version_t version, ze_context_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnCreate = ContextCreate;
    t->pfnDestroy = ContextDestroy;
    t->pfnGetStatus = ContextGetStatus;
    t->pfnSystemBarrier = ContextSystemBarrier;
    t->pfnMakeMemoryResident = ContextMakeMemoryResident;
    t->pfnEvictMemory = ContextEvictMemory;
    ZECL_UNSUPPORTED(t->pfnMakeImageResident);
    ZECL_UNSUPPORTED(t->pfnEvictImage);
    if (has(version, ZE_API_VERSION_1_1)) t->pfnCreateEx = ContextCreateEx;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandQueueProcAddrTable(ze_api_version_t version,
                                                                   ze_command_queue_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnCreate = CommandQueueCreate;
    t->pfnDestroy = CommandQueueDestroy;
    t->pfnExecuteCommandLists = CommandQueueExecuteCommandLists;
    t->pfnSynchronize = CommandQueueSynchronize;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandListProcAddrTable(ze_api_version_t version,
                                                                  ze_command_list_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnCreate = CommandListCreate;
    t->pfnCreateImmediate = CommandListCreateImmediate;
    t->pfnDestroy = CommandListDestroy;
    t->pfnClose = CommandListClose;
    t->pfnReset = CommandListReset;
    t->pfnAppendWriteGlobalTimestamp = CommandListAppendWriteGlobalTimestamp;
    t->pfnAppendBarrier = CommandListAppendBarrier;
    t->pfnAppendMemoryRangesBarrier = CommandListAppendMemoryRangesBarrier;
    t->pfnAppendMemoryCopy = CommandListAppendMemoryCopy;
    t->pfnAppendMemoryFill = CommandListAppendMemoryFill;
    t->pfnAppendMemoryCopyRegion = CommandListAppendMemoryCopyRegion;
    t->pfnAppendMemoryCopyFromContext = CommandListAppendMemoryCopyFromContext;
    ZECL_UNSUPPORTED(t->pfnAppendImageCopy);
    ZECL_UNSUPPORTED(t->pfnAppendImageCopyRegion);
    ZECL_UNSUPPORTED(t->pfnAppendImageCopyToMemory);
    ZECL_UNSUPPORTED(t->pfnAppendImageCopyFromMemory);
    t->pfnAppendMemoryPrefetch = CommandListAppendMemoryPrefetch;
    t->pfnAppendMemAdvise = CommandListAppendMemAdvise;
    t->pfnAppendSignalEvent = CommandListAppendSignalEvent;
    t->pfnAppendWaitOnEvents = CommandListAppendWaitOnEvents;
    t->pfnAppendEventReset = CommandListAppendEventReset;
    t->pfnAppendQueryKernelTimestamps = CommandListAppendQueryKernelTimestamps;
    t->pfnAppendLaunchKernel = CommandListAppendLaunchKernel;
    t->pfnAppendLaunchCooperativeKernel = CommandListAppendLaunchCooperativeKernel;
    t->pfnAppendLaunchKernelIndirect = CommandListAppendLaunchKernelIndirect;
    t->pfnAppendLaunchMultipleKernelsIndirect = CommandListAppendLaunchMultipleKernelsIndirect;
    if (has(version, ZE_API_VERSION_1_3)) {
        ZECL_UNSUPPORTED(t->pfnAppendImageCopyToMemoryExt);
        ZECL_UNSUPPORTED(t->pfnAppendImageCopyFromMemoryExt);
    }
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetImageProcAddrTable(ze_api_version_t version, ze_image_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnGetProperties);
    ZECL_UNSUPPORTED(t->pfnCreate);
    ZECL_UNSUPPORTED(t->pfnDestroy);
    if (has(version, ZE_API_VERSION_1_3)) ZECL_UNSUPPORTED(t->pfnGetAllocPropertiesExt);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetFenceProcAddrTable(ze_api_version_t version, ze_fence_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnCreate = FenceCreate;
    t->pfnDestroy = FenceDestroy;
    t->pfnHostSynchronize = FenceHostSynchronize;
    t->pfnQueryStatus = FenceQueryStatus;
    t->pfnReset = FenceReset;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventPoolProcAddrTable(ze_api_version_t version, ze_event_pool_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnCreate = EventPoolCreate;
    t->pfnDestroy = EventPoolDestroy;
    ZECL_UNSUPPORTED(t->pfnGetIpcHandle);
    ZECL_UNSUPPORTED(t->pfnOpenIpcHandle);
    ZECL_UNSUPPORTED(t->pfnCloseIpcHandle);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventProcAddrTable(ze_api_version_t version, ze_event_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnCreate = EventCreate;
    t->pfnDestroy = EventDestroy;
    t->pfnHostSignal = EventHostSignal;
    t->pfnHostSynchronize = EventHostSynchronize;
    t->pfnQueryStatus = EventQueryStatus;
    t->pfnHostReset = EventHostReset;
    t->pfnQueryKernelTimestamp = EventQueryKernelTimestamp;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetModuleProcAddrTable(ze_api_version_t version, ze_module_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnCreate = ModuleCreate;
    t->pfnDestroy = ModuleDestroy;
    ZECL_UNSUPPORTED(t->pfnDynamicLink);
    t->pfnGetNativeBinary = ModuleGetNativeBinary;
    t->pfnGetGlobalPointer = ModuleGetGlobalPointer;
    t->pfnGetKernelNames = ModuleGetKernelNames;
    t->pfnGetProperties = ModuleGetProperties;
    t->pfnGetFunctionPointer = ModuleGetFunctionPointer;
    if (has(version, ZE_API_VERSION_1_3)) ZECL_UNSUPPORTED(t->pfnInspectLinkageExt);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetModuleBuildLogProcAddrTable(ze_api_version_t version,
                                                                     ze_module_build_log_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    zecl::noteLoaderApiVersion(version);
    t->pfnDestroy = ModuleBuildLogDestroy;
    t->pfnGetString = ModuleBuildLogGetString;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetKernelProcAddrTable(ze_api_version_t version, ze_kernel_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnCreate = KernelCreate;
    t->pfnDestroy = KernelDestroy;
    t->pfnSetCacheConfig = KernelSetCacheConfig;
    t->pfnSetGroupSize = KernelSetGroupSize;
    t->pfnSuggestGroupSize = KernelSuggestGroupSize;
    t->pfnSuggestMaxCooperativeGroupCount = KernelSuggestMaxCooperativeGroupCount;
    t->pfnSetArgumentValue = KernelSetArgumentValue;
    t->pfnSetIndirectAccess = KernelSetIndirectAccess;
    t->pfnGetIndirectAccess = KernelGetIndirectAccess;
    t->pfnGetSourceAttributes = KernelGetSourceAttributes;
    t->pfnGetProperties = KernelGetProperties;
    t->pfnGetName = KernelGetName;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetSamplerProcAddrTable(ze_api_version_t version, ze_sampler_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnCreate);
    ZECL_UNSUPPORTED(t->pfnDestroy);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetPhysicalMemProcAddrTable(ze_api_version_t version,
                                                                  ze_physical_mem_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnCreate);
    ZECL_UNSUPPORTED(t->pfnDestroy);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetMemProcAddrTable(ze_api_version_t version, ze_mem_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnAllocShared = MemAllocShared;
    t->pfnAllocDevice = MemAllocDevice;
    t->pfnAllocHost = MemAllocHost;
    t->pfnFree = MemFree;
    t->pfnGetAllocProperties = MemGetAllocProperties;
    t->pfnGetAddressRange = MemGetAddressRange;
    ZECL_UNSUPPORTED(t->pfnGetIpcHandle);
    ZECL_UNSUPPORTED(t->pfnOpenIpcHandle);
    ZECL_UNSUPPORTED(t->pfnCloseIpcHandle);
    if (has(version, ZE_API_VERSION_1_3)) ZECL_UNSUPPORTED(t->pfnFreeExt);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetVirtualMemProcAddrTable(ze_api_version_t version,
                                                                 ze_virtual_mem_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnReserve);
    ZECL_UNSUPPORTED(t->pfnFree);
    t->pfnQueryPageSize = VirtualMemQueryPageSize;
    ZECL_UNSUPPORTED(t->pfnMap);
    ZECL_UNSUPPORTED(t->pfnUnmap);
    ZECL_UNSUPPORTED(t->pfnSetAccessAttribute);
    ZECL_UNSUPPORTED(t->pfnGetAccessAttribute);
    return ZE_RESULT_SUCCESS;
}

// Optional Exp tables: exported so the loader sees them, entries unsupported.
ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceExpProcAddrTable(ze_api_version_t version, ze_device_exp_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnGetFabricVertexExp);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetImageExpProcAddrTable(ze_api_version_t version, ze_image_exp_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnGetMemoryPropertiesExp);
    ZECL_UNSUPPORTED(t->pfnViewCreateExp);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventExpProcAddrTable(ze_api_version_t version, ze_event_exp_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnQueryTimestampsExp);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetKernelExpProcAddrTable(ze_api_version_t version, ze_kernel_exp_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    t->pfnSetGlobalOffsetExp = KernelSetGlobalOffsetExp;
    ZECL_UNSUPPORTED(t->pfnSchedulingHintExp);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetFabricVertexExpProcAddrTable(ze_api_version_t version,
                                                                      ze_fabric_vertex_exp_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnGetExp);
    ZECL_UNSUPPORTED(t->pfnGetSubVerticesExp);
    ZECL_UNSUPPORTED(t->pfnGetPropertiesExp);
    ZECL_UNSUPPORTED(t->pfnGetDeviceExp);
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetFabricEdgeExpProcAddrTable(ze_api_version_t version,
                                                                    ze_fabric_edge_exp_dditable_t* t) {
    if (ze_result_t r = checkTable(version, t)) return r;
    ZECL_UNSUPPORTED(t->pfnGetExp);
    ZECL_UNSUPPORTED(t->pfnGetVerticesExp);
    ZECL_UNSUPPORTED(t->pfnGetPropertiesExp);
    return ZE_RESULT_SUCCESS;
}

// Tools and sysman: the loader requires the getters; every entry stays null.
#define ZECL_EMPTY_TABLE(getter, table) \
    ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, table* t) { return checkTable(version, t); }

ZECL_EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
ZECL_EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
ZECL_EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
ZECL_EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
ZECL_EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
ZECL_EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
ZECL_EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
ZECL_EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
ZECL_EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
ZECL_EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
ZECL_EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
ZECL_EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
ZECL_EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)

ZECL_EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
ZECL_EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
ZECL_EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
ZECL_EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
ZECL_EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
ZECL_EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
ZECL_EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
ZECL_EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
ZECL_EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
ZECL_EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
ZECL_EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
ZECL_EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
ZECL_EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
ZECL_EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
ZECL_EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
ZECL_EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
ZECL_EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

}  // extern "C"
