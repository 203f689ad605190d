// Device-free tests of zp::runtime: result names, the error type, timestamp conversion and
// the ZE_ENABLE_ALT_DRIVERS value.
#include "zp/runtime/ze.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

ze_device_properties_t propsWith(ze_structure_type_t stype, uint64_t timerResolution) {
    ze_device_properties_t p{};
    p.stype = stype;
    p.timerResolution = timerResolution;
    return p;
}

zp::runtime::DeviceInfo infoWith(ze_structure_type_t stype, uint64_t timerResolution, uint32_t kernelBits) {
    zp::runtime::DeviceInfo d;
    d.props = propsWith(stype, timerResolution);
    d.props.kernelTimestampValidBits = kernelBits;
    return d;
}

}  // namespace

TEST(ResultName, GivenEverySpec14Result_WhenNamed_ThenNameMatchesEnumerator) {
    EXPECT_STREQ(zp::runtime::resultName(ZE_RESULT_SUCCESS), "ZE_RESULT_SUCCESS");
    EXPECT_STREQ(zp::runtime::resultName(ZE_RESULT_NOT_READY), "ZE_RESULT_NOT_READY");
    EXPECT_STREQ(zp::runtime::resultName(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE), "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE");
    EXPECT_STREQ(zp::runtime::resultName(ZE_RESULT_ERROR_INVALID_KERNEL_NAME), "ZE_RESULT_ERROR_INVALID_KERNEL_NAME");
    EXPECT_STREQ(zp::runtime::resultName(ZE_RESULT_EXP_ERROR_REMOTE_DEVICE), "ZE_RESULT_EXP_ERROR_REMOTE_DEVICE");
    EXPECT_STREQ(zp::runtime::resultName(ZE_RESULT_WARNING_ACTION_REQUIRED), "ZE_RESULT_WARNING_ACTION_REQUIRED");
    EXPECT_STREQ(zp::runtime::resultName(ZE_RESULT_ERROR_UNKNOWN), "ZE_RESULT_ERROR_UNKNOWN");
}

TEST(ResultName, GivenAllKnownResults_WhenNamed_ThenNoneIsUnknown) {
    // The 1.4 enumerators by value (ze_api.h); a missing case would print "<unknown".
    const ze_result_t all[] = {
        ZE_RESULT_SUCCESS,
        ZE_RESULT_NOT_READY,
        ZE_RESULT_ERROR_DEVICE_LOST,
        ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY,
        ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,
        ZE_RESULT_ERROR_MODULE_BUILD_FAILURE,
        ZE_RESULT_ERROR_MODULE_LINK_FAILURE,
        ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET,
        ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE,
        ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX,
        ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE,
        ZE_RESULT_EXP_ERROR_REMOTE_DEVICE,
        ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS,
        ZE_RESULT_ERROR_NOT_AVAILABLE,
        ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE,
        ZE_RESULT_WARNING_DROPPED_DATA,
        ZE_RESULT_ERROR_UNINITIALIZED,
        ZE_RESULT_ERROR_UNSUPPORTED_VERSION,
        ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
        ZE_RESULT_ERROR_INVALID_ARGUMENT,
        ZE_RESULT_ERROR_INVALID_NULL_HANDLE,
        ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE,
        ZE_RESULT_ERROR_INVALID_NULL_POINTER,
        ZE_RESULT_ERROR_INVALID_SIZE,
        ZE_RESULT_ERROR_UNSUPPORTED_SIZE,
        ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT,
        ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT,
        ZE_RESULT_ERROR_INVALID_ENUMERATION,
        ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION,
        ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT,
        ZE_RESULT_ERROR_INVALID_NATIVE_BINARY,
        ZE_RESULT_ERROR_INVALID_GLOBAL_NAME,
        ZE_RESULT_ERROR_INVALID_KERNEL_NAME,
        ZE_RESULT_ERROR_INVALID_FUNCTION_NAME,
        ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION,
        ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION,
        ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX,
        ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE,
        ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE,
        ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED,
        ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE,
        ZE_RESULT_ERROR_OVERLAPPING_REGIONS,
        ZE_RESULT_WARNING_ACTION_REQUIRED,
        ZE_RESULT_ERROR_UNKNOWN,
    };
    for (ze_result_t r : all) {
        std::string name = zp::runtime::resultName(r);
        EXPECT_EQ(name.rfind("ZE_RESULT_", 0), 0u) << name;
        EXPECT_EQ(name.find("unknown"), std::string::npos) << "value " << r;
    }
}

TEST(ResultName, GivenAValueOutsideTheEnum_WhenNamed_ThenHexValueIsShown) {
    std::string name = zp::runtime::resultName(static_cast<ze_result_t>(0x7123abcd));
    EXPECT_NE(name.find("0x7123abcd"), std::string::npos) << name;
}

TEST(Error, GivenAFailingCall_WhenZeCheckThrows_ThenErrorKeepsCodeExpressionAndLocation) {
    auto failing = [] { return ZE_RESULT_ERROR_INVALID_ARGUMENT; };
    try {
        ZE_CHECK(failing());
        FAIL() << "ZE_CHECK did not throw";
    } catch (const zp::runtime::Error& e) {
        EXPECT_EQ(e.code(), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        EXPECT_STREQ(e.codeName(), "ZE_RESULT_ERROR_INVALID_ARGUMENT");
        EXPECT_EQ(e.expression(), "failing()");
        EXPECT_NE(e.file().find("runtime_pure_test.cpp"), std::string::npos);
        EXPECT_GT(e.line(), 0);
        EXPECT_NE(std::string(e.what()).find("ZE_RESULT_ERROR_INVALID_ARGUMENT"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("failing()"), std::string::npos);
    }
}

TEST(Error, GivenSuccess_WhenChecked_ThenNothingIsThrown) { EXPECT_NO_THROW(ZE_CHECK(ZE_RESULT_SUCCESS)); }

TEST(Error, GivenExtraText_WhenThrown_ThenWhatEndsWithIt) {
    zp::runtime::Error e(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, "zeModuleCreate", "f.cpp", 7, "line 3: error: x");
    EXPECT_EQ(e.extra(), "line 3: error: x");
    std::string what = e.what();
    EXPECT_NE(what.find("f.cpp:7"), std::string::npos) << what;
    EXPECT_NE(what.find("line 3: error: x"), std::string::npos) << what;
}

TEST(Timestamp, GivenLegacyStype_WhenConverted_ThenTimerResolutionIsNsPerTick) {
    auto d = infoWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, 52, 32);
    EXPECT_DOUBLE_EQ(zp::runtime::timestampToNs(d, 1000), 52000.0);
}

TEST(Timestamp, GivenStype12_WhenConverted_ThenTimerResolutionIsTicksPerSecond) {
    auto d = infoWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2, 19'200'000, 32);  // 19.2 MHz
    EXPECT_NEAR(zp::runtime::timestampToNs(d, 192), 10'000.0, 1e-6);
    auto ns = infoWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2, 1'000'000'000, 64);
    EXPECT_DOUBLE_EQ(zp::runtime::timestampToNs(ns, 123456789), 123456789.0);
}

TEST(Timestamp, Given32ValidBits_WhenTicksOverflow_ThenHighBitsAreMasked) {
    auto d = infoWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, 1, 32);
    EXPECT_DOUBLE_EQ(zp::runtime::timestampToNs(d, 0x1'0000'0005ull), 5.0);
}

TEST(Timestamp, Given36ValidBits_WhenTicksOverflow_ThenHighBitsAreMasked) {
    auto d = infoWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, 2, 36);
    EXPECT_DOUBLE_EQ(zp::runtime::timestampToNs(d, (1ull << 36) | 7), 14.0);
    EXPECT_DOUBLE_EQ(zp::runtime::timestampToNs(d, (1ull << 35)), double(1ull << 36));
}

TEST(Timestamp, Given64ValidBits_WhenConverted_ThenNothingIsMaskedAndNoShiftOverflows) {
    EXPECT_EQ(zp::runtime::validBitsMask(64), ~0ull);
    EXPECT_EQ(zp::runtime::validBitsMask(65), ~0ull);
    EXPECT_EQ(zp::runtime::validBitsMask(63), ~0ull >> 1);
    EXPECT_EQ(zp::runtime::validBitsMask(36), (1ull << 36) - 1);
    EXPECT_EQ(zp::runtime::validBitsMask(32), 0xffff'ffffull);
    auto d = infoWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, 1, 64);
    EXPECT_DOUBLE_EQ(zp::runtime::timestampToNs(d, 1ull << 40), double(1ull << 40));
}

TEST(Timestamp, GivenEndAfterWrapAround_WhenDurationTaken_ThenItIsTheShortForwardDistance) {
    auto c32 = zp::runtime::TimestampClock::fromProperties(propsWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, 1), 32);
    EXPECT_EQ(c32.durationTicks(0xffff'fff0u, 0x10u), 0x20u);
    EXPECT_DOUBLE_EQ(c32.durationNs(100, 250), 150.0);

    auto c36 = zp::runtime::TimestampClock::fromProperties(propsWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, 1), 36);
    EXPECT_EQ(c36.durationTicks((1ull << 36) - 3, 5), 8u);

    auto c64 = zp::runtime::TimestampClock::fromProperties(
        propsWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2, 1'000'000'000), 64);
    EXPECT_EQ(c64.durationTicks(~0ull - 1, 3), 5u);
    EXPECT_DOUBLE_EQ(c64.durationNs(10, 30), 20.0);
}

TEST(Timestamp, GivenDeviceInfo_WhenClocksTaken_ThenKernelAndGlobalUseTheirOwnValidBits) {
    zp::runtime::DeviceInfo d = infoWith(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, 1, 32);
    d.props.timestampValidBits = 36;
    EXPECT_EQ(d.kernelClock().mask, 0xffff'ffffull);
    EXPECT_EQ(d.globalClock().mask, (1ull << 36) - 1);
}

TEST(AltDrivers, GivenTheEnvironment_WhenDefaultAltDriversBuilt_ThenItIsNonEmptyAbsoluteAndHasNoSpaces) {
    // ctest sets ZP_ZECL_PATH; on a machine with neither driver the call throws rather than
    // returning an empty value.
    std::string value;
    try {
        value = zp::runtime::defaultAltDrivers();
    } catch (const zp::runtime::Error& e) {
        EXPECT_EQ(e.code(), ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE);
        GTEST_SKIP() << "neither libze_intel_gpu.so.1 nor libze_zecl.so here: " << e.what();
    }
    ASSERT_FALSE(value.empty());
    EXPECT_EQ(value.find(' '), std::string::npos) << value;
    EXPECT_NE(value.back(), ',');
    size_t start = 0;
    while (start <= value.size()) {
        size_t end = value.find(',', start);
        std::string item = value.substr(start, end == std::string::npos ? std::string::npos : end - start);
        EXPECT_FALSE(item.empty()) << value;
        EXPECT_EQ(item.front(), '/') << "not absolute: " << item;
        if (end == std::string::npos) break;
        start = end + 1;
    }
}

TEST(AltDrivers, GivenAnExplicitZeclPath_WhenItExists_ThenItIsUsedAbsolute) {
    // Any existing file stands in for the library: the function only locates it.
    auto found = zp::runtime::findZeclLibrary(std::string("/bin/sh"));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->front(), '/');
    std::string value = zp::runtime::defaultAltDrivers(std::string("/bin/sh"));
    EXPECT_NE(value.find("/bin/sh"), std::string::npos) << value;
}

TEST(AltDrivers, GivenAMissingExplicitZeclPath_WhenLookedUp_ThenErrorNamesThePath) {
    try {
        zp::runtime::findZeclLibrary(std::string("/nonexistent/libze_zecl.so"));
        FAIL() << "no throw";
    } catch (const zp::runtime::Error& e) {
        EXPECT_EQ(e.code(), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(e.what()).find("/nonexistent/libze_zecl.so"), std::string::npos);
    }
}
