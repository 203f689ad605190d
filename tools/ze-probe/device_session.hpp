// ze-probe's device side: one Level Zero device with the chain of each variant recorded once,
// turned into probe::Executors. Owns every device object; destroyed before the context.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "probe.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/chain_plan.hpp"

namespace zp::probe {

class DeviceSession {
public:
    // `deviceSpec`: "" (best: first Intel GPU, else first zecl device), "intel", "zecl" or an index.
    DeviceSession(const std::string& deviceSpec, const oracle::ChainShape& shape, const std::vector<sched::Variant>& variants);
    ~DeviceSession();
    DeviceSession(const DeviceSession&) = delete;
    DeviceSession& operator=(const DeviceSession&) = delete;

    const ze::DeviceInfo& device() const noexcept { return device_; }
    const sched::ModuleChoice& moduleChoice() const;
    bool flushesSubnormals() const noexcept { return !device_.supportsFp32Denorm(); }

    // Copies these local experts' weights to the device (all of them when empty).
    void uploadWeights(const oracle::LocalWeights& weights, std::span<const int> localExperts);
    // One executor per variant given at construction, in that order.
    std::vector<Executor> executors();
    sched::DeviceChain& chain(sched::Variant);
    ze::CommandQueue& queue();
    nlohmann::json describe() const;  // device and driver for card JSON

private:
    struct State;
    ze::DeviceInfo device_;
    std::unique_ptr<State> state_;
};

// A device's results as the executor result the comparison reads.
ExecutorResult toExecutorResult(const oracle::ChainShape&, sched::Variant, const sched::DeviceResults&);

}  // namespace zp::probe
