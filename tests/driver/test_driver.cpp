// zecl driver tests of driver/src/driver.cpp: driver and device discovery, properties (per OpenCL device kind),
// timestamps.
#include "zecl_test_support.hpp"

namespace zecl_test {
namespace {

TEST_F(ZeclTest, GivenZecl_WhenDriverQueried_ThenApiVersionUuidAndVersionAreReported) {
    ze_api_version_t v{};
    ZE_OK(zeDriverGetApiVersion(z->driver, &v));
    EXPECT_EQ(v, ZE_API_VERSION_1_4);
    ze_driver_properties_t p{ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
    ZE_OK(zeDriverGetProperties(z->driver, &p));
    EXPECT_EQ(std::memcmp(p.uuid.id, "zecl", 4), 0);
    EXPECT_NE(p.driverVersion, 0u);
    ze_driver_ipc_properties_t ipc{ZE_STRUCTURE_TYPE_DRIVER_IPC_PROPERTIES};
    ZE_OK(zeDriverGetIpcProperties(z->driver, &ipc));
    EXPECT_EQ(ipc.flags, 0u);
    uint32_t n = 7;
    ZE_OK(zeDriverGetExtensionProperties(z->driver, &n, nullptr));
    ASSERT_EQ(n, 1u);  // the global offset extension, the one zecl implements in full
    ze_driver_extension_properties_t ext{};
    ZE_OK(zeDriverGetExtensionProperties(z->driver, &n, &ext));
    EXPECT_STREQ(ext.name, ZE_GLOBAL_OFFSET_EXP_NAME);
    EXPECT_EQ(ext.version, uint32_t(ZE_GLOBAL_OFFSET_EXP_VERSION_CURRENT));
}

// NVIDIA's JIT cache would serve builds without ptxas' register counts (the cooperative count):
// zecl turns it off for its process before its first OpenCL call (unless already set).
TEST_F(ZeclTest, GivenZeclInitialised_ThenNvidiasJitCacheIsOff) {
    const char* v = std::getenv("CUDA_CACHE_DISABLE");
    ASSERT_NE(v, nullptr) << "zecl did not set CUDA_CACHE_DISABLE";
    EXPECT_STREQ(v, "1");  // ctest's environment does not set it
}

TEST_F(ZeclTest, GivenPoclDevices_WhenEnumerated_ThenOneZeDevicePerOpenClDevice) {
    auto cl = clDevices();
    EXPECT_EQ(z->devices.size(), cl.size());
    if (const char* expect = std::getenv("ZECL_TEST_EXPECT_DEVICES")) {
        EXPECT_EQ(z->devices.size(), size_t(std::atoi(expect)));
    }
    uint32_t sub = 5;
    ZE_OK(zeDeviceGetSubDevices(dev, &sub, nullptr));
    EXPECT_EQ(sub, 0u);
}

TEST_F(ZeclTest, GivenDevice_WhenPropertiesQueried_ThenTheyMatchOpenCl) {
    auto cl = clDevices();
    ASSERT_FALSE(cl.empty());
    ze_device_properties_t p{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ZE_OK(zeDeviceGetProperties(dev, &p));
    char name[256] = {};
    clGetDeviceInfo(cl[0], CL_DEVICE_NAME, sizeof(name), name, nullptr);
    EXPECT_STREQ(p.name, name);
    auto type = clInfo<cl_device_type>(cl[0], CL_DEVICE_TYPE);
    EXPECT_EQ(p.type, (type & CL_DEVICE_TYPE_CPU) ? ZE_DEVICE_TYPE_CPU : ZE_DEVICE_TYPE_GPU);
    EXPECT_EQ(p.vendorId, clInfo<cl_uint>(cl[0], CL_DEVICE_VENDOR_ID));
    EXPECT_EQ(uint64_t(p.numSlices) * p.numSubslicesPerSlice * p.numEUsPerSubslice,
              clInfo<cl_uint>(cl[0], CL_DEVICE_MAX_COMPUTE_UNITS));
    EXPECT_EQ(p.maxMemAllocSize, clInfo<cl_ulong>(cl[0], CL_DEVICE_MAX_MEM_ALLOC_SIZE));
    EXPECT_EQ(p.timerResolution, std::max<size_t>(1, clInfo<size_t>(cl[0], CL_DEVICE_PROFILING_TIMER_RESOLUTION)));
    EXPECT_EQ(p.timestampValidBits, 64u);
    EXPECT_EQ(p.kernelTimestampValidBits, 64u);
    EXPECT_GT(p.physicalEUSimdWidth, 0u);

    ze_device_properties_t p12{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2};
    ZE_OK(zeDeviceGetProperties(dev, &p12));
    EXPECT_EQ(p12.timerResolution, 1000000000ull / p.timerResolution);  // cycles per second
}

TEST_F(ZeclTest, GivenDevice_WhenComputeAndMemoryPropertiesQueried_ThenTheyMatchOpenCl) {
    auto cl = clDevices();
    ze_device_compute_properties_t c{ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    ZE_OK(zeDeviceGetComputeProperties(dev, &c));
    EXPECT_EQ(c.maxTotalGroupSize, clInfo<size_t>(cl[0], CL_DEVICE_MAX_WORK_GROUP_SIZE));
    EXPECT_EQ(c.maxSharedLocalMemory, clInfo<cl_ulong>(cl[0], CL_DEVICE_LOCAL_MEM_SIZE));
    EXPECT_GE(c.maxGroupSizeX, 1u);
    EXPECT_LE(c.maxGroupSizeX, c.maxTotalGroupSize);
    EXPECT_GT(c.maxGroupCountX, 0u);

    uint32_t n = 0;
    ZE_OK(zeDeviceGetMemoryProperties(dev, &n, nullptr));
    ASSERT_EQ(n, 1u);
    ze_device_memory_properties_t m{ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
    ZE_OK(zeDeviceGetMemoryProperties(dev, &n, &m));
    EXPECT_EQ(m.totalSize, clInfo<cl_ulong>(cl[0], CL_DEVICE_GLOBAL_MEM_SIZE));

    n = 0;
    ZE_OK(zeDeviceGetCommandQueueGroupProperties(dev, &n, nullptr));
    ASSERT_EQ(n, 1u);
    ze_command_queue_group_properties_t g{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
    ZE_OK(zeDeviceGetCommandQueueGroupProperties(dev, &n, &g));
    EXPECT_TRUE(g.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE);
    EXPECT_TRUE(g.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY);
    EXPECT_GT(g.numQueues, 1u);

    n = 0;
    ZE_OK(zeDeviceGetCacheProperties(dev, &n, nullptr));
    EXPECT_EQ(n, 1u);
    ze_device_image_properties_t img{ZE_STRUCTURE_TYPE_DEVICE_IMAGE_PROPERTIES};
    ZE_OK(zeDeviceGetImageProperties(dev, &img));
    EXPECT_EQ(img.maxImageDims2D, 0u);
    ze_device_p2p_properties_t p2p{ZE_STRUCTURE_TYPE_DEVICE_P2P_PROPERTIES};
    ZE_OK(zeDeviceGetP2PProperties(dev, dev, &p2p));
    EXPECT_EQ(p2p.flags, 0u);
    ZE_OK(zeDeviceGetStatus(dev));
}

TEST_F(ZeclTest, GivenDevice_WhenModulePropertiesQueried_ThenFpFlagsAndNativeUuidFollowOpenCl) {
    auto cl = clDevices();
    ze_device_module_properties_t m{ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    ZE_OK(zeDeviceGetModuleProperties(dev, &m));
    auto fp32 = clInfo<cl_device_fp_config>(cl[0], CL_DEVICE_SINGLE_FP_CONFIG);
    EXPECT_EQ(bool(m.fp32flags & ZE_DEVICE_FP_FLAG_DENORM), bool(fp32 & CL_FP_DENORM));
    EXPECT_EQ(bool(m.fp32flags & ZE_DEVICE_FP_FLAG_FMA), bool(fp32 & CL_FP_FMA));
    auto fp64 = clInfo<cl_device_fp_config>(cl[0], CL_DEVICE_DOUBLE_FP_CONFIG);
    EXPECT_EQ(bool(m.flags & ZE_DEVICE_MODULE_FLAG_FP64), fp64 != 0);
    size_t ilSize = 0;
    clGetDeviceInfo(cl[0], CL_DEVICE_IL_VERSION, 0, nullptr, &ilSize);
    std::string il(ilSize, '\0');
    if (ilSize) clGetDeviceInfo(cl[0], CL_DEVICE_IL_VERSION, ilSize, il.data(), nullptr);
    EXPECT_EQ(m.spirvVersionSupported != 0, il.find("SPIR-V") != std::string::npos);
    EXPECT_EQ(std::memcmp(m.nativeKernelSupported.id, "zecl-src-bundle1", 16), 0);
    EXPECT_EQ(m.maxArgumentsSize, clInfo<size_t>(cl[0], CL_DEVICE_MAX_PARAMETER_SIZE));
}

TEST_F(ZeclTest, GivenDevice_WhenGlobalTimestampsRead_ThenTheyAdvance) {
    uint64_t h0 = 0, d0 = 0, h1 = 0, d1 = 0;
    ZE_OK(zeDeviceGetGlobalTimestamps(dev, &h0, &d0));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ZE_OK(zeDeviceGetGlobalTimestamps(dev, &h1, &d1));
    EXPECT_GT(h0, 0u);
    EXPECT_GT(h1, h0);
    EXPECT_GT(d1, d0);
}

// Which OpenCL device kind this process runs on, for the per-kind property checks.
std::string deviceKind(cl_device_id d) {
    char platform[256] = {};
    cl_platform_id p = nullptr;
    clGetDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof(p), &p, nullptr);
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof(platform) - 1, platform, nullptr);
    const std::string name = platform;
    if (name.find("Portable Computing Language") != std::string::npos) return "pocl";
    if (name.find("NVIDIA") != std::string::npos) return "nvidia";
    if (name.find("Intel") != std::string::npos && (clInfo<cl_device_type>(d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU))
        return "intel-cpu";
    return "other";
}

TEST_F(ZeclTest, GivenDevice_WhenSubGroupSizesQueried_ThenTheyAreWhatOpenClSays) {
    auto cl = clDevices();
    ze_device_compute_properties_t c{ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    ZE_OK(zeDeviceGetComputeProperties(dev, &c));
    const std::string ext = clExtensions(cl[0]);
    if (ext.find("cl_intel_subgroups") != std::string::npos ||
        ext.find("cl_intel_required_subgroup_size") != std::string::npos) {
        size_t n = 0;
        ASSERT_EQ(clGetDeviceInfo(cl[0], 0x4108 /* CL_DEVICE_SUB_GROUP_SIZES_INTEL */, 0, nullptr, &n), CL_SUCCESS);
        std::vector<size_t> sizes(n / sizeof(size_t));
        clGetDeviceInfo(cl[0], 0x4108, n, sizes.data(), nullptr);
        ASSERT_EQ(c.numSubGroupSizes, std::min<size_t>(sizes.size(), ZE_SUBGROUPSIZE_COUNT));
        for (uint32_t i = 0; i < c.numSubGroupSizes; ++i) EXPECT_EQ(c.subGroupSizes[i], sizes[i]) << "size " << i;
    } else if (clInfo<cl_uint>(cl[0], CL_DEVICE_MAX_NUM_SUB_GROUPS) == 0) {
        EXPECT_EQ(c.numSubGroupSizes, 0u) << "the device has no sub-groups (CL_DEVICE_MAX_NUM_SUB_GROUPS = 0)";
    } else {
        ASSERT_EQ(c.numSubGroupSizes, 1u) << "core OpenCL sub-groups: the probe kernel's size";
        EXPECT_GT(c.subGroupSizes[0], 0u);
        EXPECT_LE(c.subGroupSizes[0], c.maxTotalGroupSize);
    }
    for (uint32_t i = c.numSubGroupSizes; i < ZE_SUBGROUPSIZE_COUNT; ++i) EXPECT_EQ(c.subGroupSizes[i], 0u);
}

// Per device kind: what zecl must say there. A kind absent from this machine is skipped by name.
void expectKindProperties(ze_device_handle_t dev, cl_device_id cl, const std::string& kind) {
    ze_device_compute_properties_t c{ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    ASSERT_EQ(zeDeviceGetComputeProperties(dev, &c), ZE_RESULT_SUCCESS);
    ze_device_module_properties_t m{ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    ASSERT_EQ(zeDeviceGetModuleProperties(dev, &m), ZE_RESULT_SUCCESS);
    uint32_t n = 1;
    ze_device_memory_properties_t mem{ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
    ASSERT_EQ(zeDeviceGetMemoryProperties(dev, &n, &mem), ZE_RESULT_SUCCESS);
    if (kind == "pocl") {
        // PoCL 3.x: no sub-groups, no SPIR-V; its memory is the host's DRAM.
        EXPECT_EQ(c.numSubGroupSizes, 0u);
        EXPECT_EQ(m.spirvVersionSupported, 0u);
        EXPECT_EQ(mem.maxBusWidth, 64u);
    } else if (kind == "intel-cpu") {
        // Intel's CPU runtime: Intel sub-groups (4..64), SPIR-V 1.x; host DRAM.
        ASSERT_GT(c.numSubGroupSizes, 0u);
        EXPECT_NE(std::find(c.subGroupSizes, c.subGroupSizes + c.numSubGroupSizes, 16u),
                  c.subGroupSizes + c.numSubGroupSizes);
        EXPECT_GE(m.spirvVersionSupported, ZE_MAKE_VERSION(1, 0));
        EXPECT_EQ(mem.maxBusWidth, 64u);
    } else if (kind == "nvidia") {
        // NVIDIA's OpenCL has no sub-groups and no SPIR-V; the bus width comes from NVML.
        EXPECT_EQ(c.numSubGroupSizes, 0u);
        EXPECT_EQ(m.spirvVersionSupported != 0, clExtensions(cl).find("cl_khr_il_program") != std::string::npos);
        EXPECT_GE(mem.maxBusWidth, 64u) << "NVML's nvmlDeviceGetMemoryBusWidth";
    }
}

class ZeclDeviceKindTest : public ZeclTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ZeclDeviceKindTest, GivenDeviceKind_WhenPropertiesQueried_ThenSubGroupModuleAndMemoryAreHonest) {
    auto cl = clDevices();
    for (size_t i = 0; i < cl.size() && i < z->devices.size(); ++i)
        if (deviceKind(cl[i]) == GetParam()) {
            expectKindProperties(z->devices[i], cl[i], GetParam());
            return;
        }
    GTEST_SKIP() << "no " << GetParam() << " OpenCL device in this process's platform";
}

INSTANTIATE_TEST_SUITE_P(Kinds, ZeclDeviceKindTest, ::testing::Values("pocl", "intel-cpu", "nvidia"),
                         [](const auto& info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

}  // namespace
}  // namespace zecl_test
