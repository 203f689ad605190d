// The device half of the scheduler: the chain variants of DESIGN.md as plans of kernel
// launches, recorded once into a regular command list and replayed per case.
//
// Grids are fixed per configuration (sized for the worst case: M*K routes, min(M*K, E/C)
// expert groups), so one recorded list serves every route; work-groups beyond the live
// routes exit at once (all_remote launches everything and does nothing). The shape travels
// as by-value kernel arguments: the kernel package is shape-independent.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "zp/oracle/chain.hpp"
#include "zp/probe/variant.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/kernel_modules.hpp"
#include "zp/scheduler/kernel_tuning.hpp"

namespace zp::scheduler {

// One kernel launch of a plan. Arguments in kernel order: a device pointer, an int32, a
// float, or local memory of N bytes.
using KernelArg = std::variant<const void*, std::int32_t, float, runtime::LocalMem>;
struct PlannedLaunch {
    std::string file;    // kernel file stem in the package, e.g. "gemm1_mxfp4_m2"
    std::string kernel;  // entry point
    runtime::GroupSize group;
    runtime::GroupCount groups;  // cooperative, persistent: the most groups the kernel can use (groups.x; y = z = 1)
    std::vector<KernelArg> args;
    // A cooperative launch (zeCommandListAppendLaunchCooperativeKernel) over min(groups.x, the
    // kernel's zeKernelSuggestMaxCooperativeGroupCount) groups: the grid is the device's to
    // choose, and the kernel loops over its work with whatever grid it gets.
    bool cooperative = false;
    // A plain launch over min(groups.x, that same suggested count) where the driver answers it
    // (else groups.x): a kernel that loops over its units of work with any grid, so that what it
    // does once per work-group (two_launch: derive the route table) is done once per resident
    // group, not once per unit. It needs no co-resident grid.
    bool persistent = false;
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
    void* phaseReady = nullptr;   // u32 [ZP_OL_SCRATCH_WORDS(M*K)], counts zeroed once: one_launch's phase order
    void* tileDone = nullptr;     // u32 [H], zeroed once: kernel B's finished units per column tile
};

// The launches of `variant` (DESIGN.md "Chain variants") for kernels built with `tuning`,
// reading topk_ids at `ids` (the route readers' `_i64` kernel files for Int64). Pure: no device calls.
ChainPlan planChain(probe::Variant variant, const oracle::ChainShape& shape, const ChainBuffers& buffers,
                    const KernelTuning& tuning = {}, IdWidth ids = IdWidth::Int32);

}  // namespace zp::scheduler
