// timing_stats: type-7 quantiles, summaries, and the paired bootstrap CI of the median saving.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "zp/probe/random.hpp"
#include "zp/probe/timing_stats.hpp"

using namespace zp::sched;

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
