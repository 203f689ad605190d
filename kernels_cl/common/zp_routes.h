/* CONTRACT §5.1: which routes are local to this card. */
#ifndef ZP_ROUTES_H
#define ZP_ROUTES_H

#include "zp_platform.h"

/* The local expert of physical id `id` on card `card`, or -1 when the route is not local.
 * Ids outside [0, E) are invalid input: not local here, flagged by route_compact / m1_gather. */
ZP_FN int zp_local_expert(int id, int experts, int cards, int card) {
    if (id < 0 || id >= experts) return -1;
    const int per_card = experts / cards;
    const int le = id - card * per_card;
    return (le >= 0 && le < per_card) ? le : -1;
}

/* Writes route_info's error words for ids[0 .. routes): the §5.1 error flag. One work-item. */
ZP_FN void zp_flag_invalid_ids(global const int* topk_ids, int routes, int experts, global int* route_info) {
    int invalid = 0, first = -1;
    for (int i = 0; i < routes; ++i) {
        const int id = topk_ids[i];
        if (id < 0 || id >= experts) {
            if (invalid == 0) first = i;
            ++invalid;
        }
    }
    route_info[ZP_INFO_INVALID] = invalid;
    route_info[ZP_INFO_FIRST_INVALID] = first;
}

#endif
