// The register counts zecl reads from NVIDIA's build log (driver/src/ptxas_log.hpp), on a log
// in the form NVIDIA's OpenCL compiler writes with -cl-nv-verbose.
#include "ptxas_log.hpp"

#include <gtest/gtest.h>

namespace {

constexpr const char* kTwoKernels =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'two_launch_b' for 'sm_90'\n"
    "ptxas info    : Function properties for two_launch_b\n"
    "    96 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 128 registers, 22612 bytes smem, 456 bytes cmem[0]\n"
    "ptxas info    : Compiling entry function 'gather_bf16' for 'sm_90'\n"
    "ptxas info    : Function properties for gather_bf16\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 18 registers, 400 bytes cmem[0]\n"
    "<kernel>:3:5: warning: unused variable 'x'\n";

TEST(PtxasLog, GivenTwoEntryFunctions_WhenRead_ThenEachGetsItsRegisterCountAndTheRestKeepsOnlyTheWarning) {
    std::string rest;
    const auto regs = zecl::ptxasRegisters(kTwoKernels, rest);
    ASSERT_EQ(regs.size(), 2u);
    EXPECT_EQ(regs.at("two_launch_b"), 128u);
    EXPECT_EQ(regs.at("gather_bf16"), 18u);
    EXPECT_EQ(rest, "<kernel>:3:5: warning: unused variable 'x'\n");
}

TEST(PtxasLog, GivenALogWithoutPtxasLines_WhenRead_ThenNoCountsAndTheLogUnchanged) {
    std::string rest;
    const std::string log = "<kernel>:1:1: warning: something\nUsed 12 registers in a comment\n";
    EXPECT_TRUE(zecl::ptxasRegisters(log, rest).empty());
    EXPECT_EQ(rest, log);
}

TEST(PtxasLog, GivenACountBeforeAnyEntry_WhenRead_ThenItIsNotGivenToAnyKernel) {
    std::string rest;
    EXPECT_TRUE(zecl::ptxasRegisters("ptxas info    : Used 40 registers\n", rest).empty());
}

}  // namespace
