/* two_launch, kernel A (common/zp_two_launch.h): every work-group derives the route table from
 * topk_ids once, group 0 also stores it for the host (route_info with the §5.1 error flag,
 * compact_rows, route_row, groups), then the work-groups loop over A's (pair tile, expert group)
 * units u = wg, wg + n, ... < tiles * G (tile = u % tiles, g = u / tiles): act for expert group g
 * and pair tile `tile` from the source rows of hidden. Grid: (n, 1, 1) with n >= 1, at most
 * tiles * min(M*K, E/C) (the host takes the count the device keeps resident, so the table is
 * derived once per resident group, not once per unit); any n gives the same bits.
 * routes: local int[ZP_ROUTE_SCRATCH_INTS(M*K)]. */
#include "common/zp_two_launch.h"

kernel ZP_GEMM_ATTRS void two_launch_a(global const zp_topk_id_t* topk_ids, global const ushort* hidden_x, /* [M, H] */
                                       global const uchar* w1_blocks, global const uchar* w1_scales,
                                       global const ushort* silu, global ushort* act, /* [M*K, I] */
                                       global int* route_info, global int* compact_rows, global int* route_row,
                                       global int* groups, int rows, int top_k, int experts, int cards, int card,
                                       int hidden, int intermediate, float limit, float up_bias, int layout,
                                       local int* routes) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int wg = (int)get_group_id(0), n = (int)get_num_groups(0);
    zp_carry carry = zp_no_carry();
    zp_derive_routes(topk_ids, rows, top_k, experts, cards, card, routes, zp_tl_lid(), ZP_TL_ITEMS);
    if (wg == 0) zp_tl_store_routes(routes, rows, top_k, route_info, compact_rows, route_row, groups);
    zp_tl_gemm1_units(routes, rows, top_k, ZP_RT_COUNT_G(routes, rows * top_k), wg, n, hidden_x, w1_blocks, w1_scales,
                      silu, act, hidden, intermediate, limit, up_bias, layout, (volatile global uint*)0, &carry, red);
}
