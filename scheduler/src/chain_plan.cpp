#include "zp/scheduler/chain_plan.hpp"

#include "zp/scheduler/device_errors.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

// Tile sizes and buffer layouts shared with the kernels (kernels_cl/abi, the one kernel header
// host code includes).
#include "zp_abi.h"

namespace zp::scheduler {

namespace {

std::uint32_t ceilDiv(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

// The launches of one plan: the shape's sizes as the kernels take them, the grids, and one
// member function per launch (or per fused chain) that appends it.
struct Planner {
    Planner(const oracle::ChainShape& s, const ChainBuffers& buffers, const KernelTuning& tuning, IdWidth idWidth)
        : b(buffers),
          t(tuning),
          ids(idWidth),
          H(s.hidden),
          I(s.intermediate),
          M(s.rows),
          K(s.topK),
          routes(M * K),
          // Expert groups: at most one per route and one per local expert.
          groupSlots(std::min<std::uint32_t>(routes, s.localExperts())),
          layout(s.layout == oracle::GateUpLayout::Interleaved ? 1 : 0),
          cols(t.colsPerWorkGroup),
          pairs(cols / 2),
          gemm{ZP_LANES, cols / std::uint32_t(t.colsPerItem), 1},
          elem{ZP_ELEMWISE_WG, 1, 1},
          h(s.hidden),
          i(s.intermediate),
          k(s.topK),
          m(s.rows),
          e(s.experts),
          c(s.cards),
          card(s.card),
          L(s.swigluLimit),
          beta(s.swigluUpBias),
          gemm1Grid{ceilDiv(2 * I, cols), groupSlots, 1},
          gemm2Grid{ceilDiv(H, cols), groupSlots, 1},
          pairedGrid{ceilDiv(I, pairs), groupSlots, 1} {
        plan.idWidth = ids;
    }

    void add(std::string file, std::string kernel, runtime::GroupSize g, runtime::GroupCount n,
             std::vector<KernelArg> args) {
        plan.launches.push_back({kernelFileFor(file, ids), std::move(kernel), g, n, std::move(args)});
    }
    void routeCompact() {
        add("route_compact", "route_compact", {ZP_ROUTE_COMPACT_WG, 1, 1}, {1, 1, 1},
            {b.topkIds, m, k, e, c, card, runtime::LocalMem{sizeof(std::int32_t) * ZP_ROUTE_SCRATCH_INTS(routes)},
             b.routeInfo, b.compactRows, b.routeRow, b.groups});
    }
    void remap() {
        add("remap_rows_bf16", "remap_rows_bf16", elem, {ceilDiv(H / 8, ZP_ELEMWISE_WG), routes, 1},
            {b.hidden, b.routeInfo, b.compactRows, b.a, h});
    }
    void swiglu() {
        add("swiglu_bf16", "swiglu_bf16", elem, {ceilDiv(I, ZP_ELEMWISE_WG), routes, 1},
            {b.gateUp, b.silu, b.routeInfo, b.act, i, L, beta, layout});
    }
    void gemm1() {
        add("gemm1_mxfp4_m2", "gemm1_mxfp4_m2", gemm, gemm1Grid,
            {b.a, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.gateUp, h, i});
    }
    void gemm2() {
        add("gemm2_mxfp4_m2", "gemm2_mxfp4_m2", gemm, gemm2Grid,
            {b.act, b.w2Blocks, b.w2Scales, b.routeInfo, b.groups, b.y, h, i});
    }
    void gather() {
        add("gather_bf16", "gather_bf16", elem, {ceilDiv(H, ZP_ELEMWISE_WG), M, 1},
            {b.y, b.routeRow, b.topkWeights, b.out, k, h});
    }

    void gemm2LoaderFused() {
        // act_tile: the lane tile makes a pass's activations there; the stream tile makes them in
        // its own staging (kernels_cl/gemm2_mxfp4_m2_loader_fused.cl) and gets the least local
        // argument OpenCL allows.
        const std::size_t actTile = t.gemmTile == 2 ? 1 : std::size_t(t.rowsPerPass) * I;
        add("gemm2_mxfp4_m2_loader_fused", "gemm2_mxfp4_m2_loader_fused", gemm, gemm2Grid,
            {b.gateUp, b.silu, b.w2Blocks, b.w2Scales, b.routeInfo, b.groups, b.y, h, i, L, beta, layout,
             runtime::LocalMem{sizeof(std::uint16_t) * actTile}});
    }
    void gemm1SourceDirect() {
        add("gemm1_mxfp4_m2_source_direct", "gemm1_mxfp4_m2_source_direct", gemm, gemm1Grid,
            {b.hidden, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.compactRows, b.gateUp, h, i});
    }
    void gemm1Paired() {
        add("gemm1_mxfp4_m2_paired", "gemm1_mxfp4_m2_paired", gemm, pairedGrid,
            {b.a, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.silu, b.act, h, i, L, beta, layout});
    }
    void gemm1PairedDirect() {
        add("gemm1_mxfp4_m2_paired_direct", "gemm1_mxfp4_m2_paired_direct", gemm, pairedGrid,
            {b.hidden, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.compactRows, b.silu, b.act, h, i, L, beta,
             layout});
    }

    void twoLaunch() {
        // kernels_cl/common/zp_two_launch.h: every work-group derives the routes itself, then
        // loops over its units; both grids are persistent (DeviceChain caps them at the count
        // the device keeps resident, so the routes are derived once per resident group).
        const runtime::LocalMem routeTable{sizeof(std::int32_t) * ZP_ROUTE_SCRATCH_INTS(routes)};
        add("two_launch_a", "two_launch_a", gemm, {pairedGrid.x * pairedGrid.y, 1, 1},
            {b.topkIds,     b.hidden,   b.w1Blocks, b.w1Scales, b.silu, b.act,  b.routeInfo,
             b.compactRows, b.routeRow, b.groups,   m,          k,      e,      c,
             card,          h,          i,          L,          beta,   layout, routeTable});
        plan.launches.back().persistent = true;
        // B: its own column tile (KernelTuning::forKernelFile); units per (column tile, expert
        // group), the tile's last one writing out.
        const KernelTuning tb = t.forKernelFile("two_launch_b");
        const std::uint32_t colsB = tb.colsPerWorkGroup;
        add("two_launch_b", "two_launch_b", {ZP_LANES, colsB / std::uint32_t(tb.colsPerItem), 1},
            {ceilDiv(H, colsB) * groupSlots, 1, 1},
            {b.topkIds, b.topkWeights, b.act, b.w2Blocks, b.w2Scales, b.y, b.tileDone, b.out, m, k, e, c, card, h, i,
             routeTable});
        plan.launches.back().persistent = true;
    }

    void oneLaunch() {
        // kernels_cl/one_launch.cl: two_launch's A and B in one cooperative kernel. The grid
        // asked for is the wider of A's (pair tile, expert group) units and B's (column tile,
        // expert group) units; DeviceChain caps it at the suggested cooperative count.
        const runtime::LocalMem routeTable{sizeof(std::int32_t) * ZP_ROUTE_SCRATCH_INTS(routes)};
        const std::uint32_t most = std::max(ceilDiv(I, pairs), ceilDiv(H, cols)) * groupSlots;
        add("one_launch", "one_launch", gemm, {most, 1, 1},
            {b.topkIds,
             b.topkWeights,
             b.hidden,
             b.w1Blocks,
             b.w1Scales,
             b.silu,
             b.act,
             b.w2Blocks,
             b.w2Scales,
             b.y,
             b.tileDone,
             b.out,
             b.routeInfo,
             b.compactRows,
             b.routeRow,
             b.groups,
             b.phaseReady,
             m,
             k,
             e,
             c,
             card,
             h,
             i,
             L,
             beta,
             layout,
             routeTable});
        plan.launches.back().cooperative = true;
    }

    void m1Oracle() {
        // One route per work-group row: y = M*K regardless of the experts (no dedup).
        const std::string f = "m1_oracle_mxfp4";
        add(f, "m1_gemm1", gemm, {ceilDiv(2 * I, cols), routes, 1},
            {b.hidden, b.topkIds, b.w1Blocks, b.w1Scales, b.gateUp, k, h, i, e, c, card});
        add(f, "m1_swiglu", elem, {ceilDiv(I, ZP_ELEMWISE_WG), routes, 1},
            {b.gateUp, b.silu, b.topkIds, b.act, i, L, beta, layout, e, c, card});
        add(f, "m1_gemm2", gemm, {ceilDiv(H, cols), routes, 1},
            {b.act, b.topkIds, b.w2Blocks, b.w2Scales, b.y, h, i, e, c, card});
        add(f, "m1_gather", elem, {ceilDiv(H, ZP_ELEMWISE_WG), M, 1},
            {b.y, b.topkIds, b.topkWeights, b.out, b.routeInfo, m, k, h, e, c, card});
    }

    const ChainBuffers& b;
    const KernelTuning& t;
    const IdWidth ids;
    const std::uint32_t H, I, M, K, routes, groupSlots;
    const std::int32_t layout;
    const std::uint32_t cols, pairs;
    const runtime::GroupSize gemm, elem;
    const std::int32_t h, i, k, m, e, c, card;
    const float L, beta;
    const runtime::GroupCount gemm1Grid, gemm2Grid, pairedGrid;
    ChainPlan plan;
};

}  // namespace

ChainPlan planChain(probe::Variant variant, const oracle::ChainShape& s, const ChainBuffers& b, const KernelTuning& t,
                    IdWidth ids) {
    oracle::validateShape(s);
    // The stream tile addresses a weight row by its 32-bit block offset within the expert
    // (kernels_cl/common/zp_gemv_stream.h); an expert matrix has one scale byte per block.
    const std::uint64_t blocks =
        std::max(oracle::LocalWeights::w1ScalesPerExpert(s), oracle::LocalWeights::w2ScalesPerExpert(s));
    if (t.gemmTile == 2 && blocks > UINT32_MAX)
        throw TuningNotBuildable("the stream tile (kernel tuning '" + t.describe() +
                                 "') addresses an expert's weight rows by 32-bit block offsets: hidden " +
                                 std::to_string(s.hidden) + " and intermediate " + std::to_string(s.intermediate) +
                                 " give " + std::to_string(blocks) +
                                 " blocks per expert matrix, more than 4294967295; use gemm_tile=0 (the lane tile)");
    Planner p(s, b, t, ids);
    switch (variant) {
        case probe::Variant::Baseline: p.routeCompact(), p.remap(), p.gemm1(), p.swiglu(), p.gemm2(), p.gather(); break;
        case probe::Variant::Gemm2LoaderFused:
            p.routeCompact(), p.remap(), p.gemm1();
            p.gemm2LoaderFused();
            p.gather();
            break;
        case probe::Variant::SourceDirect:
            p.routeCompact();
            p.gemm1SourceDirect();
            p.swiglu(), p.gemm2(), p.gather();
            break;
        case probe::Variant::PairedEpilogue:
            p.routeCompact(), p.remap();
            p.gemm1Paired();
            p.gemm2(), p.gather();
            break;
        case probe::Variant::PairedDirect:
            p.routeCompact();
            p.gemm1PairedDirect();
            p.gemm2(), p.gather();
            break;
        case probe::Variant::TwoLaunch: p.twoLaunch(); break;
        case probe::Variant::OneLaunch: p.oneLaunch(); break;
        case probe::Variant::M1Oracle: p.m1Oracle(); break;
    }
    return std::move(p.plan);
}
}  // namespace zp::scheduler
