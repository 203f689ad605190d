// The device chains (scheduler/src/device_chain.cpp + kernels_cl/) against the host oracle,
// bit for bit, through the real Level Zero loader (zecl + PoCL in CI).
//
// Reduced shape: every variant x route pattern x input variant (CONTRACT §6, §7), plus M = 3
// with other tiles, layout and SwiGLU parameters, plus two_launch and one_launch on other shapes
// (one_launch of the tilings and shapes in suites of their own: CI leaves some to label full,
// tests/scheduler/CMakeLists.txt). Default shape (ZP_DEVICE_CHAIN_DEFAULT_SHAPE=1, its own
// ctest): four six_local cases, printing kernel times.
// ZP_TEST_DEVICE picks the device (zp::runtime::selectDevice, default "zecl"); ZP_KERNEL_TUNING runs
// the suites with other tile sizes (zecl only).
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "zp/oracle/chain.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/probe/cases.hpp"
#include "zp/scheduler/device_chain.hpp"
#include "zp/scheduler/kernel_tuning.hpp"
#include "zp/scheduler/device_setup.hpp"
#include "zp/probe/compare.hpp"
#include "reduced_shape.hpp"

namespace {

using zp::oracle::bf16_t;
using zp::oracle::ChainShape;
using zp::probe::RoutePattern;
using zp::probe::Variant;
using zp::scheduler::test::reducedShape;

constexpr std::uint64_t kBaseSeed = 20240611;

// One device (the scheduler's DeviceSetup, as every caller), its weights; chains per variant
// built on first use.
class ChainRig {
public:
    explicit ChainRig(const ChainShape& shape, zp::scheduler::KernelTuning tuning = envTuning())
        : shape_(shape),
          setup_(zp::runtime::selectDevice(deviceSpec()), tuning),
          layer_(setup_, shape),
          queue_(setup_.makeQueue()),
          hostWeights_(zp::oracle::LocalWeights::zeros(shape)) {}

    static std::string deviceSpec() {
        const char* s = std::getenv("ZP_TEST_DEVICE");
        return s ? s : "zecl";
    }
    // ZP_KERNEL_TUNING="cols_per_wg=16,..." runs the suite with other tile sizes (zecl only).
    static zp::scheduler::KernelTuning envTuning() {
        const char* s = std::getenv("ZP_KERNEL_TUNING");
        return s ? zp::scheduler::KernelTuning::parse(s) : zp::scheduler::KernelTuning{};
    }

    zp::scheduler::DeviceChain& chain(Variant v, zp::scheduler::IdWidth ids = zp::scheduler::IdWidth::Int32) {
        auto& c = chains_[static_cast<int>(ids)][static_cast<int>(v)];
        if (!c) c = layer_.makeChain(v, ids);
        return *c;
    }

    // Draws the case (regenerating the weights of the experts it touches, the same every
    // time), uploads those experts and runs the oracle once per case: every variant's test
    // reuses it.
    struct Prepared {
        zp::probe::Case c;
        const zp::oracle::ChainOutputs& want;
    };
    Prepared prepare(RoutePattern p, int v) {
        auto c = zp::probe::makeCase(shape_, p, v, kBaseSeed, &hostWeights_);
        layer_.weights().upload(hostWeights_, c.touchedLocalExperts);
        auto& want = oracle_[{static_cast<int>(p), v}];
        if (!want) want = zp::oracle::runChain(shape_, hostWeights_, c.inputs, layer_.silu());
        return {std::move(c), *want};
    }

    const ChainShape& shape() const { return shape_; }
    zp::runtime::CommandQueue& queue() { return queue_; }
    const zp::runtime::DeviceInfo& info() const { return setup_.device(); }
    const zp::scheduler::KernelModules& modules() const { return setup_.modules(); }
    zp::oracle::LocalWeights& hostWeights() { return hostWeights_; }
    zp::scheduler::DeviceWeights& deviceWeights() { return layer_.weights(); }
    std::span<const bf16_t> silu() const { return layer_.silu(); }
    zp::runtime::Context& context() { return setup_.context(); }

private:
    ChainShape shape_;
    zp::scheduler::DeviceSetup setup_;
    zp::scheduler::DeviceLayer layer_;
    zp::runtime::CommandQueue queue_;
    zp::oracle::LocalWeights hostWeights_;
    std::unique_ptr<zp::scheduler::DeviceChain> chains_[2][zp::probe::kAllVariants.size()];  // [IdWidth][Variant]
    std::map<std::pair<int, int>, std::optional<zp::oracle::ChainOutputs>> oracle_;
};

// "" when equal, else "tensor[row][col]: got .., want ..; n of N elements differ".
std::string diff(const std::string& tensor, const std::vector<bf16_t>& got, const std::vector<bf16_t>& want,
                 std::size_t cols) {
    const auto m = zp::probe::firstMismatch(tensor, got, want, cols);
    return m ? m->describe(want.size()) : std::string();
}

// Every tensor the variant materialises, plus the routes; "" when all match bit for bit.
std::string compare(const ChainShape& s, Variant v, const zp::scheduler::DeviceResults& got,
                    const zp::oracle::ChainOutputs& want) {
    const std::size_t H = s.hidden, I = s.intermediate;
    std::ostringstream err;
    auto check = [&](const std::string& d) {
        if (!d.empty()) err << "\n  " << d;
    };
    if (v == Variant::M1Oracle) {
        // Per route: route (m, k) must equal the oracle's compact row cr(m, k).
        std::vector<bf16_t> gu, act, y, gotGu, gotAct, gotY;
        for (std::size_t q = 0; q < want.routes.routeRow.size(); ++q) {
            const int r = want.routes.routeRow[q];
            if (r < 0) continue;
            gu.insert(gu.end(), want.gateUp.begin() + r * 2 * I, want.gateUp.begin() + (r + 1) * 2 * I);
            act.insert(act.end(), want.act.begin() + r * I, want.act.begin() + (r + 1) * I);
            y.insert(y.end(), want.y.begin() + r * H, want.y.begin() + (r + 1) * H);
            gotGu.insert(gotGu.end(), got.routeGateUp.begin() + q * 2 * I, got.routeGateUp.begin() + (q + 1) * 2 * I);
            gotAct.insert(gotAct.end(), got.routeAct.begin() + q * I, got.routeAct.begin() + (q + 1) * I);
            gotY.insert(gotY.end(), got.routeY.begin() + q * H, got.routeY.begin() + (q + 1) * H);
        }
        check(diff("route_gate_up (local routes)", gotGu, gu, 2 * I));
        check(diff("route_act (local routes)", gotAct, act, I));
        check(diff("route_y (local routes)", gotY, y, H));
    } else {
        if (got.routes != int(want.routes.rows.size()))
            err << "\n  R: got " << got.routes << ", want " << want.routes.rows.size();
        else if (got.compactRows != want.routes.rows)
            err << "\n  compact_rows differ";
        if (got.routeRow != want.routes.routeRow) err << "\n  route_row (cr(m, k)) differs";
        const auto mat = zp::probe::materialised(v);
        if (mat.gateUp) check(diff("gate_up", got.gateUp, want.gateUp, 2 * I));
        if (mat.act) check(diff("act", got.act, want.act, I));
        if (mat.y) check(diff("y", got.y, want.y, H));
    }
    check(diff("out", got.out, want.out, H));
    if (got.invalidIds != 0) err << "\n  device error flag raised: " << got.invalidIds << " invalid ids";
    if (got.countsLeft != 0) err << "\n  " << got.countsLeft << " words of tile_done / phase_ready left non-zero";
    return err.str();
}

// ------------------------------------------------------------------------------ reduced shape

ChainRig& reducedRig() {
    static ChainRig rig(reducedShape());
    return rig;
}

struct ChainParam {
    Variant variant;
    RoutePattern pattern;
    std::string name() const {
        return std::string(zp::probe::variantName(variant)) + "_" + std::string(zp::probe::patternName(pattern));
    }
    friend void PrintTo(const ChainParam& p, std::ostream* os) { *os << p.name(); }
};

std::string chainParamName(const ::testing::TestParamInfo<ChainParam>& i) { return i.param.name(); }

class DeviceChainReduced : public ::testing::TestWithParam<ChainParam> {};

TEST_P(DeviceChainReduced, GivenEveryInputVariant_WhenTheChainRuns_ThenEveryTensorMatchesTheOracleBitForBit) {
    auto& rig = reducedRig();
    const auto [variant, pattern] = GetParam();
    if (auto why = zp::probe::patternInvalidReason(rig.shape(), pattern)) GTEST_SKIP() << *why;
    auto& chain = rig.chain(variant);
    for (int v = 0; v < zp::probe::kInputVariants; ++v) {
        auto [c, want] = rig.prepare(pattern, v);
        chain.setInputs(c.inputs);
        chain.execute(rig.queue());
        const auto got = chain.results();
        const auto err = compare(rig.shape(), variant, got, want);
        EXPECT_TRUE(err.empty()) << zp::probe::variantName(variant) << " " << c.name() << " (seed " << c.seed
                                 << "):" << err;
    }
}

std::vector<ChainParam> allParams() {
    std::vector<ChainParam> p;
    for (Variant v : zp::probe::kAllVariants)
        for (RoutePattern r : zp::probe::kAllRoutePatterns) p.push_back({v, r});
    return p;
}

INSTANTIATE_TEST_SUITE_P(AllVariantsAndPatterns, DeviceChainReduced, ::testing::ValuesIn(allParams()), chainParamName);

// The same cases with topk_ids as int64 (torch.topk's dtype): chains recorded at IdWidth::Int64
// run the route readers' `_i64` kernel files, and every variant must give the int32 bits.
class DeviceChainReducedInt64 : public ::testing::TestWithParam<ChainParam> {};

TEST_P(DeviceChainReducedInt64, GivenInt64Ids_WhenTheChainRuns_ThenEveryTensorMatchesTheOracleBitForBit) {
    auto& rig = reducedRig();
    const auto [variant, pattern] = GetParam();
    if (auto why = zp::probe::patternInvalidReason(rig.shape(), pattern)) GTEST_SKIP() << *why;
    auto& chain = rig.chain(variant, zp::scheduler::IdWidth::Int64);
    ASSERT_EQ(chain.idWidth(), zp::scheduler::IdWidth::Int64);  // its files: DeviceChainReducedInt64Plans
    for (int v = 0; v < zp::probe::kInputVariants; ++v) {
        auto [c, want] = rig.prepare(pattern, v);
        const std::vector<std::int64_t> ids(c.inputs.topkIds.begin(), c.inputs.topkIds.end());
        // The host reference reads int64 ids to the same routes.
        ASSERT_EQ(zp::oracle::compactRoutes(rig.shape(), ids).rows, want.routes.rows) << c.name();
        chain.setInputs(c.inputs, ids);
        chain.execute(rig.queue());
        const auto err = compare(rig.shape(), variant, chain.results(), want);
        EXPECT_TRUE(err.empty()) << zp::probe::variantName(variant) << " int64 " << c.name() << " (seed " << c.seed
                                 << "):" << err;
    }
}

zp::scheduler::ChainPlan int64Plan(Variant v) {
    return zp::scheduler::planChain(v, reducedShape(), {}, {}, zp::scheduler::IdWidth::Int64);
}

// The int64 kernel files a plan launches (the route readers, kernelFileFor).
std::set<std::string> int64Files(const zp::scheduler::ChainPlan& plan) {
    std::set<std::string> files;
    for (const auto& l : plan.launches)
        if (l.file.ends_with("_i64")) files.insert(l.file);
    return files;
}

// Every case at int64 on each distinct set of int64 kernel files: a variant whose readers are
// those of a variant before it (route_compact_i64 alone: paired_epilogue, paired_direct, ...) runs
// the same readers and then kernels that read no ids, whose every case runs at int32 above. Every
// variant runs at int64 in DeviceChainReducedInt64Routes and in the plan test below.
std::vector<ChainParam> int64Params() {
    std::vector<ChainParam> p;
    std::set<std::set<std::string>> seen;
    for (Variant v : zp::probe::kAllVariants)
        if (seen.insert(int64Files(int64Plan(v))).second)
            for (RoutePattern r : zp::probe::kAllRoutePatterns) p.push_back({v, r});
    return p;
}

INSTANTIATE_TEST_SUITE_P(DistinctIdReaders, DeviceChainReducedInt64, ::testing::ValuesIn(int64Params()),
                         chainParamName);

TEST(DeviceChainReducedInt64Plans, GivenEveryVariant_WhenPlannedAtInt64_ThenEachRouteReaderIsItsInt64File) {
    std::set<std::set<std::string>> distinct;
    for (Variant v : zp::probe::kAllVariants) {
        const auto plan = int64Plan(v);
        EXPECT_EQ(plan.idWidth, zp::scheduler::IdWidth::Int64);
        for (const auto& l : plan.launches) {
            const std::string base = l.file.substr(0, l.file.rfind("_i64"));
            EXPECT_EQ(l.file, zp::scheduler::kernelFileFor(base, zp::scheduler::IdWidth::Int64))
                << zp::probe::variantName(v);
        }
        const auto files = int64Files(plan);
        EXPECT_FALSE(files.empty()) << zp::probe::variantName(v) << " launches no int64 route reader";
        distinct.insert(files);
    }
    // route_compact_i64 (the compacting variants), two_launch's A and B, one_launch, the M1 oracle.
    EXPECT_EQ(distinct.size(), 4u);
}

// Ids an int64 tensor can hold and an int32 cannot, and the usual bad ones: each is invalid
// (CONTRACT §5.1: not local, counted by the error flag at its route) at either width, and the
// rest of the case computes as if those routes were remote.
TEST(DeviceChainReducedInt64Routes, GivenIdsBeyondInt32AndOutsideTheExpertRange_WhenTheChainRuns_ThenTheFlagIsRaised) {
    auto& rig = reducedRig();
    auto [c, ignored] = rig.prepare(RoutePattern::SixLocal, 0);
    const ChainShape& s = rig.shape();
    const int K = s.topK;
    std::vector<std::int64_t> ids(c.inputs.topkIds.begin(), c.inputs.topkIds.end());
    const std::int64_t firstLocal = s.firstLocalExpert();
    // route -> id; the int32 view of 2^32 + a local id is that local id: it must not be local.
    const std::vector<std::pair<int, std::int64_t>> bad = {
        {2, std::int64_t(1) << 31},  // INT32_MAX + 1
        {3, -1},
        {K + 1, (std::int64_t(1) << 40) + firstLocal},
        {K + 2, std::numeric_limits<std::int64_t>::min()},
        {K + 3, (std::int64_t(1) << 32) + firstLocal},  // low 32 bits a local id
        {K + 5, s.experts},
    };
    auto reference = c.inputs;
    const int remote = (s.card + 1) % s.cards * s.localExperts();
    for (const auto& [route, id] : bad) {
        ids[route] = id;
        reference.topkIds[route] = remote;
    }
    const auto want = zp::oracle::runChain(s, rig.hostWeights(), reference, rig.silu());
    const auto flag = zp::oracle::invalidIds(s, ids);
    ASSERT_EQ(flag.count, int(bad.size()));
    ASSERT_EQ(flag.firstRoute, 2);
    EXPECT_THROW(zp::oracle::compactRoutes(s, ids), std::invalid_argument);
    for (auto width : {zp::scheduler::IdWidth::Int64, zp::scheduler::IdWidth::Int32})
        for (Variant v : zp::probe::kAllVariants) {
            const std::string what =
                std::string(zp::probe::variantName(v)) + " " + std::string(zp::scheduler::idWidthName(width));
            auto& chain = rig.chain(v, width);
            chain.setInputs(c.inputs, ids);
            chain.execute(rig.queue());
            auto got = chain.results();
            EXPECT_EQ(got.invalidIds, flag.count) << what;
            EXPECT_EQ(got.firstInvalidRoute, flag.firstRoute) << what;
            got.invalidIds = 0;
            const auto err = compare(s, v, got, want);
            EXPECT_TRUE(err.empty()) << what << ":" << err;
        }
}

TEST(DeviceChainReducedRoutes, GivenIdsOutsideTheExpertRange_WhenTheChainRuns_ThenTheyAreNotLocalAndTheFlagIsRaised) {
    auto& rig = reducedRig();
    auto [c, ignored] = rig.prepare(RoutePattern::SixLocal, 0);
    // Replace two routes by invalid ids; the oracle sees them as remote routes (a valid id of
    // another card), which is how the device must treat them (CONTRACT §5.1).
    const int K = rig.shape().topK;
    auto inputs = c.inputs;
    auto reference = c.inputs;
    inputs.topkIds[1] = -3;
    inputs.topkIds[K + 4] = rig.shape().experts + 7;
    const int remote = (rig.shape().card + 1) % rig.shape().cards * rig.shape().localExperts();
    reference.topkIds[1] = remote;
    reference.topkIds[K + 4] = remote;
    const auto want = zp::oracle::runChain(rig.shape(), rig.hostWeights(), reference, rig.silu());
    for (Variant v : zp::probe::kAllVariants) {
        auto& chain = rig.chain(v);
        chain.setInputs(inputs);
        chain.execute(rig.queue());
        auto got = chain.results();
        EXPECT_EQ(got.invalidIds, 2) << zp::probe::variantName(v);
        EXPECT_EQ(got.firstInvalidRoute, 1) << zp::probe::variantName(v);
        got.invalidIds = 0;
        const auto err = compare(rig.shape(), v, got, want);
        EXPECT_TRUE(err.empty()) << zp::probe::variantName(v) << ":" << err;
    }
}

// A server step's read-back (DeviceChain::readOut: out alone, into the caller's span) against
// results(): the same out bits, the same §5.1 flag (two invalid ids here) and no counts left, for
// every variant; a span of fewer rows gets those rows, one past the buffer is refused.
TEST(DeviceChainReducedRoutes, GivenEveryVariant_WhenOutIsReadIntoASpan_ThenItHasResultsOutAndItsChecks) {
    auto& rig = reducedRig();
    auto [c, ignored] = rig.prepare(RoutePattern::CrossRowOverlap, 2);
    auto inputs = c.inputs;
    const int K = rig.shape().topK, H = rig.shape().hidden;
    inputs.topkIds[2] = -1;
    inputs.topkIds[K + 1] = rig.shape().experts;
    for (Variant v : zp::probe::kAllVariants) {
        const std::string name(zp::probe::variantName(v));
        auto& chain = rig.chain(v);
        chain.setInputs(inputs);
        chain.execute(rig.queue());
        std::vector<bf16_t> out(std::size_t(rig.shape().rows) * H, 0xFFFF);
        const zp::scheduler::StepCheck check = chain.readOut(out);
        std::vector<bf16_t> firstRow(std::size_t(H), 0xFFFF);
        chain.readOut(firstRow);
        const auto want = chain.results();
        EXPECT_EQ(check.invalidIds, 2) << name;
        EXPECT_EQ(check.firstInvalidRoute, 2) << name;
        EXPECT_EQ(check.invalidIds, want.invalidIds) << name;
        EXPECT_EQ(check.firstInvalidRoute, want.firstInvalidRoute) << name;
        EXPECT_EQ(check.countsLeft, 0) << name;
        EXPECT_EQ(diff("out (readOut)", out, want.out, std::size_t(H)), "") << name;
        EXPECT_EQ(diff("out row 0 (readOut)", firstRow,
                       std::vector<bf16_t>(want.out.begin(), want.out.begin() + std::ptrdiff_t(H)), std::size_t(H)),
                  "")
            << name;
        std::vector<bf16_t> tooLong(out.size() + 1);
        EXPECT_THROW(chain.readOut(tooLong), std::exception) << name;
    }
}

// More routes than any route-deriving work-group has work-items (route_compact's 64, two_launch's
// and one_launch's tile), so each work-item derives several routes of the table: ids drawn at
// random over the whole expert range and past it, so rows hold within-row duplicates, experts
// repeat across rows and some ids are invalid. Every variant against the oracle, routes and flag
// included.
TEST(DeviceChainManyRoutes, GivenMoreRoutesThanWorkItems_WhenEveryVariantRuns_ThenRoutesFlagAndOutputsMatchTheOracle) {
    ChainShape s;
    s.hidden = 512;
    s.intermediate = 96;
    s.rows = 40;
    s.topK = 8;  // 320 routes
    s.cards = 2;
    s.card = 1;
    s.experts = 48;  // 24 local experts: most rows name one of them twice
    ChainRig rig(s);
    rig.hostWeights() = zp::probe::makeRandomWeights(s, kBaseSeed);
    std::vector<int> all(s.localExperts());
    for (int le = 0; le < s.localExperts(); ++le) all[le] = le;
    rig.deviceWeights().upload(rig.hostWeights(), all);
    auto [c, ignored] = rig.prepare(RoutePattern::AllRemote, 0);  // hidden rows and routing weights
    auto inputs = c.inputs;
    auto reference = c.inputs;
    std::uint64_t state = 0x9E3779B97F4A7C15ull;
    const int remote = 0;  // card 0's first expert
    for (std::size_t i = 0; i < inputs.topkIds.size(); ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const int id = int((state >> 33) % std::uint64_t(s.experts + 6)) - 3;  // [-3, E + 3)
        inputs.topkIds[i] = id;
        reference.topkIds[i] = (id < 0 || id >= s.experts) ? remote : id;
    }
    const auto want = zp::oracle::runChain(s, rig.hostWeights(), reference, rig.silu());
    const auto flag = zp::oracle::invalidIds(s, inputs.topkIds);
    ASSERT_GT(flag.count, 0);
    ASSERT_GT(want.routes.rows.size(), 100u);                       // many compact rows ...
    ASSERT_LT(want.routes.rows.size(), inputs.topkIds.size() / 2);  // ... and many routes not among them
    for (Variant v : zp::probe::kAllVariants) {
        auto& chain = rig.chain(v);
        chain.setInputs(inputs);
        chain.execute(rig.queue());
        auto got = chain.results();
        EXPECT_EQ(got.invalidIds, flag.count) << zp::probe::variantName(v);
        EXPECT_EQ(got.firstInvalidRoute, flag.firstRoute) << zp::probe::variantName(v);
        got.invalidIds = 0;
        const auto err = compare(s, v, got, want);
        EXPECT_TRUE(err.empty()) << zp::probe::variantName(v) << ":" << err;
    }
}

TEST(DeviceChainReducedRoutes, GivenARecordedChain_WhenAppendedToAnImmediateList_ThenItComputesTheSameOutput) {
    auto& rig = reducedRig();
    auto [c, want] = rig.prepare(RoutePattern::CrossRowOverlap, 0);
    auto& chain = rig.chain(Variant::Baseline);
    chain.setInputs(c.inputs);
    zp::runtime::ImmediateCommandList immediate(rig.context(), rig.info());
    chain.appendTo(immediate);
    immediate.synchronize();
    const auto err = compare(rig.shape(), Variant::Baseline, chain.results(), want);
    EXPECT_TRUE(err.empty()) << err;
}

TEST(DeviceChainReducedRoutes, GivenAnExecutedChain_WhenAskingForTimings_ThenEveryLaunchHasANonNegativeDuration) {
    auto& rig = reducedRig();
    auto [c, want] = rig.prepare(RoutePattern::SameTypical, 0);
    for (Variant v : zp::probe::kAllVariants) {
        auto& chain = rig.chain(v);
        chain.setInputs(c.inputs);
        chain.execute(rig.queue());
        const auto t = chain.kernelTimings();
        ASSERT_EQ(t.size(), chain.plan().launches.size()) << zp::probe::variantName(v);
        for (std::size_t n = 0; n < t.size(); ++n) {
            EXPECT_EQ(t[n].kernel, chain.plan().launches[n].kernel);
            EXPECT_GE(t[n].ns, 0.0) << t[n].kernel;
        }
    }
}

// The gate's sample (B back-to-back executions in one list) launches what record() launches: a
// cooperative kernel at its co-resident grid (at the plan's fixed grid one_launch's groups would
// wait forever for groups that never start: seen on the H200, where B > 1), and computes the same
// bits.
TEST(DeviceChainReducedRoutes, GivenEveryVariant_WhenExecutedThreeTimesBackToBack_ThenItEndsAndMatchesTheOracle) {
    auto& rig = reducedRig();
    auto [c, want] = rig.prepare(RoutePattern::SixLocal, 0);
    for (Variant v : zp::probe::kAllVariants) {
        auto& chain = rig.chain(v);
        chain.setInputs(c.inputs);
        const double ns = chain.executeBatch(rig.queue(), 3);
        EXPECT_GT(ns, 0.0) << zp::probe::variantName(v);
        const auto err = compare(rig.shape(), v, chain.results(), want);
        EXPECT_TRUE(err.empty()) << zp::probe::variantName(v) << ": " << err;
    }
}

// one_launch's B units wait for their expert group's A units only when there is a local route: a
// step with none (all_remote), then steps with some, on the same chain, each right and none
// starting from counts the one before left behind (compare: DeviceResults::countsLeft).
TEST(DeviceChainReducedRoutes, GivenOneLaunchStepsWithAndWithoutLocalRoutes_WhenAlternated_ThenEachMatchesTheOracle) {
    auto& rig = reducedRig();
    auto& chain = rig.chain(Variant::OneLaunch);
    for (RoutePattern p : {RoutePattern::AllRemote, RoutePattern::SixLocal, RoutePattern::AllRemote,
                           RoutePattern::AllRemote, RoutePattern::SameTypical, RoutePattern::AllRemote}) {
        auto [c, want] = rig.prepare(p, 1);
        chain.setInputs(c.inputs);
        const double ns = chain.executeBatch(rig.queue(), 2);
        EXPECT_GT(ns, 0.0) << c.name();
        const auto err = compare(rig.shape(), Variant::OneLaunch, chain.results(), want);
        EXPECT_TRUE(err.empty()) << c.name() << ": " << err;
    }
}

// A driver that suggests no co-resident grid (zeKernelSuggestMaxCooperativeGroupCount answers
// ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; zecl under ZECL_FAULT=suggest:1 for the process's first
// query): a persistent launch takes its whole grid and computes the same bits, a cooperative one
// makes its variant not valid here, naming why. Each in its own process
// (scheduler.device_chain_no_suggested_grid_*), never in the reduced suite.
std::string suggestFault() {
    const char* f = std::getenv("ZECL_FAULT");
    return f ? f : "";
}

TEST(DeviceChainNoSuggestedGrid, GivenTwoLaunch_WhenKernelAGetsNoSuggestion_ThenItRunsOnItsWholeGridAndMatches) {
    ASSERT_EQ(suggestFault(), "suggest:1") << "runs as ctest scheduler.device_chain_no_suggested_grid_two_launch";
    auto& rig = reducedRig();
    auto& chain = rig.chain(Variant::TwoLaunch);  // the process's first query: kernel A's
    const auto& plan = chain.plan().launches;
    ASSERT_EQ(plan.size(), 2u);
    ASSERT_TRUE(plan[0].persistent && plan[1].persistent);
    EXPECT_EQ(chain.grids()[0].x, plan[0].groups.x);  // no suggestion: one group per unit
    EXPECT_GE(chain.grids()[1].x, 1u);                // B's query was answered: capped at what it suggested
    EXPECT_LE(chain.grids()[1].x, plan[1].groups.x);
    for (RoutePattern p : {RoutePattern::SixLocal, RoutePattern::CrossRowOverlap, RoutePattern::AllRemote}) {
        auto [c, want] = rig.prepare(p, 0);
        chain.setInputs(c.inputs);
        chain.execute(rig.queue());
        const auto err = compare(rig.shape(), Variant::TwoLaunch, chain.results(), want);
        EXPECT_TRUE(err.empty()) << c.name() << ": " << err;
    }
}

TEST(DeviceChainNoSuggestedGrid, GivenOneLaunch_WhenItGetsNoSuggestion_ThenTheVariantIsNotValidHere) {
    ASSERT_EQ(suggestFault(), "suggest:1") << "runs as ctest scheduler.device_chain_no_suggested_grid_one_launch";
    auto& rig = reducedRig();
    try {
        rig.chain(Variant::OneLaunch);
        FAIL() << "one_launch was recorded without a co-resident grid";
    } catch (const zp::scheduler::VariantNotValid& e) {
        EXPECT_NE(std::string(e.what()).find("one_launch is not valid on this device"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("ZE_RESULT_ERROR_UNSUPPORTED_FEATURE"), std::string::npos) << e.what();
    }
}

// M = 3 rows and other tiles, built from the bundle: expert groups take several passes
// (CONTRACT §5 holds for any M), the table decode, and the stream tile (zp_gemv_stream.h) in the
// shapes its index arithmetic distinguishes. Reduced shape: K/32 = 32 blocks for gemm1, 17 for
// gemm2 (a partial chunk).
struct TunedCase {
    const char* name;
    const char* tuning;
    std::vector<int> inputVariants;
    int hidden = 0;  // 0: the reduced shape's (1024: gemm1 streams 32 blocks of K, two stream-tile iterations)
    friend void PrintTo(const TunedCase& c, std::ostream* os) { *os << c.name << " (" << c.tuning << ")"; }
};
class DeviceChainTuned : public ::testing::TestWithParam<TunedCase> {};

// Tiles other than the packaged ones are built from the zecl source bundle, a capability of the
// device: why this device cannot build `tuning`, or nothing when it can (the packaged tiles: always).
std::optional<std::string> withoutSourceBundle(const char* tuning) {
    const auto tiles = zp::scheduler::KernelTuning::parse(tuning);
    if (tiles.isPackaged()) return std::nullopt;
    const zp::runtime::DeviceInfo info = zp::runtime::selectDevice(ChainRig::deviceSpec());
    const auto choice = zp::scheduler::chooseModules(info, zp::kernels::Package::instance(), tiles);
    if (choice.format == zp::kernels::Format::Bundle) return std::nullopt;
    return "device '" + info.name() + "' gets " + choice.why +
           ", not the zecl source bundle: it runs the packaged tiles only";
}

// Every variant of `variants` on every valid pattern and the tiling's input variants.
void runTuned(const TunedCase& tiling, std::span<const Variant> variants) {
    ChainShape s = reducedShape();
    s.rows = 3;
    s.topK = 4;  // six_local needs M*K = 12 local experts
    s.layout = zp::oracle::GateUpLayout::Interleaved;
    s.swigluUpBias = 1.0f;  // beta != 0: t = bf16(u + beta)
    s.swigluAlpha = 1.702f;
    s.swigluLimit = 7.0f;
    if (tiling.hidden) s.hidden = tiling.hidden;
    // Other tiles need the zecl source bundle (a capability of the device); any error after
    // this check, a kernel that fails to build included, fails the test.
    if (auto why = withoutSourceBundle(tiling.tuning)) GTEST_SKIP() << *why;
    std::optional<ChainRig> rig;
    rig.emplace(s, zp::scheduler::KernelTuning::parse(tiling.tuning));
    for (RoutePattern p : zp::probe::kAllRoutePatterns) {
        if (zp::probe::patternInvalidReason(s, p)) continue;
        for (int v : tiling.inputVariants) {
            auto [c, want] = rig->prepare(p, v);
            for (Variant variant : variants) {
                auto& chain = rig->chain(variant);
                chain.setInputs(c.inputs);
                chain.execute(rig->queue());
                const auto err = compare(s, variant, chain.results(), want);
                EXPECT_TRUE(err.empty()) << zp::probe::variantName(variant) << " " << c.name() << ":" << err;
            }
        }
    }
}

// one_launch runs in a test (and a ctest) of its own: PoCL builds its module optimised with a
// stream tile in minutes, the other variants' modules in seconds (tests/scheduler/CMakeLists.txt says which
// tilings CI runs it on and which it leaves to ZP_TEST_FULL=1).
std::vector<Variant> variantsBut(Variant left) {
    std::vector<Variant> v;
    for (Variant x : zp::probe::kAllVariants)
        if (x != left) v.push_back(x);
    return v;
}

TEST_P(DeviceChainTuned,
       GivenThreeRowsAndOtherTiles_WhenEveryVariantButOneLaunchRuns_ThenOutputsMatchTheOracleBitForBit) {
    runTuned(GetParam(), variantsBut(Variant::OneLaunch));
}

class DeviceChainTunedOneLaunch : public DeviceChainTuned {};

TEST_P(DeviceChainTunedOneLaunch, GivenThreeRowsAndOtherTiles_WhenOneLaunchRuns_ThenOutputsMatchTheOracleBitForBit) {
    const Variant one[] = {Variant::OneLaunch};
    runTuned(GetParam(), one);
}

const auto kTilings = ::testing::Values(
    TunedCase{"lanes_wide_table", "cols_per_wg=16,cols_per_item=4,rows_per_pass=1,e2m1_decode=0", {0, 1, 3, 5, 10}},
    // the stream tile (zp_gemv_stream.h): 4 work-items per column, 4 lanes and 1 column each,
    // 2-row passes (M = 3: a 2-row and a 1-row pass), the local-memory table; kernel B's 1-row
    // groups in runs of at most 3 (six_local: 4 runs of 3; disjoint_typical's groups: 3 and the rest)
    TunedCase{"stream_four_lanes",
              "gemm_tile=2,cols_per_wg=32,cols_per_item=4,stream_split=4,e2m1_decode=4,b_runs=3",
              {0, 2, 5, 10}},
    // NVIDIA's recommended stream tiles (KernelTuning::recommendedFor but max_registers, which
    // only NVIDIA's compiler takes): 16 work-items per column (one lane each) of 4 columns, 2-row
    // passes (M = 3: a 2-row and a 1-row pass), the byte-offset table decode, kernel A's next
    // unit's first loads carried (PoCL runs a grid of a few groups, so each loops over many units),
    // one_launch's units by rank over a made-up placement (spread_units=2; NVIDIA's SMs at 1),
    // kernel B's 1-row groups in runs by the automatic rule (b_runs=0: a grid of a few groups gets
    // long runs, six_local 6 of its 12 groups at one_launch's 2; each 17 blocks of K in 2
    // iterations, the second partial)
    TunedCase{"stream_nvidia",
              "gemm_tile=2,cols_per_wg=64,cols_per_item=4,rows_per_pass=2,stream_split=16,stream_chunk=128,"
              "e2m1_decode=4,stream_carry=1,spread_units=2,b_runs=0",
              {0, 2, 5, 10}},
    // 2 lanes and 2 columns per work-item, 2-row passes (M = 3: a 2-row then a 1-row pass),
    // 16-block chunks (gemm1: 2 chunks; gemm2: 16 + 1 blocks), the multiply decode
    TunedCase{"stream_chunked_multiply",
              "gemm_tile=2,cols_per_wg=32,cols_per_item=4,stream_split=8,stream_chunk=16,e2m1_decode=3",
              {0, 2, 5, 7, 10}},
    // 1 lane per work-item (16 per column), 10-column tiles (partial at the edge), 3-row passes
    TunedCase{
        "stream_uneven_bits", "gemm_tile=2,cols_per_wg=10,cols_per_item=2,rows_per_pass=3,stream_split=16", {0, 3, 10}},
    // a whole column per work-item (all 16 lanes), two iterations of weight loads in flight;
    // H = 2048: gemm1's K in 48- and 16-block chunks (3 iterations, then 1), gemm2's 17 blocks in 2
    TunedCase{"stream_whole_column",
              "gemm_tile=2,cols_per_wg=16,cols_per_item=16,stream_split=1,stream_chunk=48,stream_prefetch=2",
              {0, 1, 10},
              2048},
    // two iterations of code rows (and one of scale bytes) in flight for the 1-row body, one for
    // the 2-row body (M = 3: a 2-row pass at one, a 1-row pass at two, in one build), 2 lanes
    // per work-item; H = 2048: gemm1's K in 48- and 16-block chunks (3 iterations, then 1),
    // gemm2's 17 blocks in one chunk of 2 iterations, the second partial
    TunedCase{"stream_prefetch_one_row",
              "gemm_tile=2,cols_per_wg=32,cols_per_item=4,rows_per_pass=2,stream_split=8,stream_chunk=48,"
              "stream_prefetch_one_row=2",
              {0, 2, 10},
              2048},
    // a whole column per work-item and two columns each (a gate/up pair), so the tree runs in
    // registers with no sub-group (ZP_ST_REG_TREE, the path Intel sub-groups take with shuffles)
    TunedCase{"stream_register_tree", "gemm_tile=2,cols_per_wg=32,cols_per_item=32,stream_split=1", {0, 2, 10}},
    // the byte-offset table decode with its bytes through ZP_BYTE (e2m1_decode=6: NVIDIA's prmt,
    // here decode 4's shift and mask; stream_nvidia has 4 itself), 8 lanes per work-item
    TunedCase{
        "stream_byte_table", "gemm_tile=2,cols_per_wg=16,cols_per_item=8,stream_split=2,e2m1_decode=6", {0, 6, 11}});

INSTANTIATE_TEST_SUITE_P(Tilings, DeviceChainTuned, kTilings,
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Tilings, DeviceChainTunedOneLaunch, kTilings,
                         [](const auto& info) { return std::string(info.param.name); });

// ------------------------------------------------------------------------------ two_launch shapes

// two_launch derives the routes inside every work-group and picks the pass height per expert
// at run time, so it is checked on shapes the reduced suite does not reach: rows 1-4, top_k
// 1-8, cards 1/2/4, both layouts, gpt-oss SwiGLU, both tiles. Small H and I (16 and 3 blocks:
// every lane of the gemm1 tree sums one block, gemm2's lanes 3..15 none) keep PoCL quick;
// E/C = M*K so six_local can be formed.
struct TwoLaunchShape {
    const char* name;
    int rows, topK, cards;
    zp::oracle::GateUpLayout layout;
    bool gptOss;  // alpha 1.702, beta 1, L 7
    const char* tuning;
    friend void PrintTo(const TwoLaunchShape& c, std::ostream* os) { *os << c.name << " (" << c.tuning << ")"; }
};
class TwoLaunchShapes : public ::testing::TestWithParam<TwoLaunchShape> {};

// `variant` (two_launch or one_launch: the same bodies, one cooperative kernel in the second)
// on every valid pattern of the shape.
void runShape(const TwoLaunchShape& p, Variant variant) {
    ChainShape s;
    s.hidden = 512;
    s.intermediate = 96;
    s.rows = p.rows;
    s.topK = p.topK;
    s.cards = p.cards;
    s.card = p.cards - 1;
    s.experts = p.cards * p.rows * p.topK;
    s.layout = p.layout;
    if (p.gptOss) {
        s.swigluAlpha = 1.702f;
        s.swigluUpBias = 1.0f;
        s.swigluLimit = 7.0f;
    }
    // Any error past this check (a kernel that fails to build included) fails the test.
    if (auto why = withoutSourceBundle(p.tuning)) GTEST_SKIP() << *why;
    std::optional<ChainRig> rig;
    rig.emplace(s, zp::scheduler::KernelTuning::parse(p.tuning));
    int ran = 0;
    for (RoutePattern pattern : zp::probe::kAllRoutePatterns) {
        if (zp::probe::patternInvalidReason(s, pattern)) continue;
        for (int v : {0, 3, 5, 10}) {
            auto [c, want] = rig->prepare(pattern, v);
            auto& chain = rig->chain(variant);
            chain.setInputs(c.inputs);
            chain.execute(rig->queue());
            const auto err = compare(s, variant, chain.results(), want);
            EXPECT_TRUE(err.empty()) << zp::probe::variantName(variant) << " " << p.name << " " << c.name() << ":"
                                     << err;
            ++ran;
        }
    }
    EXPECT_GT(ran, 0) << "no valid route pattern for " << p.name;
}

TEST_P(TwoLaunchShapes, GivenAnotherShape_WhenTwoLaunchRuns_ThenEveryMaterialisedTensorMatchesTheOracleBitForBit) {
    runShape(GetParam(), Variant::TwoLaunch);
}

// one_launch in a test of its own, as for the tilings (its module takes PoCL minutes optimised with a
// stream tile).
class OneLaunchShapes : public TwoLaunchShapes {};

TEST_P(OneLaunchShapes, GivenAnotherShape_WhenOneLaunchRuns_ThenEveryMaterialisedTensorMatchesTheOracleBitForBit) {
    runShape(GetParam(), Variant::OneLaunch);
}

const auto kShapes = ::testing::Values(
    TwoLaunchShape{"m1_k1_c1", 1, 1, 1, zp::oracle::GateUpLayout::Split, false, "packaged"},
    // the stream tile at the bundle's stream defaults (8 columns, one per work-item, 2 lanes each;
    // bit-arithmetic decode)
    TwoLaunchShape{"m1_k8_c2_stream", 1, 8, 2, zp::oracle::GateUpLayout::Interleaved, true, "gemm_tile=2"},
    // NVIDIA's recommended tiles but max_registers (spread_units=2: a made-up placement)
    TwoLaunchShape{"m2_k3_c4_nvidia", 2, 3, 4, zp::oracle::GateUpLayout::Split, true,
                   "gemm_tile=2,cols_per_wg=64,cols_per_item=4,rows_per_pass=2,stream_split=16,stream_chunk=128,"
                   "e2m1_decode=6,stream_carry=1,spread_units=2,b_runs=0"},
    TwoLaunchShape{"m3_k5_c2_lanes_one_row", 3, 5, 2, zp::oracle::GateUpLayout::Interleaved, false,
                   "cols_per_wg=16,cols_per_item=4,rows_per_pass=1"},
    // 4 lanes of 2 columns per work-item, 2-row passes (M = 4: two of them), the multiply decode
    TwoLaunchShape{"m4_k8_c4_stream_wide", 4, 8, 4, zp::oracle::GateUpLayout::Split, false,
                   "gemm_tile=2,cols_per_wg=32,cols_per_item=8,stream_split=4,e2m1_decode=3"},
    TwoLaunchShape{"m4_k2_c1_lanes_three_rows", 4, 2, 1, zp::oracle::GateUpLayout::Interleaved, true,
                   "rows_per_pass=3"},
    // 10-column tiles (partial at the edge), 3-row passes: stream_uneven_bits' tiles, whose
    // one_launch module PoCL's cache then holds
    TwoLaunchShape{"m2_k6_c2_stream_uneven", 2, 6, 2, zp::oracle::GateUpLayout::Split, true,
                   "gemm_tile=2,cols_per_wg=10,cols_per_item=2,rows_per_pass=3,stream_split=16"},
    // kernel B on a column tile of its own (two_launch; one_launch keeps A's)
    TwoLaunchShape{"m4_k8_c4_lanes_b_tile", 4, 8, 4, zp::oracle::GateUpLayout::Interleaved, true, "b_cols_per_wg=4"},
    TwoLaunchShape{"m1_k8_c2_stream_b_uneven", 1, 8, 2, zp::oracle::GateUpLayout::Split, true,
                   "gemm_tile=2,b_cols_per_wg=10,b_cols_per_item=2"},
    // the stream tile, kernel B on a column tile of its own
    // (and its 1-row groups in runs of at most 4 with one row per pass: one slot of lane sums)
    TwoLaunchShape{"m3_k5_c2_stream_b_tile", 3, 5, 2, zp::oracle::GateUpLayout::Interleaved, true,
                   "gemm_tile=2,cols_per_wg=32,cols_per_item=4,rows_per_pass=1,stream_split=8,e2m1_decode=3,"
                   "b_cols_per_wg=8,b_runs=4"},
    // (the local table at the byte offsets of ZP_BYTE; kernel A's first loads carried from unit to
    // unit, through groups of 1-4 rows and gemm1's K in two chunks; one_launch's units by rank;
    // kernel B's 1-row groups in runs of 2, all its 16-block staging holds)
    TwoLaunchShape{"m4_k8_c4_stream_two_rows", 4, 8, 4, zp::oracle::GateUpLayout::Split, false,
                   "gemm_tile=2,cols_per_wg=16,cols_per_item=4,stream_split=8,stream_chunk=16,e2m1_decode=6,"
                   "stream_carry=1,spread_units=2,b_runs=2"});

INSTANTIATE_TEST_SUITE_P(Shapes, TwoLaunchShapes, kShapes,
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Shapes, OneLaunchShapes, kShapes,
                         [](const auto& info) { return std::string(info.param.name); });

// ------------------------------------------------------------------------------ default shape

TEST(DeviceChainDefaultShape, GivenSixLocalCases_WhenEveryVariantRuns_ThenOutputsMatchTheOracleBitForBit) {
    const char* on = std::getenv("ZP_DEVICE_CHAIN_DEFAULT_SHAPE");
    if (!on || std::string(on) != "1") GTEST_SKIP() << "set ZP_DEVICE_CHAIN_DEFAULT_SHAPE=1 (its own ctest)";
    ChainRig rig(ChainShape{});  // H=4096, I=2048, E=192, K=6, M=2, C=4
    std::printf("[ device  ] %s via %s\n", rig.info().name().c_str(), rig.modules().choice().why.c_str());
    // ordinary, range (Inf/NaN sums), cancellation (order-sensitive). Not the subnormal variant
    // (2): it runs on every variant and pattern at the reduced shape, and a CPU device computes
    // subnormals ~10x slower (2.3 s per chain here on PoCL, 8 chains).
    for (int v : {0, 5, 10}) {
        auto [c, want] = rig.prepare(RoutePattern::SixLocal, v);
        for (Variant variant : zp::probe::kAllVariants) {
            auto& chain = rig.chain(variant);
            chain.setInputs(c.inputs);
            chain.execute(rig.queue());
            const auto err = compare(rig.shape(), variant, chain.results(), want);
            EXPECT_TRUE(err.empty()) << zp::probe::variantName(variant) << " " << c.name() << ":" << err;
            // Figures for whoever tunes the kernels (no assertion: STYLE.md, benchmarks are programs).
            std::string line;
            double total = 0;
            for (const auto& t : chain.kernelTimings()) {
                line += " " + t.kernel + "=" + std::to_string(static_cast<long>(t.ns / 1000)) + "us";
                total += t.ns;
            }
            std::printf("[ timing  ] %-18s %-13s total %8.1f us:%s\n",
                        std::string(zp::probe::variantName(variant)).c_str(), c.name().c_str(), total / 1000,
                        line.c_str());
        }
    }
}

}  // namespace
