#include "zp/probe/timing_stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "zp/probe/random.hpp"

namespace zp::sched {
namespace {

void requireFinite(std::span<const double> xs, const char* what) {
    if (xs.empty()) throw std::invalid_argument(std::string(what) + ": no samples");
    for (std::size_t i = 0; i < xs.size(); ++i)
        if (!std::isfinite(xs[i]))
            throw std::invalid_argument(std::string(what) + ": sample " + std::to_string(i) + " is " +
                                        std::to_string(xs[i]) + ", expected a finite time");
}

}  // namespace

double quantileSorted(std::span<const double> sorted, double q) {
    if (sorted.empty()) throw std::invalid_argument("quantile of no samples");
    if (!(q >= 0.0 && q <= 1.0))
        throw std::invalid_argument("quantile q = " + std::to_string(q) + ": must be in [0, 1]");
    const double h = double(sorted.size() - 1) * q;
    const std::size_t lo = static_cast<std::size_t>(std::floor(h));
    if (lo + 1 >= sorted.size()) return sorted.back();
    const double frac = h - double(lo);
    const double a = sorted[lo], b = sorted[lo + 1];
    if (std::isnan(a) || std::isnan(b)) throw std::invalid_argument("quantile of a NaN sample");
    // a + f·(b − a) returns a exactly at f = 0 and stays within [a, b] for finite a ≤ b.
    return frac == 0.0 ? a : a + frac * (b - a);
}

double quantile(std::span<const double> samples, double q) {
    std::vector<double> s(samples.begin(), samples.end());
    for (double x : s)
        if (std::isnan(x)) throw std::invalid_argument("quantile of a NaN sample");
    std::sort(s.begin(), s.end());
    return quantileSorted(s, q);
}

double median(std::span<const double> samples) { return quantile(samples, 0.5); }

Summary summarize(std::span<const double> samples) {
    requireFinite(samples, "summary");
    std::vector<double> s(samples.begin(), samples.end());
    std::sort(s.begin(), s.end());
    Summary r;
    r.n = s.size();
    r.median = quantileSorted(s, 0.5);
    r.p05 = quantileSorted(s, 0.05);
    r.p95 = quantileSorted(s, 0.95);
    r.min = s.front();
    r.max = s.back();
    // Two passes: the mean first, then squared deviations from it (no cancellation).
    double sum = 0;
    for (double x : s) sum += x;
    r.mean = sum / double(r.n);
    if (r.n > 1) {
        double ss = 0;
        for (double x : s) ss += (x - r.mean) * (x - r.mean);
        r.stddev = std::sqrt(ss / double(r.n - 1));
    }
    return r;
}

PairedSaving pairedSaving(std::span<const double> baseline, std::span<const double> candidate,
                          const BootstrapOptions& o) {
    if (baseline.size() != candidate.size())
        throw std::invalid_argument("paired saving: " + std::to_string(baseline.size()) + " baseline samples but " +
                                    std::to_string(candidate.size()) + " candidate samples; pairs need equal counts");
    requireFinite(baseline, "paired saving, baseline");
    requireFinite(candidate, "paired saving, candidate");
    if (o.resamples < 1)
        throw std::invalid_argument("bootstrap resamples = " + std::to_string(o.resamples) + ": must be at least 1");
    if (!(o.confidence > 0.0 && o.confidence < 1.0))
        throw std::invalid_argument("bootstrap confidence = " + std::to_string(o.confidence) + ": must be in (0, 1)");

    const std::size_t n = baseline.size();
    if (n > std::size_t{0xFFFFFFFFu}) throw std::invalid_argument("paired saving: too many pairs");
    std::vector<double> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = baseline[i] - candidate[i];

    PairedSaving r;
    r.pairs = n;
    r.confidence = o.confidence;
    r.resamples = o.resamples;
    r.saving = summarize(d);
    r.baseline = summarize(baseline);
    r.candidate = summarize(candidate);
    r.median = r.saving.median;

    SplitMix64 rng(o.seed);
    std::vector<double> medians(static_cast<std::size_t>(o.resamples));
    std::vector<double> resample(n);
    for (double& m : medians) {
        for (double& x : resample) x = d[rng.below(static_cast<std::uint32_t>(n))];
        std::sort(resample.begin(), resample.end());
        m = quantileSorted(resample, 0.5);
    }
    std::sort(medians.begin(), medians.end());
    const double tail = (1.0 - o.confidence) / 2.0;
    r.ciLow = quantileSorted(medians, tail);
    r.ciHigh = quantileSorted(medians, 1.0 - tail);
    return r;
}

ProjectedSaving projectSaving(const PairedSaving& s, int layers) {
    if (layers < 1)
        throw std::invalid_argument("projection over " + std::to_string(layers) + " layers: must be at least 1");
    const double k = double(layers) * 1e-6;  // ns per layer → ms over all layers
    return {s.median * k, s.ciLow * k, s.ciHigh * k};
}

}  // namespace zp::sched
