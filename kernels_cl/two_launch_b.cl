/* two_launch, kernel B (common/zp_two_launch.h): every work-group derives the route table from
 * topk_ids, then work-group `tile` computes y for its ZP_GEMM_COLS_PER_WG columns of every
 * compact row in local memory and writes those columns of out in §5.7's route order.
 * With ZP_TL_B_PER_ROW, work-group (tile, m) does so for token row m only.
 * Grid: (ceil(H / ZP_GEMM_COLS_PER_WG), ZP_TL_B_PER_ROW ? M : 1).
 * routes: local int[ZP_ROUTE_SCRATCH_INTS(M*K)]; y_tile: local ushort[M*K * ZP_GEMM_COLS_PER_WG]. */
#include "common/zp_two_launch.h"

kernel ZP_GEMM_ATTRS void two_launch_b(global const zp_topk_id_t* topk_ids,
                                       global const float* topk_weights, /* [M, K] */
                                       global const ushort* act,         /* [M*K, I] */
                                       global const uchar* w2_blocks, global const uchar* w2_scales,
                                       global ushort* out, /* [M, H] */
                                       int rows, int top_k, int experts, int cards, int card, int hidden,
                                       int intermediate, local int* routes, local ushort* y_tile) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    zp_derive_routes(topk_ids, rows, top_k, experts, cards, card, routes, zp_tl_lid(), ZP_TL_ITEMS);
    zp_tl_gemm2_gather_tile(routes, rows, top_k, get_group_id(0), ZP_TL_B_PER_ROW, get_group_id(1), act, w2_blocks,
                            w2_scales, topk_weights, out, hidden, intermediate, y_tile, red);
}
