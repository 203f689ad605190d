#include "zp/probe/timing_stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "zp/probe/random.hpp"

namespace zp::probe {
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

namespace {

// The continued fraction of the regularised incomplete beta function (modified Lentz).
double betaFraction(double a, double b, double x) {
    constexpr double tiny = 1e-300, eps = 1e-15;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (std::fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double f = d;
    for (int m = 1; m <= 500; ++m) {
        for (int half = 0; half < 2; ++half) {
            const double num = half == 0 ? m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
                                         : -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
            d = 1.0 + num * d;
            if (std::fabs(d) < tiny) d = tiny;
            c = 1.0 + num / c;
            if (std::fabs(c) < tiny) c = tiny;
            d = 1.0 / d;
            f *= c * d;
            if (half == 1 && std::fabs(c * d - 1.0) < eps) return f;
        }
    }
    return f;
}

// I_x(a, b).
double incompleteBeta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double lnFront = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0)) return std::exp(lnFront) * betaFraction(a, b, x) / a;
    return 1.0 - std::exp(lnFront) * betaFraction(b, a, 1.0 - x) / b;
}

double studentCdf(double t, int dof) {
    const double v = dof;
    const double tail = 0.5 * incompleteBeta(v / 2.0, 0.5, v / (v + t * t));
    return t >= 0 ? 1.0 - tail : tail;
}

void requireBlocks(std::span<const std::vector<double>> a, std::span<const std::vector<double>> b) {
    if (a.size() != b.size())
        throw std::invalid_argument("blocked saving: " + std::to_string(a.size()) + " baseline blocks but " +
                                    std::to_string(b.size()) + " candidate blocks");
    if (a.size() < 2)
        throw std::invalid_argument("blocked saving: " + std::to_string(a.size()) +
                                    " block(s); the between-block spread needs at least 2");
    for (std::size_t j = 0; j < a.size(); ++j) {
        if (a[j].size() != b[j].size() || a[j].empty())
            throw std::invalid_argument("blocked saving: block " + std::to_string(j) + " has " +
                                        std::to_string(a[j].size()) + " baseline and " + std::to_string(b[j].size()) +
                                        " candidate samples; a block needs equal, non-zero counts");
        requireFinite(a[j], "blocked saving, baseline");
        requireFinite(b[j], "blocked saving, candidate");
    }
}

}  // namespace

double studentT(double p, int dof) {
    if (!(p > 0.0 && p < 1.0))
        throw std::invalid_argument("t quantile p = " + std::to_string(p) + ": must be in (0, 1)");
    if (dof < 1) throw std::invalid_argument("t quantile with " + std::to_string(dof) + " degrees of freedom");
    if (p < 0.5) return -studentT(1.0 - p, dof);
    double lo = 0, hi = 1;
    while (studentCdf(hi, dof) < p) hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
        const double mid = 0.5 * (lo + hi);
        (studentCdf(mid, dof) < p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

double rerunHalfWidth(double blockSd, std::size_t blocks, double confidence) {
    if (blocks < 2) throw std::invalid_argument("an interval over " + std::to_string(blocks) + " block(s): needs 2");
    return studentT((1.0 + confidence) / 2.0, int(blocks) - 1) * blockSd * std::sqrt(2.0 / double(blocks));
}

BlockedSaving blockedSaving(std::span<const std::vector<double>> baseline,
                            std::span<const std::vector<double>> candidate, double confidence, double resolution) {
    requireBlocks(baseline, candidate);
    if (!(confidence > 0.0 && confidence < 1.0))
        throw std::invalid_argument("confidence = " + std::to_string(confidence) + ": must be in (0, 1)");
    if (!(resolution >= 0.0)) throw std::invalid_argument("resolution = " + std::to_string(resolution));
    BlockedSaving r;
    r.blocks = baseline.size();
    r.confidence = confidence;
    std::vector<double> all, allA, allB;
    for (std::size_t j = 0; j < r.blocks; ++j) {
        std::vector<double> d(baseline[j].size());
        for (std::size_t i = 0; i < d.size(); ++i) d[i] = baseline[j][i] - candidate[j][i];
        r.blockMedians.push_back(median(d));
        all.insert(all.end(), d.begin(), d.end());
        allA.insert(allA.end(), baseline[j].begin(), baseline[j].end());
        allB.insert(allB.end(), candidate[j].begin(), candidate[j].end());
    }
    r.pairs = all.size();
    r.median = median(all);
    r.baseline = summarize(allA);
    r.candidate = summarize(allB);
    const Summary m = summarize(r.blockMedians);
    r.center = m.mean;
    r.blockSd = m.stddev;
    const double half = std::max(rerunHalfWidth(r.blockSd, r.blocks, confidence), resolution);
    r.ciLow = r.center - half;
    r.ciHigh = r.center + half;
    return r;
}

Interval hierarchicalBootstrap(std::span<const std::vector<double>> baseline,
                               std::span<const std::vector<double>> candidate, const BootstrapOptions& o) {
    requireBlocks(baseline, candidate);
    std::vector<std::vector<double>> d(baseline.size());
    for (std::size_t j = 0; j < d.size(); ++j)
        for (std::size_t i = 0; i < baseline[j].size(); ++i) d[j].push_back(baseline[j][i] - candidate[j][i]);
    SplitMix64 rng(o.seed);
    std::vector<double> medians;
    std::vector<double> pooled;
    const auto k = static_cast<std::uint32_t>(d.size());
    for (int b = 0; b < o.resamples; ++b) {
        pooled.clear();
        for (std::uint32_t j = 0; j < k; ++j) {
            const auto& block = d[rng.below(k)];
            const auto n = static_cast<std::uint32_t>(block.size());
            for (std::uint32_t i = 0; i < n; ++i) pooled.push_back(block[rng.below(n)]);
        }
        std::sort(pooled.begin(), pooled.end());
        medians.push_back(quantileSorted(pooled, 0.5));
    }
    std::sort(medians.begin(), medians.end());
    const double tail = (1.0 - o.confidence) / 2.0;
    return {quantileSorted(medians, tail), quantileSorted(medians, 1.0 - tail)};
}

int blocksToDecide(double blockSd, double distance, double confidence, int cap) {
    if (!(distance > 0) || !std::isfinite(blockSd)) return cap;
    if (blockSd <= 0) return 2;
    for (int k = 2; k <= cap; ++k)
        if (rerunHalfWidth(blockSd, std::size_t(k), confidence) < distance) return k;
    return cap;
}

ProjectedSaving projectSaving(const BlockedSaving& s, int layers) {
    if (layers < 1)
        throw std::invalid_argument("projection over " + std::to_string(layers) + " layers: must be at least 1");
    const double k = double(layers) * 1e-6;
    return {s.median * k, s.ciLow * k, s.ciHigh * k};
}

}  // namespace zp::probe
