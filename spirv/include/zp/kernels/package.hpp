// The kernel package: every kernels_cl/ file built as SPIR-V, as Intel native binaries for
// the ocloc targets found at configure time, and as a zecl source bundle, embedded in the
// library. Set ZP_KERNEL_DIR to a build's artifact directory (build/spirv/artifacts, the one
// holding manifest.txt) to load the same artifacts from disk instead, e.g. after editing a
// kernel and rebuilding only `zp_kernel_artifacts`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zp::kernels {

enum class Format {
    Native,  // Intel native binary from ocloc, for `target`
    Spirv,   // SPIR-V 1.1, OpenCL environment, validated at build time
    Bundle,  // zecl source bundle (driver/include/zecl/source_bundle.h)
};
std::string_view formatName(Format format) noexcept;  // "native", "spirv", "bundle"
std::optional<Format> parseFormat(std::string_view name) noexcept;

// Level Zero's ze_device_ip_version_ext_t encoding of ocloc's "major.minor.revision".
constexpr std::uint32_t ipVersion(std::uint32_t major, std::uint32_t minor, std::uint32_t revision) {
    return (major << 22) | (minor << 14) | revision;
}

struct Artifact {
    std::string file;  // kernel file stem: "gemm1_mxfp4_m2" for kernels_cl/gemm1_mxfp4_m2.cl
    Format format;
    std::string
        target;  // Native: ocloc device ("dg2", "pvc", "bmg", "bmg-g31", "lnl"); Spirv: "spirv64"; Bundle: "zecl"
    // Native: the IP versions (ipVersion()) the binary was built for, from `ocloc ids`;
    // empty when ocloc could not tell.
    std::vector<std::uint32_t> ipVersions;
    // Native: the PCI device ids of the cards the target covers (NEO's device id tables), for
    // drivers that report no IP version; empty when the build has no table for the target.
    std::vector<std::uint32_t> deviceIds;
    std::span<const std::byte> bytes;
};

class Package {
public:
    // $ZP_KERNEL_DIR when set and non-empty, else the embedded package. Loaded once per
    // process; throws std::runtime_error naming the directory when it cannot be read.
    static const Package& instance();
    static Package embedded();
    static Package fromDirectory(const std::filesystem::path& dir);

    const std::vector<Artifact>& artifacts() const noexcept { return artifacts_; }
    std::vector<std::string> kernelFiles() const;    // sorted, unique
    std::vector<std::string> nativeTargets() const;  // sorted, unique
    // nullptr when absent. An empty target matches any.
    const Artifact* find(std::string_view file, Format format, std::string_view target = {}) const;
    // The native binary of `file` for a device of IP version `ip`: an exact IP match, else
    // one built for the same major.minor (a binary for one stepping serves its family); nullptr if none.
    const Artifact* findNative(std::string_view file, std::uint32_t ip) const;
    // The native binary of `file` whose target lists PCI device id `deviceId`; nullptr if none.
    const Artifact* findNativeByDeviceId(std::string_view file, std::uint32_t deviceId) const;
    // "embedded" or the directory it was loaded from.
    const std::string& origin() const noexcept { return origin_; }

private:
    std::vector<Artifact> artifacts_;
    std::vector<std::shared_ptr<const std::vector<std::byte>>> storage_;  // bytes of a disk package
    std::string origin_;
};

// Text (never printed by the library): per native target, kernel file and kernel, the SIMD
// width, GRF count, instructions, spill and private bytes per thread, read from each binary
// (native_info.hpp). A binary that cannot be read gets a line saying why.
std::string describeNativeBinaries(const Package& package);

}  // namespace zp::kernels
