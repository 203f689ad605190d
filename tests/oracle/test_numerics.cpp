// CONTRACT §2, §4 and the SiLU table of §5, on hand-computed vectors.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "zp/oracle/numerics.hpp"

using namespace zp::oracle;

namespace {
float f32(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
}  // namespace

TEST(Bf16, GivenExactValues_WhenRounded_ThenBitsKept) {
    EXPECT_EQ(bf16FromF32(1.0f), 0x3F80);
    EXPECT_EQ(bf16FromF32(-2.0f), 0xC000);
    EXPECT_EQ(bf16FromF32(0.0f), 0x0000);
    EXPECT_EQ(bf16FromF32(-0.0f), 0x8000);
}

TEST(Bf16, GivenTies_WhenRounded_ThenTiesGoToEven) {
    EXPECT_EQ(bf16FromF32(f32(0x3F808000)), 0x3F80);  // tie, 0x3F80 even: down
    EXPECT_EQ(bf16FromF32(f32(0x3F818000)), 0x3F82);  // tie, 0x3F81 odd: up
    EXPECT_EQ(bf16FromF32(f32(0xBF818000)), 0xBF82);  // negative tie: magnitude to even
    EXPECT_EQ(bf16FromF32(f32(0x3F808001)), 0x3F81);  // just above the tie
    EXPECT_EQ(bf16FromF32(f32(0x3F807FFF)), 0x3F80);  // just below the tie
}

TEST(Bf16, GivenValuesPastMaxFinite_WhenRounded_ThenInf) {
    EXPECT_EQ(bf16FromF32(f32(0x7F7F7FFF)), 0x7F7F);  // below the tie: max finite BF16
    EXPECT_EQ(bf16FromF32(f32(0x7F7F8000)), 0x7F80);  // tie, odd max finite: rounds to Inf
    EXPECT_EQ(bf16FromF32(f32(0x7F7FFFFF)), 0x7F80);  // max finite f32
    EXPECT_EQ(bf16FromF32(f32(0xFF7FFFFF)), 0xFF80);
    EXPECT_EQ(bf16FromF32(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(bf16FromF32(-std::numeric_limits<float>::infinity()), 0xFF80);
}

TEST(Bf16, GivenAnyNaN_WhenRounded_ThenCanonicalNaN) {
    for (std::uint32_t b : {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FFFFFFFu, 0xFFC00001u, 0x7F80FFFFu})
        EXPECT_EQ(bf16FromF32(f32(b)), 0x7FC0) << std::hex << b;
}

TEST(Bf16, GivenSubnormals_WhenRounded_ThenPreservedAndRoundedToEven) {
    EXPECT_EQ(bf16FromF32(f32(0x00010000)), 0x0001);  // smallest BF16 subnormal, exact
    EXPECT_EQ(bf16FromF32(f32(0x00000001)), 0x0000);  // below half an ulp
    EXPECT_EQ(bf16FromF32(f32(0x00008000)), 0x0000);  // tie to even 0
    EXPECT_EQ(bf16FromF32(f32(0x00018000)), 0x0002);  // tie to even 2
    EXPECT_EQ(bf16FromF32(f32(0x80018000)), 0x8002);
    EXPECT_EQ(bf16FromF32(f32(0x007FFFFF)), 0x0080);  // largest subnormal rounds up to min normal
}

TEST(Bf16, GivenBf16Bits_WhenWidened_ThenShiftedExactly) {
    EXPECT_EQ(bits(f32FromBf16(0x3F80)), 0x3F800000u);
    EXPECT_EQ(bits(f32FromBf16(0x0001)), 0x00010000u);
    EXPECT_EQ(bits(f32FromBf16(0x8000)), 0x80000000u);
    EXPECT_EQ(bits(f32FromBf16(0xFFC1)), 0xFFC10000u);  // payload kept on widening
}

TEST(Bf16FromF64, GivenDoubles_WhenRoundedOnce_ThenNoDetourThroughF32) {
    EXPECT_EQ(bf16FromF64(1.0), 0x3F80);
    EXPECT_EQ(bf16FromF64(-0.0), 0x8000);
    // 1 + 2^-8 + 2^-40: f32 would round to the tie 1 + 2^-8 and then to even (1.0);
    // rounded once from the double it is above the tie: 1 + 2^-7.
    EXPECT_EQ(bf16FromF64(1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
    EXPECT_EQ(bf16FromF64(0x1p-134), 0x0000);             // half the smallest subnormal: tie to 0
    EXPECT_EQ(bf16FromF64(0x1p-134 + 0x1p-160), 0x0001);  // just above: rounds up
    EXPECT_EQ(bf16FromF64(-1.5 * 0x1p-133), 0x8002);      // tie between 1 and 2 quanta: even
    EXPECT_EQ(bf16FromF64(0x1p128), 0x7F80);
    EXPECT_EQ(bf16FromF64(3.3961e38), 0x7F7F);  // max finite BF16 ≈ 3.3895e38, below the tie
    EXPECT_EQ(bf16FromF64(std::nan("")), 0x7FC0);
}

TEST(E2M1, GivenEveryCode_WhenDecoded_ThenContractValues) {
    const float want[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    for (int c = 0; c < 16; ++c) EXPECT_EQ(bits(e2m1(std::uint8_t(c))), bits(want[c])) << "code " << c;
}

TEST(E2M1, GivenAByte_WhenSplit_ThenLowNibbleIsTheEvenElement) {
    const std::uint8_t block[16] = {0x21, 0xF7};
    EXPECT_EQ(mxfp4Code(block, 0), 1);
    EXPECT_EQ(mxfp4Code(block, 1), 2);
    EXPECT_EQ(mxfp4Code(block, 2), 7);
    EXPECT_EQ(mxfp4Code(block, 3), 15);
}

TEST(E8M0, GivenEdgeScales_WhenDecoded_ThenPowersOfTwoSubnormalAndNaN) {
    EXPECT_EQ(bits(e8m0(0)), 0x00400000u);  // 2^-127: an f32 subnormal, not zero
    EXPECT_EQ(bits(e8m0(1)), 0x00800000u);  // 2^-126
    EXPECT_EQ(e8m0(127), 1.0f);
    EXPECT_EQ(bits(e8m0(254)), 0x7F000000u);  // 2^127
    EXPECT_TRUE(std::isnan(e8m0(255)));
}

namespace {
// One MXFP4 row of `blocks` blocks where block b's partial is q[b] = x[32b] (code 1.0 at
// element 0, scale 1): the given {b, q} pairs, every other block 0.
struct Row {
    std::vector<bf16_t> a;
    std::vector<std::uint8_t> codes, scales;
    Row(int blocks, std::initializer_list<std::pair<int, float>> partials)
        : a(32 * blocks, 0), codes(16 * blocks, 0), scales(blocks, 127) {
        for (const auto& [b, q] : partials) {
            a[32 * b] = bf16FromF32(q);
            codes[16 * b] = 0x02;  // element 0: code 2 = 1.0
        }
    }
    // dotMxfp4 over the whole row (K = 32 per block).
    float dot() const { return dotMxfp4(a.data(), codes.data(), scales.data(), int(a.size())); }
};
}  // namespace

TEST(Dot, GivenBlocksOnLanes_WhenReduced_ThenFixedTreeNotSequentialSum) {
    const Row r(3, {{0, 0x1p25f}, {1, -0x1p25f}, {2, 1.0f}});
    // Tree: acc0 = q0 + q2 = 2^25 (the 1 is lost), then + q1 = 0. A sequential sum gives 1.
    EXPECT_EQ(bits(r.dot()), 0u);
}

TEST(Dot, GivenMoreThan16Blocks_WhenReduced_ThenBlocksDealtRoundRobin) {
    const Row r(32, {{0, 0x1p25f}, {1, -0x1p25f}, {16, 1.0f}});
    // Lane 0 gets blocks 0 and 16: 2^25 + 1 = 2^25; lane 1 gets -2^25: result +0.
    // Blocked lanes (0,1 on lane 0) or a sequential sum would give 1.
    EXPECT_EQ(bits(r.dot()), 0u);
}

TEST(Dot, GivenOneBlock_WhenAccumulated_ThenSequentialInElementOrder) {
    std::vector<bf16_t> a(32, 0);
    std::vector<std::uint8_t> codes(16, 0x22), scales(1, 127);  // every element code 1.0
    a[0] = bf16FromF32(0x1p25f);
    a[1] = bf16FromF32(1.0f);
    a[2] = bf16FromF32(-0x1p25f);
    // ((2^25 + 1) - 2^25) = 0 in f32 order; a pairwise order would give 1.
    EXPECT_EQ(bits(dotMxfp4(a.data(), codes.data(), scales.data(), 32)), 0u);
}

TEST(Dot, GivenScaleAfterPartial_WhenApplied_ThenOneMultiplyPerBlock) {
    std::vector<bf16_t> a(32, bf16FromF32(1.0f));
    std::vector<std::uint8_t> codes(16, 0x77), scales(1, 130);  // 32 × 6 = 192, × 2^3
    EXPECT_EQ(dotMxfp4(a.data(), codes.data(), scales.data(), 32), 1536.0f);
    scales[0] = 255;
    EXPECT_TRUE(std::isnan(dotMxfp4(a.data(), codes.data(), scales.data(), 32)));
}

TEST(Dot, GivenNegativeZeroPartials_WhenReduced_ThenPositiveZeroFromTheLanes) {
    std::vector<bf16_t> a(32, 0x8000);  // -0
    std::vector<std::uint8_t> codes(16, 0x22), scales(1, 127);
    // p starts at +0: fma(1, -0, +0) = +0; the lane sums start at +0 too.
    EXPECT_EQ(bits(dotMxfp4(a.data(), codes.data(), scales.data(), 32)), 0u);
}

TEST(Silu, GivenSpotValues_WhenTableBuilt_ThenEntriesMatchDoubleRoundedOnce) {
    const auto t = buildSiluTable(1.0);
    ASSERT_EQ(t.size(), 65536u);
    EXPECT_EQ(t[0x0000], 0x0000);  // +0
    EXPECT_EQ(t[0x8000], 0x8000);  // -0 / 2 = -0
    EXPECT_EQ(t[0x3F80], 0x3F3B);  // 1 -> 0.7310585786 -> 0.73046875
    EXPECT_EQ(t[0xBF80], 0xBE8A);  // -1 -> -0.2689414214
    EXPECT_EQ(t[0x4080], 0x407B);  // 4 -> 3.9280551602
    EXPECT_EQ(t[0x4120], 0x4120);  // 10 -> 9.99954602 -> 10
    EXPECT_EQ(t[0xC120], 0xB9EE);  // -10 -> -4.5397868702e-4
    EXPECT_EQ(t[0xC2C8], 0x8000);  // -100 -> -3.7e-42, below half a subnormal: -0
    EXPECT_EQ(t[0x0001], 0x0000);  // 2^-133 / 2: tie to even 0
    EXPECT_EQ(t[0x0002], 0x0001);  // 2^-132 / 2 = 2^-133
    EXPECT_EQ(t[0x8003], 0x8002);  // -1.5 quanta: tie to even 2
    EXPECT_EQ(t[0x7F80], 0x7F80);  // +Inf
    EXPECT_EQ(t[0xFF80], 0x8000);  // -Inf -> -0
    EXPECT_EQ(t[0x7FC0], 0x7FC0);  // NaN
    EXPECT_EQ(t[0xFFC1], 0x7FC0);  // any NaN code
}

TEST(Silu, GivenTheWholeTable_WhenHashed_ThenMatchesAnIndependentImplementation) {
    // FNV-1a 64 of the 65,536 little-endian entries, from an exact rational-arithmetic
    // implementation (Python fractions) of §5's definition with alpha = 1.
    const auto t = buildSiluTable(1.0);
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (bf16_t e : t)
        for (int byte = 0; byte < 2; ++byte) h = (h ^ ((e >> (8 * byte)) & 0xFF)) * 0x100000001b3ull;
    EXPECT_EQ(h, 0x223278a82ea82a31ull);
}

TEST(Silu, GivenAlpha_WhenTableBuilt_ThenSlopeApplied) {
    EXPECT_EQ(buildSiluTable(1.702)[0x3F80], 0x3F59);  // 1 / (1 + e^-1.702)
}
