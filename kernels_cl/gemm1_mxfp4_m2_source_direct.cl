/* source_direct: gemm1 reading the source rows of x through the compact row table, so no
 * remap_rows launch. Same grid and numerics as gemm1_mxfp4_m2.cl. */
#include "common/zp_gemm.h"

kernel ZP_GEMM_ATTRS void gemm1_mxfp4_m2_source_direct(global const ushort* x, /* [M, H] */
                                                       global const uchar* w1_blocks,
                                                       global const uchar* w1_scales, /* as gemm1 */
                                                       global const int* route_info, global const int* groups,
                                                       global const int* compact_rows, /* [M*K, 2] (le, m) */
                                                       global ushort* gate_up,         /* [M*K, 2I] */
                                                       int hidden, int intermediate) {
    local float red[ZP_GEMM_RED_FLOATS] __attribute__((aligned(16)));
    const int g = get_group_id(1);
    if (g >= route_info[ZP_INFO_GROUPS]) return;
    const global int* grp = groups + ZP_GROUP_WORDS * g;
    zp_gemm_group(w1_blocks, w1_scales, grp[0], 2 * intermediate, hidden, get_group_id(0), x, compact_rows, grp[1],
                  grp[2], gate_up, 0, 0, grp[1], red);
}
