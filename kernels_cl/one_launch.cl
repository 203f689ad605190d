/* one_launch: two_launch's A and B (common/zp_two_launch.h, the very same bodies) in one
 * persistent kernel, for a cooperative launch (zeCommandListAppendLaunchCooperativeKernel) of at
 * most zeKernelSuggestMaxCooperativeGroupCount work-groups. The grid is whatever that count
 * allows, not A's or B's grid, so every work-group loops over the units of work: A's (pair tile,
 * expert group) units u = wg, wg + n, ... < tiles * G, then B's (column tile, expert group, or with
 * ZP_B_RUNS a run of one-row expert groups) units the same way (B's tiles complete themselves
 * through tile_done). No device-wide barrier between
 * the phases: a B unit of expert group g waits only for the A units of g (and of the groups whose
 * act rows share its cache lines), counted in phase_ready (zp_ol_wait_ready), so B units start
 * while the last A units of other groups run. Any grid of at least one group gives the same bits
 * (a unit's result does not depend on which group computes it).
 *
 * Every work-group derives the route table itself, once; group 0 stores it for the host.
 * Data crossing the phases: act (written by A units, read by B units after their group's count is
 * complete; no group reads a line of act before then, and a launch starts with no cached line of
 * it, so no cache can hold a stale copy) and y (B units, read by a tile's last unit through
 * ZP_GRID_SHARED).
 *
 * Units by rank (ZP_SPREAD_UNITS, below): the groups hand out the units by their zp_grid_rank
 * rather than their ids, which spreads a phase with fewer units than groups over the compute
 * units.
 *
 * phase_ready: ZP_OL_SCRATCH_WORDS(M*K) uints, its counts (ZP_OL_COUNT_WORDS) zeroed once when
 * allocated, and tile_done: ceil(H / ZP_GEMM_COLS_PER_WG) uints, zeroed once when allocated (the
 * kernel leaves them so). y: [M*K, H] scratch. Grid: (n, 1, 1) with 1 <= n <= the suggested
 * count; n beyond max(tiles_a * min(M*K, E/C), tiles_b * max(1, min(M*K, E/C))) only idles.
 * routes: local int[ZP_ROUTE_SCRATCH_INTS(M*K)]. */
#define ZP_TL_PHASE_READY 1 /* B units wait per expert group (zp_ol_wait_ready) */
#include "common/zp_two_launch.h"

/* ZP_SPREAD_UNITS (the spread_units knob): 1 = hand the units out by zp_grid_rank over the
 * platform's compute unit ids (NVIDIA's SMs; nothing where the platform gives none), so that a
 * phase with fewer units than groups runs them on as many compute units as it can; 2 = the same
 * over a made-up uneven placement (every platform: the tests' way to run the ranking). */
#ifndef ZP_SPREAD_UNITS
#define ZP_SPREAD_UNITS 0
#endif
#define ZP_OL_SPREAD (ZP_SPREAD_UNITS == 2 || (ZP_SPREAD_UNITS == 1 && ZP_HAVE_CU_ID))
#if ZP_OL_SPREAD && ZP_GEMM_RED_FLOATS < ZP_GRID_RANK_LOCAL_INTS
#error "spread_units ranks in the GEMM tile's local memory, which is too small for it at this tiling"
#endif
/* Whether ranking pays for its wait (zp_grid_rank): where a phase leaves a quarter or more of the
 * grid idle and has more units than a quarter of it. Fewer units than that already land on
 * distinct SMs by group id (NVIDIA dispatches ids 0 to S/2 - 1 to S/2 distinct SMs of the H200's
 * S = 132; at 2 groups per SM, n / 4); more than 3n/4 leave too few idle groups to move. On the
 * H200 (docs/perf.md "Units spread over the SMs") the wait costs 1.5-2 us and the spread gains
 * same_typical (128 units for 264 groups) 5.5 us and cross_row_overlap (192) 1.5. The made-up
 * placement (2) always ranks, so that the tests run the ranking. */
ZP_FN int zp_ol_spread_pays(local const int* routes, int mk, int groups_g, int hidden, int intermediate, int n) {
#if ZP_SPREAD_UNITS == 2
    return 1;
#else
    const int units_a = zp_tl_units_a(groups_g, intermediate),
              units_b = zp_tl_units_b(groups_g, hidden, zp_tl_run_b(routes, mk, groups_g, hidden, intermediate, n));
    return (4 * units_a > n && 4 * units_a <= 3 * n) || (4 * units_b > n && 4 * units_b <= 3 * n);
#endif
}
#if ZP_OL_SPREAD
ZP_FN uint zp_ol_cu_id(int wg) {
#if ZP_SPREAD_UNITS == 2
    return (uint)(wg * 5 + 3) % 7u; /* 7 made-up units, unevenly loaded */
#else
    return zp_cu_id();
#endif
}
#endif

kernel ZP_GEMM_ATTRS void one_launch(global const zp_topk_id_t* topk_ids, global const float* topk_weights, /* [M, K] */
                                     global const ushort* hidden_x,                                         /* [M, H] */
                                     global const uchar* w1_blocks, global const uchar* w1_scales,
                                     global const ushort* silu, global ushort* act, /* [M*K, I] */
                                     global const uchar* w2_blocks, global const uchar* w2_scales, global ushort* y,
                                     volatile global uint* tile_done, global ushort* out, /* [M, H] */
                                     global int* route_info, global int* compact_rows, global int* route_row,
                                     global int* groups, volatile global uint* phase_ready, int rows, int top_k,
                                     int experts, int cards, int card, int hidden, int intermediate, float limit,
                                     float up_bias, int layout, local int* routes) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    local int last;
    const int wg = (int)get_group_id(0), n = (int)get_num_groups(0);
    const int mk = rows * top_k;
    zp_derive_routes(topk_ids, rows, top_k, experts, cards, card, routes, zp_tl_lid(), ZP_TL_ITEMS);
    if (wg == 0) zp_tl_store_routes(routes, rows, top_k, route_info, compact_rows, route_row, groups);

    const int groups_g = ZP_RT_COUNT_G(routes, mk); /* G, the same in every group */
#if ZP_OL_SPREAD
    /* Units by rank (zp_grid_rank) where it pays */
    const int unit_wg = n <= ZP_OL_SPREAD_MAX_GROUPS && zp_ol_spread_pays(routes, mk, groups_g, hidden, intermediate, n)
                            ? (int)zp_grid_rank(phase_ready + ZP_OL_READY_WORDS(mk), zp_ol_cu_id(wg), (local int*)red)
                            : wg;
#else
    const int unit_wg = wg;
#endif
    zp_carry carry = zp_no_carry(); /* from A unit to A unit (ZP_STREAM_CARRY) */
    zp_tl_gemm1_units(routes, rows, top_k, groups_g, unit_wg, n, hidden_x, w1_blocks, w1_scales, silu, act, hidden,
                      intermediate, limit, up_bias, layout, phase_ready, &carry, red);
    zp_tl_gemm2_units(routes, rows, top_k, groups_g, unit_wg, n, act, w2_blocks, w2_scales, y, tile_done, topk_weights,
                      out, hidden, intermediate, phase_ready, &last, red);
}
