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

/* Byte n (0 to 3, a constant) of x, zero-extended: ZP_BYTE_SHIFT by a shift and a mask, ZP_BYTE
 * the platform's way. NVIDIA's OpenCL (its feature macro cl_nv_pragma_unroll): one byte
 * permute, PTX prmt (its selector takes byte n of x into byte 0 and the zero operand's byte
 * into bytes 1 to 3), where NVIDIA compiles the shift and the mask; the same value everywhere. */
#define ZP_BYTE_SHIFT(x, n) ((n) == 3 ? (x) >> 24 : ((x) >> (8 * (n))) & 0xFFu)
#if defined(cl_nv_pragma_unroll)
ZP_FN uint zp_byte_permute(uint x, uint selector) {
    uint r;
    __asm__("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(x), "r"(selector));
    return r;
}
#define ZP_BYTE(x, n) zp_byte_permute((x), 0x4440u | (uint)(n))
#else
#define ZP_BYTE(x, n) ZP_BYTE_SHIFT(x, n)
#endif

/* The compute unit this work-group runs on, where the platform tells: NVIDIA's SM (PTX %smid;
 * ZP_HAVE_CU_ID 1), elsewhere none. A hint for spreading work over the units (zp_grid_rank),
 * never an input to a result. */
#if defined(cl_nv_pragma_unroll)
#define ZP_HAVE_CU_ID 1
ZP_FN uint zp_cu_id(void) {
    uint r;
    __asm__ volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}
#else
#define ZP_HAVE_CU_ID 0
#endif

#if ZP_GEMM_COLS_PER_WG % ZP_GEMM_COLS_PER_ITEM != 0 || ZP_GEMM_COLS_PER_ITEM % 2 != 0
#error "ZP_GEMM_COLS_PER_ITEM must be even and divide ZP_GEMM_COLS_PER_WG"
#endif

/* The group size each kernel is launched with (the scheduler's plan); a launch with another
 * fails. ZP_NO_REQD_GROUP_SIZE leaves the attribute out: NVIDIA's ptxas ignores a register cap
 * (-cl-nv-maxrregcount, the max_registers tuning) on a kernel with a required size. */
#ifdef ZP_NO_REQD_GROUP_SIZE
#define ZP_REQD_GROUP_SIZE(x, y)
#else
#define ZP_REQD_GROUP_SIZE(x, y) __attribute__((reqd_work_group_size(x, y, 1)))
#endif

#define ZP_GEMM_ATTRS ZP_SG16 ZP_REQD_GROUP_SIZE(ZP_LANES, ZP_GEMM_ITEMS_Y)
#define ZP_ELEMWISE_ATTRS ZP_REQD_GROUP_SIZE(ZP_ELEMWISE_WG, 1)

/* Index i = major * minors + minor advanced by n = step_major * minors + step_minor (minor <
 * minors), without a division in the loop (clang 14 then emits `freeze`, which llvm-spirv 14
 * cannot translate). */
ZP_FN void zp_unit_step(int* major, int* minor, int step_major, int step_minor, int minors) {
    *major += step_major;
    *minor += step_minor;
    if (*minor >= minors) {
        *minor -= minors;
        ++*major;
    }
}

#endif
