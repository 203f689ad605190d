// zecl driver tests of driver/src/module.cpp: modules (source bundles, SPIR-V, IL containers), build logs,
// specialization constants, global pointers, kernels and their properties.
#include "zecl_test_support.hpp"

#include "zecl_test_spirv.h"

#include <sys/mman.h>
#include <unistd.h>

namespace zecl_test {
namespace {

TEST_F(ZeclTest, GivenSourceBundle_WhenModuleBuilt_ThenKernelNamesAndNativeBinaryRoundTrip) {
    auto b = bundle(kKernels);
    ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC};
    md.format = ZE_MODULE_FORMAT_NATIVE;
    md.inputSize = b.size();
    md.pInputModule = b.data();
    md.pBuildFlags = "-ze-opt-level=2";  // IGC-only flag: dropped by zecl
    ze_module_handle_t m = nullptr;
    ze_module_build_log_handle_t log = nullptr;
    ZE_OK(zeModuleCreate(z->context, dev, &md, &m, &log));
    size_t logSize = 0;
    ZE_OK(zeModuleBuildLogGetString(log, &logSize, nullptr));
    EXPECT_GE(logSize, 1u);
    ZE_OK(zeModuleBuildLogDestroy(log));

    uint32_t n = 0;
    ZE_OK(zeModuleGetKernelNames(m, &n, nullptr));
    ASSERT_EQ(n, 8u);
    std::vector<const char*> names(n);
    ZE_OK(zeModuleGetKernelNames(m, &n, names.data()));
    std::vector<std::string> sorted(names.begin(), names.end());
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<std::string>{"add_value", "add_wide", "fixed4", "hinted", "increment", "slm_sum",
                                                "two_slm", "write_gid"}));

    size_t size = 0;
    ZE_OK(zeModuleGetNativeBinary(m, &size, nullptr));
    std::vector<uint8_t> native(size);
    ZE_OK(zeModuleGetNativeBinary(m, &size, native.data()));
    EXPECT_EQ(native, b);
    zecl_source_bundle_view view{};
    ASSERT_EQ(zecl_source_bundle_parse(native.data(), native.size(), &view), 1);
    EXPECT_EQ(std::string(view.options, view.options_size), "-cl-std=CL1.2");
    EXPECT_EQ(std::string(view.source, view.source_size), kKernels);
    ze_module_properties_t mp{ZE_STRUCTURE_TYPE_MODULE_PROPERTIES};
    ZE_OK(zeModuleGetProperties(m, &mp));
    EXPECT_EQ(mp.flags, 0u);
    ZE_OK(zeModuleDestroy(m));
}

TEST_F(ZeclTest, GivenSourceThatDoesNotCompile_WhenModuleBuilt_ThenBuildFailureWithCompilerLog) {
    auto b = bundle("kernel void broken(global int *p) { p[0] = undeclared_symbol_xyz; }");
    ze_module_handle_t m = nullptr;
    std::string text;
    EXPECT_EQ(createModuleWithLog(z->context, dev, ZE_MODULE_FORMAT_NATIVE, b, &m, text),
              ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(text.find("undeclared_symbol_xyz"), std::string::npos) << text;
    EXPECT_NE(text.find("error"), std::string::npos) << text;
}

// The build log of a successful build holds the build's messages only: empty for a clean
// module (the suite checks a size of 1), the compiler's warning where there is one, and none
// of Intel's CPU runtime's progress lines ("Compilation started", vectorizer statistics).
TEST_F(ZeclTest, GivenSuccessfulBuilds_WhenBuildLogRead_ThenItHoldsOnlyTheBuildsDiagnostics) {
    auto logOf = [&](const std::string& source) {
        ze_module_handle_t m = nullptr;
        std::string text;
        EXPECT_EQ(createModuleWithLog(z->context, dev, ZE_MODULE_FORMAT_NATIVE, bundle(source), &m, text),
                  ZE_RESULT_SUCCESS);
        if (m) {
            EXPECT_EQ(zeModuleDestroy(m), ZE_RESULT_SUCCESS);
        }
        return text;
    };
    const std::string clean = logOf("kernel void clean(global uint *o) { o[get_global_id(0)] = 1u; }");
    EXPECT_EQ(clean.size(), 1u) << "a clean build's log is the empty string, not: " << clean;
    EXPECT_EQ(clean[0], '\0');
    const std::string warned =
        logOf("#warning zecl_build_log_marker\nkernel void warned(global uint *o) { o[get_global_id(0)] = 2u; }");
    EXPECT_NE(warned.find("zecl_build_log_marker"), std::string::npos) << warned;
    EXPECT_NE(warned.find("warning"), std::string::npos) << warned;
    for (const char* progress : {"Compilation started", "Linking done", "Device build", "vectorized", "<unknown>:0:0"})
        EXPECT_EQ(warned.find(progress), std::string::npos) << progress << " in: " << warned;
}

TEST_F(ZeclTest, GivenWrongInputs_WhenModuleCreated_ThenTheyAreRejected) {
    std::vector<uint8_t> junk(64, 'x');
    ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC};
    md.format = ZE_MODULE_FORMAT_NATIVE;
    md.inputSize = junk.size();
    md.pInputModule = junk.data();
    ze_module_handle_t m = nullptr;
    EXPECT_EQ(zeModuleCreate(z->context, dev, &md, &m, nullptr), ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);

    ze_device_module_properties_t mp{ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    ZE_OK(zeDeviceGetModuleProperties(dev, &mp));
    if (mp.spirvVersionSupported == 0) {
        const uint32_t spirvHeader[5] = {0x07230203, 0x00010000, 0, 1, 0};
        md.format = ZE_MODULE_FORMAT_IL_SPIRV;
        md.inputSize = sizeof(spirvHeader);
        md.pInputModule = reinterpret_cast<const uint8_t*>(spirvHeader);
        EXPECT_EQ(zeModuleCreate(z->context, dev, &md, &m, nullptr), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    }
}

TEST_F(ZeclTest, GivenUnknownKernelName_WhenKernelCreated_ThenInvalidKernelName) {
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
    kd.pKernelName = "no_such_kernel";
    ze_kernel_handle_t k = nullptr;
    EXPECT_EQ(zeKernelCreate(z->module(), &kd, &k), ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
    EXPECT_EQ(k, nullptr);
}

TEST_F(ZeclTest, GivenKernels_WhenPropertiesQueried_ThenArgsGroupSizesAndNameAreHonest) {
    auto k = kernel("slm_sum");
    ze_kernel_properties_t p{ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES};
    ZE_OK(zeKernelGetProperties(k, &p));
    EXPECT_EQ(p.numKernelArgs, 3u);
    EXPECT_EQ(p.requiredGroupSizeX, 0u);
    EXPECT_GT(p.maxSubgroupSize, 0u);
    size_t size = 0;
    ZE_OK(zeKernelGetName(k, &size, nullptr));
    std::string name(size, '\0');
    ZE_OK(zeKernelGetName(k, &size, name.data()));
    EXPECT_STREQ(name.c_str(), "slm_sum");

    uint32_t x = 0, y = 0, zz = 0;
    ZE_OK(zeKernelSuggestGroupSize(k, 1000, 3, 1, &x, &y, &zz));
    EXPECT_EQ(1000 % x, 0u);
    EXPECT_EQ(3 % y, 0u);
    EXPECT_EQ(zz, 1u);
    ze_device_compute_properties_t c{ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    ZE_OK(zeDeviceGetComputeProperties(dev, &c));
    EXPECT_LE(uint64_t(x) * y * zz, c.maxTotalGroupSize);
    EXPECT_EQ(zeKernelSetGroupSize(k, c.maxTotalGroupSize + 1, 1, 1), ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
    EXPECT_EQ(zeKernelSetArgumentValue(k, 7, 4, &x), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
    ZE_OK(zeKernelSetIndirectAccess(k, ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE));
    ze_kernel_indirect_access_flags_t ia = 0;
    ZE_OK(zeKernelGetIndirectAccess(k, &ia));
    EXPECT_EQ(ia, ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE);
    ZE_OK(zeKernelSetCacheConfig(k, 0));
    ZE_OK(zeKernelDestroy(k));

    auto f = kernel("fixed4");
    ze_kernel_properties_t pf{ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES};
    ZE_OK(zeKernelGetProperties(f, &pf));
    EXPECT_EQ(pf.requiredGroupSizeX, 4u);
    EXPECT_EQ(pf.requiredGroupSizeY, 1u);
    ZE_OK(zeKernelSuggestGroupSize(f, 64, 1, 1, &x, &y, &zz));
    EXPECT_EQ(x, 4u);
    EXPECT_EQ(zeKernelSetGroupSize(f, 8, 1, 1), ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
    ZE_OK(zeKernelDestroy(f));
}

// A by-value argument's bytes are read only once argSize is known to be the parameter's: the
// value sits at the end of a page followed by an inaccessible one, so reading past argSize
// faults. A size that is not the parameter's is refused (a huge one used to be copied first:
// a fault, or std::bad_alloc out of the C API); a narrower scalar is still zero-extended.
TEST_F(ZeclTest, GivenByValueArgumentOfTheWrongSize_WhenSet_ThenRefusedWithoutReadingPastTheValue) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    void* pages = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(pages, MAP_FAILED);
    ASSERT_EQ(mprotect(static_cast<char*>(pages) + page, page, PROT_NONE), 0);
    auto* value = reinterpret_cast<uint32_t*>(static_cast<char*>(pages) + page - sizeof(uint32_t));
    *value = 5;

    auto k = kernel("add_value");
    for (size_t size : {size_t(2), size_t(64), size_t(1) << 20, size_t(1) << 62, SIZE_MAX})
        EXPECT_EQ(zeKernelSetArgumentValue(k, 1, size, value), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
            << "argSize " << size;
    ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof(uint32_t), value));
    EXPECT_EQ(zeKernelSetArgumentValue(k, 1, 8, value), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
    ZE_OK(zeKernelDestroy(k));

    // A uint given for a ulong: the 4 bytes given, zero-extended (as Intel's driver does).
    auto wide = kernel("add_wide");
    EXPECT_EQ(zeKernelSetArgumentValue(wide, 1, 64, value), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
    ZE_OK(zeKernelSetArgumentValue(wide, 1, sizeof(uint32_t), value));
    void* d = deviceAlloc(sizeof(uint64_t));
    upload(d, std::vector<uint64_t>{uint64_t(1) << 40});
    ZE_OK(zeKernelSetArgumentValue(wide, 0, sizeof(void*), &d));
    auto l = immediate(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
    ze_group_count_t g{1, 1, 1};
    ZE_OK(zeCommandListAppendLaunchKernel(l, wide, &g, nullptr, 0, nullptr));
    EXPECT_EQ(download<uint64_t>(d, 1)[0], (uint64_t(1) << 40) + 5);
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeKernelDestroy(wide));
    ZE_OK(zeMemFree(z->context, d));
    munmap(pages, 2 * page);
}

// Local memory beyond the device's is refused when set, and a kernel whose local arguments
// together exceed it is refused at launch (PoCL asserted inside clEnqueueNDRangeKernel).
TEST_F(ZeclTest, GivenLocalArgumentsBeyondTheDevicesLocalMemory_WhenSetOrLaunched_ThenRefused) {
    ze_device_compute_properties_t c{ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    ZE_OK(zeDeviceGetComputeProperties(dev, &c));
    const size_t local = c.maxSharedLocalMemory;
    ASSERT_GT(local, 8u);
    auto k = kernel("two_slm");
    void* d = deviceAlloc(sizeof(uint32_t));
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof(void*), &d));
    EXPECT_EQ(zeKernelSetArgumentValue(k, 1, local + 1, nullptr), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
    EXPECT_EQ(zeKernelSetArgumentValue(k, 1, size_t(1) << 40, nullptr), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
    ZE_OK(zeKernelSetArgumentValue(k, 1, local / 2 + 4, nullptr));
    ZE_OK(zeKernelSetArgumentValue(k, 2, local / 2 + 4, nullptr));
    auto l = immediate(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
    ze_group_count_t g{1, 1, 1};
    EXPECT_EQ(zeCommandListAppendLaunchKernel(l, k, &g, nullptr, 0, nullptr), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
    ze_command_list_handle_t regular = nullptr;
    ZE_OK(zeCommandListCreate(z->context, dev, &ld, &regular));
    EXPECT_EQ(zeCommandListAppendLaunchKernel(regular, k, &g, nullptr, 0, nullptr), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    ZE_OK(zeCommandListDestroy(regular));
    // Within the device's local memory together, the kernel runs.
    ZE_OK(zeKernelSetArgumentValue(k, 1, local / 2, nullptr));
    ZE_OK(zeKernelSetArgumentValue(k, 2, local / 4, nullptr));
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, nullptr, 0, nullptr));
    EXPECT_EQ(download<uint32_t>(d, 1)[0], 3u);
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeMemFree(z->context, d));
}

TEST_F(ZeclTest, GivenFaultInjectionModule1_WhenBuilding_ThenTheFirstBuildFailsWithALog) {
    if (!faultIs("module:1")) GTEST_SKIP() << "runs under ctest with ZECL_FAULT=module:1";
    auto b = bundle("kernel void k(global int *p) { p[0] = 1; }");
    ze_module_handle_t m = nullptr;
    std::string text;
    EXPECT_EQ(createModuleWithLog(z->context, dev, ZE_MODULE_FORMAT_NATIVE, b, &m, text),
              ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
    EXPECT_NE(text.find("zecl fault injection"), std::string::npos) << text;
    ZE_OK(createModuleWithLog(z->context, dev, ZE_MODULE_FORMAT_NATIVE, b, &m, text));  // the second builds
    ZE_OK(zeModuleDestroy(m));
}

TEST_F(ZeclTest, GivenFaultInjectionKernel1_WhenCreatingKernels_ThenTheFirstFails) {
    if (!faultIs("kernel:1")) GTEST_SKIP() << "runs under ctest with ZECL_FAULT=kernel:1";
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
    kd.pKernelName = "write_gid";
    ze_kernel_handle_t k = nullptr;
    EXPECT_EQ(zeKernelCreate(z->module(), &kd, &k), ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
    ZE_OK(zeKernelCreate(z->module(), &kd, &k));
    ZE_OK(zeKernelDestroy(k));
}

TEST_F(ZeclTest, GivenGlobalOffset_WhenLaunched_ThenGlobalIdsStartThere) {
    const uint32_t n = 32, offset = 8;
    void* d = deviceAlloc(n * 4);
    upload(d, std::vector<uint32_t>(n, 0xFFFFFFFFu));
    auto k = kernel("write_gid");
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof(void*), &d));
    ZE_OK(zeKernelSetGroupSize(k, 4, 1, 1));
    ZE_OK(zeKernelSetGlobalOffsetExp(k, offset, 0, 0));
    auto [q, l] = makeQueueAndList(z->context, dev);
    ze_group_count_t g{4, 1, 1};  // 16 items: ids 8..23
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, nullptr, 0, nullptr));
    ZE_OK(zeKernelSetGlobalOffsetExp(k, 0, 0, 0));  // after the append: must not change it
    ZE_OK(zeCommandListClose(l));
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    auto out = download<uint32_t>(d, n);
    for (uint32_t i = 0; i < n; ++i)
        ASSERT_EQ(out[i], i >= offset && i < offset + 16 ? i : 0xFFFFFFFFu) << "element " << i;
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeCommandQueueDestroy(q));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeMemFree(z->context, d));
}

TEST_F(ZeclTest, GivenKernelWithWorkGroupSizeHint_WhenSourceAttributesAndPropertiesQueried_ThenTheyAreHonest) {
    auto k = kernel("hinted");
    uint32_t size = 0;
    char* p = nullptr;
    ZE_OK(zeKernelGetSourceAttributes(k, &size, &p));
    std::string attrs(size, '\0');
    p = attrs.data();
    ZE_OK(zeKernelGetSourceAttributes(k, &size, &p));
    attrs.resize(std::strlen(attrs.c_str()));
    // PoCL reports "__attribute__((work_group_size_hint(1, 1, 1 )))"; zecl gives the Level Zero form.
    EXPECT_EQ(attrs, "work_group_size_hint(1,1,1)");
    ze_kernel_properties_t kp{ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES};
    ZE_OK(zeKernelGetProperties(k, &kp));
    EXPECT_EQ(kp.spillMemSize, 0u) << "OpenCL reports no spills; zecl says 0";
    ZE_OK(zeKernelDestroy(k));
}

// The SPIR-V of tests/driver/zecl_il_kernels.cl (embedded at build time), or empty with the
// reason in `why`.
std::vector<uint8_t> testSpirv(ze_device_handle_t dev, std::string& why) {
    ze_device_module_properties_t m{ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    zeDeviceGetModuleProperties(dev, &m);
    if (m.spirvVersionSupported == 0) {
        why = "the device takes no SPIR-V (spirvVersionSupported = 0; PoCL)";
        return {};
    }
    return std::vector<uint8_t>(std::begin(kZeclTestSpirv), std::end(kZeclTestSpirv));
}

ze_module_handle_t buildModule(ze_context_handle_t ctx, ze_device_handle_t dev, ze_module_format_t format,
                               const std::vector<uint8_t>& input, const ze_module_constants_t* constants = nullptr,
                               ze_result_t* result = nullptr) {
    ze_module_handle_t m = nullptr;
    std::string log;
    const ze_result_t r = createModuleWithLog(ctx, dev, format, input, &m, log, constants);
    if (result) *result = r;
    return r == ZE_RESULT_SUCCESS ? m : nullptr;
}

// Runs `name` (one uint argument, one item) of module `m` and returns what it wrote.
uint32_t runOne(ZeclTest* t, Zecl* z, ze_device_handle_t dev, ze_module_handle_t m, const char* name) {
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
    kd.pKernelName = name;
    ze_kernel_handle_t k = nullptr;
    EXPECT_EQ(zeKernelCreate(m, &kd, &k), ZE_RESULT_SUCCESS);
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void* d = nullptr;
    EXPECT_EQ(zeMemAllocDevice(z->context, &desc, 4, 0, dev, &d), ZE_RESULT_SUCCESS);
    EXPECT_EQ(zeKernelSetArgumentValue(k, 0, sizeof(void*), &d), ZE_RESULT_SUCCESS);
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
    qd.mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
    ze_command_list_handle_t l = nullptr;
    EXPECT_EQ(zeCommandListCreateImmediate(z->context, dev, &qd, &l), ZE_RESULT_SUCCESS);
    ze_group_count_t g{1, 1, 1};
    uint32_t out = 0xDEADBEEF;
    EXPECT_EQ(zeCommandListAppendLaunchKernel(l, k, &g, nullptr, 0, nullptr), ZE_RESULT_SUCCESS);
    EXPECT_EQ(zeCommandListAppendMemoryCopy(l, &out, d, 4, nullptr, 0, nullptr), ZE_RESULT_SUCCESS);
    zeCommandListDestroy(l);
    zeMemFree(z->context, d);
    zeKernelDestroy(k);
    (void)t;
    return out;
}

TEST_F(ZeclTest, GivenSpirvModule_WhenNativeBinaryRebuilt_ThenTheSameKernelsRunWithTheSameConstants) {
    std::string why;
    auto spv = testSpirv(dev, why);
    if (spv.empty()) GTEST_SKIP() << why;
    uint32_t id = 5, value = 1234;
    const void* values[] = {&value};
    ze_module_constants_t constants{1, &id, values};
    ze_module_handle_t m = buildModule(z->context, dev, ZE_MODULE_FORMAT_IL_SPIRV, spv, &constants);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(runOne(this, z, dev, m, "spec_value"), 1234u) << "the specialization constant";
    size_t size = 0;
    ZE_OK(zeModuleGetNativeBinary(m, &size, nullptr));
    std::vector<uint8_t> native(size);
    ZE_OK(zeModuleGetNativeBinary(m, &size, native.data()));
    ASSERT_GE(native.size(), 8u);
    EXPECT_EQ(std::memcmp(native.data(), "ZECLSPV1", 8), 0);
    ze_module_handle_t again = buildModule(z->context, dev, ZE_MODULE_FORMAT_NATIVE, native);
    ASSERT_NE(again, nullptr) << "the native binary of a SPIR-V module rebuilds as ZE_MODULE_FORMAT_NATIVE";
    EXPECT_EQ(runOne(this, z, dev, again, "spec_value"), 1234u) << "the rebuilt module keeps the constant";
    EXPECT_EQ(runOne(this, z, dev, again, "hinted"), 1u);
    // Without constants the default holds; an id the module lacks is ignored (as Intel's
    // driver does), and the build log says so.
    ze_module_handle_t plain = buildModule(z->context, dev, ZE_MODULE_FORMAT_IL_SPIRV, spv);
    ASSERT_NE(plain, nullptr);
    EXPECT_EQ(runOne(this, z, dev, plain, "spec_value"), 42u);
    uint32_t badId = 77;
    ze_module_constants_t bad{1, &badId, values};
    ze_module_handle_t ignored = nullptr;
    std::string logText;
    ZE_OK(createModuleWithLog(z->context, dev, ZE_MODULE_FORMAT_IL_SPIRV, spv, &ignored, logText, &bad));
    EXPECT_NE(logText.find("SpecId 77"), std::string::npos) << logText;
    EXPECT_EQ(runOne(this, z, dev, ignored, "spec_value"), 42u);
    ZE_OK(zeModuleDestroy(ignored));
    ze_result_t r = ZE_RESULT_SUCCESS;
    // A truncated container is not a native binary.
    native.pop_back();
    EXPECT_EQ(buildModule(z->context, dev, ZE_MODULE_FORMAT_NATIVE, native, nullptr, &r), nullptr);
    EXPECT_EQ(r, ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);
    // Source attributes from the SPIR-V's execution modes.
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
    kd.pKernelName = "hinted";
    ze_kernel_handle_t k = nullptr;
    ZE_OK(zeKernelCreate(plain, &kd, &k));
    uint32_t n = 0;
    char* p = nullptr;
    ZE_OK(zeKernelGetSourceAttributes(k, &n, &p));
    std::string attrs(n, '\0');
    p = attrs.data();
    ZE_OK(zeKernelGetSourceAttributes(k, &n, &p));
    EXPECT_STREQ(attrs.c_str(), "work_group_size_hint(1,1,1)");
    ZE_OK(zeKernelDestroy(k));
    for (auto mod : {m, again, plain}) ZE_OK(zeModuleDestroy(mod));
}

// OpenCL C++ 1.0's cl::spec_constant<T, ID> left unlowered by the SPIR-V producer (no SpecId;
// tests/driver/zecl_spec_marker.spvasm): the values given for those IDs set the markers'
// initialisers, as the source meant; the defaults hold without them; the native binary keeps them.
TEST_F(ZeclTest, GivenOpenClCxxSpecConstantMarkers_WhenConstantsGiven_ThenTheKernelReadsThem) {
    std::string why;
    if (testSpirv(dev, why).empty()) GTEST_SKIP() << why;
    const std::vector<uint8_t> spv(std::begin(kZeclSpecMarkerSpirv), std::end(kZeclSpecMarkerSpirv));
    auto sum = [&](ze_module_handle_t m) {
        ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
        kd.pKernelName = "marker_sum";
        ze_kernel_handle_t k = nullptr;
        EXPECT_EQ(zeKernelCreate(m, &kd, &k), ZE_RESULT_SUCCESS);
        void* d = deviceAlloc(8);
        EXPECT_EQ(zeKernelSetArgumentValue(k, 0, sizeof(d), &d), ZE_RESULT_SUCCESS);
        EXPECT_EQ(zeKernelSetGroupSize(k, 1, 1, 1), ZE_RESULT_SUCCESS);
        auto l = immediate(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
        ze_group_count_t g{1, 1, 1};
        EXPECT_EQ(zeCommandListAppendLaunchKernel(l, k, &g, nullptr, 0, nullptr), ZE_RESULT_SUCCESS);
        zeCommandListDestroy(l);
        const uint64_t v = download<uint64_t>(d, 1)[0];
        zeMemFree(z->context, d);
        zeKernelDestroy(k);
        return v;
    };
    ze_module_handle_t plain = buildModule(z->context, dev, ZE_MODULE_FORMAT_IL_SPIRV, spv);
    ASSERT_NE(plain, nullptr);
    EXPECT_EQ(sum(plain), 1020u) << "the defaults 1000 + 20";
    const uint64_t wide = 5000000000ull;  // needs all 8 bytes
    const uint32_t narrow = 7, absent = 1;
    uint32_t ids[] = {2, 6, 9};
    const void* values[] = {&wide, &narrow, &absent};
    ze_module_constants_t constants{3, ids, values};
    ze_module_handle_t m = nullptr;
    std::string text;
    ZE_OK(createModuleWithLog(z->context, dev, ZE_MODULE_FORMAT_IL_SPIRV, spv, &m, text, &constants));
    EXPECT_NE(text.find("specialization constants 2 6 set"), std::string::npos) << text;
    EXPECT_NE(text.find("ignored, the module declares no SpecId 9"), std::string::npos) << text;
    EXPECT_EQ(sum(m), wide + narrow);
    size_t size = 0;
    ZE_OK(zeModuleGetNativeBinary(m, &size, nullptr));
    std::vector<uint8_t> native(size);
    ZE_OK(zeModuleGetNativeBinary(m, &size, native.data()));
    ze_module_handle_t again = buildModule(z->context, dev, ZE_MODULE_FORMAT_NATIVE, native);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(sum(again), wide + narrow) << "the native binary rebuilds with the same values";
    for (auto mod : {plain, m, again}) ZE_OK(zeModuleDestroy(mod));
}

TEST_F(ZeclTest, GivenProgramScopeGlobal_WhenPointerAsked_ThenItIsGivenOnlyWhereOpenClCanGiveIt) {
    std::string why;
    auto spv = testSpirv(dev, why);
    if (spv.empty()) GTEST_SKIP() << why;
    ze_module_handle_t m = buildModule(z->context, dev, ZE_MODULE_FORMAT_IL_SPIRV, spv);
    ASSERT_NE(m, nullptr);
    const bool ext = clExtensions(clDevices()[0]).find("cl_intel_global_variable_pointers") != std::string::npos;
    ze_device_properties_t props{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ZE_OK(zeDeviceGetProperties(dev, &props));
    size_t size = 0;
    void* ptr = nullptr;
    ze_result_t r = zeModuleGetGlobalPointer(m, "zecl_test_global", &size, &ptr);
    if (!ext && props.type != ZE_DEVICE_TYPE_CPU) {
        EXPECT_EQ(r, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) << "no cl_intel_global_variable_pointers, not a CPU device";
    } else {
        // The extension's answer, or (a CPU device without it) the address kernel's.
        ZE_OK(r);
        EXPECT_EQ(size, 4u);
        ASSERT_NE(ptr, nullptr);
        void* again = nullptr;
        ZE_OK(zeModuleGetGlobalPointer(m, "zecl_test_global", nullptr, &again));
        EXPECT_EQ(again, ptr) << "one address for the module's life";
        EXPECT_EQ(download<uint32_t>(ptr, 1)[0], 7u) << "the initialiser";
        // The module's kernels and the pointer see one variable: read_global reads it and adds 1.
        EXPECT_EQ(runOne(this, z, dev, m, "read_global"), 7u);
        EXPECT_EQ(download<uint32_t>(ptr, 1)[0], 8u) << "the kernel's update, through the pointer";
        upload(ptr, std::vector<uint32_t>{41u});
        EXPECT_EQ(runOne(this, z, dev, m, "read_global"), 41u) << "a write through the pointer, seen by the kernel";
        EXPECT_EQ(zeModuleGetGlobalPointer(m, "no_such_global", &size, &ptr), ZE_RESULT_ERROR_INVALID_GLOBAL_NAME);
        // The address kernel is zecl's own: not among the module's kernel names.
        uint32_t n = 0;
        ZE_OK(zeModuleGetKernelNames(m, &n, nullptr));
        std::vector<const char*> names(n);
        ZE_OK(zeModuleGetKernelNames(m, &n, names.data()));
        std::vector<std::string> sorted(names.begin(), names.end());
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted, (std::vector<std::string>{"hinted", "read_global", "spec_value"}));
    }
    void* fn = nullptr;
    const bool fext = clExtensions(clDevices()[0]).find("cl_intel_function_pointers") != std::string::npos;
    r = zeModuleGetFunctionPointer(m, "hinted", &fn);
    if (!fext) {
        EXPECT_EQ(r, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) << "no cl_intel_function_pointers";
    }
    ZE_OK(zeModuleDestroy(m));
}

}  // namespace
}  // namespace zecl_test
