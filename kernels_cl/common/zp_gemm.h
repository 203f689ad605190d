/* The grouped MXFP4 GEMV tile shared by gemm1 / gemm2 / source_direct / m1_oracle.
 * Work-group = ZP_LANES x ZP_GEMM_ITEMS_Y work-items. ZP_GEMM_TILE picks how §4 maps onto them:
 * 0, the lane tile (here): local id 0 is the §4 lane, local id 1 the columns inside the tile;
 * 2, the stream tile (zp_gemv_stream.h): a few lanes of a few columns per work-item. */
#ifndef ZP_GEMM_H
#define ZP_GEMM_H

#include "zp_platform.h"
#include "zp_dot.h"
#include "zp_routes.h"

/* Activation offsets (in elements) of the rows of one pass: row r of the group reads
 * a + a_row(r) * k, with a_row(r) = the m of compact row r' (source-direct: through the
 * compact row table, src_rows in global memory or, when local_rows_on, local_rows in local
 * memory as two_launch derives it) or r' itself (compact rows / the M1 route's token row),
 * r' = a_first + r. local_rows_on is a literal at every call: the unused path folds away. */
ZP_FN void zp_pass_offsets(int* aoff, const global int* src_rows, local const int* local_rows, int local_rows_on,
                           int a_first, int r0, int rows, int k) {
    for (int i = 0; i < ZP_GEMM_ROWS_PER_PASS; ++i) {
        const int r = a_first + r0 + min(i, rows - 1);
        const int m = local_rows_on ? local_rows[ZP_ROW_WORDS * r + 1] : src_rows ? src_rows[ZP_ROW_WORDS * r + 1] : r;
        aoff[i] = m * k;
    }
}

/* Weight row n of expert le in a stacked [E/C, n_total, k/32, 16] / [E/C, n_total, k/32] pair. */
ZP_FN const global uchar* zp_weight_codes(const global uchar* blocks, int le, int n_total, int n, int k) {
    return blocks + ((size_t)le * n_total + n) * (size_t)(k / 32) * 16;
}
ZP_FN const global uchar* zp_weight_scales(const global uchar* scales, int le, int n_total, int n, int k) {
    return scales + ((size_t)le * n_total + n) * (size_t)(k / 32);
}

/* What a persistent work-group hands from one unit to its next: which unit comes next (of the same
 * matrix: its expert, next_le < 0 for none, and its column tile), and with the stream tile's
 * ZP_STREAM_CARRY that unit's first iteration of code and scale bytes (in = 1 once this unit has
 * loaded them; zp_gemv_stream.h). The lane tile carries nothing. */
typedef struct {
    int in;
    int next_le, next_tile;
#if ZP_GEMM_TILE == 2 && defined(ZP_STREAM_CARRY) && ZP_STREAM_CARRY
    uint4 codes[ZP_STREAM_COLS][ZP_LANES / ZP_STREAM_SPLIT];
    uint scales[ZP_STREAM_COLS][ZP_LANES / ZP_STREAM_SPLIT];
#endif
} zp_carry;
/* A carry that holds nothing and names no next unit: for a unit on its own. */
ZP_FN zp_carry zp_no_carry(void) {
    zp_carry c;
    c.in = 0;
    c.next_le = -1;
    c.next_tile = 0;
    return c;
}

#if ZP_GEMM_TILE == 2
#include "zp_gemv_stream.h"
#endif

/* The first of this work-item's ZP_GEMM_COLS_PER_ITEM columns in column tile `tile` (lane tile). */
ZP_FN int zp_item_first_col(int tile) {
    return tile * ZP_GEMM_COLS_PER_WG + (int)get_local_id(1) * ZP_GEMM_COLS_PER_ITEM;
}

/* out[out_first + r][n] = bf16(dot(row r's activations, W[le] row n)) for r < nrows and the
 * columns n of column tile `tile` (when local_out_on: local_out[(out_first + r) * COLS + n - tile * COLS],
 * the tile's columns of every row in local memory, as two_launch's gemm2 keeps y); in the lane tile, the work-item's
 * columns n = n0 .. n0 + ZP_GEMM_COLS_PER_ITEM - 1, n0 = zp_item_first_col(tile) (columns >= n_total compute on row 0
 * but write nothing; every work-item joins the barriers). The weight tile is read once per pass of
 * ZP_GEMM_ROWS_PER_PASS rows (once for M <= 2). `red`: the kernel's local float[ZP_GEMM_RED_FLOATS]. */
ZP_FN void zp_gemm_group(const global uchar* w_blocks, const global uchar* w_scales, int le, int n_total, int k,
                         int tile, const global ushort* a, const global int* src_rows, int a_first, int nrows,
                         global ushort* out, local ushort* local_out, int local_out_on, int out_first,
                         local float* red) {
#if ZP_GEMM_TILE == 2
    zp_carry none = zp_no_carry();
    zp_stream_gemm(w_blocks, w_scales, le, n_total, k, tile, a, src_rows, 0, 0, a_first, nrows, 0, 0, 0, 0, 0.0f, 0.0f,
                   out, local_out, local_out_on, out_first, &none, red);
#else
    const uint lane = get_local_id(0);
    const int n0 = zp_item_first_col(tile);
    const global uchar* wc[ZP_GEMM_COLS_PER_ITEM];
    const global uchar* ws[ZP_GEMM_COLS_PER_ITEM];
    for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c) {
        const int n = n0 + c < n_total ? n0 + c : 0;
        wc[c] = zp_weight_codes(w_blocks, le, n_total, n, k);
        ws[c] = zp_weight_scales(w_scales, le, n_total, n, k);
    }
    const uint kb = n0 < n_total ? (uint)k / 32u : 0u;
    local float* red_item = red + get_local_id(1) * (ZP_GEMM_ACC * ZP_LANES);
    for (int r0 = 0; r0 < nrows; r0 += ZP_GEMM_ROWS_PER_PASS) {
        const int rows = min(nrows - r0, ZP_GEMM_ROWS_PER_PASS);
        int aoff[ZP_GEMM_ROWS_PER_PASS];
        zp_pass_offsets(aoff, src_rows, 0, 0, a_first, r0, rows, k);
        float acc[ZP_GEMM_ACC];
        zp_lane_dot_global(wc, ws, kb, lane, a, aoff, rows, acc);
        zp_reduce_lanes(red_item, lane, acc, rows);
        if (lane == 0)
            for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c)
                if (n0 + c < n_total)
                    for (int i = 0; i < rows; ++i) {
                        const ushort v = zp_f32_to_bf16(acc[c * ZP_GEMM_ROWS_PER_PASS + i]);
                        if (local_out_on)
                            local_out[(out_first + r0 + i) * ZP_GEMM_COLS_PER_WG + n0 + c -
                                      tile * ZP_GEMM_COLS_PER_WG] = v;
                        else
                            out[(size_t)(out_first + r0 + i) * n_total + n0 + c] = v;
                    }
    }
#endif
}

/* The local floats of the lane tile's sums (zp_reduce_lanes: ZP_GEMM_ACC x 16 per work-item). */
#if ZP_GEMM_TILE == 0
#define ZP_GEMM_RED_FLOATS (ZP_GEMM_COLS_PER_WG * ZP_GEMM_ROWS_PER_PASS * ZP_LANES)
#endif

#endif
