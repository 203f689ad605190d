/* The block tile (ZP_GEMM_TILE == 1): the grouped MXFP4 GEMV with ONE WORK-ITEM PER 32-ELEMENT
 * BLOCK instead of one per logical lane (zp_gemm.h's lane tile). Same work-group shape
 * (ZP_LANES x ZP_GEMM_ITEMS_Y), same grid, same column tile per work-group, same results bit
 * for bit: only the mapping of CONTRACT §4 onto work-items differs.
 *
 * Why: on a device where fp32 is not much faster than memory (the H200, docs/notes/h200-mxfp4-gemv.md)
 * the lane tile is bound by instructions per element. Here a work-item keeps its block's
 * activations in registers as f32 for every column set of the tile, walks
 * ZP_GEMM_COLS_PER_ITEM columns in lockstep (COLS x ROWS independent fma chains), prefetches the
 * next column set's code and scale bytes, and decodes E2M1 through a 16-entry f32 table in
 * local memory indexed by byte offsets (conflict-free: 16 words in 16 banks).
 *
 * §4 mapping, per column set (ZP_GEMM_COLS_PER_ITEM columns) and chunk of P blocks:
 *   1. item (s, j) computes q[b] = block_partial(b) * scale(b) for b = chunk + j, every column
 *      c and row i of the set of slot s, into qbuf (local);
 *   2. 16 items per (slot, column, row) add q[b] for their lane l = b mod 16 in ascending b
 *      into a running lane sum (P is a multiple of 16 and chunks ascend, so this is exactly
 *      §4's acc[l] += q[b] for b = l, l+16, ...);
 *   3. after the last chunk, one item per (column, row) applies the fixed tree 8, 4, 2, 1 to the
 *      16 lane sums in registers and writes bf16(dot) (or, paired, the SwiGLU of its pair).
 * P = min(items, K/32 rounded up to 16) blocks per chunk; S = items / P column sets run side by
 * side (S = 2 for gemm2 at I = 2048 with 128 items). One barrier per step (zp_block_gemm). */
#ifndef ZP_GEMM_BLOCK_H
#define ZP_GEMM_BLOCK_H

#include "zp_platform.h"
#include "zp_bf16.h"
#include "zp_mxfp4.h"
#include "zp_swiglu.h"
#include "zp_gemm_tile.h"

#define ZP_BLK_ITEMS (ZP_LANES * ZP_GEMM_ITEMS_Y)
#define ZP_BLK_SETS ZP_GEMM_ITEMS_Y /* column sets of ZP_GEMM_COLS_PER_ITEM per tile */
#define ZP_BLK_CHAINS (ZP_GEMM_COLS_PER_ITEM * ZP_GEMM_ROWS_PER_PASS)
/* local floats: qbuf and the lane sums (ZP_BLK_CHAINS x items each), each twice (step parity),
 * then the E2M1 table */
#define ZP_GEMM_RED_FLOATS (4 * ZP_BLK_CHAINS * ZP_BLK_ITEMS + 16)

/* E2M1 of the nibble at bit `sh` of word w from the local table, addressed by byte offset. */
#define ZP_BLK_E2M1(tbl, w, sh) \
    (*(local const float*)((local const uchar*)(tbl) + ((sh) >= 2 ? ((w) >> ((sh)-2)) & 0x3Cu : ((w) << 2) & 0x3Cu)))

/* This item's code and scale bytes for step `st` (column set st / chunks, chunk st % chunks):
 * item (s, j) of a live slot reads block chunk * p_blocks + j of each of its set's columns. */
ZP_FN void zp_blk_load(uint4* codes, uint* scales, int st, int chunks, int slots, int p_blocks, int s, int j, int kb,
                       int tile, int n_total, int paired, int intermediate, int layout, int le,
                       const global uchar* w_blocks, const global uchar* w_scales) {
    const int set = (st / chunks) * slots + s;
    const int b = (st % chunks) * p_blocks + j;
    const bool live = s < slots && b < kb;
    for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c) {
        int n = set < ZP_BLK_SETS ? zp_tile_column(tile * ZP_GEMM_COLS_PER_WG + set * ZP_GEMM_COLS_PER_ITEM + c,
                                                   n_total, paired, intermediate, layout)
                                  : -1;
        n = n < 0 ? 0 : n; /* outside the matrix: any row, never written */
        const size_t row = (size_t)le * n_total + n;
        codes[c] = live ? vload4(b, (const global uint*)(w_blocks + row * (size_t)kb * 16)) : (uint4)(0u);
        scales[c] = live ? (uint)w_scales[row * kb + b] : 1u;
    }
}

/* Step 3 for the column sets set0 .. set0 + slots - 1: one item per (slot, column, row) — or,
 * paired, per (slot, pair, row) — applies the tree to its 16 lane sums and writes the output. */
ZP_FN void zp_blk_epilogue(local const float* sums, int t, int tuples, int set0, int rows, int tile, int n_total,
                           int paired, int intermediate, float limit, float up_bias, global const ushort* silu,
                           global ushort* out, local ushort* local_out, int local_out_on, int out_row0) {
    for (int v = t; v < tuples / ZP_LANES; v += ZP_BLK_ITEMS) {
        const int i = v % ZP_GEMM_ROWS_PER_PASS;
        const int c = (v / ZP_GEMM_ROWS_PER_PASS) % ZP_GEMM_COLS_PER_ITEM;
        const int set = set0 + v / ZP_BLK_CHAINS;
        if (i >= rows || set >= ZP_BLK_SETS || (paired && (c & 1))) continue;
        const int lc = tile * ZP_GEMM_COLS_PER_WG + set * ZP_GEMM_COLS_PER_ITEM + c;
        zp_tile_store(sums + v * ZP_LANES, sums + (v + ZP_GEMM_ROWS_PER_PASS) * ZP_LANES, lc,
                      lc - tile * ZP_GEMM_COLS_PER_WG, (size_t)(out_row0 + i), n_total, paired, intermediate, limit,
                      up_bias, silu, out, local_out, local_out_on);
    }
}

/* Column tile `tile` (ZP_GEMM_COLS_PER_WG logical columns) of expert le for activation rows
 * a + aoff(r), r < nrows (zp_pass_offsets). paired == 0: out[out_first + r][n] = bf16(dot) for
 * n < n_total. paired == 1 (n_total = 2 * intermediate): out[out_first + r][pair] = SwiGLU of
 * the pair's bf16 gate and up dots (§5.4-5.5; out is act, [.., intermediate]). Source rows and
 * local_out as zp_pass_offsets / zp_gemm_group (paired never writes local). Every work-item
 * of the work-group must call it (barriers). `red`: local float[ZP_GEMM_RED_FLOATS].
 *
 * One barrier per step: qbuf and sums are double-buffered by step parity, and the tree of a
 * step runs in the next step, beside its lane sums. Step st writes qbuf[st & 1] before barrier
 * st and reads it after; it is written again in step st + 2, after barrier st + 1. Step st's
 * lane sums write sums[st & 1] after barrier st; the tree reads them after barrier st + 1, and
 * they are written again after barrier st + 2. */
ZP_FN void zp_block_gemm(const global uchar* w_blocks, const global uchar* w_scales, int le, int n_total, int k,
                         int tile, const global ushort* a, const global int* src_rows, local const int* local_rows,
                         int local_rows_on, int a_first, int nrows, int paired, int intermediate, int layout,
                         global const ushort* silu, float limit, float up_bias, global ushort* out,
                         local ushort* local_out, int local_out_on, int out_first, local float* red) {
    const int t = (int)(get_local_id(1) * ZP_LANES + get_local_id(0));
    local float* tbl = red + 4 * ZP_BLK_CHAINS * ZP_BLK_ITEMS; /* E2M1 values */
    if (t < 16) tbl[t] = kZpE2M1[t];
    barrier(CLK_LOCAL_MEM_FENCE);

    const int kb = k / 32;
    const int p_blocks = min(ZP_BLK_ITEMS, (kb + 15) & ~15); /* blocks per chunk, a multiple of 16 */
    const int slots = ZP_BLK_ITEMS / p_blocks;               /* column sets side by side */
    const int chunks = (kb + p_blocks - 1) / p_blocks;
    const int set_steps = (ZP_BLK_SETS + slots - 1) / slots;
    const int steps = set_steps * chunks;
    const int s = t / p_blocks, j = t - s * p_blocks;
    const int tuples = slots * ZP_BLK_CHAINS * ZP_LANES; /* lane sums: [slot][c][i][lane] */

    for (int r0 = 0; r0 < nrows; r0 += ZP_GEMM_ROWS_PER_PASS) {
        const int rows = min(nrows - r0, ZP_GEMM_ROWS_PER_PASS);
        int aoff[ZP_GEMM_ROWS_PER_PASS];
        zp_pass_offsets(aoff, src_rows, local_rows, local_rows_on, a_first, r0, rows, k);

        uint4 codes[ZP_GEMM_COLS_PER_ITEM], next_codes[ZP_GEMM_COLS_PER_ITEM];
        uint scales[ZP_GEMM_COLS_PER_ITEM], next_scales[ZP_GEMM_COLS_PER_ITEM];
        zp_blk_load(codes, scales, 0, chunks, slots, p_blocks, s, j, kb, tile, n_total, paired, intermediate, layout,
                    le, w_blocks, w_scales);

        float af[ZP_GEMM_ROWS_PER_PASS][32];
        float lane_sum[ZP_BLK_CHAINS];
        for (int x = 0; x < ZP_BLK_CHAINS; ++x) lane_sum[x] = 0.0f;

        for (int st = 0; st < steps; ++st) {
            const int chunk = st % chunks;
            local float* qbuf = red + (st & 1) * ZP_BLK_CHAINS * ZP_BLK_ITEMS;       /* [chain][item] */
            local float* sums = red + (2 + (st & 1)) * ZP_BLK_CHAINS * ZP_BLK_ITEMS; /* [slot][c][i][lane] */
            if (st + 1 < steps)
                zp_blk_load(next_codes, next_scales, st + 1, chunks, slots, p_blocks, s, j, kb, tile, n_total, paired,
                            intermediate, layout, le, w_blocks, w_scales);

            /* activations of this item's block: once when one chunk covers the row */
            const int b = chunk * p_blocks + j;
            if ((st == 0 || chunks > 1) && s < slots && b < kb)
                for (int i = 0; i < ZP_GEMM_ROWS_PER_PASS; ++i)
                    if (i < rows) {
                        const global uint* ai = (const global uint*)(a + aoff[i]) + 16 * b;
                        for (int w = 0; w < 16; ++w) {
                            const uint aw = ai[w];
                            af[i][2 * w] = zp_bf16_lo(aw);
                            af[i][2 * w + 1] = zp_bf16_hi(aw);
                        }
                    }

            /* 1. q[b] for every (column, row) chain of this item's set */
            if (s < slots && b < kb) {
                float p[ZP_GEMM_COLS_PER_ITEM][ZP_GEMM_ROWS_PER_PASS];
                for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c)
                    for (int i = 0; i < ZP_GEMM_ROWS_PER_PASS; ++i) p[c][i] = 0.0f;
#pragma unroll
                for (int e = 0; e < 32; ++e) {
                    for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c) {
                        const uint w = e < 8 ? codes[c].s0 : e < 16 ? codes[c].s1 : e < 24 ? codes[c].s2 : codes[c].s3;
                        const float v = ZP_BLK_E2M1(tbl, w, 4 * (e & 7));
                        for (int i = 0; i < ZP_GEMM_ROWS_PER_PASS; ++i)
                            if (i < rows) p[c][i] = fma(v, af[i][e], p[c][i]);
                    }
                }
                for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c) {
                    const float scale = zp_e8m0(scales[c]);
                    for (int i = 0; i < ZP_GEMM_ROWS_PER_PASS; ++i)
                        if (i < rows) qbuf[(c * ZP_GEMM_ROWS_PER_PASS + i) * ZP_BLK_ITEMS + t] = p[c][i] * scale;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);

            /* 2. lane sums: tuple u = ((slot * COLS + c) * ROWS + i) * 16 + lane */
            const int valid = min(p_blocks, kb - chunk * p_blocks);
            for (int x = 0; x < ZP_BLK_CHAINS; ++x) {
                const int u = t + x * ZP_BLK_ITEMS;
                const int chain = (u / ZP_LANES) % ZP_BLK_CHAINS;
                /* a dead row of the pass (chain % ROWS >= rows) sums nothing */
                if (u < tuples && chain % ZP_GEMM_ROWS_PER_PASS < rows) {
                    const int lane = u & (ZP_LANES - 1);
                    const int slot = u / (ZP_LANES * ZP_BLK_CHAINS);
                    local const float* q = qbuf + chain * ZP_BLK_ITEMS + slot * p_blocks;
                    /* a fixed trip count (the loads are independent; only the adds chain) */
                    float acc = lane_sum[x];
#pragma unroll
                    for (int m = 0; m < ZP_BLK_ITEMS / ZP_LANES; ++m)
                        if (lane + m * ZP_LANES < valid) acc = acc + q[lane + m * ZP_LANES];
                    lane_sum[x] = chunk == chunks - 1 ? 0.0f : acc;
                    if (chunk == chunks - 1) sums[u] = acc;
                }
            }

            /* 3. the previous step's tree, when it ended its column sets */
            if (st > 0 && (st - 1) % chunks == chunks - 1)
                zp_blk_epilogue(red + (2 + ((st - 1) & 1)) * ZP_BLK_CHAINS * ZP_BLK_ITEMS, t, tuples,
                                ((st - 1) / chunks) * slots, rows, tile, n_total, paired, intermediate, limit, up_bias,
                                silu, out, local_out, local_out_on, out_first + r0);
            if (st + 1 < steps)
                for (int c = 0; c < ZP_GEMM_COLS_PER_ITEM; ++c) {
                    codes[c] = next_codes[c];
                    scales[c] = next_scales[c];
                }
        }
        /* the last step's tree */
        barrier(CLK_LOCAL_MEM_FENCE);
        zp_blk_epilogue(red + (2 + ((steps - 1) & 1)) * ZP_BLK_CHAINS * ZP_BLK_ITEMS, t, tuples,
                        ((steps - 1) / chunks) * slots, rows, tile, n_total, paired, intermediate, limit, up_bias, silu,
                        out, local_out, local_out_on, out_first + r0);
    }
}

#endif
