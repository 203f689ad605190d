// planChain (scheduler/chain_plan.hpp): each variant's launches, their grids and tiles, without
// a device; and gridRanks (device_chain.hpp), the host model of one_launch's group ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "reduced_shape.hpp"
#include "zp/probe/variant.hpp"
#include "zp/scheduler/chain_plan.hpp"
#include "zp/scheduler/device_chain.hpp"
#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/kernel_tuning.hpp"

namespace {

using zp::probe::Variant;
using zp::scheduler::test::reducedShape;

TEST(ChainPlan, GivenEachVariant_WhenPlanned_ThenItLaunchesTheKernelsOfDesignMd) {
    const auto s = reducedShape();
    auto names = [&](Variant v) {
        std::vector<std::string> n;
        for (const auto& l : zp::scheduler::planChain(v, s, {}).launches) n.push_back(l.kernel);
        return n;
    };
    using V = std::vector<std::string>;
    EXPECT_EQ(names(Variant::Baseline), (V{"route_compact", "remap_rows_bf16", "gemm1_mxfp4_m2", "swiglu_bf16",
                                           "gemm2_mxfp4_m2", "gather_bf16"}));
    EXPECT_EQ(names(Variant::Gemm2LoaderFused),
              (V{"route_compact", "remap_rows_bf16", "gemm1_mxfp4_m2", "gemm2_mxfp4_m2_loader_fused", "gather_bf16"}));
    EXPECT_EQ(names(Variant::SourceDirect),
              (V{"route_compact", "gemm1_mxfp4_m2_source_direct", "swiglu_bf16", "gemm2_mxfp4_m2", "gather_bf16"}));
    EXPECT_EQ(names(Variant::PairedEpilogue),
              (V{"route_compact", "remap_rows_bf16", "gemm1_mxfp4_m2_paired", "gemm2_mxfp4_m2", "gather_bf16"}));
    EXPECT_EQ(names(Variant::PairedDirect),
              (V{"route_compact", "gemm1_mxfp4_m2_paired_direct", "gemm2_mxfp4_m2", "gather_bf16"}));
    EXPECT_EQ(names(Variant::M1Oracle), (V{"m1_gemm1", "m1_swiglu", "m1_gemm2", "m1_gather"}));
    EXPECT_EQ(names(Variant::TwoLaunch), (V{"two_launch_a", "two_launch_b"}));
    EXPECT_EQ(names(Variant::OneLaunch), (V{"one_launch"}));
}

TEST(ChainPlan, GivenOneLaunch_WhenPlanned_ThenItIsOneCooperativeLaunchAskingForTheWiderOfItsTwoPhases) {
    const auto s = reducedShape();
    const auto plan = zp::scheduler::planChain(Variant::OneLaunch, s, {});
    ASSERT_EQ(plan.launches.size(), 1u);
    const auto& l = plan.launches[0];
    EXPECT_TRUE(l.cooperative);
    EXPECT_TRUE(zp::probe::cooperative(Variant::OneLaunch));
    EXPECT_FALSE(l.persistent);
    for (Variant v : zp::probe::kAllVariants)
        if (v != Variant::OneLaunch) {
            for (const auto& other : zp::scheduler::planChain(v, s, {}).launches) {
                EXPECT_FALSE(other.cooperative);
                EXPECT_EQ(other.persistent, v == Variant::TwoLaunch) << other.kernel;
            }
        }
    // A: ceil(I / pairs) pair tiles x min(M*K, E/C) expert groups; B: ceil(H / cols) column tiles.
    const zp::scheduler::KernelTuning t;
    const std::uint32_t pairs = std::uint32_t(t.colsPerWorkGroup) / 2, cols = std::uint32_t(t.colsPerWorkGroup);
    const std::uint32_t a =
        (s.intermediate + pairs - 1) / pairs * std::min<std::uint32_t>(s.rows * s.topK, s.localExperts());
    const std::uint32_t b = (s.hidden + cols - 1) / cols;
    EXPECT_EQ(l.groups.x, std::max(a, b));
    EXPECT_EQ(l.groups.y, 1u);
    EXPECT_EQ(l.groups.z, 1u);
}

TEST(ChainPlan, GivenKernelBTiles_WhenTwoLaunchIsPlanned_ThenBothArePersistentAndBGetsItsOwnColumnTile) {
    using zp::scheduler::KernelTuning;
    const auto s = reducedShape();
    const auto t = KernelTuning::parse("cols_per_wg=32,cols_per_item=4,b_cols_per_wg=8,b_cols_per_item=2");
    const auto plan = zp::scheduler::planChain(Variant::TwoLaunch, s, {}, t);
    ASSERT_EQ(plan.launches.size(), 2u);
    const auto& a = plan.launches[0];
    const auto& b = plan.launches[1];
    const std::uint32_t groupSlots = std::min<std::uint32_t>(s.rows * s.topK, s.localExperts());
    EXPECT_EQ(a.group.y, 32u / 4);  // A keeps cols_per_wg / cols_per_item
    EXPECT_EQ(b.group.x, 16u);      // the 16 lanes of CONTRACT §4
    EXPECT_EQ(b.group.y, 8u / 2);
    // Both loop over their units on a 1D grid that asks for one group per unit (DeviceChain takes
    // the resident count where it is smaller): A's (pair tile, expert group) and B's (column
    // tile, expert group) units, as gemm1_paired's and gemm2's work-groups. Plain launches.
    for (const auto* l : {&a, &b}) {
        EXPECT_TRUE(l->persistent) << l->kernel;
        EXPECT_FALSE(l->cooperative) << l->kernel;
        EXPECT_EQ(l->groups.y, 1u) << l->kernel;
        EXPECT_EQ(l->groups.z, 1u) << l->kernel;
    }
    EXPECT_EQ(a.groups.x, (s.intermediate + 15) / 16 * groupSlots);
    EXPECT_EQ(b.groups.x, (s.hidden + 7) / 8 * groupSlots);
    // one_launch is one program (A's tile for B too): its grid asks for the wider of A's and B's units.
    const auto one = zp::scheduler::planChain(Variant::OneLaunch, s, {}, {});
    const std::uint32_t cols = std::uint32_t(KernelTuning{}.colsPerWorkGroup);
    const std::uint32_t unitsA = (s.intermediate + cols / 2 - 1) / (cols / 2) * groupSlots;
    EXPECT_EQ(one.launches[0].groups.x, std::max(unitsA, (s.hidden + cols - 1) / cols * groupSlots));
    // Both read y and tile_done: the scratch and the per-tile counts of ChainBuffers.
    zp::scheduler::ChainBuffers buffers;
    int y = 0, counts = 0;
    buffers.y = &y;
    buffers.tileDone = &counts;
    for (const auto& launch : {zp::scheduler::planChain(Variant::TwoLaunch, s, buffers, t).launches[1],
                               zp::scheduler::planChain(Variant::OneLaunch, s, buffers, {}).launches[0]}) {
        int seen = 0;
        for (const auto& arg : launch.args)
            if (const auto* p = std::get_if<const void*>(&arg)) seen += (*p == &y) + 2 * (*p == &counts);
        EXPECT_EQ(seen, 3) << launch.kernel;
    }
}

TEST(ChainPlan, GivenThePairedEpilogue_WhenPlanned_ThenItKeepsTheBaselineGemm1WorkGroupCount) {
    const auto s = reducedShape();
    const auto base = zp::scheduler::planChain(Variant::Baseline, s, {}).launches[2];
    const auto paired = zp::scheduler::planChain(Variant::PairedEpilogue, s, {}).launches[2];
    EXPECT_EQ(base.groups.x * base.groups.y, paired.groups.x * paired.groups.y);
    EXPECT_EQ(base.group.x * base.group.y, paired.group.x * paired.group.y);
}

TEST(ChainPlan, GivenExpertMatricesBeyond32BitBlockOffsets_WhenTheStreamTileIsPlanned_ThenItIsRefusedByName) {
    const auto stream = zp::scheduler::KernelTuning::parse("gemm_tile=2,cols_per_item=4,stream_split=8");
    auto s = reducedShape();
    s.hidden = 1 << 18;  // W1: 2I = 2^18 rows of 2^13 blocks = 2^31 blocks: still addressable
    s.intermediate = 1 << 17;
    EXPECT_NO_THROW(zp::scheduler::planChain(Variant::Baseline, s, {}, stream));
    s.intermediate = 1 << 18;  // W1: 2^19 rows of 2^13 blocks = 2^32
    try {
        zp::scheduler::planChain(Variant::OneLaunch, s, {}, stream);
        ADD_FAILURE() << "a stream-tile plan past 32-bit block offsets was accepted";
    } catch (const zp::scheduler::TuningNotBuildable& e) {
        EXPECT_NE(std::string(e.what()).find("4294967296 blocks per expert matrix"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("intermediate 262144"), std::string::npos) << e.what();
    }
    // the lane tile addresses rows by 64-bit pointers
    EXPECT_NO_THROW(
        zp::scheduler::planChain(Variant::Baseline, s, {}, zp::scheduler::KernelTuning::parse("gemm_tile=0")));
}

TEST(ChainPlan, GivenATuning_WhenPlanned_ThenTheGemmsGetItsColumnTile) {
    const auto t = zp::scheduler::KernelTuning::parse("cols_per_wg=16,cols_per_item=4,e2m1_decode=0");
    const auto plan = zp::scheduler::planChain(Variant::Baseline, reducedShape(), {}, t);
    EXPECT_EQ(plan.launches[2].group.y, 4u);  // 16 columns, 4 per work-item
    EXPECT_EQ(plan.launches[2].groups.x, 2u * 544 / 16);
}

}  // namespace

// gridRanks, zp_grid_rank's host model (the kernel's own tests: runtime.device): hand-worked
// placements.
TEST(GridRanks, GivenPlacements_WhenRanked_ThenOneGroupPerUnitComesFirstInUnitOrder) {
    using zp::scheduler::gridRanks;
    // units 3 3 1 1 5: slots 0 1 0 1 0; keys (0,3) (1,3) (0,1) (1,1) (0,5) sort as
    // (0,1) (0,3) (0,5) (1,1) (1,3)
    const std::vector<std::uint32_t> two{3, 3, 1, 1, 5};
    EXPECT_EQ(gridRanks(two), (std::vector<std::uint32_t>{1, 4, 0, 3, 2}));
    // the H200's first groups: ids 0-3 on units 9 9 8 8 by id, so ranks 0-1 go to one each
    const std::vector<std::uint32_t> paired{9, 9, 8, 8};
    EXPECT_EQ(gridRanks(paired), (std::vector<std::uint32_t>{1, 3, 0, 2}));
    // one unit: the ids
    EXPECT_EQ(gridRanks(std::vector<std::uint32_t>{7, 7, 7}), (std::vector<std::uint32_t>{0, 1, 2}));
    // a unit out of range: every group its own id
    EXPECT_EQ(gridRanks(std::vector<std::uint32_t>{2, 1, zp::scheduler::kGridRankMaxUnits}),
              (std::vector<std::uint32_t>{0, 1, 2}));
    EXPECT_TRUE(gridRanks({}).empty());
}
