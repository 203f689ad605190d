/* CONTRACT §5.1-5.2 on the device: the compact row table, cr(m, k), the expert groups of the
 * M2 tiling and the error flag, from topk_ids alone. Deterministic (no atomics): every
 * output is a count over the routes, so the order is the contract's by construction.
 *
 * Grid: exactly ONE work-group of ZP_ROUTE_COMPACT_WG work-items (it loops over routes).
 * scratch: local int[ZP_ROUTE_SCRATCH_WORDS * M * K].
 * Writes route_info[ZP_INFO_WORDS] = {R, G, invalid ids, first invalid route},
 * compact_rows[r] = (le, m) for r < R ordered by le then m, route_row[m*K+k] = cr(m, k) or
 * -1, groups[g] = (le, first compact row, row count) for g < G ordered by le. Entries past
 * R / G are left as they were: consumers never read them. */
#include "common/zp_routes.h"

#define ZP_NONE (-1)

kernel __attribute__((reqd_work_group_size(ZP_ROUTE_COMPACT_WG, 1, 1))) void route_compact(
    global const int* topk_ids, int rows, int top_k, int experts, int cards, int card, local int* scratch,
    global int* route_info, global int* compact_rows, global int* route_row, global int* groups) {
    const int routes = rows * top_k;
    const int lid = get_local_id(0);
    local int* le_of = scratch;             /* local expert of route i, or -1 */
    local int* rep = scratch + routes;      /* 1: first route of its (le, m) pair */
    local int* head = scratch + 2 * routes; /* 1: first pair (lowest m) of its expert */

    for (int i = lid; i < routes; i += ZP_ROUTE_COMPACT_WG)
        le_of[i] = zp_local_expert(topk_ids[i], experts, cards, card);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* A within-row duplicate (same le twice in row m) is one pair: only its first route
     * represents it. */
    for (int i = lid; i < routes; i += ZP_ROUTE_COMPACT_WG) {
        const int le = le_of[i];
        int first = le >= 0;
        for (int j = i - i % top_k; j < i; ++j) first &= le_of[j] != le;
        rep[i] = first;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* Pairs are ordered by the key le * M + m. */
    for (int i = lid; i < routes; i += ZP_ROUTE_COMPACT_WG) {
        const int le = le_of[i];
        int is_head = 0;
        if (le < 0) {
            route_row[i] = ZP_NONE;
        } else {
            const int m = i / top_k;
            const int key = le * rows + m;
            int cr = 0, lower_m = 0;
            for (int j = 0; j < routes; ++j) {
                if (!rep[j]) continue;
                const int key_j = le_of[j] * rows + j / top_k;
                cr += key_j < key;
                lower_m += le_of[j] == le && key_j < key;
            }
            route_row[i] = cr;
            if (rep[i]) {
                compact_rows[ZP_ROW_WORDS * cr + 0] = le;
                compact_rows[ZP_ROW_WORDS * cr + 1] = m;
                is_head = lower_m == 0;
            }
        }
        head[i] = is_head;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    if (lid == 0) {
        int r = 0, g = 0;
        for (int j = 0; j < routes; ++j) {
            r += rep[j];
            g += head[j];
        }
        route_info[ZP_INFO_ROUTES] = r;
        route_info[ZP_INFO_GROUPS] = g;
        zp_flag_invalid_ids(topk_ids, routes, experts, route_info);
    }

    for (int i = lid; i < routes; i += ZP_ROUTE_COMPACT_WG) {
        if (!head[i]) continue;
        const int le = le_of[i];
        int g = 0, count = 0;
        for (int j = 0; j < routes; ++j) {
            g += head[j] && le_of[j] < le;
            count += rep[j] && le_of[j] == le;
        }
        groups[ZP_GROUP_WORDS * g + 0] = le;
        groups[ZP_GROUP_WORDS * g + 1] = route_row[i]; /* the head is the group's first row */
        groups[ZP_GROUP_WORDS * g + 2] = count;
    }
}
