/* CONTRACT §5.5: act[r][i] = clamped SwiGLU of gate_up[r]'s pair i, for r < R.
 * Grid: ZP_ELEMWISE_WG per group; groups (ceil(I / ZP_ELEMWISE_WG), M*K); rows r >= R exit.
 * layout: ZP_LAYOUT_SPLIT (0) or ZP_LAYOUT_INTERLEAVED (1). */
#include "common/zp_platform.h"
#include "common/zp_swiglu.h"

kernel ZP_ELEMWISE_ATTRS void swiglu_bf16(global const ushort* gate_up,                     /* [M*K, 2I] */
                                          global const ushort* silu,                        /* [65536] */
                                          global const int* route_info, global ushort* act, /* [M*K, I] */
                                          int intermediate, float limit, float up_bias, int layout) {
    const int r = get_group_id(1);
    if (r >= route_info[ZP_INFO_ROUTES]) return;
    const int i = get_global_id(0);
    if (i >= intermediate) return;
    const global ushort* gu = gate_up + (size_t)r * 2 * intermediate;
    act[(size_t)r * intermediate + i] = zp_swiglu(gu[zp_gate_col(i, intermediate, layout)],
                                                  gu[zp_up_col(i, intermediate, layout)], limit, up_bias, silu);
}
