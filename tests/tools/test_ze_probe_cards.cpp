// `ze-probe --cards 0,1,2,3` end to end on the one PoCL device of CI (zecl: ZE_ENABLE_ALT_DRIVERS
// names the built libze_zecl.so), at the reduced shape and one pattern: four cards one after
// another, each card<N>.json as a lone run writes it, and step.json beside them. The step is
// recomputed here from the cards' own rounds (round i of block j, the largest of the cards), its
// gate from those step times with CONTRACT §8's rule, and both must equal what the tool wrote.
#include <gtest/gtest.h>

#include "probe_support.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "zp/probe/gate.hpp"
#include "zp/probe/json_schema.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json readJson(const fs::path& p) {
    std::ifstream f(p);
    return json::parse(f);
}

// docs/step.schema.json with the $defs it borrows from docs/card.schema.json (as its
// description says a validator must).
json stepSchema() {
    json s = readJson(ZP_STEP_SCHEMA);
    const json card = readJson(ZP_CARD_SCHEMA);
    for (auto it = card["$defs"].begin(); it != card["$defs"].end(); ++it)
        if (!s["$defs"].contains(it.key())) s["$defs"][it.key()] = *it;
    return s;
}

std::vector<std::vector<double>> blocksOf(const std::vector<double>& x, const std::vector<std::size_t>& ends) {
    std::vector<std::vector<double>> out;
    std::size_t begin = 0;
    for (std::size_t end : ends) {
        end = std::min(end, x.size());
        if (end > begin) out.emplace_back(x.begin() + std::ptrdiff_t(begin), x.begin() + std::ptrdiff_t(end));
        begin = std::max(begin, end);
    }
    return out;
}

class ZeProbeCards : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir = fs::temp_directory_path() / ("zp-cards-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        run = runProbe(std::string(kReducedShapeArgs) + " --route-pattern six_local --cards 0,1,2,3 --out " +
                       dir.string() + " --report " + (dir / "report.html").string());
    }
    static void TearDownTestSuite() { fs::remove_all(dir); }
    static inline fs::path dir;
    static inline ProbeRun run;
};

TEST_F(ZeProbeCards, GivenFourCardsOnOneDevice_WhenRun_ThenFourCardsAndAStepThatSaysTheyWereNotConcurrent) {
    ASSERT_EQ(run.exitCode, 0) << run.output;
    for (int c = 0; c < 4; ++c) {
        const json card = readCard((dir / ("card" + std::to_string(c) + ".json")).string());
        EXPECT_EQ(card["card"], c);
        EXPECT_EQ(card["correctness"]["failed"], 0);
        EXPECT_GT(card["correctness"]["passed"].get<int>(), 0);
    }
    const json step = readJson(dir / "step.json");
    for (const auto& p : zp::probe::schemaProblems(stepSchema(), step)) ADD_FAILURE() << "step.json: " << p;
    EXPECT_EQ(step["concurrent"], false);
    EXPECT_NE(step["how"].get<std::string>().find("one after another on one shared device"), std::string::npos)
        << step["how"];
    EXPECT_EQ(step["cards"], json({0, 1, 2, 3}));
    ASSERT_EQ(step["placement"].size(), 4u);
    for (int c = 0; c < 4; ++c) {
        EXPECT_EQ(step["placement"][c]["card"], c);
        EXPECT_EQ(step["placement"][c]["device_spec"], step["placement"][0]["device_spec"]);  // the one device
        EXPECT_EQ(step["placement"][c]["file"], "card" + std::to_string(c) + ".json");
    }
    EXPECT_TRUE(step["interference"].is_null());
    EXPECT_NE(run.output.find("4 cards one after another on one shared device"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("gate on the step (CONTRACT §8 on step times)"), std::string::npos) << run.output;
}

TEST_F(ZeProbeCards, GivenTheCardsRounds_WhenRecomputed_ThenEachStepRoundIsTheSlowestCardsOfThatRound) {
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const json step = readJson(dir / "step.json");
    std::vector<json> cards;
    for (int c = 0; c < 4; ++c) cards.push_back(readJson(dir / ("card" + std::to_string(c) + ".json")));
    ASSERT_TRUE(step["patterns"].contains("six_local")) << step["patterns"].dump().substr(0, 200);
    const json& sp = step["patterns"]["six_local"];
    const auto ends = sp["block_ends"].get<std::vector<std::size_t>>();
    ASSERT_GE(ends.size(), 2u);
    std::size_t checked = 0;
    for (auto v = sp["variants"].begin(); v != sp["variants"].end(); ++v) {
        // Round i of block j of every card; the block as long as the shortest card's.
        std::vector<std::vector<std::vector<double>>> perCard;
        for (const auto& card : cards) {
            const json& pt = card["timings"]["patterns"]["six_local"];
            perCard.push_back(blocksOf(pt["variants"][v.key()]["samples"]["device_ns"].get<std::vector<double>>(),
                                       pt["block_ends"].get<std::vector<std::size_t>>()));
        }
        std::vector<double> want;
        std::vector<int> slowest;
        std::size_t blocks = SIZE_MAX;
        for (const auto& b : perCard) blocks = std::min(blocks, b.size());
        for (std::size_t j = 0; j < blocks; ++j) {
            std::size_t n = SIZE_MAX;
            for (const auto& b : perCard) n = std::min(n, b[j].size());
            for (std::size_t i = 0; i < n; ++i) {
                int who = 0;
                for (int k = 1; k < 4; ++k)
                    if (perCard[std::size_t(k)][j][i] > perCard[std::size_t(who)][j][i]) who = k;
                want.push_back(perCard[std::size_t(who)][j][i]);
                slowest.push_back(who);
            }
        }
        EXPECT_EQ((*v)["samples"].get<std::vector<double>>(), want) << v.key();
        EXPECT_EQ((*v)["slowest_card"].get<std::vector<int>>(), slowest) << v.key();
        EXPECT_EQ(ends.back(), want.size()) << v.key();
        ++checked;
    }
    EXPECT_EQ(checked, 8u);  // m1_oracle, baseline and six candidates
}

TEST_F(ZeProbeCards, GivenTheStepTimes_WhenGated_ThenTheVerdictIsClassifyIntervalOfTheStepInterval) {
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const json step = readJson(dir / "step.json");
    const json& gate = step["gate"];
    EXPECT_EQ(gate["time"], "step");
    const double bar = gate["min_saving_ms"];
    const int layers = gate["layers"];
    const json& sp = step["patterns"]["six_local"];
    const auto ends = sp["block_ends"].get<std::vector<std::size_t>>();
    const auto base = blocksOf(sp["variants"]["baseline"]["samples"].get<std::vector<double>>(), ends);
    ASSERT_EQ(gate["candidates"].size(), 6u);
    for (const json& cand : gate["candidates"]) {
        const std::string name = cand["candidate"];
        SCOPED_TRACE(name);
        ASSERT_EQ(cand["projections"].size(), 1u);
        const json& p = cand["projections"][0];
        const auto got = blocksOf(sp["variants"][name]["samples"].get<std::vector<double>>(), ends);
        const zp::probe::Projection want =
            zp::probe::projectPattern("six_local", base, got, layers, bar, sp["resolution_ns"].get<double>());
        EXPECT_DOUBLE_EQ(p["ci_low_ms"].get<double>(), want.ciLowMs);
        EXPECT_DOUBLE_EQ(p["ci_high_ms"].get<double>(), want.ciHighMs);
        const auto verdict = zp::probe::classifyInterval(p["ci_low_ms"], p["ci_high_ms"], bar);
        EXPECT_EQ(p["verdict"], std::string(zp::probe::verdictKey(verdict)));
        // Correctness of the step: the four cards' cases together.
        int passed = 0;
        for (int c = 0; c < 4; ++c) {
            const json card = readJson(dir / ("card" + std::to_string(c) + ".json"));
            passed += card["correctness"]["by_variant"][name]["six_local"]["passed"].get<int>();
        }
        EXPECT_EQ(cand["correctness"]["passed"], passed);
        // One pattern: the candidate's verdict is the pattern's.
        EXPECT_EQ(cand["verdict"]["verdict"], p["verdict"]);
    }
}

TEST_F(ZeProbeCards, GivenTheRunsReport_WhenRead_ThenItShowsTheStepAndTheFourCardsSideBySide) {
    ASSERT_EQ(run.exitCode, 0) << run.output;
    std::ifstream f(dir / "report.html");
    const std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(html.find("<h2>The step: step of cards 0,1,2,3 (one after another)</h2>"), std::string::npos);
    const auto side = html.find("<table class=\"sidebyside\">");
    ASSERT_NE(side, std::string::npos);
    for (const char* head :
         {"<th>card 0</th>", "<th>card 1</th>", "<th>card 2</th>", "<th>card 3</th>", "<th>step</th>"})
        EXPECT_NE(html.find(head, side), std::string::npos) << head;
    EXPECT_NE(html.find("interference not measured"), std::string::npos);
    // `ze-probe report` of the files makes the same page.
    const ProbeRun again = runProbe("report " + (dir / "card0.json").string() + " " + (dir / "card1.json").string() +
                                    " " + (dir / "card2.json").string() + " " + (dir / "card3.json").string() + " " +
                                    (dir / "step.json").string() + " -o " + (dir / "again.html").string());
    ASSERT_EQ(again.exitCode, 0) << again.output;
    std::ifstream g(dir / "again.html");
    const std::string html2((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
    EXPECT_EQ(html2, html);
}

// --cards-at-once on the one device: the code of cards at once (one thread per card, the start
// line, the solo turns, the interference) runs on CPU too, the cards contending for the device;
// with each timing block in a fresh process per card (the children play their one card).
TEST(ZeProbeCardsAtOnce, GivenTwoCardsAtOnceOnOneDevice_WhenRun_ThenInterferenceFiguresAndSoloTurnsAfterAllTiming) {
    const fs::path dir = fs::temp_directory_path() / ("zp-cards-at-once-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const ProbeRun r = runProbe(std::string(kReducedShapeArgs) +
                                " --route-pattern six_local --variant paired_direct --cards 0,1 --cards-at-once "
                                "--repeats 4 --warmup 1 --blocks 3 --block-isolation process --out " +
                                dir.string());
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const json step = readJson(dir / "step.json");
    for (const auto& p : zp::probe::schemaProblems(stepSchema(), step)) ADD_FAILURE() << "step.json: " << p;
    EXPECT_EQ(step["concurrent"], true);
    EXPECT_NE(step["how"].get<std::string>().find("at once on one shared device (--cards-at-once)"), std::string::npos);
    ASSERT_TRUE(step["interference"].is_array());
    // Every card x variant (m1_oracle, baseline, paired_direct): alone, and together = the card's own median.
    EXPECT_EQ(step["interference"].size(), 6u);
    for (const json& row : step["interference"]) {
        const json card = readCard((dir / ("card" + row["card"].dump() + ".json")).string());
        const json& together = card["timings"]["patterns"]["six_local"]["variants"][row["variant"].get<std::string>()];
        EXPECT_EQ(row["together_median_ns"], together["device_ns"]["median"]) << row;
        EXPECT_GT(row["alone_median_ns"].get<double>(), 0) << row;
        EXPECT_DOUBLE_EQ(row["ratio"].get<double>(),
                         row["together_median_ns"].get<double>() / row["alone_median_ns"].get<double>());
    }
    // The solo turns start after both cards' timing together, card 0's first.
    // ("timing six_local: block 1 of 3" before the cases, "timing block 2 of 3 (fresh process)" between them)
    const auto last0 = r.output.rfind("[card 0]   timing "), last1 = r.output.rfind("[card 1]   timing ");
    ASSERT_NE(r.output.find("[card 1]   timing block 3 of 3 (fresh process)"), std::string::npos) << r.output;
    const auto solo0 = r.output.find("[card 0]   alone: timing six_local"),
               solo1 = r.output.find("[card 1]   alone: timing six_local");
    ASSERT_NE(solo0, std::string::npos) << r.output;
    ASSERT_NE(solo1, std::string::npos) << r.output;
    EXPECT_LT(std::max(last0, last1), std::min(solo0, solo1)) << r.output;
    EXPECT_LT(solo0, solo1) << r.output;
    fs::remove_all(dir);
}

}  // namespace
