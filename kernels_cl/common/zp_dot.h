/* CONTRACT §4, the reduction contract, split into the pieces every GEMM kernel tiles:
 *   zp_block_partial   one block's 32-step sequential fma chain;
 *   zp_lane_dot_*      one logical lane l: q[b] = p * scale, acc += q[b] for b = l, l+16, ...;
 *   zp_reduce_lanes    the fixed tree 8, 4, 2, 1 over the 16 lanes (result in lane 0).
 * Mapping: 16 work-items per output column, work-item l IS logical lane l, so each
 * lane's running sum is formed in exactly the contract's order without any reordering. */
#ifndef ZP_DOT_H
#define ZP_DOT_H

#include "zp_platform.h"
#include "zp_bf16.h"
#include "zp_mxfp4.h"

/* Elements 2t and 2t+1 of the block: code nibbles (cw >> sh) and (cw >> sh+4), activations
 * in the low and high half of the packed word aw (32 BF16 = 16 words = 4 uint4). */
#define ZP_FMA_PAIR(cw, sh, aw)                        \
    p = fma(zp_e2m1((cw) >> (sh)), zp_bf16_lo(aw), p); \
    p = fma(zp_e2m1((cw) >> ((sh) + 4)), zp_bf16_hi(aw), p);
#define ZP_FMA_WORD(cw, a0, a1, a2, a3) \
    ZP_FMA_PAIR(cw, 0, a0) ZP_FMA_PAIR(cw, 8, a1) ZP_FMA_PAIR(cw, 16, a2) ZP_FMA_PAIR(cw, 24, a3)

/* p = +0; p = fma(e2m1(code[j]), a[j], p) for j = 0..31, in order. `c` holds the 16 code
 * bytes (low nibble = even element), a0..a3 the 32 BF16 activations of the block. */
ZP_FN float zp_block_partial(uint4 c, uint4 a0, uint4 a1, uint4 a2, uint4 a3) {
    float p = 0.0f;
    ZP_FMA_WORD(c.s0, a0.s0, a0.s1, a0.s2, a0.s3)
    ZP_FMA_WORD(c.s1, a1.s0, a1.s1, a1.s2, a1.s3)
    ZP_FMA_WORD(c.s2, a2.s0, a2.s1, a2.s2, a2.s3)
    ZP_FMA_WORD(c.s3, a3.s0, a3.s1, a3.s2, a3.s3)
    return p;
}

/* Logical lane `lane` of dot(a_i, row_c) for up to ZP_GEMM_ROWS_PER_PASS activation rows
 * a_i = abase + aoff[i] (i < nrows) and ZP_GEMM_COLS_PER_ITEM weight rows (wc[c]: kb blocks
 * x 16 bytes, ws[c]: kb bytes). Each activation block is loaded once for all columns and
 * each weight block once for all rows (the M2 tiling). acc[c * ROWS + i] = +0, then
 * acc += q[b] for b = lane, lane + 16, ... ascending. */
#define ZP_DEFINE_LANE_DOT(NAME, ASPACE)                                                                     \
    ZP_FN void NAME(const global uchar* const* wc, const global uchar* const* ws, uint kb, uint lane,        \
                    ASPACE const ushort* abase, const int* aoff, int nrows, float* acc) {                    \
        for (int j = 0; j < ZP_GEMM_ACC; ++j) acc[j] = 0.0f;                                                 \
        for (uint b = lane; b < kb; b += ZP_LANES) {                                                         \
            uint4 a[ZP_GEMM_ROWS_PER_PASS][4];                                                               \
            for (int i = 0; i < ZP_GEMM_ROWS_PER_PASS; ++i) {                                                \
                if (i < nrows) {                                                                             \
                    ASPACE const uint* ai = (ASPACE const uint*)(abase + aoff[i]) + 16 * b;                  \
                    a[i][0] = vload4(0, ai);                                                                 \
                    a[i][1] = vload4(1, ai);                                                                 \
                    a[i][2] = vload4(2, ai);                                                                 \
                    a[i][3] = vload4(3, ai);                                                                 \
                }                                                                                            \
            }                                                                                                \
            for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c) {                                                \
                const uint4 codes = vload4(b, (const global uint*)wc[c]);                                    \
                const float scale = zp_e8m0(ws[c][b]);                                                       \
                for (int i = 0; i < ZP_GEMM_ROWS_PER_PASS; ++i) {                                            \
                    if (i < nrows) {                                                                         \
                        const float q = zp_block_partial(codes, a[i][0], a[i][1], a[i][2], a[i][3]) * scale; \
                        acc[c * ZP_GEMM_ROWS_PER_PASS + i] = acc[c * ZP_GEMM_ROWS_PER_PASS + i] + q;         \
                    }                                                                                        \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }
ZP_DEFINE_LANE_DOT(zp_lane_dot_global, global)
ZP_DEFINE_LANE_DOT(zp_lane_dot_local, local)

/* The fixed tree: for o in 8, 4, 2, 1: acc[l] = acc[l] + acc[l + o] (l < o), for each of
 * the ZP_GEMM_ACC sums of the pass's first `rows` rows (the others are dead: skipped). Lane 0 ends with every dot().
 * Every work-item of the work-group must call it (barriers). `red` is this work-item row's ZP_GEMM_ACC x 16 floats of
 * local memory (unused with sub-groups). Never sub_group_reduce_add: its order is unspecified (§4). */
ZP_FN void zp_reduce_lanes(local float* red, uint lane, float* acc, int rows) {
#if ZP_SUBGROUPS
    (void)red;
    for (int j = 0; j < ZP_GEMM_ACC; ++j) {
        if (j % ZP_GEMM_ROWS_PER_PASS >= rows) continue; /* a dead row of the pass */
        float v = acc[j];
        /* lane l < o receives lane l ^ o = l + o: acc[l] + acc[l + o]. Lanes >= o compute
         * sums nobody reads. xor, not shuffle_down: PoCL's cl_intel_subgroups has no float
         * intel_sub_group_shuffle_down (the build fails to link there). */
        v = v + intel_sub_group_shuffle_xor(v, 8u);
        v = v + intel_sub_group_shuffle_xor(v, 4u);
        v = v + intel_sub_group_shuffle_xor(v, 2u);
        v = v + intel_sub_group_shuffle_xor(v, 1u);
        acc[j] = v;
    }
#else
    for (int j = 0; j < ZP_GEMM_ACC; ++j)
        if (j % ZP_GEMM_ROWS_PER_PASS < rows) red[j * ZP_LANES + lane] = acc[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint o = ZP_LANES / 2; o >= 1u; o >>= 1) {
        if (lane < o)
            for (int j = 0; j < ZP_GEMM_ACC; ++j)
                if (j % ZP_GEMM_ROWS_PER_PASS < rows)
                    red[j * ZP_LANES + lane] = red[j * ZP_LANES + lane] + red[j * ZP_LANES + lane + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* Only lane 0 reads slot 0, and only lane 0 writes it next: no barrier needed before reuse. */
    if (lane == 0)
        for (int j = 0; j < ZP_GEMM_ACC; ++j)
            if (j % ZP_GEMM_ROWS_PER_PASS < rows) acc[j] = red[j * ZP_LANES];
#endif
}

#endif
