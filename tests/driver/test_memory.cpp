// zecl driver tests of driver/src/memory.cpp: contexts and USM allocations (sizes, alignment, page padding, shared
// memory).
#include "zecl_test_support.hpp"

namespace zecl_test {
namespace {

TEST_F(ZeclTest, GivenDeviceAllocation_WhenCopiedThereAndBack_ThenBytesAreExact) {
    const size_t n = 4099;  // odd on purpose
    std::vector<uint8_t> in(n), out(n, 0);
    for (size_t i = 0; i < n; ++i) in[i] = uint8_t(i * 131 + 7);
    void* d = deviceAlloc(n);
    ASSERT_NE(d, nullptr);
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    void* h = nullptr;
    ZE_OK(zeMemAllocHost(z->context, &hd, n, 64, &h));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(h) % 64, 0u);
    auto l = immediate();
    ZE_OK(zeCommandListAppendMemoryCopy(l, d, in.data(), n, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendMemoryCopy(l, h, d, n, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendMemoryCopy(l, out.data(), h, n, nullptr, 0, nullptr));
    ZE_OK(zeCommandListDestroy(l));  // waits for the copies
    EXPECT_EQ(in, out);
    ZE_OK(zeMemFree(z->context, d));
    ZE_OK(zeMemFree(z->context, h));
}

TEST_F(ZeclTest, GivenFillPatterns_WhenFilled_ThenEveryByteRepeatsThePattern) {
    const size_t n = 1024;
    void* d = deviceAlloc(n);
    for (size_t patternSize : {1, 2, 4, 16, 128, 3, 24}) {  // 3 and 24 are emulated
        std::vector<uint8_t> pattern(patternSize);
        for (size_t i = 0; i < patternSize; ++i) pattern[i] = uint8_t(0xA0 + i);
        const size_t size = patternSize == 3 ? 1000 : n;  // 1000 is not a multiple of 3
        auto l = immediate(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
        std::vector<uint8_t> zeros(n, 0);
        ZE_OK(zeCommandListAppendMemoryCopy(l, d, zeros.data(), n, nullptr, 0, nullptr));
        ZE_OK(zeCommandListAppendMemoryFill(l, d, pattern.data(), patternSize, size, nullptr, 0, nullptr));
        ZE_OK(zeCommandListDestroy(l));
        auto out = download<uint8_t>(d, n);
        for (size_t i = 0; i < n; ++i) {
            uint8_t want = i < size ? pattern[i % patternSize] : 0;
            ASSERT_EQ(out[i], want) << "pattern size " << patternSize << " byte " << i;
        }
    }
    ZE_OK(zeMemFree(z->context, d));
}

// A fill that runs past the end of its allocation is refused (INVALID_SIZE) instead of writing
// over what follows; one whose emulation needs more host memory than there is answers
// OUT_OF_HOST_MEMORY (std::bad_alloc used to escape into C and abort the process).
TEST_F(ZeclTest, GivenFillBeyondItsAllocationOrHostMemory_WhenAppended_ThenRefused) {
    const size_t n = 4096;
    auto* d = static_cast<uint8_t*>(deviceAlloc(n));
    ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
    ze_command_list_handle_t l = nullptr;
    ZE_OK(zeCommandListCreate(z->context, dev, &ld, &l));
    const uint8_t pattern[4] = {1, 2, 3, 4};
    EXPECT_EQ(zeCommandListAppendMemoryFill(l, d, pattern, 1, n + 1, nullptr, 0, nullptr),
              ZE_RESULT_ERROR_INVALID_SIZE);
    EXPECT_EQ(zeCommandListAppendMemoryFill(l, d + n - 4, pattern, 4, 8, nullptr, 0, nullptr),
              ZE_RESULT_ERROR_INVALID_SIZE);
    EXPECT_EQ(zeCommandListAppendMemoryFill(l, d + 1, pattern, 3, SIZE_MAX, nullptr, 0, nullptr),
              ZE_RESULT_ERROR_INVALID_SIZE);
    ZE_OK(zeCommandListAppendMemoryFill(l, d + n - 4, pattern, 4, 4, nullptr, 0, nullptr));
    // Memory that is none of zecl's allocations cannot be bounded; its emulated pattern (3 bytes)
    // is expanded on the host.
    std::vector<uint8_t> host(16);
    EXPECT_EQ(zeCommandListAppendMemoryFill(l, host.data(), pattern, 3, size_t(1) << 62, nullptr, 0, nullptr),
              ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeMemFree(z->context, d));
}

// Residency ranges are bounded like every other range zecl is given (checkRange).
TEST_F(ZeclTest, GivenResidencyRangePastItsAllocation_WhenMadeResidentOrEvicted_ThenInvalidSize) {
    auto* d = static_cast<uint8_t*>(deviceAlloc(100));
    EXPECT_EQ(zeContextMakeMemoryResident(z->context, dev, d + 1, 100), ZE_RESULT_ERROR_INVALID_SIZE);
    EXPECT_EQ(zeContextEvictMemory(z->context, dev, d, 101), ZE_RESULT_ERROR_INVALID_SIZE);
    ZE_OK(zeContextMakeMemoryResident(z->context, dev, d, 100));
    ZE_OK(zeContextEvictMemory(z->context, dev, d + 1, 99));
    ZE_OK(zeContextMakeMemoryResident(z->context, dev, d, 0));
    ZE_OK(zeMemFree(z->context, d));
}

TEST_F(ZeclTest, GivenInteriorPointer_WhenPropertiesAndRangeQueried_ThenTheAllocationIsFound) {
    void* d = deviceAlloc(4096);
    auto* inner = static_cast<uint8_t*>(d) + 1000;
    ze_memory_allocation_properties_t p{ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = nullptr;
    ZE_OK(zeMemGetAllocProperties(z->context, inner, &p, &owner));
    EXPECT_EQ(p.type, ZE_MEMORY_TYPE_DEVICE);
    EXPECT_NE(p.id, 0u);
    ze_memory_allocation_properties_t pb{ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ZE_OK(zeMemGetAllocProperties(z->context, d, &pb, nullptr));
    EXPECT_EQ(pb.id, p.id);
    void* base = nullptr;
    size_t size = 0;
    ZE_OK(zeMemGetAddressRange(z->context, inner, &base, &size));
    EXPECT_EQ(base, d);
    EXPECT_EQ(size, 4096u);
    int stack = 0;
    ze_memory_allocation_properties_t ps{ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ZE_OK(zeMemGetAllocProperties(z->context, &stack, &ps, nullptr));
    EXPECT_EQ(ps.type, ZE_MEMORY_TYPE_UNKNOWN);
    ZE_OK(zeMemFree(z->context, d));
}

// zecl allocates whole pages, and the padding past a small allocation reads as zero, as a
// GPU driver's fresh pages do, even where the OpenCL runtime hands back a block it had freed
// (Intel's CPU runtime does): a kernel that strays past the end reads zeros, not stale data.
TEST_F(ZeclTest, GivenReusedHostMemory_WhenSmallAllocationMade_ThenItsPagePaddingIsZero) {
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    for (int round = 0; round < 8; ++round) {
        void* big = nullptr;
        ZE_OK(zeMemAllocHost(z->context, &hd, 4096, 0, &big));
        std::memset(big, 0xA5, 4096);
        ZE_OK(zeMemFree(z->context, big));
        void* small = nullptr;
        ZE_OK(zeMemAllocHost(z->context, &hd, 256, 0, &small));
        const auto* bytes = static_cast<const uint8_t*>(small);
        for (size_t i = 256; i < 4096; ++i)
            ASSERT_EQ(bytes[i], 0u) << "padding byte " << i << " of a 256-byte allocation, round " << round;
        ZE_OK(zeMemFree(z->context, small));
    }
}

TEST_F(ZeclTest, GivenBadSizesOrAlignment_WhenAllocating_ThenTheSpecErrorsAreReturned) {
    ze_device_properties_t p{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ZE_OK(zeDeviceGetProperties(dev, &p));
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void* ptr = reinterpret_cast<void*>(1);
    EXPECT_EQ(zeMemAllocDevice(z->context, &desc, p.maxMemAllocSize + 1, 0, dev, &ptr),
              ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    EXPECT_EQ(ptr, nullptr);
    EXPECT_EQ(zeMemAllocDevice(z->context, &desc, 0, 0, dev, &ptr), ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    EXPECT_EQ(zeMemAllocDevice(z->context, &desc, 64, 3, dev, &ptr), ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
    // Larger than OpenCL's own alignment limit: met by over-allocation.
    ZE_OK(zeMemAllocDevice(z->context, &desc, 64, 4096, dev, &ptr));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 4096, 0u);
    ZE_OK(zeMemFree(z->context, ptr));
    int notOurs = 0;
    EXPECT_NE(zeMemFree(z->context, &notOurs), ZE_RESULT_SUCCESS);
}

TEST_F(ZeclTest, GivenSharedAllocation_WhenDeviceHasFineGrainSvm_ThenHostAndKernelShareIt) {
    auto cl = clDevices();
    auto svm = clInfo<cl_device_svm_capabilities>(cl[0], CL_DEVICE_SVM_CAPABILITIES);
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    void* s = nullptr;
    ze_result_t r = zeMemAllocShared(z->context, &dd, &hd, 64 * sizeof(uint32_t), 0, dev, &s);
    if (!(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) {
        EXPECT_EQ(r, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        return;
    }
    ZE_OK(r);
    auto* u = static_cast<uint32_t*>(s);
    for (uint32_t i = 0; i < 64; ++i) u[i] = 1000 + i;
    auto k = kernel("add_value");
    uint32_t v = 5;
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof(void*), &s));
    ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof(v), &v));
    ZE_OK(zeKernelSetGroupSize(k, 8, 1, 1));
    auto l = immediate(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
    ze_group_count_t g{8, 1, 1};
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, nullptr, 0, nullptr));
    for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(u[i], 1005 + i);
    ZE_OK(zeCommandListDestroy(l));
    ZE_OK(zeKernelDestroy(k));
    ZE_OK(zeMemFree(z->context, s));
}

TEST_F(ZeclTest, GivenFaultInjectionAlloc2_WhenAllocatingThrice_ThenOnlyTheSecondFails) {
    if (!faultIs("alloc:2")) GTEST_SKIP() << "runs under ctest with ZECL_FAULT=alloc:2";
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void* p[3] = {};
    ZE_OK(zeMemAllocDevice(z->context, &desc, 64, 0, dev, &p[0]));
    EXPECT_EQ(zeMemAllocDevice(z->context, &desc, 64, 0, dev, &p[1]), ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    EXPECT_EQ(p[1], nullptr);
    ZE_OK(zeMemAllocDevice(z->context, &desc, 64, 0, dev, &p[2]));
    ZE_OK(zeMemFree(z->context, p[0]));
    ZE_OK(zeMemFree(z->context, p[2]));
}

TEST_F(ZeclTest, GivenAsyncCopy_WhenSystemBarrierReturns_ThenTheCopyIsComplete) {
    std::vector<uint32_t> src(1 << 16, 0xA5A5A5A5u), dst(1 << 16, 0);
    auto l = immediate(ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
    ZE_OK(zeCommandListAppendMemoryCopy(l, dst.data(), src.data(), src.size() * 4, nullptr, 0, nullptr));
    ZE_OK(zeContextSystemBarrier(z->context, dev));
    EXPECT_EQ(dst, src);
    EXPECT_EQ(zeContextSystemBarrier(z->context, nullptr), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    ZE_OK(zeCommandListDestroy(l));
}

// zeVirtualMemQueryPageSize never answers SUCCESS with a page size of 0 (the conformance
// suite divides by the answer): a non-zero size, or UNSUPPORTED_FEATURE where the runtime has no
// virtual memory, as zecl has none, leaving the caller's value alone.
TEST_F(ZeclTest, GivenAnySize_WhenThePageSizeIsQueried_ThenNonZeroOrUnsupported) {
    for (size_t size : {size_t(1), size_t(4096), size_t(2) << 20, size_t(1) << 40, SIZE_MAX}) {
        size_t pageSize = 12345;
        const ze_result_t r = zeVirtualMemQueryPageSize(z->context, dev, size, &pageSize);
        EXPECT_TRUE((r == ZE_RESULT_SUCCESS && pageSize > 0) || r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
            << "size " << size << ": result " << r << ", page size " << pageSize;
        EXPECT_EQ(r, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) << "zecl reserves no virtual memory";
        EXPECT_EQ(pageSize, 12345u) << "written on failure";
    }
    size_t pageSize = 0;
    EXPECT_EQ(zeVirtualMemQueryPageSize(z->context, dev, 0, &pageSize),
              ZE_RESULT_ERROR_UNSUPPORTED_SIZE);  // the spec's
    EXPECT_EQ(zeVirtualMemQueryPageSize(z->context, dev, 4096, nullptr), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    EXPECT_EQ(zeVirtualMemQueryPageSize(nullptr, dev, 4096, &pageSize), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    EXPECT_EQ(zeVirtualMemQueryPageSize(z->context, nullptr, 4096, &pageSize), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    EXPECT_EQ(pageSize, 0u);
}

}  // namespace
}  // namespace zecl_test
