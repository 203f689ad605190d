// A chain of one variant on one device: its buffers, its plan recorded into a command list,
// replayed per case; its results and kernel timestamps.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zp/oracle/chain.hpp"
#include "zp/probe/variant.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/chain_plan.hpp"
#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/device_weights.hpp"
#include "zp/scheduler/kernel_modules.hpp"

namespace zp::scheduler {

struct KernelTiming {
    std::string kernel;  // entry point
    double ns = 0;       // kernel timestamp end - start of the last execute()
};

// One launch's kernel timestamps in ns on the device's kernel clock. Launches of one
// execute() share a base: startNs of launch n is the first launch's start plus the ticks
// from it (so one wrap of a narrow counter is handled), so last endNs - first startNs is the
// chain's device time.
struct KernelSpan {
    std::string kernel;  // entry point
    std::uint64_t startNs = 0, endNs = 0;
};

// What every execution must be checked for, with or without the verification tensors.
struct StepCheck {
    int invalidIds = 0;          // CONTRACT §5.1 device error flag: ids outside [0, E)
    int firstInvalidRoute = -1;  // m*K + k of the first one
    // Words of the cross-group counts (kernel B's tile_done, one_launch's phase_ready) that the
    // launches left non-zero: each launch must leave them zero for the next (they are zeroed
    // only when allocated), so anything but 0 is a fault.
    int countsLeft = 0;
};

// Everything an execution left: the checks and every tensor there is to verify.
struct DeviceResults : StepCheck {
    int routes = 0;                                       // R; -1 for m1_oracle (no compaction)
    std::vector<oracle::CompactRoutes::Row> compactRows;  // [R]
    std::vector<std::int32_t> routeRow;                   // [M, K] cr(m, k) or -1; empty for m1_oracle
    // In compact-row order [R, ·], where the variant materialises them (probe::materialised()).
    std::vector<oracle::bf16_t> gateUp, act, y;
    // m1_oracle only: one row per route (m, k), route order [M*K, ·]; non-local routes' rows are +0.
    std::vector<oracle::bf16_t> routeGateUp, routeAct, routeY;
    std::vector<oracle::bf16_t> out;  // [M, H]
};

// One chain per (device, shape, variant, id width): buffers sized for the worst case (topk_ids
// at `ids`: 4 or 8 bytes an id), the plan recorded once into a regular command list (kernel
// timestamps on every launch, a barrier between launches). Not thread-safe; move-only.
class DeviceChain {
public:
    DeviceChain(const runtime::Context& context, const runtime::DeviceInfo& device, KernelModules& modules,
                const oracle::ChainShape& shape, probe::Variant variant, const DeviceWeights& weights,
                std::span<const oracle::bf16_t> siluTable, IdWidth ids = IdWidth::Int32);
    DeviceChain(DeviceChain&&) noexcept = default;
    DeviceChain& operator=(DeviceChain&&) noexcept = default;

    // Uploads hidden, topk_ids and topk_weights (sizes checked against the shape; ids are not:
    // the device flags those outside [0, E)). The ids are stored at the chain's width.
    void setInputs(const oracle::ChainInputs& inputs);
    // The same with int64 ids (inputs.topkIds is not read): an Int64 chain uploads them as they
    // are; an Int32 chain stores an id beyond int32 range as -1, so the device flags it at the
    // same route as the Int64 kernels do.
    void setInputs(const oracle::ChainInputs& inputs, std::span<const std::int64_t> topkIds);
    // Replays the recorded list on `queue` and waits for it.
    void execute(runtime::CommandQueue& queue);
    // CONTRACT §8's timed sample where the timer is coarse: `times` executions of the same
    // plan back to back in one list (recorded once per `times`, a barrier between every two
    // launches as in one execution), and waits for it. Kernel timestamps on the first launch of
    // the first execution and on every launch of the last; returns first start .. last end in
    // ns (divide by `times` for one execution). kernelSpans() and kernelTimings() then describe
    // the last execution alone. times == 1 is execute().
    double executeBatch(runtime::CommandQueue& queue, int times);
    // Appends the same launches (no timestamps) to another list, e.g. an immediate one.
    void appendTo(runtime::CommandListBase& list);

    // Everything the last execute() left: out, the route table, the materialised intermediates
    // (for verification) and the checks.
    DeviceResults results();
    // A server step's read-back: the first dst.size() values of out (at most M * H) into dst,
    // and the checks; none of the verification tensors.
    StepCheck readOut(std::span<oracle::bf16_t> dst);
    // Per launch, in plan order, from the kernel timestamps of the last execute().
    std::vector<KernelTiming> kernelTimings() const;
    // Per launch, in plan order, the absolute start and end of the last execute().
    std::vector<KernelSpan> kernelSpans() const;

    probe::Variant variant() const noexcept { return variant_; }
    IdWidth idWidth() const noexcept { return plan_.idWidth; }
    const ChainPlan& plan() const noexcept { return plan_; }
    // The grid each launch runs with: the plan's, or for a cooperative launch min(the plan's,
    // the suggested cooperative count).
    const std::vector<runtime::GroupCount>& grids() const noexcept { return grids_; }
    // one_launch built with spread_units: the compute unit each group of its grid reported the
    // last time it ranked its groups (zp_grid_rank), as the kernel left them; all zero before it
    // ever ranked. Empty for other variants and tunings, and for a grid too large to rank.
    std::vector<std::uint32_t> groupUnits();

private:
    void record(runtime::CommandListBase& list, bool timestamps);
    void uploadInputs(const oracle::ChainInputs& in, std::size_t ids);
    using RouteInfo = std::array<std::int32_t, 4>;  // route_info: ZP_INFO_WORDS (kernels_cl/abi/zp_abi.h)
    RouteInfo routeInfo();
    StepCheck check(const RouteInfo& info);

    const runtime::Context* context_;
    runtime::DeviceInfo device_;
    oracle::ChainShape shape_;
    probe::Variant variant_;
    runtime::ImmediateCommandList copies_;
    runtime::DeviceBuffer<std::uint16_t> hidden_, silu_, a_, gateUp_, act_, y_, out_;
    runtime::DeviceBuffer<std::int32_t> topkIds_, routeInfo_, compactRows_, routeRow_, groups_;  // topkIds_: Int32
    runtime::DeviceBuffer<std::int64_t> topkIds64_;                                              // Int64
    runtime::DeviceBuffer<float> topkWeights_;
    runtime::DeviceBuffer<std::uint32_t> phaseReady_;
    bool spreadUnits_ = false;  // one_launch built with spread_units
    runtime::DeviceBuffer<std::uint32_t> tileDone_;
    ChainPlan plan_;
    std::vector<runtime::Kernel> kernels_;    // one per launch
    std::vector<runtime::GroupCount> grids_;  // one per launch
    runtime::EventPool timestampPool_;
    std::vector<runtime::Event> events_;  // one per launch
    runtime::CommandList list_;
    std::vector<std::int32_t> lastIds_;  // host copy of the ids of the last setInputs (beyond int32: -1)
    // executeBatch's list for batchTimes_ executions and its extra event (the first launch's).
    int batchTimes_ = 0;
    runtime::EventPool batchPool_;
    std::vector<runtime::Event> batchStart_;
    runtime::CommandList batchList_;
};

// zp_grid_rank's ranks on the host (kernels_cl/common/zp_grid_barrier.h, spread_units): group g of
// units.size() gets the number of groups whose (slot, unit) sorts before its own, the slot being
// how many groups before it report the same unit; every group its own id where any unit is
// kGridRankMaxUnits (ZP_GRID_RANK_MAX_CUS) or more. For DeviceChain::groupUnits' placements.
inline constexpr std::uint32_t kGridRankMaxUnits = 512;
std::vector<std::uint32_t> gridRanks(std::span<const std::uint32_t> units);

}  // namespace zp::scheduler
