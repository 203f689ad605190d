// Timing statistics for the gate (CONTRACT §8): per-sample summaries, and the saving of a
// candidate over the baseline from interleaved A B A B pairs with a bootstrap confidence
// interval of its median.
//
// Units: samples are whatever the caller measured (kernel timestamps: nanoseconds); every
// figure comes back in the same unit, except the projection, which is in milliseconds and
// therefore takes nanoseconds.
//
// Quantiles are Hyndman & Fan type 7 (R's default, numpy's "linear"): for sorted x[0..n-1]
// and q in [0, 1], h = (n − 1)·q, Q(q) = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]). So the
// median of an even count is the mean of the two middle values, Q(0) = min and Q(1) = max.
//
// The interval is a percentile bootstrap over the pairs: pair i is (a_i, b_i) measured
// back to back, d_i = a_i − b_i; each of B resamples draws n pair indices with replacement,
// and the interval is the type-7 (1−c)/2 and (1+c)/2 quantiles of the B resampled medians.
// Resampling pairs, not a and b separately, keeps what interleaving buys: drift of the
// device (clocks, temperature) cancels inside a pair. Indices come from SplitMix64
// (random.hpp) seeded by a fixed seed, so one set of samples gives one interval on every
// machine and every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace zp::probe {

struct Summary {
    std::size_t n = 0;
    double median = 0, p05 = 0, p95 = 0, min = 0, max = 0, mean = 0;
    double stddev = 0;  // sample standard deviation (n − 1 in the denominator); 0 when n == 1
};

// Type-7 quantile of already sorted samples. Throws std::invalid_argument when empty,
// q is outside [0, 1] or a sample is NaN.
double quantileSorted(std::span<const double> sorted, double q);
// Type-7 quantile of unsorted samples (sorts a copy).
double quantile(std::span<const double> samples, double q);
double median(std::span<const double> samples);

// Throws std::invalid_argument on no samples or a non-finite one.
Summary summarize(std::span<const double> samples);

inline constexpr std::uint64_t kBootstrapSeed = 0x6761746530353030ull;  // "gate0500"

struct BootstrapOptions {
    int resamples = 2000;      // B
    double confidence = 0.95;  // c, in (0, 1)
    std::uint64_t seed = kBootstrapSeed;
};

// The saving of a candidate over the baseline, per layer, in the samples' unit.
struct PairedSaving {
    std::size_t pairs = 0;
    double median = 0;             // median of d_i = a_i − b_i (not median(a) − median(b))
    double ciLow = 0, ciHigh = 0;  // percentile-bootstrap interval of that median
    double confidence = 0.95;
    int resamples = 0;
    Summary saving;               // of d
    Summary baseline, candidate;  // of a and of b
};

// baseline[i] and candidate[i] are pair i. Throws std::invalid_argument when the lengths
// differ, there are no pairs, a sample is not finite, or the options are out of range.
PairedSaving pairedSaving(std::span<const double> baseline, std::span<const double> candidate,
                          const BootstrapOptions& = {});

// CONTRACT §8: projected saving = saving per layer × layers, in ms (from nanoseconds).
struct ProjectedSaving {
    double medianMs = 0, ciLowMs = 0, ciHighMs = 0;
};
ProjectedSaving projectSaving(const PairedSaving& perLayerNs, int layers);

// ----------------------------------------------------------------------------- two levels
// CONTRACT §8: the interval must cover the variation between independent runs, not only the
// pairs of one run. The timed rounds come in blocks, each rebuilt as a fresh process would
// build it; block j gives pairs (a_ji, b_ji) and its median m_j of d_ji = a_ji − b_ji. A
// block median carries both levels (the run-to-run shift of its block and the sampling noise
// of its pairs), so its spread between blocks measures what a rerun would see.
// The interval is where an independent rerun of k blocks puts its estimate, 95% of the time
// (a prediction interval): mean(m) ± t_{(1+c)/2, k−1} · sd(m) · √(2/k). The √2 is the rerun's
// own sampling error beside this run's (the difference of two means of k blocks has variance
// 2σ²/k). Student's CI of the mean, ± t · sd(m)/√k, covers the true saving at its nominal
// rate but holds another run's estimate only ~85–88% of the time even when the runs differ
// by nothing but sampling; the gate is about what a rerun says, so it takes the wider one.
// It contains that CI, so a pass under it is a pass under the CI and a fail a fail: a
// verdict only ever moves towards ON THE BAR. tests/probe/test_timing_stats.cpp measures
// both on synthetic two-level data: the CI's coverage of the truth, the rerun interval's of
// another run's estimate, and the hierarchical bootstrap (blocks, then pairs;
// hierarchicalBootstrap below), which is narrower still with few blocks.
// The half-width is never below `resolution` (the timer's step in one sample's unit): block
// medians that agree to the tick do not make an interval narrower than the clock can see.
struct BlockedSaving {
    std::size_t blocks = 0, pairs = 0;
    double median = 0;             // median of every pair's d (the point estimate shown)
    double center = 0;             // mean of the block medians (the interval's centre)
    double ciLow = 0, ciHigh = 0;  // center ∓ the rerun half-width (the gate's interval)
    double blockSd = 0;            // sample sd of the block medians
    double confidence = 0.95;
    std::vector<double> blockMedians;
    Summary baseline, candidate;  // over every pair
};

// Blocks of pairs: baseline[j][i], candidate[j][i] = pair i of block j. Throws
// std::invalid_argument on fewer than 2 blocks, a block without pairs or of unequal lengths,
// a non-finite sample, a confidence outside (0, 1) or a negative resolution.
BlockedSaving blockedSaving(std::span<const std::vector<double>> baseline,
                            std::span<const std::vector<double>> candidate, double confidence = 0.95,
                            double resolution = 0);

// The other two-level interval, for comparison only: B resamples, each drawing k blocks with
// replacement and then, inside each drawn block, its pairs with replacement; the percentile
// interval of the pooled medians.
struct Interval {
    double low = 0, high = 0;
};
Interval hierarchicalBootstrap(std::span<const std::vector<double>> baseline,
                               std::span<const std::vector<double>> candidate, const BootstrapOptions& = {});

// The gate's half-width for k block medians of spread sd: t_{(1+c)/2, k−1} · sd · √(2/k).
double rerunHalfWidth(double blockSd, std::size_t blocks, double confidence = 0.95);

// Student's t quantile: P(T ≤ x) = p for T with `dof` degrees of freedom (p in (0, 1), dof ≥ 1).
double studentT(double p, int dof);

// How many blocks in all would likely shrink the rerun half-width below `distance` (the
// interval centre's distance from the bar), for block medians of spread `blockSd`: the
// smallest k with t_{(1+c)/2, k−1} · blockSd · √(2/k) < distance, capped at `cap` (returned
// when distance ≤ 0 or k would exceed it: the saving sits at the bar, more rounds will not
// decide it).
int blocksToDecide(double blockSd, double distance, double confidence = 0.95, int cap = 1000);

// The projection of a two-level saving (per layer, ns) over `layers` layers, in ms.
ProjectedSaving projectSaving(const BlockedSaving& perLayerNs, int layers);

}  // namespace zp::probe
