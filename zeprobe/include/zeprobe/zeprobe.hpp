// zeprobe: the MoE expert FFN chain of ze-probe, embedded in a C++ program (a server).
//
//   zeprobe::Device device({.device = ""});            // finds the zecl installed next to it
//   zeprobe::Layer layer = zeprobe::Layer::random(device, shape, /*seed=*/1);
//   zeprobe::Chain chain(layer, "paired_direct");        // records the command list once
//   std::vector<std::uint16_t> out = chain.forward(hidden, topkIds, topkWeights);   // many times
//   // topkIds: std::span<const std::int32_t>, or std::int64_t as torch.topk returns them
//   for (const auto& t : chain.kernelTimings()) ...      // per kernel, of the last forward()
//
// Numerics are docs/contract.md's, bit for bit: hidden and out are BF16 bit patterns, topk_ids
// physical expert ids (int32, or int64 as torch.topk returns them), topk_weights f32. The layer
// is one card's local experts (Shape::card of Shape::cards); routes to other cards' experts
// contribute nothing (CONTRACT §5).
//
// Errors are zeprobe::Error (a message, an ErrorCode and, for a failing Level Zero call, the
// raw ze_result_t). The library never prints or exits; it sets ZE_ENABLE_ALT_DRIVERS when that
// is unset unless told not to (DeviceOptions::configureLoader).
//
// Threads. One Device, several Layers and several Chains may live in one process:
//   - Device: safe to share between threads. Creating Layers and Chains on it from several
//     threads at once is safe (kernel module builds and other shared state are guarded by
//     one mutex inside the Device, so creations are serialised).
//   - Layer: read-only after construction; safe to share (const) between threads, and any
//     number of Chains, from any threads, may be made from one Layer.
//   - Chain: NOT thread-safe. Use each Chain from one thread at a time (one per worker
//     thread, or a pool handing a Chain to one request at a time); a forward() called while
//     another runs on the same Chain is refused (ErrorCode::invalid_argument) rather than racing
//     on its buffers. Each Chain owns its own command queue and buffers, so distinct Chains run
//     concurrently on one device.
// Layers and Chains keep their Device (and a Chain its Layer) alive: destroy them in any order.
//
// This header includes only standard headers: an installed package needs nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#if defined(__GNUC__) || defined(__clang__)
#define ZEPROBE_API __attribute__((visibility("default")))
#else
#define ZEPROBE_API
#endif

namespace zeprobe {

// "0.1.0": the version of the library this program runs against.
ZEPROBE_API const char* version() noexcept;
// The contract version the numerics follow (docs/contract.md: `contract: 1`).
ZEPROBE_API int contractVersion() noexcept;

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

enum class ErrorCode {
    invalid_argument,  // a bad shape, option, variant name or forward() input (sizes, expert ids)
    not_found,         // no such device, weights file or tensor
    io,                // a weights file that cannot be read or is not the expected safetensors
    device,            // a Level Zero call failed (zeResult() tells which result)
    kernel_build,   // a kernel module or kernel did not build for this device (the message has the log or the result)
    unsupported,    // the device cannot run the kernel package, or not with these options, or the
                    // variant (one_launch where the driver promises no co-resident grid)
    out_of_memory,  // host or device memory exhausted
    internal,       // a bug: anything else
};
// "invalid_argument", "not_found", ...
ZEPROBE_API const char* errorCodeName(ErrorCode code) noexcept;

class ZEPROBE_API Error : public std::runtime_error {
public:
    Error(ErrorCode code, const std::string& message, std::int32_t zeResult = 0);
    ErrorCode code() const noexcept { return code_; }
    // The raw ze_result_t of the failing Level Zero call; 0 (ZE_RESULT_SUCCESS) when none.
    std::int32_t zeResult() const noexcept { return zeResult_; }

private:
    ErrorCode code_;
    std::int32_t zeResult_;
};

// ---------------------------------------------------------------------------------------------
// Shapes and options
// ---------------------------------------------------------------------------------------------

enum class GateUpLayout { split, interleaved };

// CONTRACT §1 (YAML keys in comments); defaults = DeepSeek-V4-Flash, REAP-pruned, on 4 cards.
// H and I multiples of 32, E a multiple of C, 0 <= card < cards, rows >= 1, topK >= 1.
struct Shape {
    int hidden = 4096;                                // hidden (H)
    int intermediate = 2048;                          // intermediate (I)
    int experts = 192;                                // experts (E), all cards
    int topK = 6;                                     // top_k (K)
    int rows = 2;                                     // rows (M): the most token rows one forward() takes
    int cards = 4;                                    // cards (C)
    int card = 0;                                     // card: this process owns experts [card*E/C, (card+1)*E/C)
    float swigluLimit = 10.0f;                        // swiglu.limit
    float swigluAlpha = 1.0f;                         // swiglu.alpha
    float swigluUpBias = 0.0f;                        // swiglu.up_bias
    GateUpLayout gateUpLayout = GateUpLayout::split;  // gate_up_layout
};

// A run configuration as ze-probe reads it (configs/*.yaml, `--set key=value`): the shape plus
// the seed of random weights and the tensor-name prefix of a weights file.
struct Config {
    Shape shape{};                  // hidden, intermediate, ..., swiglu.*, gate_up_layout
    std::uint64_t seed = 20261129;  // seed
    std::string weightsPrefix{};    // weights.prefix
};
// `path` ("" = the defaults, as configs/deepseek-v4-flash.yaml), then each "key=value" of `sets`
// in order (dotted keys: "swiglu.limit=7"), then every rule between keys and the documented
// maxima (docs/reliability.md). Unknown keys, bad values and a file that is missing or not a
// regular file (/dev/zero) are refused as invalid_argument, naming the file, the key and the
// value. Keys ze-probe alone uses (layers, gate.*) are read and checked too.
ZEPROBE_API Config loadConfig(const std::string& path, const std::vector<std::string>& sets = {});

struct DeviceOptions {
    // "" = first Intel GPU, else first zecl device, else the first device; "intel" / "zecl" =
    // the first device of that driver; "N" = the N-th device of listDevices().
    std::string device{};
    // Before the first Level Zero call of the process: when ZE_ENABLE_ALT_DRIVERS is unset,
    // set it to the Intel GPU driver plus zecl (as the ze-probe tools do), so an installed
    // package finds its own zecl on a machine without an Intel GPU. On by default; false
    // leaves the environment alone (then the loader sees only what ZE_ENABLE_ALT_DRIVERS or
    // its default driver list names). A value already set is never changed. Only the first
    // initialisation of the process counts.
    bool configureLoader = true;
    // libze_zecl.so for configureLoader; empty = $ZP_ZECL_PATH, else the one installed next to
    // libzeprobe, else the build tree's, else the configured install libdir.
    std::string zeclPath{};
    // Kernel build knobs, "gemm_tile=1,cols_per_wg=32,cols_per_item=4,rows_per_pass=1" (keys:
    // cols_per_wg, cols_per_item, rows_per_pass, e2m1_decode, gemm_tile; two_launch / one_launch's
    // kernel B: b_cols_per_wg, b_cols_per_item); "packaged" = the packaged
    // kernels; empty = the tiles recommended for the device (the packaged ones except on NVIDIA
    // GPUs through zecl). Non-packaged values need a zecl device (source bundle).
    std::string kernelTuning{};
};

struct DeviceInfo {
    std::size_t index = 0;  // position in listDevices()
    std::string name{};
    std::string driver{};  // "intel", "zecl" or "other"
    std::uint32_t driverVersion = 0;
    bool gpu = false;
    std::uint32_t computeUnits = 0;
    std::uint64_t memoryBytes = 0;
    bool fp32Denormals = false;  // false: the device flushes subnormals (CONTRACT §2 cannot hold)
    std::string kernels{};       // which kernel format it gets, one line ("" from listDevices())
};

// Every Level Zero device of every driver. `configureLoader` as in DeviceOptions.
ZEPROBE_API std::vector<DeviceInfo> listDevices(bool configureLoader = true);

// The chain variants (DESIGN.md "Chain variants"): "baseline", "gemm2_loader_fused",
// "source_direct", "paired_epilogue", "paired_direct", "m1_oracle", "two_launch", "one_launch".
ZEPROBE_API std::vector<std::string> variants();

// ---------------------------------------------------------------------------------------------
// Device, Layer, Chain
// ---------------------------------------------------------------------------------------------

namespace detail {
struct DeviceState;
struct LayerState;
struct ChainState;
}  // namespace detail

// One Level Zero device with its context and its kernel modules (built on first use, kept).
class ZEPROBE_API Device {
public:
    explicit Device(const DeviceOptions& options = {});
    ~Device();
    Device(Device&&) noexcept;
    Device& operator=(Device&&) noexcept;
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const DeviceInfo& info() const;

private:
    friend class Layer;
    std::shared_ptr<detail::DeviceState> state_;
};

// This card's experts' MXFP4 weights, stacked as CONTRACT §3 but for the local experts only
// (E/C of them, local expert 0 first): w1Blocks [E/C, 2I, H/32, 16], w1Scales [E/C, 2I, H/32],
// w2Blocks [E/C, H, I/32, 16], w2Scales [E/C, H, I/32]. Views: copied at Layer construction.
struct LocalWeightsView {
    std::span<const std::uint8_t> w1Blocks{}, w1Scales{}, w2Blocks{}, w2Scales{};
};

// One MoE layer's local experts in device memory. Read-only once made.
class ZEPROBE_API Layer {
public:
    // Every factory refuses, before any allocation, a shape whose local weights exceed the
    // device's memory (invalid_argument naming the shape and the device).
    //
    // Weights drawn from `seed` as ze-probe's random weights (the same for the same shape and seed).
    static Layer random(const Device& device, const Shape& shape, std::uint64_t seed);
    // CONTRACT §3 tensors `{prefix}gate_up_proj_blocks` ... of all E experts from a safetensors
    // file; this card's E/C experts are kept.
    static Layer fromSafetensors(const Device& device, const Shape& shape, const std::string& path,
                                 const std::string& prefix = "");
    // This card's experts from memory (sizes checked).
    static Layer fromLocalWeights(const Device& device, const Shape& shape, const LocalWeightsView& weights);

    ~Layer();
    Layer(Layer&&) noexcept;
    Layer& operator=(Layer&&) noexcept;
    Layer(const Layer&) = delete;
    Layer& operator=(const Layer&) = delete;

    const Shape& shape() const;

private:
    friend class Chain;
    explicit Layer(std::shared_ptr<detail::LayerState> state);
    std::shared_ptr<detail::LayerState> state_;
};

// topk_ids' element type in the Chain's device buffer: int32, or int64 as torch.topk returns
// them (the kernels that read ids are built for both; the same bits either way).
enum class IdWidth { int32, int64 };

struct KernelTiming {
    std::string kernel{};  // entry point, in launch order
    double ns = 0;         // kernel timestamp end - start
};

// One recorded chain of one variant over one Layer: buffers sized for Shape::rows rows, the
// launches recorded once into a command list and replayed by every forward(). The first Chain
// of a variant on a Device builds its kernel modules (seconds on a CPU OpenCL device).
// `ids` is the width of topk_ids in device memory, fixed when the chain is recorded; either
// forward() overload works on a Chain of either width (ids are checked, then stored at it).
class ZEPROBE_API Chain {
public:
    explicit Chain(const Layer& layer, const std::string& variant = "baseline", IdWidth ids = IdWidth::int32);
    ~Chain();
    Chain(Chain&&) noexcept;
    Chain& operator=(Chain&&) noexcept;
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;

    // One decode step for m token rows, 1 <= m <= Shape::rows, m = topkIds.size() / K:
    // hidden [m, H] BF16 bits, topkIds [m, K] physical expert ids in [0, E), topkWeights [m, K].
    // Returns out [m, H] BF16 bits (rows without a local route are +0.0). Everything is checked
    // before any device work; a bad input throws invalid_argument (an id outside [0, E) names
    // (m, k) and the id) and leaves the Chain usable.
    std::vector<std::uint16_t> forward(std::span<const std::uint16_t> hidden, std::span<const std::int32_t> topkIds,
                                       std::span<const float> topkWeights);
    // The same into `out` (exactly m*H values; after a device or internal error its contents
    // are unspecified).
    void forward(std::span<const std::uint16_t> hidden, std::span<const std::int32_t> topkIds,
                 std::span<const float> topkWeights, std::span<std::uint16_t> out);
    // The same with int64 topk_ids, as torch.topk returns them (e.g. a CPU tensor's
    // data_ptr<int64_t>()): the same checks, the same bits. An id beyond int32 range is outside
    // [0, E) like any bad id: invalid_argument naming (m, k) and the id.
    std::vector<std::uint16_t> forward(std::span<const std::uint16_t> hidden, std::span<const std::int64_t> topkIds,
                                       std::span<const float> topkWeights);
    void forward(std::span<const std::uint16_t> hidden, std::span<const std::int64_t> topkIds,
                 std::span<const float> topkWeights, std::span<std::uint16_t> out);

    // Per launch of the last forward(), in launch order (empty before the first one). Runs
    // with fewer than Shape::rows rows time the padded rows too (they are never local work
    // when cards > 1).
    std::vector<KernelTiming> kernelTimings() const;

    const std::string& variant() const;
    const Shape& shape() const;
    IdWidth idWidth() const;

private:
    std::unique_ptr<detail::ChainState> state_;
};

// ---------------------------------------------------------------------------------------------
// Request helpers (a server's decoding of inputs and encoding of answers)
// ---------------------------------------------------------------------------------------------

// One decode step's inputs for Chain::forward(), row-major.
struct Inputs {
    int rows = 0;                       // m, in [1, Shape::rows]
    std::vector<std::uint16_t> hidden;  // [m, H] BF16 bits
    std::vector<std::int64_t> topkIds;  // [m, K], as the file holds them (I32 or I64)
    std::vector<float> topkWeights;     // [m, K]
};
// A safetensors file (in memory) with exactly `hidden` BF16 [m, H], `topk_ids` I32 or I64 [m, K] and
// `topk_weights` F32 [m, K], 1 <= m <= Shape::rows. Anything else (another tensor, a dtype, a
// shape, a malformed header) is invalid_argument naming `name` and what is wrong. Expert ids
// are checked by forward().
ZEPROBE_API Inputs inputsFromSafetensors(std::span<const std::uint8_t> file, const Shape& shape,
                                         const std::string& name = "safetensors");
// forward()'s out [m, H] (m = out.size() / H) as a safetensors file with one tensor `out` BF16 [m, H].
ZEPROBE_API std::vector<std::uint8_t> outputToSafetensors(std::span<const std::uint16_t> out, const Shape& shape);

// An expert id read as a wider integer (a JSON number) before it is narrowed to forward()'s
// int32: throws invalid_argument with forward()'s message ("topk_ids[m][k] = id is not an
// expert id in [0, E)") when it is outside [0, E).
ZEPROBE_API void checkExpertId(std::int64_t id, std::size_t m, std::size_t k, const Shape& shape);

// CONTRACT §2 conversions: a double rounded once to BF16 (round to nearest even; every NaN is 0x7FC0),
// and BF16 bits widened to f32 (exact).
ZEPROBE_API std::uint16_t bf16FromDouble(double value) noexcept;
ZEPROBE_API float floatFromBf16(std::uint16_t bits) noexcept;

// Output files of a server (a port file, a state file), written as ze-probe writes its own.
// checkOutputFile fails now, before any work, when `path` could not be written later (a
// directory, a parent that is not a directory, a directory that is not writable);
// writeFileAtomically writes through a temporary file in the same directory renamed into place,
// so a reader never sees a partial file (on failure the temporary is removed). Both throw io
// naming `what` (the option, e.g. "--port-file") and the path.
ZEPROBE_API void checkOutputFile(const std::string& path, const std::string& what);
ZEPROBE_API void writeFileAtomically(const std::string& path, std::string_view bytes, const std::string& what);
// Whether two names are one file: the same file once both exist (hard and symbolic links
// included), else the same absolute path with its existing part's links resolved. For refusing an
// output that would overwrite an input (moe-server's --port-file over --weights).
ZEPROBE_API bool sameFile(const std::string& a, const std::string& b);

}  // namespace zeprobe
