// sweep: strict parsing of sweep files, expansion into points, and the runner's rows,
// resume after a kill and torn-line recovery.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include "zp/probe/input_error.hpp"
#include "zp/probe/sweep.hpp"

namespace fs = std::filesystem;
using namespace zp::probe;

namespace {

SweepSpec parse(const std::string& text) { return parseSweep(text, "t.yaml", fs::path(ZP_CONFIG_DIR) / "sweeps"); }

// The InputError message of parsing (and expanding) `text`; empty when it was accepted.
std::string rejection(const std::string& text) {
    try {
        expandSweep(parse(text));
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

const char* kSmall = R"(
sweep:
  name: small
  set: {hidden: 128, intermediate: 64, experts: 48}
  axes:
    rows: [1, 2]
    pattern: [six_local, all_remote]
    variant: [baseline, paired_epilogue]
  repeats: 3
  warmup: 1
)";

std::string readAll(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// A fake measurement whose figures depend on the point, so rows can be checked.
nlohmann::json fakeMeasure(const SweepPoint& p) {
    return {{"median_ns", 1000.0 + double(p.index)},
            {"saving", {{"median_ms", 0.01 * double(p.index)}}},
            {"samples", {1, 2, 3}}};
}

class SweepRun : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("zp-sweep-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir);
        fs::create_directories(dir);
        opts.jsonlPath = dir / "rows.jsonl";
        opts.csvPath = dir / "rows.csv";
    }
    void TearDown() override { fs::remove_all(dir); }
    fs::path dir;
    SweepRunOptions opts;
};

}  // namespace

TEST(SweepParse, GivenASmallSweep_WhenExpanded_ThenTheCrossProductInOrderWithStableIds) {
    const SweepSpec spec = parse(kSmall);
    EXPECT_EQ(spec.name, "small");
    EXPECT_EQ(spec.repeats, 3);
    EXPECT_EQ(spec.warmup, 1);
    const SweepPlan plan = expandSweep(spec);
    ASSERT_EQ(plan.points.size(), 8u);
    EXPECT_EQ(plan.axisKeys, (std::vector<std::string>{"rows", "pattern", "variant"}));
    EXPECT_EQ(plan.points[0].id, "rows=1,pattern=six_local,variant=baseline");
    EXPECT_EQ(plan.points[1].id, "rows=1,pattern=six_local,variant=paired_epilogue");
    EXPECT_EQ(plan.points[2].id, "rows=1,pattern=all_remote,variant=baseline");
    EXPECT_EQ(plan.points[7].id, "rows=2,pattern=all_remote,variant=paired_epilogue");
    std::set<std::string> ids;
    for (const auto& p : plan.points) {
        EXPECT_TRUE(ids.insert(p.id).second) << p.id;
        EXPECT_EQ(p.config.shape.hidden, 128);
        EXPECT_EQ(p.config.shape.experts, 48);
        EXPECT_EQ(p.repeats, 3);
        EXPECT_FALSE(p.notValid) << p.id;
    }
    EXPECT_EQ(plan.points[5].config.shape.rows, 2);
    EXPECT_EQ(*plan.points[5].pattern, RoutePattern::SixLocal);
    EXPECT_EQ(*plan.points[5].variant, Variant::PairedEpilogue);
}

// An axis of n values is read in time linear in n: each value was once applied through a
// document node made apart from the sweep's, and yaml-cpp copied the whole sweep document's
// memory into it, every value (99,999 seeds: more than 300 s; now about 2 s at -O2). The test
// reads 10,000 and 100,000 values (the point limit): linear is 10x the time, n log n ~12x, the
// quadratic read was 100x; and 100,000 well under 10 s (more under the sanitizers' -O0).
TEST(SweepParse, GivenAnAxisOfAHundredThousandValues_ThenParsedAndExpandedInLinearTime) {
    auto sweepOf = [](std::size_t n) {
        std::string s = "sweep:\n  set: {hidden: 128, intermediate: 64, experts: 48}\n  axes:\n    seed: [";
        for (std::size_t i = 1; i <= n; ++i) s += (i > 1 ? "," : "") + std::to_string(i);
        return s + "]\n";
    };
    auto seconds = [&](std::size_t n) {
        const std::string text = sweepOf(n);
        const auto t0 = std::chrono::steady_clock::now();
        const SweepPlan plan = expandSweep(parse(text));
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_EQ(plan.points.size(), n);
        EXPECT_EQ(plan.points.back().id, "seed=" + std::to_string(n));
        return s;
    };
    const double small = seconds(kMaxSweepPoints / 10);
    const double large = seconds(kMaxSweepPoints);
#if defined(__SANITIZE_ADDRESS__)
    constexpr double kSlowBuild = 10;  // the sanitizer job's -O0 build
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    constexpr double kSlowBuild = 10;
#else
    constexpr double kSlowBuild = 1;
#endif
#else
    constexpr double kSlowBuild = 1;
#endif
    EXPECT_LT(large, 10.0 * kSlowBuild) << "10,000 values: " << small << " s";
    EXPECT_LT(large, 30 * std::max(small, 0.01)) << "10,000 values: " << small << " s, 100,000: " << large << " s";
}

TEST(SweepParse, GivenTheShippedSweeps_ThenTheyExpandToTheDocumentedPoints) {
    const SweepPlan gate = expandSweep(loadSweep(fs::path(ZP_CONFIG_DIR) / "sweeps" / "gate.yaml"));
    EXPECT_EQ(gate.name, "gate");
    EXPECT_EQ(gate.points.size(), kAllRoutePatterns.size() * kAllVariants.size());
    EXPECT_EQ(gate.points[0].id, "pattern=same_typical,variant=baseline,card=0");
    EXPECT_EQ(gate.points[0].config.shape.hidden, 4096);
    EXPECT_EQ(gate.points[0].repeats, 50);
    const SweepPlan shape = expandSweep(loadSweep(fs::path(ZP_CONFIG_DIR) / "sweeps" / "shape.yaml"));
    EXPECT_EQ(shape.points.size(), 18u);
    EXPECT_EQ(shape.points.back().id,
              "hidden=4096,intermediate=2048,rows=2,pattern=disjoint_typical,variant=paired_epilogue");
}

TEST(SweepParse, GivenAllForPatterns_ThenEveryPattern_AndInvalidOnesAreMarked) {
    const SweepPlan plan = expandSweep(parse(R"(
sweep:
  set: {cards: 1, experts: 32, hidden: 64, intermediate: 32}
  axes: {pattern: all}
)"));
    EXPECT_EQ(plan.name, "t");  // the file's stem
    ASSERT_EQ(plan.points.size(), kAllRoutePatterns.size());
    const auto& remote = plan.points.back();
    EXPECT_EQ(remote.id, "pattern=all_remote");
    EXPECT_TRUE(remote.notValid);  // C = 1: no remote experts (§6)
}

TEST(SweepParse, GivenFloatAndStringAxes_ThenIdsUseCanonicalValues) {
    const SweepPlan plan = expandSweep(parse(R"(
sweep:
  axes:
    swiglu.limit: [7, 10.0]
    gate_up_layout: [split, interleaved]
)"));
    ASSERT_EQ(plan.points.size(), 4u);
    EXPECT_EQ(plan.points[0].id, "swiglu.limit=7.0,gate_up_layout=split");
    EXPECT_EQ(plan.points[0].config.shape.swigluLimit, 7.0f);
    EXPECT_EQ(plan.points[3].config.shape.layout, zp::oracle::GateUpLayout::Interleaved);
}

struct BadSweep {
    const char* name;
    const char* text;
    const char* expected;  // a substring of the message
    friend void PrintTo(const BadSweep& b, std::ostream* os) { *os << b.name; }
};

class SweepRejects : public ::testing::TestWithParam<BadSweep> {};

TEST_P(SweepRejects, GivenABadSweepFile_ThenAnInputErrorNamesTheKey) {
    const std::string msg = rejection(GetParam().text);
    ASSERT_FALSE(msg.empty()) << "accepted";
    EXPECT_NE(msg.find(GetParam().expected), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind("t.yaml", 0), 0u) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Sweep, SweepRejects,
    ::testing::Values(
        BadSweep{"NoSweepRoot", "axes: {hidden: [64]}\n", "expected one top-level key, sweep"},
        BadSweep{"UnknownKey", "sweep:\n  axes: {hidden: [64]}\n  repeat: 3\n",
                 "t.yaml:3:3: sweep.repeat: unknown key"},
        BadSweep{"UnknownAxis", "sweep:\n  axes: {hiden: [64]}\n", "sweep.axes.hiden: unknown axis"},
        BadSweep{"PluralAxis", "sweep:\n  axes: {patterns: all}\n", "did you mean pattern?"},
        BadSweep{"GroupAxis", "sweep:\n  axes: {swiglu: [7]}\n", "sweep.axes.swiglu: unknown axis (a group"},
        BadSweep{"EmptyAxis", "sweep:\n  axes:\n    hidden: []\n", "t.yaml:3:13: sweep.axes.hidden: empty axis"},
        BadSweep{"ScalarAxis", "sweep:\n  axes:\n    hidden: 64\n",
                 "sweep.axes.hidden: got the scalar \"64\", expected a list"},
        BadSweep{"NoAxes", "sweep:\n  repeats: 3\n", "sweep.axes: missing"},
        BadSweep{"EmptyAxesMap", "sweep:\n  axes: {}\n", "sweep.axes: got a map, expected a map of axis"},
        BadSweep{"BadPattern", "sweep:\n  axes:\n    pattern: [six_local, sixlocal]\n",
                 "t.yaml:3:26: sweep.axes.pattern[1]: unknown route pattern 'sixlocal'"},
        BadSweep{"AllAsAPattern", "sweep:\n  axes: {pattern: [all, six_local]}\n",
                 "sweep.axes.pattern[0]: 'all' is not one route pattern: list the patterns the axis takes "
                 "(same_typical, disjoint_typical,"},
        BadSweep{"BadVariant", "sweep:\n  axes:\n    variant: [paired]\n",
                 "sweep.axes.variant[0]: unknown variant 'paired'"},
        BadSweep{"BadShapeValue", "sweep:\n  axes:\n    hidden: [4096, 100]\n",
                 "t.yaml:3:20: sweep.axes.hidden: 100: must be a positive multiple of 32"},
        BadSweep{"WrongTypeValue", "sweep:\n  axes:\n    rows: [two]\n", "sweep.axes.rows: \"two\": not an integer"},
        BadSweep{"ListInList", "sweep:\n  axes:\n    rows: [[1]]\n",
                 "sweep.axes.rows[0]: got a sequence, expected one value"},
        BadSweep{"DuplicateValue", "sweep:\n  axes:\n    rows: [1, 2, 1]\n", "sweep.axes.rows[2]: 1: duplicate value"},
        BadSweep{"WrongTypeRepeats", "sweep:\n  axes: {rows: [1]}\n  repeats: many\n",
                 "sweep.repeats: \"many\": not an integer"},
        BadSweep{"ZeroRepeats", "sweep:\n  axes: {rows: [1]}\n  repeats: 0\n", "sweep.repeats: 0: must be at least 1"},
        BadSweep{"NegativeWarmup", "sweep:\n  axes: {rows: [1]}\n  warmup: -1\n",
                 "sweep.warmup: -1: must be at least 0"},
        BadSweep{"BadSetKey", "sweep:\n  set: {hiden: 64}\n  axes: {rows: [1]}\n",
                 "t.yaml:2:9: sweep.set.hiden: unknown config key"},
        BadSweep{"BadSetValue", "sweep:\n  set: {swiglu.limit: 7.1}\n  axes: {rows: [1]}\n",
                 "sweep.set.swiglu.limit: 7.1: must be a non-negative value exactly representable in BF16"},
        BadSweep{"SetAndAxis", "sweep:\n  set: {rows: 1}\n  axes: {rows: [1, 2]}\n",
                 "sweep.axes.rows: also set in sweep.set.rows"},
        BadSweep{"MissingBase", "sweep:\n  base_config: nope.yaml\n  axes: {rows: [1]}\n", "sweep.base_config:"},
        BadSweep{"BadName", "sweep:\n  name: a/b\n  axes: {rows: [1]}\n", "sweep.name: \"a/b\": use letters"},
        BadSweep{"PointFailsCrossKey", "sweep:\n  set: {cards: 4}\n  axes:\n    card: [0, 3, 4, 5]\n",
                 "point 3 of 4 (card=4): card = 4: must be in [0, cards) = [0, 4) (and 1 more of the 4 points fail "
                 "validation)"},
        BadSweep{"MalformedYaml", "sweep:\n  axes: {rows: [1\n", "malformed YAML"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(SweepRun, GivenAPlan_WhenRun_ThenOneRowPerPointInJsonlAndCsv_AndProgressCountsUp) {
    const SweepPlan plan = expandSweep(parse(kSmall));
    std::vector<SweepProgress> seen;
    opts.progress = [&](const SweepProgress& p) { seen.push_back(p); };
    SweepRunner runner(plan, opts);
    const auto rows = runner.run(fakeMeasure);
    ASSERT_EQ(rows.size(), 8u);
    EXPECT_EQ(rows[3]["id"], plan.points[3].id);
    EXPECT_EQ(rows[3]["status"], "ok");
    EXPECT_EQ(rows[3]["result"]["median_ns"], 1003.0);
    EXPECT_EQ(rows[3]["point"]["rows"], 1);
    EXPECT_EQ(rows[3]["point"]["pattern"], "all_remote");
    EXPECT_EQ(rows[3]["config"]["hidden"], 128);

    const auto jl = lines(readAll(opts.jsonlPath));
    ASSERT_EQ(jl.size(), 8u);
    EXPECT_EQ(nlohmann::json::parse(jl[7])["id"], plan.points[7].id);

    const auto csv = lines(readAll(opts.csvPath));
    ASSERT_EQ(csv.size(), 9u);
    EXPECT_EQ(csv[0], "id,rows,pattern,variant,status,reason,elapsed_s,median_ns,samples,saving.median_ms");
    EXPECT_EQ(csv[1].rfind("\"rows=1,pattern=six_local,variant=baseline\",1,six_local,baseline,ok,,", 0), 0u) << csv[1];
    EXPECT_NE(csv[1].find(",1000.0,\"[1,2,3]\",0.0"), std::string::npos) << csv[1];

    ASSERT_EQ(seen.size(), 9u);  // the start, then one per point
    EXPECT_EQ(seen.front().done, 0u);
    EXPECT_EQ(seen.back().done, 8u);
    EXPECT_EQ(seen.back().total, 8u);
    ASSERT_TRUE(seen.back().etaS);
    EXPECT_EQ(*seen.back().etaS, 0.0);
    EXPECT_EQ(seen.back().last->id, plan.points[7].id);
    EXPECT_NE(formatSweepProgress(seen[4]).find("4/8  50%"), std::string::npos) << formatSweepProgress(seen[4]);

    const std::string summary = formatSweepSummary(plan, rows);
    EXPECT_NE(summary.find("median_ns"), std::string::npos) << summary;
    EXPECT_NE(summary.find(plan.points[7].id), std::string::npos);
    EXPECT_NE(summary.find("8 measured, 0 not valid, 0 not run"), std::string::npos) << summary;
}

TEST_F(SweepRun, GivenAKillAfterKPoints_WhenResumed_ThenEveryPointAppearsExactlyOnce) {
    const SweepPlan plan = expandSweep(parse(kSmall));
    int calls = 0;
    {
        SweepRunner first(plan, opts);
        EXPECT_THROW(first.run([&](const SweepPoint& p) {
            if (++calls == 4) throw std::runtime_error("device lost");
            return fakeMeasure(p);
        }),
                     std::runtime_error);
    }
    EXPECT_EQ(lines(readAll(opts.jsonlPath)).size(), 3u);
    EXPECT_EQ(lines(readAll(opts.csvPath)).size(), 4u);  // header + 3

    // Without resume an existing sweep is never silently overwritten.
    EXPECT_THROW(SweepRunner(plan, opts).run(fakeMeasure), InputError);

    std::vector<std::string> measured;
    SweepRunOptions r = opts;
    r.resume = true;
    std::optional<SweepProgress> start;
    r.progress = [&](const SweepProgress& p) {
        if (!start) start = p;
    };
    const auto rows = SweepRunner(plan, r).run([&](const SweepPoint& p) {
        measured.push_back(p.id);
        return fakeMeasure(p);
    });
    EXPECT_EQ(measured.size(), 5u);
    EXPECT_EQ(measured.front(), plan.points[3].id);
    EXPECT_EQ(start->resumed, 3u);
    EXPECT_EQ(start->done, 3u);

    std::map<std::string, int> count;
    for (const auto& l : lines(readAll(opts.jsonlPath))) ++count[nlohmann::json::parse(l)["id"].get<std::string>()];
    EXPECT_EQ(count.size(), plan.points.size());
    for (const auto& p : plan.points) EXPECT_EQ(count[p.id], 1) << p.id;
    const auto csv = lines(readAll(opts.csvPath));
    EXPECT_EQ(csv.size(), 9u);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i]["id"], plan.points[i].id);
        EXPECT_EQ(rows[i]["result"]["median_ns"], 1000.0 + double(i));
    }

    // Resuming a finished sweep measures nothing.
    int again = 0;
    SweepRunner(plan, r).run([&](const SweepPoint& p) {
        ++again;
        return fakeMeasure(p);
    });
    EXPECT_EQ(again, 0);
}

TEST_F(SweepRun, GivenATornLastLine_WhenResumed_ThenItIsCutAwayAndThatPointRerun) {
    const SweepPlan plan = expandSweep(parse(kSmall));
    {
        // Two complete rows, then a third torn mid-write; a stale CSV that lacks row 2.
        std::ofstream j(opts.jsonlPath, std::ios::binary);
        for (int i = 0; i < 2; ++i)
            j << nlohmann::json{{"sweep", "small"}, {"id", plan.points[i].id}, {"index", i},
                                {"status", "ok"},   {"point", {{"rows", 1}}},  {"result", fakeMeasure(plan.points[i])}}
                     .dump()
              << "\n";
        j << R"({"sweep":"small","id":")" << plan.points[2].id << R"(","result":{"median_)";
        std::ofstream c(opts.csvPath, std::ios::binary);
        c << "stale\n";
    }
    const auto before = readSweepRows(opts.jsonlPath, false);
    EXPECT_EQ(before.size(), 2u);

    SweepRunOptions r = opts;
    r.resume = true;
    std::vector<std::size_t> measured;
    const auto rows = SweepRunner(plan, r).run([&](const SweepPoint& p) {
        measured.push_back(p.index);
        return fakeMeasure(p);
    });
    EXPECT_EQ(measured, (std::vector<std::size_t>{2, 3, 4, 5, 6, 7}));
    const auto jl = lines(readAll(opts.jsonlPath));
    ASSERT_EQ(jl.size(), 8u);
    for (std::size_t i = 0; i < jl.size(); ++i) {
        const auto row = nlohmann::json::parse(jl[i]);  // every line whole: the torn bytes are gone
        EXPECT_EQ(row["id"], plan.points[i].id);
    }
    // The CSV is rebuilt from the JSONL: header + 8 rows, the stale line gone.
    const auto csv = lines(readAll(opts.csvPath));
    ASSERT_EQ(csv.size(), 9u);
    EXPECT_EQ(csv[0].rfind("id,rows,pattern,variant,status", 0), 0u);
    EXPECT_EQ(readAll(opts.csvPath).find("stale"), std::string::npos);
    EXPECT_EQ(rows.size(), 8u);
}

TEST_F(SweepRun, GivenACorruptMiddleLine_OrAForeignRow_WhenResumed_ThenRefused) {
    const SweepPlan plan = expandSweep(parse(kSmall));
    SweepRunOptions r = opts;
    r.resume = true;
    {
        std::ofstream j(opts.jsonlPath, std::ios::binary);
        j << "garbage\n" << nlohmann::json{{"id", plan.points[0].id}}.dump() << "\n";
    }
    try {
        SweepRunner(plan, r).run(fakeMeasure);
        FAIL() << "accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("rows.jsonl:1: not a JSON row"), std::string::npos) << e.what();
    }
    {
        std::ofstream j(opts.jsonlPath, std::ios::binary);
        j << nlohmann::json{{"sweep", "small"}, {"id", "rows=9"}, {"status", "ok"}}.dump() << "\n";
    }
    try {
        SweepRunner(plan, r).run(fakeMeasure);
        FAIL() << "accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("point rows=9 is not in this sweep"), std::string::npos) << e.what();
    }
    // A row nested deeper than any row a sweep writes: refused while parsing (a copy or dump of
    // it would recurse once per level), before its id or status is looked at.
    {
        std::ofstream j(opts.jsonlPath, std::ios::binary);
        j << "{\"id\":\"" << plan.points[0].id << "\",\"status\":\"ok\",\"x\":" << std::string(100000, '[')
          << std::string(100000, ']') << "}\n";
    }
    try {
        readSweepRows(opts.jsonlPath, false);
        FAIL() << "accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("rows.jsonl:1: JSON nested deeper than 64 levels: not a sweep row"),
                  std::string::npos)
            << e.what();
    }
    // A row whose status is neither ok nor not_valid was once counted as "not valid".
    {
        std::ofstream j(opts.jsonlPath, std::ios::binary);
        j << nlohmann::json{{"sweep", "small"}, {"id", plan.points[0].id}, {"status", "ok"}}.dump() << "\n"
          << nlohmann::json{{"sweep", "small"}, {"id", plan.points[1].id}, {"status", "crashed"}}.dump() << "\n";
    }
    for (bool resume : {true, false}) {
        try {
            if (resume)
                SweepRunner(plan, r).run(fakeMeasure);
            else
                readSweepRows(opts.jsonlPath, false);
            FAIL() << "accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("rows.jsonl:2: point " + plan.points[1].id +
                                                 ": status \"crashed\": a sweep row's status is \"ok\" or "
                                                 "\"not_valid\""),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST_F(SweepRun, GivenOverwrite_ThenTheOldRowsAreReplaced) {
    const SweepPlan plan = expandSweep(parse(kSmall));
    SweepRunner(plan, opts).run(fakeMeasure);
    SweepRunOptions o = opts;
    o.overwrite = true;
    SweepRunner(plan, o).run(fakeMeasure);
    EXPECT_EQ(lines(readAll(opts.jsonlPath)).size(), 8u);
    EXPECT_EQ(lines(readAll(opts.csvPath)).size(), 9u);
}

TEST_F(SweepRun, GivenNotValidPoints_ThenTheyAreRecordedWithoutMeasuring) {
    const SweepPlan plan = expandSweep(parse(R"(
sweep:
  name: nv
  set: {cards: 1, experts: 32, hidden: 64, intermediate: 32}
  axes: {pattern: [all_remote, six_local]}
)"));
    std::vector<std::string> measured;
    const auto rows = SweepRunner(plan, opts).run([&](const SweepPoint& p) {
        measured.push_back(p.id);
        return fakeMeasure(p);
    });
    EXPECT_EQ(measured, (std::vector<std::string>{"pattern=six_local"}));
    EXPECT_EQ(rows[0]["status"], "not_valid");
    EXPECT_FALSE(rows[0]["reason"].get<std::string>().empty());
    // The not-valid row came first but the CSV header still carries the result's columns.
    const auto csv = lines(readAll(opts.csvPath));
    ASSERT_EQ(csv.size(), 3u);
    EXPECT_NE(csv[0].find("median_ns"), std::string::npos) << csv[0];
    EXPECT_EQ(csv[1].rfind("pattern=all_remote,all_remote,not_valid,", 0), 0u) << csv[1];
    EXPECT_NE(formatSweepSummary(plan, rows).find("1 measured, 1 not valid"), std::string::npos);
}

// ---------------------------------------------------------------- shards and merge

namespace {

// Figures from the point's id, not its index: a shard renumbers its points.
nlohmann::json idMeasure(const SweepPoint& p) {
    return {{"median_ns", double(std::hash<std::string>{}(p.id) % 100000)}, {"id_length", p.id.size()}};
}

// The rows without what differs run to run (elapsed time).
std::vector<nlohmann::json> comparable(std::vector<nlohmann::json> rows) {
    for (auto& r : rows) r.erase("elapsed_s");
    return rows;
}

}  // namespace

TEST(SweepShard, GivenKOverN_ThenParsed_AndBadTextRejectedNamingIt) {
    const SweepShard s = parseSweepShard("2/3");
    EXPECT_EQ(s.k, 2u);
    EXPECT_EQ(s.n, 3u);
    for (const char* bad : {"0/3", "4/3", "3", "a/3", "1/0", "1/3x", "/3", "1/5000"}) {
        try {
            parseSweepShard(bad);
            ADD_FAILURE() << bad << " accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("--shard ") + bad), std::string::npos) << e.what();
        }
    }
}

TEST(SweepShard, GivenThreeShards_ThenEveryPointInExactlyOne_RoundRobin) {
    const SweepPlan plan = expandSweep(parse(kSmall));
    std::multiset<std::string> seen;
    for (std::size_t k = 1; k <= 3; ++k) {
        const SweepPlan s = shardPlan(plan, {k, 3});
        EXPECT_EQ(s.shard, std::to_string(k) + "/3");
        EXPECT_EQ(s.allIds.size(), plan.points.size());
        for (std::size_t i = 0; i < s.points.size(); ++i) {
            EXPECT_EQ(s.points[i].index, i);
            EXPECT_EQ(s.points[i].id, plan.points[(k - 1) + 3 * i].id);
            seen.insert(s.points[i].id);
        }
    }
    ASSERT_EQ(seen.size(), plan.points.size());
    for (const auto& p : plan.points) EXPECT_EQ(seen.count(p.id), 1u) << p.id;
}

TEST_F(SweepRun, GivenASweepSplitInThree_WhenMerged_ThenTheRowsEqualTheUnsplitRun) {
    const SweepPlan plan = expandSweep(parse(kSmall));
    SweepRunOptions whole = opts;
    whole.jsonlPath = dir / "whole" / "small.jsonl";
    whole.csvPath = dir / "whole" / "small.csv";
    writeSweepPlanFile(dir / "whole", plan);
    const auto unsplit = SweepRunner(plan, whole).run(idMeasure);

    std::vector<fs::path> shards;
    for (std::size_t k = 1; k <= 3; ++k) {
        const fs::path d = dir / ("shard" + std::to_string(k));
        const SweepPlan s = shardPlan(plan, {k, 3});
        writeSweepPlanFile(d, s);
        SweepRunOptions so = opts;
        so.jsonlPath = d / "small.jsonl";
        so.csvPath = d / "small.csv";
        SweepRunner(s, so).run(idMeasure);
        shards.push_back(d);
    }
    const SweepMerge m = mergeSweepShards({shards[2], shards[0], shards[1]});  // any order
    EXPECT_TRUE(m.missing.empty());
    EXPECT_EQ(m.total, plan.points.size());
    EXPECT_EQ(m.name, "small");
    EXPECT_EQ(comparable(m.rows), comparable(unsplit));

    writeSweepFiles(dir / "merged" / "small.jsonl", dir / "merged" / "small.csv", m.axisKeys, m.rows);
    EXPECT_EQ(comparable(readSweepRows(dir / "merged" / "small.jsonl", false)), comparable(unsplit));
    const auto mergedCsv = lines(readAll(dir / "merged" / "small.csv"));
    const auto wholeCsv = lines(readAll(whole.csvPath));
    ASSERT_EQ(mergedCsv.size(), wholeCsv.size());
    EXPECT_EQ(mergedCsv[0], wholeCsv[0]);
    EXPECT_THROW(writeSweepFiles(dir / "merged" / "small.jsonl", dir / "merged" / "small.csv", m.axisKeys, m.rows),
                 InputError);

    // Two shards only: shard 2's points are reported missing, by id.
    const SweepMerge partial = mergeSweepShards({shards[0], shards[2]});
    const SweepPlan second = shardPlan(plan, {2, 3});
    ASSERT_EQ(partial.missing.size(), second.points.size());
    for (std::size_t i = 0; i < second.points.size(); ++i) EXPECT_EQ(partial.missing[i], second.points[i].id);

    // One directory given twice (however spelt) is refused before its rows are counted twice, and
    // so is a copy of one shard: naming both.
    try {
        mergeSweepShards({shards[0], shards[1], shards[0] / "."});
        ADD_FAILURE() << "one shard merged twice";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(shards[0].string() + " and " + (shards[0] / ".").string() +
                                             " are the same directory"),
                  std::string::npos)
            << e.what();
    }
    fs::copy(shards[0], dir / "copy");
    try {
        mergeSweepShards({shards[0], shards[1], dir / "copy"});
        ADD_FAILURE() << "a copied shard merged";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("are both shard 1/3"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find((dir / "copy" / "small.plan.json").string()), std::string::npos)
            << e.what();
    }
    // Rows of one point in two shards' files overlap: refused, naming both files.
    {
        std::ofstream j(shards[1] / "small.jsonl", std::ios::app | std::ios::binary);
        j << readSweepRows(shards[0] / "small.jsonl", false).front().dump() << "\n";
    }
    try {
        mergeSweepShards({shards[0], shards[1], shards[2]});
        ADD_FAILURE() << "overlapping shards merged";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("the shards overlap"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find((shards[0] / "small.jsonl").string()), std::string::npos) << e.what();
    }
    // A directory without a plan file is refused.
    fs::create_directories(dir / "empty");
    EXPECT_THROW(mergeSweepShards({shards[0], dir / "empty"}), InputError);
}

namespace {

// kSmall at another `set`: the same points (ids), measured at another config.
std::string smallWithHidden(int hidden) {
    std::string s = kSmall;
    const std::string from = "hidden: 128";
    s.replace(s.find(from), from.size(), "hidden: " + std::to_string(hidden));
    return s;
}

}  // namespace

// The points' ids do not hold the sweep's `set` or base config: a --resume after either changed
// once appended rows of the new config to those of the old (exit 0, both in one JSONL). The plan
// file records what decides a point's result, and a resume of another is refused before anything
// is written: the plan file, the JSONL and its torn last line stay as they were.
TEST_F(SweepRun, GivenTheSweepsSetChanged_WhenResumed_ThenRefusedNamingTheChange_AndNothingWritten) {
    const SweepPlan plan = expandSweep(parse(kSmall));
    SweepRunOptions o = opts;
    o.planDir = dir;
    int calls = 0;
    EXPECT_THROW(SweepRunner(plan, o).run([&](const SweepPoint& p) {
        if (++calls == 4) throw std::runtime_error("killed");
        return fakeMeasure(p);
    }),
                 std::runtime_error);
    {
        std::ofstream j(opts.jsonlPath, std::ios::app | std::ios::binary);
        j << "{\"id\": \"torn";
    }
    const fs::path planFile = dir / "small.plan.json";
    const std::string planBefore = readAll(planFile), rowsBefore = readAll(opts.jsonlPath);
    EXPECT_EQ(nlohmann::json::parse(planBefore)["settings"]["config"]["hidden"], 128);

    o.resume = true;
    auto refusal = [&](const SweepPlan& p) -> std::string {
        try {
            SweepRunner(p, o).run(fakeMeasure);
        } catch (const InputError& e) {
            return e.what();
        }
        return "";
    };
    const SweepPlan edited = expandSweep(parse(smallWithHidden(256)));
    ASSERT_EQ(edited.points.front().id, plan.points.front().id);
    std::string why = refusal(edited);
    EXPECT_NE(why.find(planFile.string() + ": --resume refused"), std::string::npos) << why;
    EXPECT_NE(why.find("settings.config.hidden: 128 in the plan file, 256 in this run"), std::string::npos) << why;
    EXPECT_EQ(readAll(planFile), planBefore);
    EXPECT_EQ(readAll(opts.jsonlPath), rowsBefore);

    // Another shard of the same sweep into this directory: refused, the plan file not rewritten.
    why = refusal(shardPlan(plan, {2, 2}));
    EXPECT_NE(why.find("shard: \"1/1\" in the plan file, \"2/2\" in this run"), std::string::npos) << why;
    EXPECT_EQ(readAll(planFile), planBefore);

    // The tool's settings (the repeats here) and the device count too.
    SweepPlan more = plan;
    more.settings["repeats"] = 7;
    why = refusal(more);
    EXPECT_NE(why.find("settings.repeats: 3 in the plan file, 7 in this run"), std::string::npos) << why;
    SweepPlan elsewhere = plan;
    elsewhere.device = "1";
    why = refusal(elsewhere);
    EXPECT_NE(why.find("device: \"\" in the plan file, \"1\" in this run"), std::string::npos) << why;
    EXPECT_EQ(readAll(planFile), planBefore);
    EXPECT_EQ(readAll(opts.jsonlPath), rowsBefore);

    // A row measured at another config than its point's is refused even where the plan file agrees.
    {
        const std::string other = readAll(planFile);
        nlohmann::json j = nlohmann::json::parse(other);
        j["settings"] = edited.settings;
        std::ofstream(planFile) << j.dump();
        why = refusal(edited);
        EXPECT_NE(why.find("rows.jsonl:1: point " + plan.points[0].id +
                           " was measured at another config than this run's (config.hidden: 128 in the row, 256 in "
                           "this run)"),
                  std::string::npos)
            << why;
        std::ofstream(planFile) << other;
    }
    // No plan file, or one of an older ze-probe (no settings): what the rows were measured at is unknown.
    fs::rename(planFile, dir / "saved");
    why = refusal(plan);
    EXPECT_NE(why.find(planFile.string() + ": missing"), std::string::npos) << why;
    {
        nlohmann::json j = nlohmann::json::parse(planBefore);
        j.erase("settings");
        std::ofstream(planFile) << j.dump();
    }
    why = refusal(plan);
    EXPECT_NE(why.find("a sweep plan without \"settings\""), std::string::npos) << why;
    EXPECT_EQ(readAll(opts.jsonlPath), rowsBefore);
    fs::rename(dir / "saved", planFile);

    // The unchanged sweep resumes: the torn line cut, the rest measured, every point once.
    const auto rows = SweepRunner(plan, o).run(fakeMeasure);
    EXPECT_EQ(rows.size(), plan.points.size());
    EXPECT_EQ(lines(readAll(opts.jsonlPath)).size(), plan.points.size());
}

// Shards of one sweep file run at different configs (the `set` edited between them) have the
// same point ids: merging them once mixed hidden 128 and 256 in one sweep (exit 0).
TEST_F(SweepRun, GivenShardsRunAtDifferentConfigs_WhenMerged_ThenRefusedNamingTheDirectoriesAndTheDifference) {
    const SweepPlan a = shardPlan(expandSweep(parse(kSmall)), {1, 2});
    const SweepPlan b = shardPlan(expandSweep(parse(smallWithHidden(256))), {2, 2});
    std::vector<fs::path> dirs;
    for (const SweepPlan* p : {&a, &b}) {
        const fs::path d = dir / ("shard" + p->shard.substr(0, 1));
        SweepRunOptions so = opts;
        so.jsonlPath = d / "small.jsonl";
        so.csvPath = d / "small.csv";
        so.planDir = d;
        SweepRunner(*p, so).run(fakeMeasure);
        dirs.push_back(d);
    }
    try {
        mergeSweepShards(dirs);
        FAIL() << "shards of two configs merged";
    } catch (const InputError& e) {
        const std::string why = e.what();
        EXPECT_NE(why.find("sweep-merge: " + dirs[1].string() + " is not a shard of the sweep in " + dirs[0].string()),
                  std::string::npos)
            << why;
        EXPECT_NE(why.find("settings.config.hidden: 128 in " + (dirs[0] / "small.plan.json").string() + ", 256 in " +
                           (dirs[1] / "small.plan.json").string()),
                  std::string::npos)
            << why;
    }
    // Shards of different counts (1/2 beside 2/3) are not one split either.
    SweepRunOptions so = opts;
    so.jsonlPath = dir / "third" / "small.jsonl";
    so.csvPath = dir / "third" / "small.csv";
    so.planDir = dir / "third";
    SweepRunner(shardPlan(expandSweep(parse(kSmall)), {2, 3}), so).run(fakeMeasure);
    try {
        mergeSweepShards({dirs[0], dir / "third"});
        FAIL() << "shards of two splits merged";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("shards: 2 in"), std::string::npos) << e.what();
    }
}
