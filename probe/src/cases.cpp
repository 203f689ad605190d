#include "zp/probe/cases.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "zp/probe/input_error.hpp"
#include "zp/probe/random.hpp"
#include "catalogue_name.hpp"

namespace zp::probe {
namespace {

using oracle::bf16_t;
using oracle::bf16FromF32;
using oracle::ChainShape;

constexpr std::array<std::string_view, 7> kPatternNames = {
    "same_typical",  "disjoint_typical", "cross_row_overlap", "within_row_duplicate",
    "all_duplicate", "six_local",        "all_remote",
};

int typicalLocal(const ChainShape& s) { return (s.topK + s.cards - 1) / s.cards; }  // T = ceil(K / C)

class RouteDrawer {
public:
    RouteDrawer(const ChainShape& s, std::uint64_t seed) : s_(s), rng_(seed) {}

    // `n` local experts (physical ids) not drawn before by this drawer.
    std::vector<std::int32_t> local(int n) {
        std::vector<std::int32_t> ids;
        while (int(ids.size()) < n) {
            const std::int32_t id = s_.firstLocalExpert() + int(rng_.below(std::uint32_t(s_.localExperts())));
            if (usedLocal_.insert(id).second) ids.push_back(id);
        }
        return ids;
    }
    // `n` distinct experts of other cards.
    std::vector<std::int32_t> remote(int n) {
        std::vector<std::int32_t> ids;
        const int remoteCount = s_.experts - s_.localExperts();
        while (int(ids.size()) < n) {
            int id = int(rng_.below(std::uint32_t(remoteCount)));
            if (id >= s_.firstLocalExpert()) id += s_.localExperts();
            if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
        }
        return ids;
    }
    void shuffle(std::vector<std::int32_t>& row) {
        for (std::size_t i = row.size(); i > 1; --i) std::swap(row[i - 1], row[rng_.below(std::uint32_t(i))]);
    }
    SplitMix64& rng() { return rng_; }

private:
    const ChainShape& s_;
    SplitMix64 rng_;
    std::set<std::int32_t> usedLocal_;
};

// A row of `local` fresh local experts followed by `remote` remote ones, drawn in that order
// (one draw per statement: argument evaluation order differs between compilers).
std::vector<std::int32_t> drawRow(RouteDrawer& d, std::vector<std::int32_t> row, int local, int remote) {
    const auto l = d.local(local);
    row.insert(row.end(), l.begin(), l.end());
    const auto r = d.remote(remote);
    row.insert(row.end(), r.begin(), r.end());
    return row;
}

bool isLocal(const ChainShape& s, std::int32_t id) {
    return id >= s.firstLocalExpert() && id < s.firstLocalExpert() + s.localExperts();
}

// --- §7 input variants -------------------------------------------------------------------

struct WeightStyle {
    int scaleLo = 118, scaleHi = 124;  // E8M0 range drawn uniformly
    const int* scaleSet = nullptr;     // or one of these values
    int scaleSetSize = 0;
    int nanScalePerMille = 0;  // blocks with s = 255
    enum class Codes { Uniform, Negative, Saturated } codes = Codes::Uniform;
};

WeightStyle weightStyle(int v) {
    static constexpr int kRangeScales[] = {1, 2, 253, 254};
    WeightStyle w;
    // The E8M0 range the scales are drawn from.
    auto scales = [&w](int lo, int hi) {
        w.scaleLo = lo;
        w.scaleHi = hi;
    };
    switch (v) {
        case 1: scales(120, 126); break;
        case 2: scales(0, 127); break;
        case 4: w.codes = WeightStyle::Codes::Negative; break;
        case 5:
            w.scaleSet = kRangeScales;
            w.scaleSetSize = 4;
            break;
        case 6: w.nanScalePerMille = 30; break;
        case 9:
            w.codes = WeightStyle::Codes::Saturated;
            scales(128, 140);
            break;
        case 11: scales(0, 254); break;
        default: break;
    }
    return w;
}

void fillCodes(SplitMix64& rng, std::uint8_t* dst, std::size_t n, WeightStyle::Codes style) {
    for (std::size_t i = 0; i < n; ++i) {
        const auto r = rng.next();
        switch (style) {
            case WeightStyle::Codes::Uniform: dst[i] = std::uint8_t(r); break;
            case WeightStyle::Codes::Negative: dst[i] = std::uint8_t(0x88 | (r & 0x77)); break;
            case WeightStyle::Codes::Saturated:
                dst[i] = std::uint8_t(((r & 1) ? 0x0F : 0x07) | ((r & 2) ? 0xF0 : 0x70));
                break;
        }
    }
}

void fillScales(SplitMix64& rng, std::uint8_t* dst, std::size_t n, const WeightStyle& w) {
    for (std::size_t i = 0; i < n; ++i) {
        int s = w.scaleSet ? w.scaleSet[rng.below(std::uint32_t(w.scaleSetSize))] : rng.between(w.scaleLo, w.scaleHi);
        if (w.nanScalePerMille && int(rng.below(1000)) < w.nanScalePerMille) s = 255;
        dst[i] = std::uint8_t(s);
    }
}

void fillExpert(const ChainShape& s, oracle::LocalWeights& w, int le, std::uint64_t seed, const WeightStyle& style) {
    using LW = oracle::LocalWeights;
    SplitMix64 rng(seed);
    fillCodes(rng, w.w1Blocks.data() + le * LW::w1BlocksPerExpert(s), LW::w1BlocksPerExpert(s), style.codes);
    fillScales(rng, w.w1Scales.data() + le * LW::w1ScalesPerExpert(s), LW::w1ScalesPerExpert(s), style);
    fillCodes(rng, w.w2Blocks.data() + le * LW::w2BlocksPerExpert(s), LW::w2BlocksPerExpert(s), style.codes);
    fillScales(rng, w.w2Scales.data() + le * LW::w2ScalesPerExpert(s), LW::w2ScalesPerExpert(s), style);
}

// A magnitude 2^e * (1 + u), u in [0, 1), with a random sign: log-uniform over [2^lo, 2^(hi+1)).
float logUniform(SplitMix64& rng, int lo, int hi) {
    // One draw per statement: the order of evaluation of function arguments is unspecified
    // (gcc and clang differ), and the bytes must not depend on the compiler.
    const float mantissa = 1.0f + rng.unit();
    const float mag = std::ldexp(mantissa, rng.between(lo, hi));
    return (rng.next() & 1) ? -mag : mag;
}

float hiddenValue(SplitMix64& rng, int v) {
    switch (v) {
        case 1: return 32.0f * rng.normal();
        case 2: {
            const float x = rng.normal();
            return std::ldexp(x, -rng.between(118, 134));
        }
        case 3: return (rng.next() & 1) ? -0.0f : 0.0f;
        case 4: return -(std::fabs(rng.normal()) + 0x1p-10f);
        case 7: {
            const float x = rng.normal();
            if (rng.below(100) == 0) return (rng.next() & 1) ? -INFINITY : INFINITY;
            return x;
        }
        case 10: return logUniform(rng, 0, 20);
        case 11: return logUniform(rng, -133, 60);
        default: return rng.normal();
    }
}

std::vector<float> routingWeights(SplitMix64& rng, const ChainShape& s, int v) {
    const int M = s.rows, K = s.topK;
    std::vector<float> w(std::size_t(M) * K);
    if (v == 8) {
        // Zero, negative, huge, subnormal: every weight finite, products may still overflow.
        static constexpr float kOdd[] = {0.0f, -0.0f, -1.5f, 1.0e38f, -2.0e30f, 1.0e-40f, 65504.0f, 0.25f};
        for (float& x : w) {
            const float odd = kOdd[rng.below(8)];
            x = odd * (1.0f + rng.unit());
        }
        return w;
    }
    for (int m = 0; m < M; ++m) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) sum += (w[std::size_t(m) * K + k] = 0.05f + rng.unit());
        for (int k = 0; k < K; ++k) w[std::size_t(m) * K + k] /= sum;
    }
    return w;
}

}  // namespace

std::string_view patternName(RoutePattern p) { return kPatternNames[static_cast<std::size_t>(p)]; }

RoutePattern parsePattern(std::string_view name) {
    return parseCatalogueName(name, kAllRoutePatterns, patternName, "route pattern", "all");
}

std::optional<std::string> patternInvalidReason(const ChainShape& s, RoutePattern p) {
    const int M = s.rows, K = s.topK, T = typicalLocal(s);
    const int perCard = s.localExperts(), remote = s.experts - perCard;
    auto need = [](bool ok, std::string why) -> std::optional<std::string> {
        return ok ? std::nullopt : std::optional<std::string>(std::move(why));
    };
    auto str = [](long v) { return std::to_string(v); };
    const std::string remoteWhy = "needs " + str(K - T) + " distinct remote experts per row, have " + str(remote);
    switch (p) {
        case RoutePattern::SameTypical:
            if (auto r = need(T <= perCard, "needs " + str(T) + " local experts, card has " + str(perCard))) return r;
            return need(K - T <= remote, remoteWhy);
        case RoutePattern::DisjointTypical:
            if (auto r = need(M * T <= perCard,
                              "needs rows*T = " + str(M * T) + " distinct local experts, card has " + str(perCard)))
                return r;
            return need(K - T <= remote, remoteWhy);
        case RoutePattern::CrossRowOverlap:
            if (auto r = need(M >= 2, "needs at least 2 rows")) return r;
            if (auto r = need(1 + M * (T - 1) <= perCard,
                              "needs " + str(1 + M * (T - 1)) + " distinct local experts, card has " + str(perCard)))
                return r;
            return need(K - T <= remote, remoteWhy);
        case RoutePattern::WithinRowDuplicate:
            if (auto r = need(K >= 2, "needs top_k >= 2")) return r;
            if (auto r = need(K - T >= 1, "needs a remote route in row 0 (top_k > T = " + str(T) + ")")) return r;
            if (auto r = need(M * T <= perCard,
                              "needs rows*T = " + str(M * T) + " distinct local experts, card has " + str(perCard)))
                return r;
            return need(K - T <= remote, remoteWhy);
        case RoutePattern::AllDuplicate: return need(K >= 2, "needs top_k >= 2");
        case RoutePattern::SixLocal:
            return need(M * K <= perCard, "needs experts/cards >= rows*top_k = " + str(M * K) +
                                              " distinct local experts, card has " + str(perCard));
        case RoutePattern::AllRemote:
            if (auto r = need(s.cards > 1, "needs cards > 1 (no remote experts)")) return r;
            return need(K <= remote, "needs " + str(K) + " distinct remote experts per row, have " + str(remote));
    }
    return std::string("unknown pattern");
}

std::vector<std::int32_t> makeRoutes(const ChainShape& s, RoutePattern p, std::uint64_t seed) {
    const int M = s.rows, K = s.topK, T = typicalLocal(s);
    RouteDrawer d(s, seed);
    std::vector<std::int32_t> ids;
    ids.reserve(std::size_t(M) * K);
    auto appendRow = [&](std::vector<std::int32_t> row) {
        d.shuffle(row);
        ids.insert(ids.end(), row.begin(), row.end());
    };
    switch (p) {
        case RoutePattern::SameTypical: {
            auto row = drawRow(d, {}, T, K - T);
            d.shuffle(row);
            for (int m = 0; m < M; ++m) ids.insert(ids.end(), row.begin(), row.end());
            break;
        }
        case RoutePattern::DisjointTypical:
        case RoutePattern::WithinRowDuplicate:
            for (int m = 0; m < M; ++m) appendRow(drawRow(d, {}, T, K - T));
            if (p == RoutePattern::WithinRowDuplicate) {
                // One remote route of row 0 names one of row 0's local experts again.
                std::vector<int> remotePos, localPos;
                for (int k = 0; k < K; ++k) (isLocal(s, ids[k]) ? localPos : remotePos).push_back(k);
                const int dst = remotePos[d.rng().below(std::uint32_t(remotePos.size()))];
                ids[dst] = ids[localPos[d.rng().below(std::uint32_t(localPos.size()))]];
            }
            break;
        case RoutePattern::CrossRowOverlap: {
            const std::int32_t shared = d.local(1)[0];
            for (int m = 0; m < M; ++m) appendRow(drawRow(d, {shared}, T - 1, K - T));
            break;
        }
        case RoutePattern::AllDuplicate: ids.assign(std::size_t(M) * K, d.local(1)[0]); break;
        case RoutePattern::SixLocal:
            for (int m = 0; m < M; ++m) appendRow(d.local(K));
            break;
        case RoutePattern::AllRemote:
            for (int m = 0; m < M; ++m) appendRow(d.remote(K));
            break;
    }
    return ids;
}

std::uint64_t caseSeed(std::uint64_t baseSeed, RoutePattern p, int v) {
    return deriveSeed(baseSeed, 0x100 * (static_cast<std::uint64_t>(p) + 1) + std::uint64_t(v));
}

std::string Case::name() const { return std::string(patternName(pattern)) + "/v" + std::to_string(inputVariant); }

Case makeCase(const ChainShape& s, RoutePattern p, int v, std::uint64_t baseSeed, oracle::LocalWeights* weights) {
    if (v < 0 || v >= kInputVariants)
        throw InputError("input variant " + std::to_string(v) + " is not in [0, " + std::to_string(kInputVariants) +
                         ")");
    if (auto why = patternInvalidReason(s, p))
        throw InputError("route pattern " + std::string(patternName(p)) +
                         " is not valid for this configuration: " + *why);
    Case c{p, v, caseSeed(baseSeed, p, v), {}, {}};
    // Independent streams, so changing one part of the generator leaves the others' bytes alone.
    c.inputs.topkIds = makeRoutes(s, p, deriveSeed(c.seed, 1));
    SplitMix64 xRng(deriveSeed(c.seed, 2));
    c.inputs.hidden.resize(std::size_t(s.rows) * s.hidden);
    for (bf16_t& x : c.inputs.hidden) x = bf16FromF32(hiddenValue(xRng, v));
    SplitMix64 wRng(deriveSeed(c.seed, 3));
    c.inputs.topkWeights = routingWeights(wRng, s, v);

    std::set<int> touched;
    for (std::int32_t id : c.inputs.topkIds)
        if (isLocal(s, id)) touched.insert(id - s.firstLocalExpert());
    c.touchedLocalExperts.assign(touched.begin(), touched.end());
    if (weights) {
        const WeightStyle style = weightStyle(v);
        for (int le : c.touchedLocalExperts)
            fillExpert(s, *weights, le, deriveSeed(c.seed, 0x1000 + std::uint64_t(le)), style);
    }
    return c;
}

oracle::LocalWeights makeRandomWeights(const ChainShape& s, std::uint64_t seed) {
    oracle::LocalWeights w = oracle::LocalWeights::zeros(s);
    const WeightStyle style = weightStyle(0);
    for (int le = 0; le < s.localExperts(); ++le)
        fillExpert(s, w, le, deriveSeed(seed, 0x1000 + std::uint64_t(le)), style);
    return w;
}

}  // namespace zp::probe
