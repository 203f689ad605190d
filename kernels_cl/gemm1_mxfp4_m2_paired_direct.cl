/* paired_direct: the paired epilogue (common/zp_gemm_paired.h) reading source rows of x
 * through the compact row table: no remap_rows, no swiglu launch.
 * Grid as gemm1_mxfp4_m2_paired.cl. */
#include "common/zp_gemm_paired.h"

kernel ZP_GEMM_ATTRS void gemm1_mxfp4_m2_paired_direct(global const ushort* x, /* [M, H] */
                                                       global const uchar* w1_blocks, global const uchar* w1_scales,
                                                       global const int* route_info, global const int* groups,
                                                       global const int* compact_rows, global const ushort* silu,
                                                       global ushort* act, /* [M*K, I] */
                                                       int hidden, int intermediate, float limit, float up_bias,
                                                       int layout) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int g = get_group_id(1);
    if (g >= route_info[ZP_INFO_GROUPS]) return;
    const global int* grp = groups + ZP_GROUP_WORDS * g;
    zp_gemm1_paired_group(w1_blocks, w1_scales, grp[0], hidden, intermediate, layout, get_group_id(0), x, compact_rows,
                          0, 0, grp[1], grp[2], silu, limit, up_bias, act, red);
}
