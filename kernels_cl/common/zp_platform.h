/* Everything vendor-specific, chosen by feature macros in this one header (STYLE.md).
 * CONTRACT §2: no contraction the contract did not name; every named fma is fma(). */
#ifndef ZP_PLATFORM_H
#define ZP_PLATFORM_H

#pragma OPENCL FP_CONTRACT OFF

#include "../abi/zp_abi.h"

/* Helpers are static (C99 `inline` alone emits no definition: a call the compiler chose not
 * to inline would be left undefined) and always inlined (no stack calls in the hot loops). */
#define ZP_FN static inline __attribute__((always_inline))

/* Intel sub-groups only make the §4 tree cheaper (shuffles instead of local memory); the
 * result is identical. Define ZP_NO_SUBGROUPS to force the portable path. */
#if defined(cl_intel_subgroups) && !defined(ZP_NO_SUBGROUPS)
#define ZP_SUBGROUPS 1
#define ZP_SG16 __attribute__((intel_reqd_sub_group_size(16)))
#else
#define ZP_SUBGROUPS 0
#define ZP_SG16
#endif

#if ZP_GEMM_COLS_PER_WG % ZP_GEMM_COLS_PER_ITEM != 0 || ZP_GEMM_COLS_PER_ITEM % 2 != 0
#error "ZP_GEMM_COLS_PER_ITEM must be even and divide ZP_GEMM_COLS_PER_WG"
#endif

#define ZP_GEMM_ATTRS ZP_SG16 __attribute__((reqd_work_group_size(ZP_LANES, ZP_GEMM_ITEMS_Y, 1)))
#define ZP_ELEMWISE_ATTRS __attribute__((reqd_work_group_size(ZP_ELEMWISE_WG, 1, 1)))

#endif
