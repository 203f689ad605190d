/* CONTRACT §5.1-5.2 on the device: the compact row table, cr(m, k), the expert groups of the
 * M2 tiling and the error flag, from topk_ids alone (zp_derive_routes, which two_launch's
 * kernels share).
 *
 * Grid: exactly ONE work-group of ZP_ROUTE_COMPACT_WG work-items (it loops over routes).
 * scratch: local int[ZP_ROUTE_SCRATCH_INTS(M * K)].
 * Writes route_info[ZP_INFO_WORDS] = {R, G, invalid ids, first invalid route},
 * compact_rows[r] = (le, m) for r < R ordered by le then m, route_row[m*K+k] = cr(m, k) or
 * -1, groups[g] = (le, first compact row, row count) for g < G ordered by le. Entries past
 * R / G are left as they were: consumers never read them. */
#include "common/zp_routes.h"

#define ZP_ROUTE_COMPACT_ATTRS ZP_REQD_GROUP_SIZE(ZP_ROUTE_COMPACT_WG, 1)

kernel ZP_ROUTE_COMPACT_ATTRS void route_compact(global const zp_topk_id_t* topk_ids, int rows, int top_k, int experts,
                                                 int cards, int card, local int* scratch, global int* route_info,
                                                 global int* compact_rows, global int* route_row, global int* groups) {
    const int lid = get_local_id(0);
    zp_derive_routes(topk_ids, rows, top_k, experts, cards, card, scratch, lid, ZP_ROUTE_COMPACT_WG);
    zp_store_routes(scratch, rows * top_k, lid, ZP_ROUTE_COMPACT_WG, route_info, compact_rows, route_row, groups);
}
