/* two_launch's kernel bodies (issue 12): the whole chain in two launches, A then B, with no
 * route_compact, remap, swiglu or gather launch and no gate_up, a or y buffer. The bodies are
 * ZP_FN functions so that a persistent kernel (one_launch: A, a device-wide barrier, B) calls
 * the very same code; two_launch_a.cl / two_launch_b.cl are the two-launch wrappers.
 *
 * Shapes as by-value arguments, as every kernel (README "Argument conventions"); MK = M * K.
 * Work-group: ZP_LANES x ZP_GEMM_ITEMS_Y work-items (ZP_GEMM_ATTRS), items =
 * ZP_LANES * ZP_GEMM_ITEMS_Y, lid = get_local_id(1) * ZP_LANES + get_local_id(0). Every body
 * must be called by every work-item of the work-group (barriers), with work-group-uniform
 * arguments. Tiles: ZP_GEMM_TILE 0 (lane tile) and 1 (block tile) both, every tuning knob.
 *
 * Local memory a work-group needs (the caller owns it; several bodies in a row may reuse it):
 *   routes  local int[ZP_ROUTE_SCRATCH_INTS(MK)]       the route table (zp_routes.h)
 *   red     local float[ZP_GEMM_RED_FLOATS]            the GEMM tile's (static in the wrappers)
 *   y_tile  local ushort[MK * ZP_GEMM_COLS_PER_WG]     B only: y of one column tile, every row
 *
 * 1. zp_derive_routes(topk_ids, M, K, E, C, card, routes, lid, items) (zp_routes.h): EVERY
 *    work-group derives §5.1-5.2 itself into `routes` before A or B (it costs O(MK^2 / items)
 *    integer steps, a few hundred cycles at MK = 12: cheaper than a launch or a global
 *    round trip). Ids outside [0, E) are not local.
 * 2. zp_tl_store_routes(routes, ...): exactly ONE work-group of the chain (two_launch: A's
 *    group (0, 0)) writes route_info / compact_rows / route_row / groups as route_compact does,
 *    so the host reads R, the compact rows, cr(m, k) and the §5.1 error flag (invalid-id count,
 *    first invalid route) exactly as for every other variant. Nothing on the device reads them.
 * 3. zp_tl_gemm1_tile(routes, tile, g, ...), kernel A's unit of work: expert group g (< G, the
 *    groups in le order) and pair tile `tile` (< ceil(I / ZP_GEMM_PAIRS_PER_WG)): act[r][i] for
 *    the group's compact rows r and the tile's gate/up pairs i (§5.4-5.5, the paired epilogue,
 *    zp_gemm_paired.h), reading the rows' source rows of `hidden` directly (no remap). Returns
 *    at once when g >= G. act is [MK, I] in compact-row order; rows >= R are never written.
 *    two_launch's grid: (ceil(I / PAIRS), min(MK, E/C)), one unit per work-group.
 * 4. zp_tl_gemm2_gather_tile(routes, tile, per_row, m, ...), kernel B's unit of work. per_row a
 *    literal at every call (the unused path folds away):
 *    0: column tile `tile` (< ceil(H / ZP_GEMM_COLS_PER_WG)) of y for EVERY compact row (§5.6,
 *    all G groups in turn, into y_tile, never to global memory), then out[m][h] for every row
 *    m < M and the tile's columns h in §5.7's route order (rows without a local route get
 *    +0.0); m is unused. two_launch's grid: (ceil(H / COLS), 1).
 *    1 (build option ZP_TL_B_PER_ROW): the same for token row m only: y of row m's compact rows
 *    (its routes k in order, a within-row duplicate's row once, each a 1-row pass), then out
 *    row m. A compact row of an expert several token rows use is computed by each of their
 *    work-groups (its weight tile read once per row, as a rows_per_pass=1 build does anyway),
 *    so no y crosses work-groups; the bits are per_row 0's. two_launch's grid:
 *    (ceil(H / COLS), M): M times the work-groups, each walking K rows instead of all R (B is
 *    latency-bound on the H200: docs/perf.md "two_launch").
 *    Reads act, which every A unit must have finished (two_launch: the launch boundary;
 *    one_launch: the device-wide barrier, with act read past any stale cache).
 *
 * Compact M2 at run time: an expert group with one compact row runs a 1-row specialisation of
 * the tile (nrows a literal 1: the dead rows' loads, fmas, lane sums and tree fold away), one
 * with more rows runs passes of up to ZP_GEMM_ROWS_PER_PASS rows, each weight block read once
 * per pass. The build knob rows_per_pass still sets the widest pass, and with it the kernel's
 * register allocation (one per kernel, the widest path's): on the H200's block tile a
 * rows_per_pass=2 build runs 1-row experts at the speed of a 2-row build, not of a 1-row one
 * (docs/perf.md, "two_launch"). */
#ifndef ZP_TWO_LAUNCH_H
#define ZP_TWO_LAUNCH_H

#include "zp_platform.h"
#include "zp_routes.h"
#include "zp_gemm.h"
#include "zp_gemm_paired.h"

ZP_FN int zp_tl_lid(void) { return (int)(get_local_id(1) * ZP_LANES + get_local_id(0)); }
#define ZP_TL_ITEMS (ZP_LANES * ZP_GEMM_ITEMS_Y)

ZP_FN void zp_tl_store_routes(local const int* routes, global const zp_topk_id_t* topk_ids, int rows, int top_k,
                              int experts, global int* route_info, global int* compact_rows, global int* route_row,
                              global int* groups) {
    zp_store_routes(routes, topk_ids, rows * top_k, experts, zp_tl_lid(), ZP_TL_ITEMS, route_info, compact_rows,
                    route_row, groups);
}

ZP_FN void zp_tl_gemm1_tile(local const int* routes, int rows, int top_k, int tile, int g,
                            global const ushort* hidden_x, /* [M, H] */
                            global const uchar* w1_blocks, global const uchar* w1_scales, global const ushort* silu,
                            global ushort* act, /* [MK, I] */
                            int hidden, int intermediate, float limit, float up_bias, int layout, local float* red) {
    const int mk = rows * top_k;
    if (g >= ZP_RT_COUNT_G(routes, mk)) return;
    local const int* grp = ZP_RT_GROUPS(routes, mk) + ZP_GROUP_WORDS * g;
    const int le = grp[0], first = grp[1], count = grp[2];
    local const int* crow = ZP_RT_ROWS(routes, mk);
    if (count == 1)
        zp_gemm1_paired_group(w1_blocks, w1_scales, le, hidden, intermediate, layout, tile, hidden_x, 0, crow, 1, first,
                              1, silu, limit, up_bias, act, red);
    else
        zp_gemm1_paired_group(w1_blocks, w1_scales, le, hidden, intermediate, layout, tile, hidden_x, 0, crow, 1, first,
                              count, silu, limit, up_bias, act, red);
}

/* out[m][h] for rows m0 <= m < m1 and the columns h of column tile `tile`, in §5.7's route
 * order, from y_tile (y of the tile's columns for every compact row r the routes of those rows
 * use, at y_tile[r * COLS + h - h0]); rows without a local route get +0.0. */
ZP_FN void zp_tl_gather_rows(local const int* routes, int rows, int top_k, int m0, int m1, int tile,
                             global const float* topk_weights, global ushort* out, int hidden,
                             local const ushort* y_tile) {
    local const int* cr_of = ZP_RT_CR(routes, rows * top_k);
    const int h0 = tile * ZP_GEMM_COLS_PER_WG;
    for (int e = zp_tl_lid(); e < (m1 - m0) * ZP_GEMM_COLS_PER_WG; e += ZP_TL_ITEMS) {
        const int dm = e / ZP_GEMM_COLS_PER_WG, j = e - dm * ZP_GEMM_COLS_PER_WG;
        const int m = m0 + dm;
        if (h0 + j >= hidden) continue;
        float acc = 0.0f;
        for (int k = 0; k < top_k; ++k) {
            const int r = cr_of[m * top_k + k];
            if (r < 0) continue;
            acc = fma(topk_weights[m * top_k + k], zp_bf16_to_f32(y_tile[r * ZP_GEMM_COLS_PER_WG + j]), acc);
        }
        out[(size_t)m * hidden + h0 + j] = zp_f32_to_bf16(acc);
    }
}

ZP_FN void zp_tl_gemm2_gather_tile(local const int* routes, int rows, int top_k, int tile, int per_row, int m,
                                   global const ushort* act, /* [MK, I] */
                                   global const uchar* w2_blocks, global const uchar* w2_scales,
                                   global const float* topk_weights, /* [M, K] */
                                   global ushort* out,               /* [M, H] */
                                   int hidden, int intermediate, local ushort* y_tile, local float* red) {
    const int mk = rows * top_k;
    if (per_row) {
        /* row m's compact rows, one 1-row pass each, in k order */
        local const int* rep = ZP_RT_REP(routes, mk);
        local const int* crow = ZP_RT_ROWS(routes, mk);
        for (int k = 0; k < top_k; ++k) {
            const int i = m * top_k + k;
            if (!rep[i]) continue; /* not local, or a duplicate of an earlier k of this row */
            const int r = ZP_RT_CR(routes, mk)[i];
            zp_gemm_group(w2_blocks, w2_scales, crow[ZP_ROW_WORDS * r], hidden, intermediate, tile, act, 0, r, 1, 0,
                          y_tile, 1, r, red);
        }
    } else {
        const int groups = ZP_RT_COUNT_G(routes, mk);
        for (int g = 0; g < groups; ++g) {
            local const int* grp = ZP_RT_GROUPS(routes, mk) + ZP_GROUP_WORDS * g;
            const int le = grp[0], first = grp[1], count = grp[2];
            if (count == 1)
                zp_gemm_group(w2_blocks, w2_scales, le, hidden, intermediate, tile, act, 0, first, 1, 0, y_tile, 1,
                              first, red);
            else
                zp_gemm_group(w2_blocks, w2_scales, le, hidden, intermediate, tile, act, 0, first, count, 0, y_tile, 1,
                              first, red);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* y_tile complete */
    zp_tl_gather_rows(routes, rows, top_k, per_row ? m : 0, per_row ? m + 1 : rows, tile, topk_weights, out, hidden,
                      y_tile);
    barrier(CLK_LOCAL_MEM_FENCE); /* y_tile may be rewritten by the caller's next unit */
}

#endif
