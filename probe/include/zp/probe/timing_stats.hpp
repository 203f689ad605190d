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

namespace zp::sched {

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

}  // namespace zp::sched
