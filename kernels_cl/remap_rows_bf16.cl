/* CONTRACT §5.3: A[r] = x[m(r)], a BF16 copy of each source row into compact order.
 * Grid: ZP_ELEMWISE_WG per group; groups (ceil(H / 8 / ZP_ELEMWISE_WG), M*K): group (t, r)
 * copies 8-element chunks of compact row r; rows r >= R exit at once. */
#include "common/zp_platform.h"

kernel ZP_ELEMWISE_ATTRS void remap_rows_bf16(global const ushort* x, global const int* route_info,
                                              global const int* compact_rows, global ushort* a, int hidden) {
    const int r = get_group_id(1);
    if (r >= route_info[ZP_INFO_ROUTES]) return;
    const int chunk = get_global_id(0); /* 8 BF16 = one uint4; H is a multiple of 32 */
    if (chunk >= hidden / 8) return;
    const int m = compact_rows[ZP_ROW_WORDS * r + 1];
    const uint4 v = vload4(chunk, (const global uint*)(x + (size_t)m * hidden));
    vstore4(v, chunk, (global uint*)(a + (size_t)r * hidden));
}
