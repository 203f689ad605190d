/* paired_epilogue: gemm1 on remapped compact rows writing act[R, I] directly (see
 * common/zp_gemm_paired.h for the column-pair mapping and why N-parallelism is kept).
 * Grid: work-group ZP_LANES x ZP_GEMM_ITEMS_Y; groups (ceil(I / ZP_GEMM_PAIRS_PER_WG),
 * M*K); groups g >= G exit at once. */
#include "common/zp_gemm_paired.h"

kernel ZP_GEMM_ATTRS void gemm1_mxfp4_m2_paired(global const ushort* a, /* [M*K, H] */
                                                global const uchar* w1_blocks, global const uchar* w1_scales,
                                                global const int* route_info, global const int* groups,
                                                global const ushort* silu, /* [65536] */
                                                global ushort* act,        /* [M*K, I] */
                                                int hidden, int intermediate, float limit, float up_bias, int layout) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int g = get_group_id(1);
    if (g >= route_info[ZP_INFO_GROUPS]) return;
    const global int* grp = groups + ZP_GROUP_WORDS * g;
    zp_gemm1_paired_group(w1_blocks, w1_scales, grp[0], hidden, intermediate, layout, get_group_id(0), a, 0, 0, 0,
                          grp[1], grp[2], silu, limit, up_bias, act, red);
}
