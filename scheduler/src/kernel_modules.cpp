#include "zp/scheduler/kernel_modules.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>

namespace zp::scheduler {

namespace {

using kernels::Format;

// The UUID zecl devices report in nativeKernelSupported (driver/src/driver.cpp): their
// ZE_MODULE_FORMAT_NATIVE is the source bundle.
constexpr char kZeclBundleUuid[16] = {'z', 'e', 'c', 'l', '-', 's', 'r', 'c', '-', 'b', 'u', 'n', 'd', 'l', 'e', '1'};

std::string ipText(std::uint32_t ip) {
    return std::to_string(ip >> 22) + "." + std::to_string((ip >> 14) & 0xFF) + "." + std::to_string(ip & 0x3FFF);
}
std::string hex(std::uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%04x", v);
    return b;
}

// The native binaries of this device: by IP version when the driver reports one (exact, else
// the same major.minor), else by PCI device id. Only counts when every kernel file has one.
struct NativeMatch {
    const kernels::Artifact* artifact = nullptr;
    std::string how;  // "IP 20.1.4", "device id 0xe20b"
};
NativeMatch nativeFor(const runtime::DeviceInfo& device, const kernels::Package& package) {
    if (!device.isIntel()) return {};
    NativeMatch m;
    for (const auto& file : package.kernelFiles()) {
        const auto* a = device.ipVersion ? package.findNative(file, *device.ipVersion)
                                         : package.findNativeByDeviceId(file, device.props.deviceId);
        if (!a) return {};
        if (!m.artifact) m.artifact = a;
    }
    if (!m.artifact) return {};
    m.how = device.ipVersion ? "IP " + ipText(*device.ipVersion) : "device id " + hex(device.props.deviceId);
    return m;
}

std::string packageTargets(const kernels::Package& package) {
    std::string t;
    for (const auto& n : package.nativeTargets()) t += (t.empty() ? "" : ", ") + n;
    return t.empty() ? std::string("none") : t;
}
}  // namespace

std::string_view idWidthName(IdWidth width) noexcept { return width == IdWidth::Int64 ? "int64" : "int32"; }

IdWidth parseIdWidth(std::string_view text) {
    if (text == "int32" || text == "i32") return IdWidth::Int32;
    if (text == "int64" || text == "i64") return IdWidth::Int64;
    throw std::invalid_argument("topk_ids width '" + std::string(text) + "' (valid: int32, int64)");
}

std::string kernelFileFor(std::string_view file, IdWidth width) {
    // The files with a `zp_topk_id_t` topk_ids argument (spirv/CMakeLists.txt builds those twice).
    static constexpr std::string_view kRouteReaders[] = {"route_compact", "two_launch_a", "two_launch_b", "one_launch",
                                                         "m1_oracle_mxfp4"};
    const bool reads = std::find(std::begin(kRouteReaders), std::end(kRouteReaders), file) != std::end(kRouteReaders);
    return std::string(file) + (reads && width == IdWidth::Int64 ? "_i64" : "");
}
ModuleChoice chooseModules(const runtime::DeviceInfo& device, const kernels::Package& package,
                           const KernelTuning& tuning) {
    const bool zeclBundle =
        std::memcmp(device.module.nativeKernelSupported.id, kZeclBundleUuid, sizeof kZeclBundleUuid) == 0;
    // Tiles other than the packaged ones exist only as source: a zecl device builds them from
    // the bundle, whatever else it takes (Intel's CPU runtime takes SPIR-V too).
    if (!tuning.isPackaged() && zeclBundle)
        return {Format::Bundle, "zecl",
                "zecl source bundle (kernel tuning " + tuning.describe() + ", built by the OpenCL driver)"};
    if (const auto native = nativeFor(device, package); native.artifact)
        return {Format::Native, native.artifact->target,
                "native " + native.artifact->target + " binary for " + native.how};
    // Why no native binary, for the card: an Intel device the package has no binary for.
    std::string noNative;
    if (device.isIntel())
        noNative = ", no native binary for " +
                   (device.ipVersion ? "IP " + ipText(*device.ipVersion) : "device id " + hex(device.props.deviceId)) +
                   " (package has: " + packageTargets(package) + ")";
    if (device.supportsSpirv()) return {Format::Spirv, "spirv64", "SPIR-V (device takes SPIR-V" + noNative + ")"};
    if (zeclBundle)
        return {Format::Bundle, "zecl", "zecl source bundle (built by the OpenCL driver at module creation)"};
    std::string offers = device.ipVersion ? "IP " + ipText(*device.ipVersion) : "no IP version";
    throw UnsupportedDevice("device '" + device.name() + "' (" + runtime::driverKindName(device.kind) +
                            " driver) cannot run the kernel package: no native binary for " + offers +
                            " (package has: " + packageTargets(package) +
                            "), no SPIR-V support, and its native kernel format is not zecl's source bundle");
}

KernelModules::KernelModules(const runtime::Context& context, const runtime::DeviceInfo& device,
                             const kernels::Package& package, KernelTuning tuning)
    : context_(&context),
      device_(device),
      package_(&package),
      choice_(chooseModules(device, package, tuning)),
      tuning_(tuning) {
    if (!tuning_.isPackaged() && choice_.format != Format::Bundle)
        throw UnsupportedDevice("kernel tuning " + tuning_.describe() + " needs the zecl source bundle, but device '" +
                                device.name() + "' gets " + choice_.why + ", built with the packaged defaults (" +
                                KernelTuning{}.describe() + ")");
    if (tuning_.maxRegisters && !(device.isZecl() && device.isNvidiaGpu()))
        throw UnsupportedDevice("kernel tuning max_registers=" + std::to_string(tuning_.maxRegisters) +
                                " is NVIDIA's OpenCL compiler option -cl-nv-maxrregcount; device '" + device.name() +
                                "' is not an NVIDIA GPU under zecl");
}

const runtime::Module& KernelModules::module(const std::string& kernelFile) {
    if (auto it = modules_.find(kernelFile); it != modules_.end()) return it->second;
    const kernels::Artifact* a =
        choice_.format != Format::Native ? package_->find(kernelFile, choice_.format, choice_.target)
        : device_.ipVersion              ? package_->findNative(kernelFile, *device_.ipVersion)
                                         : package_->findNativeByDeviceId(kernelFile, device_.props.deviceId);
    if (!a)
        throw UnsupportedDevice("kernel package (" + package_->origin() + ") has no " +
                                std::string(kernels::formatName(choice_.format)) + " artifact of '" + kernelFile + "'");
    const ze_module_format_t format =
        choice_.format == Format::Spirv ? ZE_MODULE_FORMAT_IL_SPIRV : ZE_MODULE_FORMAT_NATIVE;
    return modules_
        .emplace(kernelFile, runtime::Module::create(*context_, device_, format, a->bytes, buildFlags(kernelFile)))
        .first->second;
}

std::string KernelModules::buildFlags(std::string_view kernelFile) const {
    // SPIR-V and native binaries need no build flags; a bundle gets the tile options only when
    // they differ from the packaged ones (zecl appends them to the bundle's own options).
    // Never -cl-mad-enable / -cl-fast-relaxed-math (CONTRACT §2).
    const KernelTuning tiles = tuning_.forKernelFile(kernelFile);
    std::string flags = tiles.isPackaged() ? std::string() : tiles.buildOptions();
    flags += tiles.nvidiaRegisterOptions();
    // A CPU OpenCL device (PoCL) takes 4-15 minutes to optimise one_launch with the stream tile
    // (its persistent loop around both GEMMs and their barriers), ~30 s unoptimised: the results
    // are the same bits (no contraction either way, CONTRACT §2), and CPU devices check, not time.
    if (device_.isZecl() && !device_.isGpu() && tiles.gemmTile == 2 && kernelFile.starts_with("one_launch"))
        flags += " -cl-opt-disable";
    return flags;
}

runtime::Kernel KernelModules::kernel(const std::string& kernelFile, const std::string& name) {
    return runtime::Kernel(module(kernelFile), name);
}
}  // namespace zp::scheduler
