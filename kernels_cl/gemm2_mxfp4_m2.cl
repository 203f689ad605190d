/* CONTRACT §5.6 on compact rows, M2 tiling: y[r][h] = bf16(dot(act[r], W2[le(r)] row h)).
 * Grid: work-group ZP_LANES x ZP_GEMM_ITEMS_Y; groups (ceil(H / COLS), M*K); groups
 * g >= G exit at once. */
#include "common/zp_gemm.h"

kernel ZP_GEMM_ATTRS void gemm2_mxfp4_m2(global const ushort* act,      /* [M*K, I] */
                                         global const uchar* w2_blocks, /* [E/C, H, I/32, 16] */
                                         global const uchar* w2_scales, /* [E/C, H, I/32] */
                                         global const int* route_info, global const int* groups,
                                         global ushort* y, /* [M*K, H] */
                                         int hidden, int intermediate) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int g = get_group_id(1);
    if (g >= route_info[ZP_INFO_GROUPS]) return;
    const global int* grp = groups + ZP_GROUP_WORDS * g;
    zp_gemm_group(w2_blocks, w2_scales, grp[0], hidden, intermediate, get_group_id(0), act, 0, grp[1], grp[2], y, 0, 0,
                  grp[1], red);
}
