// zecl's SPIR-V argument reader (driver/src/spirv_args.cpp) on the packaged SPIR-V modules: the
// kinds zecl falls back to when an OpenCL platform keeps no argument info for IL programs.
#include "spirv_args.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using zecl::ArgKind;
using zecl::spirvKernelArgKinds;

std::vector<uint8_t> readModule(const std::string& stem) {
    std::ifstream f(std::string(ZP_KERNEL_ARTIFACT_DIR) + "/spirv/" + stem + ".spv", std::ios::binary);
    EXPECT_TRUE(f) << stem;
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(SpirvArgs, GivenTheLoaderFusedKernel_WhenRead_ThenPointersValuesAndTheLocalTileAreTold) {
    const auto kinds = spirvKernelArgKinds(readModule("gemm2_mxfp4_m2_loader_fused"), "gemm2_mxfp4_m2_loader_fused");
    ASSERT_TRUE(kinds);
    // gate_up, silu, w2_blocks, w2_scales, route_info, groups, y; hidden, intermediate, limit,
    // up_bias, layout; act_tile (local)
    const std::vector<ArgKind> want = {ArgKind::Pointer, ArgKind::Pointer, ArgKind::Pointer, ArgKind::Pointer,
                                       ArgKind::Pointer, ArgKind::Pointer, ArgKind::Pointer, ArgKind::Value,
                                       ArgKind::Value,   ArgKind::Value,   ArgKind::Value,   ArgKind::Value,
                                       ArgKind::Local};
    EXPECT_EQ(*kinds, want);
}

TEST(SpirvArgs, GivenAModuleOfSeveralKernels_WhenEachIsRead_ThenEachGetsItsOwnParameters) {
    const auto module = readModule("m1_oracle_mxfp4");
    const auto swiglu = spirvKernelArgKinds(module, "m1_swiglu");
    ASSERT_TRUE(swiglu);
    // gate_up, silu, topk_ids, act; intermediate, limit, up_bias, layout, experts, cards, card
    EXPECT_EQ(swiglu->size(), 11u);
    EXPECT_EQ(std::count(swiglu->begin(), swiglu->end(), ArgKind::Pointer), 4);
    const auto gemm2 = spirvKernelArgKinds(module, "m1_gemm2");
    ASSERT_TRUE(gemm2);
    EXPECT_EQ(gemm2->size(), 10u);
}

TEST(SpirvArgs, GivenNoSuchKernelOrBrokenBytes_WhenRead_ThenNothingIsGuessed) {
    auto module = readModule("gather_bf16");
    EXPECT_FALSE(spirvKernelArgKinds(module, "no_such_kernel"));
    EXPECT_FALSE(spirvKernelArgKinds(std::vector<uint8_t>(64, 0xAB), "gather_bf16"));
    module.resize(module.size() / 2 & ~size_t(3));  // truncated mid-instruction
    EXPECT_FALSE(spirvKernelArgKinds(module, "gather_bf16"));
}

}  // namespace
