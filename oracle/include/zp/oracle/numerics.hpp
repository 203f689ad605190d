// docs/contract.md §2, §4 and the SiLU table of §5: the number formats every device must meet
// bit for bit. Pure host code, no device, no I/O.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace zp::oracle {

using bf16_t = std::uint16_t;  // raw BF16 bits

inline constexpr bf16_t kBf16CanonicalNaN = 0x7FC0;

// BF16 -> f32: bits << 16, exact.
inline float f32FromBf16(bf16_t b) { return std::bit_cast<float>(std::uint32_t{b} << 16); }

// f32 -> BF16, round to nearest even; every NaN becomes 0x7FC0 (§2).
inline bf16_t bf16FromF32(float f) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(f);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return kBf16CanonicalNaN;
    return static_cast<bf16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

// double -> BF16 rounded once, RNE, directly from the double (§5, SiLU table).
bf16_t bf16FromF64(double d);

// E2M1 code (0..15) -> value (§2).
inline constexpr std::array<float, 16> kE2M1 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
inline float e2m1(std::uint8_t code) { return kE2M1[code & 0xF]; }

// Element j (0..31) of a 16-byte MXFP4 block: the low nibble holds the even element.
inline std::uint8_t mxfp4Code(const std::uint8_t* block16, int j) {
    const std::uint8_t byte = block16[j >> 1];
    return (j & 1) ? static_cast<std::uint8_t>(byte >> 4) : static_cast<std::uint8_t>(byte & 0xF);
}

// E8M0 scale: s in 0..254 -> 2^(s-127) (s = 0 is the f32 subnormal 2^-127); 255 -> NaN.
inline float e8m0(std::uint8_t s) {
    if (s == 255) return std::bit_cast<float>(0x7FC00000u);
    if (s == 0) return std::bit_cast<float>(0x00400000u);
    return std::bit_cast<float>(std::uint32_t{s} << 23);
}

// §4: dot(a, row) for BF16 a[K] and one MXFP4 row of K/32 blocks (16 code bytes each) and
// K/32 scale bytes, in exactly the contract's order. K must be a multiple of 32.
float dotMxfp4(const bf16_t* a, const std::uint8_t* codes, const std::uint8_t* scales, int K);

// §5 SiLU table: 65,536 BF16 entries indexed by g's bits, entry = g / (1 + exp(-alpha*g))
// in double, rounded to BF16 once; NaN -> 0x7FC0, -Inf -> -0.0, +Inf -> +Inf.
std::vector<bf16_t> buildSiluTable(double alpha);

}  // namespace zp::oracle
