/* The stream tile's (zp_gemv_stream.h) column bookkeeping: which weight row a logical column of
 * a tile reads, CONTRACT §4's fixed tree over 16 lane sums kept in local memory, and the store of
 * a column's result (bf16, or the paired SwiGLU). */
#ifndef ZP_GEMM_TILE_H
#define ZP_GEMM_TILE_H

#include "zp_platform.h"
#include "zp_bf16.h"
#include "zp_swiglu.h"

/* Output column n of logical column lc of a tile: plain, or (paired) the gate column of pair
 * lc / 2 when lc is even and its up column when odd. -1 when outside the matrix. */
ZP_FN int zp_tile_column(int lc, int n_total, int paired, int intermediate, int layout) {
    if (!paired) return lc < n_total ? lc : -1;
    const int pair = lc >> 1;
    if (pair >= intermediate) return -1;
    return (lc & 1) ? zp_up_col(pair, intermediate, layout) : zp_gate_col(pair, intermediate, layout);
}

/* The fixed tree 8, 4, 2, 1 over 16 lane sums (result in lane 0). */
ZP_FN float zp_lane_tree(local const float* lanes) {
    float v[ZP_LANES];
    for (int l = 0; l < ZP_LANES; ++l) v[l] = lanes[l];
    for (int o = ZP_LANES / 2; o >= 1; o >>= 1)
        for (int l = 0; l < o; ++l) v[l] = v[l] + v[l + o];
    return v[0];
}

/* bf16(dot) to out[r][lc] (or local_out[r][col]) for lc < n_total, or, paired and lc even, the
 * SwiGLU of bf16(dot) and bf16(up_dot) to out[r][lc / 2] for pairs < intermediate: the store of
 * zp_tile_store below, from dots whose tree is already applied (up_dot read only when paired). */
ZP_FN void zp_tile_store_dots(float dot, float up_dot, int lc, int col, size_t r, int n_total, int paired,
                              int intermediate, float limit, float up_bias, global const ushort* silu,
                              global ushort* out, local ushort* local_out, int local_out_on) {
    if (!paired) {
        if (lc >= n_total) return;
        const ushort y = zp_f32_to_bf16(dot);
        if (local_out_on)
            local_out[r * ZP_GEMM_COLS_PER_WG + col] = y;
        else
            out[r * n_total + lc] = y;
    } else if ((lc >> 1) < intermediate) {
        out[r * intermediate + (lc >> 1)] =
            zp_swiglu(zp_f32_to_bf16(dot), zp_f32_to_bf16(up_dot), limit, up_bias, silu);
    }
}

/* The output of logical column lc (column `col` of its tile) and output row r from the 16 lane
 * sums at `lanes`: bf16(dot) to out[r][lc] (or local_out[r][col]) for lc < n_total, or, paired and
 * lc even, the SwiGLU of its bf16 gate dot and its up dot (the lane sums at up_lanes) to
 * out[r][lc / 2] for pairs < intermediate (gate_up exactly as §5.4, never written to memory). */
ZP_FN void zp_tile_store(local const float* lanes, local const float* up_lanes, int lc, int col, size_t r, int n_total,
                         int paired, int intermediate, float limit, float up_bias, global const ushort* silu,
                         global ushort* out, local ushort* local_out, int local_out_on) {
    if (paired ? (lc >> 1) >= intermediate : lc >= n_total) return;
    zp_tile_store_dots(zp_lane_tree(lanes), paired ? zp_lane_tree(up_lanes) : 0.0f, lc, col, r, n_total, paired,
                       intermediate, limit, up_bias, silu, out, local_out, local_out_on);
}

#endif
