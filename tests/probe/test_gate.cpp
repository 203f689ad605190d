// gate: CONTRACT §8 verdicts from projections and correctness counts, the table and the JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "zp/probe/gate.hpp"
#include "zp/probe/random.hpp"

using namespace zp::probe;

namespace {

Projection proj(const std::string& pattern, double median, double lo, double hi) {
    Projection p;
    p.pattern = pattern;
    p.medianMs = median;
    p.ciLowMs = lo;
    p.ciHighMs = hi;
    p.pairs = 50;
    return p;
}

std::vector<Projection> allGood() {
    return {proj("same_typical", 0.80, 0.70, 0.90), proj("disjoint_typical", 0.75, 0.62, 0.85),
            proj("six_local", 0.90, 0.81, 1.00), proj("all_remote", 0.70, 0.55, 0.81)};
}

const CaseCounts kAllCorrect{84, 0, 0};

}  // namespace

TEST(Gate, GivenEveryPatternAboveTheBar_AndAllCorrect_ThenPass_AndTheTightestPatternIsNamed) {
    const CandidateGate g = evaluateGate("paired_epilogue", allGood(), kAllCorrect, 0.50, 43);
    EXPECT_TRUE(g.verdict.pass);
    EXPECT_TRUE(g.verdict.speedOk);
    EXPECT_TRUE(g.verdict.correctnessOk);
    ASSERT_TRUE(g.verdict.worstPattern);
    EXPECT_EQ(*g.verdict.worstPattern, "all_remote");
    EXPECT_EQ(g.verdict.line.rfind("PASS paired_epilogue", 0), 0u) << g.verdict.line;
    for (const auto& p : g.projections) EXPECT_TRUE(p.passes) << p.pattern;
}

TEST(Gate, GivenOnePatternBelowTheBar_ThenFail_AndThatPatternIsNamed) {
    auto ps = allGood();
    ps.push_back(proj("cross_row_overlap", 0.40, 0.30, 0.45));
    const CandidateGate g = evaluateGate("source_direct", ps, kAllCorrect, 0.50, 43);
    EXPECT_FALSE(g.verdict.pass);
    EXPECT_FALSE(g.verdict.speedOk);
    EXPECT_TRUE(g.verdict.correctnessOk);
    EXPECT_EQ(*g.verdict.worstPattern, "cross_row_overlap");
    EXPECT_EQ(g.verdict.verdict, Verdict::Fail);
    EXPECT_EQ(g.verdict.line.rfind("FAIL source_direct", 0), 0u) << g.verdict.line;
    EXPECT_EQ(g.verdict.line, "FAIL source_direct: cross_row_overlap 95% CI [0.300, 0.450] ms below the 0.500 ms bar");
    EXPECT_NE(g.verdict.detail.find("pattern cross_row_overlap: 95% CI [0.300 ms, 0.450 ms] lies below 0.500 ms"),
              std::string::npos)
        << g.verdict.detail;
    int failing = 0;
    for (const auto& p : g.projections) failing += p.verdict == Verdict::Fail;
    EXPECT_EQ(failing, 1);
}

TEST(Gate, GivenAMedianAboveTheBarButALowerEndBelow_ThenOnTheBar_NeverAPass) {
    // The CONTRACT §8 case: two runs gave 0.500 and 0.477 ms; a median alone is not a pass.
    auto ps = allGood();
    ps.push_back(proj("within_row_duplicate", 0.52, 0.477, 0.56));
    const CandidateGate g = evaluateGate("paired_direct", ps, kAllCorrect, 0.50, 43);
    EXPECT_FALSE(g.verdict.pass);
    EXPECT_EQ(g.verdict.verdict, Verdict::OnTheBar);
    EXPECT_EQ(g.verdict.onTheBar, std::vector<std::string>{"within_row_duplicate"});
    EXPECT_EQ(*g.verdict.worstPattern, "within_row_duplicate");
    EXPECT_EQ(g.verdict.line.rfind(
                  "ON THE BAR paired_direct: within_row_duplicate 95% CI [0.477, 0.560] ms holds the 0.500 ms bar", 0),
              0u)
        << g.verdict.line;
    EXPECT_EQ(g.verdict.detail.rfind("ON THE BAR paired_direct: on the bar: within_row_duplicate", 0), 0u)
        << g.verdict.detail;
    EXPECT_NE(g.verdict.detail.find("its median is above the bar, but a median alone does not pass"), std::string::npos)
        << g.verdict.detail;
}

// The "<- worst" marker, the card's worst_pattern and the line name one pattern: the one that
// decides the verdict, not the smallest lower end when another pattern decides it.
TEST(Gate, GivenAFailingPatternAndAWiderOneOnTheBar_ThenTheFailingOneDecides_EverywhereAlike) {
    auto ps = allGood();
    ps.push_back(proj("all_duplicate", 2.0, -5.0, 9.0));           // on the bar, the smallest lower end
    ps.push_back(proj("cross_row_overlap", 0.40, 0.30, 0.45));     // below the bar: decides the FAIL
    ps.push_back(proj("within_row_duplicate", 0.10, 0.05, 0.49));  // below too, less clearly
    const CandidateGate g = evaluateGate("source_direct", ps, kAllCorrect, 0.50, 43);
    EXPECT_EQ(g.verdict.verdict, Verdict::Fail);
    ASSERT_TRUE(g.verdict.worstPattern);
    // The failing pattern most clearly below (smallest upper end), not all_duplicate's nor
    // within_row_duplicate's smaller lower end.
    EXPECT_EQ(*g.verdict.worstPattern, "cross_row_overlap");
    EXPECT_EQ(g.verdict.line.rfind("FAIL source_direct: cross_row_overlap 95% CI [0.300, 0.450] ms below", 0), 0u)
        << g.verdict.line;
    EXPECT_NE(g.verdict.line.find("2 of 7 patterns below"), std::string::npos) << g.verdict.line;
    const std::string t = formatGateTable(g);
    const auto marker = t.find("<- decides the verdict");
    ASSERT_NE(marker, std::string::npos) << t;
    EXPECT_EQ(t.rfind("cross_row_overlap", marker), t.rfind("\n  ", marker) + 3) << t;
    EXPECT_EQ(gateJson(g)["verdict"]["worst_pattern"], "cross_row_overlap");

    // On the bar (none failing): the one furthest from passing, the smallest lower end.
    auto bar = allGood();
    bar.push_back(proj("within_row_duplicate", 0.52, 0.477, 0.56));
    bar.push_back(proj("all_duplicate", 2.0, -5.0, 9.0));
    const CandidateGate b = evaluateGate("paired_direct", bar, kAllCorrect, 0.50, 43);
    EXPECT_EQ(b.verdict.verdict, Verdict::OnTheBar);
    EXPECT_EQ(*b.verdict.worstPattern, "all_duplicate");
    EXPECT_EQ(b.verdict.line.rfind("ON THE BAR paired_direct: all_duplicate 95% CI [-5.000, 9.000] ms", 0), 0u)
        << b.verdict.line;
    EXPECT_NE(b.verdict.line.find("2 of 6 patterns on the bar"), std::string::npos) << b.verdict.line;
}

// A verdict line stays within 200 characters however many patterns are on the bar and however
// wide their intervals; the detail keeps every one.
TEST(Gate, GivenSevenWidePatternsOnTheBar_ThenTheLineFits200Characters_AndTheDetailNamesEvery) {
    const char* names[] = {"same_typical",  "disjoint_typical", "cross_row_overlap", "within_row_duplicate",
                           "all_duplicate", "six_local",        "all_remote"};
    std::vector<Projection> ps;
    for (int i = 0; i < 7; ++i) {
        ps.push_back(proj(names[i], 130.651, -32265.790275 - i, 27341.342705 + i));
        ps.back().blocks = 2;
        ps.back().roundsPerBlock = 2;
        ps.back().blockSdMs = 3317.2;
    }
    ps.push_back(proj("huge", 1e300, -1e301, 1e302));
    const std::string name = "a_candidate_with_a_rather_long_name_for_a_variant_" + std::string(40, 'x');
    const CandidateGate g = evaluateGate(name, ps, CaseCounts{1, 0, 83}, 0.50, 43);
    EXPECT_EQ(g.verdict.verdict, Verdict::OnTheBar);
    EXPECT_LE(g.verdict.line.size(), kVerdictLineMax) << g.verdict.line;
    EXPECT_EQ(g.verdict.line.rfind("ON THE BAR " + name + ": huge 95% CI [-1e+301, 1e+302] ms", 0), 0u)
        << g.verdict.line;
    for (const char* n : names) EXPECT_NE(g.verdict.detail.find(n), std::string::npos) << n;
    EXPECT_GT(g.verdict.detail.size(), kVerdictLineMax);
    EXPECT_EQ(gateJson(g)["verdict"]["detail"], g.verdict.detail);
    // A name that alone is longer than the line: cut, never longer.
    const CandidateGate cut = evaluateGate(std::string(400, 'n'), allGood(), kAllCorrect, 0.50, 43);
    EXPECT_EQ(cut.verdict.line.size(), kVerdictLineMax);
    EXPECT_EQ(cut.verdict.line.substr(kVerdictLineMax - 3), "...");
}

TEST(Gate, GivenOnePatternOnTheBarAndAnotherBelow_ThenFail) {
    auto ps = allGood();
    ps.push_back(proj("within_row_duplicate", 0.52, 0.477, 0.56));
    ps.push_back(proj("cross_row_overlap", 0.40, 0.30, 0.45));
    EXPECT_EQ(evaluateGate("x", ps, kAllCorrect, 0.50, 43).verdict.verdict, Verdict::Fail);
}

TEST(Gate, GivenAnUpperEndExactlyAtTheBar_ThenOnTheBar_AndJustBelowThenFail) {
    EXPECT_EQ(classifyInterval(0.40, 0.50, 0.50), Verdict::OnTheBar);
    EXPECT_EQ(classifyInterval(0.40, 0.4999, 0.50), Verdict::Fail);
    EXPECT_EQ(classifyInterval(0.50, 0.60, 0.50), Verdict::Pass);
    EXPECT_EQ(classifyInterval(NAN, 0.60, 0.50), Verdict::Fail);
    EXPECT_EQ(classifyInterval(0.6, INFINITY, 0.50), Verdict::Fail);
}

TEST(Gate, GivenALowerEndExactlyAtTheBar_ThenThatPatternPasses) {
    auto ps = allGood();
    ps.push_back(proj("all_duplicate", 0.6, 0.50, 0.7));
    EXPECT_TRUE(evaluateGate("x", ps, kAllCorrect, 0.50, 43).verdict.pass);
}

TEST(Gate, GivenAFailedCase_ThenFailWhateverTheSpeed) {
    const CandidateGate g = evaluateGate("gemm2_loader_fused", allGood(), CaseCounts{83, 1, 0}, 0.50, 43);
    EXPECT_FALSE(g.verdict.pass);
    EXPECT_TRUE(g.verdict.speedOk);
    EXPECT_FALSE(g.verdict.correctnessOk);
    EXPECT_EQ(g.verdict.line.rfind("FAIL gemm2_loader_fused: 1 of 84 cases failed; speed alone would pass (closest "
                                   "all_remote 95% CI [0.550, 0.810] ms)",
                                   0),
              0u)
        << g.verdict.line;
    EXPECT_NE(g.verdict.detail.find("correctness: 1 of 84 cases failed"), std::string::npos) << g.verdict.detail;
    EXPECT_NE(g.verdict.detail.find("speed alone would pass"), std::string::npos) << g.verdict.detail;
}

TEST(Gate, GivenNoPassedCase_ThenFail_EvenWithOnlySkips) {
    const CandidateGate g = evaluateGate("x", allGood(), CaseCounts{0, 0, 84}, 0.50, 43);
    EXPECT_FALSE(g.verdict.pass);
    EXPECT_FALSE(g.verdict.correctnessOk);
    EXPECT_NE(g.verdict.line.find("no case passed (84 skipped)"), std::string::npos) << g.verdict.line;
}

TEST(Gate, GivenSkipsBesidePasses_AndNoFailure_ThenSkipsDoNotBlock_ButAreNamed) {
    const CandidateGate g = evaluateGate("x", allGood(), CaseCounts{77, 0, 7}, 0.50, 43);
    EXPECT_TRUE(g.verdict.pass);
    EXPECT_NE(g.verdict.line.find("77/84 cases passed, 7 skipped"), std::string::npos) << g.verdict.line;
}

TEST(Gate, GivenNoValidPattern_OrANonFiniteProjection_ThenFail) {
    const CandidateGate none = evaluateGate("x", {}, kAllCorrect, 0.50, 43);
    EXPECT_FALSE(none.verdict.pass);
    EXPECT_FALSE(none.verdict.worstPattern);
    EXPECT_NE(none.verdict.line.find("no valid route pattern"), std::string::npos);

    auto ps = allGood();
    ps.push_back(proj("six_local", NAN, NAN, NAN));
    ps.back().pattern = "all_duplicate";
    const CandidateGate nan = evaluateGate("x", ps, kAllCorrect, 0.50, 43);
    EXPECT_FALSE(nan.verdict.pass);
    EXPECT_EQ(*nan.verdict.worstPattern, "all_duplicate");
    EXPECT_TRUE(gateJson(nan)["projections"].back()["ci_low_ms"].is_null());
}

TEST(Gate, GivenPassesFlagsFromTheCaller_ThenTheyAreRecomputedAgainstTheBar) {
    auto ps = allGood();
    for (auto& p : ps) p.passes = false;
    ps[0].ciLowMs = 0.2;
    ps[0].passes = true;  // wrong on purpose
    const CandidateGate g = evaluateGate("x", ps, kAllCorrect, 0.50, 43);
    EXPECT_FALSE(g.projections[0].passes);
    EXPECT_TRUE(g.projections[1].passes);
}

TEST(Gate, GivenBlocksOfSamples_WhenProjected_ThenTheProjectionFollowsTheBlockInterval) {
    std::vector<std::vector<double>> a(5), b(5);
    for (int j = 0; j < 5; ++j)
        for (int i = 0; i < 8; ++i) {
            a[j].push_back(100000 + 10 * i + 1000 * j);
            b[j].push_back(a[j].back() - 14000);  // 14 µs per layer × 43 = 0.602 ms
        }
    const Projection p = projectPattern("six_local", a, b, 43, 0.50);
    EXPECT_EQ(p.pattern, "six_local");
    EXPECT_DOUBLE_EQ(p.medianMs, 0.602);
    EXPECT_DOUBLE_EQ(p.ciLowMs, 0.602);
    EXPECT_TRUE(p.passes);
    EXPECT_EQ(p.verdict, Verdict::Pass);
    EXPECT_EQ(p.pairs, 40u);
    EXPECT_EQ(p.blocks, 5u);
    EXPECT_EQ(p.roundsPerBlock, 8u);
    EXPECT_DOUBLE_EQ(p.candidateMedianNs, p.baselineMedianNs - 14000);
    // A timer step of 100 ns per sample: the interval is never narrower than it.
    const Projection q = projectPattern("six_local", a, b, 43, 0.50, 100);
    EXPECT_NEAR(q.ciLowMs, 0.602 - 100 * 43e-6, 1e-12);
    EXPECT_NEAR(q.ciHighMs, 0.602 + 100 * 43e-6, 1e-12);
}

namespace {

// Synthetic timings with a known answer, quantised like NVIDIA's 1 µs profiling timer: a
// sample is B executions measured in whole µs and divided by B. Each block (a rebuilt chain,
// a "fresh process") shifts both variants by its own offset and the candidate's saving by
// its own few ns; pairs add noise. Saving per layer `savingNs`.
struct Synthetic {
    std::vector<std::vector<double>> a, b;
};

Synthetic synthetic(double savingNs, int blocks, int rounds, int B, std::uint64_t seed, double blockShiftNs = 300,
                    double pairNoiseNs = 400) {
    zp::probe::SplitMix64 rng(seed);
    auto unit = [&] { return double(rng.below(1u << 20)) / double(1u << 20) - 0.5; };  // in [-0.5, 0.5)
    auto quantise = [&](double perExecNs) { return std::floor(perExecNs * B / 1000.0) * 1000.0 / B; };
    Synthetic s;
    s.a.resize(std::size_t(blocks));
    s.b.resize(std::size_t(blocks));
    for (int j = 0; j < blocks; ++j) {
        const double offset = 2000 * unit(), savingShift = blockShiftNs * unit();
        for (int i = 0; i < rounds; ++i) {
            const double base = 95000 + offset + pairNoiseNs * unit();
            s.a[std::size_t(j)].push_back(quantise(base));
            s.b[std::size_t(j)].push_back(quantise(base - savingNs - savingShift + pairNoiseNs * unit()));
        }
    }
    return s;
}

// 0.50 ms over 43 layers = 11628 ns per layer.
constexpr double kBarNs = 0.50e6 / 43;

}  // namespace

TEST(Gate, GivenQuantisedSyntheticTimings_ThenAClearPassAClearFailAndOneOnTheBar) {
    const int B = 3;  // 100 µs chains on a 1 µs timer: ≥ 200 ticks per sample
    const auto pass = synthetic(kBarNs + 2500, 5, 10, B, 1);
    const auto fail = synthetic(kBarNs - 2500, 5, 10, B, 2);
    const auto bar = synthetic(kBarNs + 20, 5, 10, B, 3);
    const double step = 1000.0 / B;
    const Projection pp = projectPattern("six_local", pass.a, pass.b, 43, 0.50, step);
    const Projection pf = projectPattern("six_local", fail.a, fail.b, 43, 0.50, step);
    const Projection pb = projectPattern("six_local", bar.a, bar.b, 43, 0.50, step);
    EXPECT_EQ(pp.verdict, Verdict::Pass) << pp.ciLowMs << " " << pp.ciHighMs;
    EXPECT_EQ(pf.verdict, Verdict::Fail) << pf.ciLowMs << " " << pf.ciHighMs;
    EXPECT_EQ(pb.verdict, Verdict::OnTheBar) << pb.ciLowMs << " " << pb.ciHighMs;
    // A saving 20 ns per layer above the bar, a few hundred ns of block spread: more rounds
    // than any default would take, but a finite number.
    ASSERT_TRUE(pb.moreRounds.has_value() || pb.blockSdMs > 0);

    const CaseCounts ok{12, 0, 0};
    EXPECT_EQ(evaluateGate("p", {pp}, ok, 0.50, 43).verdict.verdict, Verdict::Pass);
    EXPECT_EQ(evaluateGate("f", {pp, pf}, ok, 0.50, 43).verdict.verdict, Verdict::Fail);
    const CandidateGate onBar = evaluateGate("b", {pp, pb}, ok, 0.50, 43);
    EXPECT_EQ(onBar.verdict.verdict, Verdict::OnTheBar);
    EXPECT_EQ(onBar.verdict.onTheBar, std::vector<std::string>{"six_local"});
    EXPECT_NE(onBar.verdict.line.find("six_local"), std::string::npos) << onBar.verdict.line;
    EXPECT_EQ(gateJson(onBar)["verdict"]["verdict"], "on_the_bar");
    // A case that failed turns even the clear pass into a fail.
    EXPECT_EQ(evaluateGate("p", {pp}, CaseCounts{11, 1, 0}, 0.50, 43).verdict.verdict, Verdict::Fail);
}

TEST(Gate, GivenAPatternOnTheBar_ThenTheRoundsToDecideItShrinkTheIntervalEnough) {
    // 600 ns per layer above the bar (0.026 ms projected), a block spread that leaves 5 blocks
    // undecided: the advice, followed, decides it.
    const auto s = synthetic(kBarNs + 600, 5, 10, 3, 7, 1500);
    const Projection p = projectPattern("six_local", s.a, s.b, 43, 0.50, 1000.0 / 3);
    ASSERT_EQ(p.verdict, Verdict::OnTheBar) << p.ciLowMs << " " << p.ciHighMs;
    ASSERT_TRUE(p.moreRounds);
    EXPECT_GT(*p.moreRounds, 0);
    const int k = int(p.blocks) + *p.moreRounds / int(p.roundsPerBlock);
    EXPECT_GE(rerunHalfWidth(p.blockSdMs, std::size_t(k - 1)), std::fabs(0.5 * (p.ciLowMs + p.ciHighMs) - 0.50))
        << "one block fewer than advised already decides it";
    const double half = rerunHalfWidth(p.blockSdMs, std::size_t(k));
    EXPECT_LT(half, std::fabs(0.5 * (p.ciLowMs + p.ciHighMs) - 0.50));
}

// The saving in the user's units: +0.50 ms on the seed's 15.79 ms step (63.33 tok/s) is
// 1000/15.29 - 1000/15.79 = +2.07 tok/s.
TEST(Gate, GivenASaving_WhenPutAgainstAReferenceStep_ThenTheDecodeSpeedGained) {
    EXPECT_NEAR(decodeSpeedGain(0.50, 15.79), 1000.0 / 15.29 - 1000.0 / 15.79, 1e-12);
    EXPECT_NEAR(decodeSpeedGain(0.0, 15.79), 0.0, 1e-12);
    EXPECT_NEAR(decodeSpeedGain(-0.50, 15.79), 1000.0 / 16.29 - 1000.0 / 15.79, 1e-9);  // slower: negative
    EXPECT_NEAR(decodeSpeedGain(5.0, 10.0), 100.0, 1e-9);                               // 100 -> 200 tok/s
    for (double bad : {15.79, 20.0, std::nan(""), double(INFINITY)})
        EXPECT_TRUE(std::isnan(decodeSpeedGain(bad, 15.79)));
    EXPECT_TRUE(std::isnan(decodeSpeedGain(0.5, 0.0)));
    EXPECT_TRUE(std::isnan(decodeSpeedGain(0.5, -1.0)));
}

TEST(Gate, GivenAReferenceStep_WhenFormatted_ThenEachPatternAlsoAsDecodeSpeed) {
    auto ps = allGood();
    ps.push_back(proj("cross_row_overlap", 0.50, 0.30, 0.70));
    CandidateGate g = evaluateGate("source_direct", ps, kAllCorrect, 0.50, 43);
    EXPECT_EQ(formatGateTable(g).find("tok/s"), std::string::npos);  // none asked: ms only
    EXPECT_FALSE(gateJson(g).contains("reference_step_ms"));
    g.referenceStepMs = 15.79;
    const std::string t = formatGateTable(g);
    EXPECT_NE(t.find("decode speed: the median saving against a reference step of 15.79 ms per token (63.33 tok/s; "
                     "gate.reference_step_ms): the bar, 0.50 ms, is +2.07 tok/s"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find(" decode speed | verdict"), std::string::npos) << t;
    EXPECT_NE(t.find("|    +2.07 tok/s | ON THE BAR"), std::string::npos) << t;
    const auto j = gateJson(g);
    EXPECT_EQ(j["reference_step_ms"], 15.79);
    const auto& gain = j["projections"].back()["decode_gain_tok_s"];
    EXPECT_NEAR(gain["median"].get<double>(), 1000.0 / 15.29 - 1000.0 / 15.79, 1e-12);
    EXPECT_NEAR(gain["ci_low"].get<double>(), 1000.0 / 15.49 - 1000.0 / 15.79, 1e-9);
    EXPECT_NEAR(gain["ci_high"].get<double>(), 1000.0 / 15.09 - 1000.0 / 15.79, 1e-9);
}

TEST(Gate, GivenAVerdict_WhenFormatted_ThenTheTableHasEveryPatternAndTheVerdictLine) {
    auto ps = allGood();
    ps.push_back(proj("cross_row_overlap", 0.40, 0.30, 0.45));
    const CandidateGate g = evaluateGate("source_direct", ps, kAllCorrect, 0.50, 43, {{"all_duplicate", "K < 2"}});
    const std::string t = formatGateTable(g);
    EXPECT_NE(t.find("projected saving / 43 layers (median)"), std::string::npos) << t;
    EXPECT_NE(t.find("95% CI"), std::string::npos);
    for (const auto& p : ps) EXPECT_NE(t.find(p.pattern), std::string::npos) << p.pattern;
    EXPECT_NE(t.find("[0.300, 0.450] ms"), std::string::npos) << t;
    EXPECT_NE(t.find("FAIL  <- decides the verdict"), std::string::npos) << t;
    EXPECT_EQ(t.find("<- decides", t.find("<- decides") + 1), std::string::npos) << "one pattern decides: " << t;
    EXPECT_NE(t.find("all_duplicate"), std::string::npos);
    EXPECT_NE(t.find("not valid for this configuration: K < 2"), std::string::npos);
    EXPECT_NE(t.find("verdict: FAIL source_direct"), std::string::npos) << t;

    const auto j = gateJson(g);
    EXPECT_EQ(j["candidate"], "source_direct");
    EXPECT_EQ(j["layers"], 43);
    EXPECT_EQ(j["projections"].size(), ps.size());
    EXPECT_EQ(j["verdict"]["pass"], false);
    EXPECT_EQ(j["verdict"]["worst_pattern"], "cross_row_overlap");
    EXPECT_EQ(j["not_valid"][0]["pattern"], "all_duplicate");
    EXPECT_DOUBLE_EQ(j["projections"].back()["ci_low_ms"].get<double>(), 0.30);
}
