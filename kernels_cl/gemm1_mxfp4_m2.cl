/* CONTRACT §5.4 on compact rows, M2 tiling: gate_up[r][n] = bf16(dot(A[r], W1[le(r)] row n)).
 * Grid: work-group ZP_LANES x ZP_GEMM_ITEMS_Y; groups (ceil(2I / COLS), M*K): group
 * (t, g) = column tile t of expert group g, which reads each weight block once for all rows
 * of the group. Groups g >= G exit at once. */
#include "common/zp_gemm.h"

kernel ZP_GEMM_ATTRS void gemm1_mxfp4_m2(global const ushort* a,        /* [M*K, H] */
                                         global const uchar* w1_blocks, /* [E/C, 2I, H/32, 16] */
                                         global const uchar* w1_scales, /* [E/C, 2I, H/32] */
                                         global const int* route_info, global const int* groups,
                                         global ushort* gate_up, /* [M*K, 2I] */
                                         int hidden, int intermediate) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int g = get_group_id(1);
    if (g >= route_info[ZP_INFO_GROUPS]) return;
    const global int* grp = groups + ZP_GROUP_WORDS * g;
    zp_gemm_group(w1_blocks, w1_scales, grp[0], 2 * intermediate, hidden, get_group_id(0), a, 0, grp[1], grp[2],
                  gate_up, 0, 0, grp[1], red);
}
