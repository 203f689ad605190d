#include "device_session.hpp"

#include "zp/probe/input_error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>

namespace zp::probe {

ze::DeviceInfo selectDeviceOrInputError(const std::string& spec) {
    try {
        return ze::selectDevice(spec);
    } catch (const ze::Error& e) {
        // A --device value that names no device is bad input (exit 2), not a device fault.
        if (e.code() == ZE_RESULT_ERROR_INVALID_ARGUMENT) throw sched::InputError(std::string("--device: ") + e.what());
        throw;
    }
}

std::optional<sched::KernelTuning> parseTuningOrInputError(const std::string& text) {
    if (text.empty()) return std::nullopt;
    try {
        return sched::KernelTuning::parse(text);
    } catch (const std::invalid_argument& e) {
        throw sched::InputError(std::string("--kernel-tuning: ") + e.what());
    }
}

struct DeviceSession::State {
    // Declaration order is destruction order reversed: the context outlives everything.
    ze::Context context;
    ze::CommandQueue queue;
    std::unique_ptr<sched::KernelModules> modules;
    std::unique_ptr<sched::DeviceWeights> weights;
    std::vector<oracle::bf16_t> silu;
    std::vector<std::pair<sched::Variant, std::unique_ptr<sched::DeviceChain>>> chains;
    std::vector<std::pair<sched::Variant, std::string>> notValid;
    ExecutionSink sink;
};

DeviceSession::DeviceSession(const std::string& spec, const oracle::ChainShape& shape,
                             const std::vector<sched::Variant>& variants,
                             const std::optional<sched::KernelTuning>& requested)
    : device_(selectDeviceOrInputError(spec)), state_(std::make_unique<State>()) {
    State& s = *state_;
    s.context = ze::Context(device_);
    s.queue = ze::CommandQueue(s.context, device_);
    const sched::KernelTuning tuning = requested.value_or(sched::KernelTuning::recommendedFor(device_));
    try {
        s.modules = std::make_unique<sched::KernelModules>(s.context, device_, kernels::Package::instance(), tuning);
    } catch (const std::runtime_error& e) {
        // Only a tuning the device cannot build is the user's to fix; the packaged one always fits.
        if (tuning.isPackaged()) throw;
        throw sched::InputError(std::string("--kernel-tuning: ") + e.what());
    }
    s.weights = std::make_unique<sched::DeviceWeights>(s.context, device_, shape);
    s.silu = oracle::buildSiluTable(shape.swigluAlpha);
    for (sched::Variant v : variants) try {
            s.chains.emplace_back(
                v, std::make_unique<sched::DeviceChain>(s.context, device_, *s.modules, shape, v, *s.weights, s.silu));
        } catch (const sched::VariantNotValid& e) {
            s.notValid.emplace_back(v, e.what());  // never run at the risk of a hang
        }
}

const std::vector<std::pair<sched::Variant, std::string>>& DeviceSession::notValid() const { return state_->notValid; }

DeviceSession::~DeviceSession() {
    // A run that failed part-way (an enqueue error, say) can leave earlier commands in flight:
    // wait for them before the chains' buffers are freed.
    try {
        if (state_ && state_->queue) state_->queue.synchronize();
    } catch (...) {}
}

const sched::ModuleChoice& DeviceSession::moduleChoice() const { return state_->modules->choice(); }

std::string DeviceSession::kernelsText() const {
    const auto& t = state_->modules->tuning();
    return state_->modules->choice().why + (t.isPackaged() ? std::string() : "; tiles " + t.describe());
}

void DeviceSession::uploadWeights(const oracle::LocalWeights& weights, std::span<const int> localExperts) {
    state_->weights->upload(weights, localExperts);
}

sched::DeviceChain& DeviceSession::chain(sched::Variant v) {
    for (auto& [variant, chain] : state_->chains)
        if (variant == v) return *chain;
    throw std::logic_error(fmt::format("no chain for variant {}", sched::variantName(v)));
}

ze::CommandQueue& DeviceSession::queue() { return state_->queue; }
ze::Context& DeviceSession::context() { return state_->context; }

void DeviceSession::setExecutionSink(ExecutionSink sink) { state_->sink = std::move(sink); }

std::vector<sched::Variant> DeviceSession::variants() const {
    std::vector<sched::Variant> out;
    for (const auto& c : state_->chains) out.push_back(c.first);
    return out;
}

std::vector<Executor> DeviceSession::executors() {
    std::vector<Executor> out;
    for (auto& [variant, chain] : state_->chains) {
        sched::DeviceChain* c = chain.get();
        const sched::Variant v = variant;
        out.push_back({std::string(sched::variantName(v)), [this, c, v](const CaseRun& run) {
                           c->setInputs(run.inputs);
                           const auto t0 = std::chrono::steady_clock::now();
                           c->execute(state_->queue);
                           const double hostNs =
                               std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
                           if (state_->sink) state_->sink(v, run, hostNs, c->kernelSpans());
                           return toExecutorResult(run.shape, v, c->results());
                       }});
    }
    return out;
}

nlohmann::json DeviceSession::describe() const {
    const auto& d = device_;
    return {{"name", d.name()},
            {"type", d.isGpu() ? "gpu" : "cpu"},
            {"driver", ze::driverKindName(d.kind)},
            {"driver_version", d.driverProps.driverVersion},
            {"compute_units", d.computeUnits()},
            {"memory_bytes", d.totalMemory()},
            {"fp32_denorm", d.supportsFp32Denorm()},
            {"modules", state_->modules->choice().why},
            {"kernel_tuning", state_->modules->tuning().describe()}};
}

ExecutorResult toExecutorResult(const oracle::ChainShape& s, sched::Variant v, const sched::DeviceResults& d) {
    ExecutorResult r;
    r.materialised = sched::materialised(v);
    r.outputs.routes.rows = d.compactRows;
    r.outputs.routes.routeRow = d.routeRow;
    r.outputs.gateUp = d.gateUp;
    r.outputs.act = d.act;
    r.outputs.y = d.y;
    r.outputs.out = d.out;
    r.routeY = d.routeY;
    if (d.invalidIds > 0)
        r.error = fmt::format("device flagged {} expert id(s) outside [0, {}); first at route (m, k) = ({}, {})",
                              d.invalidIds, s.experts, d.firstInvalidRoute / s.topK, d.firstInvalidRoute % s.topK);
    return r;
}

}  // namespace zp::probe
