// timing_stats: type-7 quantiles, summaries, and the paired bootstrap CI of the median saving.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "zp/probe/random.hpp"
#include "zp/probe/sampling.hpp"
#include "zp/probe/timing_stats.hpp"

using namespace zp::probe;

TEST(Quantile, GivenKnownVector_WhenType7_ThenInterpolatesBetweenOrderStatistics) {
    const std::vector<double> x = {40, 10, 30, 20};  // sorted: 10 20 30 40, h = 3q
    EXPECT_DOUBLE_EQ(quantile(x, 0.0), 10);
    EXPECT_DOUBLE_EQ(quantile(x, 1.0), 40);
    EXPECT_DOUBLE_EQ(quantile(x, 0.5), 25);     // h = 1.5
    EXPECT_DOUBLE_EQ(quantile(x, 0.25), 17.5);  // h = 0.75
    EXPECT_DOUBLE_EQ(quantile(x, 0.05), 11.5);  // h = 0.15
    EXPECT_DOUBLE_EQ(quantile(x, 0.95), 38.5);  // h = 2.85
    EXPECT_DOUBLE_EQ(median(std::vector<double>{3, 1, 2}), 2);
    EXPECT_DOUBLE_EQ(quantile(std::vector<double>{7}, 0.3), 7);
}

TEST(Quantile, GivenOneToHundredAndOne_WhenP05AndP95_ThenTheMatchingValues) {
    std::vector<double> x;
    for (int i = 101; i >= 1; --i) x.push_back(i);
    EXPECT_DOUBLE_EQ(quantile(x, 0.05), 6);   // h = 5
    EXPECT_DOUBLE_EQ(quantile(x, 0.95), 96);  // h = 95
    EXPECT_DOUBLE_EQ(quantile(x, 0.123), 13.3);
}

TEST(Quantile, GivenBadInput_WhenAsked_ThenThrows) {
    EXPECT_THROW(quantile(std::vector<double>{}, 0.5), std::invalid_argument);
    EXPECT_THROW(quantile(std::vector<double>{1, 2}, 1.5), std::invalid_argument);
    EXPECT_THROW(quantile(std::vector<double>{1, NAN}, 0.5), std::invalid_argument);
}

TEST(Summarize, GivenKnownSamples_ThenEveryFieldIsExact) {
    const std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
    const Summary s = summarize(x);
    EXPECT_EQ(s.n, 8u);
    EXPECT_DOUBLE_EQ(s.mean, 5);
    EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(32.0 / 7.0));  // sample stddev
    EXPECT_DOUBLE_EQ(s.median, 4.5);
    EXPECT_DOUBLE_EQ(s.min, 2);
    EXPECT_DOUBLE_EQ(s.max, 9);
    EXPECT_DOUBLE_EQ(s.p05, 2.7);  // h = 0.35: 2 + 0.35·2
    EXPECT_DOUBLE_EQ(s.p95, 8.3);  // h = 6.65: 7 + 0.65·2
    EXPECT_DOUBLE_EQ(summarize(std::vector<double>{3}).stddev, 0);
    EXPECT_THROW(summarize(std::vector<double>{1, INFINITY}), std::invalid_argument);
}

TEST(PairedSaving, GivenConstantDifferences_ThenTheCiHasZeroWidthAtThatValue) {
    std::vector<double> a, b;
    for (int i = 0; i < 50; ++i) {
        a.push_back(10000.0 + 37.0 * i);  // the device drifts; the pair difference does not
        b.push_back(a.back() - 250.0);
    }
    const PairedSaving s = pairedSaving(a, b);
    EXPECT_EQ(s.pairs, 50u);
    EXPECT_EQ(s.resamples, 2000);
    EXPECT_DOUBLE_EQ(s.median, 250.0);
    EXPECT_DOUBLE_EQ(s.ciLow, 250.0);
    EXPECT_DOUBLE_EQ(s.ciHigh, 250.0);
}

TEST(PairedSaving, GivenThreePairs_ThenTheCiIsTheHandComputedRange) {
    // d = {1, 2, 3}. A resample's median is 1 with probability 7/27 (at least two 1s), 3 likewise,
    // else 2: the 2.5% and 97.5% points of 2000 resampled medians are 1 and 3.
    const PairedSaving s = pairedSaving(std::vector<double>{11, 12, 13}, std::vector<double>{10, 10, 10});
    EXPECT_DOUBLE_EQ(s.median, 2);
    EXPECT_DOUBLE_EQ(s.ciLow, 1);
    EXPECT_DOUBLE_EQ(s.ciHigh, 3);
}

TEST(PairedSaving, GivenTwoPairs_ThenTheCiSpansBothDifferences) {
    // d = {0, 10}: resampled medians 0, 5, 10 with probabilities 1/4, 1/2, 1/4.
    const PairedSaving s = pairedSaving(std::vector<double>{5, 15}, std::vector<double>{5, 5});
    EXPECT_DOUBLE_EQ(s.median, 5);
    EXPECT_DOUBLE_EQ(s.ciLow, 0);
    EXPECT_DOUBLE_EQ(s.ciHigh, 10);
}

namespace {
// Noisy interleaved samples: true saving `mean`, pair noise `spread`.
void noisyPairs(double mean, double spread, std::vector<double>& a, std::vector<double>& b, int n = 60) {
    SplitMix64 g(12345);
    a.clear();
    b.clear();
    for (int i = 0; i < n; ++i) {
        const double base = 20000.0 + 500.0 * g.normal();
        a.push_back(base);
        b.push_back(base - mean - spread * g.normal());
    }
}
}  // namespace

TEST(PairedSaving, GivenNoisySamples_ThenTheCiContainsTheMedianAndIsOrdered) {
    std::vector<double> a, b;
    noisyPairs(300, 80, a, b);
    const PairedSaving s = pairedSaving(a, b);
    EXPECT_LT(s.ciLow, s.median);
    EXPECT_GT(s.ciHigh, s.median);
    EXPECT_GT(s.ciLow, 200);  // the true saving is 300 and the CI of a median of 60 pairs is not that wide
    EXPECT_LT(s.ciHigh, 400);
    EXPECT_DOUBLE_EQ(s.median, s.saving.median);
    EXPECT_DOUBLE_EQ(s.baseline.median, median(a));
}

TEST(PairedSaving, GivenMoreSpread_ThenTheCiIsWiderInProportion) {
    // Same draws, spread ×3: the median is equivariant and the resampled indices are the same,
    // so the CI width grows by exactly 3 (up to rounding).
    std::vector<double> a1, b1, a3, b3;
    noisyPairs(300, 50, a1, b1);
    noisyPairs(300, 150, a3, b3);
    const PairedSaving s1 = pairedSaving(a1, b1), s3 = pairedSaving(a3, b3);
    const double w1 = s1.ciHigh - s1.ciLow, w3 = s3.ciHigh - s3.ciLow;
    EXPECT_GT(w1, 0);
    EXPECT_NEAR(w3 / w1, 3.0, 1e-6);
}

TEST(PairedSaving, GivenTheSameSamples_ThenTheCiIsDeterministic_AndNarrowerAtLowerConfidence) {
    std::vector<double> a, b;
    noisyPairs(300, 80, a, b, 25);
    const PairedSaving x = pairedSaving(a, b), y = pairedSaving(a, b);
    EXPECT_EQ(x.ciLow, y.ciLow);
    EXPECT_EQ(x.ciHigh, y.ciHigh);
    BootstrapOptions o;
    o.seed = kBootstrapSeed;  // the documented fixed seed is the default
    EXPECT_EQ(pairedSaving(a, b, o).ciLow, x.ciLow);
    o.confidence = 0.5;
    const PairedSaving narrow = pairedSaving(a, b, o);
    EXPECT_LT(narrow.ciHigh - narrow.ciLow, x.ciHigh - x.ciLow);
}

TEST(PairedSaving, GivenMismatchedOrEmptyInput_ThenThrows) {
    EXPECT_THROW(pairedSaving(std::vector<double>{1, 2}, std::vector<double>{1}), std::invalid_argument);
    EXPECT_THROW(pairedSaving(std::vector<double>{}, std::vector<double>{}), std::invalid_argument);
    EXPECT_THROW(pairedSaving(std::vector<double>{1}, std::vector<double>{NAN}), std::invalid_argument);
    BootstrapOptions o;
    o.resamples = 0;
    EXPECT_THROW(pairedSaving(std::vector<double>{1}, std::vector<double>{1}, o), std::invalid_argument);
    o.resamples = 10;
    o.confidence = 1.0;
    EXPECT_THROW(pairedSaving(std::vector<double>{1}, std::vector<double>{1}, o), std::invalid_argument);
}

TEST(ProjectSaving, GivenNsPerLayer_ThenMsOverAllLayers) {
    PairedSaving s;
    s.median = 12000;  // 12 µs per layer
    s.ciLow = 11000;
    s.ciHigh = 13000;
    const ProjectedSaving p = projectSaving(s, 43);
    EXPECT_DOUBLE_EQ(p.medianMs, 0.516);
    EXPECT_DOUBLE_EQ(p.ciLowMs, 0.473);
    EXPECT_DOUBLE_EQ(p.ciHighMs, 0.559);
    EXPECT_THROW(projectSaving(s, 0), std::invalid_argument);
}

TEST(StudentT, GivenTableValues_ThenTheQuantilesMatchToSixDigits) {
    EXPECT_NEAR(studentT(0.975, 1), 12.706205, 1e-5);
    EXPECT_NEAR(studentT(0.975, 4), 2.776445, 1e-6);
    EXPECT_NEAR(studentT(0.975, 9), 2.262157, 1e-6);
    EXPECT_NEAR(studentT(0.975, 30), 2.042272, 1e-6);
    EXPECT_NEAR(studentT(0.95, 4), 2.131847, 1e-6);
    EXPECT_NEAR(studentT(0.025, 4), -2.776445, 1e-6);
    EXPECT_NEAR(studentT(0.5, 7), 0.0, 1e-9);
    EXPECT_THROW(studentT(1.0, 4), std::invalid_argument);
    EXPECT_THROW(studentT(0.9, 0), std::invalid_argument);
}

TEST(BlockedSaving, GivenHandComputedBlocks_ThenTheRerunIntervalOverBlockMedians) {
    // Block medians of d: 10, 12, 14, 16, 18 → mean 14, sd √10; t(0.975, 4) = 2.776445;
    // half-width t · sd · √(2/5) = 5.5529.
    std::vector<std::vector<double>> a, b;
    for (int j = 0; j < 5; ++j) {
        const double m = 10 + 2 * j;
        a.push_back({100, 100, 100});
        b.push_back({100 - m + 1, 100 - m, 100 - m - 1});
    }
    const BlockedSaving s = blockedSaving(a, b);
    EXPECT_EQ(s.blocks, 5u);
    EXPECT_EQ(s.pairs, 15u);
    EXPECT_DOUBLE_EQ(s.center, 14);
    EXPECT_DOUBLE_EQ(s.median, 14);
    EXPECT_NEAR(s.blockSd, std::sqrt(10.0), 1e-12);
    const double half = 2.776445 * std::sqrt(10.0) * std::sqrt(2.0 / 5.0);
    EXPECT_NEAR(half, 5.5529, 1e-4);
    EXPECT_NEAR(rerunHalfWidth(std::sqrt(10.0), 5), half, 1e-5);
    EXPECT_NEAR(s.ciLow, 14 - half, 1e-5);
    EXPECT_NEAR(s.ciHigh, 14 + half, 1e-5);
    // Identical block medians (a coarse timer): the half-width is the resolution, not zero.
    std::vector<std::vector<double>> c(5, std::vector<double>{90, 90});
    const BlockedSaving q = blockedSaving(std::vector<std::vector<double>>(5, {100, 100}), c, 0.95, 2.5);
    EXPECT_DOUBLE_EQ(q.ciLow, 7.5);
    EXPECT_DOUBLE_EQ(q.ciHigh, 12.5);
}

TEST(BlockedSaving, GivenBadBlocks_ThenThrows) {
    const std::vector<std::vector<double>> one{{1, 2}}, two{{1, 2}, {3, 4}}, ragged{{1, 2}, {3}}, empty{{1}, {}};
    EXPECT_THROW(blockedSaving(one, one), std::invalid_argument);
    EXPECT_THROW(blockedSaving(two, ragged), std::invalid_argument);
    EXPECT_THROW(blockedSaving(empty, empty), std::invalid_argument);
    EXPECT_THROW(blockedSaving(two, one), std::invalid_argument);
    const std::vector<std::vector<double>> nan{{1, NAN}, {3, 4}};
    EXPECT_THROW(blockedSaving(two, nan), std::invalid_argument);
    EXPECT_THROW(blockedSaving(two, two, 1.0), std::invalid_argument);
}

// Why the gate takes the rerun interval over block medians (timing_stats.hpp): on two-level
// data with a known saving (a shift per block, as between processes, and noise per pair),
// over many simulated runs of 5 blocks × 10 pairs: Student's CI of the mean covers the true
// saving at about its nominal 95% but holds the next run's point estimate (its median) far
// less often; the rerun interval holds the next run's estimate at about 95%; the hierarchical
// bootstrap (blocks, then pairs) covers the truth less often than the CI, and the within-run
// paired bootstrap of the old gate far less.
TEST(BlockedSaving, GivenTwoLevelSyntheticRuns_ThenTheRerunIntervalHoldsTheNextRunsEstimate) {
    zp::probe::SplitMix64 rng(42);
    auto normal = [&] {  // Irwin–Hall: the sum of 12 uniforms − 6, sd 1
        double s = 0;
        for (int i = 0; i < 12; ++i) s += double(rng.below(1u << 24)) / double(1u << 24);
        return s - 6;
    };
    const double truth = 10000;
    const int runs = 300, blocks = 5;
    const BootstrapOptions fast{400, 0.95, kBootstrapSeed};
    std::vector<BlockedSaving> saved;
    int coveredCi = 0, coveredHB = 0, coveredPairs = 0;
    for (int r = 0; r < runs; ++r) {
        std::vector<std::vector<double>> a(blocks), b(blocks);
        std::vector<double> fa, fb;
        for (int j = 0; j < blocks; ++j) {
            const double shift = 300 * normal();
            for (int i = 0; i < 10; ++i) {
                const double base = 90000 + 500 * normal();
                a[j].push_back(base);
                b[j].push_back(base - truth - shift + 200 * normal());
                fa.push_back(a[j].back());
                fb.push_back(b[j].back());
            }
        }
        const BlockedSaving t = blockedSaving(a, b);
        const double ciHalf = studentT(0.975, blocks - 1) * t.blockSd / std::sqrt(double(blocks));
        EXPECT_NEAR(t.ciHigh - t.center, ciHalf * std::sqrt(2.0), 1e-6);
        coveredCi += std::fabs(truth - t.center) <= ciHalf;
        const Interval hb = hierarchicalBootstrap(a, b, fast);
        coveredHB += hb.low <= truth && truth <= hb.high;
        const PairedSaving p = pairedSaving(fa, fb, fast);
        coveredPairs += p.ciLow <= truth && truth <= p.ciHigh;
        saved.push_back(t);
    }
    // Every ordered pair of distinct runs: run i's median inside run j's interval.
    int heldRerun = 0, heldCi = 0, pairs = 0;
    for (int i = 0; i < runs; ++i)
        for (int j = i + 1; j < std::min(runs, i + 6); ++j)
            for (const auto& [x, y] : {std::pair{i, j}, std::pair{j, i}}) {
                const BlockedSaving& at = saved[std::size_t(y)];
                const double m = saved[std::size_t(x)].median;
                const double ciHalf = (at.ciHigh - at.center) / std::sqrt(2.0);
                heldRerun += at.ciLow <= m && m <= at.ciHigh;
                heldCi += std::fabs(m - at.center) <= ciHalf;
                ++pairs;
            }
    const double ci = double(coveredCi) / runs, hbc = double(coveredHB) / runs, pc = double(coveredPairs) / runs;
    const double rerun = double(heldRerun) / pairs, ciRerun = double(heldCi) / pairs;
    std::printf(
        "over %d runs: the truth inside Student's CI %.3f, the hierarchical bootstrap %.3f, the within-run paired "
        "bootstrap %.3f; another run's median inside the rerun interval %.3f, inside the CI %.3f (%d pairs)\n",
        runs, ci, hbc, pc, rerun, ciRerun, pairs);
    EXPECT_GE(ci, 0.92);
    EXPECT_LE(ci, 0.98);
    EXPECT_GE(rerun, 0.92);
    EXPECT_LE(rerun, 0.98);
    EXPECT_LT(ciRerun, 0.90);
    EXPECT_LT(hbc, ci);
    EXPECT_LT(pc, hbc);
}

TEST(BlocksToDecide, GivenSpreadAndDistance_ThenTheSmallestKThatDecides) {
    // sd 1, distance 1: t(0.975, k−1) · √(2/k) < 1 first at k = 11 (2.228 · 0.4264 = 0.950;
    // k = 10: 2.262 · 0.4472 = 1.012).
    EXPECT_EQ(blocksToDecide(1.0, 1.0), 11);
    EXPECT_EQ(blocksToDecide(1.0, 0.0, 0.95, 50), 50);
    EXPECT_EQ(blocksToDecide(0.0, 0.1), 2);
    EXPECT_EQ(blocksToDecide(1.0, 1e-6, 0.95, 100), 100);
}

TEST(ChooseBatch, GivenTheTimerResolution_ThenASampleSpansAtLeast200Ticks) {
    // NVIDIA's 1 µs timer: a 100 µs chain 2 at a time, a 60 µs one 4 at a time (3 × 60 = 180 < 200).
    EXPECT_EQ(chooseBatch(1000, 100000), 2);
    EXPECT_EQ(chooseBatch(1000, 60000), 4);
    // The H200's fastest chain wavers around 10.5 us between runs: the least B would be 19 or
    // 20; the power of two is 32 either way.
    EXPECT_EQ(chooseBatch(1000, 10400), 32);
    EXPECT_EQ(chooseBatch(1000, 10600), 32);
    EXPECT_EQ(chooseBatch(1000, 40000), 8);  // 5 would do
    EXPECT_EQ(chooseBatch(1000, 200000), 1);
    EXPECT_EQ(chooseBatch(1000, 199999), 2);
    // A 1 ns timer (PoCL, Intel): one execution is already thousands of ticks.
    EXPECT_EQ(chooseBatch(1, 5000), 1);
    EXPECT_EQ(chooseBatch(83.333, 20000), 1);
    EXPECT_EQ(chooseBatch(83.333, 10000), 2);
    for (double tick : {1.0, 52.08, 1000.0})
        for (double exec : {150.0, 7000.0, 61000.0, 1.5e6}) {
            const int b = chooseBatch(tick, exec);
            EXPECT_GE(b * exec, 200 * tick) << tick << " " << exec;
            EXPECT_EQ(b & (b - 1), 0) << b << " is not a power of two";
            if (b > 1) {
                EXPECT_LT((b / 2) * exec, 200 * tick) << tick << " " << exec;  // the smallest such power
            }
        }
    // Unknown figures: one execution; an absurdly fast chain on a coarse timer: capped.
    EXPECT_EQ(chooseBatch(1000, 0), 1);
    EXPECT_EQ(chooseBatch(0, 1000), 1);
    EXPECT_EQ(chooseBatch(1000, 1), kMaxBatch);
}
