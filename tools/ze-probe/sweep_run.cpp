#include "sweep_run.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

#include <unistd.h>

#include <fmt/format.h>

#include "device_session.hpp"
#include "timing.hpp"
#include "zp/probe/sweep.hpp"

namespace zp::probe {
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
    std::optional<sched::KernelTuning> tuning;
    std::string key;
    std::unique_ptr<DeviceSession> session;
    std::unique_ptr<oracle::LocalWeights> scratch;

    DeviceSession& get(const oracle::ChainShape& s) {
        const std::string k = shapeKey(s);
        if (!session || k != key) {
            session.reset();
            scratch.reset();
            std::vector<sched::Variant> all(sched::kAllVariants.begin(), sched::kAllVariants.end());
            session = std::make_unique<DeviceSession>(device, s, all, tuning);
            scratch = std::make_unique<oracle::LocalWeights>(oracle::LocalWeights::zeros(s));
            key = k;
        }
        return *session;
    }
};

}  // namespace

int runSweep(const SweepCliOptions& o) {
    const sched::SweepSpec spec = sched::loadSweep(o.file);
    sched::SweepPlan plan = sched::expandSweep(spec);
    const std::filesystem::path out(o.outDir);
    sched::SweepRunOptions ro;
    ro.jsonlPath = out / (plan.name + ".jsonl");
    ro.csvPath = out / (plan.name + ".csv");
    ro.resume = o.resume;
    ro.overwrite = o.overwrite;
    const bool tty = ::isatty(STDERR_FILENO);
    ro.progress = [tty](const sched::SweepProgress& p) {
        const std::string line = sched::formatSweepProgress(p);
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
    const auto measure = [&](const sched::SweepPoint& p) -> nlohmann::json {
        const sched::Config& cfg = p.config;
        const oracle::ChainShape& s = cfg.shape;
        const sched::RoutePattern pattern = p.pattern.value_or(sched::RoutePattern::SixLocal);
        const sched::Variant variant = p.variant.value_or(sched::Variant::Baseline);
        if (auto why = sched::patternInvalidReason(s, pattern))
            return {{"pattern", sched::patternName(pattern)}, {"not_valid", *why}};
        if (!initialised && o.initDevices) o.initDevices();
        initialised = true;
        DeviceSession& session = cache.get(s);
        deviceName = session.device().name();
        const TimingSettings ts{o.repeats.value_or(p.repeats), o.warmup.value_or(p.warmup)};
        const PatternTiming pt = timePattern(session, {sched::Variant::Baseline, variant}, cfg, pattern, nullptr,
                                             cache.scratch.get(), ts, nullptr);
        const VariantTiming& a = pt.variants[0];
        const VariantTiming& b = pt.variants[1];
        const auto dev = sched::pairedSaving(a.deviceNs, b.deviceNs);
        const auto proj = sched::projectSaving(dev, cfg.layers);
        const auto host = sched::pairedSaving(a.hostNs, b.hostNs);

        // The chains' last execute ran the timed case: check it against the host oracle.
        const auto silu = oracle::buildSiluTable(s.swigluAlpha);
        const auto want = oracle::runChain(s, *cache.scratch, pt.inputs, silu);
        std::string correctness = "passed";
        nlohmann::json mismatches = nlohmann::json::array();
        if (session.flushesSubnormals() && want.metSubnormal) {
            correctness = "skipped";
        } else {
            for (sched::Variant v : {sched::Variant::Baseline, variant}) {
                const auto got = toExecutorResult(s, v, session.chain(v).results());
                if (auto why = compareWithOracle(s, want, got)) {
                    correctness = "failed";
                    mismatches.push_back({{"variant", sched::variantName(v)}, {"message", *why}});
                }
            }
        }
        if (correctness == "failed") anyFailed = true;
        return {
            {"baseline_median_ns", num(sched::median(a.deviceNs))},
            {"candidate_median_ns", num(sched::median(b.deviceNs))},
            {"saving_median_ms", num(proj.medianMs)},
            {"saving_ci_low_ms", num(proj.ciLowMs)},
            {"saving_ci_high_ms", num(proj.ciHighMs)},
            {"passes_gate", std::isfinite(proj.ciLowMs) && proj.ciLowMs >= cfg.gateMinSavingMs},
            {"baseline_host_median_ns", num(sched::median(a.hostNs))},
            {"candidate_host_median_ns", num(sched::median(b.hostNs))},
            {"host_saving_median_us", num(host.median / 1e3)},
            {"pattern", pt.pattern},
            {"variant", sched::variantName(variant)},
            {"case", pt.caseName},
            {"pairs", dev.pairs},
            {"warmup", ts.warmup},
            {"layers", cfg.layers},
            {"min_saving_ms", cfg.gateMinSavingMs},
            {"correctness", correctness},
            {"correctness_scope", "the timed case, baseline and the point's variant, against the host oracle"},
            {"mismatches", mismatches},
            {"device", deviceName},
        };
    };

    fmt::print("sweep {}: {} points, writing {} and {}{}\n", plan.name, plan.points.size(), ro.jsonlPath.string(),
               ro.csvPath.string(), o.resume ? " (resuming)" : "");
    std::fflush(stdout);
    sched::SweepRunner runner(std::move(plan), ro);
    const auto rows = runner.run(measure);
    if (tty) fmt::print(stderr, "\n");
    for (const auto& r : rows)
        if (r.contains("result") && r["result"].value("correctness", "") == "failed") anyFailed = true;
    fmt::print("{}", sched::formatSweepSummary(runner.plan(), rows,
                                               {"baseline_median_ns", "candidate_median_ns", "saving_median_ms",
                                                "saving_ci_low_ms", "correctness"}));
    fmt::print(
        "device times in ns (first kernel start to last kernel end); saving: projected over `layers`, ms, "
        "95% bootstrap CI over the interleaved pairs\n");
    return anyFailed ? 1 : 0;
}

}  // namespace zp::probe
