#include "device_session.hpp"

#include "zp/probe/config.hpp"
#include "zp/probe/input_error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>

namespace zp::app {

namespace {

// A --device value that names no device is bad input (exit 2), not a device fault. The useful
// line first ("index out of range; valid choices ..."), the call and code last.
probe::InputError deviceInputError(const scheduler::NoSuchDevice& e) {
    return probe::InputError("--device " + e.spec() + ": " + e.reason() + "(" + e.cause().codeName() + " from " +
                             e.cause().expression() + ")");
}

// A --kernel-tuning that does not parse, or that this device cannot build or run, is bad input
// (exit 2).
probe::InputError tuningInputError(const std::exception& e) {
    return probe::InputError(std::string("--kernel-tuning: ") + e.what());
}

}  // namespace

runtime::DeviceInfo selectDeviceOrInputError(const std::string& spec) {
    try {
        return scheduler::selectDevice(spec);
    } catch (const scheduler::NoSuchDevice& e) {
        throw deviceInputError(e);
    }
}

std::optional<scheduler::KernelTuning> parseTuningOrInputError(const std::string& text) {
    if (text.empty()) return std::nullopt;
    try {
        return scheduler::KernelTuning::parse(text);
    } catch (const std::invalid_argument& e) {
        throw tuningInputError(e);
    }
}

namespace {

// The device stack of `spec` and `tuning` (scheduler::DeviceSetup::open), with a spec that names no
// device or a tuning the device cannot build turned into an InputError (exit 2).
std::unique_ptr<scheduler::DeviceSetup> openDeviceOrInputError(const std::string& spec,
                                                               const std::optional<scheduler::KernelTuning>& tuning) {
    try {
        return scheduler::DeviceSetup::open({.device = spec, .tuning = tuning});
    } catch (const scheduler::NoSuchDevice& e) {
        throw deviceInputError(e);
    } catch (const scheduler::TuningNotBuildable& e) {
        throw tuningInputError(e);
    }
}

}  // namespace

struct DeviceSession::State {
    // Declaration order is destruction order reversed: the setup outlives everything.
    std::unique_ptr<scheduler::DeviceSetup> setup;
    runtime::CommandQueue queue;
    std::unique_ptr<scheduler::DeviceLayer> layer;
    std::vector<std::pair<probe::Variant, std::unique_ptr<scheduler::DeviceChain>>> chains;
    std::vector<std::pair<probe::Variant, std::string>> notValid;
    ExecutionSink sink;
    oracle::ChainShape shape;
    scheduler::IdWidth ids = scheduler::IdWidth::Int32;

    void buildChains() {
        for (auto& [v, chain] : chains) chain = layer->makeChain(v, ids);
    }
};

DeviceSession::DeviceSession(const std::string& spec, const oracle::ChainShape& shape,
                             const std::vector<probe::Variant>& variants,
                             const std::optional<scheduler::KernelTuning>& requested, scheduler::IdWidth ids)
    : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.setup = openDeviceOrInputError(spec, requested);
    device_ = s.setup->device();
    s.queue = s.setup->makeQueue();
    // A shape too large for this device is the user's to fix (exit 2), named before allocating.
    probe::checkFitsMemory(shape, device_.totalMemory(), "the memory of device " + device_.name());
    s.layer = std::make_unique<scheduler::DeviceLayer>(*s.setup, shape);
    s.shape = shape;
    s.ids = ids;
    for (probe::Variant v : variants) try {
            s.chains.emplace_back(v, s.layer->makeChain(v, ids));
        } catch (const scheduler::VariantNotValid& e) {
            s.notValid.emplace_back(v, e.what());           // never run at the risk of a hang
        } catch (const scheduler::TuningNotBuildable& e) {  // e.g. more local memory than the device has
            throw tuningInputError(e);
        }
}

void DeviceSession::rebuild(const oracle::LocalWeights& weights, std::span<const int> localExperts) {
    State& s = *state_;
    s.queue.synchronize();
    // Chains first: they hold the weights' addresses. Then everything anew, in the order the
    // constructor makes it, so the allocator sees what a fresh process would ask of it.
    for (auto& c : s.chains) c.second.reset();
    s.layer.reset();
    s.layer = std::make_unique<scheduler::DeviceLayer>(*s.setup, s.shape);
    s.layer->weights().upload(weights, localExperts);
    s.buildChains();
}

const std::vector<std::pair<probe::Variant, std::string>>& DeviceSession::notValid() const { return state_->notValid; }

DeviceSession::~DeviceSession() {
    // A run that failed part-way (an enqueue error, say) can leave earlier commands in flight:
    // wait for them before the chains' buffers are freed.
    try {
        if (state_ && state_->queue) state_->queue.synchronize();
    } catch (...) {}
}

const scheduler::ModuleChoice& DeviceSession::moduleChoice() const { return state_->setup->modules().choice(); }

std::string DeviceSession::kernelsText() const { return state_->setup->kernelsText(); }

void DeviceSession::uploadWeights(const oracle::LocalWeights& weights, std::span<const int> localExperts) {
    state_->layer->weights().upload(weights, localExperts);
}

scheduler::DeviceChain& DeviceSession::chain(probe::Variant v) {
    for (auto& [variant, chain] : state_->chains)
        if (variant == v) return *chain;
    throw std::logic_error(fmt::format("no chain for variant {}", probe::variantName(v)));
}

runtime::CommandQueue& DeviceSession::queue() { return state_->queue; }
runtime::Context& DeviceSession::context() { return state_->setup->context(); }

void DeviceSession::setExecutionSink(ExecutionSink sink) { state_->sink = std::move(sink); }

std::vector<probe::Variant> DeviceSession::variants() const {
    std::vector<probe::Variant> out;
    for (const auto& c : state_->chains) out.push_back(c.first);
    return out;
}

std::vector<Executor> DeviceSession::executors() {
    std::vector<Executor> out;
    for (auto& [variant, chain] : state_->chains) {
        const probe::Variant v = variant;
        // The chain is looked up at each call: rebuild() replaces it.
        out.push_back({std::string(probe::variantName(v)), [this, v](const CaseRun& run) {
                           scheduler::DeviceChain* c = &this->chain(v);
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
            {"driver", runtime::driverKindName(d.kind)},
            {"driver_version", d.driverProps.driverVersion},
            {"compute_units", d.computeUnits()},
            {"memory_bytes", d.totalMemory()},
            {"fp32_denorm", d.supportsFp32Denorm()},
            {"timer_resolution_ns", d.kernelClock().nsPerTick},
            {"kernel_timestamp_valid_bits", d.props.kernelTimestampValidBits},
            {"modules", state_->setup->modules().choice().why},
            {"kernel_tuning", state_->setup->modules().tuning().describe()}};
}

ExecutorResult toExecutorResult(const oracle::ChainShape& s, probe::Variant v, const scheduler::DeviceResults& d) {
    ExecutorResult r;
    r.materialised = probe::materialised(v);
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
    else if (d.countsLeft > 0)
        r.error = fmt::format(
            "{} word(s) of the kernels' cross-group counts (tile_done, phase_ready) left non-zero: "
            "the next launch of this chain would start from them",
            d.countsLeft);
    return r;
}

}  // namespace zp::app
