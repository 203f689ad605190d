#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "zp/probe/cases.hpp"
#include "zp/probe/timing_stats.hpp"

namespace zp::probe {
namespace {

using Clock = std::chrono::steady_clock;

bool isCandidate(const std::string& v) { return v != "baseline" && v != "m1_oracle"; }

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json summaryJson(const std::vector<double>& x) {
    const sched::Summary s = sched::summarize(x);
    return {{"median", s.median}, {"p05", s.p05},   {"p95", s.p95},       {"min", s.min},
            {"max", s.max},       {"mean", s.mean}, {"stddev", s.stddev}, {"n", s.n}};
}

double med(const std::vector<double>& x) { return x.empty() ? std::nan("") : sched::median(x); }

}  // namespace

TimingSettings TimingSettings::defaultsFor(const ze::DeviceInfo& d) {
    if (d.isGpu()) return {50, 5, false};
    return {12, 1, true};
}

std::string TimingSettings::describe() const {
    if (caseSet)
        return "the case set's own executions: each case once per variant (order rotated per case), so the pairs are "
               "(baseline, candidate) on the same case, up to 12 per pattern; the run's first case dropped as the "
               "warm-up";
    return fmt::format(
        "per pattern its case v0, {} warm-up + {} timed rounds, every variant once per round in an "
        "order rotated by one each round",
        warmup, repeats);
}

CaseSetRecorder::CaseSetRecorder(const oracle::ChainShape& s, std::vector<TraceSpan>* trace, std::string prefix)
    : shape_(s), trace_(trace), prefix_(std::move(prefix)) {}

void CaseSetRecorder::record(const std::string& variant, const sched::Case& kase, double hostNs,
                             const std::vector<sched::KernelSpan>& spans) {
    const std::string name = kase.name();
    if (firstCase_.empty()) firstCase_ = name;
    if (name == firstCase_) return;  // the warm-up
    const std::string pattern(sched::patternName(kase.pattern));
    std::size_t pi = 0;
    while (pi < patterns_.size() && patterns_[pi].pattern != pattern) ++pi;
    if (pi == patterns_.size()) {
        PatternTiming pt;
        pt.pattern = pattern;
        patterns_.push_back(std::move(pt));
        touched_.emplace_back();
        lastCase_.emplace_back();
    }
    PatternTiming& pt = patterns_[pi];
    if (lastCase_[pi] != name) {
        lastCase_[pi] = name;
        touched_[pi].push_back(int(kase.touchedLocalExperts.size()));
    }
    VariantTiming* vt = nullptr;
    for (auto& v : pt.variants)
        if (v.variant == variant) vt = &v;
    if (!vt) {
        pt.variants.emplace_back();
        vt = &pt.variants.back();
        vt->variant = variant;
        for (const auto& sp : spans) vt->kernels.push_back(sp.kernel);
        vt->kernelNs.resize(spans.size());
    }
    std::uint64_t first = UINT64_MAX, last = 0;
    for (std::size_t l = 0; l < spans.size() && l < vt->kernelNs.size(); ++l) {
        first = std::min(first, spans[l].startNs);
        last = std::max(last, spans[l].endNs);
        vt->kernelNs[l].push_back(double(spans[l].endNs - spans[l].startNs));
        if (trace_)
            trace_->push_back({prefix_ + variant,
                               spans[l].kernel,
                               spans[l].startNs,
                               spans[l].endNs,
                               {{"case", name}, {"pattern", pattern}, {"launch", l}}});
    }
    vt->deviceNs.push_back(spans.empty() ? 0.0 : double(last - first));
    vt->hostNs.push_back(hostNs);
}

std::vector<PatternTiming> CaseSetRecorder::result(const std::vector<std::string>& order) const {
    std::vector<PatternTiming> out;
    for (std::size_t pi = 0; pi < patterns_.size(); ++pi) {
        PatternTiming pt;
        pt.pattern = patterns_[pi].pattern;
        pt.caseName = fmt::format("{}/v0..v11, {} cases", pt.pattern, touched_[pi].size());
        std::vector<int> t = touched_[pi];
        std::sort(t.begin(), t.end());
        pt.touchedExperts = t.empty() ? 0 : t[t.size() / 2];
        pt.bytes = chainBytes(shape_, pt.touchedExperts);
        for (const auto& name : order)
            if (const VariantTiming* v = patterns_[pi].find(name)) pt.variants.push_back(*v);
        if (!pt.variants.empty() && !pt.variants.front().deviceNs.empty()) out.push_back(std::move(pt));
    }
    return out;
}

const VariantTiming* PatternTiming::find(const std::string& variant) const {
    for (const auto& v : variants)
        if (v.variant == variant) return &v;
    return nullptr;
}

std::uint64_t chainBytes(const oracle::ChainShape& s, int touched) {
    using W = oracle::LocalWeights;
    const std::uint64_t perExpert =
        W::w1BlocksPerExpert(s) + W::w1ScalesPerExpert(s) + W::w2BlocksPerExpert(s) + W::w2ScalesPerExpert(s);
    const std::uint64_t mh = std::uint64_t(s.rows) * s.hidden;
    const std::uint64_t mk = std::uint64_t(s.rows) * s.topK;
    return perExpert * std::uint64_t(touched) + 2 * mh * 2 /* hidden in, out: bf16 */ + mk * 8 /* ids, weights */;
}

PatternTiming timePattern(DeviceSession& session, const std::vector<sched::Variant>& variants, const sched::Config& cfg,
                          sched::RoutePattern pattern, const oracle::LocalWeights* fixedWeights,
                          oracle::LocalWeights* scratch, const TimingSettings& ts, std::vector<TraceSpan>* trace,
                          const std::string& trackPrefix) {
    const oracle::ChainShape& s = cfg.shape;
    const sched::Case kase = sched::makeCase(s, pattern, 0, cfg.seed, fixedWeights ? nullptr : scratch);
    if (!fixedWeights) session.uploadWeights(*scratch, kase.touchedLocalExperts);

    PatternTiming pt;
    pt.pattern = std::string(sched::patternName(pattern));
    pt.caseName = kase.name();
    pt.touchedExperts = int(kase.touchedLocalExperts.size());
    pt.bytes = chainBytes(s, pt.touchedExperts);
    pt.inputs = kase.inputs;
    std::vector<sched::DeviceChain*> chains;
    for (sched::Variant v : variants) {
        sched::DeviceChain& c = session.chain(v);
        c.setInputs(kase.inputs);
        chains.push_back(&c);
        VariantTiming vt;
        vt.variant = std::string(sched::variantName(v));
        for (const auto& l : c.plan().launches) vt.kernels.push_back(l.kernel);
        vt.kernelNs.resize(vt.kernels.size());
        pt.variants.push_back(std::move(vt));
    }
    const std::size_t n = chains.size();
    for (int round = -ts.warmup; round < ts.repeats; ++round) {
        // The whole order rotated by one each round: every variant takes every position
        // equally often, so a position effect (the first of a round runs colder) does not
        // favour anyone; the A/A control (baseline twice) measures what is left.
        std::vector<std::size_t> order;
        for (std::size_t k = 0; k < n; ++k) order.push_back((k + std::size_t(round + ts.warmup)) % n);
        for (std::size_t i : order) {
            const auto t0 = Clock::now();
            chains[i]->execute(session.queue());
            const double hostNs = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
            if (round < 0) continue;
            const auto spans = chains[i]->kernelSpans();
            VariantTiming& vt = pt.variants[i];
            std::uint64_t first = UINT64_MAX, last = 0;
            for (std::size_t l = 0; l < spans.size(); ++l) {
                first = std::min(first, spans[l].startNs);
                last = std::max(last, spans[l].endNs);
                vt.kernelNs[l].push_back(double(spans[l].endNs - spans[l].startNs));
                if (trace)
                    trace->push_back(
                        {trackPrefix + vt.variant,
                         spans[l].kernel,
                         spans[l].startNs,
                         spans[l].endNs,
                         {{"case", pt.caseName}, {"pattern", pt.pattern}, {"round", round}, {"launch", l}}});
            }
            vt.deviceNs.push_back(spans.empty() ? 0.0 : double(last - first));
            vt.hostNs.push_back(hostNs);
        }
    }
    return pt;
}

Bandwidth deviceBandwidth(DeviceSession& session) {
    const ze::DeviceInfo& d = session.device();
    double best = 0;
    for (const auto& m : d.memory)
        if (m.maxClockRate && m.maxBusWidth)
            best = std::max(best, double(m.maxClockRate) * 1e6 * double(m.maxBusWidth) / 8.0);
    if (best > 0) return {best, "L0 memory properties: maxClockRate x maxBusWidth / 8 (theoretical peak)"};

    const std::size_t bytes = std::size_t(d.isGpu() ? 256 : 64) << 20;
    ze::DeviceBuffer<std::uint8_t> src(session.context(), d, bytes), dst(session.context(), d, bytes);
    ze::ImmediateCommandList list(session.context(), d);
    ze::EventPool pool(session.context(), d, 1, ze::EventPoolOptions{.hostVisible = true, .kernelTimestamps = true});
    ze::Event ev(pool, 0);
    const std::uint8_t zero = 0;
    list.memoryFill(src.data(), &zero, 1, bytes);
    list.memoryFill(dst.data(), &zero, 1, bytes);
    list.synchronize();
    double bestNs = 0;
    bool fromTimestamps = true;
    for (int rep = 0; rep < 4; ++rep) {  // the first is a warm-up
        ev.hostReset();
        const auto t0 = Clock::now();
        list.memoryCopy(dst.data(), src.data(), bytes, &ev);
        list.synchronize();
        const double wall = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        double ns = 0;
        try {
            const auto t = ev.kernelTimestamp();
            ns = d.kernelClock().durationNs(t.context.kernelStart, t.context.kernelEnd);
        } catch (const ze::Error&) {
            ns = 0;
        }
        if (!(ns > 0)) {
            ns = wall;
            fromTimestamps = false;
        }
        if (rep > 0 && (bestNs == 0 || ns < bestNs)) bestNs = ns;
    }
    return {2.0 * double(bytes) / (bestNs * 1e-9),
            fmt::format("measured: device-to-device copy of {} MiB (read + write bytes / fastest of 3, {})",
                        bytes >> 20, fromTimestamps ? "event timestamps" : "host wall time")};
}

std::vector<sched::CandidateGate> evaluateCandidates(const std::vector<PatternTiming>& pts, const sched::Config& cfg,
                                                     const std::function<sched::CaseCounts(const std::string&)>& counts,
                                                     const std::vector<sched::NotValidPattern>& notValid) {
    std::vector<sched::CandidateGate> out;
    if (pts.empty()) return out;
    for (const auto& vt : pts.front().variants) {
        if (!isCandidate(vt.variant)) continue;
        std::vector<sched::Projection> proj;
        for (const auto& pt : pts) {
            const VariantTiming* base = pt.find("baseline");
            const VariantTiming* cand = pt.find(vt.variant);
            if (!base || !cand) continue;
            proj.push_back(
                sched::projectPattern(pt.pattern, base->deviceNs, cand->deviceNs, cfg.layers, cfg.gateMinSavingMs));
        }
        out.push_back(sched::evaluateGate(vt.variant, std::move(proj), counts(vt.variant), cfg.gateMinSavingMs,
                                          cfg.layers, notValid));
    }
    return out;
}

nlohmann::json timingsJson(const std::vector<PatternTiming>& pts, const TimingSettings& ts, const Bandwidth& bw) {
    nlohmann::json j = {
        {"mode", ts.caseSet ? "case_set" : "dedicated"},
        {"repeats", ts.repeats},
        {"warmup", ts.warmup},
        {"interleaving", ts.describe()},
        {"device_time", "first kernel start to last kernel end, kernel timestamps, ns"},
        {"host_time", "wall time of execute + synchronize of the recorded command list, ns"},
        {"bandwidth", {{"bytes_per_s", num(bw.bytesPerS)}, {"source", bw.source}}},
    };
    nlohmann::json patterns = nlohmann::json::object();
    for (const auto& pt : pts) {
        nlohmann::json p = {{"case", pt.caseName}, {"touched_experts", pt.touchedExperts}, {"bytes", pt.bytes}};
        nlohmann::json vars = nlohmann::json::object();
        for (const auto& vt : pt.variants) {
            const double devMed = med(vt.deviceNs);
            nlohmann::json kernels = nlohmann::json::array();
            for (std::size_t l = 0; l < vt.kernels.size(); ++l)
                kernels.push_back({{"launch", l}, {"kernel", vt.kernels[l]}, {"median_ns", num(med(vt.kernelNs[l]))}});
            vars[vt.variant] = {
                {"launches", vt.launches()},
                {"device_ns", summaryJson(vt.deviceNs)},
                {"host_ns", summaryJson(vt.hostNs)},
                {"samples", {{"device_ns", vt.deviceNs}, {"host_ns", vt.hostNs}}},
                {"kernels", kernels},
                {"roofline_fraction", num(double(pt.bytes) / (devMed * 1e-9) / bw.bytesPerS)},
            };
        }
        p["variants"] = std::move(vars);
        patterns[pt.pattern] = std::move(p);
    }
    j["patterns"] = std::move(patterns);
    return j;
}

nlohmann::json projectionsJson(const std::vector<PatternTiming>& pts, const sched::Config& cfg) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& pt : pts) {
        const VariantTiming* base = pt.find("baseline");
        if (!base) continue;
        for (const auto& vt : pt.variants) {
            if (!isCandidate(vt.variant)) continue;
            const auto dev = sched::projectSaving(sched::pairedSaving(base->deviceNs, vt.deviceNs), cfg.layers);
            const auto host = sched::projectSaving(sched::pairedSaving(base->hostNs, vt.hostNs), cfg.layers);
            j[vt.variant][pt.pattern] = {
                {"device",
                 {{"median_ms", num(dev.medianMs)},
                  {"ci_low_ms", num(dev.ciLowMs)},
                  {"ci_high_ms", num(dev.ciHighMs)}}},
                {"host",
                 {{"median_ms", num(host.medianMs)},
                  {"ci_low_ms", num(host.ciLowMs)},
                  {"ci_high_ms", num(host.ciHighMs)}}},
                {"pairs", vt.deviceNs.size()},
            };
        }
    }
    return j;
}

nlohmann::json launchFloorJson(const std::vector<PatternTiming>& pts) {
    for (const auto& pt : pts) {
        if (pt.pattern != "all_remote") continue;
        const VariantTiming* base = pt.find("baseline");
        nlohmann::json j = {
            {"pattern", "all_remote"},
            {"what", "no local route: every launch exits at once, so time per launch is the launch overhead"}};
        nlohmann::json vars = nlohmann::json::object();
        for (const auto& vt : pt.variants) {
            const double L = std::max(1, vt.launches());
            nlohmann::json v = {{"launches", vt.launches()},
                                {"device_us_per_launch", num(med(vt.deviceNs) / L / 1e3)},
                                {"host_us_per_launch", num(med(vt.hostNs) / L / 1e3)}};
            if (base && &vt != base) {
                const auto ps = sched::pairedSaving(base->deviceNs, vt.deviceNs);
                const auto ph = sched::pairedSaving(base->hostNs, vt.hostNs);
                v["launches_removed"] = base->launches() - vt.launches();
                v["saving_device_us"] = num(ps.median / 1e3);
                v["saving_host_us"] = num(ph.median / 1e3);
            }
            vars[vt.variant] = std::move(v);
        }
        j["variants"] = std::move(vars);
        return j;
    }
    return nullptr;
}

std::string formatTimings(const std::vector<PatternTiming>& pts, const TimingSettings& ts, const Bandwidth& bw) {
    std::string out;
    if (pts.empty()) return "timing: no valid pattern to time\n";
    out += fmt::format(
        "timing: {}; device = first kernel start..last kernel end (kernel timestamps), host = execute + synchronize "
        "wall; medians in us\n",
        ts.describe());
    std::string head = fmt::format("  {:<22}", "pattern");
    for (const auto& vt : pts.front().variants) head += fmt::format(" | {:>20}", vt.variant);
    out += head + "\n";
    out += fmt::format("  {:<22}", "");
    for (std::size_t i = 0; i < pts.front().variants.size(); ++i)
        out += fmt::format(" | {:>9} {:>10}", "device", "host");
    out += "\n";
    for (const auto& pt : pts) {
        std::string line = fmt::format("  {:<22}", pt.pattern);
        for (const auto& vt : pt.variants)
            line += fmt::format(" | {:>9.1f} {:>10.1f}", med(vt.deviceNs) / 1e3, med(vt.hostNs) / 1e3);
        out += line + "\n";
    }
    // Per-kernel breakdown of the baseline (the others are in card<N>.json).
    for (const auto& pt : pts) {
        const VariantTiming* base = pt.find("baseline");
        if (!base) continue;
        std::string line = fmt::format("  baseline kernels, {}:", pt.pattern);
        for (std::size_t l = 0; l < base->kernels.size(); ++l)
            line += fmt::format(" {} {:.1f}", base->kernels[l], med(base->kernelNs[l]) / 1e3);
        out += line + " us\n";
        break;
    }
    for (const auto& pt : pts) {
        if (pt.pattern != "all_remote") continue;
        out += "launch floor (all_remote: every launch exits at once):\n";
        const VariantTiming* base = pt.find("baseline");
        for (const auto& vt : pt.variants) {
            const double L = std::max(1, vt.launches());
            std::string line =
                fmt::format("  {:<20} {} launches, {:.1f} us/launch device, {:.1f} us/launch host", vt.variant,
                            vt.launches(), med(vt.deviceNs) / L / 1e3, med(vt.hostNs) / L / 1e3);
            if (base && &vt != base) {
                const auto ps = sched::pairedSaving(base->deviceNs, vt.deviceNs);
                const auto ph = sched::pairedSaving(base->hostNs, vt.hostNs);
                line += fmt::format("; {} launch(es) fewer, saves {:.1f} us device, {:.1f} us host",
                                    base->launches() - vt.launches(), ps.median / 1e3, ph.median / 1e3);
            }
            out += line + "\n";
        }
    }
    out += fmt::format("roofline: bandwidth {:.1f} GB/s ({})\n", bw.bytesPerS / 1e9, bw.source);
    for (const auto& pt : pts) {
        const VariantTiming* base = pt.find("baseline");
        const VariantTiming* best = nullptr;
        for (const auto& vt : pt.variants)
            if (isCandidate(vt.variant) && (!best || med(vt.deviceNs) < med(best->deviceNs))) best = &vt;
        auto frac = [&](const VariantTiming* v) { return double(pt.bytes) / (med(v->deviceNs) * 1e-9) / bw.bytesPerS; };
        std::string line =
            fmt::format("  {:<22} {:>9.2f} MB ({} experts)", pt.pattern, double(pt.bytes) / 1e6, pt.touchedExperts);
        if (base) line += fmt::format("  baseline {:5.1f}%", 100 * frac(base));
        if (best) line += fmt::format("  best candidate {} {:5.1f}%", best->variant, 100 * frac(best));
        out += line + " of bandwidth\n";
    }
    return out;
}

}  // namespace zp::probe
