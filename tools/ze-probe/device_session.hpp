// ze-probe's device side: one Level Zero device (scheduler::DeviceSetup) with the chain of each
// variant recorded once, turned into app::Executors. Owns every device object.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "case_run.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/device_chain.hpp"
#include "zp/scheduler/kernel_modules.hpp"
#include "zp/scheduler/kernel_tuning.hpp"
#include "zp/scheduler/device_setup.hpp"

namespace zp::app {

class DeviceSession {
public:
    // `deviceSpec`: "" (best: first Intel GPU, else first zecl device), "intel", "zecl" or an index.
    // `tuning`: none = KernelTuning::recommendedFor(the device). A non-packaged one needs a device
    // that builds the zecl source bundle (InputError otherwise). `ids`: topk_ids' width in the
    // chains' device buffers (an --inputs file's I64 topk_ids run the int64 route readers).
    DeviceSession(const std::string& deviceSpec, const oracle::ChainShape& shape,
                  const std::vector<probe::Variant>& variants,
                  const std::optional<scheduler::KernelTuning>& tuning = std::nullopt,
                  scheduler::IdWidth ids = scheduler::IdWidth::Int32);
    ~DeviceSession();
    DeviceSession(const DeviceSession&) = delete;
    DeviceSession& operator=(const DeviceSession&) = delete;

    const runtime::DeviceInfo& device() const noexcept { return device_; }
    const scheduler::ModuleChoice& moduleChoice() const;
    // One line for reports: the module choice, and the tiles when not the packaged ones.
    std::string kernelsText() const;
    bool flushesSubnormals() const noexcept { return !device_.supportsFp32Denorm(); }

    // Copies these local experts' weights to the device (all of them when empty).
    void uploadWeights(const oracle::LocalWeights& weights, std::span<const int> localExperts);
    // CONTRACT §8's block boundary: every chain and the device weights are made anew as a fresh
    // process would make them (buffers reallocated, the lists re-recorded), and `weights`'
    // `localExperts` (all when empty) uploaded again; the kernel modules stay. The chains'
    // inputs are gone: setInputs before the next execute.
    void rebuild(const oracle::LocalWeights& weights, std::span<const int> localExperts);
    // One executor per variant given at construction, in that order.
    std::vector<Executor> executors();
    // Called after every execute of an executor with the wall time of execute + synchronize
    // and the launches' kernel timestamps, e.g. to time the case set's own executions.
    using ExecutionSink =
        std::function<void(probe::Variant, const CaseRun&, double hostNs, const std::vector<scheduler::KernelSpan>&)>;
    void setExecutionSink(ExecutionSink);
    scheduler::DeviceChain& chain(probe::Variant);
    runtime::CommandQueue& queue();
    runtime::Context& context();
    std::vector<probe::Variant> variants() const;  // in construction order, the valid ones
    // Variants asked for that this device cannot run safely (one_launch without cooperative
    // launches), with the reason: left out of variants() and executors(), reported instead.
    const std::vector<std::pair<probe::Variant, std::string>>& notValid() const;
    nlohmann::json describe() const;  // device and driver for card JSON

private:
    struct State;
    runtime::DeviceInfo device_;
    std::unique_ptr<State> state_;
};

// runtime::selectDevice, with a spec that names no device turned into an InputError (exit 2).
runtime::DeviceInfo selectDeviceOrInputError(const std::string& spec);

// --kernel-tuning's text as a KernelTuning (none for ""); a bad key or value is an InputError (exit 2).
std::optional<scheduler::KernelTuning> parseTuningOrInputError(const std::string& text);

// A device's results as the executor result the comparison reads.
ExecutorResult toExecutorResult(const oracle::ChainShape&, probe::Variant, const scheduler::DeviceResults&);

}  // namespace zp::app
