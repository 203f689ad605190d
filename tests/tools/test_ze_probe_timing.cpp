// ze-probe's timing, gate, outputs and sweeps end to end on a device (zecl over PoCL in CI:
// ZE_ENABLE_ALT_DRIVERS names the built libze_zecl.so), at a reduced shape.
#include <gtest/gtest.h>

#include "probe_support.hpp"

#include <algorithm>
#include <set>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kShape = kReducedShapeArgs;  // probe_support.hpp

json readJson(const fs::path& p) {
    std::ifstream f(p);
    return json::parse(f);
}

std::vector<std::string> lines(const fs::path& p) {
    std::ifstream f(p);
    std::vector<std::string> out;
    for (std::string l; std::getline(f, l);)
        if (!l.empty()) out.push_back(l);
    return out;
}

std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void expectSummary(const json& s, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(s.is_object()) << s;
    for (const char* k : {"median", "p05", "p95", "min", "max", "mean", "stddev"}) {
        ASSERT_TRUE(s.contains(k)) << k;
        EXPECT_TRUE(s[k].is_number()) << k;
    }
    EXPECT_GT(s["median"].get<double>(), 0.0);
    EXPECT_LE(s["p05"].get<double>(), s["median"].get<double>());
    EXPECT_LE(s["median"].get<double>(), s["p95"].get<double>());
}

class ZeProbeTiming : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("zp-timing-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }
    std::string path(const std::string& name) const { return (dir / name).string(); }
    fs::path dir;
};

// One dedicated-timing run of every pattern, shared by the tests that read its files.
class ZeProbeTimedRun : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir = fs::temp_directory_path() / ("zp-timed-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        run = runProbe(kShape + " --route-pattern all --repeats 2 --warmup 1 --out " + dir.string() + " --trace " +
                       (dir / "trace.json").string() + " --report " + (dir / "report.svg").string());
    }
    static void TearDownTestSuite() { fs::remove_all(dir); }
    static inline fs::path dir;
    static inline ProbeRun run;
};

}  // namespace

TEST_F(ZeProbeTimedRun, GivenRepeats_WhenRun_ThenExitZeroAndGateTablePrinted) {
    ASSERT_EQ(run.exitCode, 0) << run.output;
    EXPECT_NE(run.output.find("in 5 blocks, each on chains rebuilt as a fresh process builds them, 1 warm-up + 1 "
                              "timed rounds a block, every variant once per round in an order rotated"),
              std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find("paired_epilogue vs baseline: pass = 95% CI lower end >= 0.50 ms, fail = upper end "
                              "below it, else on the bar"),
              std::string::npos);
    EXPECT_NE(run.output.find("verdicts:"), std::string::npos);
    // The saving also as decode speed against gate.reference_step_ms.
    EXPECT_NE(run.output.find("  decode speed: the median saving against a reference step of 15.79 ms per token "
                              "(63.33 tok/s; gate.reference_step_ms): the bar, 0.50 ms, is +2.07 tok/s"),
              std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find(" tok/s | "), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("launch floor (all_remote"), std::string::npos);
    EXPECT_NE(run.output.find("roofline: bandwidth"), std::string::npos);
}

TEST_F(ZeProbeTimedRun, GivenRepeats_WhenRun_ThenCardJsonHasEveryTimingFieldTyped) {
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const json j = readCard((dir / "card0.json").string());
    EXPECT_EQ(j["schema"], 3);
    EXPECT_EQ(j["contract"], 1);
    EXPECT_TRUE(j["device"]["name"].is_string());
    EXPECT_TRUE(j["device"]["driver"].is_string());
    EXPECT_EQ(j["config"]["hidden"], 128);
    EXPECT_EQ(j["correctness"]["failed"], 0);
    EXPECT_EQ(j["gate"]["reference_step_ms"], 15.79);
    for (const auto& cand : j["gate"]["candidates"]) {
        EXPECT_EQ(cand["reference_step_ms"], 15.79);
        for (const auto& p : cand["projections"]) {
            // Each end of the interval as tokens per second: 1000/(15.79 - saving) - 1000/15.79; null
            // where the saving is not shorter than the step (on a CPU a saving is milliseconds).
            for (const char* end : {"median", "ci_low", "ci_high"}) {
                const std::string ms = std::string(end) + "_ms";
                if (!p[ms].is_number()) continue;
                const double saving = p[ms].get<double>();
                const auto& gain = p["decode_gain_tok_s"][end];
                if (saving >= 15.79) {
                    EXPECT_TRUE(gain.is_null()) << p.dump();
                    continue;
                }
                ASSERT_TRUE(gain.is_number()) << p.dump();
                EXPECT_NEAR(gain.get<double>(), 1000.0 / (15.79 - saving) - 1000.0 / 15.79, 1e-9) << p.dump();
            }
        }
    }

    const json& t = j["timings"];
    EXPECT_EQ(t["mode"], "dedicated");
    EXPECT_EQ(t["repeats"], 2);
    EXPECT_EQ(t["warmup"], 1);
    // --repeats 2 over the default 5 blocks: one round a block (the blocks are at least 5, §8).
    EXPECT_EQ(t["blocks"], 5);
    EXPECT_EQ(t["rounds_per_block"], 1);
    const double tick = j["device"]["timer_resolution_ns"].get<double>();
    EXPECT_GT(tick, 0.0);
    EXPECT_GT(t["bandwidth"]["bytes_per_s"].get<double>(), 0.0);
    EXPECT_TRUE(t["bandwidth"]["source"].is_string());
    ASSERT_EQ(t["patterns"].size(), 7u);
    for (const auto& [pattern, p] : t["patterns"].items()) {
        SCOPED_TRACE(pattern);
        EXPECT_EQ(p["case"], pattern + "/v0");
        EXPECT_TRUE(p["bytes"].is_number_unsigned());
        EXPECT_TRUE(p["touched_experts"].is_number_integer());
        EXPECT_EQ(p["tick_ns"].get<double>(), tick);
        EXPECT_EQ(p["block_ends"], json::array({1, 2, 3, 4, 5}));
        // One B for the run, from the timer: the fastest chain's sample spans >= 200 ticks.
        EXPECT_EQ(p["batch"], t["patterns"]["all_remote"]["batch"]);
        ASSERT_EQ(p["variants"].size(), 8u);
        for (const auto& [variant, v] : p["variants"].items()) {
            SCOPED_TRACE(variant);
            EXPECT_GE(v["launches"].get<int>(), 1);
            expectSummary(v["device_ns"], "device_ns");
            expectSummary(v["host_ns"], "host_ns");
            // Host wall time of execute + synchronize includes the device time.
            EXPECT_GE(v["host_ns"]["median"].get<double>(), v["device_ns"]["median"].get<double>() * 0.99);
            for (const char* k : {"device_ns", "host_ns"}) {
                ASSERT_EQ(v["samples"][k].size(), 5u) << k;
                for (const auto& x : v["samples"][k]) EXPECT_TRUE(x.is_number()) << k;
            }
            ASSERT_EQ(v["kernels"].size(), v["launches"].get<std::size_t>());
            for (const auto& k : v["kernels"]) {
                EXPECT_TRUE(k["kernel"].is_string());
                EXPECT_TRUE(k["median_ns"].is_number());
            }
            EXPECT_TRUE(v["roofline_fraction"].is_number());
        }
    }
    {
        const int batch = t["patterns"]["all_remote"]["batch"].get<int>();
        double fastest = 1e300;
        for (const auto& [pattern, p] : t["patterns"].items())
            for (const auto& [variant, v] : p["variants"].items())
                fastest = std::min(fastest, v["device_ns"]["min"].get<double>());
        EXPECT_GE(batch * fastest, 200 * tick * 0.8);  // 0.8: warm-ups chose B, the timed rounds ran faster
        if (fastest >= 200 * tick * 1.25) {
            EXPECT_EQ(batch, 1) << "B is 1 when the fastest execution spans 200 ticks";
        }
    }
    // source_direct removes remap_rows: one launch fewer than baseline.
    const json& floor = j["launch_floor"];
    EXPECT_EQ(floor["pattern"], "all_remote");
    EXPECT_EQ(floor["variants"]["source_direct"]["launches_removed"], 1);
    EXPECT_TRUE(floor["variants"]["baseline"]["device_us_per_launch"].is_number());
    EXPECT_TRUE(floor["variants"]["source_direct"]["saving_device_us"].is_number());
    // two_launch: A and B only.
    EXPECT_EQ(floor["variants"]["two_launch"]["launches"], 2);
    EXPECT_EQ(floor["variants"]["two_launch"]["launches_removed"], 4);
    // one_launch: one cooperative kernel.
    EXPECT_EQ(floor["variants"]["one_launch"]["launches"], 1);
    EXPECT_EQ(floor["variants"]["one_launch"]["launches_removed"], 5);

    const json& proj = j["projections"];
    for (const char* c :
         {"gemm2_loader_fused", "source_direct", "paired_epilogue", "paired_direct", "two_launch", "one_launch"}) {
        SCOPED_TRACE(c);
        ASSERT_EQ(proj[c].size(), 7u);
        EXPECT_TRUE(proj[c]["six_local"]["device"]["ci_low_ms"].is_number());
        EXPECT_TRUE(proj[c]["six_local"]["host"]["median_ms"].is_number());
        EXPECT_EQ(proj[c]["six_local"]["pairs"], 5);
        EXPECT_EQ(proj[c]["six_local"]["blocks"], 5);
    }
    EXPECT_FALSE(proj.contains("baseline"));
    EXPECT_FALSE(proj.contains("m1_oracle"));

    const json& gate = j["gate"];
    EXPECT_EQ(gate["layers"], 43);
    EXPECT_EQ(gate["min_saving_ms"], 0.5);
    ASSERT_EQ(gate["candidates"].size(), 6u);
    for (const auto& c : gate["candidates"]) {
        SCOPED_TRACE(c["candidate"].get<std::string>());
        EXPECT_TRUE(c["verdict"]["pass"].is_boolean());
        EXPECT_TRUE(c["verdict"]["worst_pattern"].is_string());
        EXPECT_TRUE(c["verdict"]["line"].is_string());
        EXPECT_EQ(c["correctness"]["passed"], 84);
        ASSERT_EQ(c["projections"].size(), 7u);
        for (const auto& p : c["projections"]) {
            EXPECT_LE(p["ci_low_ms"].get<double>(), p["ci_high_ms"].get<double>());
            const double lo = p["ci_low_ms"].get<double>(), hi = p["ci_high_ms"].get<double>();
            EXPECT_EQ(p["verdict"], lo >= 0.5 ? "pass" : hi < 0.5 ? "fail" : "on_the_bar");
            EXPECT_EQ(p["passes"], lo >= 0.5);
            EXPECT_EQ(p["blocks"], 5);
        }
    }
}

TEST_F(ZeProbeTimedRun, GivenTraceOption_WhenRun_ThenTraceParsesWithOneTrackPerVariant) {
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const json t = readJson(dir / "trace.json");
    std::map<int, std::string> tracks;
    std::set<int> blocks;
    std::size_t complete = 0;
    for (const auto& e : t["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name") tracks[e["tid"].get<int>()] = e["args"]["name"];
        if (e["ph"] == "X") {
            ++complete;
            EXPECT_GE(e["dur"].get<double>(), 0.0);
            EXPECT_GE(e["ts"].get<double>(), 0.0);
            EXPECT_TRUE(e["args"]["pattern"].is_string());
            blocks.insert(e["args"]["block"].get<int>());
        }
    }
    // Every block is there: the chains were rebuilt 5 times per pattern and timed each time
    // (and the case set's 84 cases passed on the chains the last block left, see above).
    EXPECT_EQ(blocks, (std::set<int>{0, 1, 2, 3, 4}));
    EXPECT_EQ(tracks.size(), 8u);
    // 7 patterns x 5 blocks x 1 round x (sum of launches of the 8 variants).
    const json card = readCard((dir / "card0.json").string());
    std::size_t launches = 0;
    for (const auto& [v, x] : card["timings"]["patterns"]["six_local"]["variants"].items())
        launches += x["launches"].get<std::size_t>();
    EXPECT_EQ(complete, 7u * 5u * launches);
}

TEST_F(ZeProbeTimedRun, GivenReportOption_WhenRun_ThenSvgIsWellFormedAndNamesEveryCandidate) {
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const std::string svg = slurp(dir / "report.svg");
    ASSERT_NE(svg.find("<svg"), std::string::npos);
    EXPECT_NE(svg.rfind("</svg>"), std::string::npos);
    EXPECT_EQ(std::count(svg.begin(), svg.end(), '<'), std::count(svg.begin(), svg.end(), '>'));
    for (const char* c :
         {"gemm2_loader_fused", "source_direct", "paired_epilogue", "paired_direct", "two_launch", "one_launch"})
        EXPECT_NE(svg.find(c), std::string::npos) << c;
}

TEST_F(ZeProbeTiming, GivenCpuDeviceAndNoRepeats_WhenRun_ThenTheCaseSetIsTimedWithFirstCaseDropped) {
    const ProbeRun r = runProbe(kShape + " --route-pattern six_local --out " + path("out"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const json j = readCard((dir / "out/card0.json").string());
    if (j["device"]["type"] == "gpu") GTEST_SKIP() << "a GPU gets dedicated rounds by default";
    EXPECT_EQ(j["timings"]["mode"], "case_set");
    EXPECT_EQ(j["timings"]["patterns"]["six_local"]["variants"]["baseline"]["samples"]["device_ns"].size(), 11u);
    EXPECT_EQ(j["gate"]["candidates"].size(), 6u);
    EXPECT_NE(r.output.find("the case set's executions were timed"), std::string::npos) << r.output;
}

TEST_F(ZeProbeTiming, GivenBlockIsolationProcess_WhenRun_ThenEveryBlockAfterTheFirstCameFromItsOwnProcess) {
    // Two cards one after another (a CPU has one device), 3 blocks of 2 rounds, paired_direct
    // against baseline (m1_oracle comes along): the children's samples join the card's blocks.
    const ProbeRun r = runProbe(kShape +
                                " --route-pattern all --variant paired_direct --repeats 6 --warmup 1 --blocks 3 "
                                "--block-isolation process --gate-budget 1 --cards 0,2 --out " +
                                path("out"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("each other one in a fresh ze-probe process"), std::string::npos) << r.output;
    // Spread over the run: block 2 of 3 between the patterns' cases, block 3 after the last.
    const std::size_t second = r.output.find("timing block 2 of 3 (fresh process)");
    ASSERT_NE(second, std::string::npos) << r.output;
    EXPECT_NE(r.output.find("within_row_duplicate/v11", 0), std::string::npos);
    EXPECT_LT(r.output.find("within_row_duplicate/v11"), second) << "after 4 of 7 patterns";
    EXPECT_GT(r.output.find("all_duplicate/v0"), second) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out/blocks")) << "the children's files are removed once read";
    std::set<long> seen;
    for (const char* card : {"card0.json", "card2.json"}) {
        SCOPED_TRACE(card);
        const json j = readCard((dir / "out" / card).string());
        EXPECT_EQ(j["timings"]["block_isolation"], "process");
        for (const auto& [pattern, p] : j["timings"]["patterns"].items()) {
            SCOPED_TRACE(pattern);
            const auto ends = p["block_ends"].get<std::vector<int>>();
            const auto pids = p["block_pids"].get<std::vector<long>>();
            ASSERT_GE(ends.size(), 3u);  // the gate budget may add blocks to undecided patterns
            ASSERT_EQ(pids.size(), ends.size());
            for (std::size_t b = 0; b < ends.size(); ++b) EXPECT_EQ(ends[b], int(2 * (b + 1))) << "block " << b;
            // The first block is the run's own; each later one a process of its own, never reused.
            for (std::size_t b = 1; b < pids.size(); ++b) {
                EXPECT_NE(pids[b], pids[0]) << "block " << b;
                for (std::size_t c = 1; c < b; ++c) EXPECT_NE(pids[b], pids[c]) << "blocks " << b << ", " << c;
            }
            for (const auto& [variant, v] : p["variants"].items())
                EXPECT_EQ(v["samples"]["device_ns"].size(), ends.size() * 2) << variant;
            seen.insert(pids.begin() + 1, pids.end());
        }
    }
    EXPECT_GE(seen.size(), 4u) << "two children per card at least";
}

TEST_F(ZeProbeTiming, GivenBlockIsolationProcessOnTheCaseSetTiming_WhenRun_ThenRefusedNamingTheWayOut) {
    const ProbeRun devices = runProbe("--list-devices");
    ASSERT_EQ(devices.exitCode, 0) << devices.output;
    if (devices.output.find("  cpu  ") == std::string::npos)
        GTEST_SKIP() << "the device is not a CPU: it times dedicated rounds by default";
    const ProbeRun r = runProbe(kShape + " --route-pattern six_local --block-isolation process --out " + path("out"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("give --repeats"), std::string::npos) << r.output;
}

TEST_F(ZeProbeTiming, GivenGateRepeat_WhenRunAndMergedAgain_ThenOneTableOfEveryRun) {
    const ProbeRun r = runProbe(
        kShape + " --route-pattern all_duplicate --variant paired_direct --gate-repeat 2 --out " + path("rep"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const json table = readJson(dir / "rep/gate_repeat.json");
    for (const char* run : {"rep/repeat-1/card0.json", "rep/repeat-2/card0.json"})
        EXPECT_EQ(readCard((dir / run).string())["gate"]["candidates"].size(), 1u) << run;
    EXPECT_NE(r.output.find("paired_direct"), std::string::npos) << r.output;
    // each run's verdicts as it ends, before the table of all runs
    for (const char* line : {"gate repeat: run 1 of 2: paired_direct ", "gate repeat: run 2 of 2: paired_direct "})
        EXPECT_LT(r.output.find(line), r.output.find("gate repeated in 2 fresh processes")) << line << "\n" << r.output;

    // The same runs tabled again from their directories (two calls' runs, say) give the same table.
    const ProbeRun m = runProbe("gate-repeat-merge " + path("rep/repeat-1") + " " + path("rep/repeat-2") + " -o " +
                                path("merged") + " --report " + path("merged/repeat.html"));
    ASSERT_EQ(m.exitCode, 0) << m.output;
    EXPECT_EQ(readJson(dir / "merged/gate_repeat.json"), table);
    EXPECT_TRUE(fs::exists(dir / "merged/repeat.html"));

    for (const std::string& bad :
         {"gate-repeat-merge " + path("rep/repeat-1"),  // one run: nothing to compare
          "gate-repeat-merge " + path("rep/repeat-1") + " " + path("nowhere"),
          "gate-repeat-merge " + path("rep/repeat-1") + " " + path("merged"),  // no card
          "gate-repeat-merge " + path("rep/repeat-1") + " " + path("rep/repeat-2") + " --report " + path("x.png")}) {
        const ProbeRun b = runProbe(bad);
        EXPECT_EQ(b.exitCode, 2) << bad << "\n" << b.output;
        EXPECT_NE(b.output.find("ze-probe: error:"), std::string::npos) << b.output;
    }
}

TEST_F(ZeProbeTiming, GivenNoTiming_WhenRun_ThenNoGateAndSaysSo) {
    const ProbeRun r = runProbe(kShape + " --route-pattern all_duplicate --no-timing --out " + path("out"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("timing: skipped (--no-timing)"), std::string::npos) << r.output;
    const json j = readCard((dir / "out/card0.json").string());
    EXPECT_TRUE(j["timings"].is_null());
    EXPECT_TRUE(j["gate"].is_null());
}

TEST_F(ZeProbeTiming, GivenTwoCards_WhenRun_ThenOneCardFileEach) {
    const ProbeRun r = runProbe(kShape + " --route-pattern all_duplicate --no-timing --cards 1,3 --out " + path("out"));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out/card0.json"));
    EXPECT_EQ(readCard((dir / "out/card1.json").string())["card"], 1);
    EXPECT_EQ(readCard((dir / "out/card3.json").string())["config"]["card"], 3);
}

namespace {

void writeSweep(const fs::path& file, int repeats) {
    std::ofstream f(file);
    f << "sweep:\n"
         "  name: tiny\n"
         "  set: {hidden: 128, intermediate: 64, experts: 48}\n"
         "  axes:\n"
         "    pattern: [six_local]\n"
         "    variant: [baseline, source_direct, paired_epilogue, paired_direct]\n"
         "  repeats: "
      << repeats << "\n  warmup: 1\n";
}

// Starts `ze-probe --sweep SWEEP --out OUT` (its output in LOG), waits up to 120 s for the first
// row of OUT/tiny.jsonl, then sends it `sig` and reaps it.
struct StoppedSweep {
    bool spawned = false, sawRow = false;
    int status = 0;
};
StoppedSweep stopSweepAfterFirstRow(const std::string& sweep, const std::string& out, const std::string& log, int sig) {
    StoppedSweep r;
    std::string exe = ZE_PROBE_EXE;
    std::vector<std::string> args = {exe, "--sweep", sweep, "--out", out};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    r.spawned = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
    if (!r.spawned) return r;
    const fs::path jsonl = fs::path(out) / "tiny.jsonl";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!r.sawRow && std::chrono::steady_clock::now() < deadline) {
        if (fs::exists(jsonl) && !lines(jsonl).empty())
            r.sawRow = true;
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid, sig);
    ::waitpid(pid, &r.status, 0);
    return r;
}

// The tiny sweep with 150 pairs a point, written under `dir` and stopped by `sig` after its
// first row (stopSweepAfterFirstRow), with its paths.
struct TinySweep {
    std::string sweep, out, log;
    fs::path jsonl;
    StoppedSweep stopped;
};
TinySweep stopTinySweep(const fs::path& dir, int sig) {
    writeSweep(dir / "tiny.yaml", 150);
    TinySweep t{
        (dir / "tiny.yaml").string(), (dir / "out").string(), (dir / "first.log").string(), dir / "out/tiny.jsonl", {}};
    t.stopped = stopSweepAfterFirstRow(t.sweep, t.out, t.log, sig);
    return t;
}

}  // namespace

TEST_F(ZeProbeTiming, GivenASweepKilledAfterItsFirstRow_WhenResumed_ThenEveryPointAppearsOnce) {
    const TinySweep tiny = stopTinySweep(dir, SIGKILL);
    const auto& [sweep, out, log, jsonl, stopped] = tiny;
    ASSERT_TRUE(stopped.spawned);
    ASSERT_TRUE(stopped.sawRow) << slurp(log);
    ASSERT_TRUE(WIFSIGNALED(stopped.status)) << "finished before the kill; make the points slower\n" << slurp(log);
    const std::size_t before = lines(jsonl).size();
    ASSERT_GE(before, 1u);
    ASSERT_LT(before, 4u);

    const ProbeRun again = runProbe("--sweep " + sweep + " --out " + out + " --resume");
    ASSERT_EQ(again.exitCode, 0) << again.output;
    EXPECT_NE(again.output.find("(resuming)"), std::string::npos);
    std::map<std::string, int> seen;
    for (const auto& l : lines(jsonl)) {
        const json row = json::parse(l);
        ++seen[row["id"].get<std::string>()];
        EXPECT_EQ(row["status"], "ok");
        EXPECT_TRUE(row["result"]["baseline_median_ns"].is_number());
        EXPECT_TRUE(row["result"]["saving_ci_low_ms"].is_number());
        EXPECT_EQ(row["result"]["correctness"], "passed");
        EXPECT_EQ(row["result"]["pairs"], 150);
    }
    EXPECT_EQ(seen.size(), 4u);
    for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
    EXPECT_EQ(lines(dir / "out/tiny.csv").size(), 5u);  // header + 4 rows
    EXPECT_NE(again.output.find("4 measured, 0 not valid, 0 not run"), std::string::npos) << again.output;
}

// Ctrl-C during a sweep: the run says how to continue (--resume), exits 130 (128 +
// SIGINT), and keeps the rows already written, which --resume then completes.
TEST_F(ZeProbeTiming, GivenASweepInterruptedAfterItsFirstRow_ThenItNamesResumeAndKeepsTheRows) {
    const TinySweep tiny = stopTinySweep(dir, SIGINT);
    const auto& [sweep, out, log, jsonl, stopped] = tiny;
    ASSERT_TRUE(stopped.spawned);
    const std::string text = slurp(log);
    ASSERT_TRUE(stopped.sawRow) << text;
    ASSERT_TRUE(WIFEXITED(stopped.status)) << "not ended by its handler\n" << text;
    ASSERT_EQ(WEXITSTATUS(stopped.status), 130) << "finished before the interrupt; make the points slower\n" << text;
    EXPECT_NE(text.find("ze-probe: interrupted: sweep tiny stopped; the finished points stay in " + jsonl.string()),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("  ze-probe --sweep " + sweep + " --out " + out + " --resume\n"), std::string::npos) << text;
    const std::size_t before = lines(jsonl).size();
    ASSERT_GE(before, 1u);
    ASSERT_LT(before, 4u);
    for (const auto& l : lines(jsonl)) EXPECT_EQ(json::parse(l)["status"], "ok") << l;

    const ProbeRun again = runProbe("--sweep " + sweep + " --out " + out + " --resume");
    ASSERT_EQ(again.exitCode, 0) << again.output;
    EXPECT_EQ(lines(jsonl).size(), 4u);
    const auto csv = lines(dir / "out/tiny.csv");
    ASSERT_EQ(csv.size(), 5u);  // header + 4 rows
    // Each row's spread and the point's config (the sweep's `set` keys) as columns.
    auto cells = [](const std::string& l) {  // RFC 4180: "a,b" and "" inside quotes
        std::vector<std::string> c(1);
        bool quoted = false;
        for (std::size_t i = 0; i < l.size(); ++i) {
            if (quoted && l[i] == '"' && i + 1 < l.size() && l[i + 1] == '"')
                c.back() += l[++i];
            else if (l[i] == '"')
                quoted = !quoted;
            else if (l[i] == ',' && !quoted)
                c.emplace_back();
            else
                c.back() += l[i];
        }
        return c;
    };
    const auto head = cells(csv[0]);
    auto column = [&](const std::string& name) {
        const auto it = std::find(head.begin(), head.end(), name);
        EXPECT_NE(it, head.end()) << name << " not in " << csv[0];
        return std::size_t(it - head.begin());
    };
    for (std::size_t r = 1; r < csv.size(); ++r) {
        const auto row = cells(csv[r]);
        ASSERT_EQ(row.size(), head.size()) << csv[r];
        for (const char* who : {"baseline", "candidate"}) {
            const double lo = std::stod(row[column(std::string(who) + "_min_ns")]);
            const double mid = std::stod(row[column(std::string(who) + "_median_ns")]);
            const double hi = std::stod(row[column(std::string(who) + "_max_ns")]);
            EXPECT_GT(lo, 0.0);
            EXPECT_LE(lo, mid);
            EXPECT_LE(mid, hi);
        }
        EXPECT_EQ(row[column("config.hidden")], "128");
        EXPECT_EQ(row[column("config.intermediate")], "64");
        EXPECT_EQ(row[column("config.experts")], "48");
    }
}

TEST_F(ZeProbeTiming, GivenAFinishedSweep_WhenRunAgainWithoutResume_ThenRefusedNamingTheWayOut) {
    writeSweep(dir / "tiny.yaml", 1);
    ASSERT_EQ(runProbe("--sweep " + path("tiny.yaml") + " --out " + path("out")).exitCode, 0);
    const ProbeRun r = runProbe("--sweep " + path("tiny.yaml") + " --out " + path("out"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find(path("out/tiny.jsonl") +
                            ": already holds rows of a sweep: continue it with --resume, start afresh with "
                            "--overwrite, or write to another --out"),
              std::string::npos)
        << r.output;
}

struct BadSweep {
    const char* yaml;
    const char* fragment;
    friend void PrintTo(const BadSweep& b, std::ostream* os) { *os << "a sweep naming " << b.fragment; }
};

class ZeProbeBadSweep : public ZeProbeTiming, public ::testing::WithParamInterface<BadSweep> {};

TEST_P(ZeProbeBadSweep, GivenABadSweepFile_WhenRun_ThenExitTwoNamingTheKey) {
    {
        std::ofstream f(dir / "bad.yaml");
        f << GetParam().yaml;
    }
    const ProbeRun r = runProbe("--sweep " + path("bad.yaml") + " --out " + path("out"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find(GetParam().fragment), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out")) << "nothing may be written for a bad sweep";
}

INSTANTIATE_TEST_SUITE_P(Table, ZeProbeBadSweep,
                         ::testing::Values(BadSweep{"sweep:\n  axes:\n    hiden: [128]\n", "hiden"},
                                           BadSweep{"sweep:\n  axes:\n    hidden: [100]\n", "hidden"},
                                           BadSweep{"sweep:\n  axes:\n    pattern: [six-local]\n", "six-local"},
                                           BadSweep{"sweep:\n  axes:\n    variant: [fastest]\n", "fastest"},
                                           BadSweep{"sweep:\n  axes:\n    hidden: [128]\n  repeats: lots\n", "repeats"},
                                           BadSweep{"sweep:\n  axes:\n    hidden: [128]\n  warmpu: 3\n", "warmpu"},
                                           BadSweep{"sweep:\n  name: x\n", "sweep.axes"}),
                         [](const auto& info) { return paramName(info.param.fragment); });

TEST_F(ZeProbeTiming, GivenSweepWithSet_WhenRun_ThenRejectedAsExclusive) {
    writeSweep(dir / "tiny.yaml", 1);
    const ProbeRun r = runProbe("--sweep " + path("tiny.yaml") + " --set hidden=256");
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("--set"), std::string::npos) << r.output;
}
