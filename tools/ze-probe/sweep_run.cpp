#include "sweep_run.hpp"
#include "zp/probe/file_io.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>

#include <unistd.h>

#include <fmt/format.h>

#include "device_session.hpp"
#include "timing.hpp"
#include "zp/probe/config.hpp"
#include "zp/probe/sweep.hpp"

namespace zp::app {
namespace {

std::string shapeKey(const oracle::ChainShape& s) {
    return fmt::format("{} {} {} {} {} {} {} {} {} {} {}", s.hidden, s.intermediate, s.experts, s.topK, s.rows, s.cards,
                       s.card, s.swigluLimit, s.swigluAlpha, s.swigluUpBias, int(s.layout));
}

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// One device session per shape, kept while consecutive points share it (the last axis
// varies fastest, so put shape axes first).
struct SessionCache {
    std::string device;
    std::optional<scheduler::KernelTuning> tuning;
    std::string key;
    std::unique_ptr<DeviceSession> session;
    std::unique_ptr<oracle::LocalWeights> scratch;

    DeviceSession& get(const oracle::ChainShape& s) {
        const std::string k = shapeKey(s);
        if (!session || k != key) {
            session.reset();
            scratch.reset();
            std::vector<probe::Variant> all(probe::kAllVariants.begin(), probe::kAllVariants.end());
            session = std::make_unique<DeviceSession>(device, s, all, tuning);
            scratch = std::make_unique<oracle::LocalWeights>(oracle::LocalWeights::zeros(s));
            key = k;
        }
        return *session;
    }
};

// SIGINT / SIGTERM during a sweep: every finished point is already fsync'd in the JSONL (a
// torn last line is dropped on --resume), so the handler only says how to continue and exits.
// The text is made before the run: a signal handler may call write() and _exit(), no more.
std::array<char, 4096> gInterruptText{};
std::size_t gInterruptLength = 0;

extern "C" void onSweepInterrupt(int sig) {
    (void)!::write(STDERR_FILENO, gInterruptText.data(), gInterruptLength);
    ::_exit(128 + sig);
}

// Installs the handler for the sweep's lifetime; the previous handlers come back after it.
class InterruptHint {
public:
    explicit InterruptHint(const std::string& text) {
        gInterruptLength = std::min(text.size(), gInterruptText.size());
        std::memcpy(gInterruptText.data(), text.data(), gInterruptLength);
        struct sigaction sa {};
        sa.sa_handler = onSweepInterrupt;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGINT, &sa, &oldInt_);
        ::sigaction(SIGTERM, &sa, &oldTerm_);
    }
    ~InterruptHint() {
        ::sigaction(SIGINT, &oldInt_, nullptr);
        ::sigaction(SIGTERM, &oldTerm_, nullptr);
    }
    InterruptHint(const InterruptHint&) = delete;
    InterruptHint& operator=(const InterruptHint&) = delete;

private:
    struct sigaction oldInt_ {};
    struct sigaction oldTerm_ {};
};

// The timed case checked against the host oracle (the chains' last execute ran it).
struct TimedCaseCheck {
    std::string correctness = "passed";  // or "failed", "skipped"
    nlohmann::json mismatches = nlohmann::json::array();
};

TimedCaseCheck checkTimedCase(DeviceSession& session, const oracle::ChainShape& s, const oracle::LocalWeights& weights,
                              const PatternTiming& pt, probe::Variant variant) {
    TimedCaseCheck check;
    const auto silu = oracle::buildSiluTable(s.swigluAlpha);
    const auto want = oracle::runChain(s, weights, pt.inputs, silu);
    if (session.flushesSubnormals() && want.metSubnormal) {
        check.correctness = "skipped";
        return check;
    }
    for (probe::Variant v : {probe::Variant::Baseline, variant}) {
        const auto got = toExecutorResult(s, v, session.chain(v).results());
        if (auto why = compareWithOracle(s, want, got)) {
            check.correctness = "failed";
            check.mismatches.push_back({{"variant", probe::variantName(v)}, {"message", *why}});
        }
    }
    return check;
}

// A measured point's result row: baseline (pt.variants[0]) against the point's variant
// (pt.variants[1]), the gate's projection and the check.
nlohmann::json pointResult(const probe::Config& cfg, const PatternTiming& pt, probe::Variant variant,
                           const TimingSettings& ts, const probe::Projection& proj, const probe::PairedSaving& host,
                           const TimedCaseCheck& check, const std::string& deviceName) {
    const VariantTiming& a = pt.variants[0];
    const VariantTiming& b = pt.variants[1];
    const std::string& correctness = check.correctness;
    const nlohmann::json& mismatches = check.mismatches;
    auto least = [](const std::vector<double>& v) {
        return v.empty() ? nlohmann::json(nullptr) : num(*std::min_element(v.begin(), v.end()));
    };
    auto most = [](const std::vector<double>& v) {
        return v.empty() ? nlohmann::json(nullptr) : num(*std::max_element(v.begin(), v.end()));
    };
    return {
        {"baseline_median_ns", num(probe::median(a.deviceNs))},
        {"candidate_median_ns", num(probe::median(b.deviceNs))},
        {"baseline_min_ns", least(a.deviceNs)},
        {"baseline_max_ns", most(a.deviceNs)},
        {"candidate_min_ns", least(b.deviceNs)},
        {"candidate_max_ns", most(b.deviceNs)},
        // The point's whole config (the sweep's `set` keys and its axes): config.* columns in the CSV.
        {"config", probe::toJson(cfg)},
        {"saving_median_ms", num(proj.medianMs)},
        {"saving_ci_low_ms", num(proj.ciLowMs)},
        {"saving_ci_high_ms", num(proj.ciHighMs)},
        {"gate_verdict", probe::verdictKey(proj.verdict)},
        {"more_rounds", proj.moreRounds ? nlohmann::json(*proj.moreRounds) : nlohmann::json(nullptr)},
        {"baseline_host_median_ns", num(probe::median(a.hostNs))},
        {"candidate_host_median_ns", num(probe::median(b.hostNs))},
        {"host_saving_median_us", num(host.median / 1e3)},
        {"pattern", pt.pattern},
        {"variant", probe::variantName(variant)},
        {"case", pt.caseName},
        {"pairs", proj.pairs},
        {"blocks", proj.blocks},
        {"batch", pt.batch},
        {"tick_ns", pt.tickNs},
        {"warmup", ts.warmup},
        {"layers", cfg.layers},
        {"min_saving_ms", cfg.gateMinSavingMs},
        {"correctness", correctness},
        {"correctness_scope", "the timed case, baseline and the point's variant, against the host oracle"},
        {"mismatches", mismatches},
        {"device", deviceName},
    };
}

// The options a --resume must repeat (its plan file records them), for the Ctrl-C hint.
std::string resumeOptions(const SweepCliOptions& o) {
    std::string s;
    if (!o.shard.empty()) s += " --shard " + o.shard;
    if (!o.device.empty()) s += " --device " + o.device;
    if (o.tuning) s += " --kernel-tuning " + o.tuning->describe();
    if (o.repeats) s += fmt::format(" --repeats {}", *o.repeats);
    if (o.warmup) s += fmt::format(" --warmup {}", *o.warmup);
    return s;
}

}  // namespace

int runSweep(const SweepCliOptions& o) {
    // The options first: a bad --shard is named before a sweep file of 100,000 values is read.
    std::optional<probe::SweepShard> shard;
    if (!o.shard.empty()) shard = probe::parseSweepShard(o.shard);
    const probe::SweepSpec spec = probe::loadSweep(o.file);
    probe::SweepPlan plan = probe::expandSweep(spec);
    // What decides a point's result besides the sweep file (compared on --resume and by sweep-merge).
    if (o.repeats) plan.settings["repeats"] = *o.repeats;
    if (o.warmup) plan.settings["warmup"] = *o.warmup;
    plan.settings["kernel_tuning"] = o.tuning ? o.tuning->describe() : "the device's recommended";
    plan.device = o.device;
    if (shard) plan = probe::shardPlan(plan, *shard);
    const std::filesystem::path out(o.outDir);
    probe::SweepRunOptions ro;
    ro.jsonlPath = out / (plan.name + ".jsonl");
    ro.csvPath = out / (plan.name + ".csv");
    // Every file of the sweep, before the plan is written or any device opened.
    for (const auto& file : {ro.jsonlPath, ro.csvPath, out / (plan.name + ".plan.json"),
                             std::filesystem::path(ro.jsonlPath.string() + ".lock")})
        probe::checkOutputFile(file, "--out");
    ro.planDir = out;  // written by the runner once the rows there are known to be of this plan
    ro.resume = o.resume;
    ro.overwrite = o.overwrite;
    const bool tty = ::isatty(STDERR_FILENO);
    ro.progress = [tty](const probe::SweepProgress& p) {
        const std::string line = probe::formatSweepProgress(p);
        if (tty)
            fmt::print(stderr, "\r{}\x1b[K", line);
        else
            fmt::print(stderr, "{}\n", line);
        std::fflush(stderr);
    };

    SessionCache cache{o.device, o.tuning, "", nullptr, nullptr};
    bool initialised = false;
    bool anyFailed = false;
    std::string deviceName;
    const auto measure = [&](const probe::SweepPoint& p) -> nlohmann::json {
        const probe::Config& cfg = p.config;
        const oracle::ChainShape& s = cfg.shape;
        const probe::RoutePattern pattern = p.pattern.value_or(probe::RoutePattern::SixLocal);
        const probe::Variant variant = p.variant.value_or(probe::Variant::Baseline);
        if (auto why = probe::patternInvalidReason(s, pattern))
            return {{"pattern", probe::patternName(pattern)}, {"not_valid", *why}};
        if (!initialised && o.initDevices) o.initDevices();
        initialised = true;
        DeviceSession& session = cache.get(s);
        deviceName = session.device().name();
        // The gate's sampling (timing.hpp): blocks on rebuilt chains, B executions a sample.
        TimingSettings ts;
        ts.repeats = o.repeats.value_or(p.repeats);
        ts.warmup = o.warmup.value_or(p.warmup);
        const PatternTiming pt = timePattern(session, {probe::Variant::Baseline, variant}, cfg, pattern, nullptr,
                                             cache.scratch.get(), ts, nullptr);
        const VariantTiming& a = pt.variants[0];
        const VariantTiming& b = pt.variants[1];
        const probe::Projection proj = projectTiming(pt, a, b, cfg);  // the gate's interval and verdict
        const auto host = probe::pairedSaving(a.hostNs, b.hostNs);
        const TimedCaseCheck check = checkTimedCase(session, s, *cache.scratch, pt, variant);
        if (check.correctness == "failed") anyFailed = true;
        return pointResult(cfg, pt, variant, ts, proj, host, check, deviceName);
    };

    // One writer per sweep output: a second sweep into the same --out, or a --resume while the
    // first still runs, would interleave rows in the JSONL (exit 2 naming the holder instead).
    const probe::OutputLock lock(ro.jsonlPath.string() + ".lock", "--out " + ro.jsonlPath.string());
    fmt::print("sweep {}: {} points{}, writing {} and {}{}\n", plan.name, plan.points.size(),
               plan.shard.empty() ? "" : fmt::format(" (shard {} of {} in all)", plan.shard, plan.allIds.size()),
               ro.jsonlPath.string(), ro.csvPath.string(), o.resume ? " (resuming)" : "");
    std::fflush(stdout);
    const InterruptHint hint(fmt::format(
        "\nze-probe: interrupted: sweep {} stopped; the finished points stay in {}. Continue it: rerun with the "
        "same options and --resume, e.g.\n"
        "  ze-probe --sweep {} --out {}{} --resume\n",
        plan.name, ro.jsonlPath.string(), o.file, o.outDir, resumeOptions(o)));
    probe::SweepRunner runner(std::move(plan), ro);
    const auto rows = runner.run(measure);
    if (tty) fmt::print(stderr, "\n");
    for (const auto& r : rows)
        if (r.contains("result") && r["result"].value("correctness", "") == "failed") anyFailed = true;
    fmt::print("{}", probe::formatSweepSummary(runner.plan(), rows,
                                               {"baseline_median_ns", "candidate_median_ns", "saving_median_ms",
                                                "saving_ci_low_ms", "gate_verdict", "correctness"}));
    fmt::print(
        "device times in ns (first kernel start to last kernel end); saving: projected over `layers`, ms, "
        "95% CI over blocks of rebuilt chains (the gate's: where a rerun lands, t over block medians); gate_verdict: "
        "pass / on_the_bar / "
        "fail\n");
    return anyFailed ? 1 : 0;
}

int runSweepMerge(const std::vector<std::string>& dirs, const std::string& outDir) {
    std::vector<std::filesystem::path> paths(dirs.begin(), dirs.end());
    const probe::SweepMerge m = probe::mergeSweepShards(paths);
    const std::filesystem::path out(outDir);
    const auto jsonl = out / (m.name + ".jsonl"), csv = out / (m.name + ".csv");
    for (const auto& file : {jsonl, csv}) probe::checkOutputFile(file, "-o");
    probe::writeSweepFiles(jsonl, csv, m.axisKeys, m.rows);
    fmt::print("sweep {}: merged {} of {} points from {} shard directories into {} and {}\n", m.name, m.rows.size(),
               m.total, dirs.size(), jsonl.string(), csv.string());
    if (m.missing.empty()) return 0;
    fmt::print(stderr, "ze-probe: error: sweep {}: {} of {} points missing (rerun their shards with --resume):\n",
               m.name, m.missing.size(), m.total);
    for (std::size_t i = 0; i < m.missing.size() && i < 20; ++i) fmt::print(stderr, "  {}\n", m.missing[i]);
    if (m.missing.size() > 20) fmt::print(stderr, "  ... and {} more\n", m.missing.size() - 20);
    return 1;
}

}  // namespace zp::app
