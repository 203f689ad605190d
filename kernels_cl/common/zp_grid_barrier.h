/* A device-wide barrier for a cooperative launch (zeCommandListAppendLaunchCooperativeKernel with
 * at most zeKernelSuggestMaxCooperativeGroupCount groups): OpenCL C 1.2 atomics only, so PoCL,
 * Intel's CPU runtime and NVIDIA's OpenCL (1.2 only) all build it.
 *
 * `state` is two uints in global memory, zeroed once when allocated: [0] groups arrived,
 * [1] generation. The barrier leaves [0] at zero again, so the same words serve every barrier
 * of every later launch without a reset. It is only safe when every group of the grid is
 * resident at once: a group that never starts leaves the others spinning forever.
 *
 * Visibility: before arriving, each group's barrier(CLK_GLOBAL_MEM_FENCE) and mem_fence order
 * its global stores before its atomic; after the release the same fences order the spin's
 * atomic before later loads. That does not stop a plain load from hitting a stale line in a
 * cache that is not coherent across compute units (NVIDIA's L1): read what another group wrote
 * before the barrier through ZP_GRID_SHARED pointers (volatile: the load goes to the coherent
 * level) or with atomics. */
#ifndef ZP_GRID_BARRIER_H
#define ZP_GRID_BARRIER_H

/* Self-contained (the zecl tests embed this file alone): ZP_FN as zp_platform.h defines it. */
#ifndef ZP_FN
#define ZP_FN static inline __attribute__((always_inline))
#endif

/* Qualifier for pointers to data that crosses a grid barrier (written by one group before it,
 * read by another after it). */
#define ZP_GRID_SHARED volatile __global

ZP_FN uint zp_grid_groups(void) { return (uint)(get_num_groups(0) * get_num_groups(1) * get_num_groups(2)); }

/* Work-item (0, 0, 0)'s arrival: the last group to arrive resets the count (nobody arrives again
 * before the release) and then advances the generation, which releases the waiters. */
ZP_FN void zp_grid_arrival(volatile __global uint* state) {
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    if (atomic_inc(&state[0]) == zp_grid_groups() - 1u) {
        atomic_xchg(&state[0], 0u);
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        atomic_inc(&state[1]);
    }
}

ZP_FN int zp_grid_leader(void) { return get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0; }

/* Arrives at the barrier without waiting for the others: for a group with no work after it
 * (it reads nothing the others wrote before it), which then leaves the device rather than spin
 * beside groups that still work on its compute unit. Every group of the grid arrives exactly
 * once per barrier, through this or zp_grid_barrier. */
ZP_FN void zp_grid_arrive(volatile __global uint* state) {
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (zp_grid_leader()) zp_grid_arrival(state);
}

ZP_FN void zp_grid_barrier(volatile __global uint* state) {
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (zp_grid_leader()) {
        /* The generation is read before arriving: it can only advance once every group,
         * this one included, has arrived. */
        const uint generation = atomic_add(&state[1], 0u);
        zp_grid_arrival(state);
        while (atomic_add(&state[1], 0u) == generation) {}
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
}

/* A rank for each group of a cooperative grid that spreads the low ranks over the compute units:
 * ranks 0, 1, ... go to one group on each compute unit in turn before any unit gets a second.
 * A persistent kernel that hands its units out by rank instead of by group id then runs a phase
 * with fewer units than groups on as many compute units as it can, where by group id the
 * dispatcher may have put two busy groups on one unit and left another idle (NVIDIA: groups 0-131
 * of 264 land on only 124 of the H200's 132 SMs; docs/perf.md "Units spread over the SMs").
 *
 * `cu` is the compute unit the caller says this group runs on (zp_cu_id, or any value: the rank
 * is a permutation of the group ids whatever the values, so they decide speed, never bits).
 * state: 2 + groups uints, [0] and [1] zeroed once when allocated (the last group to rank resets
 * them), [2 + g] group g's cu. Rank r of group g: its slot s (the groups before it with the same
 * cu) and its cu c sort as (s, c); r counts the groups that sort before it, so it is
 * sum over units u of min(groups on u, s) + the units u < c with more than s groups. A cu of
 * ZP_GRID_RANK_MAX_CUS or more anywhere in the grid gives every group its own id.
 *
 * Every work-item of every group calls it (or none of any group), at most once per launch, with
 * local int[ZP_GRID_RANK_LOCAL_INTS]. It waits until every group has published its cu (only
 * safe in a co-resident grid, as the barrier), which costs the spread between the groups'
 * starts: 1.5-2 us on the H200. */
#ifndef ZP_GRID_RANK_MAX_CUS /* abi/zp_abi.h's, where this header is not built alone */
#define ZP_GRID_RANK_MAX_CUS 512
#endif
#define ZP_GRID_RANK_LOCAL_INTS (ZP_GRID_RANK_MAX_CUS + 3)

ZP_FN uint zp_grid_group(void) {
    return (uint)(get_group_id(0) + get_num_groups(0) * (get_group_id(1) + get_num_groups(1) * get_group_id(2)));
}

/* The rank of group `me` of n from every group's cu (cus[0 .. n), read once each): every work-item
 * of the group calls it; `scratch` is the caller's again when it returns. */
ZP_FN uint zp_grid_rank_of(ZP_GRID_SHARED const uint* cus, uint n, uint me, __local int* scratch) {
    const uint lid =
        (uint)(get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2)));
    const uint items = (uint)(get_local_size(0) * get_local_size(1) * get_local_size(2));
    __local int* per_cu = scratch;                      /* groups on each compute unit */
    __local int* mine = scratch + ZP_GRID_RANK_MAX_CUS; /* [0] slot, [1] rank, [2] a cu out of range */
    for (uint u = lid; u < ZP_GRID_RANK_MAX_CUS; u += items) per_cu[u] = 0;
    if (lid == 0) {
        mine[0] = 0;
        mine[1] = 0;
        mine[2] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint own = cus[me];
    for (uint g = lid; g < n; g += items) {
        const uint cu = cus[g];
        if (cu >= ZP_GRID_RANK_MAX_CUS) {
            atomic_xchg(&mine[2], 1);
        } else {
            atomic_inc(&per_cu[cu]);
            if (cu == own && g < me) atomic_inc(&mine[0]);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int slot = mine[0];
    for (uint u = lid; u < ZP_GRID_RANK_MAX_CUS; u += items) {
        const int k = per_cu[u];
        const int before = min(k, slot) + (u < own && k > slot);
        if (before) atomic_add(&mine[1], before);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint rank = mine[2] ? me : (uint)mine[1];
    barrier(CLK_LOCAL_MEM_FENCE); /* every work-item has read it */
    return rank;
}

ZP_FN uint zp_grid_rank(volatile __global uint* state, uint cu, __local int* scratch) {
    const uint n = zp_grid_groups(), me = zp_grid_group();
    if (zp_grid_leader()) {
        atomic_xchg(&state[2 + me], cu);
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        atomic_inc(&state[0]);
        while (atomic_add(&state[0], 0u) < n) {}
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const uint rank = zp_grid_rank_of(state + 2, n, me, scratch);
    if (zp_grid_leader() && atomic_inc(&state[1]) == n - 1u) { /* every group has read the cus: reset */
        atomic_xchg(&state[0], 0u);
        atomic_xchg(&state[1], 0u);
    }
    return rank;
}

#endif
