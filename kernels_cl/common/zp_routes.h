/* CONTRACT §5.1-5.2: which routes are local to this card, and the compact row table. */
#ifndef ZP_ROUTES_H
#define ZP_ROUTES_H

#include "zp_platform.h"

/* The route reader: topk_ids as the caller stores them. ZP_TOPK_IDS_I64 (a build of its own
 * per kernel file that reads ids: the package's `<file>_i64`, picked when the chain is
 * recorded) reads int64 ids, as torch.topk returns them; without it, int32 ids. Every reader
 * of topk_ids goes through zp_topk_id, so both builds see the same ints: an int64 id outside
 * int32 range reads as -1, invalid like any id outside [0, E) (CONTRACT §5.1: not local, and
 * counted by the error flag at its own route). */
#ifdef ZP_TOPK_IDS_I64
typedef long zp_topk_id_t;
#else
typedef int zp_topk_id_t;
#endif

ZP_FN int zp_topk_id(global const zp_topk_id_t* topk_ids, int i) {
#ifdef ZP_TOPK_IDS_I64
    const long id = topk_ids[i];
    return (id >= -2147483647L - 1 && id <= 2147483647L) ? (int)id : -1;
#else
    return topk_ids[i];
#endif
}

/* The local expert of physical id `id` on card `card`, or -1 when the route is not local.
 * Ids outside [0, E) are invalid input: not local here, flagged by zp_store_routes / m1_gather. */
ZP_FN int zp_local_expert(int id, int experts, int cards, int card) {
    if (id < 0 || id >= experts) return -1;
    const int per_card = experts / cards;
    const int le = id - card * per_card;
    return (le >= 0 && le < per_card) ? le : -1;
}

/* Writes route_info's error words for ids[0 .. routes): the §5.1 error flag. One work-item. */
ZP_FN void zp_flag_invalid_ids(global const zp_topk_id_t* topk_ids, int routes, int experts, global int* route_info) {
    int invalid = 0, first = -1;
    for (int i = 0; i < routes; ++i) {
        const int id = zp_topk_id(topk_ids, i);
        if (id < 0 || id >= experts) {
            if (invalid == 0) first = i;
            ++invalid;
        }
    }
    route_info[ZP_INFO_INVALID] = invalid;
    route_info[ZP_INFO_FIRST_INVALID] = first;
}

/* The local route table: local int[ZP_ROUTE_SCRATCH_INTS(routes)], routes = M * K. */
#define ZP_RT_LE(s, routes) (s)                          /* [routes] local expert of route i, or -1 */
#define ZP_RT_REP(s, routes) ((s) + (routes))            /* [routes] 1: first route of its (le, m) pair */
#define ZP_RT_CR(s, routes) ((s) + 2 * (routes))         /* [routes] cr(m, k), or -1 */
#define ZP_RT_HEAD(s, routes) ((s) + 3 * (routes))       /* [routes] 1: first pair (lowest m) of its expert */
#define ZP_RT_ROWS(s, routes) ((s) + 4 * (routes))       /* [routes][ZP_ROW_WORDS] (le, m), first R valid */
#define ZP_RT_GROUPS(s, routes) ((s) + 6 * (routes))     /* [routes][ZP_GROUP_WORDS] (le, first, count), first G */
#define ZP_RT_COUNT_R(s, routes) ((s)[9 * (routes)])     /* R */
#define ZP_RT_COUNT_G(s, routes) ((s)[9 * (routes) + 1]) /* G */

/* Derives CONTRACT §5.1-5.2 from topk_ids alone into the local route table `s`, with the
 * work-group's `items` work-items (local linear id `lid`; every one must call it: barriers;
 * the table is complete, for every work-item, on return). Deterministic (no atomics): every
 * entry is a count over the routes, so the order is the contract's by construction: compact
 * rows ordered by le then m, groups by le. */
ZP_FN void zp_derive_routes(global const zp_topk_id_t* topk_ids, int rows, int top_k, int experts, int cards, int card,
                            local int* s, int lid, int items) {
    const int routes = rows * top_k;
    local int* le_of = ZP_RT_LE(s, routes);
    local int* rep = ZP_RT_REP(s, routes);
    local int* cr_of = ZP_RT_CR(s, routes);
    local int* head = ZP_RT_HEAD(s, routes);
    local int* crow = ZP_RT_ROWS(s, routes);
    local int* grp = ZP_RT_GROUPS(s, routes);

    for (int i = lid; i < routes; i += items) le_of[i] = zp_local_expert(zp_topk_id(topk_ids, i), experts, cards, card);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* A within-row duplicate (same le twice in row m) is one pair: only its first route
     * represents it. */
    for (int i = lid; i < routes; i += items) {
        const int le = le_of[i];
        int first = le >= 0;
        for (int j = i - i % top_k; j < i; ++j) first &= le_of[j] != le;
        rep[i] = first;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* Pairs are ordered by the key le * M + m. */
    for (int i = lid; i < routes; i += items) {
        const int le = le_of[i];
        int is_head = 0, cr = -1;
        if (le >= 0) {
            const int m = i / top_k;
            const int key = le * rows + m;
            int lower_m = 0;
            cr = 0;
            for (int j = 0; j < routes; ++j) {
                if (!rep[j]) continue;
                const int key_j = le_of[j] * rows + j / top_k;
                cr += key_j < key;
                lower_m += le_of[j] == le && key_j < key;
            }
            if (rep[i]) {
                crow[ZP_ROW_WORDS * cr + 0] = le;
                crow[ZP_ROW_WORDS * cr + 1] = m;
                is_head = lower_m == 0;
            }
        }
        cr_of[i] = cr;
        head[i] = is_head;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    if (lid == 0) {
        int r = 0, g = 0;
        for (int j = 0; j < routes; ++j) {
            r += rep[j];
            g += head[j];
        }
        ZP_RT_COUNT_R(s, routes) = r;
        ZP_RT_COUNT_G(s, routes) = g;
    }
    for (int i = lid; i < routes; i += items) {
        if (!head[i]) continue;
        const int le = le_of[i];
        int g = 0, count = 0;
        for (int j = 0; j < routes; ++j) {
            g += head[j] && le_of[j] < le;
            count += rep[j] && le_of[j] == le;
        }
        grp[ZP_GROUP_WORDS * g + 0] = le;
        grp[ZP_GROUP_WORDS * g + 1] = cr_of[i]; /* the head is the group's first row */
        grp[ZP_GROUP_WORDS * g + 2] = count;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Copies the local route table to global memory, as route_compact's outputs: route_info =
 * {R, G, invalid ids, first invalid route} (the §5.1 error flag the host reports),
 * compact_rows[r] for r < R, route_row[m*K+k] = cr(m, k) or -1, groups[g] for g < G. Entries
 * past R / G are left as they were: consumers never read them. Any work-items of one
 * work-group; no barrier. */
ZP_FN void zp_store_routes(local const int* s, global const zp_topk_id_t* topk_ids, int routes, int experts, int lid,
                           int items, global int* route_info, global int* compact_rows, global int* route_row,
                           global int* groups) {
    const int r = ZP_RT_COUNT_R(s, routes), g = ZP_RT_COUNT_G(s, routes);
    if (lid == 0) {
        route_info[ZP_INFO_ROUTES] = r;
        route_info[ZP_INFO_GROUPS] = g;
        zp_flag_invalid_ids(topk_ids, routes, experts, route_info);
    }
    for (int i = lid; i < routes; i += items) route_row[i] = ZP_RT_CR(s, routes)[i];
    for (int i = lid; i < ZP_ROW_WORDS * r; i += items) compact_rows[i] = ZP_RT_ROWS(s, routes)[i];
    for (int i = lid; i < ZP_GROUP_WORDS * g; i += items) groups[i] = ZP_RT_GROUPS(s, routes)[i];
}

#endif
