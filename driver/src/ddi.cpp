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

// The loader's build-log shim (module.cpp, loaderShimTable) needs the API version it asked for.
template <class Table>
void noteTable(ze_api_version_t) {}
template <>
void noteTable<ze_module_build_log_dditable_t>(ze_api_version_t version) {
    zecl::noteLoaderApiVersion(version);
}

}  // namespace

extern "C" {

// Every ze getter, from the one list of entry points.
#define ZECL_TABLE(getter, table)                                                    \
    ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, table* t) { \
        if (ze_result_t r = checkTable(version, t)) return r;                        \
        noteTable<table>(version);
#define ZECL_ENTRY(object, name, since) \
    if (has(version, since)) t->pfn##name = zecl::api::guarded<&zecl::api::object##name>;
#define ZECL_UNSUPPORTED_ENTRY(name, since) \
    if (has(version, since)) ZECL_UNSUPPORTED(t->pfn##name);
#define ZECL_TABLE_END        \
    return ZE_RESULT_SUCCESS; \
    }
#include "entry_points.inc"
#undef ZECL_TABLE
#undef ZECL_ENTRY
#undef ZECL_UNSUPPORTED_ENTRY
#undef ZECL_TABLE_END

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
