/* paired_epilogue: gemm1 whose work-group owns gate/up column PAIRS (gate column i and up
 * column i of the same expert) and writes the activated act[r][i] once, so gate_up is never
 * materialised and no swiglu launch is needed.
 *
 * Why N-parallelism is kept: SwiGLU of pair i needs gate_i and up_i only, never another
 * column, so a pair is a self-contained unit of work. A work-group takes
 * ZP_GEMM_PAIRS_PER_WG pairs = ZP_GEMM_COLS_PER_WG columns, exactly the column count of the
 * baseline gemm1 tile: the grid spans ceil(I / PAIRS) = ceil(2I / COLS) work-groups per
 * expert group, the same number of work-groups, weight bytes per work-group and
 * parallelism as baseline gemm1. (Fusing by giving one work-group a whole expert, or all of
 * gate then all of up, would collapse the grid to a handful of groups and starve the GPU
 * in decode, where M*K is tiny.) A work-item walks ZP_GEMM_COLS_PER_ITEM (even) columns, i.e.
 * whole pairs, so lane 0 holds both dots of its pairs and applies SwiGLU itself: no
 * exchange between work-items is needed. */
#ifndef ZP_GEMM_PAIRED_H
#define ZP_GEMM_PAIRED_H

#include "zp_platform.h"
#include "zp_gemm.h"
#include "zp_swiglu.h"

/* Column tile `tile` of expert group (le, first, nrows): act[first + r][i] for the tile's
 * pairs i. Source rows as zp_pass_offsets (src_rows, or local_rows when local_rows_on). Work-item column c (of
 * ZP_GEMM_COLS_PER_ITEM) computes pair zp_item_first_col(tile) / 2 + c / 2, its gate when c is even, its up when odd.
 */
ZP_FN void zp_gemm1_paired_group_carried(const global uchar* w1_blocks, const global uchar* w1_scales, int le,
                                         int hidden, int intermediate, int layout, int tile, const global ushort* a,
                                         const global int* src_rows, local const int* local_rows, int local_rows_on,
                                         int first, int nrows, global const ushort* silu, float limit, float up_bias,
                                         global ushort* act, private zp_carry* carry, local float* red) {
#if ZP_GEMM_TILE == 2
    zp_stream_gemm(w1_blocks, w1_scales, le, 2 * intermediate, hidden, tile, a, src_rows, local_rows, local_rows_on,
                   first, nrows, 1, intermediate, layout, silu, limit, up_bias, act, 0, 0, first, carry, red);
#else
    const uint lane = get_local_id(0);
    const int pair0 = zp_item_first_col(tile) / 2;
    const int n_total = 2 * intermediate;
    const global uchar* wc[ZP_GEMM_COLS_PER_ITEM];
    const global uchar* ws[ZP_GEMM_COLS_PER_ITEM];
    for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c) {
        const int pair = pair0 + c / 2;
        const int n = pair < intermediate
                          ? ((c & 1) ? zp_up_col(pair, intermediate, layout) : zp_gate_col(pair, intermediate, layout))
                          : 0;
        wc[c] = zp_weight_codes(w1_blocks, le, n_total, n, hidden);
        ws[c] = zp_weight_scales(w1_scales, le, n_total, n, hidden);
    }
    const uint kb = pair0 < intermediate ? (uint)hidden / 32u : 0u;
    local float* red_item = red + get_local_id(1) * (ZP_GEMM_ACC * ZP_LANES);
    for (int r0 = 0; r0 < nrows; r0 += ZP_GEMM_ROWS_PER_PASS) {
        const int rows = min(nrows - r0, ZP_GEMM_ROWS_PER_PASS);
        int aoff[ZP_GEMM_ROWS_PER_PASS];
        zp_pass_offsets(aoff, src_rows, local_rows, local_rows_on, first, r0, rows, hidden);
        float acc[ZP_GEMM_ACC];
        zp_lane_dot_global(wc, ws, kb, lane, a, aoff, rows, acc);
        zp_reduce_lanes(red_item, lane, acc, rows);
        if (lane == 0)
            for (int q = 0; q < ZP_GEMM_COLS_PER_ITEM / 2; ++q) {
                const int pair = pair0 + q;
                if (pair >= intermediate) continue;
                for (int i = 0; i < rows; ++i) {
                    /* gate_up = bf16(dot) exactly as §5.4, never written to memory */
                    const ushort gate = zp_f32_to_bf16(acc[(2 * q) * ZP_GEMM_ROWS_PER_PASS + i]);
                    const ushort up = zp_f32_to_bf16(acc[(2 * q + 1) * ZP_GEMM_ROWS_PER_PASS + i]);
                    act[(size_t)(first + r0 + i) * intermediate + pair] = zp_swiglu(gate, up, limit, up_bias, silu);
                }
            }
    }
#endif
}

/* zp_gemm1_paired_group_carried for a unit on its own. */
ZP_FN void zp_gemm1_paired_group(const global uchar* w1_blocks, const global uchar* w1_scales, int le, int hidden,
                                 int intermediate, int layout, int tile, const global ushort* a,
                                 const global int* src_rows, local const int* local_rows, int local_rows_on, int first,
                                 int nrows, global const ushort* silu, float limit, float up_bias, global ushort* act,
                                 local float* red) {
    zp_carry none = zp_no_carry();
    zp_gemm1_paired_group_carried(w1_blocks, w1_scales, le, hidden, intermediate, layout, tile, a, src_rows, local_rows,
                                  local_rows_on, first, nrows, silu, limit, up_bias, act, &none, red);
}

#endif
