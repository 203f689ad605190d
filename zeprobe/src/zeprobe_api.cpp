// The zeprobe facade (include/zeprobe/zeprobe.hpp) over runtime/, scheduler/ and the kernel
// package. Every internal exception is translated into zeprobe::Error at the API boundary.
#include "zeprobe/zeprobe.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>
#include <optional>
#include <string_view>
#include <system_error>

#include "zp/oracle/chain.hpp"
#include "zp/oracle/numerics.hpp"
#include "zp/probe/case_io.hpp"
#include "zp/probe/cases.hpp"
#include "zp/probe/config.hpp"
#include "zp/probe/file_io.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/probe/safetensors.hpp"
#include "zp/probe/variant.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/device_chain.hpp"
#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/kernel_tuning.hpp"
#include "zp/scheduler/device_setup.hpp"

#ifndef ZEPROBE_VERSION
#define ZEPROBE_VERSION "0.0.0"
#endif

namespace fs = std::filesystem;

namespace zeprobe {

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

const char* version() noexcept { return ZEPROBE_VERSION; }
int contractVersion() noexcept { return 1; }

const char* errorCodeName(ErrorCode code) noexcept {
    switch (code) {
        case ErrorCode::invalid_argument: return "invalid_argument";
        case ErrorCode::not_found: return "not_found";
        case ErrorCode::io: return "io";
        case ErrorCode::device: return "device";
        case ErrorCode::kernel_build: return "kernel_build";
        case ErrorCode::unsupported: return "unsupported";
        case ErrorCode::out_of_memory: return "out_of_memory";
        case ErrorCode::internal: return "internal";
    }
    return "unknown";
}

Error::Error(ErrorCode code, const std::string& message, std::int32_t zeResult)
    : std::runtime_error(message), code_(code), zeResult_(zeResult) {}

namespace {

ErrorCode codeOf(const zp::runtime::Error& e) {
    switch (zp::scheduler::classify(e)) {
        case zp::scheduler::ZeFailure::KernelBuild: return ErrorCode::kernel_build;
        case zp::scheduler::ZeFailure::Unsupported: return ErrorCode::unsupported;
        case zp::scheduler::ZeFailure::OutOfMemory: return ErrorCode::out_of_memory;
        case zp::scheduler::ZeFailure::NotFound: return ErrorCode::not_found;
        case zp::scheduler::ZeFailure::Device: return ErrorCode::device;
    }
    return ErrorCode::device;
}

// Called inside a catch block: rethrows the exception in flight as zeprobe::Error, prefixed
// with the API call, by its type: zp::runtime::Error by its result, the scheduler's UnsupportedDevice
// and DeviceFault, InputError by its kind (a missing named thing is not_found, anything else
// `inputCode`). Any other std::runtime_error (the kernel package's own loading, say) becomes
// `runtimeCode`.
[[noreturn]] void rethrowTranslated(std::string_view call, ErrorCode inputCode = ErrorCode::invalid_argument,
                                    ErrorCode runtimeCode = ErrorCode::internal) {
    const std::string prefix = std::string(call) + ": ";
    try {
        throw;
    } catch (const Error& e) {
        // the facade's own, raised inside the call ("moved-from Device"): named with the call too
        if (std::string_view(e.what()).starts_with("zeprobe::")) throw;
        throw Error(e.code(), prefix + e.what(), e.zeResult());
    } catch (const zp::runtime::Error& e) {
        throw Error(codeOf(e), prefix + e.what(), static_cast<std::int32_t>(e.code()));
    } catch (const zp::scheduler::UnsupportedDevice& e) {
        throw Error(ErrorCode::unsupported, prefix + e.what());
    } catch (const zp::scheduler::DeviceFault& e) {
        throw Error(ErrorCode::device, prefix + e.what());
    } catch (const zp::probe::InputError& e) {
        throw Error(e.kind() == zp::probe::InputErrorKind::not_found ? ErrorCode::not_found : inputCode,
                    prefix + e.what());
    } catch (const zp::scheduler::VariantNotValid& e) {
        // one_launch on a driver without cooperative launches: the device cannot run it
        throw Error(ErrorCode::unsupported, prefix + e.what());
    } catch (const std::invalid_argument& e) {
        throw Error(ErrorCode::invalid_argument, prefix + e.what());
    } catch (const std::bad_alloc&) {
        throw Error(ErrorCode::out_of_memory, prefix + "out of host memory");
    } catch (const std::runtime_error& e) {
        throw Error(runtimeCode, prefix + e.what());
    } catch (const std::exception& e) {
        throw Error(ErrorCode::internal, prefix + e.what());
    } catch (...) {
        throw Error(ErrorCode::internal, prefix + "unknown exception");
    }
}

// libze_zecl.so installed next to this library (cmake --install puts both in the libdir, and
// the prefix may differ from the configured one, so the compiled-in install libdir is not enough).
std::optional<std::string> zeclNextToThisLibrary() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&zeclNextToThisLibrary), &info) == 0 || !info.dli_fname)
        return std::nullopt;
    std::error_code ec;
    const fs::path candidate = fs::path(info.dli_fname).parent_path() / "libze_zecl.so";
    if (!fs::is_regular_file(candidate, ec)) return std::nullopt;
    const fs::path abs = fs::absolute(candidate, ec);
    if (ec) return std::nullopt;
    return abs.lexically_normal().string();
}

// The loader's initialisation: untouched unless the caller asks the library to configure it.
zp::runtime::InitOptions initOptions(bool configureLoader, const std::string& zeclPath) {
    zp::runtime::InitOptions options;
    if (configureLoader) {
        options.setAltDriversIfUnset = true;
        if (!zeclPath.empty()) {
            options.zeclPath = zeclPath;
        } else if (const char* env = std::getenv("ZP_ZECL_PATH"); !env || !*env) {
            // ZP_ZECL_PATH wins when set (findZeclLibrary reads it); else the installed neighbour.
            options.zeclPath = zeclNextToThisLibrary();
        }
    }
    return options;
}

DeviceInfo describe(const zp::runtime::DeviceInfo& d) {
    DeviceInfo info;
    info.index = d.index;
    info.name = d.name();
    info.driver = zp::runtime::driverKindName(d.kind);
    info.driverVersion = d.driverProps.driverVersion;
    info.gpu = d.isGpu();
    info.computeUnits = d.computeUnits();
    info.memoryBytes = d.totalMemory();
    info.fp32Denormals = d.supportsFp32Denorm();
    return info;
}

zp::oracle::ChainShape toChainShape(const Shape& s) {
    zp::oracle::ChainShape c;
    c.hidden = s.hidden;
    c.intermediate = s.intermediate;
    c.experts = s.experts;
    c.topK = s.topK;
    c.rows = s.rows;
    c.cards = s.cards;
    c.card = s.card;
    c.swigluLimit = s.swigluLimit;
    c.swigluAlpha = s.swigluAlpha;
    c.swigluUpBias = s.swigluUpBias;
    c.layout = s.gateUpLayout == GateUpLayout::interleaved ? zp::oracle::GateUpLayout::Interleaved
                                                           : zp::oracle::GateUpLayout::Split;
    return c;
}

Shape fromChainShape(const zp::oracle::ChainShape& c) {
    Shape s;
    s.hidden = c.hidden;
    s.intermediate = c.intermediate;
    s.experts = c.experts;
    s.topK = c.topK;
    s.rows = c.rows;
    s.cards = c.cards;
    s.card = c.card;
    s.swigluLimit = c.swigluLimit;
    s.swigluAlpha = c.swigluAlpha;
    s.swigluUpBias = c.swigluUpBias;
    s.gateUpLayout =
        c.layout == zp::oracle::GateUpLayout::Interleaved ? GateUpLayout::interleaved : GateUpLayout::split;
    return s;
}

}  // namespace

std::vector<DeviceInfo> listDevices(bool configureLoader) {
    try {
        zp::runtime::init(initOptions(configureLoader, {}));
        std::vector<DeviceInfo> out;
        for (const auto& d : zp::runtime::listDevices()) out.push_back(describe(d));
        return out;
    } catch (...) {
        rethrowTranslated("zeprobe::listDevices");
    }
}

std::vector<std::string> variants() {
    std::vector<std::string> out;
    for (auto v : zp::probe::kAllVariants) out.emplace_back(zp::probe::variantName(v));
    return out;
}

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

namespace detail {

struct DeviceState {
    std::unique_ptr<zp::scheduler::DeviceSetup> setup;
    DeviceInfo info;
    // Guards `setup` (its kernel modules are not thread-safe) and serialises every creation of
    // device objects on behalf of Layers and Chains.
    std::mutex mutex;
};

struct LayerState {
    std::shared_ptr<DeviceState> device;  // first: destroyed last
    Shape shape;
    zp::oracle::ChainShape chainShape;
    std::unique_ptr<zp::scheduler::DeviceLayer> layer;  // the weights and the CONTRACT §5 SiLU table
};

struct ChainState {
    std::shared_ptr<LayerState> layer;  // first: destroyed last
    std::string variantName;
    zp::probe::Variant variant{};
    zp::runtime::CommandQueue queue;
    std::unique_ptr<zp::scheduler::DeviceChain> chain;
    zp::oracle::ChainInputs inputs;  // staging, reused between calls: [M, ·] with padded rows
    std::int32_t paddingId = 0;      // expert id of padded routes: another card's when C > 1
    IdWidth idWidth = IdWidth::int32;
    bool ran = false;
    // Set while a forward() runs: a second one at once (the Chain used from two threads, which the
    // header forbids) is refused instead of racing on the staging and the device buffers.
    std::atomic<bool> busy{false};

    // A forward() that failed part-way (e.g. an enqueue error) can leave earlier commands in
    // flight: wait for them before the chain's buffers are freed.
    ~ChainState() {
        try {
            if (queue) queue.synchronize();
        } catch (...) {}
    }
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Device
// ---------------------------------------------------------------------------------------------

Device::Device(const DeviceOptions& options) {
    try {
        std::optional<zp::scheduler::KernelTuning> tuning;
        if (!options.kernelTuning.empty()) tuning = zp::scheduler::KernelTuning::parse(options.kernelTuning);
        auto s = std::make_shared<detail::DeviceState>();
        try {
            s->setup =
                zp::scheduler::DeviceSetup::open({.device = options.device,
                                                  .tuning = tuning,
                                                  .init = initOptions(options.configureLoader, options.zeclPath)});
        } catch (const zp::scheduler::NoSuchDevice& e) {
            throw Error(e.wellFormed() ? ErrorCode::not_found : ErrorCode::invalid_argument,
                        std::string("zeprobe::Device: ") + e.cause().extra(),
                        static_cast<std::int32_t>(e.cause().code()));
        }
        const zp::runtime::DeviceInfo& device = s->setup->device();
        s->info = describe(device);
        s->info.kernels = s->setup->kernelsText();
        state_ = std::move(s);
    } catch (...) {
        rethrowTranslated("zeprobe::Device", ErrorCode::invalid_argument, ErrorCode::unsupported);
    }
}

Device::~Device() = default;
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;

const DeviceInfo& Device::info() const {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Device::info: moved-from Device");
    return state_->info;
}

// ---------------------------------------------------------------------------------------------
// Layer
// ---------------------------------------------------------------------------------------------

namespace {

// CONTRACT §1 plus the documented maxima and the device's memory, before any allocation.
zp::oracle::ChainShape checkedShape(const Shape& shape, const detail::DeviceState& device) {
    if (shape.gateUpLayout != GateUpLayout::split && shape.gateUpLayout != GateUpLayout::interleaved)
        throw Error(ErrorCode::invalid_argument, "gate_up_layout = " + std::to_string(int(shape.gateUpLayout)) +
                                                     ": must be GateUpLayout::split or GateUpLayout::interleaved");
    const zp::oracle::ChainShape cs = toChainShape(shape);
    zp::probe::validateShapeLimits(cs);
    zp::probe::checkFitsMemory(cs, device.info.memoryBytes, "the memory of device " + device.info.name);
    return cs;
}

std::shared_ptr<detail::LayerState> makeLayer(const std::shared_ptr<detail::DeviceState>& device, const Shape& shape,
                                              const zp::oracle::LocalWeights& weights) {
    auto s = std::make_shared<detail::LayerState>();
    s->device = device;
    s->shape = shape;
    s->chainShape = toChainShape(shape);
    std::lock_guard lock(device->mutex);
    s->layer = std::make_unique<zp::scheduler::DeviceLayer>(*device->setup, s->chainShape);
    s->layer->weights().upload(weights);
    return s;
}

}  // namespace

Layer::Layer(std::shared_ptr<detail::LayerState> state) : state_(std::move(state)) {}
Layer::~Layer() = default;
Layer::Layer(Layer&&) noexcept = default;
Layer& Layer::operator=(Layer&&) noexcept = default;

Layer Layer::random(const Device& device, const Shape& shape, std::uint64_t seed) {
    try {
        if (!device.state_) throw Error(ErrorCode::invalid_argument, "moved-from Device");
        const auto& d = device.state_;
        const auto cs = checkedShape(shape, *d);
        return Layer(makeLayer(d, shape, zp::probe::makeRandomWeights(cs, seed)));
    } catch (...) {
        rethrowTranslated("zeprobe::Layer::random");
    }
}

Layer Layer::fromSafetensors(const Device& device, const Shape& shape, const std::string& path,
                             const std::string& prefix) {
    try {
        if (!device.state_) throw Error(ErrorCode::invalid_argument, "moved-from Device");
        const auto& d = device.state_;
        const auto cs = checkedShape(shape, *d);
        std::error_code ec;
        if (!fs::is_regular_file(path, ec))
            throw Error(ErrorCode::not_found, "zeprobe::Layer::fromSafetensors: weights file '" + path +
                                                  "' does not exist or is not a regular file");
        zp::oracle::LocalWeights w;
        try {
            w = zp::probe::loadWeights(path, cs, prefix);
        } catch (const zp::probe::InputError& e) {
            // A missing tensor is not_found; anything else wrong with the file is io.
            throw zp::probe::InputError(std::string(e.what()) + " (prefix '" + prefix + "')", e.kind());
        }
        return Layer(makeLayer(d, shape, w));
    } catch (...) {
        rethrowTranslated("zeprobe::Layer::fromSafetensors", ErrorCode::io);
    }
}

Layer Layer::fromLocalWeights(const Device& device, const Shape& shape, const LocalWeightsView& view) {
    try {
        if (!device.state_) throw Error(ErrorCode::invalid_argument, "moved-from Device");
        const auto& d = device.state_;
        const auto cs = checkedShape(shape, *d);
        using LW = zp::oracle::LocalWeights;
        const std::size_t e = std::size_t(cs.localExperts());
        struct Part {
            const char* name;
            std::span<const std::uint8_t> bytes;
            std::size_t expected;
            std::vector<std::uint8_t> LW::*member;
        };
        const Part parts[] = {
            {"w1Blocks", view.w1Blocks, e * LW::w1BlocksPerExpert(cs), &LW::w1Blocks},
            {"w1Scales", view.w1Scales, e * LW::w1ScalesPerExpert(cs), &LW::w1Scales},
            {"w2Blocks", view.w2Blocks, e * LW::w2BlocksPerExpert(cs), &LW::w2Blocks},
            {"w2Scales", view.w2Scales, e * LW::w2ScalesPerExpert(cs), &LW::w2Scales},
        };
        LW w;
        for (const auto& p : parts) {
            if (p.bytes.size() != p.expected)
                throw Error(ErrorCode::invalid_argument,
                            "zeprobe::Layer::fromLocalWeights: " + std::string(p.name) + " has " +
                                std::to_string(p.bytes.size()) + " bytes, expected " + std::to_string(p.expected) +
                                " for E/C = " + std::to_string(e) + " local experts (CONTRACT §3 layout)");
            (w.*p.member).assign(p.bytes.begin(), p.bytes.end());
        }
        return Layer(makeLayer(d, shape, w));
    } catch (...) {
        rethrowTranslated("zeprobe::Layer::fromLocalWeights");
    }
}

const Shape& Layer::shape() const {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Layer::shape: moved-from Layer");
    return state_->shape;
}

// ---------------------------------------------------------------------------------------------
// Chain
// ---------------------------------------------------------------------------------------------

Chain::Chain(const Layer& layer, const std::string& variant, IdWidth ids) {
    try {
        if (!layer.state_) throw Error(ErrorCode::invalid_argument, "moved-from Layer");
        if (ids != IdWidth::int32 && ids != IdWidth::int64)
            throw Error(ErrorCode::invalid_argument,
                        "IdWidth " + std::to_string(int(ids)) + ": must be IdWidth::int32 or IdWidth::int64");
        auto s = std::make_unique<detail::ChainState>();
        s->layer = layer.state_;
        s->variant = zp::probe::parseVariant(variant);
        s->variantName = std::string(zp::probe::variantName(s->variant));
        const auto& cs = s->layer->chainShape;
        // Padded rows route to the first expert of the next card: never local work when C > 1.
        s->paddingId = cs.cards > 1 ? ((cs.card + 1) % cs.cards) * cs.localExperts() : cs.firstLocalExpert();
        s->inputs.hidden.assign(std::size_t(cs.rows) * cs.hidden, 0);
        s->inputs.topkIds.assign(std::size_t(cs.maxRoutes()), s->paddingId);
        s->inputs.topkWeights.assign(std::size_t(cs.maxRoutes()), 0.0f);
        detail::DeviceState& d = *s->layer->device;
        std::lock_guard lock(d.mutex);
        s->queue = d.setup->makeQueue();
        s->idWidth = ids;
        s->chain = s->layer->layer->makeChain(
            s->variant, ids == IdWidth::int64 ? zp::scheduler::IdWidth::Int64 : zp::scheduler::IdWidth::Int32);
        state_ = std::move(s);
    } catch (...) {
        rethrowTranslated("zeprobe::Chain", ErrorCode::invalid_argument, ErrorCode::unsupported);
    }
}

Chain::~Chain() = default;
Chain::Chain(Chain&&) noexcept = default;
Chain& Chain::operator=(Chain&&) noexcept = default;

namespace {

// Both forward() widths: the ids are checked as given (int64 ones beyond int32 range are
// outside [0, E)), then staged as int32 (exact for valid ids) and stored at the chain's width.
template <class Id>
std::vector<std::uint16_t> forwardAlloc(Chain& chain, const Shape& sh, std::span<const std::uint16_t> hidden,
                                        std::span<const Id> topkIds, std::span<const float> topkWeights) {
    const std::size_t K = std::size_t(sh.topK), H = std::size_t(sh.hidden), m = topkIds.size() / K;
    // Sized only for a plausible row count (never a huge allocation from a bad input); the
    // overload with `out` checks everything and names what is wrong.
    std::vector<std::uint16_t> out(topkIds.size() % K == 0 && m <= std::size_t(sh.rows) ? m * H : 0);
    chain.forward(hidden, topkIds, topkWeights, out);
    return out;
}

template <class Id>
void forwardInto(detail::ChainState& s, std::span<const std::uint16_t> hidden, std::span<const Id> topkIds,
                 std::span<const float> topkWeights, std::span<std::uint16_t> out) {
    const Shape& sh = s.layer->shape;
    const std::size_t H = std::size_t(sh.hidden), K = std::size_t(sh.topK);
    auto bad = [](const std::string& why) {
        throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::forward: " + why);
    };
    if (s.busy.exchange(true, std::memory_order_acquire))
        bad("called while another forward() on this Chain runs: a Chain is used from one thread at a time (make "
            "one per thread from the shared Layer)");
    struct Release {
        std::atomic<bool>& busy;
        ~Release() { busy.store(false, std::memory_order_release); }
    } release{s.busy};

    // CONTRACT §5.1: everything is checked before any device work.
    std::size_t m = 0;
    try {
        m = zp::probe::checkRequestInputs(s.layer->chainShape, hidden.size(), topkIds, topkWeights.size());
    } catch (const zp::probe::InputError& e) {
        bad(e.what());
    }
    if (out.size() != m * H)
        bad("out has room for " + std::to_string(out.size()) +
            " values, expected rows*hidden = " + std::to_string(m * H));

    try {
        // Rows m..M-1 keep the padding set at construction (zero hidden, weight 0, padding id);
        // rows are independent in the chain (CONTRACT §5), so they never change rows < m.
        std::copy(hidden.begin(), hidden.end(), s.inputs.hidden.begin());
        std::transform(topkIds.begin(), topkIds.end(), s.inputs.topkIds.begin(),
                       [](Id id) { return std::int32_t(id); });  // checked: in [0, E)
        std::copy(topkWeights.begin(), topkWeights.end(), s.inputs.topkWeights.begin());
        std::fill(s.inputs.hidden.begin() + std::ptrdiff_t(m * H), s.inputs.hidden.end(), 0);
        std::fill(s.inputs.topkIds.begin() + std::ptrdiff_t(m * K), s.inputs.topkIds.end(), s.paddingId);
        std::fill(s.inputs.topkWeights.begin() + std::ptrdiff_t(m * K), s.inputs.topkWeights.end(), 0.0f);
        s.chain->setInputs(s.inputs);
        s.chain->execute(s.queue);
        s.ran = true;
        // out alone comes back (no verification tensor), straight into the caller's span.
        const zp::scheduler::StepCheck r = s.chain->readOut(out);
        if (r.invalidIds > 0)
            throw Error(ErrorCode::internal, "zeprobe::Chain::forward: the device flagged " +
                                                 std::to_string(r.invalidIds) + " expert id(s) outside [0, " +
                                                 std::to_string(sh.experts) + ") that the host accepted");
        if (r.countsLeft > 0)
            throw Error(ErrorCode::internal, "zeprobe::Chain::forward: the kernels left " +
                                                 std::to_string(r.countsLeft) +
                                                 " word(s) of their cross-group counts non-zero");
    } catch (...) {
        rethrowTranslated("zeprobe::Chain::forward", ErrorCode::invalid_argument, ErrorCode::device);
    }
}

}  // namespace

std::vector<std::uint16_t> Chain::forward(std::span<const std::uint16_t> hidden, std::span<const std::int32_t> topkIds,
                                          std::span<const float> topkWeights) {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::forward: moved-from Chain");
    return forwardAlloc(*this, state_->layer->shape, hidden, topkIds, topkWeights);
}

std::vector<std::uint16_t> Chain::forward(std::span<const std::uint16_t> hidden, std::span<const std::int64_t> topkIds,
                                          std::span<const float> topkWeights) {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::forward: moved-from Chain");
    return forwardAlloc(*this, state_->layer->shape, hidden, topkIds, topkWeights);
}

void Chain::forward(std::span<const std::uint16_t> hidden, std::span<const std::int32_t> topkIds,
                    std::span<const float> topkWeights, std::span<std::uint16_t> out) {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::forward: moved-from Chain");
    forwardInto(*state_, hidden, topkIds, topkWeights, out);
}

void Chain::forward(std::span<const std::uint16_t> hidden, std::span<const std::int64_t> topkIds,
                    std::span<const float> topkWeights, std::span<std::uint16_t> out) {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::forward: moved-from Chain");
    forwardInto(*state_, hidden, topkIds, topkWeights, out);
}

std::vector<KernelTiming> Chain::kernelTimings() const {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::kernelTimings: moved-from Chain");
    if (!state_->ran) return {};
    try {
        std::vector<KernelTiming> out;
        for (const auto& t : state_->chain->kernelTimings()) out.push_back({t.kernel, t.ns});
        return out;
    } catch (...) {
        rethrowTranslated("zeprobe::Chain::kernelTimings", ErrorCode::invalid_argument, ErrorCode::device);
    }
}

const std::string& Chain::variant() const {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::variant: moved-from Chain");
    return state_->variantName;
}

IdWidth Chain::idWidth() const {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::idWidth: moved-from Chain");
    return state_->idWidth;
}

const Shape& Chain::shape() const {
    if (!state_) throw Error(ErrorCode::invalid_argument, "zeprobe::Chain::shape: moved-from Chain");
    return state_->layer->shape;
}

// ---------------------------------------------------------------------------------------------
// Config and request helpers
// ---------------------------------------------------------------------------------------------

Config loadConfig(const std::string& path, const std::vector<std::string>& sets) {
    try {
        zp::probe::Config cfg;
        if (!path.empty()) cfg = zp::probe::loadConfig(path);
        for (const auto& set : sets) zp::probe::applySet(cfg, set);
        zp::probe::validate(cfg);
        return Config{.shape = fromChainShape(cfg.shape), .seed = cfg.seed, .weightsPrefix = cfg.weightsPrefix};
    } catch (const zp::probe::InputError& e) {
        // The message names the file (or --set), the key and the value already.
        throw Error(ErrorCode::invalid_argument, e.what());
    } catch (...) {
        rethrowTranslated("zeprobe::loadConfig");
    }
}

Inputs inputsFromSafetensors(std::span<const std::uint8_t> file, const Shape& shape, const std::string& name) {
    namespace probe = zp::probe;
    auto bad = [](const std::string& why) { throw Error(ErrorCode::invalid_argument, why); };
    try {
        const probe::TensorMap t = probe::parseSafetensors(file, name);
        for (const auto& [key, value] : t)
            if (key != "hidden" && key != "topk_ids" && key != "topk_weights")
                bad(name + ": unknown tensor '" + key + "' (expected hidden, topk_ids, topk_weights)");
        const std::int64_t anyH[] = {-1, shape.hidden}, anyK[] = {-1, shape.topK};
        Inputs r;
        r.topkIds = probe::topkIdValues(probe::findTensor(t, "topk_ids", name), anyK, "topk_ids");  // I32 or I64
        r.topkWeights = probe::tensorValues<float>(probe::findTensor(t, "topk_weights", name), probe::DType::F32, anyK,
                                                   "topk_weights");
        r.hidden = probe::tensorValues<std::uint16_t>(probe::findTensor(t, "hidden", name), probe::DType::BF16, anyH,
                                                      "hidden");
        const std::int64_t m = t.at("topk_ids").shape[0];
        if (m < 1 || m > shape.rows)
            bad(name + ": topk_ids has " + std::to_string(m) +
                " rows, expected 1 to at most rows = " + std::to_string(shape.rows) + " (the server's shape)");
        if (t.at("topk_weights").shape[0] != m || t.at("hidden").shape[0] != m)
            bad(name + ": hidden, topk_ids and topk_weights must have the same rows; got " +
                std::to_string(t.at("hidden").shape[0]) + ", " + std::to_string(m) + ", " +
                std::to_string(t.at("topk_weights").shape[0]));
        r.rows = int(m);
        return r;
    } catch (const probe::InputError& e) {
        // The message names the body (`name`) already.
        throw Error(ErrorCode::invalid_argument, e.what());
    } catch (...) {
        rethrowTranslated("zeprobe::inputsFromSafetensors");
    }
}

std::vector<std::uint8_t> outputToSafetensors(std::span<const std::uint16_t> out, const Shape& shape) {
    try {
        const std::size_t H = std::size_t(shape.hidden);
        if (H == 0 || out.size() % H != 0)
            throw Error(ErrorCode::invalid_argument,
                        "zeprobe::outputToSafetensors: out has " + std::to_string(out.size()) +
                            " values, not a whole number of rows of hidden = " + std::to_string(shape.hidden));
        zp::probe::TensorMap t;
        t["out"] = zp::probe::makeTensor(zp::probe::DType::BF16,
                                         {std::int64_t(out.size() / H), std::int64_t(shape.hidden)}, out);
        return zp::probe::serializeSafetensors(t);
    } catch (...) {
        rethrowTranslated("zeprobe::outputToSafetensors");
    }
}

void checkExpertId(std::int64_t id, std::size_t m, std::size_t k, const Shape& shape) {
    if (id < 0 || id >= shape.experts)
        throw Error(ErrorCode::invalid_argument, zp::probe::expertIdProblem(id, m, k, shape.experts));
}

std::uint16_t bf16FromDouble(double value) noexcept { return zp::oracle::bf16FromF64(value); }
float floatFromBf16(std::uint16_t bits) noexcept { return zp::oracle::f32FromBf16(bits); }

void checkOutputFile(const std::string& path, const std::string& what) {
    try {
        zp::probe::checkOutputFile(path, what);
    } catch (const zp::probe::InputError& e) {
        throw Error(ErrorCode::io, e.what());  // names `what` and the path
    } catch (...) {
        rethrowTranslated("zeprobe::checkOutputFile", ErrorCode::io, ErrorCode::io);
    }
}

bool sameFile(const std::string& a, const std::string& b) { return zp::probe::sameFile(a, b); }

void writeFileAtomically(const std::string& path, std::string_view bytes, const std::string& what) {
    try {
        zp::probe::writeFileAtomically(path, bytes, what);
    } catch (const zp::probe::InputError& e) {
        throw Error(ErrorCode::io, e.what());
    } catch (...) {
        rethrowTranslated("zeprobe::writeFileAtomically", ErrorCode::io, ErrorCode::io);
    }
}

}  // namespace zeprobe
