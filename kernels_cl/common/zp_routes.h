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

/* An expert id in [0, E): anything else is invalid input (CONTRACT §5.1), counted by the error flag. */
ZP_FN int zp_valid_id(int id, int experts) { return id >= 0 && id < experts; }

/* The local expert of physical id `id` on card `card`, or -1 when the route is not local.
 * Ids outside [0, E) are invalid input: not local here, flagged by zp_store_routes / m1_gather. */
ZP_FN int zp_local_expert(int id, int experts, int cards, int card) {
    if (!zp_valid_id(id, experts)) return -1;
    const int per_card = experts / cards;
    const int le = id - card * per_card;
    return (le >= 0 && le < per_card) ? le : -1;
}

/* Writes route_info's error words for ids[0 .. routes): the §5.1 error flag, read from the ids
 * themselves (m1_gather: the oracle chain shares no route table). One work-item. */
ZP_FN void zp_flag_invalid_ids(global const zp_topk_id_t* topk_ids, int routes, int experts, global int* route_info) {
    int invalid = 0, first = -1;
    for (int i = 0; i < routes; ++i) {
        const int id = zp_topk_id(topk_ids, i);
        if (!zp_valid_id(id, experts)) {
            if (invalid == 0) first = i;
            ++invalid;
        }
    }
    route_info[ZP_INFO_INVALID] = invalid;
    route_info[ZP_INFO_FIRST_INVALID] = first;
}

/* The local route table: local int[ZP_ROUTE_SCRATCH_INTS(routes)], routes = M * K. */
#define ZP_RT_LE(s, routes) (s)                          /* [routes] local expert, -1 remote, -2 invalid id */
#define ZP_RT_PACKED(s, routes) ((s) + (routes))         /* [routes] (le + 1) << 3 | flags (ZP_RT_REP ...) */
#define ZP_RT_CR(s, routes) ((s) + 2 * (routes))         /* [routes] cr(m, k), or -1 */
#define ZP_RT_ROWS(s, routes) ((s) + 3 * (routes))       /* [routes][ZP_ROW_WORDS] (le, m), first R valid */
#define ZP_RT_GROUPS(s, routes) ((s) + 5 * (routes))     /* [routes][ZP_GROUP_WORDS] (le, first, count), first G */
#define ZP_RT_COUNT_R(s, routes) ((s)[8 * (routes)])     /* R */
#define ZP_RT_COUNT_G(s, routes) ((s)[8 * (routes) + 1]) /* G */
#define ZP_RT_INVALID(s, routes) ((s)[8 * (routes) + 2]) /* ids outside [0, E) */
#define ZP_RT_FIRST_INVALID(s, routes) ((s)[8 * (routes) + 3]) /* the first one's route, or -1 */
/* A packed route's flags: the first route of its local expert in its token row (the pair's
 * representative: a within-row duplicate is one pair), the first in all routes (its expert's
 * lowest row: the group's head), an id outside [0, E). le = (packed >> 3) - 1 (no overflow: le < E
 * <= 65536, the shape's documented maximum, docs/reliability.md). */
#define ZP_RT_REP 1
#define ZP_RT_HEAD 2
#define ZP_RT_BAD_ID 4

/* Derives CONTRACT §5.1-5.2 from topk_ids alone into the local route table `s`, with the
 * work-group's `items` work-items (local linear id `lid`; every one must call it: barriers;
 * the table is complete, for every work-item, on return). Deterministic (no atomics): every
 * entry is a count over the routes, so the order is the contract's by construction: compact
 * rows ordered by le then m, groups by le. M * K >= 1 (the host's shape check), so route 0
 * exists and writes the totals. Three barriers, and loops without branches whose
 * local loads do not wait for each other: the table is on the critical path of every
 * work-group of two_launch and one_launch. */
ZP_FN void zp_derive_routes(global const zp_topk_id_t* topk_ids, int rows, int top_k, int experts, int cards, int card,
                            local int* s, int lid, int items) {
    const int routes = rows * top_k;
    local int* le_of = ZP_RT_LE(s, routes);
    local int* packed = ZP_RT_PACKED(s, routes);

    for (int i = lid; i < routes; i += items) {
        const int id = zp_topk_id(topk_ids, i);
        le_of[i] = zp_valid_id(id, experts) ? zp_local_expert(id, experts, cards, card) : -2;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* The flags: is an earlier route of the same local expert in this row, or in any row? */
    for (int i = lid; i < routes; i += items) {
        const int le = le_of[i], row0 = i - i % top_k;
        int in_row = 0, before = 0;
        for (int j = 0; j < i; ++j) {
            const int same = le_of[j] == le;
            before |= same;
            in_row |= same & (j >= row0);
        }
        const int local_route = le >= 0;
        packed[i] = ((max(le, -1) + 1) << 3) | ((local_route & !in_row) ? ZP_RT_REP : 0) |
                    ((local_route & !before) ? ZP_RT_HEAD : 0) | (le == -2 ? ZP_RT_BAD_ID : 0);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* Pairs are ordered by (le, m): a pair's compact row counts the representatives before it
     * in that order (compared as a pair: le * M + m could overflow an int), its group the heads
     * of lower le, its group's rows the representatives of its le. Every work-item counts the
     * totals too (the loop costs the same); route 0's writes them. */
    local int* cr_of = ZP_RT_CR(s, routes);
    local int* crow = ZP_RT_ROWS(s, routes);
    local int* grp = ZP_RT_GROUPS(s, routes);
    for (int i = lid; i < routes; i += items) {
        const int p = packed[i], le = (p >> 3) - 1, m = i / top_k;
        int cr = 0, g = 0, count = 0, total_r = 0, total_g = 0, invalid = 0, first_invalid = -1;
        for (int j = 0, mj = 0, kj = 0; j < routes; ++j) {
            const int pj = packed[j], lj = (pj >> 3) - 1, rep_j = pj & ZP_RT_REP, head_j = (pj & ZP_RT_HEAD) >> 1;
            const int bad_j = (pj & ZP_RT_BAD_ID) >> 2;
            cr += rep_j & ((lj < le) | ((lj == le) & (mj < m)));
            g += head_j & (lj < le);
            count += rep_j & (lj == le);
            total_r += rep_j;
            total_g += head_j;
            first_invalid = (bad_j && invalid == 0) ? j : first_invalid;
            invalid += bad_j;
            if (++kj == top_k) {
                kj = 0;
                ++mj;
            }
        }
        cr_of[i] = le >= 0 ? cr : -1;
        if (p & ZP_RT_REP) {
            crow[ZP_ROW_WORDS * cr + 0] = le;
            crow[ZP_ROW_WORDS * cr + 1] = m;
        }
        if (p & ZP_RT_HEAD) { /* the head is its group's first compact row */
            grp[ZP_GROUP_WORDS * g + 0] = le;
            grp[ZP_GROUP_WORDS * g + 1] = cr;
            grp[ZP_GROUP_WORDS * g + 2] = count;
        }
        if (i == 0) {
            ZP_RT_COUNT_R(s, routes) = total_r;
            ZP_RT_COUNT_G(s, routes) = total_g;
            ZP_RT_INVALID(s, routes) = invalid;
            ZP_RT_FIRST_INVALID(s, routes) = first_invalid;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Copies the local route table to global memory, as route_compact's outputs: route_info =
 * {R, G, invalid ids, first invalid route} (the §5.1 error flag the host reports),
 * compact_rows[r] for r < R, route_row[m*K+k] = cr(m, k) or -1, groups[g] for g < G. Entries
 * past R / G are left as they were: consumers never read them. Any work-items of one
 * work-group; no barrier. */
ZP_FN void zp_store_routes(local const int* s, int routes, int lid, int items, global int* route_info,
                           global int* compact_rows, global int* route_row, global int* groups) {
    const int r = ZP_RT_COUNT_R(s, routes), g = ZP_RT_COUNT_G(s, routes);
    if (lid == 0) {
        route_info[ZP_INFO_ROUTES] = r;
        route_info[ZP_INFO_GROUPS] = g;
        route_info[ZP_INFO_INVALID] = ZP_RT_INVALID(s, routes);
        route_info[ZP_INFO_FIRST_INVALID] = ZP_RT_FIRST_INVALID(s, routes);
    }
    for (int i = lid; i < routes; i += items) route_row[i] = ZP_RT_CR(s, routes)[i];
    for (int i = lid; i < ZP_ROW_WORDS * r; i += items) compact_rows[i] = ZP_RT_ROWS(s, routes)[i];
    for (int i = lid; i < ZP_GROUP_WORDS * g; i += items) groups[i] = ZP_RT_GROUPS(s, routes)[i];
}

#endif
