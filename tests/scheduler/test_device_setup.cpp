// DeviceSetup::open (scheduler/device_setup.hpp): the loader, the device, its context and its
// modules from one request, through the real loader on zecl (PoCL in CI); no kernel is built.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/device_setup.hpp"
#include "zp/scheduler/kernel_tuning.hpp"

namespace {

std::string deviceSpec() {
    const char* s = std::getenv("ZP_TEST_DEVICE");
    return s ? s : "zecl";
}

TEST(DeviceSetupOpen, GivenTheTestDevice_WhenOpenedWithoutATuning_ThenItGetsTheTilesRecommendedForIt) {
    const auto setup = zp::scheduler::DeviceSetup::open({.device = deviceSpec(), .tuning = std::nullopt});
    EXPECT_EQ(setup->modules().tuning(), zp::scheduler::KernelTuning::recommendedFor(setup->device()));
    EXPECT_EQ(setup->modules().device().name(), setup->device().name());
    EXPECT_NE(setup->kernelsText().find(setup->modules().choice().why), std::string::npos);
    zp::runtime::CommandQueue queue = setup->makeQueue();
    EXPECT_TRUE(static_cast<bool>(queue));
}

// Other tiles: zecl builds them from its source bundle.
TEST(DeviceSetupOpen, GivenATuning_WhenOpenedOnZecl_ThenItsModulesUseIt) {
    const auto tuning = zp::scheduler::KernelTuning::parse("cols_per_wg=16,cols_per_item=4");
    const auto setup = zp::scheduler::DeviceSetup::open({.device = "zecl", .tuning = tuning});
    EXPECT_EQ(setup->modules().tuning(), tuning);
    EXPECT_NE(setup->kernelsText().find("tiles cols_per_wg=16,cols_per_item=4"), std::string::npos)
        << setup->kernelsText();
}

// The build flags per kernel file: the tile options, and on a CPU device the stream tile's
// one_launch unoptimised (its optimised build takes PoCL minutes), nothing else unoptimised.
TEST(DeviceSetupOpen, GivenTheStreamTile_WhenFlagsAreAskedPerFile_ThenOnlyOneLaunchOnACpuIsUnoptimised) {
    const auto stream = zp::scheduler::KernelTuning::parse("gemm_tile=2,cols_per_wg=32,cols_per_item=4");
    const auto setup = zp::scheduler::DeviceSetup::open({.device = "zecl", .tuning = stream});
    const auto& modules = setup->modules();
    const bool cpu = !modules.device().isGpu();
    for (const char* file : {"one_launch", "one_launch_i64"})
        EXPECT_EQ(modules.buildFlags(file).find("-cl-opt-disable") != std::string::npos, cpu) << file;
    for (const char* file : {"gemm1_mxfp4_m2", "two_launch_a", "gemm2_mxfp4_m2"}) {
        const std::string flags = modules.buildFlags(file);
        EXPECT_EQ(flags.find("-cl-opt-disable"), std::string::npos) << file << ": " << flags;
        EXPECT_NE(flags.find("-DZP_GEMM_TILE=2"), std::string::npos) << file << ": " << flags;
    }
    const auto lanes = zp::scheduler::DeviceSetup::open(
        {.device = "zecl", .tuning = zp::scheduler::KernelTuning::parse("cols_per_wg=16,cols_per_item=4")});
    EXPECT_EQ(lanes->modules().buildFlags("one_launch").find("-cl-opt-disable"), std::string::npos);
}

TEST(DeviceSetupOpen, GivenSpecsThatNameNoDevice_WhenOpened_ThenNoSuchDeviceSaysWhichForm) {
    try {
        zp::scheduler::DeviceSetup::open({.device = "99", .tuning = std::nullopt});
        FAIL() << "device 99 opened";
    } catch (const zp::scheduler::NoSuchDevice& e) {
        EXPECT_EQ(e.spec(), "99");
        EXPECT_TRUE(e.wellFormed());
        EXPECT_EQ(e.cause().code(), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    try {
        zp::scheduler::DeviceSetup::open({.device = "bogus", .tuning = std::nullopt});
        FAIL() << "device 'bogus' opened";
    } catch (const zp::scheduler::NoSuchDevice& e) {
        EXPECT_FALSE(e.wellFormed());
    }
}

}  // namespace
