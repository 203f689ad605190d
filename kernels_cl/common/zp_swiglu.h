/* CONTRACT §5.5: clamped SwiGLU of one (gate, up) pair of BF16 values. */
#ifndef ZP_SWIGLU_H
#define ZP_SWIGLU_H

#include "zp_platform.h"
#include "zp_bf16.h"

/* gate_up_layout: 0 = split (gate row i, up row I + i), 1 = interleaved (2i, 2i + 1). */
#define ZP_LAYOUT_SPLIT 0
#define ZP_LAYOUT_INTERLEAVED 1

ZP_FN int zp_gate_col(int i, int intermediate, int layout) { return layout == ZP_LAYOUT_INTERLEAVED ? 2 * i : i; }
ZP_FN int zp_up_col(int i, int intermediate, int layout) {
    return layout == ZP_LAYOUT_INTERLEAVED ? 2 * i + 1 : intermediate + i;
}

/* silu: the host's 65,536-entry BF16 table indexed by g's BF16 bits. L is a BF16 value
 * (validated by the host), so bf16(g) is exact; NaN gates index the canonical NaN. */
ZP_FN ushort zp_swiglu(uint gate_bits, uint up_bits, float limit, float up_bias, global const ushort* silu) {
    const float gate = zp_bf16_to_f32(gate_bits);
    const float up = zp_bf16_to_f32(up_bits);
    /* comparisons are false for NaN, so NaN passes through */
    const float g = gate > limit ? limit : gate;
    const float u = up > limit ? limit : (up < -limit ? -limit : up);
    const uint s = silu[zp_f32_to_bf16(g)];
    /* "t = u when beta = 0": u + 0 would turn -0 into +0 */
    const uint t = up_bias != 0.0f ? zp_f32_to_bf16(u + up_bias) : zp_f32_to_bf16(u);
    return zp_f32_to_bf16(zp_bf16_to_f32(s) * zp_bf16_to_f32(t));
}

#endif
