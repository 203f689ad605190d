// The packaged native binaries, read from their own metadata (zp/kernels/native_info.hpp):
// no Xe2 kernel (bmg, bmg-g31, lnl: IP major 20) may spill or use private memory, so a kernel
// change that hurts the real target fails here, on a CPU-only machine. Generic over every
// kernel file and kernel the package has.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "zp/kernels/native_info.hpp"
#include "zp/kernels/package.hpp"

namespace {

using zp::kernels::Format;
using zp::kernels::inspectNativeBinary;
using zp::kernels::Package;

constexpr const char* kXe2Targets[] = {"bmg", "bmg-g31", "lnl"};

bool isXe2(const zp::kernels::Artifact& a) {
    for (auto ip : a.ipVersions)
        if ((ip >> 22) == 20) return true;
    return false;
}

std::set<std::string> builtTargets() {
    std::set<std::string> s;
    std::istringstream in(ZP_EXPECTED_OCLOC_TARGETS);
    for (std::string t; std::getline(in, t, ',');)
        if (!t.empty()) s.insert(t);
    return s;
}

TEST(NativeBinaries, GivenTheBuild_WhenXe2IsRequired_ThenEveryKernelFileHasBmgBmgG31AndLnlBinaries) {
    const Package p = Package::embedded();
    const auto built = builtTargets();
    const bool required = ZP_REQUIRE_XE2 != 0;
    for (const char* t : kXe2Targets) {
        if (!built.count(t)) {
            if (required) ADD_FAILURE() << "ZP_REQUIRE_XE2 is set but the build has no " << t << " target";
            continue;
        }
        for (const auto& file : p.kernelFiles()) {
            const auto* a = p.find(file, Format::Native, t);
            ASSERT_NE(a, nullptr) << file << " for " << t;
            EXPECT_TRUE(isXe2(*a)) << file << " for " << t << ": its IP versions are not Xe2's (major 20)";
        }
    }
    if (!required && !built.count("bmg"))
        GTEST_SKIP() << "no Xe2-capable ocloc on this build machine (scripts/xe2-ocloc.sh); Xe2 cards get SPIR-V";
}

TEST(NativeBinaries, GivenEveryXe2Kernel_WhenReadFromItsBinary_ThenItNeitherSpillsNorUsesPrivateMemory) {
    // $ZP_KERNEL_DIR when set (an artifact directory being worked on), else the embedded package.
    const Package& p = Package::instance();
    int kernels = 0;
    for (const auto& a : p.artifacts()) {
        if (a.format != Format::Native || !isXe2(a)) continue;
        const auto info = inspectNativeBinary(a.bytes);
        EXPECT_EQ(info.format, "zebin") << a.file << " for " << a.target;
        ASSERT_FALSE(info.kernels.empty()) << a.file << " for " << a.target;
        for (const auto& k : info.kernels) {
            EXPECT_EQ(k.spillBytes, 0u) << a.file << " / " << k.name << " on " << a.target << " spills " << k.spillBytes
                                        << " B per thread (SIMD" << k.simdSize << ", " << k.grfCount << " GRF)";
            EXPECT_EQ(k.privateBytes, 0u)
                << a.file << " / " << k.name << " on " << a.target << " uses " << k.privateBytes
                << " B of private memory per thread (SIMD" << k.simdSize << ", " << k.grfCount << " GRF)";
            ++kernels;
        }
    }
    if (kernels == 0 && !ZP_REQUIRE_XE2)
        GTEST_SKIP() << "no Xe2 native binaries in this build (no Xe2-capable ocloc; scripts/xe2-ocloc.sh)";
    EXPECT_GT(kernels, 0);
}

TEST(NativeBinaries, GivenEveryNativeBinary_WhenInspected_ThenEachKernelHasSimdGrfAndCode) {
    const Package p = Package::embedded();
    int binaries = 0;
    for (const auto& a : p.artifacts()) {
        if (a.format != Format::Native) continue;
        const auto info = inspectNativeBinary(a.bytes);
        ASSERT_FALSE(info.kernels.empty()) << a.file << " for " << a.target;
        for (const auto& k : info.kernels) {
            EXPECT_TRUE(k.simdSize == 8 || k.simdSize == 16 || k.simdSize == 32)
                << a.file << " / " << k.name << " on " << a.target << ": SIMD " << k.simdSize;
            EXPECT_TRUE(k.grfCount == 128 || k.grfCount == 256)
                << a.file << " / " << k.name << " on " << a.target << ": " << k.grfCount << " GRF";
            EXPECT_GT(k.instructions, 10u) << a.file << " / " << k.name << " on " << a.target;
            EXPECT_LE(k.instructions * 8u, k.codeBytes) << "instructions are 8 or 16 bytes";
            EXPECT_GE(k.instructions * 16u, k.codeBytes) << "instructions are 8 or 16 bytes";
        }
        ++binaries;
    }
    if (binaries == 0) GTEST_SKIP() << "this build has no ocloc: no native binaries";
}

std::vector<std::byte> bytes(const std::string& s) {
    std::vector<std::byte> b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
}

TEST(NativeBinaries, GivenSomethingElse_WhenInspected_ThenTheErrorSaysWhatIsWrong) {
    try {
        inspectNativeBinary(bytes("not an elf at all, just some text that is long enough for a header....."));
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("not an ELF"), std::string::npos) << e.what();
    }
    // A real binary cut short: its section headers lie past the end.
    const Package p = Package::embedded();
    for (const auto& a : p.artifacts()) {
        if (a.format != Format::Native) continue;
        std::vector<std::byte> cut(a.bytes.begin(), a.bytes.begin() + a.bytes.size() / 2);
        EXPECT_THROW(inspectNativeBinary(cut), std::runtime_error) << a.file << " for " << a.target;
        break;
    }
}

}  // namespace
