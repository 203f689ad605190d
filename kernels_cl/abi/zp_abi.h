/* The ABI of the kernels (DESIGN.md: "one small ABI header (tile constants, argument layout)
 * that host code may include"): tile sizes and buffer layouts shared by the OpenCL C kernels
 * and their host plans (scheduler/src/chain_plan.cpp), plain macros, no OpenCL types. The
 * only kernel header host code sees (CMake target zp_kernel_abi); the rest of kernels_cl/ is
 * the kernels' own.
 *
 * The ZP_GEMM_* tile sizes and ZP_E2M1_DECODE are build options. The defaults here are what
 * the packaged SPIR-V and native binaries are built with; the host plan (zp::scheduler::
 * KernelTuning) may pick others at run time for the zecl source bundle, which it then
 * builds with the matching -D options. The kernels carry reqd_work_group_size, so a
 * mismatch fails at launch instead of computing garbage. Shapes are NOT build options:
 * every shape key travels as a by-value kernel argument, so one package serves every
 * configuration (CONTRACT §1). */
#ifndef ZP_ABI_H
#define ZP_ABI_H

/* CONTRACT §4: 16 logical lanes. A GEMM work-group is ZP_LANES x ZP_GEMM_ITEMS_Y work-items:
 * lane = local id 0; local id 1 picks ZP_GEMM_COLS_PER_ITEM consecutive columns of the
 * tile of ZP_GEMM_COLS_PER_WG columns (one Intel sub-group per local id 1). */
#define ZP_LANES 16

#ifndef ZP_GEMM_COLS_PER_WG
#define ZP_GEMM_COLS_PER_WG 8
#endif
/* Columns one work-item walks in lockstep: its activations are loaded once for all of them.
 * Must divide ZP_GEMM_COLS_PER_WG and be even (paired_epilogue gives an item whole pairs). */
#ifndef ZP_GEMM_COLS_PER_ITEM
#define ZP_GEMM_COLS_PER_ITEM 2
#endif
#define ZP_GEMM_ITEMS_Y (ZP_GEMM_COLS_PER_WG / ZP_GEMM_COLS_PER_ITEM)
/* Activation rows one work-group pushes through a weight tile per pass: the M2 tiling.
 * An expert group with more rows than this (M > 2) takes several passes. */
#ifndef ZP_GEMM_ROWS_PER_PASS
#define ZP_GEMM_ROWS_PER_PASS 2
#endif
/* How CONTRACT §4 maps onto a GEMM work-group (both give the same bits): 0 = the lane tile
 * (work-item = logical lane, zp_gemm.h), 2 = the stream tile (work-item = a group of consecutive
 * lanes of a few columns, streaming whole rows, zp_gemv_stream.h; for devices bound by
 * instructions per element, such as the H200). 1, the block tile (work-item = 32-element block),
 * is gone: the stream tile beat it on every pattern that does GEMM work (docs/perf.md "Which GEMV
 * tile on NVIDIA?"). */
#ifndef ZP_GEMM_TILE
#define ZP_GEMM_TILE 0
#endif
#if ZP_GEMM_TILE != 0 && ZP_GEMM_TILE != 2
#error "ZP_GEMM_TILE must be 0 (the lane tile) or 2 (the stream tile)"
#endif
/* The stream tile: work-items per column (a divisor of 16; each owns 16 / SPLIT consecutive
 * lanes). A work-item walks ZP_STREAM_COLS = SPLIT * ZP_GEMM_COLS_PER_ITEM / 16 columns, so
 * SPLIT * ZP_GEMM_COLS_PER_ITEM must be a multiple of 16. */
#ifndef ZP_STREAM_SPLIT
#define ZP_STREAM_SPLIT 8
#endif
#define ZP_STREAM_COLS (ZP_STREAM_SPLIT * ZP_GEMM_COLS_PER_ITEM / ZP_LANES)
/* The stream tile: activation blocks (32 elements per row) staged in local memory at a time, a
 * multiple of 16 (local words: rows_per_pass * chunk * 20, BF16 pairs). */
#ifndef ZP_STREAM_CHUNK
#define ZP_STREAM_CHUNK 64
#endif
/* The stream tile: iterations of weight loads in flight (1 or 2). 1: the next iteration's,
 * issued when the current one starts, a chunk's first after its activations are staged. 2: the
 * next two, a chunk's first two issued before its activations are staged (their latency overlaps
 * the staging and its barriers), at 5 registers per column more. */
#ifndef ZP_STREAM_PREFETCH
#define ZP_STREAM_PREFETCH 1
#endif
/* How E2M1 codes are decoded (all exact): 0 = a __constant table, 1 = bit arithmetic; the
 * stream tile also takes 2 = a local-memory table, 3 = a shift into the subnormal range and
 * one multiply. */
#ifndef ZP_E2M1_DECODE
#define ZP_E2M1_DECODE 1
#endif

/* Running sums per work-item: one per (column, row of the pass). */
#define ZP_GEMM_ACC (ZP_GEMM_COLS_PER_ITEM * ZP_GEMM_ROWS_PER_PASS)
/* paired_epilogue: gate/up column pairs per work-group (2 columns each). */
#define ZP_GEMM_PAIRS_PER_WG (ZP_GEMM_COLS_PER_WG / 2)

/* Element-wise kernels (remap_rows, swiglu, gather, m1_swiglu, m1_gather). */
#ifndef ZP_ELEMWISE_WG
#define ZP_ELEMWISE_WG 64
#endif
/* route_compact runs as ONE work-group of this size (CONTRACT §5.2, deterministic, no atomics). */
#ifndef ZP_ROUTE_COMPACT_WG
#define ZP_ROUTE_COMPACT_WG 64
#endif

/* route_info[ZP_INFO_WORDS] int32, written by route_compact (and by m1_gather for m1_oracle). */
#define ZP_INFO_ROUTES 0        /* R: compact rows */
#define ZP_INFO_GROUPS 1        /* G: expert groups (distinct local experts) */
#define ZP_INFO_INVALID 2       /* number of ids outside [0, E) (CONTRACT §5.1 error flag) */
#define ZP_INFO_FIRST_INVALID 3 /* route index m*K+k of the first one, -1 if none */
#define ZP_INFO_WORDS 4

/* compact_rows[MK][ZP_ROW_WORDS]: (local expert, token row), ordered by le then m. */
#define ZP_ROW_WORDS 2
/* groups[MK][ZP_GROUP_WORDS]: (local expert, first compact row, row count). */
#define ZP_GROUP_WORDS 3

/* The local route table of zp_derive_routes (route_compact, two_launch): ints for M*K routes
 * (le, the packed flags and cr per route; the compact rows, 2 words each; the groups, 3 words
 * each; then R, G, the invalid ids and the first one's route). */
#define ZP_ROUTE_SCRATCH_INTS(routes) (8 * (routes) + 4)

/* one_launch's phase_ready (common/zp_two_launch.h, zp_ol_wait_ready): uints for M*K routes, one
 * per possible expert group (its finished A units) and one count of the B units that saw theirs;
 * zeroed once when allocated, left zero by every launch. */
#define ZP_OL_READY_WORDS(routes) ((routes) + 1)
/* ... followed by the grid rank's state (spread_units, common/zp_grid_barrier.h zp_grid_rank):
 * two counts, zeroed once and left zero by every launch, and one word per group of a grid of at
 * most ZP_OL_SPREAD_MAX_GROUPS (a larger grid hands its units out by group id). */
#define ZP_OL_SPREAD_MAX_GROUPS 2048
/* zp_grid_rank's bound on compute unit ids (common/zp_grid_barrier.h, which defines the same
 * value itself when it is built alone, as the tests do) */
#define ZP_GRID_RANK_MAX_CUS 512
#define ZP_OL_COUNT_WORDS(routes) (ZP_OL_READY_WORDS(routes) + 2)
#define ZP_OL_SCRATCH_WORDS(routes) (ZP_OL_COUNT_WORDS(routes) + ZP_OL_SPREAD_MAX_GROUPS)

#endif
