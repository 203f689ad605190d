// tools/cli's strict option values: a number out of range or malformed is an
// OptionError (exit 2), never saturated, wrapped or dropped.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "zp/cli/option_values.hpp"

using namespace zp::cli;

TEST(OptionValues, GivenMalformedOrOutOfRangeNumbers_ThenOptionErrorNotSaturatedOrDropped) {
    EXPECT_EQ(parseUnsignedOption("18446744073709551615", "--seed", 0, UINT64_MAX), UINT64_MAX);
    for (const char* bad : {"18446744073709551616", "-1", "", " 1", "1 ", "0x10", "+1", "1e3", "1.0"})
        EXPECT_THROW(parseUnsignedOption(bad, "--seed", 0, UINT64_MAX), OptionError) << bad;
    EXPECT_THROW(parseUnsignedOption("0", "--latency-window", 1, 10), OptionError);
    EXPECT_EQ(parseUnsignedList("0,1,3", "--cards", 0, 1023), (std::vector<std::uint64_t>{0, 1, 3}));
    for (const char* bad : {"0,,1", "0,", ",0", "", "0,1024", "0;1"})
        EXPECT_THROW(parseUnsignedList(bad, "--cards", 0, 1023), OptionError) << bad;
}

TEST(OptionValues, GivenCounts_ThenTheIntInRangeOrOptionErrorNamingTheOption) {
    EXPECT_EQ(parseCountOption("65535", "--port", 0, 65535), 65535);
    EXPECT_EQ(parseCountOption("0", "--port", 0, 65535), 0);
    for (const char* bad : {"65536", "-1", "4294967296", "0x10", ""}) {
        try {
            parseCountOption(bad, "--port", 0, 65535);
            ADD_FAILURE() << bad << " was taken";
        } catch (const OptionError& e) {
            EXPECT_NE(std::string(e.what()).find("--port"), std::string::npos) << e.what();
        }
    }
}

TEST(OptionValues, GivenDecimalNumbers_ThenOnlyPlainFiniteDecimalsInRangeAreTaken) {
    EXPECT_EQ(parseDecimalOption("0", "--gate-budget", 0, 86400), 0.0);
    EXPECT_EQ(parseDecimalOption("2.5", "--gate-budget", 0, 86400), 2.5);
    EXPECT_EQ(parseDecimalOption(".5", "--gate-budget", 0, 86400), 0.5);
    EXPECT_EQ(parseDecimalOption("1e3", "--gate-budget", 0, 86400), 1000.0);
    EXPECT_EQ(parseDecimalOption("86400", "--gate-budget", 0, 86400), 86400.0);
    for (const char* bad : {"nan", "NaN", "inf", "-inf", "0x10", "0x1p3", "-1", "+1", "", ".", "1e", "1e+", " 1", "1 ",
                            "1,5", "86400.5", "1e400"}) {
        try {
            parseDecimalOption(bad, "--gate-budget", 0, 86400);
            ADD_FAILURE() << "'" << bad << "' was taken";
        } catch (const OptionError& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("--gate-budget '") + bad + "'"), std::string::npos)
                << e.what();
        }
    }
}

TEST(OptionValues, GivenNonFiniteOrMalformedSeconds_ThenOptionErrorNamingOptionAndValue) {
    EXPECT_EQ(parseDecimalOption("0.5", "--request-timeout", 0.001, 3600), 0.5);
    EXPECT_EQ(parseDecimalOption("2", "--request-timeout", 0.001, 3600), 2.0);
    EXPECT_EQ(parseDecimalOption("1e-3", "--request-timeout", 0.001, 3600), 0.001);
    EXPECT_EQ(parseDecimalOption("3600", "--request-timeout", 0.001, 3600), 3600.0);
    for (const char* bad : {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "", " 1", "1 ", "0x10", "+1", "1s", "1,5",
                            "-1", "0", "3600.5", "1e999", "0.0001"})
        try {
            parseDecimalOption(bad, "--request-timeout", 0.001, 3600);
            ADD_FAILURE() << "'" << bad << "' was taken";
        } catch (const OptionError& e) {
            const std::string what = e.what();
            EXPECT_EQ(what.rfind("--request-timeout ", 0), 0u) << what;
            EXPECT_NE(what.find(bad), std::string::npos) << what;
            EXPECT_NE(what.find("[0.001, 3600]"), std::string::npos) << what;
        }
}
