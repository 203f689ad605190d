/* The stream tile (ZP_GEMM_TILE == 2): the grouped MXFP4 GEMV as a stream of weight rows, one
 * §4 LANE GROUP per work-item. Same work-group shape (ZP_LANES x ZP_GEMM_ITEMS_Y), same grid,
 * same column tile per work-group and the same bits as the lane tile (zp_gemm.h); only the
 * mapping of CONTRACT §4 onto work-items differs.
 *
 * Mapping. S = ZP_STREAM_SPLIT work-items share a column; work-item s of them owns the L = 16/S
 * lanes s, s + S, s + 2S, ... of each of its ZP_STREAM_COLS columns, so in iteration j its li-th
 * load is block 16 j + s + S li of the row: the S work-items of a column (consecutive in t = g S
 * + s) read S consecutive 16-byte blocks with each load, whole sectors in one request. Its
 * L x COLS x ROWS block chains (32 fmas each, §4's order inside a block) are independent of each
 * other; only lane l's running sum acc[l] += q[b] chains, and the work-item adds each lane's q[b]
 * in ascending b, which is exactly §4. ZP_STREAM_COLS = S * ZP_GEMM_COLS_PER_ITEM / 16, so
 * T = 16 * ITEMS_Y work-items cover the tile's ZP_GEMM_COLS_PER_WG columns exactly.
 *
 * No barrier inside the K loop's iterations: the activations of a chunk of ZP_STREAM_CHUNK
 * blocks are staged once per work-group in local memory as they are, BF16 pairs (padded to 20
 * words per block so that work-items of different lane groups hit different banks; each element
 * is widened to f32 where it is used), then every work-item streams its rows with the next
 * iteration's code and scale bytes in flight. At the end the lane sums go
 * to local memory, one barrier, and one work-item per (column, row) applies the fixed tree
 * 8, 4, 2, 1 and writes bf16(dot) (or, paired, the SwiGLU of its gate/up pair).
 *
 * The tree in registers (ZP_ST_REG_TREE: with Intel sub-groups, whose 16 lanes are one row of
 * the work-group, so the S work-items of a column are consecutive lanes of one sub-group, or
 * with S = 1; and an even ZP_STREAM_COLS, so that a gate/up pair's columns are one work-item's):
 * a work-item first folds its own lanes (the tree's steps o >= S: lane s + S li
 * takes lane s + S (li + o / S)), then the steps o < S by intel_sub_group_shuffle_xor(o) among
 * the column's S work-items. Lane l of step o thus adds lane l + o (or, where l >= o, computes
 * the same sum with its operands swapped: the same bits), so every work-item of the column ends
 * with exactly the tree's dot: no lane sums in local memory, no barrier, and the column's S
 * work-items share its stores. Same bits as the local-memory tree.
 *
 * Compact M2 at run time: a pass with one live row runs the 1-row body (no dead row's loads,
 * fmas or lane sums), a pass with two or more the ZP_GEMM_ROWS_PER_PASS-row body; each weight
 * block is read once per pass.
 *
 * From unit to unit (ZP_STREAM_CARRY, kernel A's persistent work-groups): a unit loads the first
 * iteration of the work-group's next unit after its own last one, and that unit starts with it
 * (zp_carry), so a unit's first weights are not loaded only after its activations are staged.
 *
 * E2M1 decode (ZP_E2M1_DECODE, all exact): 0 the __constant table, 1 bit arithmetic, 3 a shift
 * into the f32 subnormal range and one multiply by 2^126 (exact: the device keeps subnormals, §2),
 * 4 a 16-entry f32 table in local memory addressed by byte offsets, those of a word's 8 nibbles
 * masked at once, 6 = 4 with each byte offset extracted by ZP_BYTE (zp_platform.h: one byte
 * permute on NVIDIA, elsewhere the same shift and mask). 2 (the table with one shift and mask per
 * nibble) and 5 (half the nibbles by 4, half by 3) decided nothing on any device and are gone
 * (docs/perf.md "What does each tuning knob decide?").
 *
 * ZP_STREAM_ABLATION (benchmarks only: the results are WRONG unless 0) removes work from the
 * back: 1 = no lane sums and no tree (each block's q is stored as the dot), 2 = and no fma (the
 * decoded weights are summed), 3 = and no decode (the code words are summed as integers), i.e.
 * loads only; and 4 removes the front: the whole kernel without its weight loads, on code and
 * scale bytes made from each block's index (the compute alone). zp-chain-bench --ablation reports
 * each stage's time. */
#ifndef ZP_GEMV_STREAM_H
#define ZP_GEMV_STREAM_H

#include "zp_platform.h"
#include "zp_bf16.h"
#include "zp_mxfp4.h"
#include "zp_swiglu.h"
#include "zp_gemm_tile.h"

#ifndef ZP_STREAM_ABLATION
#define ZP_STREAM_ABLATION 0
#endif
/* ZP_STREAM_PREFETCH_ONE_ROW: the 1-row body's iterations of code rows in flight; 0 = ZP_STREAM_PREFETCH */
#if defined(ZP_STREAM_PREFETCH_ONE_ROW) && ZP_STREAM_PREFETCH_ONE_ROW == 0
#undef ZP_STREAM_PREFETCH_ONE_ROW
#endif
#ifndef ZP_STREAM_PREFETCH_ONE_ROW
#define ZP_STREAM_PREFETCH_ONE_ROW ZP_STREAM_PREFETCH
#endif

/* ZP_STREAM_CARRY (1): kernel A's persistent work-groups (two_launch_a, one_launch's first phase)
 * load the first iteration of their next unit's code and scale bytes right after this unit's last
 * iteration, into registers that the next unit takes instead of loading them after it has staged
 * its activations (zp_carry): that load's latency runs under this unit's tree and stores and the
 * next unit's staging rather than after them. Only with one iteration in flight in both bodies
 * (the carry's registers are those the second iteration would take), and never in ablation 4
 * (no weight loads). Kernel B does not carry: its body spilled with it on NVIDIA (docs/perf.md
 * "The next unit's first loads in flight"). */
#ifndef ZP_STREAM_CARRY
#define ZP_STREAM_CARRY 0
#endif
#define ZP_ST_CARRY \
    (ZP_STREAM_CARRY && ZP_STREAM_PREFETCH == 1 && ZP_STREAM_PREFETCH_ONE_ROW == 1 && ZP_STREAM_ABLATION != 4)

#define ZP_ST_ITEMS (ZP_LANES * ZP_GEMM_ITEMS_Y)
#define ZP_ST_L (ZP_LANES / ZP_STREAM_SPLIT)         /* lanes per work-item */
#define ZP_ST_GROUPS (ZP_ST_ITEMS / ZP_STREAM_SPLIT) /* column groups per tile */
/* words per staged block: its 16 BF16 pairs + 4, so that the 8 work-items of a 16-byte load phase
 * (8 consecutive blocks: 20 words apart) hit different banks */
#define ZP_ST_PAD 20
#if (ZP_SUBGROUPS || ZP_STREAM_SPLIT == 1) && ZP_STREAM_COLS % 2 == 0
#define ZP_ST_REG_TREE 1
#define ZP_ST_SUMS 0 /* no lane sums in local memory */
#else
#define ZP_ST_REG_TREE 0
#define ZP_ST_SUMS (ZP_GEMM_COLS_PER_WG * ZP_GEMM_ROWS_PER_PASS * ZP_LANES)
#endif
#define ZP_ST_ACT (ZP_GEMM_ROWS_PER_PASS * ZP_STREAM_CHUNK * ZP_ST_PAD)
/* local floats: the lane sums [column][row][lane], the staged activations [row][block][36], the
 * E2M1 table */
#define ZP_GEMM_RED_FLOATS (ZP_ST_SUMS + ZP_ST_ACT + 16)

#if ZP_STREAM_COLS < 1 || ZP_STREAM_COLS * ZP_ST_GROUPS != ZP_GEMM_COLS_PER_WG || ZP_LANES % ZP_STREAM_SPLIT != 0
#error "the stream tile needs stream_split to divide 16 and stream_split * cols_per_item to be a multiple of 16"
#endif
#if ZP_STREAM_CHUNK % 16 != 0
#error "ZP_STREAM_CHUNK must be a multiple of 16 blocks"
#endif

/* E2M1 of nibble k (a literal) of code word w, whose byte offsets lo (even nibbles: (w << 2) &
 * 0x3C3C3C3C) and hi (odd ones: (w >> 2) & 0x3C3C3C3C) the byte-table decodes read. The local
 * table is 16 f32 at tbl, addressed by byte offset (code * 4). */
#define ZP_ST_LT(tbl, off) (*(local const float*)((local const uchar*)(tbl) + (off)))
/* nibble to bits 28..31, arithmetic shift by 6: sign at 31 (and 25..30), magnitude at 22..24:
 * the f32 with those bits is e2m1 * 2^-126 (codes 0 and 1 fall in the subnormal range). */
#define ZP_ST_MUL(w, k) (as_float(((int)((w) << (28 - 4 * (k))) >> 6) & (int)0x81C00000) * 0x1p126f)
#if ZP_E2M1_DECODE == 3
#define ZP_ST_NIB(w, lo, hi, k, tbl) ZP_ST_MUL(w, k)
#elif ZP_E2M1_DECODE == 4 /* every nibble through the table, one byte extract each */
#define ZP_ST_NIB(w, lo, hi, k, tbl) ZP_ST_LT(tbl, ZP_BYTE_SHIFT(((k)&1) ? (hi) : (lo), (k) >> 1))
#elif ZP_E2M1_DECODE == 6 /* 4 through the platform's byte extraction */
#define ZP_ST_NIB(w, lo, hi, k, tbl) ZP_ST_LT(tbl, ZP_BYTE(((k)&1) ? (hi) : (lo), (k) >> 1))
#else
#define ZP_ST_NIB(w, lo, hi, k, tbl) zp_e2m1((w) >> (4 * (k)))
#endif

/* Code and scale bytes of this work-item's L blocks b0, b0 + S, ... of one iteration for each of
 * its columns (rows are 16-byte aligned: whole uint4 loads); blocks at or past kb read as zero
 * codes with scale byte 127 (never summed). The columns' rows are 32-bit block offsets wrow[c]
 * from the expert's first row (wc, ws): one pointer pair for all columns instead of one per
 * column. Macros, so that the arrays stay the caller's registers rather than memory behind a
 * pointer. ZP_ST_CODE and ZP_ST_SCALE are one (column, block)'s, whose bytes ablation 4 makes up
 * instead; ZP_ST_EACH_BLOCK runs STEP for each (column c_, block b_) of an iteration. */
#if ZP_STREAM_ABLATION == 4 /* no weight loads: bytes made from the block index (a few integer ops) */
#define ZP_ST_MADE(c, b) ((wrow[c] + (uint)(b)) * 0x9E3779B9u)
#define ZP_ST_CODE(c, b)                                                                      \
    (uint4)(ZP_ST_MADE(c, b), ZP_ST_MADE(c, b) ^ 0x5BD1E995u, ZP_ST_MADE(c, b) + 0x6A09E667u, \
            ZP_ST_MADE(c, b) ^ (ZP_ST_MADE(c, b) >> 13))
#define ZP_ST_SCALE(c, b) (120u + (ZP_ST_MADE(c, b) >> 29))
#else
#define ZP_ST_CODE(c, b) ((b) < kb ? ((const global uint4*)wc)[wrow[c] + (b)] : (uint4)(0u))
#define ZP_ST_SCALE(c, b) ((b) < kb ? (uint)ws[wrow[c] + (b)] : 127u)
#endif
#define ZP_ST_EACH_BLOCK(b0, STEP)                      \
    for (int c_ = 0; c_ < ZP_STREAM_COLS; ++c_)         \
        for (int l_ = 0; l_ < ZP_ST_L; ++l_) {          \
            const int b_ = (b0) + l_ * ZP_STREAM_SPLIT; \
            STEP                                        \
        }
#define ZP_ST_LOAD_CODES(codes, b0) ZP_ST_EACH_BLOCK(b0, codes[c_][l_] = ZP_ST_CODE(c_, b_);)
#define ZP_ST_LOAD_SCALES(scales, b0) ZP_ST_EACH_BLOCK(b0, scales[c_][l_] = ZP_ST_SCALE(c_, b_);)
#define ZP_ST_LOAD(codes, scales, b0) \
    ZP_ST_EACH_BLOCK(b0, codes[c_][l_] = ZP_ST_CODE(c_, b_); scales[c_][l_] = ZP_ST_SCALE(c_, b_);)

/* Block li of every column of this work-item for NR rows: q[c][i] = block_partial * scale (§4),
 * one 32-step chain per (column, row), the columns' chains interleaved element by element so
 * that each activation is read once for all of them (act_b: the staged block of row 0; row i at
 * + i * ZP_STREAM_CHUNK * ZP_ST_PAD). */
#define ZP_ST_BLOCKS(NR, q, codes, scales, li, act_b, tbl)               \
    do {                                                                 \
        float p_[ZP_STREAM_COLS][NR];                                    \
        for (int c_ = 0; c_ < ZP_STREAM_COLS; ++c_)                      \
            for (int i_ = 0; i_ < NR; ++i_) p_[c_][i_] = 0.0f;           \
        ZP_ST_WORDS(NR, p_, codes, li, s0, 0, act_b, tbl)                \
        ZP_ST_WORDS(NR, p_, codes, li, s1, 8, act_b, tbl)                \
        ZP_ST_WORDS(NR, p_, codes, li, s2, 16, act_b, tbl)               \
        ZP_ST_WORDS(NR, p_, codes, li, s3, 24, act_b, tbl)               \
        for (int c_ = 0; c_ < ZP_STREAM_COLS; ++c_) {                    \
            const float s_ = zp_e8m0(scales[c_][li]);                    \
            for (int i_ = 0; i_ < NR; ++i_) q[c_][i_] = p_[c_][i_] * s_; \
        }                                                                \
    } while (0)
/* Elements e0 .. e0 + 7 (the 8 nibbles of code word sX of each column, low nibble first). */
#define ZP_ST_WORDS(NR, p_, codes, li, sX, e0, act_b, tbl)                          \
    {                                                                               \
        uint w_[ZP_STREAM_COLS], lo_[ZP_STREAM_COLS], hi_[ZP_STREAM_COLS];          \
        for (int c_ = 0; c_ < ZP_STREAM_COLS; ++c_) {                               \
            w_[c_] = codes[c_][li].sX;                                              \
            lo_[c_] = (w_[c_] << 2) & 0x3C3C3C3Cu;                                  \
            hi_[c_] = (w_[c_] >> 2) & 0x3C3C3C3Cu;                                  \
        }                                                                           \
        _Pragma("unroll") for (int k_ = 0; k_ < 8; ++k_) {                          \
            float a_[NR];                                                           \
            for (int i_ = 0; i_ < NR; ++i_) a_[i_] = ZP_ST_A(act_b, i_, (e0) + k_); \
            for (int c_ = 0; c_ < ZP_STREAM_COLS; ++c_) {                           \
                ZP_ST_USE(NR, p_[c_], a_, w_[c_], lo_[c_], hi_[c_], k_, tbl)        \
            }                                                                       \
        }                                                                           \
    }

#if ZP_STREAM_ABLATION == 3 /* loads only: the code words, summed as integers */
#define ZP_ST_USE(NR, p, a, w, lo, hi, k, tbl) \
    if ((k) == 0)                              \
        for (int i_ = 0; i_ < NR; ++i_) p[i_] += (float)(w);
#elif ZP_STREAM_ABLATION == 2 /* + decode: the decoded weights summed, no activations */
#define ZP_ST_USE(NR, p, a, w, lo, hi, k, tbl)         \
    {                                                  \
        const float v_ = ZP_ST_NIB(w, lo, hi, k, tbl); \
        for (int i_ = 0; i_ < NR; ++i_) p[i_] += v_;   \
    }
#else
#define ZP_ST_USE(NR, p, a, w, lo, hi, k, tbl)                         \
    {                                                                  \
        const float v_ = ZP_ST_NIB(w, lo, hi, k, tbl);                 \
        for (int i_ = 0; i_ < NR; ++i_) p[i_] = fma(v_, a[i_], p[i_]); \
    }
#endif
/* Activation e of row i of the staged block act_b: the chunk's words are staged as they are (BF16
 * pairs: half the local memory and half the local loads of f32, for one integer op per element
 * and row) and widened here (CONTRACT §2: bits << 16, exact), through 16-byte loads (the staged
 * rows and blocks start at multiples of 4 words; `red` is 16-byte aligned). */
ZP_FN uint zp_st_word4(uint4 v, int k) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }
ZP_FN float zp_st_bf16_half(uint w, int hi) { return hi ? zp_bf16_hi(w) : zp_bf16_lo(w); }
#define ZP_ST_A(act_b, i, e)                                                                                        \
    zp_st_bf16_half(zp_st_word4(((local const uint4*)(act_b))[((i)*ZP_STREAM_CHUNK * ZP_ST_PAD + ((e) >> 1)) >> 2], \
                                ((e) >> 1) & 3),                                                                    \
                    (e)&1)
/* Weight loads in flight: PF (1 or 2, a literal) iterations of code rows, as pieces of ZP_ST_PASS:
 * the loads before the chunk's activations are staged (PF 2: the first two iterations' codes), those
 * after (PF 1: the first), the ones issued at the start of iteration j, and the hand-over at its
 * end (codes <- next <- ahead). The scale bytes are needed only at the end of each block, so they
 * stay one iteration ahead at either depth (PF 2: the codes of two iterations, the scales of one). */
#define ZP_ST_EARLY_LOADS(PF)                                      \
    if ((PF) >= 2) {                                               \
        ZP_ST_LOAD(codes, scales, cb0 + s);                        \
        if (iters > 1) ZP_ST_LOAD_CODES(next_codes, cb0 + 16 + s); \
    }
#if ZP_ST_CARRY
/* The first pass's first chunk has its first iteration already when the carry held it. */
#define ZP_ST_LATE_LOADS(PF) \
    if ((PF) < 2 && !(carried && r0 == 0 && ch == 0)) ZP_ST_LOAD(codes, scales, cb0 + s);
/* After the last pass's last chunk: the next unit's first iteration into the carry. */
#define ZP_ST_CARRY_OUT                                                                                \
    if (carry->next_le >= 0 && r0 + ZP_GEMM_ROWS_PER_PASS >= nrows) {                                  \
        zp_st_load_first(carry->codes, carry->scales, w_blocks, w_scales, carry->next_le, n_total, kb, \
                         carry->next_tile, paired, intermediate, layout, g, s);                        \
        carry->in = 1;                                                                                 \
    }
#else
#define ZP_ST_LATE_LOADS(PF) \
    if ((PF) < 2) ZP_ST_LOAD(codes, scales, cb0 + s);
#define ZP_ST_CARRY_OUT
#endif
#define ZP_ST_AHEAD_LOAD(PF)                                        \
    if ((PF) >= 2) {                                                \
        if (j + 2 < iters) ZP_ST_LOAD_CODES(ahead_codes, b0 + 32);  \
        if (j + 1 < iters) ZP_ST_LOAD_SCALES(next_scales, b0 + 16); \
    } else if (j + 1 < iters)                                       \
        ZP_ST_LOAD(next_codes, next_scales, b0 + 16);
#define ZP_ST_SHIFT_AHEAD(PF, c, li) \
    if ((PF) >= 2) next_codes[c][li] = ahead_codes[c][li];
/* Staging: `words` words of one activation row into the staged blocks at dst (local, ZP_ST_PAD
 * words a block), word x being WORD (an expression of x and of what the statement SETUP declares),
 * by all the work-group's work-items; dst and SETUP are evaluated once, before the loop (the
 * stores may alias a local-memory read in them, which the loop would repeat). ZP_ST_STAGE copies
 * the words from src (global uint*). */
#define ZP_ST_STAGE_EACH(dst, words, SETUP, WORD)                                                    \
    {                                                                                                \
        local uint* dst_ = (local uint*)(dst);                                                       \
        SETUP;                                                                                       \
        for (int x = t; x < (words); x += ZP_ST_ITEMS) dst_[(x >> 4) * ZP_ST_PAD + (x & 15)] = WORD; \
    }
#define ZP_ST_STAGE(dst, src, words) ZP_ST_STAGE_EACH(dst, words, const global uint* src_ = (src), src_[x])
/* Pass row i's activation blocks cb0 .. cb0 + cblocks - 1 staged at act_l + i * CHUNK * PAD: from
 * the row at a + aoff[i] as they are or, with ZP_ST_A_SWIGLU (gemm2_loader_fused, DESIGN.md's
 * preserved experiment), made from the gate_up row at a + 2 aoff[i] (rows of 2k): element e is
 * zp_swiglu(gate(e), up(e)) with the function's silu, limit, up_bias and layout (k = I), the bits
 * act would hold (CONTRACT §5.5); word x holds elements e = cb0 * 32 + 2x (low half) and e + 1.
 * Every column tile makes them again: the variant's cost. */
#ifndef ZP_ST_A_SWIGLU
#define ZP_ST_A_SWIGLU 0
#endif
#if ZP_ST_A_SWIGLU
#define ZP_ST_SWIGLU_AT(gu, e) \
    ((uint)zp_swiglu((gu)[zp_gate_col((e), k, layout)], (gu)[zp_up_col((e), k, layout)], limit, up_bias, silu))
#define ZP_ST_STAGE_ROW(i, cb0, cblocks)                                    \
    ZP_ST_STAGE_EACH(act_l + (i)*ZP_STREAM_CHUNK * ZP_ST_PAD, (cblocks)*16, \
                     const global ushort* gu_ = a + 2 * (size_t)aoff[i],    \
                     ZP_ST_SWIGLU_AT(gu_, (cb0)*32 + 2 * x) | ZP_ST_SWIGLU_AT(gu_, (cb0)*32 + 2 * x + 1) << 16)
#else
#define ZP_ST_STAGE_ROW(i, cb0, cblocks) \
    ZP_ST_STAGE(act_l + (i)*ZP_STREAM_CHUNK * ZP_ST_PAD, (const global uint*)(a + aoff[i]) + (cb0)*16, (cblocks)*16)
#endif
/* One iteration's blocks b0, b0 + S, ... (< kb) of every column for NR rows into acc, the block b
 * staged at act_l + (b + boff) * ZP_ST_PAD. */
#define ZP_ST_STEP(NR, b0, boff)                                            \
    for (int li = 0; li < ZP_ST_L; ++li) {                                  \
        const int b = (b0) + li * ZP_STREAM_SPLIT;                          \
        if (b >= kb) continue;                                              \
        local const float* act_b = act_l + (b + (boff)) * ZP_ST_PAD;        \
        float q[ZP_STREAM_COLS][NR];                                        \
        ZP_ST_BLOCKS(NR, q, codes, scales, li, act_b, tbl);                 \
        for (int c = 0; c < ZP_STREAM_COLS; ++c)                            \
            for (int i = 0; i < NR; ++i) ZP_ST_SUM(acc[c][i][li], q[c][i]); \
    }
/* One pass body for NR (a literal) live rows: streams the chunks of K, then either leaves the
 * lane sums of this work-item's columns in sums[(column * ROWS + i) * 16 + lane] for
 * zp_st_epilogue or (ZP_ST_REG_TREE) applies the tree and stores them itself (ZP_ST_FINISH). */
#define ZP_ST_PASS(NR, PF)                                                                       \
    {                                                                                            \
        float acc[ZP_STREAM_COLS][NR][ZP_ST_L];                                                  \
        for (int c = 0; c < ZP_STREAM_COLS; ++c)                                                 \
            for (int i = 0; i < NR; ++i)                                                         \
                for (int li = 0; li < ZP_ST_L; ++li) acc[c][i][li] = 0.0f;                       \
        for (int ch = 0; ch < chunks; ++ch) {                                                    \
            const int cb0 = ch * ZP_STREAM_CHUNK;                                                \
            const int cblocks = min(ZP_STREAM_CHUNK, kb - cb0);                                  \
            const int iters = (cblocks + 15) >> 4;                                               \
            uint4 next_codes[ZP_STREAM_COLS][ZP_ST_L]; /* codes, scales: the function's */       \
            uint next_scales[ZP_STREAM_COLS][ZP_ST_L];                                           \
            uint4 ahead_codes[ZP_STREAM_COLS][ZP_ST_L]; /* PF 2 only */                          \
            ZP_ST_EARLY_LOADS(PF)                                                                \
            barrier(CLK_LOCAL_MEM_FENCE); /* the previous chunk's readers are done */            \
            /* row by row: no division by the chunk's width (NVIDIA: ~40 instructions a word) */ \
            for (int i = 0; i < NR; ++i) ZP_ST_STAGE_ROW(i, cb0, cblocks)                        \
            barrier(CLK_LOCAL_MEM_FENCE);                                                        \
            ZP_ST_LATE_LOADS(PF)                                                                 \
            for (int j = 0; j < iters; ++j) {                                                    \
                const int b0 = cb0 + 16 * j + s;                                                 \
                ZP_ST_AHEAD_LOAD(PF)                                                             \
                ZP_ST_STEP(NR, b0, -cb0)                                                         \
                for (int c = 0; c < ZP_STREAM_COLS; ++c)                                         \
                    for (int li = 0; li < ZP_ST_L; ++li) {                                       \
                        codes[c][li] = next_codes[c][li];                                        \
                        scales[c][li] = next_scales[c][li];                                      \
                        ZP_ST_SHIFT_AHEAD(PF, c, li)                                             \
                    }                                                                            \
            }                                                                                    \
        }                                                                                        \
        ZP_ST_CARRY_OUT                                                                          \
        ZP_ST_FINISH(NR, 0)                                                                      \
    }

#if ZP_ST_REG_TREE
/* The tree of every (column, row) in registers, then work-item s of the column's S stores the
 * outputs (c, i) with (c * NR + i) % S == s (paired: the even c, each with its up column c + 1,
 * the next column of the same work-item). The store loops are unrolled: rolled around the inlined
 * SwiGLU (IGC at four columns), dot_[c | 1] put dot_ in private memory. */
#if ZP_STREAM_SPLIT > 1
#define ZP_ST_SHUFFLE_TREE(v) \
    for (uint o_ = ZP_STREAM_SPLIT / 2; o_ >= 1u; o_ >>= 1) (v) = (v) + intel_sub_group_shuffle_xor((v), o_);
#else
#define ZP_ST_SHUFFLE_TREE(v)
#endif
#define ZP_ST_FINISH(NR, SLOT)                                                                                       \
    float dot_[ZP_STREAM_COLS][NR];                                                                                  \
    for (int c = 0; c < ZP_STREAM_COLS; ++c)                                                                         \
        for (int i = 0; i < NR; ++i) {                                                                               \
            for (int o = ZP_LANES / 2; o >= ZP_STREAM_SPLIT; o >>= 1)                                                \
                for (int li = 0; li < o / ZP_STREAM_SPLIT; ++li)                                                     \
                    acc[c][i][li] = acc[c][i][li] + acc[c][i][li + o / ZP_STREAM_SPLIT];                             \
            dot_[c][i] = acc[c][i][0];                                                                               \
            ZP_ST_SHUFFLE_TREE(dot_[c][i])                                                                           \
        }                                                                                                            \
    _Pragma("unroll") for (int c = 0; c < ZP_STREAM_COLS; ++c) {                                                     \
        _Pragma("unroll") for (int i = 0; i < NR; ++i) {                                                             \
            if (i >= rows || (paired && (c & 1)) || (c * NR + i) % ZP_STREAM_SPLIT != s) continue;                   \
            const int col_ = g * ZP_STREAM_COLS + c, lc_ = tile * ZP_GEMM_COLS_PER_WG + col_;                        \
            zp_tile_store_dots(dot_[c][i], dot_[c | 1][i], lc_, col_, (size_t)(out_first + r0 + i), n_total, paired, \
                               intermediate, limit, up_bias, silu, out, local_out, local_out_on);                    \
        }                                                                                                            \
    }
#else
#define ZP_ST_FINISH(NR, SLOT)                                                                        \
    for (int c = 0; c < ZP_STREAM_COLS; ++c)                                                          \
        for (int i = 0; i < NR; ++i)                                                                  \
            for (int li = 0; li < ZP_ST_L; ++li)                                                      \
                sums[((g * ZP_STREAM_COLS + c) * ZP_GEMM_ROWS_PER_PASS + (SLOT) + i) * ZP_LANES + s + \
                     ZP_STREAM_SPLIT * li] = acc[c][i][li];
#endif

#if ZP_STREAM_ABLATION >= 1 && ZP_STREAM_ABLATION <= 3 /* no lane sums: the last block's q stands for the lane */
#define ZP_ST_SUM(acc, q) (acc) = (q)
#else
#define ZP_ST_SUM(acc, q) (acc) = (acc) + (q)
#endif

/* The tree and the output for the pass's columns. */
ZP_FN void zp_st_epilogue(local const float* sums, int t, int rows, int tile, int n_total, int paired, int intermediate,
                          float limit, float up_bias, global const ushort* silu, global ushort* out,
                          local ushort* local_out, int local_out_on, int out_row0) {
    /* v = col * ROWS + i, (col, i) stepped without a division in the loop (zp_unit_step) */
    int col = t / ZP_GEMM_ROWS_PER_PASS, i = t - col * ZP_GEMM_ROWS_PER_PASS;
    const int step_col = ZP_ST_ITEMS / ZP_GEMM_ROWS_PER_PASS, step_i = ZP_ST_ITEMS % ZP_GEMM_ROWS_PER_PASS;
    for (int v = t; v < ZP_GEMM_COLS_PER_WG * ZP_GEMM_ROWS_PER_PASS;
         v += ZP_ST_ITEMS, zp_unit_step(&col, &i, step_col, step_i, ZP_GEMM_ROWS_PER_PASS)) {
        const int lc = tile * ZP_GEMM_COLS_PER_WG + col;
        if (i >= rows || (paired && (lc & 1))) continue;
        zp_tile_store(sums + v * ZP_LANES, sums + (v + ZP_GEMM_ROWS_PER_PASS) * ZP_LANES, lc, col,
                      (size_t)(out_row0 + i), n_total, paired, intermediate, limit, up_bias, silu, out, local_out,
                      local_out_on);
    }
}

/* Where column group g's rows of column tile `tile` of expert le start: the expert's first code
 * and scale bytes (wc, ws) and each column's row as a block offset from them (n_total * kb < 2^32). */
ZP_FN void zp_st_rows(const global uchar* w_blocks, const global uchar* w_scales, int le, int n_total, int kb, int tile,
                      int paired, int intermediate, int layout, int g, const global uchar** wc, const global uchar** ws,
                      uint* wrow) {
    const size_t expert_blocks = (size_t)le * n_total * kb; /* the expert's first block */
    *wc = w_blocks + expert_blocks * 16;
    *ws = w_scales + expert_blocks;
    for (int c = 0; c < ZP_STREAM_COLS; ++c) {
        int n =
            zp_tile_column(tile * ZP_GEMM_COLS_PER_WG + g * ZP_STREAM_COLS + c, n_total, paired, intermediate, layout);
        n = n < 0 ? 0 : n; /* outside the matrix: any row, never written */
        wrow[c] = (uint)n * (uint)kb;
    }
}

#if ZP_ST_CARRY
/* The first iteration (blocks s, s + S, ... of the first chunk) of column tile `tile` of expert le. */
ZP_FN void zp_st_load_first(uint4 codes[ZP_STREAM_COLS][ZP_ST_L], uint scales[ZP_STREAM_COLS][ZP_ST_L],
                            const global uchar* w_blocks, const global uchar* w_scales, int le, int n_total, int kb,
                            int tile, int paired, int intermediate, int layout, int g, int s) {
    const global uchar* wc;
    const global uchar* ws;
    uint wrow[ZP_STREAM_COLS];
    zp_st_rows(w_blocks, w_scales, le, n_total, kb, tile, paired, intermediate, layout, g, &wc, &ws, wrow);
    ZP_ST_LOAD(codes, scales, s);
}
#endif

/* Column tile `tile` (ZP_GEMM_COLS_PER_WG logical columns) of expert le for activation rows
 * a + aoff(r), r < nrows (zp_pass_offsets). paired == 0: out[out_first + r][n] = bf16(dot) for
 * n < n_total. paired == 1 (n_total = 2 * intermediate): out[out_first + r][pair] = SwiGLU of
 * the pair's bf16 gate and up dots (§5.4-5.5; out is act, [.., intermediate]). Source rows and
 * local_out as zp_pass_offsets / zp_gemm_group (paired never writes local). `red`: local
 * float[ZP_GEMM_RED_FLOATS]. Every work-item of the work-group must call it (barriers).
 * carry: what a persistent work-group hands between its units (zp_carry; zp_no_carry() for a unit
 * on its own): with ZP_ST_CARRY this unit takes its first iteration from it where it holds one,
 * and leaves carry->next_le's there (the caller sets next_le and next_tile before each unit;
 * carry->in is this function's). */
ZP_FN void zp_stream_gemm(const global uchar* w_blocks, const global uchar* w_scales, int le, int n_total, int k,
                          int tile, const global ushort* a, const global int* src_rows, local const int* local_rows,
                          int local_rows_on, int a_first, int nrows, int paired, int intermediate, int layout,
                          global const ushort* silu, float limit, float up_bias, global ushort* out,
                          local ushort* local_out, int local_out_on, int out_first, private zp_carry* carry,
                          local float* red) {
    const int t = (int)(get_local_id(1) * ZP_LANES + get_local_id(0));
    const int g = t / ZP_STREAM_SPLIT, s = t - g * ZP_STREAM_SPLIT;
    local float* sums = red;
    local float* act_l = red + ZP_ST_SUMS;
    local float* tbl = red + ZP_ST_SUMS + ZP_ST_ACT;
    if (t < 16) tbl[t] = kZpE2M1[t]; /* visible after the first chunk's barriers */
    /* The iteration's code and scale bytes, here rather than in each chunk so that a carried first
     * iteration is taken before the passes (nothing keeps the carry alive through them). */
    uint4 codes[ZP_STREAM_COLS][ZP_ST_L];
    uint scales[ZP_STREAM_COLS][ZP_ST_L];
#if ZP_ST_CARRY
    const int carried = carry->in; /* this unit's first iteration is in the carry */
    carry->in = 0;                 /* until this unit loads the next one's (ZP_ST_CARRY_OUT) */
    if (carried)
        for (int c = 0; c < ZP_STREAM_COLS; ++c)
            for (int li = 0; li < ZP_ST_L; ++li) {
                codes[c][li] = carry->codes[c][li];
                scales[c][li] = carry->scales[c][li];
            }
#endif

    const int kb = k / 32;
    const int chunks = (kb + ZP_STREAM_CHUNK - 1) / ZP_STREAM_CHUNK;
    const global uchar* wc;
    const global uchar* ws;
    uint wrow[ZP_STREAM_COLS];
    zp_st_rows(w_blocks, w_scales, le, n_total, kb, tile, paired, intermediate, layout, g, &wc, &ws, wrow);

    for (int r0 = 0; r0 < nrows; r0 += ZP_GEMM_ROWS_PER_PASS) {
        const int rows = min(nrows - r0, ZP_GEMM_ROWS_PER_PASS);
        int aoff[ZP_GEMM_ROWS_PER_PASS];
        zp_pass_offsets(aoff, src_rows, local_rows, local_rows_on, a_first, r0, rows, k);
        if (rows == 1) ZP_ST_PASS(1, ZP_STREAM_PREFETCH_ONE_ROW)
#if ZP_GEMM_ROWS_PER_PASS > 1
        else
            ZP_ST_PASS(ZP_GEMM_ROWS_PER_PASS, ZP_STREAM_PREFETCH)
#endif
#if !ZP_ST_REG_TREE
        barrier(CLK_LOCAL_MEM_FENCE);
        zp_st_epilogue(sums, t, rows, tile, n_total, paired, intermediate, limit, up_bias, silu, out, local_out,
                       local_out_on, out_first + r0);
#endif
    }
}

/* Runs (kernel B's units of several 1-row expert groups, ZP_B_RUNS in zp_two_launch.h): column
 * tile `tile` of nseg experts' 1-row GEMVs back to back in one stream, as if their K were one.
 * Segment e reads expert seg[e * stride] with activation row seg[e * stride + 1] (a + row * k) and
 * writes out[row][tile's columns]. Every segment's activations are staged at the start (segment e
 * at block e * kb16 of the staging buffer, kb16 = K's blocks rounded up to whole iterations, so
 * that a segment's lanes are its own: the same §4 chains and tree as zp_stream_gemm's 1-row body),
 * then the iterations run without a restart: iteration j's loads are issued during iteration j - 1
 * whether or not they cross into the next segment's expert, so the weight stream does not stop
 * at a segment's end as it does at a unit's. A segment ends in its tree and stores: with the
 * register tree at once; otherwise its lane sums go to slot e % 2 of the sums (double-buffered:
 * one barrier per segment), the barrier, and the stores by one work-item per column.
 * Needs nseg * kb16 <= ZP_ST_RUN_BLOCKS and every segment's expert's rows below 2^32 blocks
 * (zp_tl_run_b). Every work-item of the work-group calls it. */
#if ZP_STREAM_PREFETCH_ONE_ROW == 1
#define ZP_ST_RUNS 1
#define ZP_ST_RUN_BLOCKS (ZP_GEMM_ROWS_PER_PASS * ZP_STREAM_CHUNK) /* the staging buffer's blocks */
ZP_FN void zp_stream_gemm_run(const global uchar* w_blocks, const global uchar* w_scales, local const int* seg,
                              int stride, int nseg, int n_total, int k, int tile, const global ushort* a,
                              global ushort* out, local float* red) {
    const int t = (int)(get_local_id(1) * ZP_LANES + get_local_id(0));
    const int g = t / ZP_STREAM_SPLIT, s = t - g * ZP_STREAM_SPLIT;
    local float* sums = red;
    local float* act_l = red + ZP_ST_SUMS;
    local float* tbl = red + ZP_ST_SUMS + ZP_ST_ACT;
    const int kb = k / 32, its = (kb + 15) >> 4, kb16 = its << 4;
    /* the rows as block offsets from the first expert's: a segment moves them by whole experts
     * (zp_tl_run_b: every local expert's last block < 2^32), so the bases stay w_blocks, w_scales */
    const global uchar* wc;
    const global uchar* ws;
    uint wrow[ZP_STREAM_COLS];
    zp_st_rows(w_blocks, w_scales, 0, n_total, kb, tile, 0, 0, 0, g, &wc, &ws, wrow);
    const uint expert_blocks = (uint)n_total * (uint)kb;
    for (int c = 0; c < ZP_STREAM_COLS; ++c) wrow[c] += (uint)seg[0] * expert_blocks;
    barrier(CLK_LOCAL_MEM_FENCE); /* the previous unit's readers of the table, act_l and sums are done */
    if (t < 16) tbl[t] = kZpE2M1[t];
    for (int e = 0; e < nseg; ++e)
        ZP_ST_STAGE(act_l + e * kb16 * ZP_ST_PAD, (const global uint*)(a + (size_t)seg[e * stride + 1] * k), kb * 16)
    uint4 codes[ZP_STREAM_COLS][ZP_ST_L];
    uint scales[ZP_STREAM_COLS][ZP_ST_L];
    ZP_ST_LOAD(codes, scales, s); /* in flight across the staging's barrier */
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = 0; e < nseg; ++e) {
        float acc[ZP_STREAM_COLS][1][ZP_ST_L];
        for (int c = 0; c < ZP_STREAM_COLS; ++c)
            for (int li = 0; li < ZP_ST_L; ++li) acc[c][0][li] = 0.0f;
        for (int jl = 0; jl < its; ++jl) {
            uint4 next_codes[ZP_STREAM_COLS][ZP_ST_L];
            uint next_scales[ZP_STREAM_COLS][ZP_ST_L];
            if (jl + 1 < its) {
                ZP_ST_LOAD(next_codes, next_scales, 16 * (jl + 1) + s);
            } else if (e + 1 < nseg) { /* the next segment's first iteration: its expert's rows */
                const uint step = (uint)(seg[(e + 1) * stride] - seg[e * stride]) * expert_blocks;
                for (int c = 0; c < ZP_STREAM_COLS; ++c) wrow[c] += step;
                ZP_ST_LOAD(next_codes, next_scales, s);
            }
            ZP_ST_STEP(1, 16 * jl + s, e * kb16)
            for (int c = 0; c < ZP_STREAM_COLS; ++c)
                for (int li = 0; li < ZP_ST_L; ++li) {
                    codes[c][li] = next_codes[c][li];
                    scales[c][li] = next_scales[c][li];
                }
        }
        /* segment e is complete: its tree and stores (the register tree), or its lane sums into slot
         * e % 2, then the tree and stores after the barrier */
        const int row = seg[e * stride + 1];
        const int slot = ZP_GEMM_ROWS_PER_PASS > 1 ? (e & 1) : 0;
        {
#if ZP_ST_REG_TREE
            /* ZP_ST_FINISH's names for one live row of out[row], not paired */
            const int rows = 1, r0 = 0, out_first = row, paired = 0, intermediate = 0, local_out_on = 0;
            const float limit = 0.0f, up_bias = 0.0f;
            global const ushort* silu = 0;
            local ushort* local_out = 0;
#endif
            ZP_ST_FINISH(1, slot)
        }
#if !ZP_ST_REG_TREE
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int col = t; col < ZP_GEMM_COLS_PER_WG; col += ZP_ST_ITEMS) {
            local const float* lanes = sums + (col * ZP_GEMM_ROWS_PER_PASS + slot) * ZP_LANES;
            zp_tile_store(lanes, lanes, tile * ZP_GEMM_COLS_PER_WG + col, col, (size_t)row, n_total, 0, 0, 0.0f, 0.0f,
                          0, out, 0, 0);
        }
        /* one slot: its readers are done before the next segment's lane sums overwrite it */
        if (ZP_GEMM_ROWS_PER_PASS == 1) barrier(CLK_LOCAL_MEM_FENCE);
#endif
    }
}
#else
#define ZP_ST_RUNS 0
#endif

#endif
