#include "zp/scheduler/device_chain.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

// Tile sizes and buffer layouts shared with the kernels (kernels_cl/abi, the one kernel header
// host code includes).
#include "zp_abi.h"

namespace zp::scheduler {

namespace {

// What the device cannot run of a tuning: the packaged kernels' is the device's limit
// (UnsupportedDevice), an asked-for tuning the user's to change (TuningNotBuildable: exit 2).
[[noreturn]] void refuseTuning(const KernelTuning& tuning, const std::string& why) {
    if (tuning.isPackaged()) throw UnsupportedDevice(why);
    throw TuningNotBuildable(why);
}

// A launch whose work-group needs more local memory (the kernel's own plus its local arguments)
// than the device has per work-group would fail only when executed, and as the driver's
// out-of-resources: refuse it here, naming the kernel, the bytes and the tuning.
void checkLocalMemory(const runtime::Kernel& kernel, const PlannedLaunch& launch, const runtime::DeviceInfo& device,
                      const KernelTuning& tuning) {
    const std::uint64_t limit = device.compute.maxSharedLocalMemory;
    if (limit == 0) return;  // the driver does not say
    std::uint64_t fromArgs = 0;
    for (const auto& a : launch.args)
        if (const auto* local = std::get_if<runtime::LocalMem>(&a)) fromArgs += local->bytes;
    const std::uint64_t own = kernel.properties().localMemSize;
    if (own + fromArgs <= limit) return;
    const std::string why = launch.kernel + " needs " + std::to_string(own + fromArgs) +
                            " bytes of local memory per work-group (" + std::to_string(own) + " its own, " +
                            std::to_string(fromArgs) + " in its arguments) with the kernel tuning '" +
                            tuning.describe() + "'; device " + device.name() + " has " + std::to_string(limit);
    refuseTuning(tuning, why);
}

// The launch's work-group size, refused by the driver where the kernel cannot run groups that
// large on this device (NVIDIA: fewer work-items per group the more registers the kernel takes):
// a tuning the device cannot run, said as such, not a device fault.
void setGroupSize(runtime::Kernel& kernel, const PlannedLaunch& launch, const runtime::DeviceInfo& device,
                  const KernelTuning& tuning) {
    try {
        kernel.setGroupSize(launch.group);
    } catch (const runtime::Error& err) {
        if (err.code() != ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION) throw;
        const auto& g = launch.group;
        const std::string why = launch.kernel + " cannot run work-groups of " + std::to_string(g.x * g.y * g.z) +
                                " work-items (" + std::to_string(g.x) + " x " + std::to_string(g.y) + " x " +
                                std::to_string(g.z) + ") with the kernel tuning '" + tuning.describe() +
                                "' on device " + device.name() + " (" + err.codeName() +
                                "): give fewer columns per work-group (cols_per_wg) or more per work-item";
        refuseTuning(tuning, why);
    }
}

}  // namespace

DeviceChain::DeviceChain(const runtime::Context& context, const runtime::DeviceInfo& device, KernelModules& modules,
                         const oracle::ChainShape& shape, probe::Variant variant, const DeviceWeights& weights,
                         std::span<const oracle::bf16_t> siluTable, IdWidth ids)
    : context_(&context), device_(device), shape_(shape), variant_(variant), copies_(context, device) {
    oracle::validateShape(shape);
    const auto& ws = weights.shape();
    if (ws.hidden != shape.hidden || ws.intermediate != shape.intermediate || ws.experts != shape.experts ||
        ws.cards != shape.cards)
        throw std::invalid_argument("DeviceChain: the device weights were made for another shape");
    if (siluTable.size() != 65536) throw std::invalid_argument("DeviceChain: the SiLU table must have 65536 entries");

    const std::size_t H = shape.hidden, I = shape.intermediate, M = shape.rows, routes = std::size_t(shape.maxRoutes());
    auto u16 = [&](std::size_t n) { return runtime::DeviceBuffer<std::uint16_t>(context, device, n); };
    auto i32 = [&](std::size_t n) { return runtime::DeviceBuffer<std::int32_t>(context, device, n); };
    hidden_ = u16(M * H);
    silu_ = u16(65536);
    a_ = u16(routes * H);
    gateUp_ = u16(routes * 2 * I);
    act_ = u16(routes * I);
    y_ = u16(routes * H);
    out_ = u16(M * H);
    if (ids == IdWidth::Int64)
        topkIds64_ = runtime::DeviceBuffer<std::int64_t>(context, device, routes);
    else
        topkIds_ = i32(routes);
    routeInfo_ = i32(ZP_INFO_WORDS);
    compactRows_ = i32(routes * ZP_ROW_WORDS);
    routeRow_ = i32(routes);
    groups_ = i32(routes * ZP_GROUP_WORDS);
    topkWeights_ = runtime::DeviceBuffer<float>(context, device, routes);
    phaseReady_ = runtime::DeviceBuffer<std::uint32_t>(context, device, ZP_OL_SCRATCH_WORDS(routes));
    phaseReady_.fill(copies_, 0u);  // once: one_launch leaves its counts at zero (the grid rank's cus need none)
    tileDone_ = runtime::DeviceBuffer<std::uint32_t>(context, device, H);
    tileDone_.fill(copies_, 0u);  // once: kernel B's tiles leave their counts at zero
    silu_.upload(copies_, siluTable);

    ChainBuffers b;
    b.hidden = hidden_.data();
    b.topkIds = ids == IdWidth::Int64 ? static_cast<const void*>(topkIds64_.data()) : topkIds_.data();
    b.topkWeights = topkWeights_.data();
    b.silu = silu_.data();
    b.w1Blocks = weights.w1Blocks().data();
    b.w1Scales = weights.w1Scales().data();
    b.w2Blocks = weights.w2Blocks().data();
    b.w2Scales = weights.w2Scales().data();
    b.routeInfo = routeInfo_.data();
    b.compactRows = compactRows_.data();
    b.routeRow = routeRow_.data();
    b.groups = groups_.data();
    b.a = a_.data();
    b.gateUp = gateUp_.data();
    b.act = act_.data();
    b.y = y_.data();
    b.out = out_.data();
    b.phaseReady = phaseReady_.data();
    b.tileDone = tileDone_.data();
    plan_ = planChain(variant, shape, b, modules.tuning(), ids);
    spreadUnits_ = variant == probe::Variant::OneLaunch && modules.tuning().spreadUnits != 0;

    for (const auto& l : plan_.launches) {
        runtime::Kernel kernel = modules.kernel(l.file, l.kernel);
        for (std::uint32_t a = 0; a < l.args.size(); ++a)
            std::visit([&](const auto& v) { kernel.setArg(a, v); }, l.args[a]);
        setGroupSize(kernel, l, device, modules.tuning());
        checkLocalMemory(kernel, l, device, modules.tuning());
        runtime::GroupCount grid = l.groups;
        if (l.cooperative || l.persistent) {
            // Asked with the group size and local arguments set: they decide what stays resident.
            std::uint32_t suggested = 0;
            std::string none;  // why the driver suggests no grid
            try {
                suggested = kernel.suggestMaxCooperativeGroupCount();
                if (suggested == 0) none = "zeKernelSuggestMaxCooperativeGroupCount is 0";
            } catch (const runtime::Error& err) {
                const ze_result_t why = err.code();
                if (why != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE && why != ZE_RESULT_ERROR_UNSUPPORTED_SIZE &&
                    why != ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
                    throw;
                none = std::string("the driver promises no co-resident grid (") + err.codeName() +
                       " from zeKernelSuggestMaxCooperativeGroupCount)";
            }
            if (!none.empty()) {
                if (l.cooperative)
                    throw VariantNotValid(std::string(probe::variantName(variant)) + " is not valid on this device (" +
                                          device.name() + "): " + none);
                suggested = l.groups.x;  // a persistent grid needs no co-resident groups: the whole grid
            }
            grid = {std::min(l.groups.x, suggested), 1, 1};
        }
        grids_.push_back(grid);
        kernels_.push_back(std::move(kernel));
    }
    timestampPool_ = runtime::EventPool(context, device, static_cast<std::uint32_t>(plan_.launches.size()),
                                        runtime::EventPoolOptions{.hostVisible = true, .kernelTimestamps = true});
    for (std::uint32_t n = 0; n < plan_.launches.size(); ++n) events_.emplace_back(timestampPool_, n);
    list_ = runtime::CommandList(context, device);
    record(list_, true);
    list_.close();
}

void DeviceChain::record(runtime::CommandListBase& list, bool timestamps) {
    for (std::size_t n = 0; n < kernels_.size(); ++n) {
        // Every launch reads what the previous one wrote: Level Zero orders nothing inside a
        // list without a barrier.
        if (n > 0) list.barrier();
        runtime::Event* signal = timestamps ? &events_[n] : nullptr;
        if (plan_.launches[n].cooperative)
            list.launchCooperative(kernels_[n], grids_[n], signal);
        else
            list.launch(kernels_[n], grids_[n], signal);
    }
}

void DeviceChain::appendTo(runtime::CommandListBase& list) { record(list, false); }

void DeviceChain::uploadInputs(const oracle::ChainInputs& in, std::size_t ids) {
    const std::size_t M = shape_.rows, H = shape_.hidden, routes = std::size_t(shape_.maxRoutes());
    if (in.hidden.size() != M * H || ids != routes || in.topkWeights.size() != routes)
        throw std::invalid_argument("DeviceChain::setInputs: expected hidden [" + std::to_string(M) + ", " +
                                    std::to_string(H) + "], topk_ids and topk_weights [" + std::to_string(M) + ", " +
                                    std::to_string(shape_.topK) + "]; got " + std::to_string(in.hidden.size()) + ", " +
                                    std::to_string(ids) + ", " + std::to_string(in.topkWeights.size()) + " values");
    hidden_.upload(copies_, std::span<const std::uint16_t>(in.hidden));
    topkWeights_.upload(copies_, std::span<const float>(in.topkWeights));
}

void DeviceChain::setInputs(const oracle::ChainInputs& in) {
    uploadInputs(in, in.topkIds.size());
    if (plan_.idWidth == IdWidth::Int64) {
        const std::vector<std::int64_t> wide(in.topkIds.begin(), in.topkIds.end());
        topkIds64_.upload(copies_, std::span<const std::int64_t>(wide));
    } else {
        topkIds_.upload(copies_, std::span<const std::int32_t>(in.topkIds));
    }
    lastIds_ = in.topkIds;
}

void DeviceChain::setInputs(const oracle::ChainInputs& in, std::span<const std::int64_t> topkIds) {
    uploadInputs(in, topkIds.size());
    // What the route reader of the Int64 kernels makes of each id (zp_topk_id).
    std::vector<std::int32_t> narrow(topkIds.size());
    for (std::size_t i = 0; i < topkIds.size(); ++i) {
        const std::int64_t id = topkIds[i];
        narrow[i] = id >= std::numeric_limits<std::int32_t>::min() && id <= std::numeric_limits<std::int32_t>::max()
                        ? std::int32_t(id)
                        : -1;
    }
    if (plan_.idWidth == IdWidth::Int64)
        topkIds64_.upload(copies_, topkIds);
    else
        topkIds_.upload(copies_, std::span<const std::int32_t>(narrow));
    lastIds_ = std::move(narrow);
}

void DeviceChain::execute(runtime::CommandQueue& queue) {
    for (auto& e : events_) e.hostReset();
    queue.execute(list_);
    queue.synchronize();
}

double DeviceChain::executeBatch(runtime::CommandQueue& queue, int times) {
    if (times < 1) throw std::invalid_argument("DeviceChain::executeBatch: times = " + std::to_string(times));
    if (kernels_.empty()) return 0;
    const auto clock = device_.kernelClock();
    if (times == 1) {
        execute(queue);
        return clock.durationNs(events_.front().kernelTimestamp().context.kernelStart,
                                events_.back().kernelTimestamp().context.kernelEnd);
    }
    if (batchTimes_ != times) {
        if (batchStart_.empty()) {
            batchPool_ = runtime::EventPool(*context_, device_, 1,
                                            runtime::EventPoolOptions{.hostVisible = true, .kernelTimestamps = true});
            batchStart_.emplace_back(batchPool_, 0);
        }
        batchList_ = runtime::CommandList(*context_, device_);
        for (int t = 0; t < times; ++t)
            for (std::size_t n = 0; n < kernels_.size(); ++n) {
                if (t > 0 || n > 0) batchList_.barrier();
                runtime::Event* ev = t == 0 && n == 0 ? &batchStart_.front() : t == times - 1 ? &events_[n] : nullptr;
                // The grid record() launches: a cooperative launch keeps its co-resident grid (at the
                // plan's fixed grid, groups that never start would leave the others waiting forever).
                if (plan_.launches[n].cooperative)
                    batchList_.launchCooperative(kernels_[n], grids_[n], ev);
                else
                    batchList_.launch(kernels_[n], grids_[n], ev);
            }
        batchList_.close();
        batchTimes_ = times;
    }
    for (auto& e : events_) e.hostReset();
    batchStart_.front().hostReset();
    queue.execute(batchList_);
    queue.synchronize();
    return clock.durationNs(batchStart_.front().kernelTimestamp().context.kernelStart,
                            events_.back().kernelTimestamp().context.kernelEnd);
}

DeviceChain::RouteInfo DeviceChain::routeInfo() {
    static_assert(std::tuple_size_v<RouteInfo> == ZP_INFO_WORDS);
    RouteInfo info{};
    routeInfo_.download(copies_, std::span<std::int32_t>(info));
    return info;
}

StepCheck DeviceChain::check(const RouteInfo& info) {
    StepCheck c;
    c.invalidIds = info[ZP_INFO_INVALID];
    c.firstInvalidRoute = info[ZP_INFO_FIRST_INVALID];
    // The counts of the variants that keep them (two_launch_b: tile_done; one_launch: both).
    if (variant_ == probe::Variant::TwoLaunch || variant_ == probe::Variant::OneLaunch)
        for (std::uint32_t w : tileDone_.download(copies_)) c.countsLeft += w != 0;
    if (variant_ == probe::Variant::OneLaunch) {  // the counts only, not the grid rank's units behind them
        std::vector<std::uint32_t> counts(ZP_OL_COUNT_WORDS(std::size_t(shape_.maxRoutes())));
        phaseReady_.download(copies_, std::span<std::uint32_t>(counts));
        for (std::uint32_t w : counts) c.countsLeft += w != 0;
    }
    return c;
}

std::vector<std::uint32_t> DeviceChain::groupUnits() {
    if (!spreadUnits_ || grids_.empty() || grids_.front().x > ZP_OL_SPREAD_MAX_GROUPS) return {};
    const auto words = phaseReady_.download(copies_);
    const std::size_t first = ZP_OL_COUNT_WORDS(std::size_t(shape_.maxRoutes()));
    return {words.begin() + std::ptrdiff_t(first), words.begin() + std::ptrdiff_t(first + grids_.front().x)};
}

static_assert(kGridRankMaxUnits == ZP_GRID_RANK_MAX_CUS, "gridRanks must bound the units as zp_grid_rank does");

std::vector<std::uint32_t> gridRanks(std::span<const std::uint32_t> units) {
    const std::size_t n = units.size();
    std::vector<std::uint32_t> ranks(n);
    std::vector<std::uint32_t> perUnit(kGridRankMaxUnits, 0), slot(n);
    for (std::size_t g = 0; g < n; ++g) {
        if (units[g] >= kGridRankMaxUnits) {  // every group its own id
            for (std::size_t i = 0; i < n; ++i) ranks[i] = std::uint32_t(i);
            return ranks;
        }
        slot[g] = perUnit[units[g]]++;
    }
    for (std::size_t g = 0; g < n; ++g) {
        std::uint32_t before = 0;
        for (std::uint32_t u = 0; u < kGridRankMaxUnits; ++u)
            before += std::min(perUnit[u], slot[g]) + (u < units[g] && perUnit[u] > slot[g] ? 1u : 0u);
        ranks[g] = before;
    }
    return ranks;
}

StepCheck DeviceChain::readOut(std::span<oracle::bf16_t> dst) {
    out_.download(copies_, dst);  // Buffer::download refuses more than the buffer holds
    return check(routeInfo());
}

DeviceResults DeviceChain::results() {
    DeviceResults r;
    const std::size_t H = shape_.hidden, I = shape_.intermediate, routes = std::size_t(shape_.maxRoutes());
    const RouteInfo info = routeInfo();
    static_cast<StepCheck&>(r) = check(info);
    r.out = out_.download(copies_);
    if (variant_ == probe::Variant::M1Oracle) {
        r.routes = -1;
        r.routeGateUp = gateUp_.download(copies_);
        r.routeAct = act_.download(copies_);
        r.routeY = y_.download(copies_);
        // The kernels leave rows of non-local routes untouched: clear them (stale otherwise).
        const int perCard = shape_.localExperts(), first = shape_.firstLocalExpert();
        for (std::size_t q = 0; q < routes && q < lastIds_.size(); ++q) {
            const int id = lastIds_[q];
            if (id >= first && id < first + perCard && id < shape_.experts) continue;
            std::fill_n(r.routeGateUp.begin() + q * 2 * I, 2 * I, 0);
            std::fill_n(r.routeAct.begin() + q * I, I, 0);
            std::fill_n(r.routeY.begin() + q * H, H, 0);
        }
        return r;
    }
    r.routes = info[ZP_INFO_ROUTES];
    if (r.routes < 0 || std::size_t(r.routes) > routes)
        throw DeviceFault("route_compact reported R = " + std::to_string(r.routes) + " (expected 0.." +
                          std::to_string(routes) + ")");
    const std::size_t R = std::size_t(r.routes);
    std::vector<std::int32_t> rows(R * ZP_ROW_WORDS);
    compactRows_.download(copies_, std::span<std::int32_t>(rows));
    for (std::size_t q = 0; q < R; ++q) r.compactRows.push_back({rows[q * ZP_ROW_WORDS], rows[q * ZP_ROW_WORDS + 1]});
    r.routeRow = routeRow_.download(copies_);
    auto head = [&](const runtime::DeviceBuffer<std::uint16_t>& buf, std::size_t cols) {
        std::vector<std::uint16_t> v(R * cols);
        buf.download(copies_, std::span<std::uint16_t>(v));
        return v;
    };
    const probe::Materialised mat = probe::materialised(variant_);
    if (mat.gateUp) r.gateUp = head(gateUp_, 2 * I);
    if (mat.act) r.act = head(act_, I);
    if (mat.y) r.y = head(y_, H);
    return r;
}

std::vector<KernelTiming> DeviceChain::kernelTimings() const {
    std::vector<KernelTiming> t;
    const auto clock = device_.kernelClock();
    for (std::size_t n = 0; n < events_.size(); ++n) {
        const auto ts = events_[n].kernelTimestamp();
        t.push_back({plan_.launches[n].kernel, clock.durationNs(ts.context.kernelStart, ts.context.kernelEnd)});
    }
    return t;
}

std::vector<KernelSpan> DeviceChain::kernelSpans() const {
    std::vector<KernelSpan> spans;
    if (events_.empty()) return spans;
    const auto clock = device_.kernelClock();
    const std::uint64_t firstTicks = events_.front().kernelTimestamp().context.kernelStart;
    // NOTE: absolute device times (~1e18 ns on some drivers) do not fit a double exactly:
    // the base stays an integer when a tick is 1 ns, and offsets from it are small.
    const std::uint64_t base =
        clock.nsPerTick == 1.0 ? (firstTicks & clock.mask) : std::uint64_t(clock.toNs(firstTicks));
    for (std::size_t n = 0; n < events_.size(); ++n) {
        const auto ts = events_[n].kernelTimestamp();
        const std::uint64_t start = base + std::uint64_t(clock.durationNs(firstTicks, ts.context.kernelStart));
        const std::uint64_t end = start + std::uint64_t(clock.durationNs(ts.context.kernelStart, ts.context.kernelEnd));
        spans.push_back({plan_.launches[n].kernel, start, end});
    }
    return spans;
}

}  // namespace zp::scheduler
