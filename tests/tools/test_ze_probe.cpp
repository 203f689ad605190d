// ze-probe end to end: the binary as a user runs it, its exit codes, files and messages.
#include <gtest/gtest.h>

#include "probe_support.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>

#include "zp/probe/case_io.hpp"
#include "zp/probe/cases.hpp"
#include "zp/probe/safetensors.hpp"

namespace fs = std::filesystem;
using namespace zp;

namespace {

class ZeProbe : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("zp-probe-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }
    std::string path(const std::string& name) const { return (dir / name).string(); }
    fs::path dir;
};

}  // namespace

TEST_F(ZeProbe, GivenInputsAndWeights_WhenDumped_ThenDumpEqualsTheOracleBitForBit) {
    const auto s = reducedShape();
    auto weights = probe::makeRandomWeights(s, 3);
    const auto c = probe::makeCase(s, probe::RoutePattern::CrossRowOverlap, 10, 77, &weights);
    probe::writeSafetensors(path("in.safetensors"), probe::inputTensors(s, c.inputs));
    probe::writeSafetensors(path("w.safetensors"), probe::weightsTensors(s, weights, "layer."));

    const ProbeRun r =
        runProbe(std::string(kReducedShapeArgs) + " --device host --set weights.prefix=layer. --weights " +
                 path("w.safetensors") + " --inputs " + path("in.safetensors") + " --dump " + path("dump.safetensors"));
    ASSERT_EQ(r.exitCode, 0) << r.output;

    const auto dump = probe::readSafetensors(path("dump.safetensors"));
    const auto want = oracle::runChain(s, weights, c.inputs, oracle::buildSiluTable(1.0));
    const std::int64_t R = std::int64_t(want.routes.rows.size());
    EXPECT_EQ(R, 4);
    auto bf16 = [&](const char* name, std::vector<std::int64_t> shape) {
        return probe::tensorValues<oracle::bf16_t>(probe::findTensor(dump, name, "dump"), probe::DType::BF16, shape,
                                                   name);
    };
    EXPECT_EQ(bf16("gate_up", {R, 128}), want.gateUp);
    EXPECT_EQ(bf16("act", {R, 64}), want.act);
    EXPECT_EQ(bf16("y", {R, 128}), want.y);
    EXPECT_EQ(bf16("out", {2, 128}), want.out);
    EXPECT_EQ(bf16("hidden", {2, 128}), c.inputs.hidden);
    const auto rows = probe::tensorValues<std::int32_t>(probe::findTensor(dump, "compact_rows", "dump"),
                                                        probe::DType::I32, {R, 2}, "compact_rows");
    for (std::int64_t r = 0; r < R; ++r) {
        EXPECT_EQ(rows[2 * r], want.routes.rows[r].localExpert);
        EXPECT_EQ(rows[2 * r + 1], want.routes.rows[r].tokenRow);
    }
}

TEST_F(ZeProbe, GivenPairedVariant_WhenDumped_ThenGateUpIsNotMaterialised) {
    const auto s = reducedShape();
    const auto c = probe::makeCase(s, probe::RoutePattern::SixLocal, 0, 1, nullptr);
    probe::writeSafetensors(path("in.safetensors"), probe::inputTensors(s, c.inputs));
    const ProbeRun r = runProbe(std::string(kReducedShapeArgs) + " --device host --variant paired_epilogue --inputs " +
                                path("in.safetensors") + " --dump " + path("d.safetensors"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const auto dump = probe::readSafetensors(path("d.safetensors"));
    EXPECT_EQ(dump.count("gate_up"), 0u);
    EXPECT_EQ(dump.count("act"), 1u);
    EXPECT_EQ(dump.at("compact_rows").shape, (std::vector<std::int64_t>{12, 2}));
}

TEST_F(ZeProbe, GivenAPattern_WhenRun_ThenTableAndCardJsonCountTwelveCases) {
    const ProbeRun r =
        runProbe(std::string(kReducedShapeArgs) + " --device host --route-pattern all_duplicate --out " + path("out"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("all_duplicate           12/12"), std::string::npos) << r.output;
    const auto j = readCard(path("out/card0.json"));
    EXPECT_EQ(j["schema"], 3);
    EXPECT_TRUE(j["timings"].is_null());  // the host oracle has no device timestamps
    EXPECT_TRUE(j["gate"].is_null());
    EXPECT_EQ(j["contract"], 1);
    EXPECT_EQ(j["correctness"]["passed"], 12);
    EXPECT_EQ(j["correctness"]["failed"], 0);
    EXPECT_EQ(j["config"]["hidden"], 128);
}

TEST_F(ZeProbe, GivenOneCardConfig_WhenAllPatternsRun_ThenInvalidPatternsReportedNotCounted) {
    const ProbeRun r = runProbe(
        "--set hidden=64 --set intermediate=32 --set experts=12 --set cards=1 --device host "
        "--route-pattern all --out " +
        path("out"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("all_remote             not valid for this configuration"), std::string::npos) << r.output;
    const auto j = readCard(path("out/card0.json"));
    EXPECT_EQ(j["correctness"]["by_variant"]["host_m1"]["all_remote"]["valid"], false);
}

struct BadInput {
    const char* args;
    const char* fragment;  // the message must name it
    int exitCode = 2;      // bad input: 2
    friend void PrintTo(const BadInput& b, std::ostream* os) { *os << "ze-probe " << b.args; }
};

class ZeProbeBadInput : public ZeProbe, public ::testing::WithParamInterface<BadInput> {};

TEST_P(ZeProbeBadInput, GivenBadInput_WhenRun_ThenExitCodeAndMessageNameIt) {
    const ProbeRun r = runProbe(GetParam().args);
    EXPECT_EQ(r.exitCode, GetParam().exitCode) << r.output;
    EXPECT_NE(r.output.find(GetParam().fragment), std::string::npos) << r.output;
}

const BadInput kBadInputs[] = {
    {"--no-such-option", "--no-such-option"},
    {"--route-pattern six-local --device host", "'six-local'"},
    {"--variant fastest --device host", "'fastest'"},
    {"--set hidden=100 --device host", "hidden"},
    {"--set hiden=128 --device host", "hiden"},
    {"--set swiglu.limit=7.3 --device host", "swiglu.limit"},
    {"--set hidden --device host", "key=value"},
    {"--set contract=2 --device host", "contract"},
    {"--inputs /nonexistent.safetensors", "/nonexistent.safetensors"},
    {"--config /nonexistent.yaml", "/nonexistent.yaml"},
    {"--dump x.safetensors --device host", "--dump needs --inputs"},
    {"--set card=4 --device host", "card"},
    {"--seed notanumber", "--seed"},
    {"--device host --trace t.json", "--trace needs the timing"},
    {"--no-timing --report r.svg", "--report needs the timing"},
    {"--repeats 0 --device host", "--repeats"},
    {"--resume --device host", "--resume and --overwrite go with --sweep"},
    {"--sweep /nonexistent.yaml", "/nonexistent.yaml"},
    {"--kernel-tuning gemm_tile=3 --no-timing", "gemm_tile must be 0 (lanes) or 2 (stream)"},
    {"--kernel-tuning gemm_tile=1 --no-timing", "gemm_tile 1 (the block tile) is gone"},
    {"--kernel-tuning gemm_tile=2,stream_split=4 --no-timing",
     "needs stream_split * cols_per_item (4 * 2) to be a multiple of 16"},
    {"--kernel-tuning e2m1_decode=4 --no-timing", "e2m1_decode 4"},
    {"--kernel-tuning gemm_tile=2,ablation=1 --no-timing", "ablation is for zp-chain-bench"},
    {"--kernel-tuning nosuch=1 --no-timing", "unknown key 'nosuch'"},
    {"--kernel-tuning cols_per_wg=6,cols_per_item=4 --no-timing", "cols_per_item must divide cols_per_wg"},
    {"--device host --kernel-tuning gemm_tile=2", "--kernel-tuning tiles the device kernels"},
    // Tiles whose work-group needs more local memory than the device has: refused before any case runs.
    {"--kernel-tuning gemm_tile=2,rows_per_pass=16,stream_chunk=1024 --no-timing --set hidden=128 --set "
     "intermediate=64 --set experts=48 --route-pattern all_duplicate --variant baseline",
     "bytes of local memory per work-group"},
    // One error style: CLI11's own parse errors carry the prefix too.
    {"--bogus-flag", "ze-probe: error: "},
    {"--repeats x --device host", "ze-probe: error: "},
    {"--device host --report r.png", "r.png: unknown report format '.png'"},
    {"--shard 1/2 --device host", "--shard goes with --sweep"},
    {"report /nonexistent.json -o r.html", "/nonexistent.json"},
    {"report", "ze-probe: error: "},
    {"sweep-merge /nonexistent-dir", "/nonexistent-dir: not a directory"},
};

// Named by the row's index and its options: two rows may share their first 60 characters.
INSTANTIATE_TEST_SUITE_P(Table, ZeProbeBadInput, ::testing::ValuesIn(kBadInputs), [](const auto& info) {
    return std::to_string(info.index) + "_" + paramName(info.param.args);
});

TEST(ZeProbeCli, GivenVersion_ThenToolVersionGitAndContract) {
    const ProbeRun r = runProbe("--version");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_EQ(r.output.rfind("ze-probe 0.", 0), 0u) << r.output;
    EXPECT_NE(r.output.find("(git "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("contract 1"), std::string::npos) << r.output;
}

TEST(ZeProbeCli, GivenHelp_ThenLinesWrappedAt100_WithDefaultsAndThreeExamples) {
    for (const char* sub : {"", "report ", "sweep-merge "}) {
        const ProbeRun r = runProbe(std::string(sub) + "--help");
        ASSERT_EQ(r.exitCode, 0) << r.output;
        std::istringstream lines(r.output);
        std::size_t n = 0;
        for (std::string l; std::getline(lines, l); ++n) EXPECT_LE(l.size(), 100u) << sub << "help line: " << l;
        EXPECT_GT(n, 5u);
        const auto ex = r.output.find("Examples:");
        ASSERT_NE(ex, std::string::npos) << r.output;
        std::size_t examples = 0;
        for (std::size_t at = r.output.find("\n  ze-probe", ex); at != std::string::npos;
             at = r.output.find("\n  ze-probe", at + 1))
            ++examples;
        EXPECT_EQ(examples, 3u) << r.output;
        EXPECT_NE(r.output.find("--version"), std::string::npos) << r.output;
    }
    const ProbeRun top = runProbe("--help");
    EXPECT_NE(top.output.find("--out TEXT=probe-out"), std::string::npos) << top.output;  // defaults shown
}

// Nothing to check is bad input: exit 2 before any case runs, naming per pattern the
// rule of CONTRACT §6 that rules it out; one valid pattern is enough to run.
TEST_F(ZeProbe, GivenNoValidCase_WhenRun_ThenExit2NamingEachPatternsRule) {
    ProbeRun r = runProbe(std::string(kReducedShapeArgs) +
                          " --set rows=1 --route-pattern cross_row_overlap --device host --out " + path("out"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("ze-probe: error: card 0: no case is valid to check at experts=48 cards=4 rows=1 top_k=6 "
                            "(12 local experts on the card):\n  cross_row_overlap needs at least 2 rows\n"),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(path("out/card0.json")));
    // A newcomer's small shape: 8 experts on 4 cards is 2 a card; six_local needs rows*top_k = 12.
    r = runProbe("--set hidden=64 --set intermediate=32 --set experts=8 --device host --out " + path("out"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("  six_local needs experts/cards >= rows*top_k = 12 distinct local experts, card has 2"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("passed"), std::string::npos) << "cases ran:\n" << r.output;
    // On several cards, the first card's line.
    r = runProbe("--set hidden=64 --set intermediate=32 --set experts=8 --cards 1,2 --device host --out " +
                 path("out"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("ze-probe: error: card 1: no case is valid to check at experts=8 cards=4 rows=2 top_k=6 "
                            "(2 local experts on the card):\n  six_local needs"),
              std::string::npos)
        << r.output;
    // Some patterns are valid there (all_duplicate): the run goes ahead and their cases pass.
    r = runProbe("--set hidden=64 --set intermediate=32 --set experts=8 --route-pattern all --device host --out " +
                 path("out"));
    EXPECT_EQ(r.exitCode, 0) << r.output;
    EXPECT_TRUE(fs::exists(path("out/card0.json")));
}

// A card of a schema this ze-probe does not know is refused by the report, naming the version,
// never drawn as if it were current; the ones it knows still render.
TEST_F(ZeProbe, GivenACardOfAnUnknownSchema_WhenReported_ThenExit2NamingTheVersion) {
    const std::string data = ZP_TOOLS_TEST_DATA;
    std::ifstream in(data + "/card1_future_verdicts.json");
    nlohmann::json card = nlohmann::json::parse(in);
    ASSERT_EQ(card["schema"], 3);
    // 4294967299 and -4294967293 are 3 as a 32-bit int: the version is compared as written.
    for (std::int64_t schema :
         {std::int64_t(4), std::int64_t(99), std::int64_t(4294967299), std::int64_t(-4294967293)}) {
        card["schema"] = schema;
        std::ofstream(path("future.json")) << card.dump();
        const ProbeRun r =
            runProbe("report " + data + "/card0_pocl_fixture.json " + path("future.json") + " -o " + path("r.html"));
        EXPECT_EQ(r.exitCode, 2) << r.output;
        EXPECT_NE(r.output.find(": card schema " + std::to_string(schema)), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("ze-probe: error: " + path("future.json") + ": card schema"), std::string::npos)
            << r.output;
        EXPECT_NE(r.output.find(": this ze-probe reads card schemas 2 to 3; report it with the ze-probe that wrote it"),
                  std::string::npos)
            << r.output;
        EXPECT_FALSE(fs::exists(path("r.html")));
    }
    card["schema"] = 3;
    std::ofstream(path("current.json")) << card.dump();
    const ProbeRun ok = runProbe("report " + path("current.json") + " -o " + path("r.html"));
    EXPECT_EQ(ok.exitCode, 0) << ok.output;
    EXPECT_TRUE(fs::exists(path("r.html")));
}

// A tuning whose work-groups the device cannot run is the user's to change (exit 2), named with
// the kernel, the group size and the device, not a device error (3).
TEST_F(ZeProbe, GivenATuningTooWideForTheDevice_WhenRun_ThenExit2NamingTheGroupSize) {
    const ProbeRun r =
        runProbe(std::string(kReducedShapeArgs) +
                 " --kernel-tuning cols_per_wg=4096 --no-timing --route-pattern six_local --out " + path("out"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("cannot run work-groups of 32768 work-items (16 x 2048 x 1) with the kernel tuning "
                            "'cols_per_wg=4096,"),
              std::string::npos)
        << r.output;
    EXPECT_FALSE(fs::exists(path("out/card0.json")));
}

// A card edited by hand or damaged (a value of another type, a key deleted, a key no writer
// writes) is refused, exit 2, naming the file and the JSON pointer of its first problem: never
// drawn as if whole (a card lacking keys once drew with parts silently missing). The real card
// beside it, and the unedited one, draw.
TEST_F(ZeProbe, GivenACardThatBreaksItsSchema_WhenReported_ThenExit2NamingTheFileAndThePath) {
    const std::string data = ZP_TOOLS_TEST_DATA;
    const std::string three = "/card0_h200_stream_gate.json", two = "/card0_pocl_fixture.json";
    struct Edit {
        std::string kept;
        std::function<void(nlohmann::json&)> apply;
        std::string problem;  // after "<file>: "
    };
    const std::string of3 = "not a card of schema 3 as ze-probe writes it (docs/card.schema.json): ";
    const std::string of2 = "not a card of schema 2 as ze-probe writes it (docs/card-2.schema.json): ";
    for (const Edit& e : std::vector<Edit>{
             {three, [](auto& c) { c["card"] = "x"; }, of3 + "/card: \"x\" is not of type \"integer\""},
             {two, [](auto& c) { c["correctness"]["passed"] = "x"; },
              of2 + "/correctness/passed: \"x\" is not of type \"integer\""},
             {three, [](auto& c) { c["gate"]["candidates"][0] = "x"; },
              of3 + "/gate/candidates/0: \"x\" is not of type \"object\""},
             {three, [](auto& c) { c["gate"]["candidates"][0]["verdict"].erase("line"); },
              of3 + "/gate/candidates/0/verdict/line: missing (a required key)"},
             {three, [](auto& c) { c.erase("timings"); }, of3 + "/timings: missing (a required key)"},
             {three, [](auto& c) { c["config"]["hiden"] = 4096; }, of3 + "/config/hiden: unknown key (known here: "},
             {two, [](auto& c) { c["launch_floor"]["variants"]["baseline"]["colour"] = "red"; },
              of2 + "/launch_floor/variants/baseline/colour: unknown key (known here: "},
         }) {
        nlohmann::json card = nlohmann::json::parse(std::ifstream(data + e.kept));
        e.apply(card);
        std::ofstream(path("bad.json")) << card.dump();
        fs::remove(path("r.html"));
        const ProbeRun r =
            runProbe("report " + data + "/card0_h200_no_timing.json " + path("bad.json") + " -o " + path("r.html"));
        SCOPED_TRACE(e.problem + "\n" + r.output);
        EXPECT_EQ(r.exitCode, 2);
        EXPECT_NE(r.output.find("ze-probe: error: " + path("bad.json") + ": " + e.problem), std::string::npos);
        EXPECT_EQ(r.output.find("internal error"), std::string::npos);
        EXPECT_FALSE(fs::exists(path("r.html")));
    }
    for (const std::string& kept : {three, two}) {
        const ProbeRun r = runProbe("report " + data + kept + " -o " + path("r.html"));
        EXPECT_EQ(r.exitCode, 0) << r.output;
        EXPECT_TRUE(fs::exists(path("r.html")));
    }
}

// The report puts each saving also as decode speed when the card carries it.
TEST_F(ZeProbe, GivenACardWithDecodeGains_WhenReported_ThenTheOverviewShowsTokensPerSecond) {
    std::ifstream in(std::string(ZP_TOOLS_TEST_DATA) + "/card1_future_verdicts.json");
    nlohmann::json card = nlohmann::json::parse(in);
    card["gate"]["reference_step_ms"] = 15.79;
    auto& cand = card["gate"]["candidates"][0];
    cand["reference_step_ms"] = 15.79;
    cand["projections"][0]["decode_gain_tok_s"] = {{"median", 2.0709}, {"ci_low", 1.5}, {"ci_high", 2.5}};
    std::ofstream(path("c.json")) << card.dump();
    const ProbeRun r = runProbe("report " + path("c.json") + " -o " + path("r.html"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    std::ifstream f(path("r.html"));
    const std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(
        html.find(R"(<small class="tok" title="against a decode step of 15.79 ms per token">+2.07 tok/s</small>)"),
        std::string::npos);
}

// A --device that names no device leads with what was wrong and the choices, not the Level Zero
// code.
TEST_F(ZeProbe, GivenADeviceIndexOutOfRange_WhenRun_ThenTheFirstLineNamesItAndTheChoices) {
    const ProbeRun r = runProbe("--device 7 --no-timing --out " + path("out"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_EQ(r.output.rfind("ze-probe: error: --device 7: index out of range; valid choices: \"\" (first Intel GPU, "
                             "else first zecl device), \"intel\", \"zecl\", 0..",
                             0),
              0u)
        << r.output;
    EXPECT_NE(r.output.find("ZE_RESULT_ERROR_INVALID_ARGUMENT"), r.output.find('\n')) << "the code is not first";
}

TEST_F(ZeProbe, GivenListDevicesJson_ThenEachDeviceAsTheTextListNamesIt) {
    const ProbeRun text = runProbe("--list-devices");
    const ProbeRun r = runProbe("--list-devices --json");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const nlohmann::json all = nlohmann::json::parse(r.output);
    ASSERT_TRUE(all.is_array());
    ASSERT_FALSE(all.empty());
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto& d = all[i];
        EXPECT_EQ(d["index"], i);
        EXPECT_NE(text.output.find("[" + std::to_string(i) + "] " + d["name"].get<std::string>()), std::string::npos)
            << d.dump() << "\n"
            << text.output;
        EXPECT_GT(d["compute_units"].get<int>(), 0);
        EXPECT_GT(d["memory_bytes"].get<std::uint64_t>(), 0u);
        EXPECT_GT(d["max_group_size"].get<int>(), 0);
        EXPECT_TRUE(d["driver"] == "zecl" || d["driver"] == "intel" || d["driver"] == "other") << d.dump();
    }
    EXPECT_EQ(all[0]["driver"], "zecl");  // this machine: zecl over PoCL
    EXPECT_EQ(all[0]["type"], "cpu");
    const ProbeRun alone = runProbe("--json --device host");
    EXPECT_EQ(alone.exitCode, 2) << alone.output;
    EXPECT_NE(alone.output.find("ze-probe: error: --json goes with --list-devices"), std::string::npos) << alone.output;
}

TEST_F(ZeProbe, GivenSavedCards_WhenReported_ThenHtmlWithTablesAndSvg_AndBadExtensionRejected) {
    const std::string data = ZP_TOOLS_TEST_DATA;
    const std::string cards = data + "/card0_pocl_fixture.json " + data + "/card0_h200_no_timing.json " + data +
                              "/card1_future_verdicts.json";
    ProbeRun r = runProbe("report " + cards + " -o " + path("r.html"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    std::ifstream f(path("r.html"));
    const std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(html.find("<table class=\"overview\">"), std::string::npos);
    EXPECT_EQ(html.find("<pre"), std::string::npos);
    EXPECT_NE(html.find("class=\"onbar\""), std::string::npos);
    EXPECT_NE(html.find("class=\"pass\""), std::string::npos);
    EXPECT_NE(html.find("class=\"fail\""), std::string::npos);
    EXPECT_NE(html.find("Launch floor"), std::string::npos);
    EXPECT_NE(html.find("Roofline fraction"), std::string::npos);
    EXPECT_NE(html.find("gemm2_combine"), std::string::npos);           // per-kernel breakdown
    EXPECT_NE(html.find("no timing in this card"), std::string::npos);  // the H200 card ran --no-timing

    r = runProbe("report " + cards + " -o " + path("r.svg"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    std::ifstream g(path("r.svg"));
    const std::string svg((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);

    r = runProbe("report " + data + "/card0_pocl_fixture.json -o " + path("r.png"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("unknown report format '.png'"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(path("r.png")));
}

// `ze-probe report --sweep X.jsonl` alone renders the sweep (plots and verdicts); with
// neither cards nor a sweep, or a sweep of no rows, it is bad input naming what is missing.
TEST_F(ZeProbe, GivenASweepAlone_WhenReported_ThenItRenders_AndNothingToReportIsExit2) {
    const std::string data = ZP_TOOLS_TEST_DATA;
    ProbeRun r = runProbe("report --sweep " + data + "/sweep_hidden.jsonl -o " + path("sweep.html"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("0 cards, 12 sweep points"), std::string::npos) << r.output;
    std::ifstream f(path("sweep.html"));
    const std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(html.find("<table class=\"sweep\">"), std::string::npos);
    EXPECT_NE(html.find("class=\"sweep-plot\" data-x=\"hidden\""), std::string::npos);
    EXPECT_NE(html.find("<td class=\"onbar\">on_the_bar</td>"), std::string::npos);

    r = runProbe("report -o " + path("none.html"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("nothing to report: give card<N>.json files, --sweep FILE.jsonl, or both"),
              std::string::npos)
        << r.output;
    std::ofstream(path("empty.jsonl")).flush();
    r = runProbe("report --sweep " + path("empty.jsonl") + " -o " + path("empty.html"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("no sweep row in the file"), std::string::npos) << r.output;
    r = runProbe("report --sweep " + data + "/sweep_hidden.jsonl -o " + path("sweep.svg"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_FALSE(fs::exists(path("none.html")));
    EXPECT_FALSE(fs::exists(path("empty.html")));
}

// The stream tile (kernels_cl/common/zp_gemv_stream.h) chosen from the command line: built from
// zecl's source bundle, every case of the pattern bit-exact, and the card records the tiles.
// two_launch, not every variant: the scheduler's tilings check every variant on stream tiles bit
// for bit, and one_launch with a stream tile takes PoCL minutes to build optimised (label full,
// docs/usage.md "Tests and CI").
TEST_F(ZeProbe, GivenStreamTiles_WhenRunOnZecl_ThenTwoLaunchAndTheReferencesPassAndTheCardNamesTheTiles) {
    const std::string tiles = "cols_per_wg=64,cols_per_item=8,rows_per_pass=1,gemm_tile=2,stream_split=4";
    const ProbeRun r = runProbe(
        "--set hidden=1024 --set intermediate=544 --device zecl --no-timing --route-pattern "
        "cross_row_overlap --variant two_launch --kernel-tuning " +
        tiles + " --out " + path("out"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    // 12 cases x 2 variants (m1_oracle, the reference, and two_launch)
    EXPECT_NE(r.output.find("total: 24 passed, 0 failed, 0 skipped"), std::string::npos) << r.output;
    const std::string described =
        "cols_per_wg=64,cols_per_item=8,rows_per_pass=1,e2m1_decode=1,gemm_tile=2,stream_split=4";
    EXPECT_NE(r.output.find("tiles " + described), std::string::npos) << r.output;
    const auto j = readCard(path("out/card0.json"));
    EXPECT_EQ(j["device"]["kernel_tuning"], described);
}

TEST_F(ZeProbe, GivenOutOfRangeExpertId_WhenRun_ThenRejectedNamingTheRoute) {
    const auto s = reducedShape();
    auto c = probe::makeCase(s, probe::RoutePattern::SixLocal, 0, 1, nullptr);
    c.inputs.topkIds[1 * 6 + 4] = 48;  // E = 48: ids are 0..47
    probe::writeSafetensors(path("in.safetensors"), probe::inputTensors(s, c.inputs));
    const ProbeRun r = runProbe(std::string(kReducedShapeArgs) + " --device host --inputs " + path("in.safetensors"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("topk_ids[1][4] = 48"), std::string::npos) << r.output;
}

// topk_ids as torch.topk writes them (I64): the chain is recorded with the int64 route readers,
// the case passes bit for bit, and the dump keeps the dtype.
TEST_F(ZeProbe, GivenI64TopkIds_WhenRunOnZecl_ThenTheInt64ChainPassesAndTheDumpKeepsI64) {
    const auto s = reducedShape();
    auto weights = probe::makeRandomWeights(s, 3);
    const auto c = probe::makeCase(s, probe::RoutePattern::CrossRowOverlap, 10, 77, &weights);
    probe::writeSafetensors(path("in.safetensors"), probe::inputTensors(s, c.inputs, probe::DType::I64));
    probe::writeSafetensors(path("w.safetensors"), probe::weightsTensors(s, weights, ""));
    const ProbeRun r =
        runProbe(std::string(kReducedShapeArgs) + " --device zecl --variant two_launch --weights " +
                 path("w.safetensors") + " --inputs " + path("in.safetensors") + " --dump " + path("dump.safetensors"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("topk_ids int64"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("passed"), std::string::npos) << r.output;
    const auto dump = probe::readSafetensors(path("dump.safetensors"));
    const auto ids = probe::tensorValues<std::int64_t>(probe::findTensor(dump, "topk_ids", "dump"), probe::DType::I64,
                                                       {2, 6}, "topk_ids");
    EXPECT_EQ(std::vector<std::int32_t>(ids.begin(), ids.end()), c.inputs.topkIds);
    const auto want = oracle::runChain(s, weights, c.inputs, oracle::buildSiluTable(1.0));
    EXPECT_EQ(probe::tensorValues<oracle::bf16_t>(probe::findTensor(dump, "out", "dump"), probe::DType::BF16, {2, 128},
                                                  "out"),
              want.out);
}

// A FIFO with no writer once hung every reader of results (an ifstream waits for a writer):
// each is read as a bounded regular file now, and a FIFO is named as such, exit 2.
TEST_F(ZeProbe, GivenFifosWhereResultsAreRead_WhenReportedOrMerged_ThenExit2NotARegularFile) {
    const std::string card = std::string(ZP_TOOLS_TEST_DATA) + "/card0_pocl_fixture.json";
    for (const char* d : {"g1", "g2", "s1", "s2"}) fs::create_directories(dir / d);
    ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0644), 0);
    ASSERT_EQ(::mkfifo(path("g1/card0.json").c_str(), 0644), 0);
    fs::copy_file(card, dir / "g2" / "card0.json");
    std::ofstream(dir / "s1" / "t.plan.json")
        << R"({"sweep": "t", "axes": ["seed"], "shard": "1/1", "settings": {}, "device": "", "points": ["seed=1"]})";
    ASSERT_EQ(::mkfifo(path("s1/t.jsonl").c_str(), 0644), 0);
    ASSERT_EQ(::mkfifo(path("s2/t.plan.json").c_str(), 0644), 0);
    for (const std::string& args :
         {"report " + path("fifo") + " -o " + path("r.html"),
          "report " + card + " --sweep " + path("fifo") + " -o " + path("x.html"),
          "gate-repeat-merge " + path("g1") + " " + path("g2") + " -o " + path("gm"),
          "sweep-merge " + path("s1") + " -o " + path("m1"), "sweep-merge " + path("s2") + " -o " + path("m2")}) {
        const ProbeRun r = runProbe(args);
        EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.output;
        EXPECT_NE(r.output.find("a FIFO, not a regular file"), std::string::npos) << args << "\n" << r.output;
    }
}

// gate-repeat-merge once compared runs of different configs as repeats of one gate, and counted
// one run given twice as two ("12 of 12 (100.0%)"); report drew a card given twice twice.
TEST_F(ZeProbe, GivenRunsOfDifferentGatesOrOneTwice_WhenGateRepeatMergedOrReported_ThenExit2NamingThem) {
    const std::string data = ZP_TOOLS_TEST_DATA;
    std::ifstream in(data + "/card0_h200_stream_gate.json");
    const nlohmann::json card = nlohmann::json::parse(in);
    auto run = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
        fs::create_directories(dir / name);
        nlohmann::json c = card;
        edit(c);
        std::ofstream(dir / name / "card0.json") << c.dump();
        return path(name);
    };
    const std::string r1 = run("r1", [](nlohmann::json&) {}), r2 = run("r2", [](nlohmann::json&) {});
    const std::string hidden = run("hidden", [](nlohmann::json& c) { c["config"]["hidden"] = 2048; });
    const std::string device = run("device", [](nlohmann::json& c) { c["device"]["name"] = "another GPU"; });
    const std::string fewer = run("fewer", [](nlohmann::json& c) { c["gate"]["candidates"].erase(0); });

    ProbeRun r = runProbe("gate-repeat-merge " + r1 + " " + r2 + " -o " + path("ok"));
    EXPECT_EQ(r.exitCode, 0) << r.output;
    struct Bad {
        std::string args, fragment;
    };
    for (const Bad& b : std::vector<Bad>{
             {r1 + " " + hidden, r1 + " and " + hidden +
                                     " are not runs of one gate (card0.json.config.hidden: 4096 in " + r1 +
                                     ", 2048 in " + hidden},
             {r1 + " " + r2 + " " + device, "card0.json.device.name: "},
             {r1 + " " + fewer, "card0.json.compared."},
             {r1 + " " + r1 + "/", r1 + " and " + r1 + "/ are the same directory: give each once"},
         }) {
        r = runProbe("gate-repeat-merge " + b.args + " -o " + path("bad"));
        EXPECT_EQ(r.exitCode, 2) << b.args << "\n" << r.output;
        EXPECT_NE(r.output.find(b.fragment), std::string::npos) << b.args << "\n" << r.output;
    }
    // an edited card: refused naming the file and the key, exit 2
    const std::string edited = run("edited", [](nlohmann::json& c) { c["gate"]["candidates"][0].erase("verdict"); });
    r = runProbe("gate-repeat-merge " + r1 + " " + edited + " -o " + path("bad"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("ze-probe: error: " + edited +
                            "/card0.json: not a card of schema 3 as ze-probe writes it (docs/card.schema.json): "
                            "/gate/candidates/0/verdict: missing (a required key)"),
              std::string::npos)
        << r.output;
    // an older ze-probe's card (schema 2, whole): its gate has no verdicts to merge, named, exit 2
    fs::create_directories(dir / "old");
    fs::copy_file(data + "/card0_pocl_fixture.json", dir / "old" / "card0.json");
    r = runProbe("gate-repeat-merge " + r1 + " " + path("old") + " -o " + path("bad"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(
        r.output.find("gate-repeat-merge: " + path("old") + ": a card without the gate as this ze-probe writes it ("),
        std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
    r = runProbe("report " + r1 + "/card0.json " + r1 + "/./card0.json -o " + path("twice.html"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("report: " + r1 + "/card0.json and " + r1 + "/./card0.json are the same file"),
              std::string::npos)
        << r.output;
}

TEST_F(ZeProbe, GivenAnI64IdBeyondInt32_WhenRun_ThenRejectedNamingTheWholeId) {
    const auto s = reducedShape();
    const auto c = probe::makeCase(s, probe::RoutePattern::SixLocal, 0, 1, nullptr);
    auto t = probe::inputTensors(s, c.inputs, probe::DType::I64);
    std::vector<std::int64_t> ids(c.inputs.topkIds.begin(), c.inputs.topkIds.end());
    ids[3] = (std::int64_t(1) << 40) + ids[3];  // its low 32 bits still a valid id
    t["topk_ids"] = probe::makeTensor(probe::DType::I64, {2, 6}, ids);
    probe::writeSafetensors(path("in.safetensors"), t);
    const ProbeRun r = runProbe(std::string(kReducedShapeArgs) + " --device host --inputs " + path("in.safetensors"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("topk_ids[0][3] = " + std::to_string(ids[3]) + " is not an expert id in [0, 48)"),
              std::string::npos)
        << r.output;
}

TEST_F(ZeProbe, GivenInputsOfAnotherShape_WhenRun_ThenRejectedNamingTheTensor) {
    const auto s = reducedShape();
    const auto c = probe::makeCase(s, probe::RoutePattern::SixLocal, 0, 1, nullptr);
    probe::writeSafetensors(path("in.safetensors"), probe::inputTensors(s, c.inputs));
    const ProbeRun r = runProbe("--set hidden=256 --set intermediate=64 --set experts=48 --device host --inputs " +
                                path("in.safetensors"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("hidden"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("[2, 256]"), std::string::npos) << r.output;
}

TEST_F(ZeProbe, GivenATruncatedWeightsFile_WhenRun_ThenCleanErrorNotACrash) {
    {
        std::ofstream f(path("w.safetensors"), std::ios::binary);
        f << "\x40\x00\x00\x00\x00\x00\x00\x00{\"gate_up_proj_blocks\":";
    }
    const ProbeRun r = runProbe(std::string(kReducedShapeArgs) + " --device host --weights " + path("w.safetensors"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("w.safetensors"), std::string::npos) << r.output;
}
