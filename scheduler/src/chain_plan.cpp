#include "zp/scheduler/chain_plan.hpp"

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
}  // namespace

ChainPlan planChain(probe::Variant variant, const oracle::ChainShape& s, const ChainBuffers& b, const KernelTuning& t,
                    IdWidth ids) {
    oracle::validateShape(s);
    const std::uint32_t H = s.hidden, I = s.intermediate, M = s.rows, K = s.topK;
    const std::uint32_t routes = M * K;
    // Expert groups: at most one per route and one per local expert.
    const std::uint32_t groupSlots = std::min<std::uint32_t>(routes, s.localExperts());
    const std::int32_t layout = s.layout == oracle::GateUpLayout::Interleaved ? 1 : 0;
    const std::uint32_t cols = t.colsPerWorkGroup, pairs = cols / 2;
    const runtime::GroupSize gemm{ZP_LANES, cols / std::uint32_t(t.colsPerItem), 1};
    const runtime::GroupSize elem{ZP_ELEMWISE_WG, 1, 1};
    const std::int32_t h = s.hidden, i = s.intermediate, k = s.topK, m = s.rows;
    const std::int32_t e = s.experts, c = s.cards, card = s.card;
    const float L = s.swigluLimit, beta = s.swigluUpBias;

    ChainPlan p;
    p.idWidth = ids;
    auto add = [&](std::string file, std::string kernel, runtime::GroupSize g, runtime::GroupCount n,
                   std::vector<KernelArg> args) {
        p.launches.push_back({kernelFileFor(file, ids), std::move(kernel), g, n, std::move(args)});
    };
    auto routeCompact = [&] {
        add("route_compact", "route_compact", {ZP_ROUTE_COMPACT_WG, 1, 1}, {1, 1, 1},
            {b.topkIds, m, k, e, c, card, runtime::LocalMem{sizeof(std::int32_t) * ZP_ROUTE_SCRATCH_INTS(routes)},
             b.routeInfo, b.compactRows, b.routeRow, b.groups});
    };
    auto remap = [&] {
        add("remap_rows_bf16", "remap_rows_bf16", elem, {ceilDiv(H / 8, ZP_ELEMWISE_WG), routes, 1},
            {b.hidden, b.routeInfo, b.compactRows, b.a, h});
    };
    auto swiglu = [&] {
        add("swiglu_bf16", "swiglu_bf16", elem, {ceilDiv(I, ZP_ELEMWISE_WG), routes, 1},
            {b.gateUp, b.silu, b.routeInfo, b.act, i, L, beta, layout});
    };
    const runtime::GroupCount gemm1Grid{ceilDiv(2 * I, cols), groupSlots, 1};
    const runtime::GroupCount pairedGrid{ceilDiv(I, pairs), groupSlots, 1};
    const runtime::GroupCount gemm2Grid{ceilDiv(H, cols), groupSlots, 1};
    auto gemm1 = [&] {
        add("gemm1_mxfp4_m2", "gemm1_mxfp4_m2", gemm, gemm1Grid,
            {b.a, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.gateUp, h, i});
    };
    auto gemm2 = [&] {
        add("gemm2_mxfp4_m2", "gemm2_mxfp4_m2", gemm, gemm2Grid,
            {b.act, b.w2Blocks, b.w2Scales, b.routeInfo, b.groups, b.y, h, i});
    };
    auto gather = [&] {
        add("gather_bf16", "gather_bf16", elem, {ceilDiv(H, ZP_ELEMWISE_WG), M, 1},
            {b.y, b.routeRow, b.topkWeights, b.out, k, h});
    };

    switch (variant) {
        case probe::Variant::Baseline: routeCompact(), remap(), gemm1(), swiglu(), gemm2(), gather(); break;
        case probe::Variant::Gemm2LoaderFused:
            routeCompact(), remap(), gemm1();
            add("gemm2_mxfp4_m2_loader_fused", "gemm2_mxfp4_m2_loader_fused", gemm, gemm2Grid,
                {b.gateUp, b.silu, b.w2Blocks, b.w2Scales, b.routeInfo, b.groups, b.y, h, i, L, beta, layout,
                 runtime::LocalMem{sizeof(std::uint16_t) * std::size_t(t.rowsPerPass) * I}});
            gather();
            break;
        case probe::Variant::SourceDirect:
            routeCompact();
            add("gemm1_mxfp4_m2_source_direct", "gemm1_mxfp4_m2_source_direct", gemm, gemm1Grid,
                {b.hidden, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.compactRows, b.gateUp, h, i});
            swiglu(), gemm2(), gather();
            break;
        case probe::Variant::PairedEpilogue:
            routeCompact(), remap();
            add("gemm1_mxfp4_m2_paired", "gemm1_mxfp4_m2_paired", gemm, pairedGrid,
                {b.a, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.silu, b.act, h, i, L, beta, layout});
            gemm2(), gather();
            break;
        case probe::Variant::PairedDirect:
            routeCompact();
            add("gemm1_mxfp4_m2_paired_direct", "gemm1_mxfp4_m2_paired_direct", gemm, pairedGrid,
                {b.hidden, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.compactRows, b.silu, b.act, h, i, L, beta,
                 layout});
            gemm2(), gather();
            break;
        case probe::Variant::TwoLaunch: {
            // kernels_cl/common/zp_two_launch.h: every work-group derives the routes itself.
            const runtime::LocalMem routeTable{sizeof(std::int32_t) * ZP_ROUTE_SCRATCH_INTS(routes)};
            add("two_launch_a", "two_launch_a", gemm, pairedGrid,
                {b.topkIds,     b.hidden,   b.w1Blocks, b.w1Scales, b.silu, b.act,  b.routeInfo,
                 b.compactRows, b.routeRow, b.groups,   m,          k,      e,      c,
                 card,          h,          i,          L,          beta,   layout, routeTable});
            // B: its own column tile (KernelTuning::forKernelFile); a work-group per (column tile,
            // expert group), the tile's last one writing out.
            const KernelTuning tb = t.forKernelFile("two_launch_b");
            const std::uint32_t colsB = tb.colsPerWorkGroup;
            add("two_launch_b", "two_launch_b", {ZP_LANES, colsB / std::uint32_t(tb.colsPerItem), 1},
                {ceilDiv(H, colsB), groupSlots, 1},
                {b.topkIds, b.topkWeights, b.act, b.w2Blocks, b.w2Scales, b.y, b.tileDone, b.out, m, k, e, c, card, h,
                 i, routeTable});
            break;
        }
        case probe::Variant::OneLaunch: {
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
                 b.gridBarrier,
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
            p.launches.back().cooperative = true;
            break;
        }
        case probe::Variant::M1Oracle: {
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
            break;
        }
    }
    return p;
}
}  // namespace zp::scheduler
