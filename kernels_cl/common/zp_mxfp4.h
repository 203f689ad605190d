/* CONTRACT §2: MXFP4 elements (E2M1) and scales (E8M0). */
#ifndef ZP_MXFP4_H
#define ZP_MXFP4_H

#include "zp_platform.h"

constant float kZpE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                              -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

/* ZP_E2M1_DECODE (abi/zp_abi.h): 0 = the __constant table, 1 = bit arithmetic
 * (magnitude m >= 2 is the f32 with bits (m << 22) + 0x3F000000; m = 0, 1 are 0 and 0.5). */
ZP_FN float zp_e2m1(uint code) {
#if ZP_E2M1_DECODE == 0
    return kZpE2M1[code & 15u];
#else
    const uint m = code & 7u;
    const uint mag = m < 2u ? m * 0x3F000000u : (m << 22) + 0x3F000000u;
    return as_float(mag | ((code & 8u) << 28));
#endif
}

/* s = 0 is 2^-127 (an f32 subnormal) and s = 255 is NaN: as_float(s << 23) would give
 * +0 and +Inf for those two, which the contract forbids. */
ZP_FN float zp_e8m0(uint s) {
    if (s == 255u) return as_float(0x7FC00000u);
    if (s == 0u) return as_float(0x00400000u);
    return as_float(s << 23);
}

#endif
