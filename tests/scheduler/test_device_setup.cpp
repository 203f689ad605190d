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
