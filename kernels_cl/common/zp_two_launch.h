/* two_launch's kernel bodies: the whole chain in two launches, A then B, with no route_compact,
 * remap, swiglu or gather launch and no gate_up or a buffer. The bodies are ZP_FN functions so
 * that a persistent kernel (one_launch: A, then B ordered per expert group) calls the very same code;
 * two_launch_a.cl / two_launch_b.cl are the two-launch wrappers.
 *
 * Shapes as by-value arguments, as every kernel (README "Argument conventions"); MK = M * K.
 * Work-group: ZP_LANES x ZP_GEMM_ITEMS_Y work-items (ZP_GEMM_ATTRS), items =
 * ZP_LANES * ZP_GEMM_ITEMS_Y, lid = get_local_id(1) * ZP_LANES + get_local_id(0). Every body
 * must be called by every work-item of the work-group (barriers), with work-group-uniform
 * arguments. Every tile (ZP_GEMM_TILE 0, 2) and tuning knob.
 *
 * Local memory a work-group needs (the caller owns it; several bodies in a row may reuse it):
 *   routes  local int[ZP_ROUTE_SCRATCH_INTS(MK)]       the route table (zp_routes.h)
 *   red     local float[ZP_GEMM_RED_FLOATS]            the GEMM tile's (static in the wrappers)
 *   last    local int                                  B only: "this unit completed its tile"
 *
 * 1. zp_derive_routes(topk_ids, M, K, E, C, card, routes, lid, items) (zp_routes.h): EVERY
 *    work-group derives §5.1-5.2 itself into `routes` before A or B (it costs O(MK^2 / items)
 *    integer steps, a few hundred cycles at MK = 12: cheaper than a launch or a global
 *    round trip). Ids outside [0, E) are not local.
 * 2. zp_tl_store_routes(routes, ...): exactly ONE work-group of the chain (two_launch: A's
 *    group 0) writes route_info / compact_rows / route_row / groups as route_compact does,
 *    so the host reads R, the compact rows, cr(m, k) and the §5.1 error flag (invalid-id count,
 *    first invalid route) exactly as for every other variant. Nothing on the device reads them.
 * 3. zp_tl_gemm1_tile(routes, tile, g, ...), kernel A's unit of work: expert group g (< G, the
 *    groups in le order) and pair tile `tile` (< ceil(I / ZP_GEMM_PAIRS_PER_WG)): act[r][i] for
 *    the group's compact rows r and the tile's gate/up pairs i (§5.4-5.5, the paired epilogue,
 *    zp_gemm_paired.h), reading the rows' source rows of `hidden` directly (no remap). Returns
 *    at once when g >= G. act is [MK, I] in compact-row order; rows >= R are never written.
 *    zp_tl_gemm1_units loops a work-group over its units u = g * tiles + tile of a 1D grid of
 *    any size (two_launch_a, one_launch's first phase; the host takes the count the device keeps
 *    resident), handing each unit its successor through a zp_carry (the caller's, from
 *    zp_no_carry()): with ZP_STREAM_CARRY the unit loads the next one's first weight iteration.
 * 4. zp_tl_gemm2_unit(routes, tile, g, run, ...), kernel B's unit of work: column tile `tile` of
 *    y for expert group g's compact rows (the same units as gemm2's, so B has gemm2's
 *    parallelism; with ZP_B_RUNS, groups g * run .. g * run + run - 1, one stream), to y [MK, H]
 *    in global memory; the tile's last unit to finish (a per-tile count that resets itself)
 *    writes the tile's columns of out for every token row in §5.7's route order.
 *    zp_tl_gemm2_units loops over them as A's do. Reads act, which every A unit of its group
 *    must have finished (two_launch: the launch boundary; one_launch: phase_ready,
 *    zp_ol_wait_ready; no group reads a line of act before then, so no cache holds a stale line).
 *
 * Compact M2 at run time: an expert group with one compact row runs a 1-row specialisation of
 * the tile (the dead rows' loads, fmas, lane sums and tree fold away), one with more rows runs
 * passes of up to ZP_GEMM_ROWS_PER_PASS rows, each weight block read once per pass. The build
 * knob rows_per_pass sets the widest pass. The lane tile gets the specialisation from a
 * call with a literal 1 row; the stream tile picks its 1-row body per pass itself, so there a
 * literal would build that body a second time in each phase (ZP_TL_ONE_ROW_LITERAL). */
#ifndef ZP_TWO_LAUNCH_H
#define ZP_TWO_LAUNCH_H

#include "zp_platform.h"
#include "zp_routes.h"
#include "zp_gemm.h"
#include "zp_gemm_paired.h"
#include "zp_grid_barrier.h"

/* 1: a 1-row group calls the GEMV with a literal 1 row (the lane tile); 0: with its
 * count (the stream tile, whose second 1-row body cost one_launch spills on NVIDIA and Xe2). */
#define ZP_TL_ONE_ROW_LITERAL (ZP_GEMM_TILE != 2)

ZP_FN int zp_tl_lid(void) { return (int)(get_local_id(1) * ZP_LANES + get_local_id(0)); }
#define ZP_TL_ITEMS (ZP_LANES * ZP_GEMM_ITEMS_Y)

ZP_FN void zp_tl_store_routes(local const int* routes, int rows, int top_k, global int* route_info,
                              global int* compact_rows, global int* route_row, global int* groups) {
    zp_store_routes(routes, rows * top_k, zp_tl_lid(), ZP_TL_ITEMS, route_info, compact_rows, route_row, groups);
}

ZP_FN void zp_tl_gemm1_tile(local const int* routes, int rows, int top_k, int tile, int g,
                            global const ushort* hidden_x, /* [M, H] */
                            global const uchar* w1_blocks, global const uchar* w1_scales, global const ushort* silu,
                            global ushort* act, /* [MK, I] */
                            int hidden, int intermediate, float limit, float up_bias, int layout,
                            private zp_carry* carry, local float* red) {
    const int mk = rows * top_k;
    if (g >= ZP_RT_COUNT_G(routes, mk)) return;
    local const int* grp = ZP_RT_GROUPS(routes, mk) + ZP_GROUP_WORDS * g;
    const int le = grp[0], first = grp[1], count = grp[2];
    local const int* crow = ZP_RT_ROWS(routes, mk);
    if (ZP_TL_ONE_ROW_LITERAL && count == 1)
        zp_gemm1_paired_group_carried(w1_blocks, w1_scales, le, hidden, intermediate, layout, tile, hidden_x, 0, crow,
                                      1, first, 1, silu, limit, up_bias, act, carry, red);
    else
        zp_gemm1_paired_group_carried(w1_blocks, w1_scales, le, hidden, intermediate, layout, tile, hidden_x, 0, crow,
                                      1, first, count, silu, limit, up_bias, act, carry, red);
}

/* one_launch's order between its phases, per expert group instead of a device-wide barrier:
 * ready[g] counts the finished A units of expert group g (zp_ol_signal_ready), ready[R] the B
 * units that saw theirs all (R = ZP_OL_READY_PASSED(M*K): past the most groups there can be). A
 * B unit of g waits until every A unit of the groups whose act rows may share a cache line with
 * g's has finished, so no line of act that a B unit reads (and any cache keeps) holds a row still
 * being written: g alone where the rows are whole lines apart (act 128-byte aligned, I * 2 bytes
 * a multiple of 128), else every group. The last B unit to pass resets every word (every A unit
 * has arrived and no B unit waits again in this launch), so they are zero at every launch's start
 * (zeroed once when allocated: ZP_OL_READY_WORDS). Deadlock-free in a cooperative grid: every
 * group finishes its A units before its first wait, and an A unit waits for nothing.
 *
 * Only one_launch counts: it defines ZP_TL_PHASE_READY 1 before including this header, and in
 * two_launch (ready: null; its launch boundary orders the phases) both functions are empty. A
 * build-time switch rather than `if (ready)`: PoCL 3.1 built the barriers under that (uniform)
 * branch into a one_launch whose B units read act too early (y wrong in 18-38 of 168 cases at
 * H = 256, I = 128), and two_launch takes no barrier it does not need. */
#ifndef ZP_TL_PHASE_READY
#define ZP_TL_PHASE_READY 0
#endif
/* Kernel A's tiles per expert group (pair tiles of I) and kernel B's (column tiles of H). */
ZP_FN int zp_tl_tiles_a(int intermediate) { return (intermediate + ZP_GEMM_PAIRS_PER_WG - 1) / ZP_GEMM_PAIRS_PER_WG; }
ZP_FN int zp_tl_tiles_b(int hidden) { return (hidden + ZP_GEMM_COLS_PER_WG - 1) / ZP_GEMM_COLS_PER_WG; }
/* Their units for G = groups expert groups (B: runs of `run` groups, zp_tl_run_b; one group's
 * tiles when G = 0, which write out's zeros). */
ZP_FN int zp_tl_units_a(int groups, int intermediate) { return zp_tl_tiles_a(intermediate) * groups; }
ZP_FN int zp_tl_units_b(int groups, int hidden, int run) {
    return zp_tl_tiles_b(hidden) * max((groups + run - 1) / run, 1);
}

/* ZP_B_RUNS (the b_runs knob, stream tile): kernel B's units as runs of several expert groups'
 * GEMVs of one column tile, back to back in one weight stream (zp_stream_gemm_run), where every
 * expert group has one compact row. A unit of one group restarts the stream: it stages its
 * activations and waits for its first weights' latency, then ends in its tile's arrival; a run
 * pays that once for all its groups. 1: one group per unit; 0: the run that puts the fewest
 * groups on the busiest work-group of the grid (n work-groups: its rounds of units times the run),
 * the longest among equals (six_local on the H200: 12 groups x 64 tiles for 264 work-groups, 3
 * groups each, as 3 units or as 1 run of 3: a run of 3); N >= 2: N (tests). At most the runs'
 * staging allows (ZP_ST_RUN_BLOCKS) and G. */
#ifndef ZP_B_RUNS
#define ZP_B_RUNS 1
#endif
#if ZP_GEMM_TILE == 2 && ZP_ST_RUNS && ZP_B_RUNS != 1
#define ZP_TL_RUNS 1
#else
#define ZP_TL_RUNS 0
#endif
/* Column tile `tile` of y for the nrun one-row expert groups at grp (their route-table words) in
 * one stream; nothing without ZP_TL_RUNS (zp_tl_run_b then runs one group per unit). */
ZP_FN void zp_tl_gemm2_run(local const int* grp, int nrun, int tile, global const ushort* act,
                           global const uchar* w2_blocks, global const uchar* w2_scales, global ushort* y, int hidden,
                           int intermediate, local float* red) {
#if ZP_TL_RUNS
    zp_stream_gemm_run(w2_blocks, w2_scales, grp, ZP_GROUP_WORDS, nrun, hidden, intermediate, tile, act, y, red);
#endif
}
/* Expert groups per B unit (zp_tl_gemm2_units): 1 unless ZP_TL_RUNS and every group has one row. */
ZP_FN int zp_tl_run_b(local const int* routes, int mk, int groups, int hidden, int intermediate, int n) {
#if ZP_TL_RUNS
    local const int* grp = ZP_RT_GROUPS(routes, mk);
    const ulong expert_blocks = (ulong)hidden * (ulong)(intermediate / 32);
    for (int g = 0; g < groups; ++g) /* one row each, rows as 32-bit block offsets (zp_stream_gemm_run) */
        if (grp[ZP_GROUP_WORDS * g + 2] != 1 || (ulong)(grp[ZP_GROUP_WORDS * g] + 1) * expert_blocks > 0xFFFFFFFFul)
            return 1;
    const int kb16 = (intermediate / 32 + 15) / 16 * 16;
    const int most = min(ZP_ST_RUN_BLOCKS / max(kb16, 16), groups);
    if (most < 2) return 1;
#if ZP_B_RUNS >= 2
    return min(ZP_B_RUNS, most);
#else
    /* the fewest groups on the busiest work-group (its rounds of units times the run), the longest
     * run among equals */
    const int tiles = zp_tl_tiles_b(hidden);
    int run = 1, least = (tiles * groups + n - 1) / n;
    for (int r = 2; r <= most; ++r) {
        const int busiest = (tiles * ((groups + r - 1) / r) + n - 1) / n * r;
        if (busiest <= least) {
            least = busiest;
            run = r;
        }
    }
    return run;
#endif
#else
    return 1;
#endif
}
#define ZP_OL_READY_PASSED(mk) (ZP_OL_READY_WORDS(mk) - 1) /* the last word (abi/zp_abi.h) */
#define ZP_OL_LINE_BYTES 128

ZP_FN void zp_ol_signal_ready(volatile global uint* ready, int g) {
#if ZP_TL_PHASE_READY
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE); /* the unit's act stores */
    if (zp_tl_lid() == 0) {
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        atomic_inc(&ready[g]);
    }
#endif
}

ZP_FN void zp_ol_wait_ready(local const int* routes, int mk, int g, global const ushort* act, int hidden,
                            int intermediate, volatile global uint* ready) {
#if ZP_TL_PHASE_READY
    const int groups = ZP_RT_COUNT_G(routes, mk);
    const uint tiles_a = (uint)zp_tl_tiles_a(intermediate), tiles_b = (uint)zp_tl_tiles_b(hidden);
    const int whole_lines =
        ((size_t)act % ZP_OL_LINE_BYTES) == 0 && ((size_t)intermediate * sizeof(ushort)) % ZP_OL_LINE_BYTES == 0;
    const int g0 = whole_lines ? g : 0, g1 = whole_lines ? g : groups - 1;
    if (zp_tl_lid() == 0) {
        for (int h = g0; h <= g1; ++h)
            while (atomic_add(&ready[h], 0u) < tiles_a) {}
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        volatile global uint* passed = ready + ZP_OL_READY_PASSED(mk);
        if (atomic_inc(passed) + 1u == tiles_b * (uint)groups) {
            for (int h = 0; h < groups; ++h) atomic_xchg(&ready[h], 0u);
            atomic_xchg(passed, 0u);
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
#endif
}

/* Kernel A's unit: zp_tl_gemm1_tile, then (one_launch) its arrival in ready[g]. */
ZP_FN void zp_tl_gemm1_unit(local const int* routes, int rows, int top_k, int tile, int g,
                            global const ushort* hidden_x, /* [M, H] */
                            global const uchar* w1_blocks, global const uchar* w1_scales, global const ushort* silu,
                            global ushort* act, /* [MK, I] */
                            int hidden, int intermediate, float limit, float up_bias, int layout,
                            volatile global uint* ready, private zp_carry* carry, local float* red) {
    zp_tl_gemm1_tile(routes, rows, top_k, tile, g, hidden_x, w1_blocks, w1_scales, silu, act, hidden, intermediate,
                     limit, up_bias, layout, carry, red);
    zp_ol_signal_ready(ready, g);
}

/* kernel B's unit of work: column tile `tile` (< ceil(H / ZP_GEMM_COLS_PER_WG)) of y (§5.6) for
 * the compact rows of expert group g (< G), written to y [MK, H] like gemm2 (a group of one row
 * by the 1-row body, wider groups by passes of ZP_GEMM_ROWS_PER_PASS rows: the weight tile read
 * once per pass); with run > 1 (zp_tl_run_b: every group has one row) the groups g * run to
 * min(G, g * run + run) - 1 in one stream (zp_stream_gemm_run). tile_done[tile] counts the
 * tile's finished groups; the unit that completes it last resets the count to 0 (the words are
 * zeroed once when allocated and left so by every launch) and writes out[m][h] for every row m
 * and the tile's columns h in §5.7's route order (rows without a local route get +0.0), reading
 * the other units' y through ZP_GRID_SHARED (past any cache that is not coherent across compute
 * units). With no local group (G == 0) unit (tile, 0) writes the tile's zeros at once; units
 * g * run >= max(G, 1) return at once. last: a local int of the kernel's. Every work-item of the
 * work-group calls it.
 *
 * ready (one_launch; null in two_launch_b, whose launch boundary orders A before B): the expert
 * groups' A-unit counts (zp_ol_wait_ready), waited for before the unit reads act. */
ZP_FN void zp_tl_gemm2_unit(local const int* routes, int rows, int top_k, int tile, int g, int run,
                            global const ushort* act, /* [MK, I] */
                            global const uchar* w2_blocks, global const uchar* w2_scales,
                            global ushort* y,                                                  /* [MK, H] */
                            volatile global uint* tile_done, global const float* topk_weights, /* [M, K] */
                            global ushort* out,                                                /* [M, H] */
                            int hidden, int intermediate, volatile global uint* ready, local int* last,
                            local float* red) {
    const int mk = rows * top_k;
    const int groups = ZP_RT_COUNT_G(routes, mk);
    const int g0 = g * run; /* the unit's first expert group */
    if (g0 >= max(groups, 1)) return;
    int gather = 1; /* work-group-uniform */
    if (groups > 0) {
        local const int* grp = ZP_RT_GROUPS(routes, mk) + ZP_GROUP_WORDS * g0;
        const int le = grp[0], first = grp[1], count = grp[2];
        const int nrun = min(run, groups - g0);
        for (int h = g0; h < g0 + nrun; ++h) zp_ol_wait_ready(routes, mk, h, act, hidden, intermediate, ready);
        if (ZP_TL_RUNS && nrun > 1)
            zp_tl_gemm2_run(grp, nrun, tile, act, w2_blocks, w2_scales, y, hidden, intermediate, red);
        else if (ZP_TL_ONE_ROW_LITERAL && count == 1)
            zp_gemm_group(w2_blocks, w2_scales, le, hidden, intermediate, tile, act, 0, first, 1, y, 0, 0, first, red);
        else
            zp_gemm_group(w2_blocks, w2_scales, le, hidden, intermediate, tile, act, 0, first, count, y, 0, 0, first,
                          red);
        /* The work-group's y stores, then its arrival for its nrun groups (the fences as zp_grid_barrier's). */
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (zp_tl_lid() == 0) {
            mem_fence(CLK_GLOBAL_MEM_FENCE);
            const int done = atomic_add(&tile_done[tile], (uint)nrun) + (uint)nrun == (uint)groups;
            if (done) atomic_xchg(&tile_done[tile], 0u); /* nobody arrives at this tile again in this launch */
            mem_fence(CLK_GLOBAL_MEM_FENCE);
            *last = done;
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        gather = *last;
        barrier(CLK_LOCAL_MEM_FENCE); /* every work-item has read it before a next unit writes it */
    }
    /* The gather as one loop whose trip count is 0 unless this unit gathers: written as
     * `if (gather) for ...`, PoCL 3.1's build of one_launch overwrote host memory (heap
     * corruption after the launch; no index out of range, and not with a printf in the loop). */
    local const int* cr_of = ZP_RT_CR(routes, mk);
    ZP_GRID_SHARED const ushort* ys = y;
    const int h0 = tile * ZP_GEMM_COLS_PER_WG;
    const int gathered = gather ? rows * ZP_GEMM_COLS_PER_WG : 0;
    for (int e = zp_tl_lid(); e < gathered; e += ZP_TL_ITEMS) {
        const int m = e / ZP_GEMM_COLS_PER_WG, h = h0 + e - m * ZP_GEMM_COLS_PER_WG;
        if (h >= hidden) continue;
        float acc = 0.0f;
        for (int k = 0; k < top_k; ++k) {
            const int r = cr_of[m * top_k + k];
            if (r < 0) continue;
            acc = fma(topk_weights[m * top_k + k], zp_bf16_to_f32(ys[(size_t)r * hidden + h]), acc);
        }
        out[(size_t)m * hidden + h] = zp_f32_to_bf16(acc);
    }
}

/* A work-group's walk over a phase's units: u = wg, wg + n, ... < units of a grid of n, with
 * (g, tile) of unit u = g * tiles + tile stepped without a division (zp_unit_step); BODY sees g
 * and tile, and (g_next, tile_next) of the group's next unit where has_next. Any n >= 1 gives the
 * same bits (a unit's result does not depend on which group runs it). */
#define ZP_TL_FOR_UNITS(wg, n, units, tiles, BODY)                          \
    {                                                                       \
        int g = (wg) / (tiles), tile = (wg)-g * (tiles);                    \
        const int step_g = (n) / (tiles), step_tile = (n)-step_g * (tiles); \
        for (int u = (wg); u < (units); u += (n)) {                         \
            int g_next = g, tile_next = tile;                               \
            zp_unit_step(&g_next, &tile_next, step_g, step_tile, (tiles));  \
            const int has_next = u + (n) < (units);                         \
            BODY;                                                           \
            g = g_next;                                                     \
            tile = tile_next;                                               \
        }                                                                   \
    }

/* The carry's next unit (zp_carry): expert group g's expert and column tile `tile`, or none. */
ZP_FN void zp_tl_set_next(private zp_carry* carry, local const int* routes, int mk, int has_next, int g, int tile) {
    carry->next_le = has_next ? ZP_RT_GROUPS(routes, mk)[ZP_GROUP_WORDS * g] : -1;
    carry->next_tile = tile;
}

/* Kernel A's units (tiles = ceil(I / ZP_GEMM_PAIRS_PER_WG), units = tiles * G; `groups` = G,
 * ZP_RT_COUNT_G of the table) for work-group wg of a grid of n: two_launch_a and one_launch's
 * first phase. */
ZP_FN void zp_tl_gemm1_units(local const int* routes, int rows, int top_k, int groups, int wg, int n,
                             global const ushort* hidden_x, /* [M, H] */
                             global const uchar* w1_blocks, global const uchar* w1_scales, global const ushort* silu,
                             global ushort* act, /* [MK, I] */
                             int hidden, int intermediate, float limit, float up_bias, int layout,
                             volatile global uint* ready, private zp_carry* carry, local float* red) {
    const int tiles = zp_tl_tiles_a(intermediate);
    const int units = zp_tl_units_a(groups, intermediate);
    ZP_TL_FOR_UNITS(wg, n, units, tiles, {
        zp_tl_set_next(carry, routes, rows * top_k, has_next, g_next, tile_next);
        zp_tl_gemm1_unit(routes, rows, top_k, tile, g, hidden_x, w1_blocks, w1_scales, silu, act, hidden, intermediate,
                         limit, up_bias, layout, ready, carry, red);
    })
}

/* Kernel B's units (tiles = ceil(H / ZP_GEMM_COLS_PER_WG), units = zp_tl_units_b: tiles * max(G, 1)
 * without runs) for work-group wg of a grid of n: two_launch_b and one_launch's second phase. */
ZP_FN void zp_tl_gemm2_units(local const int* routes, int rows, int top_k, int groups, int wg, int n,
                             global const ushort* act, /* [MK, I] */
                             global const uchar* w2_blocks, global const uchar* w2_scales,
                             global ushort* y,                                                  /* [MK, H] */
                             volatile global uint* tile_done, global const float* topk_weights, /* [M, K] */
                             global ushort* out,                                                /* [M, H] */
                             int hidden, int intermediate, volatile global uint* ready, local int* last,
                             local float* red) {
    const int tiles = zp_tl_tiles_b(hidden);
    const int run = zp_tl_run_b(routes, rows * top_k, groups, hidden, intermediate, n);
    const int units = zp_tl_units_b(groups, hidden, run);
    ZP_TL_FOR_UNITS(wg, n, units, tiles,
                    zp_tl_gemm2_unit(routes, rows, top_k, tile, g, run, act, w2_blocks, w2_scales, y, tile_done,
                                     topk_weights, out, hidden, intermediate, ready, last, red))
}

#endif
