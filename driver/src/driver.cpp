// Initialisation, the registry, fault injection, and driver / device queries.
//
// Mapping: one L0 driver per OpenCL platform that has at least one usable device (a
// cl_context cannot span platforms, and an L0 context belongs to one driver); one L0
// device per OpenCL device.
#include "api.hpp"
#include "nvidia_sm.hpp"
#include "objects.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <string_view>

namespace zecl {

// ---------------------------------------------------------------------------------------
// Registry

void Registry::add(const void* handle, Kind kind) {
    std::unique_lock lock(mutex_);
    live_[handle] = kind;
}

void Registry::remove(const void* handle) {
    std::unique_lock lock(mutex_);
    live_.erase(handle);
}

bool Registry::has(const void* handle, Kind kind) const {
    std::shared_lock lock(mutex_);
    auto it = live_.find(handle);
    return it != live_.end() && it->second == kind;
}

Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: handles may be checked during exit
    return *r;
}

ze_result_t fromCl(cl_int err) {
    switch (err) {
        case CL_SUCCESS: return ZE_RESULT_SUCCESS;
        case CL_OUT_OF_HOST_MEMORY: return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        case CL_OUT_OF_RESOURCES:
        case CL_MEM_OBJECT_ALLOCATION_FAILURE: return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
        case CL_INVALID_KERNEL_NAME: return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
        case CL_INVALID_ARG_SIZE: return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
        case CL_INVALID_ARG_INDEX: return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
        case CL_INVALID_WORK_GROUP_SIZE:
        case CL_INVALID_WORK_ITEM_SIZE: return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
        case CL_INVALID_GLOBAL_WORK_SIZE: return ZE_RESULT_ERROR_INVALID_SIZE;
        case CL_BUILD_PROGRAM_FAILURE:
        case CL_COMPILE_PROGRAM_FAILURE:
        case CL_LINK_PROGRAM_FAILURE: return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
        case CL_INVALID_BINARY: return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
        case CL_INVALID_VALUE:
        case CL_INVALID_KERNEL_ARGS:
        case CL_INVALID_ARG_VALUE: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        case CL_DEVICE_NOT_AVAILABLE: return ZE_RESULT_ERROR_DEVICE_LOST;
        case CL_INVALID_OPERATION: return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
        default: return ZE_RESULT_ERROR_UNKNOWN;
    }
}

uint64_t hostNowNs() {
    // CLOCK_MONOTONIC: the clock PoCL's profiling counters use, so host fallbacks and
    // device timestamps share one timeline there.
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// ---------------------------------------------------------------------------------------
// Fault injection: ZECL_FAULT="alloc:3,enqueue:5" fails the 3rd allocation and the 5th
// enqueue of the process ("suggest:N": the Nth zeKernelSuggestMaxCooperativeGroupCount answers
// ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, as a driver without cooperative kernels does). Parsed once.

namespace {

// What the parser ignores goes to stderr: a mistyped fault is seen, not silently never injected.
struct FaultPlan {
    std::array<uint64_t, kFaultNames.size()> failAt{};  // 0 = never
    std::array<std::atomic<uint64_t>, kFaultNames.size()> calls{};

    FaultPlan() {
        const char* env = std::getenv("ZECL_FAULT");
        if (env == nullptr) return;
        const FaultSchedule schedule = parseFaultSchedule(env);
        failAt = schedule.failAt;
        for (const std::string& problem : schedule.problems) std::fprintf(stderr, "zecl: %s\n", problem.c_str());
    }
};

FaultPlan& faultPlan() {
    static FaultPlan plan;
    return plan;
}

}  // namespace

bool faultNow(Fault kind) {
    FaultPlan& plan = faultPlan();
    size_t slot = size_t(kind);
    if (plan.failAt[slot] == 0) return false;
    return plan.calls[slot].fetch_add(1, std::memory_order_relaxed) + 1 == plan.failAt[slot];
}

// ---------------------------------------------------------------------------------------
// Discovery

namespace {

constexpr uint32_t kZeclVersion = (0u << 16) | (1u << 8) | 0u;  // 0.1.0

std::string platformString(cl_platform_id p, cl_platform_info what) {
    size_t n = 0;
    if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
    std::string s(n, '\0');
    clGetPlatformInfo(p, what, n, s.data(), nullptr);
    s.resize(std::strlen(s.c_str()));
    return s;
}

std::string deviceString(cl_device_id d, cl_device_info what) {
    size_t n = 0;
    if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
    std::string s(n, '\0');
    clGetDeviceInfo(d, what, n, s.data(), nullptr);
    s.resize(std::strlen(s.c_str()));
    return s;
}

template <class T>
T deviceValue(cl_device_id d, cl_device_info what, T fallback = T{}) {
    T v{};
    return clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) == CL_SUCCESS ? v : fallback;
}

uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

// "OpenCL 3.0 ..." → 300
uint32_t parseClVersion(const std::string& v) {
    unsigned major = 1, minor = 0;
    if (std::sscanf(v.c_str(), "OpenCL %u.%u", &major, &minor) != 2) return 120;
    return major * 100 + minor;
}

// Extension queries, kept as literals so no extension header is needed.
constexpr cl_device_info kHalfFpConfig = 0x1033;              // CL_DEVICE_HALF_FP_CONFIG (cl_khr_fp16)
constexpr cl_device_info kSubGroupSizesIntel = 0x4108;        // CL_DEVICE_SUB_GROUP_SIZES_INTEL
constexpr cl_device_info kWarpSizeNv = 0x4003;                // CL_DEVICE_WARP_SIZE_NV
constexpr cl_device_info kComputeCapabilityMajorNv = 0x4000;  // CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
constexpr cl_device_info kComputeCapabilityMinorNv = 0x4001;  // CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV
constexpr cl_device_info kRegistersPerBlockNv = 0x4002;       // CL_DEVICE_REGISTERS_PER_BLOCK_NV
constexpr cl_device_info kWavefrontWidthAmd = 0x4043;         // CL_DEVICE_WAVEFRONT_WIDTH_AMD
constexpr cl_device_info kPciBusIdNv = 0x4008;                // CL_DEVICE_PCI_BUS_ID_NV
constexpr cl_device_info kPciSlotIdNv = 0x4009;               // CL_DEVICE_PCI_SLOT_ID_NV
constexpr cl_device_info kPciDomainIdNv = 0x400A;             // CL_DEVICE_PCI_DOMAIN_ID_NV
constexpr cl_device_info kPciBusInfoKhr = 0x410F;             // CL_DEVICE_PCI_BUS_INFO_KHR

// The memory bus width in bits. OpenCL has no query for it, so it comes from what else
// knows: a CPU device's memory is the host's DRAM, whose channels are 64 bits wide (DDR3/4/5
// DIMMs, without ECC bits); the channel count is not visible without root, so 64 is the width
// of one channel, a lower bound. An NVIDIA GPU's width comes from NVML
// (nvmlDeviceGetMemoryBusWidth, dlopened), matched by PCI address. Otherwise 0: unknown.
uint32_t memoryBusWidth(cl_device_id id, cl_device_type type, const std::string& extensions) {
    if (type & CL_DEVICE_TYPE_CPU) return 64;
    unsigned domain = 0, bus = 0, slot = 0, function = 0;
    bool havePci = false;
    if (extensions.find("cl_khr_pci_bus_info") != std::string::npos) {
        struct {
            cl_uint domain, bus, device, function;
        } info{};
        if (clGetDeviceInfo(id, kPciBusInfoKhr, sizeof(info), &info, nullptr) == CL_SUCCESS) {
            domain = info.domain, bus = info.bus, slot = info.device, function = info.function;
            havePci = true;
        }
    } else if (extensions.find("cl_nv_device_attribute_query") != std::string::npos) {
        bus = deviceValue<cl_uint>(id, kPciBusIdNv);
        slot = deviceValue<cl_uint>(id, kPciSlotIdNv);
        domain = deviceValue<cl_uint>(id, kPciDomainIdNv);
        havePci = true;
    }
    if (!havePci || deviceValue<cl_uint>(id, CL_DEVICE_VENDOR_ID) != 0x10de) return 0;
    void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml) return 0;
    using Init = int (*)();
    using ByPci = int (*)(const char*, void**);
    using BusWidth = int (*)(void*, unsigned*);
    auto init = reinterpret_cast<Init>(dlsym(nvml, "nvmlInit_v2"));
    auto shutdown = reinterpret_cast<Init>(dlsym(nvml, "nvmlShutdown"));
    auto byPci = reinterpret_cast<ByPci>(dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2"));
    auto width = reinterpret_cast<BusWidth>(dlsym(nvml, "nvmlDeviceGetMemoryBusWidth"));
    unsigned bits = 0;
    if (init && shutdown && byPci && width && init() == 0) {
        char address[32];
        std::snprintf(address, sizeof(address), "%08x:%02x:%02x.%x", domain, bus, slot, function);
        void* handle = nullptr;
        if (byPci(address, &handle) != 0 || width(handle, &bits) != 0) bits = 0;
        shutdown();
    }
    dlclose(nvml);
    return bits;
}

// See Device::Residency. PoCL's pthread device (named "pthread-…" in 3.x, "cpu-…" from 4.0)
// starts one worker per compute unit (pthread_scheduler_init) and hands a kernel's groups out
// in chunks of ceil(remaining / workers) (get_wg_index_range): with at most `workers` groups
// every chunk is one group and every group its own thread; the OS preempts spinning threads,
// so a device-wide barrier among them completes. PoCL's "basic" and "tbb" devices give no
// such promise, nor does Intel's CPU runtime (TBB tasks).
Device::Residency residencyOf(const Driver& driver, const Device& d, const std::string& extensions) {
    if (d.type == ZE_DEVICE_TYPE_CPU) {
        bool pocl = driver.platformName.find("Portable Computing Language") != std::string::npos;
        bool pooled = d.name.rfind("pthread-", 0) == 0 || d.name.rfind("cpu-", 0) == 0;
        return pocl && pooled ? Device::Residency::ThreadPerGroup : Device::Residency::Single;
    }
    if (d.type != ZE_DEVICE_TYPE_GPU) return Device::Residency::Single;
    if (d.vendorId == 0x10DE && extensions.find("cl_nv_device_attribute_query") != std::string::npos)
        return Device::Residency::NvidiaSm;
    return Device::Residency::GpuCu;
}

std::unique_ptr<Device> describe(Driver* driver, cl_device_id id, uint32_t ordinal) {
    auto d = std::make_unique<Device>();
    d->driver = driver;
    d->cl = id;
    d->ordinal = ordinal;
    d->name = deviceString(id, CL_DEVICE_NAME);
    cl_device_type t = deviceValue<cl_device_type>(id, CL_DEVICE_TYPE);
    d->type = (t & CL_DEVICE_TYPE_CPU)           ? ZE_DEVICE_TYPE_CPU
              : (t & CL_DEVICE_TYPE_ACCELERATOR) ? ZE_DEVICE_TYPE_FPGA
                                                 : ZE_DEVICE_TYPE_GPU;
    d->vendorId = deviceValue<cl_uint>(id, CL_DEVICE_VENDOR_ID);
    d->clVersion = parseClVersion(deviceString(id, CL_DEVICE_VERSION));
    d->computeUnits = std::max<cl_uint>(1, deviceValue<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS));
    d->clockMHz = deviceValue<cl_uint>(id, CL_DEVICE_MAX_CLOCK_FREQUENCY);
    d->maxWorkGroupSize = std::max<size_t>(1, deviceValue<size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE));
    size_t items[3] = {1, 1, 1};
    clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(items), items, nullptr);
    d->maxWorkItemSizes = {items[0], items[1], items[2]};
    d->localMemSize = deviceValue<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
    d->globalMemSize = deviceValue<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
    d->maxAllocSize = deviceValue<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    d->globalCacheSize = deviceValue<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
    d->baseAddrAlign = std::max<cl_uint>(8, deviceValue<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
    d->svm = deviceValue<cl_device_svm_capabilities>(id, CL_DEVICE_SVM_CAPABILITIES);
    d->fp16 = deviceValue<cl_device_fp_config>(id, kHalfFpConfig);
    d->fp32 = deviceValue<cl_device_fp_config>(id, CL_DEVICE_SINGLE_FP_CONFIG);
    d->fp64 = deviceValue<cl_device_fp_config>(id, CL_DEVICE_DOUBLE_FP_CONFIG);
    std::string extensions = deviceString(id, CL_DEVICE_EXTENSIONS);
    if (extensions.find("cl_khr_fp16") == std::string::npos) d->fp16 = 0;
    d->int64Atomics = extensions.find("cl_khr_int64_base_atomics") != std::string::npos;
    if (d->clVersion >= 210) {
        std::string il = deviceString(id, CL_DEVICE_IL_VERSION);
        unsigned major = 0, minor = 0;
        size_t at = il.find("SPIR-V_");
        if (at != std::string::npos && std::sscanf(il.c_str() + at, "SPIR-V_%u.%u", &major, &minor) == 2) {
            d->ilSpirv = true;
            // Several versions may be listed; report the highest.
            for (size_t p = at; p != std::string::npos; p = il.find("SPIR-V_", p + 1)) {
                unsigned ma = 0, mi = 0;
                if (std::sscanf(il.c_str() + p, "SPIR-V_%u.%u", &ma, &mi) == 2 &&
                    ZE_MAKE_VERSION(ma, mi) > ZE_MAKE_VERSION(major, minor)) {
                    major = ma;
                    minor = mi;
                }
            }
            d->spirvVersion = ZE_MAKE_VERSION(major, minor);
        }
    }
    d->maxParameterSize = deviceValue<size_t>(id, CL_DEVICE_MAX_PARAMETER_SIZE);
    d->printfBufferSize = deviceValue<size_t>(id, CL_DEVICE_PRINTF_BUFFER_SIZE);
    // Sub-group sizes: Intel's extensions list them (CL_DEVICE_SUB_GROUP_SIZES_INTEL, from
    // cl_intel_subgroups or cl_intel_required_subgroup_size). Core OpenCL (2.1+, or 3.0 with
    // cl_khr_subgroups) lists none per device, only per kernel: subGroupProbe() asks a probe
    // kernel then. CL_DEVICE_MAX_NUM_SUB_GROUPS == 0 (PoCL 3.1, NVIDIA) means no sub-groups.
    d->subGroupSizesReason = "the device reports CL_DEVICE_MAX_NUM_SUB_GROUPS = 0 and no cl_intel_subgroups";
    if (extensions.find("cl_intel_subgroups") != std::string::npos ||
        extensions.find("cl_intel_required_subgroup_size") != std::string::npos) {
        size_t n = 0;
        if (clGetDeviceInfo(id, kSubGroupSizesIntel, 0, nullptr, &n) == CL_SUCCESS && n >= sizeof(size_t)) {
            std::vector<size_t> sizes(n / sizeof(size_t));
            clGetDeviceInfo(id, kSubGroupSizesIntel, n, sizes.data(), nullptr);
            for (size_t s : sizes)
                if (s > 0) d->subGroupSizes.push_back(uint32_t(s));
        }
        if (d->subGroupSizes.empty())
            d->subGroupSizesReason = "CL_DEVICE_SUB_GROUP_SIZES_INTEL failed or listed nothing";
    } else if (d->clVersion >= 210 && deviceValue<cl_uint>(id, CL_DEVICE_MAX_NUM_SUB_GROUPS) > 0) {
        d->subGroupProbe = true;
    }
    // SIMD width: the vendor's native width where an extension names it, otherwise the
    // float vector width OpenCL suggests.
    if (!d->subGroupSizes.empty())
        d->simdWidth = *std::max_element(d->subGroupSizes.begin(), d->subGroupSizes.end());
    else if (extensions.find("cl_nv_device_attribute_query") != std::string::npos)
        d->simdWidth = deviceValue<cl_uint>(id, kWarpSizeNv, 32);
    else if (extensions.find("cl_amd_device_attribute_query") != std::string::npos)
        d->simdWidth = deviceValue<cl_uint>(id, kWavefrontWidthAmd, 64);
    else
        d->simdWidth = std::max<cl_uint>(1, deviceValue<cl_uint>(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT));
    d->memoryBusWidth = memoryBusWidth(id, t, extensions);
    d->residency = residencyOf(*driver, *d, extensions);
    if (d->residency == Device::Residency::NvidiaSm) {
        d->registersPerSm = deviceValue<cl_uint>(id, kRegistersPerBlockNv, 0);
        d->computeCapabilityMajor = deviceValue<cl_uint>(id, kComputeCapabilityMajorNv, 0);
        d->sharedMemoryPerSm =
            nvidiaSharedMemoryPerSm(d->computeCapabilityMajor, deviceValue<cl_uint>(id, kComputeCapabilityMinorNv, 0));
    }
    d->timerResolutionNs = std::max<size_t>(1, deviceValue<size_t>(id, CL_DEVICE_PROFILING_TIMER_RESOLUTION));
    d->hostUnifiedMemory = deviceValue<cl_bool>(id, CL_DEVICE_HOST_UNIFIED_MEMORY) == CL_TRUE;
    d->ecc = deviceValue<cl_bool>(id, CL_DEVICE_ERROR_CORRECTION_SUPPORT) == CL_TRUE;
    // clCloneKernel is OpenCL 2.1; older platforms may have no dispatch entry for it.
    d->cloneWorks = d->clVersion >= 210;
    if (d->clVersion >= 210) {
        cl_ulong dev = 0, host = 0;
        d->hostTimer = clGetDeviceAndHostTimer(id, &dev, &host) == CL_SUCCESS && dev != 0;
    }
    uint64_t h1 = fnv1a(d->name, fnv1a(driver->platformName));
    uint64_t h2 = fnv1a(std::to_string(ordinal), h1 ^ 0x9e3779b97f4a7c15ull);
    std::memcpy(d->uuid.id, &h1, 8);
    std::memcpy(d->uuid.id + 8, &h2, 8);
    return d;
}

// Core OpenCL sub-groups have no device-wide size list; the sizes a kernel gets are per
// kernel (CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE). A trivial probe kernel, built once on
// first use, gives the size the compiler picks at the device's largest work-group.
void probeSubGroupSizes(Device* d) {
    if (!d->subGroupProbe) return;
    std::call_once(d->subGroupProbeOnce, [d] {
        d->subGroupSizesReason = "the sub-group probe kernel did not build or answer";
        cl_int e = CL_SUCCESS;
        cl_context ctx = clCreateContext(nullptr, 1, &d->cl, nullptr, nullptr, &e);
        if (e != CL_SUCCESS) return;
        const char* src = "kernel void zecl_sub_group_probe(global uint* o) { o[0] = get_sub_group_size(); }";
        cl_program prog = clCreateProgramWithSource(ctx, 1, &src, nullptr, &e);
        if (e == CL_SUCCESS && clBuildProgram(prog, 1, &d->cl, "-cl-std=CL3.0", nullptr, nullptr) != CL_SUCCESS)
            e = clBuildProgram(prog, 1, &d->cl, "-cl-std=CL2.0", nullptr, nullptr);
        cl_kernel k = e == CL_SUCCESS ? clCreateKernel(prog, "zecl_sub_group_probe", &e) : nullptr;
        size_t local[3] = {d->maxWorkGroupSize, 1, 1}, size = 0;
        if (k &&
            clGetKernelSubGroupInfo(k, d->cl, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, sizeof(local), local,
                                    sizeof(size), &size, nullptr) == CL_SUCCESS &&
            size > 0)
            d->subGroupSizes.push_back(uint32_t(size));
        if (k) clReleaseKernel(k);
        if (prog) clReleaseProgram(prog);
        clReleaseContext(ctx);
    });
}

struct Discovery {
    std::mutex mutex;
    bool done = false;
    ze_result_t result = ZE_RESULT_ERROR_UNINITIALIZED;
    std::vector<std::unique_ptr<Driver>> drivers;
};

Discovery& discovery() {
    static Discovery* d = new Discovery;  // never destroyed: live handles point into it
    return *d;
}

void discover(ze_init_flags_t flags) {
    Discovery& disc = discovery();
    // NVIDIA's OpenCL keeps compiled kernels in its JIT cache (~/.nv/ComputeCache); a build it
    // serves from there runs no ptxas, so the build log has no register counts and
    // zeKernelSuggestMaxCooperativeGroupCount falls back to CL_KERNEL_WORK_GROUP_SIZE, which a
    // kernel's reqd_work_group_size pins (one_launch: 132 groups where ptxas' count gives 264).
    // The cache is off for this process unless the application set CUDA_CACHE_DISABLE itself;
    // read when NVIDIA's platform starts, so before the first OpenCL call.
    setenv("CUDA_CACHE_DISABLE", "1", 0);
    cl_uint np = 0;
    if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return;
    std::vector<cl_platform_id> platforms(np);
    clGetPlatformIDs(np, platforms.data(), nullptr);
    // ZECL_PLATFORM=<substring> keeps only matching platforms (e.g. to hide a GPU that a
    // native L0 driver already exposes).
    const char* only = std::getenv("ZECL_PLATFORM");
    for (cl_platform_id p : platforms) {
        auto drv = std::make_unique<Driver>();
        drv->platform = p;
        drv->platformName = platformString(p, CL_PLATFORM_NAME);
        drv->platformVersion = platformString(p, CL_PLATFORM_VERSION);
        if (only && *only && drv->platformName.find(only) == std::string::npos) continue;
        cl_uint nd = 0;
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
        std::vector<cl_device_id> ids(nd);
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ids.data(), nullptr);
        for (cl_device_id id : ids) {
            // zecl's memory model is SVM; a device without coarse-grained buffer SVM cannot
            // hold USM allocations, so it is not exposed.
            auto svm = deviceValue<cl_device_svm_capabilities>(id, CL_DEVICE_SVM_CAPABILITIES);
            if (!(svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) continue;
            auto dev = describe(drv.get(), id, uint32_t(drv->devices.size()));
            if ((flags & ZE_INIT_FLAG_GPU_ONLY) && !(flags & ZE_INIT_FLAG_VPU_ONLY) && dev->type != ZE_DEVICE_TYPE_GPU)
                continue;
            if ((flags & ZE_INIT_FLAG_VPU_ONLY) && !(flags & ZE_INIT_FLAG_GPU_ONLY)) continue;
            dev->ordinal = uint32_t(drv->devices.size());
            drv->devices.push_back(std::move(dev));
        }
        if (drv->devices.empty()) continue;
        uint64_t h = fnv1a(drv->platformName + "|" + drv->platformVersion);
        std::memcpy(drv->uuid.id, "zecl", 4);
        std::memcpy(drv->uuid.id + 4, &h, 8);
        uint32_t index = uint32_t(disc.drivers.size());
        std::memcpy(drv->uuid.id + 12, &index, 4);
        // High 16 bits: zecl's version; low 16: the OpenCL platform's version string, so
        // caches keyed by driverVersion change when either does.
        drv->driverVersion = (kZeclVersion << 16) | uint32_t(fnv1a(drv->platformVersion) & 0xffffu);
        publish(drv.get());
        for (auto& dev : drv->devices) publish(dev.get());
        disc.drivers.push_back(std::move(drv));
    }
}

// Shared count/array protocol of the zeXxxGet calls.
template <class H, class T>
ze_result_t fillHandles(uint32_t* pCount, H* out, const std::vector<std::unique_ptr<T>>& items) {
    if (pCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint32_t n = uint32_t(items.size());
    if (*pCount == 0 || *pCount > n) *pCount = n;
    if (out != nullptr)
        for (uint32_t i = 0; i < *pCount; ++i) out[i] = reinterpret_cast<H>(items[i].get());
    return ZE_RESULT_SUCCESS;
}

void copyName(char* dst, size_t cap, const std::string& s) {
    std::memset(dst, 0, cap);
    std::memcpy(dst, s.data(), std::min(s.size(), cap - 1));
}

ze_device_fp_flags_t fpFlags(cl_device_fp_config c) {
    ze_device_fp_flags_t f = 0;
    if (c & CL_FP_DENORM) f |= ZE_DEVICE_FP_FLAG_DENORM;
    if (c & CL_FP_INF_NAN) f |= ZE_DEVICE_FP_FLAG_INF_NAN;
    if (c & CL_FP_ROUND_TO_NEAREST) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST;
    if (c & CL_FP_ROUND_TO_ZERO) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO;
    if (c & CL_FP_ROUND_TO_INF) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_INF;
    if (c & CL_FP_FMA) f |= ZE_DEVICE_FP_FLAG_FMA;
    if (c & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) f |= ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT;
    if (c & CL_FP_SOFT_FLOAT) f |= ZE_DEVICE_FP_FLAG_SOFT_FLOAT;
    return f;
}

}  // namespace

// The UUID zecl reports in nativeKernelSupported: modules in ZE_MODULE_FORMAT_NATIVE are
// source bundles, the same for every zecl device.
constexpr ze_native_kernel_uuid_t kNativeKernelUuid = {
    {'z', 'e', 'c', 'l', '-', 's', 'r', 'c', '-', 'b', 'u', 'n', 'd', 'l', 'e', '1'}};

}  // namespace zecl

namespace zecl::api {

ze_result_t Init(ze_init_flags_t flags) {
    // The loader calls this twice per application zeInit (and applications may call
    // zeInit repeatedly): the first call that finds devices decides; a call that found
    // none (e.g. ZE_INIT_FLAG_GPU_ONLY on a CPU-only machine) may be retried.
    Discovery& disc = discovery();
    std::lock_guard lock(disc.mutex);
    if (!disc.done) {
        discover(flags);
        disc.done = !disc.drivers.empty();
        disc.result = disc.done ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_UNINITIALIZED;
    }
    return disc.result;
}

namespace {

// The count protocol of a query with one entry: a size query (count 0 or no array) learns
// 1; otherwise the caller fills the entry. Either way the count becomes 1.
bool fillsTheOneEntry(uint32_t* pCount, const void* entries) {
    const bool fill = *pCount != 0 && entries != nullptr;
    *pCount = 1;
    return fill;
}

}  // namespace

ze_result_t DriverGet(uint32_t* pCount, ze_driver_handle_t* phDrivers) {
    Discovery& disc = discovery();
    std::lock_guard lock(disc.mutex);
    if (!disc.done) return ZE_RESULT_ERROR_UNINITIALIZED;
    return fillHandles(pCount, phDrivers, disc.drivers);
}

ze_result_t DriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t* version) {
    ze_result_t err;
    if (!lookupQuery<Driver>(hDriver, version, err)) return err;
    *version = ZE_API_VERSION_1_4;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DriverGetProperties(ze_driver_handle_t hDriver, ze_driver_properties_t* p) {
    ze_result_t err;
    Driver* drv = lookupQuery<Driver>(hDriver, p, err);
    if (!drv) return err;
    p->uuid = drv->uuid;
    p->driverVersion = drv->driverVersion;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DriverGetIpcProperties(ze_driver_handle_t hDriver, ze_driver_ipc_properties_t* p) {
    ze_result_t err;
    if (!lookupQuery<Driver>(hDriver, p, err)) return err;
    p->flags = 0;  // no IPC over OpenCL SVM
    return ZE_RESULT_SUCCESS;
}

ze_result_t DriverGetExtensionProperties(ze_driver_handle_t hDriver, uint32_t* pCount,
                                         ze_driver_extension_properties_t* pProperties) {
    ze_result_t err;
    if (!lookupQuery<Driver>(hDriver, pCount, err)) return err;
    // The extensions zecl implements in full.
    static const ze_driver_extension_properties_t kExtensions[] = {
        {ZE_GLOBAL_OFFSET_EXP_NAME, ZE_GLOBAL_OFFSET_EXP_VERSION_CURRENT},
    };
    const uint32_t n = uint32_t(std::size(kExtensions));
    if (*pCount == 0 || pProperties == nullptr) {
        *pCount = n;
        return ZE_RESULT_SUCCESS;
    }
    *pCount = std::min(*pCount, n);
    for (uint32_t i = 0; i < *pCount; ++i) pProperties[i] = kExtensions[i];
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGet(ze_driver_handle_t hDriver, uint32_t* pCount, ze_device_handle_t* phDevices) {
    ze_result_t err;
    Driver* drv = lookup<Driver>(hDriver, err);
    if (!drv) return err;
    return fillHandles(pCount, phDevices, drv->devices);
}

ze_result_t DeviceGetSubDevices(ze_device_handle_t hDevice, uint32_t* pCount, ze_device_handle_t*) {
    ze_result_t err;
    if (!lookupQuery<Device>(hDevice, pCount, err)) return err;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t* p) {
    ze_result_t err;
    Device* d = lookupQuery<Device>(hDevice, p, err);
    if (!d) return err;
    p->type = d->type;
    p->vendorId = d->vendorId;
    p->deviceId = 0;  // OpenCL has no portable PCI device id
    p->flags = 0;
    if (d->hostUnifiedMemory) p->flags |= ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;
    if (d->ecc) p->flags |= ZE_DEVICE_PROPERTY_FLAG_ECC;
    p->subdeviceId = 0;
    p->coreClockRate = d->clockMHz;
    p->maxMemAllocSize = d->maxAllocSize;
    p->maxHardwareContexts = 1;
    p->maxCommandQueuePriority = 0;
    // Compute units: one slice of CL_DEVICE_MAX_COMPUTE_UNITS sub-slices of one EU each,
    // so numSlices * numSubslicesPerSlice * numEUsPerSubslice = compute units; the EU's
    // SIMD width is the device's native width (see describe()).
    p->numThreadsPerEU = 1;
    p->physicalEUSimdWidth = d->simdWidth;
    p->numEUsPerSubslice = 1;
    p->numSubslicesPerSlice = d->computeUnits;
    p->numSlices = 1;
    // Timestamps are in ticks of the OpenCL profiling timer resolution.
    if (p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2)
        p->timerResolution = 1000000000ull / d->timerResolutionNs;  // cycles per second
    else
        p->timerResolution = d->timerResolutionNs;  // ns per tick
    p->timestampValidBits = 64;
    p->kernelTimestampValidBits = 64;
    p->uuid = d->uuid;
    copyName(p->name, ZE_MAX_DEVICE_NAME, d->name);
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetComputeProperties(ze_device_handle_t hDevice, ze_device_compute_properties_t* p) {
    ze_result_t err;
    Device* d = lookupQuery<Device>(hDevice, p, err);
    if (!d) return err;
    auto clamp32 = [](uint64_t v) { return uint32_t(std::min<uint64_t>(v, UINT32_MAX)); };
    p->maxTotalGroupSize = clamp32(d->maxWorkGroupSize);
    p->maxGroupSizeX = clamp32(std::min(d->maxWorkItemSizes[0], d->maxWorkGroupSize));
    p->maxGroupSizeY = clamp32(std::min(d->maxWorkItemSizes[1], d->maxWorkGroupSize));
    p->maxGroupSizeZ = clamp32(std::min(d->maxWorkItemSizes[2], d->maxWorkGroupSize));
    // OpenCL bounds only the global size (size_t); group counts are bounded by uint32.
    p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = UINT32_MAX;
    p->maxSharedLocalMemory = clamp32(d->localMemSize);
    probeSubGroupSizes(d);
    p->numSubGroupSizes = uint32_t(std::min<size_t>(d->subGroupSizes.size(), ZE_SUBGROUPSIZE_COUNT));
    std::memset(p->subGroupSizes, 0, sizeof(p->subGroupSizes));
    for (uint32_t i = 0; i < p->numSubGroupSizes; ++i) p->subGroupSizes[i] = d->subGroupSizes[i];
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetModuleProperties(ze_device_handle_t hDevice, ze_device_module_properties_t* p) {
    ze_result_t err;
    Device* d = lookupQuery<Device>(hDevice, p, err);
    if (!d) return err;
    p->spirvVersionSupported = d->ilSpirv ? d->spirvVersion : 0;
    p->flags = 0;
    if (d->fp16) p->flags |= ZE_DEVICE_MODULE_FLAG_FP16;
    if (d->fp64) p->flags |= ZE_DEVICE_MODULE_FLAG_FP64;
    if (d->int64Atomics) p->flags |= ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
    p->fp16flags = fpFlags(d->fp16);
    p->fp32flags = fpFlags(d->fp32);
    p->fp64flags = fpFlags(d->fp64);
    p->maxArgumentsSize = uint32_t(std::min<size_t>(d->maxParameterSize, UINT32_MAX));
    p->printfBufferSize = uint32_t(std::min<size_t>(d->printfBufferSize, UINT32_MAX));
    p->nativeKernelSupported = kNativeKernelUuid;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetCommandQueueGroupProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                 ze_command_queue_group_properties_t* p) {
    ze_result_t err;
    if (!lookupQuery<Device>(hDevice, pCount, err)) return err;
    if (!fillsTheOneEntry(pCount, p)) return ZE_RESULT_SUCCESS;
    // One group: every OpenCL queue runs kernels and copies. Queues are cheap OpenCL
    // queues, so many may be created.
    // Cooperative kernels everywhere: zeKernelSuggestMaxCooperativeGroupCount answers what
    // the device keeps resident (one group where zecl can promise no more).
    p->flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY |
               ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS;
    p->maxMemoryFillPatternSize = 128;
    p->numQueues = 64;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetMemoryProperties(ze_device_handle_t hDevice, uint32_t* pCount, ze_device_memory_properties_t* p) {
    ze_result_t err;
    Device* d = lookupQuery<Device>(hDevice, pCount, err);
    if (!d) return err;
    if (!fillsTheOneEntry(pCount, p)) return ZE_RESULT_SUCCESS;
    p->flags = 0;
    p->maxClockRate = 0;  // OpenCL does not report memory clocks
    p->maxBusWidth = d->memoryBusWidth;
    p->totalSize = d->globalMemSize;
    copyName(p->name, ZE_MAX_DEVICE_NAME, "global");
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetMemoryAccessProperties(ze_device_handle_t hDevice, ze_device_memory_access_properties_t* p) {
    ze_result_t err;
    Device* d = lookupQuery<Device>(hDevice, p, err);
    if (!d) return err;
    const ze_memory_access_cap_flags_t rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW;
    const ze_memory_access_cap_flags_t atomic =
        (d->svm & CL_DEVICE_SVM_ATOMICS) ? ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT |
                                               ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC
                                         : 0;
    bool fine = d->svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER;
    p->hostAllocCapabilities = rw | (fine ? atomic : 0);
    p->deviceAllocCapabilities = rw | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC;
    p->sharedSingleDeviceAllocCapabilities = fine ? rw | atomic : 0;
    p->sharedCrossDeviceAllocCapabilities = 0;
    p->sharedSystemAllocCapabilities = (d->svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) ? rw : 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetCacheProperties(ze_device_handle_t hDevice, uint32_t* pCount, ze_device_cache_properties_t* p) {
    ze_result_t err;
    Device* d = lookupQuery<Device>(hDevice, pCount, err);
    if (!d) return err;
    if (!fillsTheOneEntry(pCount, p)) return ZE_RESULT_SUCCESS;
    p->flags = 0;
    p->cacheSize = d->globalCacheSize;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetImageProperties(ze_device_handle_t hDevice, ze_device_image_properties_t* p) {
    ze_result_t err;
    if (!lookupQuery<Device>(hDevice, p, err)) return err;
    // zecl exposes no images.
    p->maxImageDims1D = p->maxImageDims2D = p->maxImageDims3D = 0;
    p->maxImageBufferSize = 0;
    p->maxImageArraySlices = p->maxSamplers = p->maxReadImageArgs = p->maxWriteImageArgs = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetExternalMemoryProperties(ze_device_handle_t hDevice, ze_device_external_memory_properties_t* p) {
    ze_result_t err;
    if (!lookupQuery<Device>(hDevice, p, err)) return err;
    p->memoryAllocationImportTypes = p->memoryAllocationExportTypes = 0;
    p->imageImportTypes = p->imageExportTypes = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetP2PProperties(ze_device_handle_t hDevice, ze_device_handle_t hPeer,
                                   ze_device_p2p_properties_t* p) {
    ze_result_t err;
    if (!lookup<Device>(hDevice, err) || !lookup<Device>(hPeer, err)) return err;
    if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->flags = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceCanAccessPeer(ze_device_handle_t hDevice, ze_device_handle_t hPeer, ze_bool_t* value) {
    ze_result_t err;
    Device* a = lookup<Device>(hDevice, err);
    Device* b = a ? lookup<Device>(hPeer, err) : nullptr;
    if (!a || !b) return err;
    if (value == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *value = a == b;  // SVM pointers are not shared between OpenCL devices' contexts
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetStatus(ze_device_handle_t hDevice) {
    ze_result_t err;
    if (!lookup<Device>(hDevice, err)) return err;
    return ZE_RESULT_SUCCESS;
}

ze_result_t DeviceGetGlobalTimestamps(ze_device_handle_t hDevice, uint64_t* hostTimestamp, uint64_t* deviceTimestamp) {
    ze_result_t err;
    Device* d = lookup<Device>(hDevice, err);
    if (!d) return err;
    if (hostTimestamp == nullptr || deviceTimestamp == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    cl_ulong dev = 0, host = 0;
    if (d->hostTimer && clGetDeviceAndHostTimer(d->cl, &dev, &host) == CL_SUCCESS) {
        *hostTimestamp = host;
        *deviceTimestamp = dev / d->timerResolutionNs;
        return ZE_RESULT_SUCCESS;
    }
    // No device/host timer pair: the host monotonic clock stands in for both.
    uint64_t now = hostNowNs();
    *hostTimestamp = now;
    *deviceTimestamp = now / d->timerResolutionNs;
    return ZE_RESULT_SUCCESS;
}

}  // namespace zecl::api
