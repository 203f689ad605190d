// KernelTuning (scheduler/kernel_tuning.hpp): the tuning text parsed and checked, described
// back, turned into each kernel file's build options, and the tiles recommended per device.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <stdexcept>
#include <string>

#include "zp/runtime/ze.hpp"
#include "zp/scheduler/kernel_tuning.hpp"

namespace {

TEST(KernelTuning, GivenATuningString_WhenParsed_ThenItsKeysOverrideThePackagedDefaults) {
    using zp::scheduler::KernelTuning;
    const auto t = KernelTuning::parse("cols_per_wg=16,cols_per_item=4,e2m1_decode=0");
    EXPECT_EQ(t.colsPerWorkGroup, 16);
    EXPECT_EQ(t.colsPerItem, 4);
    EXPECT_EQ(t.rowsPerPass, KernelTuning{}.rowsPerPass);
    EXPECT_EQ(t.e2m1Decode, 0);
    EXPECT_FALSE(t.isPackaged());
    EXPECT_TRUE(KernelTuning::parse("").isPackaged());
    EXPECT_EQ(KernelTuning::parse(t.describe()), t);
    try {
        (void)KernelTuning::parse("cols_per_wg=99999999999");
        ADD_FAILURE() << "cols_per_wg=99999999999 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), "kernel tuning: cols_per_wg = '99999999999' is out of range");
    }
    // a key given again overrides: a named tuning varied by appending to it
    EXPECT_EQ(KernelTuning::parse(t.describe() + ",cols_per_wg=32").colsPerWorkGroup, 32);
    EXPECT_EQ(KernelTuning::parse("cols_per_wg=32,cols_per_item=4,e2m1_decode=0,cols_per_wg=16"), t);
    EXPECT_EQ(t.buildOptions(),
              "-DZP_GEMM_COLS_PER_WG=16 -DZP_GEMM_COLS_PER_ITEM=4 -DZP_GEMM_ROWS_PER_PASS=2 -DZP_E2M1_DECODE=0 "
              "-DZP_GEMM_TILE=0");
    try {  // the block tile is gone; the error says so and names what to use
        (void)KernelTuning::parse("gemm_tile=1");
        ADD_FAILURE() << "gemm_tile=1 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("gemm_tile 1 (the block tile) is gone"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("use 2 (stream) or 0 (lanes)"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(KernelTuning::parse("packaged").isPackaged());
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2").gemmTile, 2);  // stream_split 8 x cols_per_item 2
    EXPECT_THROW(KernelTuning::parse("gemm_tile=3"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_split=4"), std::invalid_argument);  // 4 x 2 < 16
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_split=3,cols_per_item=16"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_chunk=24"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,b_cols_per_item=2,cols_per_item=4,stream_split=4"),
                 std::invalid_argument);                                        // kernel B's tile: 4 x 2
    EXPECT_THROW(KernelTuning::parse("e2m1_decode=4"), std::invalid_argument);  // the local table: stream tile only
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,e2m1_decode=4").e2m1Decode, 4);
    for (const char* gone : {"gemm_tile=2,e2m1_decode=2", "gemm_tile=2,e2m1_decode=5"}) {
        try {
            KernelTuning::parse(gone);
            ADD_FAILURE() << gone << " was accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_THAT(e.what(), ::testing::HasSubstr("is gone")) << gone;
        }
    }
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,e2m1_decode=3").e2m1Decode, 3);
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,e2m1_decode=6").e2m1Decode, 6);  // the byte permute
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,e2m1_decode=7"), std::invalid_argument);
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,stream_prefetch_one_row=2").streamPrefetchOneRow, 2);
    EXPECT_THAT(KernelTuning::parse("gemm_tile=2,stream_prefetch_one_row=2").buildOptions(),
                ::testing::HasSubstr("-DZP_STREAM_PREFETCH_ONE_ROW=2"));
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_prefetch_one_row=3"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("stream_prefetch_one_row=2"), std::invalid_argument);  // stream tile only
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,stream_carry=1").streamCarry, 1);
    EXPECT_THAT(KernelTuning::parse("gemm_tile=2,stream_carry=1").buildOptions(),
                ::testing::HasSubstr("-DZP_STREAM_CARRY=1"));
    EXPECT_THROW(KernelTuning::parse("stream_carry=1"), std::invalid_argument);  // stream tile only
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_carry=2"), std::invalid_argument);
    // the carry's registers are the second iteration's: one iteration in flight in both bodies
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_carry=1,stream_prefetch=2"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_carry=1,stream_prefetch_one_row=2"), std::invalid_argument);
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,stream_carry=1,stream_prefetch_one_row=1").streamCarry, 1);
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,spread_units=1").spreadUnits, 1);
    EXPECT_THAT(KernelTuning::parse("gemm_tile=2,spread_units=2").buildOptions(),
                ::testing::HasSubstr("-DZP_SPREAD_UNITS=2"));
    EXPECT_THAT(KernelTuning::parse("gemm_tile=2").buildOptions(), ::testing::Not(::testing::HasSubstr("SPREAD")));
    EXPECT_THROW(KernelTuning::parse("spread_units=1"), std::invalid_argument);  // stream tile only
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,spread_units=3"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,spread_units=-1"), std::invalid_argument);
    // kernel B's runs of 1-row expert groups: 1 (one group per unit) by default, 0 automatic, 2-16 fixed
    EXPECT_EQ(KernelTuning{}.bRuns, 1);
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,b_runs=0").bRuns, 0);
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,b_runs=16").bRuns, 16);
    EXPECT_THAT(KernelTuning::parse("gemm_tile=2,b_runs=0").buildOptions(), ::testing::HasSubstr("-DZP_B_RUNS=0"));
    EXPECT_THAT(KernelTuning::parse("gemm_tile=2,b_runs=3").describe(), ::testing::EndsWith(",gemm_tile=2,b_runs=3"));
    EXPECT_THAT(KernelTuning::parse("gemm_tile=2").buildOptions(), ::testing::Not(::testing::HasSubstr("B_RUNS")));
    EXPECT_THROW(KernelTuning::parse("b_runs=0"), std::invalid_argument);  // stream tile only
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,b_runs=17"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,b_runs=-1"), std::invalid_argument);
    // a run crosses into its next group with the 1-row body's one iteration in flight
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,b_runs=0,stream_prefetch_one_row=2"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,b_runs=0,stream_prefetch=2"), std::invalid_argument);
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,b_runs=0,stream_prefetch=2,stream_prefetch_one_row=1").bRuns, 0);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,ablation=1"), std::invalid_argument);  // benchmarks only
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,ablation=3", KernelTuning::Ablation::allowed).ablation, 3);
    EXPECT_EQ(KernelTuning::parse("gemm_tile=2,ablation=4", KernelTuning::Ablation::allowed).ablation, 4);  // no loads
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,ablation=5", KernelTuning::Ablation::allowed), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("ablation=1", KernelTuning::Ablation::allowed), std::invalid_argument);
    {
        const auto stream = KernelTuning::parse("gemm_tile=2,cols_per_item=4,stream_split=4,stream_chunk=32");
        EXPECT_EQ(
            stream.describe(),
            "cols_per_wg=8,cols_per_item=4,rows_per_pass=2,e2m1_decode=1,gemm_tile=2,stream_split=4,stream_chunk=32");
        EXPECT_EQ(KernelTuning::parse(stream.describe()), stream);
        EXPECT_NE(stream.buildOptions().find("-DZP_STREAM_SPLIT=4 -DZP_STREAM_CHUNK=32"), std::string::npos);
    }
    {
        const auto two = KernelTuning::parse("gemm_tile=2,stream_prefetch=2");
        EXPECT_EQ(two.streamPrefetch, 2);
        EXPECT_NE(two.describe().find(",stream_prefetch=2"), std::string::npos) << two.describe();
        EXPECT_NE(two.buildOptions().find("-DZP_STREAM_PREFETCH=2"), std::string::npos) << two.buildOptions();
        EXPECT_EQ(KernelTuning::parse("gemm_tile=2").describe().find("stream_prefetch"), std::string::npos);
    }
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_prefetch=3"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=2,stream_prefetch=0"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("gemm_tile=0,stream_prefetch=2"), std::invalid_argument);  // stream tile only
    EXPECT_THROW(KernelTuning::parse("cols_per_item=3"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("cols_per_wg=6,cols_per_item=4"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("rows=2"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("rows_per_pass=two"), std::invalid_argument);
}

TEST(KernelTuning, GivenKernelBTiles_WhenAskedForEachFilesTiles_ThenTwoLaunchBGetsItsOwnColumnTile) {
    using zp::scheduler::KernelTuning;
    const auto t = KernelTuning::parse("cols_per_wg=32,cols_per_item=4,b_cols_per_wg=8,b_cols_per_item=2");
    // B's module is built with B's tile, every other file with the GEMM tile; b_cols_* are no -D.
    EXPECT_EQ(t.forKernelFile("two_launch_b").buildOptions(),
              "-DZP_GEMM_COLS_PER_WG=8 -DZP_GEMM_COLS_PER_ITEM=2 -DZP_GEMM_ROWS_PER_PASS=2 -DZP_E2M1_DECODE=1 "
              "-DZP_GEMM_TILE=0");
    EXPECT_EQ(t.forKernelFile("two_launch_a").buildOptions(),
              "-DZP_GEMM_COLS_PER_WG=32 -DZP_GEMM_COLS_PER_ITEM=4 -DZP_GEMM_ROWS_PER_PASS=2 -DZP_E2M1_DECODE=1 "
              "-DZP_GEMM_TILE=0");
    EXPECT_EQ(KernelTuning::parse(t.describe()), t);
    EXPECT_THROW(KernelTuning::parse("b_per_row=1"), std::invalid_argument);  // kernel B has one form
    EXPECT_EQ(KernelTuning::parse("max_registers=128").maxRegisters, 128);    // no -D: a compiler option
    EXPECT_EQ(KernelTuning::parse("max_registers=128").buildOptions(), KernelTuning{}.buildOptions());
    // NVIDIA's compiler option, with the required group size left out (ptxas ignores the cap on
    // a kernel that has one); nothing without a cap.
    EXPECT_EQ(KernelTuning::parse("max_registers=128").nvidiaRegisterOptions(),
              " -cl-nv-maxrregcount=128 -DZP_NO_REQD_GROUP_SIZE=1");
    EXPECT_EQ(KernelTuning{}.nvidiaRegisterOptions(), "");
    EXPECT_THROW(KernelTuning::parse("max_registers=8"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("max_registers=256"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("b_cols_per_wg=6,b_cols_per_item=4"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("b_cols_per_item=3"), std::invalid_argument);
    EXPECT_THROW(KernelTuning::parse("b_cols_per_wg=-8"), std::invalid_argument);
}

TEST(KernelTuning, GivenADevice_WhenItsRecommendedTilesAreAsked_ThenOnlyNvidiaGpusThroughZeclGetTheStreamTile) {
    using zp::scheduler::KernelTuning;
    zp::runtime::DeviceInfo d;
    d.kind = zp::runtime::DriverKind::Zecl;
    d.props.type = ZE_DEVICE_TYPE_GPU;
    d.props.vendorId = 0x10de;
    const auto nvidia = KernelTuning::recommendedFor(d);
    EXPECT_EQ(nvidia.gemmTile, 2);
    EXPECT_EQ(
        nvidia.describe(),
        "cols_per_wg=64,cols_per_item=4,rows_per_pass=2,e2m1_decode=6,gemm_tile=2,stream_split=16,stream_chunk=128,"
        "stream_carry=1,spread_units=1,b_runs=0,max_registers=128");
    d.props.type = ZE_DEVICE_TYPE_CPU;  // PoCL
    EXPECT_TRUE(KernelTuning::recommendedFor(d).isPackaged());
    d.props.type = ZE_DEVICE_TYPE_GPU;
    d.props.vendorId = 0x8086;
    d.kind = zp::runtime::DriverKind::Intel;  // native binaries or SPIR-V: the packaged tiles only
    EXPECT_TRUE(KernelTuning::recommendedFor(d).isPackaged());
}

}  // namespace
