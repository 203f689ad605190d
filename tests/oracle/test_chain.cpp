// CONTRACT §5: compaction for every pattern and the reference chain on hand-computed shapes.
#include <gtest/gtest.h>

#include <bit>
#include <limits>
#include <stdexcept>

#include "zp/oracle/chain.hpp"
#include "zp/oracle/numerics.hpp"

using namespace zp::oracle;
using Rows = std::vector<CompactRoutes::Row>;

namespace {

ChainShape defaultShape() { return ChainShape{}; }  // E = 192, C = 4: card 0 owns ids 0..47

CompactRoutes compact(std::vector<std::int32_t> ids) { return compactRoutes(defaultShape(), ids); }

}  // namespace

TEST(Compaction, GivenSameTypical_WhenCompacted_ThenEachExpertHasBothRows) {
    const auto c = compact({5, 100, 7, 60, 150, 99, 5, 100, 7, 60, 150, 99});
    EXPECT_EQ(c.rows, (Rows{{5, 0}, {5, 1}, {7, 0}, {7, 1}}));
    EXPECT_EQ(c.routeRow, (std::vector<std::int32_t>{0, -1, 2, -1, -1, -1, 1, -1, 3, -1, -1, -1}));
}

TEST(Compaction, GivenDisjointTypical_WhenCompacted_ThenOrderedByExpertThenRow) {
    const auto c = compact({3, 50, 9, 70, 80, 90, 1, 51, 20, 71, 81, 91});
    EXPECT_EQ(c.rows, (Rows{{1, 1}, {3, 0}, {9, 0}, {20, 1}}));
    EXPECT_EQ(c.routeRow, (std::vector<std::int32_t>{1, -1, 2, -1, -1, -1, 0, -1, 3, -1, -1, -1}));
}

TEST(Compaction, GivenCrossRowOverlap_WhenCompacted_ThenSharedExpertHasTwoRows) {
    const auto c = compact({4, 50, 8, 70, 80, 90, 4, 51, 2, 71, 81, 91});
    EXPECT_EQ(c.rows, (Rows{{2, 1}, {4, 0}, {4, 1}, {8, 0}}));
    EXPECT_EQ(c.routeRow, (std::vector<std::int32_t>{1, -1, 3, -1, -1, -1, 2, -1, 0, -1, -1, -1}));
}

TEST(Compaction, GivenWithinRowDuplicate_WhenCompacted_ThenOneRowTwoRoutes) {
    const auto c = compact({3, 3, 9, 70, 80, 90, 1, 51, 20, 71, 81, 91});
    EXPECT_EQ(c.rows, (Rows{{1, 1}, {3, 0}, {9, 0}, {20, 1}}));
    EXPECT_EQ(c.routeRow, (std::vector<std::int32_t>{1, 1, 2, -1, -1, -1, 0, -1, 3, -1, -1, -1}));
}

TEST(Compaction, GivenAllDuplicate_WhenCompacted_ThenTwoRowsOneExpert) {
    const auto c = compact(std::vector<std::int32_t>(12, 7));
    EXPECT_EQ(c.rows, (Rows{{7, 0}, {7, 1}}));
    EXPECT_EQ(c.routeRow, (std::vector<std::int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
}

TEST(Compaction, GivenSixLocal_WhenCompacted_ThenTwelveRowsSortedByExpert) {
    const auto c = compact({11, 10, 9, 8, 7, 6, 0, 1, 2, 3, 4, 5});
    EXPECT_EQ(c.rows,
              (Rows{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 0}, {7, 0}, {8, 0}, {9, 0}, {10, 0}, {11, 0}}));
    EXPECT_EQ(c.routeRow, (std::vector<std::int32_t>{11, 10, 9, 8, 7, 6, 0, 1, 2, 3, 4, 5}));
}

TEST(Compaction, GivenAllRemote_WhenCompacted_ThenNoRows) {
    const auto c = compact({48, 60, 100, 191, 150, 99, 49, 61, 101, 190, 151, 98});
    EXPECT_TRUE(c.rows.empty());
    EXPECT_EQ(c.routeRow, std::vector<std::int32_t>(12, -1));
}

TEST(Compaction, GivenCardTwo_WhenCompacted_ThenLocalIdsAreShifted) {
    ChainShape s;
    s.card = 2;  // owns 96..143
    const auto c = compactRoutes(s, std::vector<std::int32_t>{96, 143, 0, 1, 2, 3, 97, 4, 5, 6, 7, 8});
    EXPECT_EQ(c.rows, (Rows{{0, 0}, {1, 1}, {47, 0}}));
}

TEST(Compaction, GivenIdOutOfRange_WhenCompacted_ThenErrorNamesRouteAndId) {
    try {
        compact({0, 1, 2, 3, 4, 5, 6, 7, 192, 9, 10, 11});
        FAIL() << "expected an error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("topk_ids[1][2] = 192"), std::string::npos) << e.what();
    }
    EXPECT_THROW(compact({-1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), std::invalid_argument);
}

// torch.topk's int64 ids: the same routes for the same values; one beyond int32 range is
// outside [0, E) (never narrowed first: 2^32 + 3 is not expert 3), named whole.
TEST(Compaction, GivenInt64Ids_WhenCompacted_ThenTheInt32RoutesAndIdsBeyondInt32AreInvalid) {
    ChainShape s;
    s.card = 2;
    const std::vector<std::int32_t> narrow{96, 143, 0, 1, 2, 3, 97, 4, 96, 6, 7, 8};
    const std::vector<std::int64_t> wide(narrow.begin(), narrow.end());
    const auto a = compactRoutes(s, narrow), b = compactRoutes(s, wide);
    EXPECT_EQ(a.rows, b.rows);
    EXPECT_EQ(a.routeRow, b.routeRow);
    EXPECT_EQ(narrowIds(s, wide), narrow);
    EXPECT_EQ(invalidIds(s, wide), (InvalidIds{0, -1}));
    for (const std::int64_t bad : {(std::int64_t(1) << 32) + 97, std::int64_t(1) << 31, std::int64_t(1) << 40,
                                   std::numeric_limits<std::int64_t>::min(), std::int64_t(-1)}) {
        auto ids = wide;
        ids[7] = bad;
        ids[10] = 192;
        EXPECT_EQ(invalidIds(s, ids), (InvalidIds{2, 7})) << bad;
        for (auto* f : {+[](const ChainShape&sh, std::span<const std::int64_t> v) { compactRoutes(sh, v); },
                        +[](const ChainShape&sh, std::span<const std::int64_t> v) { narrowIds(sh, v); }}) {
            try {
                f(s, ids);
                ADD_FAILURE() << bad << " accepted";
            } catch (const std::invalid_argument& e) {
                EXPECT_NE(std::string(e.what()).find("topk_ids[1][1] = " + std::to_string(bad) +
                                                     " is not an expert id in [0, 192)"),
                          std::string::npos)
                    << e.what();
            }
        }
    }
}

namespace {

// H = I = 32, E = 4 on 2 cards (card 0 owns experts 0 and 1), K = 2, M = 2; every code 1.0
// (0x22) and scale 2^0, so every dot is the plain sum of the 32 activations.
struct Tiny {
    ChainShape s;
    LocalWeights w;
    ChainInputs in;
    Tiny() {
        s.hidden = 32;
        s.intermediate = 32;
        s.experts = 4;
        s.cards = 2;
        s.topK = 2;
        s.rows = 2;
        w = LocalWeights::zeros(s);
        std::fill(w.w1Blocks.begin(), w.w1Blocks.end(), 0x22);
        std::fill(w.w1Scales.begin(), w.w1Scales.end(), 127);
        std::fill(w.w2Blocks.begin(), w.w2Blocks.end(), 0x22);
        std::fill(w.w2Scales.begin(), w.w2Scales.end(), 127);
        in.hidden.assign(64, bf16FromF32(0.125f));                              // row 0: sums to 4
        std::fill(in.hidden.begin() + 32, in.hidden.end(), bf16FromF32(0.5f));  // row 1: sums to 16
        in.topkIds = {0, 1, 1, 3};                                              // row 1's second route is remote
        in.topkWeights = {0.5f, 0.5f, 2.0f, 7.0f};
    }
    ChainOutputs run() const { return runChain(s, w, in, buildSiluTable(s.swigluAlpha)); }
};

}  // namespace

TEST(Chain, GivenTinyShape_WhenRun_ThenHandComputedValues) {
    const auto o = Tiny().run();
    EXPECT_EQ(o.routes.rows, (Rows{{0, 0}, {1, 0}, {1, 1}}));
    // Row 0: gate = up = 4; SILU[4] = 3.921875; act = 15.6875; y = 32 * 15.6875 = 502.
    EXPECT_EQ(o.gateUp[0], bf16FromF32(4.0f));
    EXPECT_EQ(o.act[0], bf16FromF32(15.6875f));
    EXPECT_EQ(o.y[0], bf16FromF32(502.0f));
    // Row 1: gate = up = 16, both clamped to L = 10; act = 10 * 10; y = 3200; out = 2 * 3200.
    EXPECT_EQ(o.gateUp[2 * 64], bf16FromF32(16.0f));
    EXPECT_EQ(o.act[2 * 32], bf16FromF32(100.0f));
    EXPECT_EQ(o.y[2 * 32], bf16FromF32(3200.0f));
    EXPECT_EQ(o.out[0], bf16FromF32(502.0f));    // 0.5 * 502 + 0.5 * 502
    EXPECT_EQ(o.out[32], bf16FromF32(6400.0f));  // the remote route (weight 7) is not gathered
    EXPECT_FALSE(o.metSubnormal);
}

TEST(Chain, GivenUpBias_WhenRun_ThenAddedToClampedUp) {
    Tiny t;
    t.s.swigluUpBias = 1.0f;
    const auto o = t.run();
    EXPECT_EQ(o.act[0], bf16FromF32(19.625f));      // bf16(3.921875 * 5 = 19.609375)
    EXPECT_EQ(o.out[0], bf16FromF32(628.0f));       // 32 * 19.625
    EXPECT_EQ(o.act[2 * 32], bf16FromF32(110.0f));  // 10 * (10 + 1)
    EXPECT_EQ(o.out[32], bf16FromF32(7040.0f));
}

TEST(Chain, GivenLayouts_WhenUpRowsScaledTwice_ThenBothLayoutsReadTheirOwnRows) {
    Tiny split;
    for (int n = 32; n < 64; ++n) split.w.w1Scales[n] = 128;  // split: up rows [I, 2I) doubled (expert 0)
    Tiny inter;
    inter.s.layout = GateUpLayout::Interleaved;
    for (int n = 1; n < 64; n += 2) inter.w.w1Scales[n] = 128;  // interleaved: odd rows are up
    const auto a = split.run(), b = inter.run();
    EXPECT_EQ(a.act[0], bf16FromF32(31.375f));  // SILU[4] * 8
    EXPECT_EQ(a.act, b.act);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.y[0], bf16FromF32(1004.0f));
}

TEST(Chain, GivenNegativeClampAndNaN_WhenRun_ThenClampedBelowAndNaNPassesThrough) {
    Tiny t;
    std::fill(t.in.hidden.begin() + 32, t.in.hidden.end(), bf16FromF32(-0.5f));  // row 1 sums to -16
    t.w.w1Scales[64 + 0] = 255;  // expert 1 (H/32 = 1 scale per row), gate column 0: NaN
    const auto o = t.run();
    // Row 2 (expert 1, token 1): up = -16 clamps to -10; gate = -16 stays (no lower clamp).
    const float s = std::bit_cast<float>(std::uint32_t(buildSiluTable(1.0)[bf16FromF32(-16.0f)]) << 16);
    EXPECT_EQ(o.act[2 * 32 + 1], bf16FromF32(s * -10.0f));
    EXPECT_EQ(o.gateUp[2 * 64 + 0], 0x7FC0);
    EXPECT_EQ(o.act[2 * 32 + 0], 0x7FC0);
    EXPECT_EQ(o.out[32], 0x7FC0);  // NaN act reaches every y of that row, and out
}

TEST(Chain, GivenSubnormalInputs_WhenRun_ThenReported) {
    Tiny t;
    std::fill(t.in.hidden.begin(), t.in.hidden.end(), bf16_t{0x0001});
    EXPECT_TRUE(t.run().metSubnormal);
}

TEST(Chain, GivenM1Form_WhenRunOnDuplicates_ThenAgreesWithCompactedChain) {
    Tiny t;
    t.in.topkIds = {1, 1, 0, 1};  // within-row duplicate in row 0
    t.in.topkWeights = {0.25f, -3.0f, 1.5f, 1e-3f};
    const auto silu = buildSiluTable(1.0);
    EXPECT_EQ(runChainM1(t.s, t.w, t.in, silu), runChain(t.s, t.w, t.in, silu).out);
}

// The chain's GEMMs step several blocks' chains side by side (with a hardware fma where the CPU
// has one) and split their columns over the cores: every gate_up and y value must still be the
// bits of the plain dotMxfp4 of §4, and the M1 form's out the compacted chain's. H = 19 blocks
// and I = 37: full groups of blocks, a partial one and lanes that wrap; every E2M1 code, scales
// from subnormal to NaN (255) and activations from subnormal to Inf.
TEST(Chain, GivenRandomWeightsAndUnevenBlockCounts_WhenRun_ThenGemmsEqualThePlainDot) {
    ChainShape s;
    s.hidden = 32 * 19;
    s.intermediate = 32 * 37;
    s.experts = 8;
    s.cards = 2;
    s.topK = 3;
    s.rows = 2;
    std::uint64_t state = 0x9E3779B97F4A7C15u;
    auto next = [&state] {
        state = state * 6364136223846793005u + 1442695040888963407u;
        return std::uint32_t(state >> 33);
    };
    LocalWeights w = LocalWeights::zeros(s);
    for (auto* v : {&w.w1Blocks, &w.w2Blocks})
        for (auto& b : *v) b = std::uint8_t(next());
    for (auto* v : {&w.w1Scales, &w.w2Scales})
        for (auto& x : *v)
            x = next() % 64 == 0 ? 255 : std::uint8_t(next() % 24 == 0 ? next() % 256 : 112 + next() % 24);
    ChainInputs in;
    in.hidden.resize(std::size_t(s.rows) * s.hidden);
    for (auto& x : in.hidden)
        x = next() % 97 == 0 ? bf16_t(next() & 0x807F) : bf16_t(next() % 2 ? 0x3F00 : 0xBF00) + bf16_t(next() % 0x0400);
    in.hidden[5] = 0x7F80;            // +Inf in row 0
    in.topkIds = {0, 1, 5, 1, 2, 3};  // card 0 owns experts 0-3
    in.topkWeights = {0.5f, 0.25f, 0.25f, 0.125f, 0.5f, 0.375f};
    const auto silu = buildSiluTable(s.swigluAlpha);
    const auto o = runChain(s, w, in, silu);
    EXPECT_EQ(runChainM1(s, w, in, silu), o.out);
    const int H = s.hidden, I = s.intermediate;
    ASSERT_EQ(o.routes.rows.size(), 5u);
    for (std::size_t r = 0; r < o.routes.rows.size(); ++r) {
        const auto [le, m] = o.routes.rows[r];
        for (int n = 0; n < 2 * I; ++n) {
            const std::size_t row = std::size_t(le) * 2 * I + n;
            const bf16_t want =
                bf16FromF32(dotMxfp4(in.hidden.data() + std::size_t(m) * H, w.w1Blocks.data() + row * (H / 2),
                                     w.w1Scales.data() + row * (H / 32), H));
            ASSERT_EQ(o.gateUp[r * 2 * I + n], want) << "gate_up[" << r << "][" << n << "]";
        }
        for (int h = 0; h < H; ++h) {
            const std::size_t row = std::size_t(le) * H + h;
            const bf16_t want = bf16FromF32(dotMxfp4(o.act.data() + r * I, w.w2Blocks.data() + row * (I / 2),
                                                     w.w2Scales.data() + row * (I / 32), I));
            ASSERT_EQ(o.y[r * H + h], want) << "y[" << r << "][" << h << "]";
        }
    }
    EXPECT_TRUE(o.metSubnormal);
}

TEST(Shape, GivenBadKeys_WhenValidated_ThenMessageNamesKeyAndValue) {
    auto message = [](ChainShape s) {
        try {
            validateShape(s);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    ChainShape s;
    s.hidden = 100;
    EXPECT_EQ(message(s).rfind("hidden = 100", 0), 0u) << message(s);
    s = {};
    s.experts = 190;
    EXPECT_EQ(message(s).rfind("experts = 190", 0), 0u);
    s = {};
    s.swigluLimit = 7.3f;  // not a BF16 value
    EXPECT_EQ(message(s).rfind("swiglu.limit", 0), 0u);
    s = {};
    s.swigluLimit = 7.0f;
    EXPECT_EQ(message(s), "accepted");
}
