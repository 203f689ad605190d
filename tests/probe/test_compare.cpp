#include <gtest/gtest.h>

#include "zp/probe/compare.hpp"

using namespace zp;

TEST(Compare, GivenEqualBits_WhenCompared_ThenNoMismatch) {
    const std::vector<oracle::bf16_t> a = {0x3F80, 0x8000, 0x7FC0};
    EXPECT_FALSE(probe::firstMismatch("out", a, a, 3));
}

TEST(Compare, GivenZeroAndNegativeZero_WhenCompared_ThenTheyDiffer) {
    const std::vector<oracle::bf16_t> got = {0x0000, 0x3F80, 0x3F80, 0x0000}, want = {0x0000, 0x3F80, 0x3F80, 0x8000};
    const auto m = probe::firstMismatch("out", got, want, 2);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->row, 1u);
    EXPECT_EQ(m->col, 1u);
    EXPECT_EQ(m->got, 0x0000);
    EXPECT_EQ(m->want, 0x8000);
    EXPECT_EQ(m->describe(4), "out[1][1]: got 0x0000 (0), want 0x8000 (-0); 1 of 4 elements differ");
}

TEST(Compare, GivenSeveralDifferences_WhenCompared_ThenFirstReportedAndAllCounted) {
    const std::vector<oracle::bf16_t> got = {1, 2, 3, 4, 5, 6}, want = {1, 9, 3, 9, 9, 6};
    const auto m = probe::firstMismatch("y", got, want, 3);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->row, 0u);
    EXPECT_EQ(m->col, 1u);
    EXPECT_EQ(m->differing, 3u);
}

TEST(Compare, GivenShorterTensor_WhenCompared_ThenMismatchAtFirstMissingIndex) {
    const std::vector<oracle::bf16_t> got = {1, 2}, want = {1, 2, 3};
    const auto m = probe::firstMismatch("act", got, want, 3);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->col, 2u);
}
