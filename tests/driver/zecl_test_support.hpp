// Shared by the zecl driver tests (one test file per driver source file, one executable):
// plain ze_api.h calls through the real Level Zero loader, values checked against what
// OpenCL reports for the same devices.
#pragma once

#include <CL/cl.h>
#include <gtest/gtest.h>
#include <ze_api.h>
#include <zecl/source_bundle.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace zecl_test {

#define ZE_OK(expr) ASSERT_EQ(ZE_RESULT_SUCCESS, (expr)) << #expr

inline const char* const kKernels = R"CL(
kernel void write_gid(global uint *out) { out[get_global_id(0)] = (uint)get_global_id(0); }

kernel void increment(global uint *counter) { counter[0] += 1u; }

kernel void add_value(global uint *data, uint value) { data[get_global_id(0)] += value; }

kernel void add_wide(global ulong *data, ulong value) { data[get_global_id(0)] += value; }

kernel void two_slm(global uint *out, local uint *a, local uint *b) {
    a[0] = 1u;
    b[0] = 2u;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = a[0] + b[0];
}

kernel void slm_sum(global const uint *in, global uint *out, local uint *scratch) {
    size_t l = get_local_id(0);
    scratch[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (l < s)
            scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        out[get_group_id(0)] = scratch[0];
}

__attribute__((reqd_work_group_size(4, 1, 1)))
kernel void fixed4(global uint *out) { out[get_global_id(0)] = (uint)get_local_size(0); }

__attribute__((work_group_size_hint(1, 1, 1)))
kernel void hinted(global uint *out) { out[get_global_id(0)] = 1u; }
)CL";

inline std::vector<uint8_t> bundle(const std::string& source, const std::string& options = "-cl-std=CL1.2") {
    return zecl::makeSourceBundle(options, source);
}

inline bool isZeclDriver(ze_driver_handle_t d) {
    ze_driver_properties_t p{ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
    return zeDriverGetProperties(d, &p) == ZE_RESULT_SUCCESS && std::memcmp(p.uuid.id, "zecl", 4) == 0;
}

// zeModuleCreate of a source bundle (ZE_MODULE_FORMAT_NATIVE), no build log.
inline ze_result_t createModule(ze_context_handle_t ctx, ze_device_handle_t dev, const std::vector<uint8_t>& input,
                                ze_module_handle_t* module) {
    ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC};
    md.format = ZE_MODULE_FORMAT_NATIVE;
    md.inputSize = input.size();
    md.pInputModule = input.data();
    return zeModuleCreate(ctx, dev, &md, module, nullptr);
}

// The process-wide zecl driver, its devices and one context; modules built on demand.
struct Zecl {
    ze_driver_handle_t driver = nullptr;
    std::vector<ze_device_handle_t> devices;
    ze_context_handle_t context = nullptr;
    std::vector<ze_module_handle_t> modules;  // kKernels, per device (lazy)

    static Zecl& get() {
        static Zecl z;
        return z;
    }

    Zecl() {
        if (zeInit(0) != ZE_RESULT_SUCCESS) return;
        uint32_t n = 0;
        zeDriverGet(&n, nullptr);
        std::vector<ze_driver_handle_t> drivers(n);
        zeDriverGet(&n, drivers.data());
        for (auto d : drivers)
            if (isZeclDriver(d)) {
                driver = d;
                break;
            }
        if (!driver) return;
        uint32_t nd = 0;
        zeDeviceGet(driver, &nd, nullptr);
        devices.resize(nd);
        zeDeviceGet(driver, &nd, devices.data());
        ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC};
        zeContextCreate(driver, &cd, &context);
        modules.assign(nd, nullptr);
    }

    ze_module_handle_t module(size_t dev = 0) {
        if (!modules[dev]) createModule(context, devices[dev], bundle(kKernels), &modules[dev]);
        return modules[dev];
    }
};

// OpenCL's view of zecl's first driver: the first platform with devices that ZECL_PLATFORM
// (a name substring, as zecl reads it) keeps.
inline std::vector<cl_device_id> clDevices() {
    cl_uint np = 0;
    clGetPlatformIDs(0, nullptr, &np);
    std::vector<cl_platform_id> ps(np);
    clGetPlatformIDs(np, ps.data(), nullptr);
    const char* only = std::getenv("ZECL_PLATFORM");
    for (auto p : ps) {
        if (only && *only) {
            char name[256] = {};
            clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof(name) - 1, name, nullptr);
            if (std::string(name).find(only) == std::string::npos) continue;
        }
        cl_uint nd = 0;
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
        std::vector<cl_device_id> ds(nd);
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
        return ds;
    }
    return {};
}

template <class T>
inline T clInfo(cl_device_id d, cl_device_info what) {
    T v{};
    clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
    return v;
}

class ZeclTest : public ::testing::Test {
protected:
    void SetUp() override {
        z = &Zecl::get();
        ASSERT_NE(z->driver, nullptr) << "zecl driver not found: set ZE_ENABLE_ALT_DRIVERS to libze_zecl.so";
        ASSERT_FALSE(z->devices.empty());
        ASSERT_NE(z->context, nullptr);
        dev = z->devices[0];
    }

    void* deviceAlloc(size_t size, ze_device_handle_t d = nullptr) {
        ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
        void* p = nullptr;
        EXPECT_EQ(ZE_RESULT_SUCCESS, zeMemAllocDevice(z->context, &desc, size, 0, d ? d : dev, &p));
        return p;
    }

    ze_command_list_handle_t immediate(ze_command_queue_mode_t mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                       ze_device_handle_t d = nullptr) {
        ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
        qd.mode = mode;
        ze_command_list_handle_t l = nullptr;
        EXPECT_EQ(ZE_RESULT_SUCCESS, zeCommandListCreateImmediate(z->context, d ? d : dev, &qd, &l));
        return l;
    }

    ze_kernel_handle_t kernel(const char* name, size_t devIndex = 0) {
        ze_module_handle_t m = z->module(devIndex);
        EXPECT_NE(m, nullptr);
        ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
        kd.pKernelName = name;
        ze_kernel_handle_t k = nullptr;
        EXPECT_EQ(ZE_RESULT_SUCCESS, zeKernelCreate(m, &kd, &k));
        return k;
    }

    // Copies `bytes` from device memory to the host (blocking).
    template <class T>
    std::vector<T> download(const void* src, size_t count) {
        std::vector<T> out(count);
        auto l = immediate(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
        EXPECT_EQ(ZE_RESULT_SUCCESS,
                  zeCommandListAppendMemoryCopy(l, out.data(), src, count * sizeof(T), nullptr, 0, nullptr));
        zeCommandListDestroy(l);
        return out;
    }

    template <class T>
    void upload(void* dst, const std::vector<T>& v) {
        auto l = immediate(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
        EXPECT_EQ(ZE_RESULT_SUCCESS,
                  zeCommandListAppendMemoryCopy(l, dst, v.data(), v.size() * sizeof(T), nullptr, 0, nullptr));
        zeCommandListDestroy(l);
    }

    // A pool of `count` events with `flags`, over the test's device when `onDevice` (else over
    // every device of the context), and its events at indices 0..count-1.
    struct Events {
        ze_event_pool_handle_t pool = nullptr;
        std::vector<ze_event_handle_t> events;
    };
    Events makeEvents(uint32_t count, ze_event_pool_flags_t flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                      bool onDevice = false) {
        ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC};
        pd.flags = flags;
        pd.count = count;
        Events e;
        EXPECT_EQ(ZE_RESULT_SUCCESS,
                  zeEventPoolCreate(z->context, &pd, onDevice ? 1 : 0, onDevice ? &dev : nullptr, &e.pool));
        e.events.assign(count, nullptr);
        for (uint32_t i = 0; i < count; ++i) {
            ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC};
            ed.index = i;
            EXPECT_EQ(ZE_RESULT_SUCCESS, zeEventCreate(e.pool, &ed, &e.events[i]));
        }
        return e;
    }

    Zecl* z = nullptr;
    ze_device_handle_t dev = nullptr;
};

struct QueueAndList {
    ze_command_queue_handle_t queue = nullptr;
    ze_command_list_handle_t list = nullptr;
};

inline QueueAndList makeQueueAndList(ze_context_handle_t ctx, ze_device_handle_t dev) {
    QueueAndList ql;
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
    EXPECT_EQ(ZE_RESULT_SUCCESS, zeCommandQueueCreate(ctx, dev, &qd, &ql.queue));
    ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
    EXPECT_EQ(ZE_RESULT_SUCCESS, zeCommandListCreate(ctx, dev, &ld, &ql.list));
    return ql;
}

inline bool faultIs(const char* kind) {
    const char* f = std::getenv("ZECL_FAULT");
    return f && std::string(f).find(kind) != std::string::npos;
}

// OpenCL's device extension string.
// zeModuleCreate of `input` as `format` (with `constants`); `log` gets the build log as
// zeModuleBuildLogGetString gives it (its size includes the NUL), and the log is destroyed.
inline ze_result_t createModuleWithLog(ze_context_handle_t ctx, ze_device_handle_t dev, ze_module_format_t format,
                                       const std::vector<uint8_t>& input, ze_module_handle_t* module, std::string& log,
                                       const ze_module_constants_t* constants = nullptr) {
    ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC};
    md.format = format;
    md.inputSize = input.size();
    md.pInputModule = input.data();
    md.pConstants = constants;
    ze_module_build_log_handle_t h = nullptr;
    const ze_result_t r = zeModuleCreate(ctx, dev, &md, module, &h);
    size_t size = 0;
    EXPECT_EQ(zeModuleBuildLogGetString(h, &size, nullptr), ZE_RESULT_SUCCESS);
    log.assign(size, '\0');
    EXPECT_EQ(zeModuleBuildLogGetString(h, &size, log.data()), ZE_RESULT_SUCCESS);
    EXPECT_EQ(log.size(), size);
    EXPECT_EQ(zeModuleBuildLogDestroy(h), ZE_RESULT_SUCCESS);
    return r;
}

inline std::string clExtensions(cl_device_id d) {
    size_t n = 0;
    clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, nullptr, &n);
    std::string s(n, '\0');
    if (n) clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, n, s.data(), nullptr);
    return s;
}

}  // namespace zecl_test
