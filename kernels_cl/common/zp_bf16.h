/* CONTRACT §2: BF16 <-> f32. */
#ifndef ZP_BF16_H
#define ZP_BF16_H

#include "zp_platform.h"

ZP_FN float zp_bf16_to_f32(uint bits) { return as_float(bits << 16); }

/* Round to nearest even; every NaN becomes the canonical 0x7FC0; overflow rounds to Inf. */
ZP_FN ushort zp_f32_to_bf16(float f) {
    const uint b = as_uint(f);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (ushort)0x7FC0;
    return (ushort)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

/* The two BF16 values packed in one little-endian 32-bit word: element 2t is the low half. */
ZP_FN float zp_bf16_lo(uint w) { return as_float(w << 16); }
ZP_FN float zp_bf16_hi(uint w) { return as_float(w & 0xFFFF0000u); }

#endif
