/* gemm2_loader_fused, the preserved negative experiment (DESIGN.md): gemm2 whose A loader
 * applies SwiGLU to gate_up, so act is never materialised and no swiglu launch is needed.
 * Every output tile recomputes the activation of its rows (I SwiGLUs per row per tile,
 * ceil(H / COLS) tiles), which is the cost this variant exists to show.
 * Grid as gemm2_mxfp4_m2.cl. The lane tile makes a pass's activations into act_tile (local
 * ushort[ZP_GEMM_ROWS_PER_PASS * I]) and reads them from there; the stream tile makes them in its
 * own staging, chunk by chunk (ZP_ST_A_SWIGLU, zp_gemv_stream.h), and leaves act_tile unused. */
#if ZP_GEMM_TILE == 2
#define ZP_ST_A_SWIGLU 1
#endif
#include "common/zp_gemm.h"
#include "common/zp_swiglu.h"

kernel ZP_GEMM_ATTRS void gemm2_mxfp4_m2_loader_fused(global const ushort* gate_up, /* [M*K, 2I] */
                                                      global const ushort* silu,    /* [65536] */
                                                      global const uchar* w2_blocks, global const uchar* w2_scales,
                                                      global const int* route_info, global const int* groups,
                                                      global ushort* y, /* [M*K, H] */
                                                      int hidden, int intermediate, float limit, float up_bias,
                                                      int layout, local ushort* act_tile) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int g = get_group_id(1);
    if (g >= route_info[ZP_INFO_GROUPS]) return;
    const global int* grp = groups + ZP_GROUP_WORDS * g;
    const int le = grp[0], first = grp[1], nrows = grp[2];
#if ZP_GEMM_TILE == 2
    zp_carry none = zp_no_carry();
    zp_stream_gemm(w2_blocks, w2_scales, le, hidden, intermediate, get_group_id(0), gate_up, 0, 0, 0, first, nrows, 0,
                   intermediate, layout, silu, limit, up_bias, y, 0, 0, first, &none, red);
#else
    const uint lane = get_local_id(0);
    const int lin = get_local_id(1) * ZP_LANES + lane;
    const int n0 = zp_item_first_col(get_group_id(0));
    const global uchar* wc[ZP_GEMM_COLS_PER_ITEM];
    const global uchar* ws[ZP_GEMM_COLS_PER_ITEM];
    for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c) {
        const int n = n0 + c < hidden ? n0 + c : 0;
        wc[c] = zp_weight_codes(w2_blocks, le, hidden, n, intermediate);
        ws[c] = zp_weight_scales(w2_scales, le, hidden, n, intermediate);
    }
    const uint kb = n0 < hidden ? (uint)intermediate / 32u : 0u;
    local float* red_item = red + get_local_id(1) * (ZP_GEMM_ACC * ZP_LANES);
    for (int r0 = 0; r0 < nrows; r0 += ZP_GEMM_ROWS_PER_PASS) {
        const int rows = min(nrows - r0, ZP_GEMM_ROWS_PER_PASS);
        for (int e = lin; e < rows * intermediate; e += ZP_LANES * ZP_GEMM_ITEMS_Y) {
            const int i = e / intermediate, c = e - i * intermediate;
            const global ushort* gu = gate_up + (size_t)(first + r0 + i) * 2 * intermediate;
            act_tile[e] = zp_swiglu(gu[zp_gate_col(c, intermediate, layout)], gu[zp_up_col(c, intermediate, layout)],
                                    limit, up_bias, silu);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        int aoff[ZP_GEMM_ROWS_PER_PASS];
        for (int i = 0; i < ZP_GEMM_ROWS_PER_PASS; ++i) aoff[i] = min(i, rows - 1) * intermediate;
        float acc[ZP_GEMM_ACC];
        zp_lane_dot_local(wc, ws, kb, lane, act_tile, aoff, rows, acc);
        zp_reduce_lanes(red_item, lane, acc, rows);
        if (lane == 0)
            for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c)
                if (n0 + c < hidden)
                    for (int i = 0; i < rows; ++i)
                        y[(size_t)(first + r0 + i) * hidden + n0 + c] =
                            zp_f32_to_bf16(acc[c * ZP_GEMM_ROWS_PER_PASS + i]);
        barrier(CLK_LOCAL_MEM_FENCE); /* act_tile is rewritten by the next pass */
    }
#endif
}
