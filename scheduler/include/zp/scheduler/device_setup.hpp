// The one device setup every caller uses (ze-probe, the zeprobe facade, the device chain
// tests, chain-bench): a device's context and kernel modules, one shape's device weights and
// SiLU table, and the chains recorded over them. Built once here so that every caller gets the
// same objects in the same order, and the same error for a device that cannot run the package.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zp/oracle/chain.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/device_chain.hpp"
#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/device_weights.hpp"
#include "zp/scheduler/kernel_modules.hpp"
#include "zp/scheduler/kernel_tuning.hpp"

namespace zp::scheduler {

// What a caller asks of DeviceSetup::open.
struct DeviceRequest {
    std::string device;                  // runtime::selectDevice's spec: "" (the best), "intel", "zecl" or an index
    std::optional<KernelTuning> tuning;  // none: KernelTuning::recommendedFor(the device)
    // The loader's initialisation (runtime::init: the first call's options win). The tools' choice by
    // default: the loader is pointed at zecl when ZE_ENABLE_ALT_DRIVERS is unset.
    runtime::InitOptions init{.flags = 0, .setAltDriversIfUnset = true, .zeclPath = std::nullopt};
};

// runtime::selectDevice, with a spec that names no device thrown as NoSuchDevice.
runtime::DeviceInfo selectDevice(const std::string& spec);

// One device: its context and its kernel modules, for one tuning or several (chain-bench
// compares tunings on the same weights, so they share a context). Must outlive every layer,
// queue and chain made from it. Not thread-safe.
class DeviceSetup {
public:
    // Initialises the loader, selects the device and makes its context and the modules of the
    // tuning. Throws NoSuchDevice (the spec names no device), TuningNotBuildable (a tuning asked
    // for that is not the packaged one and the device cannot build it), UnsupportedDevice (the
    // device cannot run the kernel package) or runtime::Error.
    static std::unique_ptr<DeviceSetup> open(const DeviceRequest& request);
    // `tuning`: none = KernelTuning::recommendedFor(device). Throws UnsupportedDevice when the
    // device cannot run the kernel package, or the tuning is not the packaged one and the
    // device does not build the zecl source bundle.
    explicit DeviceSetup(const runtime::DeviceInfo& device, const std::optional<KernelTuning>& tuning = std::nullopt);
    DeviceSetup(const DeviceSetup&) = delete;
    DeviceSetup& operator=(const DeviceSetup&) = delete;

    const runtime::DeviceInfo& device() const noexcept { return device_; }
    runtime::Context& context() noexcept { return context_; }
    // The modules of the tuning given at construction.
    KernelModules& modules() { return *modules_.front().second; }
    const KernelModules& modules() const { return *modules_.front().second; }
    // The modules of another tuning, made on first use (throws as the constructor does).
    KernelModules& modules(const KernelTuning& tuning);
    // One line for reports: the module choice, and the tiles when not the packaged ones.
    std::string kernelsText() const;
    // A queue of this context (the chains' execute() runs on one).
    runtime::CommandQueue makeQueue() const { return runtime::CommandQueue(context_, device_); }

private:
    runtime::DeviceInfo device_;
    runtime::Context context_;  // declared before the modules: destroyed after them
    std::vector<std::pair<KernelTuning, std::unique_ptr<KernelModules>>> modules_;
};

// One shape's weights on a device (this card's E/C local experts) and the SiLU table of its
// alpha (CONTRACT §5): what every chain of that shape reads. Must outlive its chains.
class DeviceLayer {
public:
    DeviceLayer(DeviceSetup& setup, const oracle::ChainShape& shape);

    const oracle::ChainShape& shape() const noexcept { return weights_.shape(); }
    DeviceWeights& weights() noexcept { return weights_; }
    std::span<const oracle::bf16_t> silu() const noexcept { return silu_; }
    // A chain of `variant` over these weights, built with the setup's modules (or `modules`),
    // reading topk_ids at `ids`.
    std::unique_ptr<DeviceChain> makeChain(probe::Variant variant, IdWidth ids = IdWidth::Int32);
    std::unique_ptr<DeviceChain> makeChain(probe::Variant variant, KernelModules& modules,
                                           IdWidth ids = IdWidth::Int32);

private:
    DeviceSetup* setup_;
    DeviceWeights weights_;
    std::vector<oracle::bf16_t> silu_;
};

}  // namespace zp::scheduler
