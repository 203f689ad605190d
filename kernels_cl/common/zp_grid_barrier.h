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

#endif
