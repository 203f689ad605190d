// zecl's count of the work-groups one NVIDIA SM keeps resident (driver/src/nvidia_sm.cpp), the
// basis of zeKernelSuggestMaxCooperativeGroupCount on NVIDIA GPUs (host only, no device).
#include <gtest/gtest.h>

#include "nvidia_sm.hpp"

namespace {

using zecl::nvidiaGroupsPerSm;
using zecl::NvidiaKernelUse;
using zecl::NvidiaSm;

// An H200's SM as NVIDIA's OpenCL describes it: 64 Ki registers, 48 KiB per group, 9.0.
NvidiaSm hopper() {
    return {.warp = 32,
            .registers = 65536,
            .sharedPerSm = zecl::nvidiaSharedMemoryPerSm(9, 0),
            .localPerGroup = 48 * 1024,
            .ccMajor = 9};
}

TEST(NvidiaSm, GivenComputeCapabilities_WhenSharedMemoryPerSmIsAsked_ThenTheGuidesFiguresOrUnknown) {
    EXPECT_EQ(zecl::nvidiaSharedMemoryPerSm(9, 0), 228u * 1024);
    EXPECT_EQ(zecl::nvidiaSharedMemoryPerSm(8, 0), 164u * 1024);
    EXPECT_EQ(zecl::nvidiaSharedMemoryPerSm(8, 6), 100u * 1024);
    EXPECT_EQ(zecl::nvidiaSharedMemoryPerSm(7, 5), 64u * 1024);
    EXPECT_EQ(zecl::nvidiaSharedMemoryPerSm(6, 1), 0u);  // not in the table: unknown
    EXPECT_EQ(zecl::nvidiaSharedMemoryPerSm(0, 0), 0u);
}

TEST(NvidiaSm, GivenPtxasRegisters_WhenGroupsPerSmAreCounted_ThenTheRegisterFileDecides) {
    // 256 work-items: 128 registers -> 2 groups, 172 -> 1, 96 -> 2 (3 would need 73728), 64 -> 4.
    for (auto [regs, want] : {std::pair{128u, 2u}, {172u, 1u}, {96u, 2u}, {64u, 4u}, {32u, 4u}})
        EXPECT_EQ(nvidiaGroupsPerSm({.groupSize = 256, .maxGroupSize = 256, .registers = regs}, hopper()), want)
            << regs << " registers";
}

TEST(NvidiaSm, GivenNoRegisterCount_WhenGroupsPerSmAreCounted_ThenTheKernelsWorkGroupSizeDecides) {
    // A reqd_work_group_size pins CL_KERNEL_WORK_GROUP_SIZE to the group: one group.
    EXPECT_EQ(nvidiaGroupsPerSm({.groupSize = 256, .maxGroupSize = 256}, hopper()), 1u);
    EXPECT_EQ(nvidiaGroupsPerSm({.groupSize = 256, .maxGroupSize = 1024}, hopper()), 4u);
    EXPECT_EQ(nvidiaGroupsPerSm({.groupSize = 100, .maxGroupSize = 1024}, hopper()), 8u);  // 100 -> 128 in warps
}

TEST(NvidiaSm, GivenLocalMemory_WhenGroupsPerSmAreCounted_ThenTheSmsSharedMemoryLessOneKibPerGroupBounds) {
    // one_launch at rows_per_pass=2, stream_chunk=128: 45140 bytes. Hopper's 228 KiB hold 4 such
    // groups (+ 1 KiB each); the registers (128) allow 2.
    const NvidiaKernelUse k{.groupSize = 256, .maxGroupSize = 256, .registers = 128, .localBytes = 45140};
    EXPECT_EQ(nvidiaGroupsPerSm(k, hopper()), 2u);
    EXPECT_EQ(nvidiaGroupsPerSm({.groupSize = 64, .maxGroupSize = 64, .registers = 32, .localBytes = 45140}, hopper()),
              5u);  // 233472 / 46164
    // Compute capability unknown: one group's 48 KiB stands for the SM.
    NvidiaSm unknown = hopper();
    unknown.sharedPerSm = 0;
    EXPECT_EQ(nvidiaGroupsPerSm(k, unknown), 1u);
    // Before 8.0 no KiB is kept per group: 96 KiB / 24 KiB = 4.
    const NvidiaSm volta{
        .warp = 32, .registers = 65536, .sharedPerSm = 96 * 1024, .localPerGroup = 48 * 1024, .ccMajor = 7};
    EXPECT_EQ(nvidiaGroupsPerSm({.groupSize = 64, .maxGroupSize = 64, .registers = 32, .localBytes = 24 * 1024}, volta),
              4u);
}

TEST(NvidiaSm, GivenTinyGroups_WhenGroupsPerSmAreCounted_ThenAtMostSixteen) {
    EXPECT_EQ(nvidiaGroupsPerSm({.groupSize = 32, .maxGroupSize = 1024, .registers = 16}, hopper()), 16u);
}

}  // namespace
