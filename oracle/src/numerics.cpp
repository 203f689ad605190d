#include "zp/oracle/numerics.hpp"

#include <cmath>
#include <limits>

namespace zp::oracle {

bf16_t bf16FromF64(double d) {
    if (std::isnan(d)) return kBf16CanonicalNaN;
    const bool negative = std::signbit(d);
    const double mag = std::fabs(d);
    if (std::isinf(mag)) return negative ? 0xFF80 : 0x7F80;
    // BF16 keeps 8 significant bits; below 2^-126 the quantum is fixed at 2^-133.
    int exp2 = 0;
    std::frexp(mag, &exp2);  // mag = f * 2^exp2, f in [0.5, 1)
    const int quantumExp = exp2 - 1 < -126 ? -133 : exp2 - 8;
    // Scaling by a power of two is exact here; nearbyint rounds ties to even (default mode).
    const double rounded = std::ldexp(std::nearbyint(std::ldexp(mag, -quantumExp)), quantumExp);
    std::uint16_t bits;
    if (rounded >= 0x1p128) {
        bits = 0x7F80;  // rounds past the largest finite BF16
    } else {
        // `rounded` is exactly representable in BF16, hence in f32.
        bits = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(rounded)) >> 16);
    }
    return negative ? static_cast<bf16_t>(bits | 0x8000) : bits;
}

float dotMxfp4(const bf16_t* a, const std::uint8_t* codes, const std::uint8_t* scales, int K) {
    const int blocks = K / 32;
    float acc[16];
    for (float& x : acc) x = 0.0f;
    for (int b = 0; b < blocks; ++b) {
        const std::uint8_t* block = codes + std::size_t(b) * 16;
        float p = 0.0f;
        for (int j = 0; j < 32; ++j) p = std::fma(e2m1(mxfp4Code(block, j)), f32FromBf16(a[32 * b + j]), p);
        const float q = p * e8m0(scales[b]);
        acc[b % 16] = acc[b % 16] + q;  // blocks dealt round-robin to 16 lanes, ascending
    }
    for (int o = 8; o >= 1; o >>= 1)
        for (int l = 0; l < o; ++l) acc[l] = acc[l] + acc[l + o];
    return acc[0];
}

std::vector<bf16_t> buildSiluTable(double alpha) {
    std::vector<bf16_t> table(65536);
    for (std::uint32_t bits = 0; bits < 65536; ++bits) {
        const double g = static_cast<double>(f32FromBf16(static_cast<bf16_t>(bits)));
        bf16_t entry;
        if (std::isnan(g))
            entry = kBf16CanonicalNaN;
        else if (std::isinf(g))
            entry = g < 0 ? bf16_t{0x8000} : bf16_t{0x7F80};
        else
            entry = bf16FromF64(g / (1.0 + std::exp(-alpha * g)));
        table[bits] = entry;
    }
    return table;
}

}  // namespace zp::oracle
