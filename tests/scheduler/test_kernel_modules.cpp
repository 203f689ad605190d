// Which module a device gets (zp::scheduler::chooseModules, scheduler/kernel_modules.hpp): the native
// binary for its IP version or, without one, its PCI device id; else SPIR-V; and the card's line
// says which and why. The kernel files of each topk_ids width.
// Devices are described by their properties alone (no driver needed), against a package on
// disk with one native binary per target, as the build's manifest lays it out.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "zp/kernels/package.hpp"
#include "zp/scheduler/chain_plan.hpp"
#include "zp/scheduler/kernel_modules.hpp"

namespace {

namespace fs = std::filesystem;
using zp::kernels::Format;
using zp::kernels::ipVersion;
using zp::kernels::Package;

std::string ips(std::initializer_list<std::uint32_t> v) {
    std::string s;
    for (auto ip : v) s += (s.empty() ? "" : ",") + std::to_string(ip);
    return s;
}

// Two kernel files; native binaries for bmg (G21), bmg-g31, lnl and dg2 with the IP versions
// `ocloc ids` gives for them and NEO's device ids; lnl lacks one file's binary when asked.
Package makePackage(const fs::path& dir, bool lnlComplete = true) {
    fs::create_directories(dir);
    std::ofstream m(dir / "manifest.txt");
    m << "# file\tformat\ttarget\tip versions\tdevice ids\tpath\n";
    struct Target {
        const char* name;
        std::string ips;
        const char* ids;
    };
    const Target targets[] = {
        {"bmg", ips({ipVersion(20, 1, 0)}), "0xE20B,0xE20C,0xE211"},
        {"bmg-g31", ips({ipVersion(20, 2, 0)}), "0xE220,0xE221,0xE222,0xE223"},
        {"lnl", ips({ipVersion(20, 4, 4)}), "0x6420,0x64A0,0x64B0"},
        {"dg2", ips({ipVersion(12, 55, 8), ipVersion(12, 56, 5), ipVersion(12, 57, 0)}), "-"},
    };
    for (const char* file : {"gemm", "route"}) {
        std::ofstream(dir / (std::string(file) + ".spv")) << "spirv";
        m << file << "\tspirv\tspirv64\t-\t-\t" << file << ".spv\n";
        for (const auto& t : targets) {
            if (!lnlComplete && std::string(t.name) == "lnl" && std::string(file) == "route") continue;
            const std::string path = std::string(file) + "." + t.name + ".bin";
            std::ofstream(dir / path) << t.name;
            m << file << "\tnative\t" << t.name << "\t" << t.ips << "\t" << t.ids << "\t" << path << "\n";
        }
    }
    m.close();
    return Package::fromDirectory(dir);
}

zp::runtime::DeviceInfo intelGpu(const char* name, std::optional<std::uint32_t> ip, std::uint32_t deviceId) {
    zp::runtime::DeviceInfo d;
    d.kind = zp::runtime::DriverKind::Intel;
    d.props.type = ZE_DEVICE_TYPE_GPU;
    d.props.vendorId = 0x8086;
    d.props.deviceId = deviceId;
    std::snprintf(d.props.name, sizeof d.props.name, "%s", name);
    d.ipVersion = ip;
    d.module.spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
    return d;
}

class ModuleChoice : public ::testing::Test {
protected:
    fs::path dir = fs::temp_directory_path() / ("zp-module-choice-" + std::to_string(::getpid()));
    Package package = makePackage(dir);
    void TearDown() override { fs::remove_all(dir); }
};

TEST_F(ModuleChoice, GivenKnownIntelGpus_WhenChoosing_ThenEachGetsItsTargetsBinary) {
    struct Case {
        const char* name;
        std::uint32_t ip, deviceId;
        const char *target, *why;
    };
    const Case cases[] = {
        // B580 (BMG-G21) at a later stepping than the binary's 20.1.0: the same major.minor serves.
        {"Intel(R) Arc(TM) B580 Graphics", ipVersion(20, 1, 4), 0xe20b, "bmg", "native bmg binary for IP 20.1.4"},
        {"Intel(R) Arc(TM) Pro B70", ipVersion(20, 2, 0), 0xe223, "bmg-g31", "native bmg-g31 binary for IP 20.2.0"},
        {"Intel(R) Arc(TM) 140V GPU", ipVersion(20, 4, 4), 0x64a0, "lnl", "native lnl binary for IP 20.4.4"},
        {"Intel(R) Arc(TM) A770 Graphics", ipVersion(12, 55, 8), 0x56a0, "dg2", "native dg2 binary for IP 12.55.8"},
    };
    for (const auto& c : cases) {
        const auto got = zp::scheduler::chooseModules(intelGpu(c.name, c.ip, c.deviceId), package);
        EXPECT_EQ(got.format, Format::Native) << c.name;
        EXPECT_EQ(got.target, c.target) << c.name;
        EXPECT_EQ(got.why, c.why) << c.name;
    }
}

TEST_F(ModuleChoice, GivenAnUnknownIntelGpu_WhenChoosing_ThenItGetsSpirvAndTheCardSaysWhy) {
    // Panther Lake (Xe3, IP 30.0.4): no binary in the package.
    const auto c = zp::scheduler::chooseModules(intelGpu("Intel(R) Graphics", ipVersion(30, 0, 4), 0xb080), package);
    EXPECT_EQ(c.format, Format::Spirv);
    EXPECT_EQ(c.target, "spirv64");
    EXPECT_EQ(c.why,
              "SPIR-V (device takes SPIR-V, no native binary for IP 30.0.4 (package has: bmg, bmg-g31, dg2, lnl))");
}

TEST_F(ModuleChoice, GivenADriverWithoutIpVersion_WhenChoosing_ThenTheDeviceIdPicksTheBinary) {
    const auto b580 = zp::scheduler::chooseModules(intelGpu("B580", std::nullopt, 0xe20b), package);
    EXPECT_EQ(b580.format, Format::Native);
    EXPECT_EQ(b580.target, "bmg");
    EXPECT_EQ(b580.why, "native bmg binary for device id 0xe20b");
    // dg2 carries no device id table: by device id alone it gets SPIR-V, and the card says so.
    const auto a770 = zp::scheduler::chooseModules(intelGpu("A770", std::nullopt, 0x56a0), package);
    EXPECT_EQ(a770.format, Format::Spirv);
    EXPECT_NE(a770.why.find("no native binary for device id 0x56a0"), std::string::npos) << a770.why;
}

TEST_F(ModuleChoice, GivenATuning_WhenAZeclDeviceThatTakesSpirvChooses_ThenItGetsTheSourceBundle) {
    // Intel's CPU runtime behind zecl: SPIR-V for the packaged tiles, the bundle for other tiles
    // (the only format built from source), and the card says which tuning.
    zp::runtime::DeviceInfo cpu;
    cpu.kind = zp::runtime::DriverKind::Zecl;
    cpu.props.type = ZE_DEVICE_TYPE_CPU;
    std::snprintf(cpu.props.name, sizeof cpu.props.name, "%s", "Intel CPU");
    cpu.module.spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
    const char bundle[16] = {'z', 'e', 'c', 'l', '-', 's', 'r', 'c', '-', 'b', 'u', 'n', 'd', 'l', 'e', '1'};
    std::memcpy(cpu.module.nativeKernelSupported.id, bundle, sizeof bundle);
    EXPECT_EQ(zp::scheduler::chooseModules(cpu, package).format, Format::Spirv);
    const auto tuning = zp::scheduler::KernelTuning::parse("gemm_tile=2,stream_split=16");
    const auto tuned = zp::scheduler::chooseModules(cpu, package, tuning);
    EXPECT_EQ(tuned.format, Format::Bundle);
    EXPECT_EQ(tuned.target, "zecl");
    EXPECT_NE(tuned.why.find("kernel tuning " + tuning.describe()), std::string::npos) << tuned.why;
    // A device of another driver has no bundle: the tuning changes nothing here (KernelModules
    // refuses it, naming what the device gets).
    const auto b580 = zp::scheduler::chooseModules(intelGpu("B580", ipVersion(20, 1, 4), 0xe20b), package, tuning);
    EXPECT_EQ(b580.format, Format::Native);
}

TEST_F(ModuleChoice, GivenATargetMissingOneKernelFile_WhenChoosing_ThenTheDeviceGetsSpirv) {
    const Package partial = makePackage(dir / "partial", /*lnlComplete=*/false);
    const auto c = zp::scheduler::chooseModules(intelGpu("LNL", ipVersion(20, 4, 4), 0x64a0), partial);
    EXPECT_EQ(c.format, Format::Spirv) << c.why;
}

TEST(ModuleChoiceBuiltPackage, GivenEveryNativeTargetOfThisBuild_WhenADeviceReportsItsIp_ThenItGetsThatTarget) {
    const Package& p = Package::embedded();
    int checked = 0;
    for (const auto& t : p.nativeTargets()) {
        const auto* a = p.find(p.kernelFiles().front(), Format::Native, t);
        ASSERT_NE(a, nullptr) << t;
        if (a->ipVersions.empty()) continue;
        const auto c = zp::scheduler::chooseModules(intelGpu(t.c_str(), a->ipVersions.front(), 0), p);
        EXPECT_EQ(c.format, Format::Native) << t << ": " << c.why;
        EXPECT_EQ(c.target, t) << c.why;
        ++checked;
    }
    if (p.nativeTargets().empty()) GTEST_SKIP() << "this build has no ocloc: no native targets";
    EXPECT_GT(checked, 0);
}

}  // namespace

// The id-width builds (spirv/CMakeLists.txt builds every file with a `zp_topk_id_t` topk_ids
// twice): the embedded package holds `<file>_i64` exactly for the files the scheduler's plans
// read ids with, and every launch of every variant at either width names a packaged file.
TEST(IdWidthBuilds,
     GivenTheEmbeddedPackage_WhenPlanningEachWidth_ThenEveryLaunchFileIsPackagedAndOnlyReadersAreDoubled) {
    using zp::scheduler::IdWidth;
    const Package p = Package::embedded();
    const auto files = p.kernelFiles();
    const std::set<std::string> have(files.begin(), files.end());
    std::set<std::string> doubled;
    for (const auto& f : files)
        if (f.size() > 4 && f.compare(f.size() - 4, 4, "_i64") == 0) {
            const std::string base = f.substr(0, f.size() - 4);
            EXPECT_TRUE(have.count(base)) << f << " without " << base;
            EXPECT_EQ(zp::scheduler::kernelFileFor(base, IdWidth::Int64), f);
            doubled.insert(base);
        }
    EXPECT_EQ(doubled, (std::set<std::string>{"m1_oracle_mxfp4", "one_launch", "route_compact", "two_launch_a",
                                              "two_launch_b"}));
    zp::oracle::ChainShape s;
    for (auto width : {IdWidth::Int32, IdWidth::Int64})
        for (auto v : zp::probe::kAllVariants)
            for (const auto& l : zp::scheduler::planChain(v, s, {}, {}, width).launches) {
                EXPECT_TRUE(have.count(l.file)) << l.file;
                const bool wide = l.file.size() > 4 && l.file.compare(l.file.size() - 4, 4, "_i64") == 0;
                const std::string base = wide ? l.file.substr(0, l.file.size() - 4) : l.file;
                EXPECT_EQ(wide, width == IdWidth::Int64 && doubled.count(base) > 0) << l.file;
            }
    EXPECT_EQ(zp::scheduler::parseIdWidth("i64"), IdWidth::Int64);
    EXPECT_EQ(zp::scheduler::parseIdWidth("int32"), IdWidth::Int32);
    EXPECT_THROW(zp::scheduler::parseIdWidth("int16"), std::invalid_argument);
}

TEST(IdWidthBuilds, GivenEachWidth_WhenNamedAndMapped_ThenOnlyRouteReadersGetTheInt64File) {
    using zp::scheduler::IdWidth;
    EXPECT_EQ(zp::scheduler::idWidthName(IdWidth::Int32), "int32");
    EXPECT_EQ(zp::scheduler::idWidthName(IdWidth::Int64), "int64");
    EXPECT_EQ(zp::scheduler::parseIdWidth(zp::scheduler::idWidthName(IdWidth::Int64)), IdWidth::Int64);
    EXPECT_EQ(zp::scheduler::kernelFileFor("route_compact", IdWidth::Int64), "route_compact_i64");
    EXPECT_EQ(zp::scheduler::kernelFileFor("route_compact", IdWidth::Int32), "route_compact");
    EXPECT_EQ(zp::scheduler::kernelFileFor("gemm1_mxfp4_m2", IdWidth::Int64), "gemm1_mxfp4_m2");
}
