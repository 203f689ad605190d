// The kernel package (spirv/): contents, formats and the SPIR-V validator.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <spirv-tools/libspirv.hpp>

#include "spirv_check.hpp"
#include "zecl/source_bundle.h"
#include "zp/kernels/package.hpp"

namespace {

using zp::kernels::Format;
using zp::kernels::Package;

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

std::vector<std::uint32_t> words(std::span<const std::byte> bytes) {
    std::vector<std::uint32_t> w(bytes.size() / 4);
    std::memcpy(w.data(), bytes.data(), w.size() * 4);
    return w;
}

TEST(KernelPackage, GivenTheBuild_WhenListingKernelFiles_ThenEveryKernelFileIsPackaged) {
    const auto files = Package::embedded().kernelFiles();
    const auto expected = split(ZP_EXPECTED_KERNEL_FILES);
    EXPECT_EQ(std::set<std::string>(files.begin(), files.end()),
              std::set<std::string>(expected.begin(), expected.end()));
    EXPECT_GE(files.size(), 11u) << "baseline, variants and m1_oracle kernel files";
}

TEST(KernelPackage, GivenEveryKernelFile_WhenLookingUpFormats_ThenSpirvBundleAndEachOclocTargetArePresent) {
    const Package p = Package::embedded();
    const auto targets = split(ZP_EXPECTED_OCLOC_TARGETS);
    const std::set<std::string> want(targets.begin(), targets.end());
    EXPECT_EQ(p.nativeTargets(), std::vector<std::string>(want.begin(), want.end()));
    for (const auto& file : p.kernelFiles()) {
        const auto* spv = p.find(file, Format::Spirv);
        ASSERT_NE(spv, nullptr) << file;
        EXPECT_GT(spv->bytes.size(), 20u) << file;
        const auto* bundle = p.find(file, Format::Bundle, "zecl");
        ASSERT_NE(bundle, nullptr) << file;
        for (const auto& t : targets) {
            const auto* bin = p.find(file, Format::Native, t);
            ASSERT_NE(bin, nullptr) << file << " for " << t;
            EXPECT_GT(bin->bytes.size(), 64u) << file << " for " << t;
        }
    }
}

TEST(KernelPackage, GivenANativeBinary_WhenMatchingItsOwnIpVersion_ThenFindNativeReturnsIt) {
    const Package p = Package::embedded();
    int checked = 0;
    for (const auto& a : p.artifacts()) {
        if (a.format != Format::Native || a.ipVersions.empty()) continue;
        const auto* hit = p.findNative(a.file, a.ipVersions.front());
        ASSERT_NE(hit, nullptr);
        EXPECT_EQ(hit->file, a.file);
        ++checked;
    }
    if (p.nativeTargets().empty()) GTEST_SKIP() << "no ocloc targets on this machine";
    EXPECT_GT(checked, 0);
    // An IP no target serves (major 1) finds nothing: the caller then falls back to SPIR-V.
    EXPECT_EQ(p.findNative(p.kernelFiles().front(), zp::kernels::ipVersion(1, 0, 0)), nullptr);
}

TEST(KernelPackage, GivenEveryBundle_WhenParsed_ThenItIsOneSelfContainedOpenClSource) {
    const Package p = Package::embedded();
    for (const auto& file : p.kernelFiles()) {
        const auto* b = p.find(file, Format::Bundle);
        ASSERT_NE(b, nullptr);
        zecl_source_bundle_view view{};
        ASSERT_EQ(zecl_source_bundle_parse(b->bytes.data(), b->bytes.size(), &view), 1) << file;
        const std::string options(view.options, view.options_size), source(view.source, view.source_size);
        EXPECT_NE(options.find("-cl-std=CL1.2"), std::string::npos) << file;
        EXPECT_EQ(source.find("#include"), std::string::npos) << file << ": includes must be inlined for zecl";
        EXPECT_NE(source.find("FP_CONTRACT OFF"), std::string::npos) << file << ": CONTRACT §2";
        EXPECT_EQ(source.find("mad-enable"), std::string::npos) << file;
    }
}

TEST(KernelPackage, GivenEverySpirvModule_WhenValidated_ThenSpirvToolsAcceptsIt) {
    const Package p = Package::embedded();
    for (const auto& file : p.kernelFiles()) {
        const auto* spv = p.find(file, Format::Spirv);
        ASSERT_NE(spv, nullptr);
        const auto err = zp::kernels::validateSpirv(words(spv->bytes));
        EXPECT_FALSE(err.has_value()) << file << ": " << err.value_or("");
    }
}

TEST(KernelPackage, GivenACorruptedSpirvModule_WhenValidated_ThenItIsRejected) {
    const Package p = Package::embedded();
    const auto* spv = p.find("gemm1_mxfp4_m2", Format::Spirv);
    ASSERT_NE(spv, nullptr);
    const auto good = words(spv->bytes);
    ASSERT_FALSE(zp::kernels::validateSpirv(good).has_value());

    auto badMagic = good;
    badMagic[0] ^= 0x1u;
    EXPECT_TRUE(zp::kernels::validateSpirv(badMagic).has_value());

    auto truncated = good;
    truncated.resize(truncated.size() - 3);
    EXPECT_TRUE(zp::kernels::validateSpirv(truncated).has_value());

    // Drop the id bound below the ids in use: every instruction past it is undefined.
    auto lowBound = good;
    lowBound[3] = 2;
    EXPECT_TRUE(zp::kernels::validateSpirv(lowBound).has_value());
}

// llvm-spirv 14 can emit a block before its dominator; the build reorders blocks (RPO).
constexpr const char* kOutOfOrderBlocks = R"(
OpCapability Addresses
OpCapability Kernel
OpMemoryModel Physical64 OpenCL
OpEntryPoint Kernel %main "k"
%void = OpTypeVoid
%uint = OpTypeInt 32 0
%fn = OpTypeFunction %void %uint
%main = OpFunction %void None %fn
%x = OpFunctionParameter %uint
%entry = OpLabel
OpBranch %b
%c = OpLabel
%y = OpIAdd %uint %z %z
OpReturn
%b = OpLabel
%z = OpIAdd %uint %x %x
OpBranch %c
OpFunctionEnd
)";

// Assembles `text`, which the validator must reject with a message naming `rule`, orders it,
// and checks that the ordered module is valid and of the same size; returns it.
std::vector<std::uint32_t> orderRejectedModule(const char* text, const char* rule) {
    spvtools::SpirvTools tools(SPV_ENV_OPENCL_2_2);
    std::vector<std::uint32_t> bad;
    EXPECT_TRUE(tools.Assemble(text, &bad)) << text;
    const auto rejected = zp::kernels::validateSpirv(bad);
    EXPECT_TRUE(rejected.has_value()) << "the validator must reject the module";
    EXPECT_NE(rejected.value_or("").find(rule), std::string::npos) << rejected.value_or("");
    auto ordered = zp::kernels::orderSpirvBlocks(bad);
    EXPECT_EQ(ordered.size(), bad.size());
    const auto err = zp::kernels::validateSpirv(ordered);
    EXPECT_FALSE(err.has_value()) << err.value_or("");
    return ordered;
}

TEST(KernelPackage, GivenABlockBeforeItsDominator_WhenOrdered_ThenTheModuleBecomesValid) {
    orderRejectedModule(kOutOfOrderBlocks, "has not been defined");
}

// llvm-spirv 14 can put a bitcast between two allocas' variables (clang's SROA retypes an
// alloca in the entry block); the build moves the entry block's variables to its start.
constexpr const char* kVariableAfterABitcast = R"(
OpCapability Addresses
OpCapability Kernel
OpMemoryModel Physical64 OpenCL
OpEntryPoint Kernel %main "k"
OpName %a "a"
OpName %b "b"
%void = OpTypeVoid
%float = OpTypeFloat 32
%uint = OpTypeInt 32 0
%uint_4 = OpConstant %uint 4
%v4 = OpTypeVector %float 4
%arr = OpTypeArray %float %uint_4
%pv4 = OpTypePointer Function %v4
%parr = OpTypePointer Function %arr
%fn = OpTypeFunction %void
%main = OpFunction %void None %fn
%entry = OpLabel
%a = OpVariable %pv4 Function
%a_arr = OpBitcast %parr %a
%b = OpVariable %parr Function
OpReturn
OpFunctionEnd
)";

TEST(KernelPackage, GivenAVariableAfterABitcast_WhenOrdered_ThenTheVariablesComeFirstAndTheModuleBecomesValid) {
    const auto fixed = orderRejectedModule(kVariableAfterABitcast, "OpVariable");
    std::string text;
    ASSERT_TRUE(
        spvtools::SpirvTools(SPV_ENV_OPENCL_2_2).Disassemble(fixed, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES));
    EXPECT_LT(text.find("%b = OpVariable"), text.find("OpBitcast")) << text;
    EXPECT_LT(text.find("%a = OpVariable"), text.find("%b = OpVariable")) << text;  // their order kept
}

TEST(KernelPackage, GivenThePackagedModules_WhenOrderedAgain_ThenNothingChanges) {
    const Package p = Package::embedded();
    for (const auto& file : p.kernelFiles()) {
        const auto w = words(p.find(file, Format::Spirv)->bytes);
        EXPECT_EQ(zp::kernels::orderSpirvBlocks(w), w) << file;
    }
}

TEST(KernelPackage, GivenAFunctionWithoutBody_WhenValidated_ThenItIsRejected) {
    // A non-static C99 `inline` helper that clang chose not to inline leaves an import like
    // this one; SPIRV-Tools accepts it (Linkage capability), the package must not.
    constexpr const char* kImport = R"(
OpCapability Addresses
OpCapability Linkage
OpCapability Kernel
OpMemoryModel Physical64 OpenCL
OpEntryPoint Kernel %main "k"
OpDecorate %helper LinkageAttributes "helper" Import
%void = OpTypeVoid
%uint = OpTypeInt 32 0
%fn = OpTypeFunction %void %uint
%helper = OpFunction %void None %fn
%p = OpFunctionParameter %uint
OpFunctionEnd
%main = OpFunction %void None %fn
%x = OpFunctionParameter %uint
%entry = OpLabel
%r = OpFunctionCall %void %helper %x
OpReturn
OpFunctionEnd
)";
    spvtools::SpirvTools tools(SPV_ENV_OPENCL_2_2);
    std::vector<std::uint32_t> mod;
    ASSERT_TRUE(tools.Assemble(kImport, &mod));
    EXPECT_TRUE(tools.Validate(mod)) << "SPIRV-Tools alone accepts an import";
    const auto err = zp::kernels::validateSpirv(mod);
    ASSERT_TRUE(err.has_value());
    EXPECT_NE(err->find("never defined"), std::string::npos) << *err;
}

TEST(KernelPackage, GivenTheArtifactDirectory_WhenLoadedFromDisk_ThenItEqualsTheEmbeddedPackage) {
    const Package disk = Package::fromDirectory(ZP_KERNEL_ARTIFACT_DIR);
    const Package mem = Package::embedded();
    ASSERT_EQ(disk.artifacts().size(), mem.artifacts().size());
    for (std::size_t i = 0; i < mem.artifacts().size(); ++i) {
        const auto& a = mem.artifacts()[i];
        const auto& b = disk.artifacts()[i];
        EXPECT_EQ(a.file, b.file);
        EXPECT_EQ(a.format, b.format);
        EXPECT_EQ(a.target, b.target);
        EXPECT_EQ(a.ipVersions, b.ipVersions);
        ASSERT_EQ(a.bytes.size(), b.bytes.size()) << a.file;
        EXPECT_EQ(std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()), 0) << a.file;
    }
    EXPECT_THROW(Package::fromDirectory("/nonexistent/zp-kernels"), std::runtime_error);
}

}  // namespace
