#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include <unistd.h>

#include <fmt/format.h>

#include "zp/probe/cases.hpp"
#include "zp/probe/timing_stats.hpp"

namespace zp::app {
namespace {

using Clock = std::chrono::steady_clock;

bool isCandidate(const std::string& v) { return v != "baseline" && v != "m1_oracle"; }

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

double med(const std::vector<double>& x) { return x.empty() ? std::nan("") : probe::median(x); }

}  // namespace

nlohmann::json summaryJson(const std::vector<double>& x) {
    const probe::Summary s = probe::summarize(x);
    return {{"median", s.median}, {"p05", s.p05},   {"p95", s.p95},       {"min", s.min},
            {"max", s.max},       {"mean", s.mean}, {"stddev", s.stddev}, {"n", s.n}};
}

TimingSettings TimingSettings::defaultsFor(const runtime::DeviceInfo& d) {
    // 10 blocks, not 5: on the H200 a launch-bound pattern's block sits in one of two states for
    // seconds at a time (all_remote's baseline ~43 or ~65 µs, the GPU clock fixed at 1980 MHz;
    // docs/perf.md), so a run of 5 blocks often lands all in one state and its interval misses
    // the next run's; with 10 the rerun interval holds it ~90–95% of the time even then.
    if (d.isGpu()) return {50, 2, 10, false, true};
    return {12, 1, 6, true, false};
}

std::string TimingSettings::describe() const {
    if (caseSet)
        return "the case set's own executions: each case once per variant (order rotated per case), so the pairs are "
               "(baseline, candidate) on the same case, up to 12 per pattern, in blocks of two cases, the chains "
               "rebuilt before each block; the run's first case dropped as the warm-up";
    return fmt::format(
        "per pattern its case v0 in {} blocks, {}, {} warm-up + {} timed rounds a block, every variant once per round "
        "in an order rotated by one each round",
        blocks,
        blockProcesses ? "the first in this process before the cases, each other one in a fresh ze-probe process "
                         "(new context, kernels loaded again, new allocations), spread between the patterns' cases; "
                         "a trace holds the first block"
                       : "each on chains rebuilt as a fresh process builds them",
        warmup, roundsPerBlock());
}

std::vector<std::vector<double>> splitBlocks(const std::vector<double>& samples,
                                             const std::vector<std::size_t>& blockEnds) {
    std::vector<std::vector<double>> out;
    std::size_t begin = 0;
    for (std::size_t end : blockEnds) {
        end = std::min(end, samples.size());
        if (end > begin)
            out.emplace_back(samples.begin() + std::ptrdiff_t(begin), samples.begin() + std::ptrdiff_t(end));
        begin = std::max(begin, end);
    }
    return out;
}

std::vector<std::vector<double>> PatternTiming::blocksOf(const std::vector<double>& samples) const {
    return splitBlocks(samples, blockEnds);
}

CaseSetRecorder::CaseSetRecorder(const oracle::ChainShape& s, double tickNs, std::vector<TraceSpan>* trace,
                                 std::string prefix)
    : shape_(s), tickNs_(tickNs), trace_(trace), prefix_(std::move(prefix)) {}

bool CaseSetRecorder::opensBlock(const probe::Case& kase) const {
    return !firstCase_.empty() && kase.name() != firstCase_ && kase.inputVariant % 2 == 0;
}

void CaseSetRecorder::record(const std::string& variant, const probe::Case& kase, double hostNs,
                             const std::vector<scheduler::KernelSpan>& spans) {
    const std::string name = kase.name();
    if (firstCase_.empty()) firstCase_ = name;
    if (name == firstCase_) return;  // the warm-up
    const std::string pattern(probe::patternName(kase.pattern));
    std::size_t pi = 0;
    while (pi < patterns_.size() && patterns_[pi].pattern != pattern) ++pi;
    if (pi == patterns_.size()) {
        PatternTiming pt;
        pt.pattern = pattern;
        pt.tickNs = tickNs_;
        patterns_.push_back(std::move(pt));
        touched_.emplace_back();
        lastCase_.emplace_back();
        lastBlock_.push_back(-1);
    }
    PatternTiming& pt = patterns_[pi];
    if (lastCase_[pi] != name) {
        lastCase_[pi] = name;
        touched_[pi].push_back(int(kase.touchedLocalExperts.size()));
        const int block = kase.inputVariant / 2;
        if (block != lastBlock_[pi] || pt.blockEnds.empty()) {  // cumulative: a new block starts where the last ended
            pt.blockEnds.push_back(pt.blockEnds.empty() ? 0 : pt.blockEnds.back());
            lastBlock_[pi] = block;
        }
        ++pt.blockEnds.back();
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
        pt.tickNs = tickNs_;
        pt.blockEnds = patterns_[pi].blockEnds;
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

namespace {

// The pattern's case v0 (its touched experts drawn into `scratch` unless the weights are fixed).
probe::Case caseV0(const probe::Config& cfg, probe::RoutePattern pattern, const oracle::LocalWeights* fixed,
                   oracle::LocalWeights* scratch) {
    return probe::makeCase(cfg.shape, pattern, 0, cfg.seed, fixed ? nullptr : scratch);
}

// One block: the chains rebuilt, the case's inputs uploaded, warm-ups, `rounds` timed rounds.
// `chooseB`: the first block sets pt.batch from single executions first.
void timeBlock(PatternTiming& pt, DeviceSession& session, const std::vector<probe::Variant>& variants,
               const probe::Case& kase, const oracle::LocalWeights& weights, bool fixedWeights, int warmup, int rounds,
               bool chooseB, std::vector<TraceSpan>* trace, const std::string& trackPrefix, std::size_t rotation = 0) {
    session.rebuild(weights, fixedWeights ? std::span<const int>{} : std::span<const int>(kase.touchedLocalExperts));
    std::vector<scheduler::DeviceChain*> chains;
    for (probe::Variant v : variants) {
        scheduler::DeviceChain& c = session.chain(v);
        c.setInputs(kase.inputs);
        chains.push_back(&c);
    }
    const std::size_t n = chains.size();
    if (chooseB) {
        double fastest = std::numeric_limits<double>::infinity();
        for (int w = 0; w < std::max(1, warmup); ++w)
            for (auto* c : chains) fastest = std::min(fastest, c->executeBatch(session.queue(), 1));
        pt.batch = chooseBatch(pt.tickNs, fastest);
    }
    const int B = pt.batch;
    const int block = int(pt.blockEnds.size());
    const std::size_t before = pt.variants.front().deviceNs.size();
    for (int round = -warmup; round < rounds; ++round) {
        // The whole order rotated by one each round (and on across blocks): every variant takes
        // every position equally often, so a position effect (the first of a round runs colder)
        // does not favour anyone; the A/A control (baseline twice) measures what is left.
        const std::size_t shift = rotation + before + std::size_t(round + warmup);
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = (k + shift) % n;
            const auto t0 = Clock::now();
            const double spanNs = chains[i]->executeBatch(session.queue(), B);
            const double hostNs = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
            if (round < 0) continue;
            const auto spans = chains[i]->kernelSpans();  // the last execution of the sample
            VariantTiming& vt = pt.variants[i];
            for (std::size_t l = 0; l < spans.size(); ++l) {
                vt.kernelNs[l].push_back(double(spans[l].endNs - spans[l].startNs));
                if (trace)
                    trace->push_back({trackPrefix + vt.variant,
                                      spans[l].kernel,
                                      spans[l].startNs,
                                      spans[l].endNs,
                                      {{"case", kase.name()},
                                       {"pattern", pt.pattern},
                                       {"block", block},
                                       {"round", round},
                                       {"launch", l}}});
            }
            vt.deviceNs.push_back(spanNs / B);
            vt.hostNs.push_back(hostNs / B);
        }
    }
    pt.blockEnds.push_back(pt.variants.front().deviceNs.size());
    pt.blockPids.push_back(long(::getpid()));
}

}  // namespace

namespace {

PatternTiming emptyTiming(DeviceSession& session, const std::vector<probe::Variant>& variants,
                          const oracle::ChainShape& shape, const probe::Case& kase) {
    PatternTiming pt;
    pt.pattern = std::string(probe::patternName(kase.pattern));
    pt.caseName = kase.name();
    pt.touchedExperts = int(kase.touchedLocalExperts.size());
    pt.bytes = chainBytes(shape, pt.touchedExperts);
    pt.inputs = kase.inputs;
    pt.tickNs = session.device().kernelClock().nsPerTick;
    for (probe::Variant v : variants) {
        VariantTiming vt;
        vt.variant = std::string(probe::variantName(v));
        for (const auto& l : session.chain(v).plan().launches) vt.kernels.push_back(l.kernel);
        vt.kernelNs.resize(vt.kernels.size());
        pt.variants.push_back(std::move(vt));
    }
    return pt;
}

}  // namespace

PatternTiming timePattern(DeviceSession& session, const std::vector<probe::Variant>& variants, const probe::Config& cfg,
                          probe::RoutePattern pattern, const oracle::LocalWeights* fixedWeights,
                          oracle::LocalWeights* scratch, const TimingSettings& ts, std::vector<TraceSpan>* trace,
                          const std::string& trackPrefix, int batch, std::size_t rotation) {
    const probe::Case kase = caseV0(cfg, pattern, fixedWeights, scratch);
    PatternTiming pt = emptyTiming(session, variants, cfg.shape, kase);
    if (batch > 0) pt.batch = batch;
    const oracle::LocalWeights& w = fixedWeights ? *fixedWeights : *scratch;
    for (int b = 0; b < ts.blocks; ++b)
        timeBlock(pt, session, variants, kase, w, fixedWeights != nullptr, ts.warmup, ts.roundsPerBlock(),
                  batch <= 0 && b == 0, trace, trackPrefix, rotation);
    return pt;
}

int deviceBatch(DeviceSession& session, const std::vector<probe::Variant>& variants, const probe::Config& cfg,
                const std::vector<probe::RoutePattern>& patterns, const oracle::LocalWeights* fixedWeights,
                oracle::LocalWeights* scratch) {
    const double tick = session.device().kernelClock().nsPerTick;
    if (probe::chooseBatch(tick, 1000.0) == 1) return 1;  // a fine timer: any chain (>= 1 us) spans 200 ticks
    double fastest = std::numeric_limits<double>::infinity();
    for (probe::RoutePattern p : patterns) {
        if (probe::patternInvalidReason(cfg.shape, p)) continue;
        const probe::Case kase = caseV0(cfg, p, fixedWeights, scratch);
        const oracle::LocalWeights& w = fixedWeights ? *fixedWeights : *scratch;
        session.rebuild(w, fixedWeights ? std::span<const int>{} : std::span<const int>(kase.touchedLocalExperts));
        for (probe::Variant v : variants) {
            scheduler::DeviceChain& c = session.chain(v);
            c.setInputs(kase.inputs);
            c.executeBatch(session.queue(), 1);  // warm-up
            fastest = std::min(fastest, c.executeBatch(session.queue(), 1));
        }
    }
    return probe::chooseBatch(tick, fastest);
}

nlohmann::json blockSamplesJson(const std::vector<PatternTiming>& pts) {
    nlohmann::json patterns = nlohmann::json::array();
    for (const auto& pt : pts) {
        nlohmann::json vars = nlohmann::json::array();
        for (const auto& vt : pt.variants)
            vars.push_back({{"variant", vt.variant},
                            {"kernels", vt.kernels},
                            {"device_ns", vt.deviceNs},
                            {"host_ns", vt.hostNs},
                            {"kernel_ns", vt.kernelNs}});
        patterns.push_back(
            {{"pattern", pt.pattern}, {"batch", pt.batch}, {"pid", long(::getpid())}, {"variants", vars}});
    }
    return {{"patterns", patterns}};
}

void appendBlock(std::vector<PatternTiming>& pts, const nlohmann::json& block) {
    const auto fail = [](const std::string& what) {
        throw std::runtime_error("a timing block from a child process does not match this run: " + what);
    };
    for (const auto& p : block.at("patterns")) {
        const std::string name = p.at("pattern").get<std::string>();
        auto pt = std::find_if(pts.begin(), pts.end(), [&](const PatternTiming& t) { return t.pattern == name; });
        if (pt == pts.end()) fail("pattern " + name);
        if (p.at("batch").get<int>() != pt->batch)
            fail(fmt::format("{}: batch {} (here {})", name, p["batch"].dump(), pt->batch));
        const auto& vars = p.at("variants");
        if (vars.size() != pt->variants.size()) fail(name + ": another set of variants");
        std::size_t added = 0;
        for (std::size_t i = 0; i < vars.size(); ++i) {
            VariantTiming& vt = pt->variants[i];
            const auto& v = vars[i];
            if (v.at("variant").get<std::string>() != vt.variant) fail(name + ": variant " + v["variant"].dump());
            if (v.at("kernels").get<std::vector<std::string>>() != vt.kernels)
                fail(name + ": launches of " + vt.variant);
            const auto dev = v.at("device_ns").get<std::vector<double>>();
            const auto host = v.at("host_ns").get<std::vector<double>>();
            const auto kern = v.at("kernel_ns").get<std::vector<std::vector<double>>>();
            if (host.size() != dev.size() || kern.size() != vt.kernels.size()) fail(name + ": ragged samples");
            for (const auto& k : kern)
                if (k.size() != dev.size()) fail(name + ": ragged kernel samples");
            if (i == 0) added = dev.size();
            if (dev.size() != added || dev.empty()) fail(name + ": unequal rounds");
            vt.deviceNs.insert(vt.deviceNs.end(), dev.begin(), dev.end());
            vt.hostNs.insert(vt.hostNs.end(), host.begin(), host.end());
            for (std::size_t l = 0; l < kern.size(); ++l)
                vt.kernelNs[l].insert(vt.kernelNs[l].end(), kern[l].begin(), kern[l].end());
        }
        pt->blockEnds.push_back(pt->variants.front().deviceNs.size());
        pt->blockPids.push_back(p.at("pid").get<long>());
    }
}

void addBlocks(PatternTiming& pt, int blocks, DeviceSession& session, const std::vector<probe::Variant>& variants,
               const probe::Config& cfg, const oracle::LocalWeights* fixedWeights, oracle::LocalWeights* scratch,
               const TimingSettings& ts, std::vector<TraceSpan>* trace, const std::string& trackPrefix) {
    const probe::Case kase = caseV0(cfg, probe::parsePattern(pt.pattern), fixedWeights, scratch);
    if (pt.caseName.find("dedicated") == std::string::npos && pt.caseName != kase.name())
        pt.caseName += fmt::format(", then dedicated blocks of {}", kase.name());
    pt.tickNs = session.device().kernelClock().nsPerTick;
    const bool chooseB = pt.batch <= 1 && pt.tickNs > 1;  // a case-set pattern has not chosen B
    const oracle::LocalWeights& w = fixedWeights ? *fixedWeights : *scratch;
    for (int b = 0; b < blocks; ++b)
        timeBlock(pt, session, variants, kase, w, fixedWeights != nullptr, ts.warmup, ts.roundsPerBlock(),
                  chooseB && b == 0, trace, trackPrefix);
    pt.inputs = kase.inputs;
}

Bandwidth deviceBandwidth(DeviceSession& session) {
    const runtime::DeviceInfo& d = session.device();
    double best = 0;
    for (const auto& m : d.memory)
        if (m.maxClockRate && m.maxBusWidth)
            best = std::max(best, double(m.maxClockRate) * 1e6 * double(m.maxBusWidth) / 8.0);
    if (best > 0) return {best, "L0 memory properties: maxClockRate x maxBusWidth / 8 (theoretical peak)"};

    const std::size_t bytes = std::size_t(d.isGpu() ? 256 : 64) << 20;
    runtime::DeviceBuffer<std::uint8_t> src(session.context(), d, bytes), dst(session.context(), d, bytes);
    runtime::ImmediateCommandList list(session.context(), d);
    runtime::EventPool pool(session.context(), d, 1,
                            runtime::EventPoolOptions{.hostVisible = true, .kernelTimestamps = true});
    runtime::Event ev(pool, 0);
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
        } catch (const runtime::Error&) {
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

probe::Projection projectTiming(const PatternTiming& pt, const VariantTiming& base, const VariantTiming& cand,
                                const probe::Config& cfg) {
    const auto a = pt.blocksOf(base.deviceNs), b = pt.blocksOf(cand.deviceNs);
    if (a.size() < 2) {  // no between-block spread: no interval, never a pass
        probe::Projection p;
        p.pattern = pt.pattern;
        p.medianMs = p.ciLowMs = p.ciHighMs = std::nan("");
        p.blocks = a.size();
        p.pairs = base.deviceNs.size();
        return p;
    }
    return probe::projectPattern(pt.pattern, a, b, cfg.layers, cfg.gateMinSavingMs, pt.tickNs / pt.batch);
}

std::vector<probe::CandidateGate> evaluateCandidates(const std::vector<PatternTiming>& pts, const probe::Config& cfg,
                                                     const std::function<probe::CaseCounts(const std::string&)>& counts,
                                                     const std::vector<probe::NotValidPattern>& notValid) {
    std::vector<probe::CandidateGate> out;
    if (pts.empty()) return out;
    for (const auto& vt : pts.front().variants) {
        if (!isCandidate(vt.variant)) continue;
        std::vector<probe::Projection> proj;
        for (const auto& pt : pts) {
            const VariantTiming* base = pt.find("baseline");
            const VariantTiming* cand = pt.find(vt.variant);
            if (!base || !cand) continue;
            proj.push_back(projectTiming(pt, *base, *cand, cfg));
        }
        out.push_back(probe::evaluateGate(vt.variant, std::move(proj), counts(vt.variant), cfg.gateMinSavingMs,
                                          cfg.layers, notValid));
        out.back().referenceStepMs = cfg.gateReferenceStepMs;
    }
    return out;
}

nlohmann::json timingsJson(const std::vector<PatternTiming>& pts, const TimingSettings& ts, const Bandwidth& bw) {
    nlohmann::json j = {
        {"mode", ts.caseSet ? "case_set" : "dedicated"},
        {"block_isolation", ts.blockProcesses ? "process" : "rebuild"},
        {"repeats", ts.repeats},
        {"warmup", ts.warmup},
        {"blocks", ts.blocks},
        {"rounds_per_block", ts.caseSet ? 2 : ts.roundsPerBlock()},
        {"min_ticks_per_sample", kMinTicksPerSample},
        {"sample",
         "B back-to-back executions of the recorded chain, first kernel start of the first to last kernel end of the "
         "last, / B; B per pattern so a sample spans >= 200 kernel timer ticks; per-kernel times of one execution"},
        {"interleaving", ts.describe()},
        {"device_time", "first kernel start to last kernel end, kernel timestamps, ns"},
        {"host_time", "wall time of execute + synchronize of the recorded command list, ns"},
        {"bandwidth", {{"bytes_per_s", num(bw.bytesPerS)}, {"source", bw.source}}},
    };
    nlohmann::json patterns = nlohmann::json::object();
    for (const auto& pt : pts) {
        nlohmann::json p = {{"case", pt.caseName},       {"touched_experts", pt.touchedExperts},
                            {"bytes", pt.bytes},         {"batch", pt.batch},
                            {"tick_ns", pt.tickNs},      {"blocks", pt.blockEnds.size()},
                            {"block_ends", pt.blockEnds}};
        if (!pt.blockPids.empty()) p["block_pids"] = pt.blockPids;
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

nlohmann::json projectionsJson(const std::vector<PatternTiming>& pts, const probe::Config& cfg) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& pt : pts) {
        const VariantTiming* base = pt.find("baseline");
        if (!base) continue;
        for (const auto& vt : pt.variants) {
            if (!isCandidate(vt.variant)) continue;
            const probe::Projection d = projectTiming(pt, *base, vt, cfg);
            const probe::ProjectedSaving dev{d.medianMs, d.ciLowMs, d.ciHighMs};
            probe::ProjectedSaving host{std::nan(""), std::nan(""), std::nan("")};
            if (pt.blocksOf(base->hostNs).size() >= 2)
                host = probe::projectSaving(probe::blockedSaving(pt.blocksOf(base->hostNs), pt.blocksOf(vt.hostNs)),
                                            cfg.layers);
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
                {"blocks", d.blocks},
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
                const auto ps = probe::pairedSaving(base->deviceNs, vt.deviceNs);
                const auto ph = probe::pairedSaving(base->hostNs, vt.hostNs);
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
        out += line + fmt::format("   (B = {} per sample, timer {:g} ns, {} blocks)\n", pt.batch, pt.tickNs,
                                  pt.blockEnds.size());
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
                const auto ps = probe::pairedSaving(base->deviceNs, vt.deviceNs);
                const auto ph = probe::pairedSaving(base->hostNs, vt.hostNs);
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

}  // namespace zp::app
