// The device half of the scheduler: the chain variants of DESIGN.md as plans of kernel
// launches, recorded once into a regular command list and replayed per case.
//
// Grids are fixed per configuration (sized for the worst case: M*K routes, min(M*K, E/C)
// expert groups), so one recorded list serves every route; work-groups beyond the live
// routes exit at once (all_remote launches everything and does nothing). The shape travels
// as by-value kernel arguments: the kernel package is shape-independent.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "zp/kernels/package.hpp"
#include "zp/oracle/chain.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/probe/variant.hpp"

namespace zp::sched {

// The scheduler's device errors (a failed Level Zero call is ze::Error, from runtime/). Tools
// exit 3 for either (README "Exit codes").
struct DeviceError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// This device cannot run the kernel package as asked: no module format it takes, an artifact
// the package lacks, or a tuning that needs the source bundle (a --kernel-tuning the device
// cannot build is bad input to ze-probe, exit 2). The facade says ErrorCode::unsupported.
struct UnsupportedDevice : DeviceError {
    using DeviceError::DeviceError;
};

// The device's results break an invariant the kernels keep (a route count out of range, say).
// The facade says ErrorCode::device.
struct DeviceFault : DeviceError {
    using DeviceError::DeviceError;
};

// Build-time knobs of the GEMM kernels (kernels_cl/abi/zp_abi.h). The packaged
// SPIR-V and native binaries are built with the defaults below; other values need the zecl
// source bundle, which KernelModules then builds with the matching -D options (tuning
// sweeps on zecl devices need no rebuild).
struct KernelTuning {
    int colsPerWorkGroup = 8;  // ZP_GEMM_COLS_PER_WG: output columns per work-group
    int colsPerItem = 2;       // ZP_GEMM_COLS_PER_ITEM: columns one work-item walks (even, divides the above)
    int rowsPerPass = 2;       // ZP_GEMM_ROWS_PER_PASS: activation rows per weight-tile pass (M2 tiling)
    int e2m1Decode = 1;  // ZP_E2M1_DECODE: 0 = __constant table, 1 = bit arithmetic; stream tile: 2 = local table,
                         // 3 = a shift into the subnormal range and one multiply, 4 = the table with a word's byte
                         // offsets masked at once, 5 = half 4 and half 3 (kernels_cl/common/zp_gemv_stream.h)
    int gemmTile =
        0;  // ZP_GEMM_TILE: 0 = lane tile (work-item = §4 lane), 1 = block tile (work-item = block),
            // 2 = stream tile (work-item = consecutive lanes of a few columns, kernels_cl/common/zp_gemv_stream.h)
    int streamSplit = 8;   // ZP_STREAM_SPLIT: stream tile, work-items per column (divides 16)
    int streamChunk = 64;  // ZP_STREAM_CHUNK: stream tile, activation blocks staged in local memory at a time
    int ablation = 0;      // ZP_STREAM_ABLATION: stream tile, benchmarks only (results are wrong unless 0): 1 = no
                           // lane sums, 2 = no fma either, 3 = loads only
    // two_launch_b's own column tile (its module is built with these as ZP_GEMM_COLS_PER_WG /
    // _PER_ITEM); 0 = cols_per_wg / cols_per_item. one_launch is one program: it keeps A's tile.
    int bColsPerWorkGroup = 0;
    int bColsPerItem = 0;
    // NVIDIA GPUs under zecl only: the most registers per work-item the OpenCL compiler may use
    // (-cl-nv-maxrregcount), e.g. so that one_launch keeps two work-groups per SM; 0 = its choice.
    int maxRegisters = 0;

    // "cols_per_wg=16,cols_per_item=4,rows_per_pass=1,e2m1_decode=0,gemm_tile=1,b_cols_per_wg=8";
    // keys left out keep the
    // defaults; "packaged" (or "") is the defaults. Throws std::invalid_argument naming the key and the value.
    // `ablation` (wrong results by design) is refused unless the caller is a benchmark that asks for it.
    enum class Ablation { refused, allowed };
    static KernelTuning parse(std::string_view text, Ablation ablation = Ablation::refused);
    // The tiles this project measured fastest on the device, where they differ from the packaged
    // ones and the device builds the zecl source bundle: NVIDIA GPUs get the stream tile
    // (docs/perf.md, H200); every other device the packaged tiles.
    static KernelTuning recommendedFor(const ze::DeviceInfo& device);
    std::string describe() const;      // the same form
    std::string buildOptions() const;  // "-DZP_GEMM_COLS_PER_WG=8 ..."
    // The tiles kernel file `kernelFile` is built with: two_launch_b gets B's column tile, every
    // other file these (b_cols_* then mean nothing to it and are cleared).
    KernelTuning forKernelFile(std::string_view kernelFile) const;
    bool isPackaged() const { return *this == KernelTuning{}; }
    bool operator==(const KernelTuning&) const = default;
};

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
// device and what it offers.
struct ModuleChoice {
    kernels::Format format = kernels::Format::Spirv;
    std::string target;  // native: the ocloc target; spirv: "spirv64"; bundle: "zecl"
    std::string why;     // one line for the card: "native bmg binary for IP 20.1.4", "SPIR-V (..., no native binary for
                         // IP 30.0.4 (package has: ...))"
};
ModuleChoice chooseModules(const ze::DeviceInfo& device, const kernels::Package& package);

// The kernel modules of one device, one per kernel file, built on first use and kept.
// A non-packaged tuning needs the source bundle (throws UnsupportedDevice otherwise).
// Must outlive the chains made from it. Not thread-safe.
class KernelModules {
public:
    KernelModules(const ze::Context& context, const ze::DeviceInfo& device,
                  const kernels::Package& package = kernels::Package::instance(), KernelTuning tuning = {});

    const ModuleChoice& choice() const noexcept { return choice_; }
    const KernelTuning& tuning() const noexcept { return tuning_; }
    const ze::DeviceInfo& device() const noexcept { return device_; }
    // Throws ze::Error with the build log when the module does not build.
    const ze::Module& module(const std::string& kernelFile);
    // A fresh kernel object (arguments and group size are per-object state).
    ze::Kernel kernel(const std::string& kernelFile, const std::string& name);

private:
    const ze::Context* context_;
    ze::DeviceInfo device_;
    const kernels::Package* package_;
    ModuleChoice choice_;
    KernelTuning tuning_;
    std::map<std::string, ze::Module> modules_;
};

// This card's local experts (E/C of them) in device memory, laid out as oracle::LocalWeights.
// Shared by every chain of the device.
class DeviceWeights {
public:
    DeviceWeights(const ze::Context& context, const ze::DeviceInfo& device, const oracle::ChainShape& shape);

    // Copies these local experts' W1/W2 blocks and scales (all of them when `localExperts` is
    // empty). Experts never uploaded hold garbage: upload every expert a case touches.
    void upload(const oracle::LocalWeights& weights, std::span<const int> localExperts = {});

    const oracle::ChainShape& shape() const noexcept { return shape_; }
    const ze::DeviceBuffer<std::uint8_t>& w1Blocks() const noexcept { return w1Blocks_; }
    const ze::DeviceBuffer<std::uint8_t>& w1Scales() const noexcept { return w1Scales_; }
    const ze::DeviceBuffer<std::uint8_t>& w2Blocks() const noexcept { return w2Blocks_; }
    const ze::DeviceBuffer<std::uint8_t>& w2Scales() const noexcept { return w2Scales_; }

private:
    oracle::ChainShape shape_;
    ze::ImmediateCommandList copies_;
    ze::DeviceBuffer<std::uint8_t> w1Blocks_, w1Scales_, w2Blocks_, w2Scales_;
};

// One kernel launch of a plan. Arguments in kernel order: a device pointer, an int32, a
// float, or local memory of N bytes.
using KernelArg = std::variant<const void*, std::int32_t, float, ze::LocalMem>;
struct PlannedLaunch {
    std::string file;    // kernel file stem in the package, e.g. "gemm1_mxfp4_m2"
    std::string kernel;  // entry point
    ze::GroupSize group;
    ze::GroupCount groups;  // cooperative: the most groups the kernel can use (groups.x; y = z = 1)
    std::vector<KernelArg> args;
    // A cooperative launch (zeCommandListAppendLaunchCooperativeKernel) over min(groups.x, the
    // kernel's zeKernelSuggestMaxCooperativeGroupCount) groups: the grid is the device's to
    // choose, and the kernel loops over its work with whatever grid it gets.
    bool cooperative = false;
};
struct ChainPlan {
    std::vector<PlannedLaunch> launches;
    IdWidth idWidth = IdWidth::Int32;  // the launches' route readers read topk_ids at this width
};

// The device buffers a plan reads and writes (device pointers; sizes in elements).
struct ChainBuffers {
    const void* hidden = nullptr;       // bf16 [M, H]
    const void* topkIds = nullptr;      // [M, K] i32, or i64 for IdWidth::Int64
    const void* topkWeights = nullptr;  // f32 [M, K]
    const void* silu = nullptr;         // bf16 [65536]
    const void* w1Blocks = nullptr;
    const void* w1Scales = nullptr;
    const void* w2Blocks = nullptr;
    const void* w2Scales = nullptr;
    void* routeInfo = nullptr;    // i32 [ZP_INFO_WORDS]: R, G, invalid ids, first invalid route
    void* compactRows = nullptr;  // i32 [M*K, 2] (le, m)
    void* routeRow = nullptr;     // i32 [M, K] cr(m, k) or -1
    void* groups = nullptr;       // i32 [M*K, 3] (le, first row, rows)
    void* a = nullptr;            // bf16 [M*K, H] remapped rows
    void* gateUp = nullptr;       // bf16 [M*K, 2I]
    void* act = nullptr;          // bf16 [M*K, I]
    void* y = nullptr;            // bf16 [M*K, H]
    void* out = nullptr;          // bf16 [M, H]
    void* gridBarrier = nullptr;  // u32 [2], zeroed once: a cooperative kernel's device-wide barrier
    void* tileDone = nullptr;     // u32 [H], zeroed once: kernel B's finished units per column tile
};

// A variant this device cannot run safely: one_launch where the driver does not answer
// zeKernelSuggestMaxCooperativeGroupCount (no promise that its groups are resident at once;
// running it anyway could hang). what() is the reason, "one_launch is not valid on this
// device: ...".
class VariantNotValid : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The launches of `variant` (DESIGN.md "Chain variants") for kernels built with `tuning`,
// reading topk_ids at `ids` (the route readers' `_i64` kernel files for Int64). Pure: no device calls.
ChainPlan planChain(probe::Variant variant, const oracle::ChainShape& shape, const ChainBuffers& buffers,
                    const KernelTuning& tuning = {}, IdWidth ids = IdWidth::Int32);

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

struct DeviceResults {
    int routes = 0;                                       // R; -1 for m1_oracle (no compaction)
    std::vector<oracle::CompactRoutes::Row> compactRows;  // [R]
    std::vector<std::int32_t> routeRow;                   // [M, K] cr(m, k) or -1; empty for m1_oracle
    // In compact-row order [R, ·], where the variant materialises them (probe::materialised()).
    std::vector<oracle::bf16_t> gateUp, act, y;
    // m1_oracle only: one row per route (m, k), route order [M*K, ·]; non-local routes' rows are +0.
    std::vector<oracle::bf16_t> routeGateUp, routeAct, routeY;
    std::vector<oracle::bf16_t> out;  // [M, H]
    int invalidIds = 0;               // CONTRACT §5.1 device error flag: ids outside [0, E)
    int firstInvalidRoute = -1;       // m*K + k of the first one
};

// One chain per (device, shape, variant, id width): buffers sized for the worst case (topk_ids
// at `ids`: 4 or 8 bytes an id), the plan recorded once into a regular command list (kernel
// timestamps on every launch, a barrier between launches). Not thread-safe; move-only.
class DeviceChain {
public:
    DeviceChain(const ze::Context& context, const ze::DeviceInfo& device, KernelModules& modules,
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
    void execute(ze::CommandQueue& queue);
    // CONTRACT §8's timed sample where the timer is coarse: `times` executions of the same
    // plan back to back in one list (recorded once per `times`, a barrier between every two
    // launches as in one execution), and waits for it. Kernel timestamps on the first launch of
    // the first execution and on every launch of the last; returns first start .. last end in
    // ns (divide by `times` for one execution). kernelSpans() and kernelTimings() then describe
    // the last execution alone. times == 1 is execute().
    double executeBatch(ze::CommandQueue& queue, int times);
    // Appends the same launches (no timestamps) to another list, e.g. an immediate one.
    void appendTo(ze::CommandListBase& list);

    DeviceResults results();
    // Per launch, in plan order, from the kernel timestamps of the last execute().
    std::vector<KernelTiming> kernelTimings() const;
    // Per launch, in plan order, the absolute start and end of the last execute().
    std::vector<KernelSpan> kernelSpans() const;

    probe::Variant variant() const noexcept { return variant_; }
    IdWidth idWidth() const noexcept { return plan_.idWidth; }
    const ChainPlan& plan() const noexcept { return plan_; }
    // The grid each launch runs with: the plan's, or for a cooperative launch min(the plan's,
    // the suggested cooperative count).
    const std::vector<ze::GroupCount>& grids() const noexcept { return grids_; }

private:
    void record(ze::CommandListBase& list, bool timestamps);
    void uploadInputs(const oracle::ChainInputs& in, std::size_t ids);

    const ze::Context* context_;
    ze::DeviceInfo device_;
    oracle::ChainShape shape_;
    probe::Variant variant_;
    ze::ImmediateCommandList copies_;
    ze::DeviceBuffer<std::uint16_t> hidden_, silu_, a_, gateUp_, act_, y_, out_;
    ze::DeviceBuffer<std::int32_t> topkIds_, routeInfo_, compactRows_, routeRow_, groups_;  // topkIds_: Int32
    ze::DeviceBuffer<std::int64_t> topkIds64_;                                              // Int64
    ze::DeviceBuffer<float> topkWeights_;
    ze::DeviceBuffer<std::uint32_t> gridBarrier_;
    ze::DeviceBuffer<std::uint32_t> tileDone_;
    ChainPlan plan_;
    std::vector<ze::Kernel> kernels_;    // one per launch
    std::vector<ze::GroupCount> grids_;  // one per launch
    ze::EventPool timestampPool_;
    std::vector<ze::Event> events_;  // one per launch
    ze::CommandList list_;
    std::vector<std::int32_t> lastIds_;  // host copy of the ids of the last setInputs (beyond int32: -1)
    // executeBatch's list for batchTimes_ executions and its extra event (the first launch's).
    int batchTimes_ = 0;
    ze::EventPool batchPool_;
    std::vector<ze::Event> batchStart_;
    ze::CommandList batchList_;
};

}  // namespace zp::sched
