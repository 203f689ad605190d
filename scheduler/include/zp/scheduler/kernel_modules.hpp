// Which kernel modules a device gets from the kernel package, built on first use; the width of
// topk_ids and the kernel files each width reads.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "zp/kernels/package.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/kernel_tuning.hpp"

namespace zp::scheduler {

// topk_ids' element type in device memory: int32, or int64 as torch.topk returns it. Chosen
// when a chain is recorded: the kernel files that read topk_ids (route_compact, two_launch_a/b,
// one_launch, m1_oracle_mxfp4) are packaged twice, `<file>` for int32 and `<file>_i64` for int64
// (kernels_cl/common/zp_routes.h, ZP_TOPK_IDS_I64); every other kernel never reads the ids.
// Both widths give the same bits; an int64 id beyond int32 range is invalid like any id
// outside [0, E) (the §5.1 error flag).
enum class IdWidth { Int32, Int64 };
std::string_view idWidthName(IdWidth width) noexcept;  // "int32", "int64"
// "int32" / "i32" or "int64" / "i64"; throws std::invalid_argument naming the text.
IdWidth parseIdWidth(std::string_view text);
// The package's kernel file for `file` at this id width: `file`, or `file` + "_i64" for a
// route-reading file at int64.
std::string kernelFileFor(std::string_view file, IdWidth width);

// Which module format a device gets: the native binary for its IP version (Intel; by PCI
// device id when the driver reports no IP version), else SPIR-V when the device takes
// SPIR-V, else the zecl source bundle when the device's
// nativeKernelSupported UUID is zecl's; anything else throws UnsupportedDevice naming the
// device and what it offers. A tuning other than the packaged tiles: the source bundle on any
// zecl device (the one format that builds other tiles), else as above (KernelModules then refuses it).
struct ModuleChoice {
    kernels::Format format = kernels::Format::Spirv;
    std::string target;  // native: the ocloc target; spirv: "spirv64"; bundle: "zecl"
    std::string why;     // one line for the card: "native bmg binary for IP 20.1.4", "SPIR-V (..., no native binary for
                         // IP 30.0.4 (package has: ...))"
};
ModuleChoice chooseModules(const runtime::DeviceInfo& device, const kernels::Package& package,
                           const KernelTuning& tuning = {});

// The kernel modules of one device, one per kernel file, built on first use and kept.
// A non-packaged tuning needs the source bundle (throws UnsupportedDevice otherwise).
// Must outlive the chains made from it. Not thread-safe.
class KernelModules {
public:
    KernelModules(const runtime::Context& context, const runtime::DeviceInfo& device,
                  const kernels::Package& package = kernels::Package::instance(), KernelTuning tuning = {});

    const ModuleChoice& choice() const noexcept { return choice_; }
    const KernelTuning& tuning() const noexcept { return tuning_; }
    const runtime::DeviceInfo& device() const noexcept { return device_; }
    // Throws runtime::Error with the build log when the module does not build.
    const runtime::Module& module(const std::string& kernelFile);
    // The build flags `kernelFile`'s module gets: the tile options when the tuning is not the
    // packaged one (source bundle only), -cl-nv-maxrregcount (max_registers), and
    // -cl-opt-disable for the stream tile's one_launch on a CPU device under zecl.
    std::string buildFlags(std::string_view kernelFile) const;
    // A fresh kernel object (arguments and group size are per-object state).
    runtime::Kernel kernel(const std::string& kernelFile, const std::string& name);

private:
    const runtime::Context* context_;
    runtime::DeviceInfo device_;
    const kernels::Package* package_;
    ModuleChoice choice_;
    KernelTuning tuning_;
    std::map<std::string, runtime::Module> modules_;
};

}  // namespace zp::scheduler
