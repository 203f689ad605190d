// The scheduler's device errors (scheduler/device_errors.hpp): what a failed Level Zero call
// means to a caller, and a device spec that names no device, read without a device.
#include <gtest/gtest.h>

#include <string>

#include "zp/runtime/ze.hpp"
#include "zp/scheduler/device_errors.hpp"

namespace {

using zp::scheduler::ZeFailure;

zp::runtime::Error failed(ze_result_t code, std::string extra = {}) {
    return zp::runtime::Error(code, "zeDeviceGet(driver, &count, nullptr)", "device.cpp", 12, std::move(extra));
}

TEST(DeviceErrors, GivenFailedCalls_WhenClassified_ThenEachResultMeansWhatTheFacadeSays) {
    EXPECT_EQ(zp::scheduler::classify(failed(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)), ZeFailure::KernelBuild);
    EXPECT_EQ(zp::scheduler::classify(failed(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)), ZeFailure::KernelBuild);
    EXPECT_EQ(zp::scheduler::classify(failed(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)), ZeFailure::Unsupported);
    EXPECT_EQ(zp::scheduler::classify(failed(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)), ZeFailure::OutOfMemory);
    EXPECT_EQ(zp::scheduler::classify(failed(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)), ZeFailure::NotFound);
    EXPECT_EQ(zp::scheduler::classify(failed(ZE_RESULT_ERROR_DEVICE_LOST)), ZeFailure::Device);
}

TEST(DeviceErrors, GivenASpecThatNamesNoDevice_WhenThrown_ThenItKeepsTheReasonAndTellsTheFormsApart) {
    const zp::scheduler::NoSuchDevice index("7",
                                            failed(ZE_RESULT_ERROR_INVALID_ARGUMENT, "device '7': index out of range"));
    EXPECT_EQ(index.spec(), "7");
    EXPECT_EQ(index.reason(), "index out of range");
    EXPECT_EQ(std::string(index.what()), std::string(index.cause().what()));
    EXPECT_EQ(index.cause().code(), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(index.wellFormed());
    EXPECT_TRUE(zp::scheduler::NoSuchDevice("ZECL", failed(ZE_RESULT_ERROR_INVALID_ARGUMENT)).wellFormed());
    EXPECT_TRUE(zp::scheduler::NoSuchDevice("intel", failed(ZE_RESULT_ERROR_INVALID_ARGUMENT)).wellFormed());
    const zp::scheduler::NoSuchDevice bogus("bogus", failed(ZE_RESULT_ERROR_INVALID_ARGUMENT, "no such form"));
    EXPECT_FALSE(bogus.wellFormed());
    EXPECT_EQ(bogus.reason(), "no such form");  // no "device '<spec>': " prefix to take off
}

}  // namespace
