/* CONTRACT §5.7: out[m][h] = bf16(fma chain over k = 0..K-1 of the local routes), for EVERY
 * row m (a row with no local route is written +0.0).
 * Grid: ZP_ELEMWISE_WG per group; groups (ceil(H / ZP_ELEMWISE_WG), M). */
#include "common/zp_platform.h"
#include "common/zp_bf16.h"

kernel ZP_ELEMWISE_ATTRS void gather_bf16(global const ushort* y,           /* [M*K, H] */
                                          global const int* route_row,      /* [M, K] cr or -1 */
                                          global const float* topk_weights, /* [M, K] */
                                          global ushort* out,               /* [M, H] */
                                          int top_k, int hidden) {
    const int m = get_group_id(1);
    const int h = get_global_id(0);
    if (h >= hidden) return;
    float acc = 0.0f;
    for (int k = 0; k < top_k; ++k) {
        const int r = route_row[m * top_k + k];
        if (r < 0) continue;
        acc = fma(topk_weights[m * top_k + k], zp_bf16_to_f32(y[(size_t)r * hidden + h]), acc);
    }
    out[(size_t)m * hidden + h] = zp_f32_to_bf16(acc);
}
