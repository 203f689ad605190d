// CONTRACT §6 route patterns and §7 input variants, generated deterministically.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "zp/probe/cases.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/probe/random.hpp"

using namespace zp;
using probe::RoutePattern;

namespace {

oracle::ChainShape reduced() {
    oracle::ChainShape s;
    s.hidden = 128;
    s.intermediate = 64;
    s.experts = 48;
    return s;
}

std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

struct Counts {
    std::size_t localRoutes, pairs, experts;
};

Counts countsOf(const oracle::ChainShape& s, const std::vector<std::int32_t>& ids) {
    const auto c = oracle::compactRoutes(s, ids);
    std::size_t local = 0;
    for (auto r : c.routeRow) local += r >= 0;
    std::set<int> experts;
    for (auto r : c.rows) experts.insert(r.localExpert);
    return {local, c.rows.size(), experts.size()};
}

}  // namespace

TEST(SplitMix64, GivenSeedZero_WhenDrawn_ThenReferenceSequence) {
    // The published SplitMix64 reference values for seed 0.
    probe::SplitMix64 g(0);
    EXPECT_EQ(g.next(), 0xE220A8397B1DCDAFull);
    EXPECT_EQ(g.next(), 0x6E789E6AA1B965F4ull);
    EXPECT_EQ(g.next(), 0x06C45D188009454Full);
}

TEST(Patterns, GivenDefaultShape_WhenEveryPatternDrawn_ThenItsShapeHolds) {
    const oracle::ChainShape s;  // K = 6, C = 4: T = 2
    // Per pattern, the counts its definition fixes (an empty field: the draw decides).
    struct Want {
        RoutePattern pattern;
        std::optional<std::size_t> localRoutes, pairs, experts;
    };
    const Want wants[] = {
        {RoutePattern::SameTypical, 4, 4, 2},      {RoutePattern::DisjointTypical, {}, 4, 4},
        {RoutePattern::CrossRowOverlap, {}, 4, 3}, {RoutePattern::WithinRowDuplicate, 5, 4, 4},
        {RoutePattern::AllDuplicate, 12, 2, 1},    {RoutePattern::SixLocal, {}, 12, 12},
        {RoutePattern::AllRemote, 0, {}, {}},
    };
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        for (const Want& w : wants) {
            SCOPED_TRACE(std::string(probe::patternName(w.pattern)) + " seed " + std::to_string(seed));
            const Counts c = countsOf(s, probe::makeRoutes(s, w.pattern, seed));
            if (w.localRoutes) {
                EXPECT_EQ(c.localRoutes, *w.localRoutes);
            }
            if (w.pairs) {
                EXPECT_EQ(c.pairs, *w.pairs);
            }
            if (w.experts) {
                EXPECT_EQ(c.experts, *w.experts);
            }
        }
    }
}

TEST(Patterns, GivenRemoteRoutes_WhenDrawn_ThenDistinctWithinEachRow) {
    const oracle::ChainShape s;
    for (auto p : probe::kAllRoutePatterns) {
        if (p == RoutePattern::AllDuplicate || p == RoutePattern::WithinRowDuplicate) continue;
        const auto ids = probe::makeRoutes(s, p, 7);
        for (int m = 0; m < s.rows; ++m) {
            std::set<int> row(ids.begin() + m * s.topK, ids.begin() + (m + 1) * s.topK);
            EXPECT_EQ(row.size(), std::size_t(s.topK)) << probe::patternName(p);
        }
    }
}

TEST(Patterns, GivenOneCard_WhenChecked_ThenOnlyPatternsWithoutRemoteRoutesAreValid) {
    oracle::ChainShape s;
    s.cards = 1;
    EXPECT_FALSE(probe::patternInvalidReason(s, RoutePattern::SixLocal));
    EXPECT_FALSE(probe::patternInvalidReason(s, RoutePattern::AllDuplicate));
    EXPECT_FALSE(probe::patternInvalidReason(s, RoutePattern::SameTypical));  // T = K: all local
    EXPECT_TRUE(probe::patternInvalidReason(s, RoutePattern::AllRemote));
    EXPECT_TRUE(probe::patternInvalidReason(s, RoutePattern::WithinRowDuplicate));
}

TEST(Patterns, GivenTooFewLocalExperts_WhenChecked_ThenSixLocalInvalidWithReason) {
    oracle::ChainShape s;
    s.experts = 40;  // 10 per card < M*K = 12
    const auto why = probe::patternInvalidReason(s, RoutePattern::SixLocal);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("12"), std::string::npos) << *why;
    s.topK = 1;
    EXPECT_TRUE(probe::patternInvalidReason(s, RoutePattern::AllDuplicate));
}

TEST(Patterns, GivenNames_WhenParsed_ThenRoundTripAndUnknownRejected) {
    for (auto p : probe::kAllRoutePatterns) EXPECT_EQ(probe::parsePattern(probe::patternName(p)), p);
    try {
        probe::parsePattern("six-local");
        FAIL();
    } catch (const probe::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("'six-local'"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("six_local"), std::string::npos);
    }
}

TEST(Cases, GivenFixedSeed_WhenAllCasesGenerated_ThenBytesPinnedByHash) {
    const auto s = reduced();
    auto weights = oracle::LocalWeights::zeros(s);
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (auto p : probe::kAllRoutePatterns)
        for (int v = 0; v < probe::kInputVariants; ++v) {
            const auto c = probe::makeCase(s, p, v, 42, &weights);
            h = fnv1a(h, c.inputs.topkIds.data(), c.inputs.topkIds.size() * 4);
            h = fnv1a(h, c.inputs.hidden.data(), c.inputs.hidden.size() * 2);
            h = fnv1a(h, c.inputs.topkWeights.data(), c.inputs.topkWeights.size() * 4);
        }
    for (const auto* part : {&weights.w1Blocks, &weights.w1Scales, &weights.w2Blocks, &weights.w2Scales})
        h = fnv1a(h, part->data(), part->size());
    // Pinned: the same with gcc and clang (CI checks both); a change here changes every case
    // on every machine: bump it only on purpose.
    EXPECT_EQ(h, 0xc97d39cf2c567efaull) << std::hex << h;
}

TEST(Cases, GivenTheSameCase_WhenGeneratedTwice_ThenIdentical) {
    const auto s = reduced();
    auto w1 = oracle::LocalWeights::zeros(s), w2 = oracle::LocalWeights::zeros(s);
    const auto a = probe::makeCase(s, RoutePattern::SixLocal, 5, 9, &w1);
    const auto b = probe::makeCase(s, RoutePattern::SixLocal, 5, 9, &w2);
    EXPECT_EQ(a.inputs.hidden, b.inputs.hidden);
    EXPECT_EQ(a.inputs.topkIds, b.inputs.topkIds);
    EXPECT_EQ(w1.w1Scales, w2.w1Scales);
    EXPECT_EQ(a.touchedLocalExperts.size(), 12u);
}

TEST(Cases, GivenVariants_WhenGenerated_ThenEachStressesWhatItSays) {
    const auto s = reduced();
    auto w = oracle::LocalWeights::zeros(s);
    auto anyOf = [](const auto& v, auto pred) { return std::any_of(v.begin(), v.end(), pred); };
    auto f = [](oracle::bf16_t b) { return oracle::f32FromBf16(b); };

    auto c3 = probe::makeCase(s, RoutePattern::SixLocal, 3, 1, &w);  // zeros, both signs
    EXPECT_TRUE(
        std::all_of(c3.inputs.hidden.begin(), c3.inputs.hidden.end(), [](auto b) { return (b & 0x7FFF) == 0; }));
    EXPECT_TRUE(anyOf(c3.inputs.hidden, [](auto b) { return b == 0x8000; }));
    EXPECT_TRUE(anyOf(c3.inputs.hidden, [](auto b) { return b == 0x0000; }));

    auto c4 = probe::makeCase(s, RoutePattern::SixLocal, 4, 1, &w);  // one sign
    EXPECT_TRUE(std::all_of(c4.inputs.hidden.begin(), c4.inputs.hidden.end(), [&](auto b) { return f(b) < 0; }));
    const int le = c4.touchedLocalExperts[0];
    const std::size_t per = oracle::LocalWeights::w1BlocksPerExpert(s);
    EXPECT_TRUE(std::all_of(w.w1Blocks.begin() + le * per, w.w1Blocks.begin() + (le + 1) * per,
                            [](std::uint8_t b) { return (b & 0x88) == 0x88; }));

    auto c6 = probe::makeCase(s, RoutePattern::SixLocal, 6, 1, &w);  // NaN scales
    const std::size_t perS = oracle::LocalWeights::w1ScalesPerExpert(s);
    bool nanScale = false;
    for (int e : c6.touchedLocalExperts)
        nanScale |= std::any_of(w.w1Scales.begin() + e * perS, w.w1Scales.begin() + (e + 1) * perS,
                                [](auto x) { return x == 255; });
    EXPECT_TRUE(nanScale);

    auto c7 = probe::makeCase(s, RoutePattern::SixLocal, 7, 1, &w);  // Inf inputs
    EXPECT_TRUE(anyOf(c7.inputs.hidden, [&](auto b) { return std::isinf(f(b)); }));

    auto c8 = probe::makeCase(s, RoutePattern::SixLocal, 8, 1, &w);  // odd routing weights
    EXPECT_TRUE(anyOf(c8.inputs.topkWeights, [](float x) { return x <= 0; }));

    auto c2 = probe::makeCase(s, RoutePattern::SixLocal, 2, 1, &w);  // subnormal inputs
    EXPECT_TRUE(anyOf(c2.inputs.hidden, [](auto b) { return (b & 0x7F80) == 0 && (b & 0x7F) != 0; }));
}

TEST(Cases, GivenInvalidPatternOrVariant_WhenMade_ThenInputError) {
    oracle::ChainShape s = reduced();
    s.cards = 1;
    s.experts = 12;
    EXPECT_THROW(probe::makeCase(s, RoutePattern::AllRemote, 0, 1, nullptr), probe::InputError);
    EXPECT_THROW(probe::makeCase(reduced(), RoutePattern::SixLocal, 12, 1, nullptr), probe::InputError);
}
