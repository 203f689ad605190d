#include "zp/scheduler/kernel_tuning.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

// Tile sizes and buffer layouts shared with the kernels (kernels_cl/abi, the one kernel header
// host code includes).
#include "zp_abi.h"

namespace zp::scheduler {

static_assert(KernelTuning{}.colsPerWorkGroup == ZP_GEMM_COLS_PER_WG &&
                  KernelTuning{}.colsPerItem == ZP_GEMM_COLS_PER_ITEM &&
                  KernelTuning{}.rowsPerPass == ZP_GEMM_ROWS_PER_PASS && KernelTuning{}.e2m1Decode == ZP_E2M1_DECODE &&
                  KernelTuning{}.gemmTile == ZP_GEMM_TILE && KernelTuning{}.streamSplit == ZP_STREAM_SPLIT &&
                  KernelTuning{}.streamChunk == ZP_STREAM_CHUNK && KernelTuning{}.streamPrefetch == ZP_STREAM_PREFETCH,
              "KernelTuning's defaults must be the packaged kernels' (kernels_cl/abi/zp_abi.h)");

namespace {

struct TuningKey {
    const char* name;
    int KernelTuning::*field;
    const char* macro;  // nullptr: not a build option of its own (b_cols_*: see forKernelFile)
    bool whenSet;       // described (and a -D) only where it differs from the packaged kernels' (kernel B's keys
                        // and the stream tile's, so that the other tiles read as before in card JSON)
};
constexpr TuningKey kTuningKeys[] = {
    {"cols_per_wg", &KernelTuning::colsPerWorkGroup, "ZP_GEMM_COLS_PER_WG", false},
    {"cols_per_item", &KernelTuning::colsPerItem, "ZP_GEMM_COLS_PER_ITEM", false},
    {"rows_per_pass", &KernelTuning::rowsPerPass, "ZP_GEMM_ROWS_PER_PASS", false},
    {"e2m1_decode", &KernelTuning::e2m1Decode, "ZP_E2M1_DECODE", false},
    {"gemm_tile", &KernelTuning::gemmTile, "ZP_GEMM_TILE", false},
    {"stream_split", &KernelTuning::streamSplit, "ZP_STREAM_SPLIT", true},
    {"stream_chunk", &KernelTuning::streamChunk, "ZP_STREAM_CHUNK", true},
    {"stream_prefetch", &KernelTuning::streamPrefetch, "ZP_STREAM_PREFETCH", true},
    {"stream_prefetch_one_row", &KernelTuning::streamPrefetchOneRow, "ZP_STREAM_PREFETCH_ONE_ROW", true},
    {"stream_carry", &KernelTuning::streamCarry, "ZP_STREAM_CARRY", true},
    {"spread_units", &KernelTuning::spreadUnits, "ZP_SPREAD_UNITS", true},
    {"b_runs", &KernelTuning::bRuns, "ZP_B_RUNS", true},
    {"ablation", &KernelTuning::ablation, "ZP_STREAM_ABLATION", true},
    {"b_cols_per_wg", &KernelTuning::bColsPerWorkGroup, nullptr, true},
    {"b_cols_per_item", &KernelTuning::bColsPerItem, nullptr, true},
    {"max_registers", &KernelTuning::maxRegisters, nullptr, true},
};
constexpr const char* kTuningKeyList =
    "cols_per_wg, cols_per_item, rows_per_pass, e2m1_decode, gemm_tile, stream_split, stream_chunk, stream_prefetch, "
    "stream_prefetch_one_row, stream_carry, spread_units, b_runs, ablation, b_cols_per_wg, b_cols_per_item, "
    "max_registers";

}  // namespace

KernelTuning KernelTuning::parse(std::string_view text, Ablation ablation) {
    KernelTuning t;
    if (text == "packaged") return t;
    while (!text.empty()) {
        const std::size_t comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        if (item.empty()) continue;
        const std::size_t eq = item.find('=');
        const std::string key(item.substr(0, eq));
        const std::string value(eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1));
        const auto* k = std::find_if(std::begin(kTuningKeys), std::end(kTuningKeys),
                                     [&](const TuningKey& tk) { return key == tk.name; });
        if (k == std::end(kTuningKeys))
            throw std::invalid_argument("kernel tuning: unknown key '" + key + "' (valid: " + kTuningKeyList + ")");
        std::size_t used = 0;
        int v = 0;
        try {
            v = std::stoi(value, &used);
        } catch (const std::out_of_range&) {
            throw std::invalid_argument("kernel tuning: " + key + " = '" + value + "' is out of range");
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != value.size())
            throw std::invalid_argument("kernel tuning: " + key + " = '" + value + "' is not an integer");
        t.*(k->field) = v;
    }
    auto bad = [&](const std::string& why) {
        throw std::invalid_argument("kernel tuning " + t.describe() + ": " + why);
    };
    if (t.colsPerItem < 2 || t.colsPerItem % 2) bad("cols_per_item must be even and at least 2");
    if (t.colsPerWorkGroup < 1) bad("cols_per_wg must be at least 1, not " + std::to_string(t.colsPerWorkGroup));
    if (t.colsPerWorkGroup % t.colsPerItem) bad("cols_per_item must divide cols_per_wg");
    if (t.rowsPerPass < 1) bad("rows_per_pass must be at least 1");
    if (t.gemmTile == 1)
        bad("gemm_tile 1 (the block tile) is gone: the stream tile beat it on every pattern with GEMM work "
            "(docs/perf.md \"Which GEMV tile on NVIDIA?\"); use 2 (stream) or 0 (lanes)");
    if (t.gemmTile != 0 && t.gemmTile != 2) bad("gemm_tile must be 0 (lanes) or 2 (stream)");
    if (t.e2m1Decode == 2 || t.e2m1Decode == 5)
        bad("e2m1_decode " + std::to_string(t.e2m1Decode) +
            " is gone (it decided nothing: docs/perf.md \"What does each tuning knob decide?\"); the local table is 4, "
            "or 6 with NVIDIA's byte permute");
    if (t.e2m1Decode < 0 || t.e2m1Decode > 6) bad("e2m1_decode must be 0, 1, 3, 4 or 6");
    if (t.e2m1Decode >= 2 && t.gemmTile != 2)
        bad("e2m1_decode " + std::to_string(t.e2m1Decode) + " (multiply, local table, byte permute) needs gemm_tile=2");
    if (t.streamSplit < 1 || t.streamSplit > 16 || 16 % t.streamSplit)
        bad("stream_split must divide 16 (1, 2, 4, 8 or 16)");
    if (t.streamChunk < 16 || t.streamChunk > 1024 || t.streamChunk % 16)
        bad("stream_chunk must be a multiple of 16 blocks from 16 to 1024");
    if (t.streamPrefetch < 1 || t.streamPrefetch > 2)
        bad("stream_prefetch must be 1 or 2 (iterations of weight loads in flight)");
    if (t.streamPrefetch != 1 && t.gemmTile != 2) bad("stream_prefetch needs gemm_tile=2");
    if (t.streamPrefetchOneRow < 0 || t.streamPrefetchOneRow > 2)
        bad("stream_prefetch_one_row must be 0 (as stream_prefetch), 1 or 2");
    if (t.streamPrefetchOneRow != 0 && t.gemmTile != 2) bad("stream_prefetch_one_row needs gemm_tile=2");
    // iterations of weight loads in flight in the 1-row body (ZP_STREAM_PREFETCH_ONE_ROW's 0 = the other body's)
    const int oneRowPrefetch = t.streamPrefetchOneRow == 0 ? t.streamPrefetch : t.streamPrefetchOneRow;
    if (t.streamCarry < 0 || t.streamCarry > 1) bad("stream_carry must be 0 or 1");
    if (t.streamCarry && t.gemmTile != 2) bad("stream_carry needs gemm_tile=2");
    if (t.streamCarry && (t.streamPrefetch != 1 || oneRowPrefetch != 1))
        bad("stream_carry needs one iteration of weight loads in flight in both bodies (stream_prefetch=1 and "
            "stream_prefetch_one_row 0 or 1)");
    if (t.spreadUnits < 0 || t.spreadUnits > 2)
        bad("spread_units must be 0 (units by group id), 1 (by rank over the device's compute units) or 2 (by rank "
            "over a made-up placement: tests)");
    if (t.spreadUnits && t.gemmTile != 2) bad("spread_units needs gemm_tile=2");
    if (t.bRuns < 0 || t.bRuns > 16)
        bad("b_runs must be 0 (kernel B's expert groups in the runs that put the fewest on the busiest work-group), "
            "1 (one group per unit) or 2 to 16 (runs of that many: tests)");
    if (t.bRuns != 1 && t.gemmTile != 2) bad("b_runs needs gemm_tile=2");
    if (t.bRuns != 1 && oneRowPrefetch != 1)
        bad("b_runs needs one iteration of weight loads in flight in the 1-row body (stream_prefetch_one_row=1, or "
            "0 with stream_prefetch=1)");
    if (t.ablation < 0 || t.ablation > 4)
        bad("ablation must be 0 (none), 1-3 (no lane sums, no fma, loads only) or 4 (no weight loads)");
    if (t.ablation && ablation == Ablation::refused)
        bad("ablation is for zp-chain-bench --ablation only (it removes work, so the results are wrong)");
    if (t.ablation && t.gemmTile != 2) bad("ablation needs gemm_tile=2");
    if (t.bColsPerWorkGroup < 0 || t.bColsPerItem < 0) bad("b_cols_per_wg and b_cols_per_item must be >= 0");
    if (t.maxRegisters != 0 && (t.maxRegisters < 16 || t.maxRegisters > 255))
        bad("max_registers must be 0 (the compiler's choice) or 16 to 255");
    const KernelTuning b = t.forKernelFile("two_launch_b");
    if (b.colsPerItem < 2 || b.colsPerItem % 2) bad("B's cols_per_item (b_cols_per_item) must be even and at least 2");
    if (b.colsPerWorkGroup % b.colsPerItem)
        bad("B's cols_per_item (" + std::to_string(b.colsPerItem) + ") must divide B's cols_per_wg (" +
            std::to_string(b.colsPerWorkGroup) + ")");
    // The stream tile: a work-item walks stream_split * cols_per_item / 16 whole columns.
    for (const auto& [who, tile] : {std::pair{"", t}, std::pair{"B's ", b}})
        if (t.gemmTile == 2 && (tile.streamSplit * tile.colsPerItem) % 16)
            bad("gemm_tile=2 needs stream_split * " + std::string(who) + "cols_per_item (" +
                std::to_string(tile.streamSplit) + " * " + std::to_string(tile.colsPerItem) +
                ") to be a multiple of 16");
    return t;
}

KernelTuning KernelTuning::recommendedFor(const runtime::DeviceInfo& device) {
    // docs/perf.md "The stream tile": on the H200 the stream tile (16 work-items of one lane per
    // column, 4 columns each, the byte-offset table decode) beat the block tile (since removed) on
    // every (variant, pattern) cell of the sweep with GEMM work. Two rows per pass with at most 128 registers: a
    // 2-row group reads its weights once for both rows, a 1-row group runs the 1-row body, and
    // two groups stay resident per SM (docs/perf.md "Single executions and the gate's replays").
    // The table's byte offsets by prmt (e2m1_decode=6): 1-4% faster on every chain (docs/perf.md
    // "The byte permute"). Kernel A's next unit's first loads in flight (stream_carry=1): one_launch
    // and two_launch 5-6 us faster on six_local, where one_launch's gate saving is now past the bar
    // in every run (docs/perf.md "The next unit's first loads in flight"). one_launch's units by
    // rank over the SMs (spread_units=1) where a phase leaves the grid partly idle: same_typical
    // 5.5 us and cross_row_overlap 1.5 faster, the others unchanged, and the gate PASSes in four of
    // five runs (docs/perf.md "Units spread over the SMs"). Kernel B's units as runs of 1-row expert
    // groups in one weight stream (b_runs=0): one_launch 3.1-3.5 us faster on six_local, two_launch
    // 0.7-1.3, the patterns without runs 0.4-0.8 slower (docs/perf.md "Kernel B's groups in runs").
    if (device.isZecl() && device.isNvidiaGpu())
        return parse(
            "gemm_tile=2,cols_per_wg=64,cols_per_item=4,rows_per_pass=2,stream_split=16,stream_chunk=128,e2m1_decode="
            "6,stream_carry=1,spread_units=1,b_runs=0,max_registers=128");
    return {};
}

std::string KernelTuning::describe() const {
    // Kernel B's keys only where they differ from the packaged kernels', so that the tiles of
    // the GEMMs read as before (card JSON kernel_tuning).
    const KernelTuning packaged;
    std::string s;
    for (const auto& k : kTuningKeys)
        if (!k.whenSet || this->*(k.field) != packaged.*(k.field))
            s += (s.empty() ? "" : ",") + std::string(k.name) + "=" + std::to_string(this->*(k.field));
    return s;
}

std::string KernelTuning::buildOptions() const {
    std::string s;
    const KernelTuning packaged;
    for (const auto& k : kTuningKeys)
        if (k.macro && (!k.whenSet || this->*(k.field) != packaged.*(k.field)))
            s += (s.empty() ? "-D" : " -D") + std::string(k.macro) + "=" + std::to_string(this->*(k.field));
    return s;
}
std::string KernelTuning::nvidiaRegisterOptions() const {
    if (!maxRegisters) return {};
    return " -cl-nv-maxrregcount=" + std::to_string(maxRegisters) + " -DZP_NO_REQD_GROUP_SIZE=1";
}

KernelTuning KernelTuning::forKernelFile(std::string_view kernelFile) const {
    KernelTuning t = *this;
    if (kernelFile == "two_launch_b" || kernelFile == "two_launch_b_i64") {
        if (bColsPerWorkGroup) t.colsPerWorkGroup = bColsPerWorkGroup;
        if (bColsPerItem) t.colsPerItem = bColsPerItem;
    }
    t.bColsPerWorkGroup = t.bColsPerItem = 0;
    return t;
}
}  // namespace zp::scheduler
