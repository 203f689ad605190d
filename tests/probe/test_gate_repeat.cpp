// gate_repeat: the verdicts and medians of N runs side by side, with a known answer.
#include <gtest/gtest.h>

#include "zp/probe/gate_repeat.hpp"

using nlohmann::json;
using namespace zp::probe;

namespace {

json projection(const char* pattern, double median, double lo, double hi, const char* verdict) {
    return {{"pattern", pattern}, {"median_ms", median}, {"ci_low_ms", lo}, {"ci_high_ms", hi}, {"verdict", verdict}};
}

json card(const char* verdict, json projections) {
    return {{"gate",
             {{"candidates", json::array({{{"candidate", "paired_direct"},
                                           {"verdict", {{"verdict", verdict}}},
                                           {"projections", projections}}})}}}};
}

}  // namespace

TEST(GateRepeat, GivenThreeRuns_ThenVerdictsSpreadAndPairsInsideAreCounted) {
    // Medians 0.60, 0.62, 0.70; CIs [0.55, 0.65], [0.58, 0.66], [0.52, 0.71] (the last on the bar).
    const std::vector<json> cards = {
        card("pass", json::array({projection("six_local", 0.60, 0.55, 0.65, "pass")})),
        card("pass", json::array({projection("six_local", 0.62, 0.58, 0.66, "pass")})),
        card("on_the_bar", json::array({projection("six_local", 0.70, 0.49, 0.71, "on_the_bar")})),
    };
    const RepeatSummary s = summarizeRepeats(cards);
    EXPECT_EQ(s.runs, 3);
    ASSERT_EQ(s.candidates.size(), 1u);
    EXPECT_FALSE(s.candidates[0].contradicts);
    EXPECT_FALSE(s.contradiction);
    ASSERT_EQ(s.cells.size(), 1u);
    // 0.60 in run 2's [0.58, 0.66] and run 3's; 0.62 in runs 1 and 3; 0.70 in neither: 4 of 6.
    EXPECT_EQ(s.cells[0].pairsInside, 4);
    EXPECT_EQ(s.cells[0].pairsTotal, 6);
    const std::string t = formatRepeatTable(s);
    EXPECT_NE(t.find("0.600..0.700"), std::string::npos) << t;
    EXPECT_NE(t.find("4 of 6 ordered pairs"), std::string::npos) << t;
    EXPECT_NE(t.find("PASS PASS BAR"), std::string::npos) << t;
    EXPECT_EQ(repeatJson(s)["pairs_inside"], 4);
}

TEST(GateRepeat, GivenAPassAndAFail_ThenTheContradictionIsNamed) {
    const std::vector<json> cards = {
        card("pass", json::array({projection("six_local", 0.60, 0.55, 0.65, "pass")})),
        card("fail", json::array({projection("six_local", 0.40, 0.35, 0.45, "fail")})),
    };
    const RepeatSummary s = summarizeRepeats(cards);
    EXPECT_TRUE(s.contradiction);
    EXPECT_TRUE(s.candidates[0].contradicts);
    EXPECT_EQ(s.cells[0].pairsInside, 0);
    EXPECT_NE(formatRepeatTable(s).find("NO: PASS and FAIL"), std::string::npos);
}

TEST(GateRepeat, GivenARunWithoutAGateOrANullMedian_ThenItIsMissingAndNeverInside) {
    json nullMedian = card("fail", json::array({projection("six_local", 0, 0, 0, "fail")}));
    nullMedian["gate"]["candidates"][0]["projections"][0]["median_ms"] = nullptr;
    const std::vector<json> cards = {card("pass", json::array({projection("six_local", 0.6, 0.5, 0.7, "pass")})),
                                     json{{"gate", nullptr}}, nullMedian};
    const RepeatSummary s = summarizeRepeats(cards);
    EXPECT_EQ(s.candidates[0].verdicts[1], "missing");
    EXPECT_EQ(s.cells[0].pairsTotal, 6);
    EXPECT_EQ(s.cells[0].pairsInside, 0);
    EXPECT_THROW(summarizeRepeats({json{{"gate", {{"x", 1}}}}}), std::invalid_argument);
}

TEST(GateRepeat, GivenOneRunsCard_ThenItsLineNamesEachVerdictAndTheSmallestSaving) {
    const json c = card("pass", json::array({projection("same_typical", 0.91, 0.85, 0.97, "pass"),
                                             projection("six_local", 0.612, 0.55, 0.65, "pass")}));
    EXPECT_EQ(formatRunVerdicts(c), "paired_direct PASS (least saving six_local 0.612 ms)");
    EXPECT_EQ(
        formatRunVerdicts(card("on_the_bar", json::array({projection("six_local", 0.5, 0.45, 0.55, "on_the_bar")}))),
        "paired_direct BAR (least saving six_local 0.500 ms)");
    EXPECT_EQ(formatRunVerdicts(json{{"gate", nullptr}}), "no gate");
}
