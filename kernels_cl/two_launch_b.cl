/* two_launch, kernel B (common/zp_two_launch.h): every work-group derives the route table from
 * topk_ids once, then the work-groups loop over B's (column tile, expert group) units u = wg,
 * wg + n, ... < tiles * max(G, 1): column tile `tile` of y for expert group g's compact rows (with
 * ZP_B_RUNS, a unit may run several one-row groups: zp_tl_run_b); the tile's last unit to finish
 * writes the tile's columns of out in §5.7's route order. Grid: (n, 1,
 * 1) with n >= 1, at most ceil(H / ZP_GEMM_COLS_PER_WG) * max(1, min(M*K, E/C)) (the host takes
 * the count the device keeps resident); any n gives the same bits.
 * y: [M*K, H] scratch; tile_done: ceil(H / ZP_GEMM_COLS_PER_WG) uints, zeroed once when
 * allocated (every launch leaves them zero). routes: local int[ZP_ROUTE_SCRATCH_INTS(M*K)]. */
#include "common/zp_two_launch.h"

kernel ZP_GEMM_ATTRS void two_launch_b(global const zp_topk_id_t* topk_ids,
                                       global const float* topk_weights, /* [M, K] */
                                       global const ushort* act,         /* [M*K, I] */
                                       global const uchar* w2_blocks, global const uchar* w2_scales, global ushort* y,
                                       volatile global uint* tile_done, global ushort* out, /* [M, H] */
                                       int rows, int top_k, int experts, int cards, int card, int hidden,
                                       int intermediate, local int* routes) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    local int last;
    zp_derive_routes(topk_ids, rows, top_k, experts, cards, card, routes, zp_tl_lid(), ZP_TL_ITEMS);
    const int wg = (int)get_group_id(0), n = (int)get_num_groups(0);
    zp_tl_gemm2_units(routes, rows, top_k, ZP_RT_COUNT_G(routes, rows * top_k), wg, n, act, w2_blocks, w2_scales, y,
                      tile_done, topk_weights, out, hidden, intermediate, (volatile global uint*)0, &last, red);
}
