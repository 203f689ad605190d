// gate: CONTRACT §8 verdicts from projections and correctness counts, the table and the JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "zp/probe/gate.hpp"

using namespace zp::sched;

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
    ps.push_back(proj("cross_row_overlap", 0.40, 0.30, 0.52));
    const CandidateGate g = evaluateGate("source_direct", ps, kAllCorrect, 0.50, 43);
    EXPECT_FALSE(g.verdict.pass);
    EXPECT_FALSE(g.verdict.speedOk);
    EXPECT_TRUE(g.verdict.correctnessOk);
    EXPECT_EQ(*g.verdict.worstPattern, "cross_row_overlap");
    EXPECT_NE(g.verdict.line.find("worst pattern cross_row_overlap: 95% CI lower end 0.300 ms < 0.500 ms"),
              std::string::npos)
        << g.verdict.line;
    int failing = 0;
    for (const auto& p : g.projections) failing += !p.passes;
    EXPECT_EQ(failing, 1);
}

TEST(Gate, GivenAMedianAboveTheBarButALowerEndBelow_ThenFail) {
    // The CONTRACT §8 case: two runs gave 0.500 and 0.477 ms; a median alone is not a pass.
    auto ps = allGood();
    ps.push_back(proj("within_row_duplicate", 0.52, 0.477, 0.56));
    const CandidateGate g = evaluateGate("paired_direct", ps, kAllCorrect, 0.50, 43);
    EXPECT_FALSE(g.verdict.pass);
    EXPECT_EQ(*g.verdict.worstPattern, "within_row_duplicate");
    EXPECT_NE(g.verdict.line.find("median 0.520 ms is above the bar"), std::string::npos) << g.verdict.line;
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
    EXPECT_NE(g.verdict.line.find("correctness: 1 of 84 cases failed"), std::string::npos) << g.verdict.line;
    EXPECT_NE(g.verdict.line.find("speed alone would pass"), std::string::npos) << g.verdict.line;
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

TEST(Gate, GivenSamples_WhenProjected_ThenTheProjectionFollowsTheBootstrap) {
    std::vector<double> a, b;
    for (int i = 0; i < 40; ++i) {
        a.push_back(100000 + 10 * i);
        b.push_back(a.back() - 14000);  // 14 µs per layer × 43 = 0.602 ms
    }
    const Projection p = projectPattern("six_local", a, b, 43, 0.50);
    EXPECT_EQ(p.pattern, "six_local");
    EXPECT_DOUBLE_EQ(p.medianMs, 0.602);
    EXPECT_DOUBLE_EQ(p.ciLowMs, 0.602);
    EXPECT_TRUE(p.passes);
    EXPECT_EQ(p.pairs, 40u);
    EXPECT_DOUBLE_EQ(p.candidateMedianNs, p.baselineMedianNs - 14000);
}

TEST(Gate, GivenAVerdict_WhenFormatted_ThenTheTableHasEveryPatternAndTheVerdictLine) {
    auto ps = allGood();
    ps.push_back(proj("cross_row_overlap", 0.40, 0.30, 0.52));
    const CandidateGate g = evaluateGate("source_direct", ps, kAllCorrect, 0.50, 43, {{"all_duplicate", "K < 2"}});
    const std::string t = formatGateTable(g);
    EXPECT_NE(t.find("projected saving / 43 layers (median)"), std::string::npos) << t;
    EXPECT_NE(t.find("95% CI"), std::string::npos);
    for (const auto& p : ps) EXPECT_NE(t.find(p.pattern), std::string::npos) << p.pattern;
    EXPECT_NE(t.find("[0.300, 0.520] ms"), std::string::npos) << t;
    EXPECT_NE(t.find("NO  <- worst"), std::string::npos) << t;
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
