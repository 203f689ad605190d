/* m1_oracle: the fixed-M1 on-device oracle chain (CONTRACT §7). One route (m, k) per
 * work-group, no compaction and no dedup: each local route recomputes its own gate_up, act
 * and y from x[m] (a within-row duplicate or a shared expert is computed twice), then the
 * gather reads y per route. Independent of route_compact: locality comes from topk_ids.
 * Per-route buffers are indexed by the route index i = m*K + k; rows of non-local routes
 * are left untouched. Same §4 dot code as the M2 kernels, different tiling and indexing. */
#include "common/zp_gemm.h"
#include "common/zp_swiglu.h"

/* Grid: work-group ZP_LANES x ZP_GEMM_ITEMS_Y; groups (ceil(2I / COLS), M*K). */
kernel ZP_GEMM_ATTRS void m1_gemm1(global const ushort* x,              /* [M, H] */
                                   global const zp_topk_id_t* topk_ids, /* [M, K] */
                                   global const uchar* w1_blocks, global const uchar* w1_scales,
                                   global ushort* gate_up, /* [M*K, 2I] per route */
                                   int top_k, int hidden, int intermediate, int experts, int cards, int card) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int i = get_group_id(1);
    const int le = zp_local_expert(zp_topk_id(topk_ids, i), experts, cards, card);
    if (le < 0) return;
    zp_gemm_group(w1_blocks, w1_scales, le, 2 * intermediate, hidden, get_group_id(0), x, 0, i / top_k, 1, gate_up, 0,
                  0, i, red);
}

/* Grid: ZP_ELEMWISE_WG per group; groups (ceil(I / ZP_ELEMWISE_WG), M*K). */
kernel ZP_ELEMWISE_ATTRS void m1_swiglu(global const ushort* gate_up, global const ushort* silu,
                                        global const zp_topk_id_t* topk_ids, global ushort* act, int intermediate,
                                        float limit, float up_bias, int layout, int experts, int cards, int card) {
    const int r = get_group_id(1);
    if (zp_local_expert(zp_topk_id(topk_ids, r), experts, cards, card) < 0) return;
    const int i = get_global_id(0);
    if (i >= intermediate) return;
    const global ushort* gu = gate_up + (size_t)r * 2 * intermediate;
    act[(size_t)r * intermediate + i] = zp_swiglu(gu[zp_gate_col(i, intermediate, layout)],
                                                  gu[zp_up_col(i, intermediate, layout)], limit, up_bias, silu);
}

/* Grid: work-group ZP_LANES x ZP_GEMM_ITEMS_Y; groups (ceil(H / COLS), M*K). */
kernel ZP_GEMM_ATTRS void m1_gemm2(global const ushort* act, global const zp_topk_id_t* topk_ids,
                                   global const uchar* w2_blocks, global const uchar* w2_scales,
                                   global ushort* y, /* [M*K, H] per route */
                                   int hidden, int intermediate, int experts, int cards, int card) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int i = get_group_id(1);
    const int le = zp_local_expert(zp_topk_id(topk_ids, i), experts, cards, card);
    if (le < 0) return;
    zp_gemm_group(w2_blocks, w2_scales, le, hidden, intermediate, get_group_id(0), act, 0, i, 1, y, 0, 0, i, red);
}

/* Grid: ZP_ELEMWISE_WG per group; groups (ceil(H / ZP_ELEMWISE_WG), M). Work-item 0 also
 * writes route_info's error words (R and G are -1: no compaction here). */
kernel ZP_ELEMWISE_ATTRS void m1_gather(global const ushort* y, global const zp_topk_id_t* topk_ids,
                                        global const float* topk_weights, global ushort* out, global int* route_info,
                                        int rows, int top_k, int hidden, int experts, int cards, int card) {
    const int m = get_group_id(1);
    const int h = get_global_id(0);
    if (m == 0 && h == 0) {
        route_info[ZP_INFO_ROUTES] = -1;
        route_info[ZP_INFO_GROUPS] = -1;
        zp_flag_invalid_ids(topk_ids, rows * top_k, experts, route_info);
    }
    if (h >= hidden) return;
    float acc = 0.0f;
    for (int k = 0; k < top_k; ++k) {
        const int i = m * top_k + k;
        if (zp_local_expert(zp_topk_id(topk_ids, i), experts, cards, card) < 0) continue;
        acc = fma(topk_weights[i], zp_bf16_to_f32(y[(size_t)i * hidden + h]), acc);
    }
    out[(size_t)m * hidden + h] = zp_f32_to_bf16(acc);
}
