// The build-time knobs of the GEMM kernels: parsed from text, described, turned into build options.
#pragma once

#include <string>
#include <string_view>

#include "zp/runtime/ze.hpp"

namespace zp::scheduler {

// Build-time knobs of the GEMM kernels (kernels_cl/abi/zp_abi.h). The packaged
// SPIR-V and native binaries are built with the defaults below; other values need the zecl
// source bundle, which KernelModules then builds with the matching -D options (tuning
// sweeps on zecl devices need no rebuild).
struct KernelTuning {
    int colsPerWorkGroup = 8;  // ZP_GEMM_COLS_PER_WG: output columns per work-group
    int colsPerItem = 2;       // ZP_GEMM_COLS_PER_ITEM: columns one work-item walks (even, divides the above)
    int rowsPerPass = 2;       // ZP_GEMM_ROWS_PER_PASS: activation rows per weight-tile pass (M2 tiling)
    int e2m1Decode = 1;  // ZP_E2M1_DECODE: 0 = __constant table, 1 = bit arithmetic; stream tile: 3 = a shift into
                         // the subnormal range and one multiply, 4 = a local table read at a word's byte offsets
                         // masked at once, 6 = 4 with a byte permute (NVIDIA's prmt) for each byte offset
                         // (kernels_cl/common/zp_gemv_stream.h); 2 and 5 are gone
    int gemmTile = 0;    // ZP_GEMM_TILE: 0 = lane tile (work-item = §4 lane), 2 = stream tile (work-item = consecutive
                         // lanes of a few columns, kernels_cl/common/zp_gemv_stream.h); 1, the block tile, is gone
    int streamSplit = 8;           // ZP_STREAM_SPLIT: stream tile, work-items per column (divides 16)
    int streamChunk = 64;          // ZP_STREAM_CHUNK: stream tile, activation blocks staged in local memory at a time
    int streamPrefetch = 1;        // ZP_STREAM_PREFETCH: stream tile, iterations of code rows in flight (1 or 2;
                                   // the scale bytes one)
    int streamPrefetchOneRow = 0;  // ZP_STREAM_PREFETCH_ONE_ROW: the same for the 1-row body (a pass with one live
                                   // row); 0 = stream_prefetch
    int streamCarry = 0;           // ZP_STREAM_CARRY: stream tile, 1 = kernel A's persistent work-groups
                                   // (two_launch_a, one_launch) load their next unit's first iteration right after
                                   // this unit's last (needs stream_prefetch=1 and stream_prefetch_one_row <= 1)
    int spreadUnits = 0;           // ZP_SPREAD_UNITS: one_launch, 1 = its groups take their units by a rank that puts
                                   // one group on each compute unit before any gets a second (NVIDIA's SM ids; none
                                   // elsewhere), 2 = the same over a made-up placement (tests); needs gemm_tile=2
    int bRuns = 1;     // ZP_B_RUNS: stream tile, kernel B's units (two_launch, one_launch) as runs of several 1-row
                       // expert groups in one weight stream: 1 = one group per unit, 0 = the run that puts the
                       // fewest groups on the busiest work-group, N >= 2 = N (tests); needs the 1-row body's
                       // prefetch at 1
    int ablation = 0;  // ZP_STREAM_ABLATION: stream tile, benchmarks only (results are wrong unless 0): 1 = no
                       // lane sums, 2 = no fma either, 3 = loads only; 4 = no weight loads (the compute alone)
    // two_launch_b's own column tile (its module is built with these as ZP_GEMM_COLS_PER_WG /
    // _PER_ITEM); 0 = cols_per_wg / cols_per_item. one_launch is one program: it keeps A's tile.
    int bColsPerWorkGroup = 0;
    int bColsPerItem = 0;
    // NVIDIA GPUs under zecl only: the most registers per work-item the OpenCL compiler may use
    // (-cl-nv-maxrregcount); 0 = its choice.
    int maxRegisters = 0;

    // "cols_per_wg=16,cols_per_item=4,rows_per_pass=1,e2m1_decode=0,gemm_tile=2,b_cols_per_wg=8";
    // keys left out keep the defaults, and a key given again overrides the earlier one, so that a
    // named tuning can be varied by appending ("<R9>,stream_chunk=16" is R9 with 16-block chunks);
    // "packaged" (or "") is the defaults. Throws std::invalid_argument naming the key and the value.
    // `ablation` (wrong results by design) is refused unless the caller is a benchmark that asks for it.
    enum class Ablation { refused, allowed };
    static KernelTuning parse(std::string_view text, Ablation ablation = Ablation::refused);
    // The tiles this project measured fastest on the device, where they differ from the packaged
    // ones and the device builds the zecl source bundle: NVIDIA GPUs get the stream tile
    // (docs/perf.md, H200); every other device the packaged tiles.
    static KernelTuning recommendedFor(const runtime::DeviceInfo& device);
    std::string describe() const;      // the same form
    std::string buildOptions() const;  // "-DZP_GEMM_COLS_PER_WG=8 ..."
    // NVIDIA's OpenCL compiler only: max_registers as -cl-nv-maxrregcount, with the kernels'
    // reqd_work_group_size left out (ZP_NO_REQD_GROUP_SIZE: ptxas ignores the cap on a kernel
    // with a required size); "" when max_registers is 0.
    std::string nvidiaRegisterOptions() const;
    // The tiles kernel file `kernelFile` is built with: two_launch_b gets B's column tile, every
    // other file these (b_cols_* then mean nothing to it and are cleared).
    KernelTuning forKernelFile(std::string_view kernelFile) const;
    bool isPackaged() const { return *this == KernelTuning{}; }
    bool operator==(const KernelTuning&) const = default;
};

}  // namespace zp::scheduler
