// zp-chain-bench: the device chain of every variant against the memory roofline of the
// device it runs on, and the per-launch cost of a recorded chain against raw OpenCL.
//
// On one device, in one run:
//   1. copy bandwidth: a device->device memoryCopy of --copy-mib MiB through the runtime,
//      timed with event timestamps (median of 5); bandwidth = 2 x bytes / time (read + write);
//   2. per route pattern (six_local, same_typical, disjoint_typical, all_remote at the default
//      shape: zp::probe::makeCase, input variant 0) and per --tuning: every variant's chain
//      is run once and its `out` checked bit for bit against the host oracle (a mismatch
//      fails the run, exit 1), then replayed --replays times; the median chain time (first
//      kernel start -> last kernel end) and the median of each kernel are printed with the
//      bytes each kernel must move, its GB/s and its fraction of the copy bandwidth;
//      with --batch B also replayed B times back to back in one list, as the gate's samples are
//      (DeviceChain::executeBatch: first start to last end / B, and the host's wall time / B);
//   3. all_remote: each tuning's recorded baseline chain appended --chain-reps times into one
//      regular list, wall time per launch, against raw OpenCL back-to-back launches of an empty
//      kernel on the same device (tools/bench/raw_opencl.hpp, shared with zecl-launch-bench); the goal takes the
//      cheapest tuning;
//   4. the goal ratios (docs/perf.md).
// A program that prints figures, not a test.
#include "raw_opencl.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "zp/cli/cli.hpp"
#include "zp/oracle/chain.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/probe/cases.hpp"
#include "zp/scheduler/device_chain.hpp"
#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/kernel_modules.hpp"
#include "zp/scheduler/kernel_tuning.hpp"
#include "zp/scheduler/device_setup.hpp"
#include "zp/probe/compare.hpp"
#include "zp/probe/timing_stats.hpp"

namespace {

using zp::oracle::bf16_t;
using zp::oracle::ChainShape;
using zp::probe::median;
using zp::probe::RoutePattern;
using zp::probe::Variant;
using zp::scheduler::KernelTuning;

constexpr std::uint64_t kBaseSeed = 20240611;

// ------------------------------------------------------------------------------ bytes

// MXFP4 bytes of one expert's W1 / W2 (16 code bytes + 1 scale byte per 32 elements).
double w1Bytes(const ChainShape& s) { return 2.0 * s.intermediate * s.hidden * 17 / 32; }
double w2Bytes(const ChainShape& s) { return 1.0 * s.hidden * s.intermediate * 17 / 32; }

// What kernel `name` must move at least (weights of the G touched experts, or of R routes for
// m1_oracle which does not deduplicate; activations in and out as bf16).
double kernelBytes(const std::string& name, const ChainShape& s, int R, int G) {
    const double H = s.hidden, I = s.intermediate, M = s.rows, K = s.topK;
    if (name == "route_compact") return M * K * 4 + R * 5 * 4;
    if (name == "remap_rows_bf16") return 2.0 * R * H * 2;
    if (name == "gemm1_mxfp4_m2" || name == "gemm1_mxfp4_m2_source_direct") return G * w1Bytes(s) + R * (H + 2 * I) * 2;
    if (name == "gemm1_mxfp4_m2_paired" || name == "gemm1_mxfp4_m2_paired_direct")
        return G * w1Bytes(s) + R * (H + I) * 2;
    if (name == "swiglu_bf16" || name == "m1_swiglu") return R * 3 * I * 2;
    if (name == "gemm2_mxfp4_m2") return G * w2Bytes(s) + R * (I + H) * 2;
    if (name == "gemm2_mxfp4_m2_loader_fused") return G * w2Bytes(s) + R * (2 * I + H) * 2;
    if (name == "gather_bf16" || name == "m1_gather") return (R + M) * H * 2;
    if (name == "m1_gemm1") return R * w1Bytes(s) + R * (H + 2 * I) * 2;
    if (name == "m1_gemm2") return R * w2Bytes(s) + R * (I + H) * 2;
    // two_launch: A reads the ids, the source rows and W1 and writes act; B reads the ids, act
    // and W2 and writes out (y stays in local memory).
    if (name == "two_launch_a") return M * K * 4 + G * w1Bytes(s) + M * H * 2 + R * I * 2;
    if (name == "two_launch_b") return M * K * 8 + G * w2Bytes(s) + R * I * 2 + M * H * 2;
    // one_launch: both, in one kernel (act still goes through global memory across the barrier).
    if (name == "one_launch") return M * K * 12 + G * (w1Bytes(s) + w2Bytes(s)) + M * H * 2 + 2 * R * I * 2 + M * H * 2;
    return 0;
}

struct Measured {
    std::string pattern, tuning, variant;
    int ablation = 0;        // the stream tile's stage (KernelTuning::ablation); results not checked unless 0
    std::string baseTuning;  // the tuning without its ablation stage
    bool correct = false;
    double chainUs = 0;
    // --batch B: (B, median device us per chain replayed B times, median host wall us per chain)
    std::vector<std::tuple<int, double, double>> replayedUs;
    std::vector<std::pair<std::string, double>> kernelUs;  // plan order, medians
};

// The ablation stages in the table's column order: loads only (3), + decode (2), + fma (1), the
// whole kernel (0), and the whole kernel without its weight loads (4).
constexpr int kAblationColumns[] = {3, 2, 1, 0, 4};

// Each stream-tile tuning preceded by its ablation stages.
std::vector<std::string> withAblationStages(const std::vector<std::string>& tunings) {
    std::vector<std::string> out;
    for (const auto& t : tunings) {
        if (KernelTuning::parse(t).gemmTile == 2)
            for (int stage : kAblationColumns)
                if (stage) out.push_back(t + (t.empty() ? "" : ",") + "ablation=" + std::to_string(stage));
        out.push_back(t);
    }
    return out;
}

// Per pattern, base tuning, variant and kernel: the time of each ablation stage, from loads only
// (3) to the whole kernel (0), then without the weight loads (4), as µs, GB/s (of the weights the
// kernel would read) and the fraction of the copy bandwidth.
void printAblation(const std::vector<Measured>& all, const ChainShape& shape, const std::map<std::string, int>& routes,
                   const std::map<std::string, int>& groups, double bwBytesPerUs) {
    std::map<std::tuple<std::string, std::string, std::string, std::string>, std::map<int, double>> rows;
    for (const auto& m : all)
        for (const auto& [k, us] : m.kernelUs) rows[{m.pattern, m.baseTuning, m.variant, k}][m.ablation] = us;
    bool header = false;
    for (const auto& [key, stages] : rows) {
        if (stages.size() < 2) continue;
        const auto& [pattern, tuning, variant, kernel] = key;
        if (!header) {
            fmt::print("\n== ablation (stream tile): kernel time per stage, us / GB/s / of copy bandwidth\n");
            fmt::print("{:<16} {:<28} {:<14} {:>22} {:>22} {:>22} {:>22} {:>22}   tuning\n", "pattern", "kernel",
                       "variant", "loads", "+decode", "+fma", "+lane sums (all)", "all but weight loads");
            header = true;
        }
        const double bytes = kernelBytes(kernel, shape, routes.at(pattern), groups.at(pattern));
        std::string cells;
        for (int stage : kAblationColumns) {
            const auto it = stages.find(stage);
            cells += it == stages.end() || it->second <= 0
                         ? fmt::format(" {:>22}", "-")
                         : fmt::format(" {:>7.1f} {:>6.0f} {:>6.1f}%", it->second, bytes / it->second / 1e3,
                                       100.0 * bytes / it->second / bwBytesPerUs);
        }
        fmt::print("{:<16} {:<28} {:<14}{}   [{}]\n", pattern, kernel, variant, cells, tuning);
    }
}

struct BenchOptions {
    std::string deviceSpec = "zecl";
    std::vector<std::string> tunings, patterns = {"six_local", "same_typical", "disjoint_typical", "all_remote"},
                                      variants;
    int replays = 20, chainReps = 500, copyMib = 1024;
    std::vector<int> batches;  // --batch: also time each chain replayed back to back B times
    ChainShape shape;
    bool quiet = false, ablation = false;
};

// 1. A device->device memoryCopy of `copyMib` MiB timed with event timestamps (median of 5);
// returns bytes per us read + write.
double copyBandwidth(zp::scheduler::DeviceSetup& setup, int copyMib) {
    const zp::runtime::DeviceInfo& dev = setup.device();
    zp::runtime::Context& ctx = setup.context();
    const std::size_t bytes = std::size_t(copyMib) << 20;
    zp::runtime::DeviceBuffer<std::uint8_t> src(ctx, dev, bytes), dst(ctx, dev, bytes);
    zp::runtime::ImmediateCommandList imm(ctx, dev);
    zp::runtime::EventPool pool(ctx, dev, 1, {.hostVisible = true, .kernelTimestamps = true});
    zp::runtime::Event ev(pool, 0);
    const auto clock = dev.kernelClock();
    std::vector<double> us;
    for (int r = 0; r < 6; ++r) {
        ev.hostReset();
        imm.memoryCopy(dst.data(), src.data(), bytes, &ev);
        imm.synchronize();
        ev.hostSynchronize();
        const auto ts = ev.kernelTimestamp();
        if (r > 0) us.push_back(clock.durationNs(ts.context.kernelStart, ts.context.kernelEnd) / 1e3);
    }
    const double t = median(us);
    const double bwBytesPerUs = 2.0 * bytes / t;
    fmt::print("copy bandwidth: {} MiB device->device in {:.1f} us (median of 5) = {:.0f} GB/s read+write\n", copyMib,
               t, bwBytesPerUs / 1e3);
    return bwBytesPerUs;
}

// 2.-4.: the chains of every pattern, tuning and variant on one device, and what they measured.
class ChainBench {
public:
    ChainBench(const BenchOptions& o, std::vector<Variant> variants, zp::scheduler::DeviceSetup& setup,
               zp::runtime::CommandQueue& queue, double bwBytesPerUs)
        : o_(o),
          variants_(std::move(variants)),
          setup_(setup),
          queue_(queue),
          bwBytesPerUs_(bwBytesPerUs),
          layer_(setup, o.shape),
          hostWeights_(zp::oracle::LocalWeights::zeros(o.shape)) {
        for (const auto& t : o.tunings)
            modules_.push_back(&setup.modules(KernelTuning::parse(t, KernelTuning::Ablation::allowed)));
        fmt::print("modules: {}\n", modules_.front()->choice().why);
    }

    // 2. and 3.: every tuning's and variant's chain on this pattern's case.
    void runPattern(const std::string& pname) {
        const ChainShape& shape = o_.shape;
        const RoutePattern p = zp::probe::parsePattern(pname);
        if (auto why = zp::probe::patternInvalidReason(shape, p)) {
            fmt::print("\n== {}: not valid for this shape ({})\n", pname, *why);
            return;
        }
        auto c = zp::probe::makeCase(shape, p, 0, kBaseSeed, &hostWeights_);
        layer_.weights().upload(hostWeights_, c.touchedLocalExperts);
        const auto want = zp::oracle::runChain(shape, hostWeights_, c.inputs, layer_.silu());
        const int R = int(want.routes.rows.size()), G = int(c.touchedLocalExperts.size());
        patternRoutes_[pname] = R;
        patternGroups_[pname] = G;
        const double mxfp4 = G * (w1Bytes(shape) + w2Bytes(shape));
        rooflineUs_[pname] = mxfp4 / bwBytesPerUs_;
        fmt::print("\n== {} ({}): R={} local routes, G={} touched experts, {:.1f} MB MXFP4, roofline {:.1f} us\n",
                   pname, c.name(), R, G, mxfp4 / 1e6, rooflineUs_[pname]);
        for (std::size_t ti = 0; ti < o_.tunings.size(); ++ti) {
            if (unusable_.count(ti)) continue;
            for (Variant v : variants_)
                if (!measure(pname, c.inputs, want.out, R, G, ti, v)) break;
        }
        if (p == RoutePattern::AllRemote) launchCost(c.inputs);
    }

    // 4. The goals, the ablation table, the bit-exact count and the tunings skipped. Returns the
    // chains that differ from the oracle.
    int report() const {
        printGoals();
        if (o_.ablation) printAblation(all_, o_.shape, patternRoutes_, patternGroups_, bwBytesPerUs_);
        const auto checked = std::count_if(all_.begin(), all_.end(), [](const Measured& m) { return !m.ablation; });
        fmt::print("CHECK {} of {} measured chains bit-exact on out\n", int(checked) - failures_, checked);
        for (const auto& [ti, why] : unusable_)
            fmt::print("SKIPPED tuning [{}]: {}\n", modules_[ti]->tuning().describe(), why);
        return failures_;
    }

    // Whether some tuning could run here (none: every chain SKIPPED, nothing measured).
    bool someTuningRan() const { return unusable_.size() < o_.tunings.size(); }

private:
    zp::scheduler::DeviceChain& chainOf(std::size_t ti, Variant v) {
        auto& c = chains_[{int(ti), int(v)}];
        if (!c) c = layer_.makeChain(v, *modules_[ti]);
        return *c;
    }

    // One chain: run once and checked against the oracle's `out`, then replayed and timed.
    // Returns false when tuning `ti` cannot run here at all (its other variants are skipped).
    bool measure(const std::string& pname, const zp::oracle::ChainInputs& inputs, const std::vector<bf16_t>& want,
                 int R, int G, std::size_t ti, Variant v) {
        const std::string tname = modules_[ti]->tuning().describe();
        zp::scheduler::DeviceChain* made = nullptr;
        try {
            made = &chainOf(ti, v);
        } catch (const zp::scheduler::VariantNotValid& e) {
            // this variant only (one_launch without cooperative launches); the tiling stays usable
            fmt::print("NOT VALID [{}]: {}\n", tname, e.what());
            return true;
        } catch (const std::exception& e) {
            // e.g. a work-group larger than this kernel allows on this device
            fmt::print("SKIP [{}]: {} cannot run here: {}\n", tname, zp::probe::variantName(v), e.what());
            unusable_[ti] = e.what();
            return false;
        }
        auto& chain = *made;
        chain.setInputs(inputs);
        try {
            chain.execute(queue_);
        } catch (const std::exception& e) {
            // e.g. a cooperative grid the device cannot hold at this tile's registers
            fmt::print("SKIP [{}]: {} failed to run here: {}\n", tname, zp::probe::variantName(v), e.what());
            return true;
        }
        const auto got = chain.results();
        Measured m;
        m.pattern = pname;
        m.tuning = tname;
        m.variant = std::string(zp::probe::variantName(v));
        KernelTuning base = modules_[ti]->tuning();
        m.ablation = std::exchange(base.ablation, 0);
        m.baseTuning = base.describe();
        const auto mm = zp::probe::firstMismatch("out", got.out, want, o_.shape.hidden);
        m.correct = !mm && got.invalidIds == 0;
        if (!m.correct && !m.ablation) {
            ++failures_;
            fmt::print("FAIL {} [{}] {}: {}\n", pname, tname, m.variant,
                       mm ? mm->describe(want.size()) : std::string("device error flag raised"));
        }
        time(chain, m);
        const double roofline = rooflineUs_[pname];
        fmt::print("{:<18} [{}] {:<20} chain {:8.1f} us  {:5.2f}x roofline  {}\n", pname, tname, m.variant, m.chainUs,
                   roofline > 0 ? m.chainUs / roofline : 0.0,
                   m.ablation  ? "ablation: not checked"
                   : m.correct ? "out bit-exact"
                               : "WRONG");
        for (const auto& [B, us, hostUs] : m.replayedUs)
            fmt::print(
                "    replayed x{:<4} {:8.1f} us per chain (first start -> last end / B, as the gate times), host "
                "{:.1f} us\n",
                B, us, hostUs);
        for (std::size_t k = 0; k < chain.plan().launches.size(); ++k) {
            const auto& l = chain.plan().launches[k];
            if (l.cooperative || l.persistent)
                fmt::print(
                    "    {}: {} grid {} groups (asked for {}, capped by zeKernelSuggestMaxCooperativeGroupCount)\n",
                    l.kernel, l.cooperative ? "cooperative" : "persistent", chain.grids()[k].x, l.groups.x);
        }
        printPlacement(chain);
        if (!o_.quiet) {
            fmt::print("    {:<30} {:>10} {:>9} {:>9} {:>7}\n", "kernel", "MB", "us", "GB/s", "of bw");
            for (const auto& [k, us] : m.kernelUs) {
                const double b = kernelBytes(k, o_.shape, R, G);
                fmt::print("    {:<30} {:>10.2f} {:>9.1f} {:>9.0f} {:>6.1f}%\n", k, b / 1e6, us,
                           us > 0 ? b / us / 1e3 : 0.0, us > 0 ? 100.0 * b / us / bwBytesPerUs_ : 0.0);
            }
        }
        all_.push_back(std::move(m));
        return true;
    }

    // one_launch with spread_units: where its groups sat when it last ranked them (the compute
    // units they reported), and how many units the first half of them covers by group id and by
    // rank (docs/perf.md "Units spread over the SMs").
    static void printPlacement(zp::scheduler::DeviceChain& chain) {
        const auto units = chain.groupUnits();
        if (std::none_of(units.begin(), units.end(), [](std::uint32_t u) { return u != 0; })) return;
        const auto ranks = zp::scheduler::gridRanks(units);
        const std::size_t half = std::max<std::size_t>(1, units.size() / 2);
        std::set<std::uint32_t> all(units.begin(), units.end()), byId, byRank;
        for (std::size_t g = 0; g < units.size(); ++g) {
            if (g < half) byId.insert(units[g]);
            if (ranks[g] < half) byRank.insert(units[g]);
        }
        fmt::print(
            "    placement (spread_units): {} groups on {} compute units; groups 0-{} by id on {}, ranks 0-{} on {}\n",
            units.size(), all.size(), half - 1, byId.size(), half - 1, byRank.size());
    }

    // --replays executions: the median chain time (first kernel start -> last kernel end) and
    // the median of each kernel.
    void time(zp::scheduler::DeviceChain& chain, Measured& m) {
        std::vector<double> chainUs;
        std::vector<std::vector<double>> perKernel(chain.plan().launches.size());
        for (int r = 0; r < o_.replays; ++r) {
            chain.execute(queue_);
            const auto spans = chain.kernelSpans();
            chainUs.push_back((spans.back().endNs - spans.front().startNs) / 1e3);
            for (std::size_t k = 0; k < spans.size(); ++k)
                perKernel[k].push_back((spans[k].endNs - spans[k].startNs) / 1e3);
        }
        m.chainUs = median(chainUs);
        for (std::size_t k = 0; k < perKernel.size(); ++k)
            m.kernelUs.push_back({chain.plan().launches[k].kernel, median(perKernel[k])});
        // The gate's form: B executions in one list, back to back (DeviceChain::executeBatch).
        for (int B : o_.batches) {
            std::vector<double> us, hostUs;
            chain.executeBatch(queue_, B);  // records the list
            for (int r = 0; r < o_.replays; ++r) {
                const auto t0 = std::chrono::steady_clock::now();
                us.push_back(chain.executeBatch(queue_, B) / 1e3 / B);
                hostUs.push_back(
                    std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / B);
            }
            m.replayedUs.push_back({B, median(us), median(hostUs)});
        }
    }

    // 3. launch cost: each tuning's recorded baseline chain appended --chain-reps times into one
    // list (the kernels launch their full grids and exit at once: the grid size is part of what a
    // launch costs), against raw OpenCL empty-kernel launches; the goal takes the cheapest tuning.
    void launchCost(const zp::oracle::ChainInputs& inputs) {
        const zp::runtime::DeviceInfo& dev = setup_.device();
        std::size_t launches = 0;
        for (std::size_t ti = 0; ti < o_.tunings.size(); ++ti) {
            if (unusable_.count(ti) || modules_[ti]->tuning().ablation) continue;
            auto& chain = chainOf(ti, Variant::Baseline);
            chain.setInputs(inputs);
            zp::runtime::CommandList list(setup_.context(), dev);
            for (int i = 0; i < o_.chainReps; ++i) chain.appendTo(list);
            list.close();
            launches = std::size_t(o_.chainReps) * chain.plan().launches.size();
            std::vector<double> us;
            for (int r = 0; r < 6; ++r) {
                const auto t0 = std::chrono::steady_clock::now();
                queue_.execute(list);
                queue_.synchronize();
                const double t =
                    std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
                if (r > 0) us.push_back(t / launches);
            }
            const double perLaunch = median(us);
            fmt::print("all_remote launch cost [{}]: recorded baseline chain x {} ({} launches): {:.3f} us/launch\n",
                       modules_[ti]->tuning().describe(), o_.chainReps, launches, perLaunch);
            if (remoteLaunchTuning_.empty() || perLaunch < remoteLaunchUs_) {
                remoteLaunchUs_ = perLaunch;
                remoteLaunchTuning_ = modules_[ti]->tuning().describe();
            }
        }
        rawLaunchUs_ =
            median(zp::bench::rawOpenClLaunchUs(zp::bench::clDeviceNamed(dev.name()), std::uint32_t(launches), 5));
        fmt::print(
            "all_remote launch cost: raw OpenCL empty kernel x {}: {:.3f} us/launch; best recorded {:.3f} "
            "us/launch [{}]; ratio {:.2f}\n",
            launches, rawLaunchUs_, remoteLaunchUs_, remoteLaunchTuning_, remoteLaunchUs_ / rawLaunchUs_);
    }

    // 4. The best bit-exact variant and tuning per pattern against its goal (docs/perf.md).
    void printGoals() const {
        fmt::print("\n== goals (best bit-exact variant and tuning per pattern)\n");
        const std::map<std::string, double> goal = {
            {"six_local", 1.4}, {"same_typical", 2.0}, {"disjoint_typical", 2.0}};
        for (const auto& pname : o_.patterns) {
            const Measured* best = nullptr;
            for (const auto& m : all_)
                if (m.pattern == pname && m.correct && !m.ablation && (!best || m.chainUs < best->chainUs)) best = &m;
            if (!best) continue;
            auto g = goal.find(pname);
            const auto roofline = rooflineUs_.find(pname);
            const double rooflineUs = roofline == rooflineUs_.end() ? 0.0 : roofline->second;
            if (g != goal.end() && rooflineUs > 0) {
                const double ratio = best->chainUs / rooflineUs;
                fmt::print("GOAL {:<17} {:8.1f} us / roofline {:6.1f} us = {:5.2f} (goal <= {:.2f}) {}   [{}] {}\n",
                           pname, best->chainUs, rooflineUs, ratio, g->second, ratio <= g->second ? "MET" : "not met",
                           best->tuning, best->variant);
            } else {
                fmt::print("     {:<17} {:8.1f} us (device time, no weights touched)   [{}] {}\n", pname, best->chainUs,
                           best->tuning, best->variant);
            }
        }
        if (rawLaunchUs_ > 0) {
            const double ratio = remoteLaunchUs_ / rawLaunchUs_;
            fmt::print(
                "GOAL all_remote        {:.3f} us/launch / raw OpenCL {:.3f} us = {:.2f} (goal <= 1.25) {}   [{}] "
                "baseline\n",
                remoteLaunchUs_, rawLaunchUs_, ratio, ratio <= 1.25 ? "MET" : "not met", remoteLaunchTuning_);
        }
    }

    const BenchOptions& o_;
    const std::vector<Variant> variants_;
    zp::scheduler::DeviceSetup& setup_;
    zp::runtime::CommandQueue& queue_;
    const double bwBytesPerUs_;
    zp::scheduler::DeviceLayer layer_;
    zp::oracle::LocalWeights hostWeights_;
    std::vector<zp::scheduler::KernelModules*> modules_;  // one per tuning, in --tuning order
    std::map<std::pair<int, int>, std::unique_ptr<zp::scheduler::DeviceChain>> chains_;  // (tuning, variant)
    std::vector<Measured> all_;
    int failures_ = 0;
    std::map<std::string, double> rooflineUs_;
    std::map<std::string, int> patternRoutes_, patternGroups_;
    double remoteLaunchUs_ = 0, rawLaunchUs_ = 0;
    std::string remoteLaunchTuning_;
    std::map<std::size_t, std::string> unusable_;  // tunings this device cannot launch, and why
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"The MoE device chain against the memory roofline and raw launch cost (docs/perf.md)"};
    BenchOptions o;
    app.add_option("-d,--device", o.deviceSpec, "Level Zero device (zp::runtime::selectDevice): zecl, intel, an index");
    app.add_option("--tuning", o.tunings,
                   "kernel tiling(s) to measure, each \"cols_per_wg=..,cols_per_item=..,rows_per_pass=..,"
                   "e2m1_decode=..\" (repeatable; \"\" = the packaged defaults; default: the defaults)");
    app.add_option("--pattern", o.patterns, "route patterns (repeatable; \"all\": every one)");
    app.add_option("--variant", o.variants, "chain variants (repeatable; default: all)");
    app.add_option("-n,--replays", o.replays, "timed replays per chain")->check(CLI::Range(1, 100000));
    app.add_option("--chain-reps", o.chainReps, "all_remote: chain copies in the launch-cost list")
        ->check(CLI::Range(1, 100000));
    app.add_option("--batch", o.batches,
                   "also time each chain replayed B times back to back in one list, as the gate's samples are "
                   "(repeatable)")
        ->check(CLI::Range(1, 4096));
    app.add_option("--copy-mib", o.copyMib, "size of the bandwidth copy in MiB")->check(CLI::Range(1, 16384));
    app.add_option("--hidden", o.shape.hidden, "H (smoke tests on slow devices; the goals are for the default)");
    app.add_option("--intermediate", o.shape.intermediate, "I");
    app.add_flag("-q,--quiet", o.quiet, "no per-kernel tables, only the summary");
    app.add_flag("--ablation", o.ablation,
                 "also run every stream-tile tuning (gemm_tile=2) as loads only, + decode, + fma, without the "
                 "lane sums (ablation=3, 2, 1) and whole without its weight loads (ablation=4; results not "
                 "checked) and print each kernel's time per stage");
    if (const int rc = zp::cli::parse(app, "zp-chain-bench", argc, argv); rc >= 0) return rc;
    if (o.tunings.empty()) o.tunings.push_back("");
    if (o.ablation) o.tunings = withAblationStages(o.tunings);
    std::vector<Variant> vs;
    // Bad input (exit 2, docs/usage.md "Exit codes") is refused before any device work.
    try {
        for (const auto& v : o.variants) vs.push_back(zp::probe::parseVariant(v));
        std::vector<std::string> patterns;  // "all": every pattern, in the catalogue's order
        for (const auto& p : o.patterns) {
            if (p == "all")
                for (auto each : zp::probe::kAllRoutePatterns) patterns.emplace_back(zp::probe::patternName(each));
            else
                patterns.emplace_back(zp::probe::patternName(zp::probe::parsePattern(p)));
        }
        o.patterns = patterns;
        for (const auto& t : o.tunings) KernelTuning::parse(t, KernelTuning::Ablation::allowed);
        zp::oracle::validateShape(o.shape);
    } catch (const std::exception& e) {
        fmt::print(stderr, "zp-chain-bench: error: {}\n", e.what());
        return 2;
    }
    if (vs.empty()) vs.assign(zp::probe::kAllVariants.begin(), zp::probe::kAllVariants.end());

    try {
        const ChainShape& shape = o.shape;
        // The first tuning's modules with the context; the others share it (and the weights).
        const auto setup = zp::scheduler::DeviceSetup::open(
            {.device = o.deviceSpec,
             .tuning = KernelTuning::parse(o.tunings.front(), KernelTuning::Ablation::allowed)});
        const zp::runtime::DeviceInfo& dev = setup->device();
        zp::runtime::CommandQueue queue = setup->makeQueue();
        fmt::print("device: [{}] {} ({}), {} compute units\n", dev.index, dev.name(),
                   zp::runtime::driverKindName(dev.kind), dev.computeUnits());
        fmt::print("shape: H={} I={} E={} K={} M={} C={} card={}\n", shape.hidden, shape.intermediate, shape.experts,
                   shape.topK, shape.rows, shape.cards, shape.card);
        const double bwBytesPerUs = copyBandwidth(*setup, o.copyMib);
        ChainBench bench(o, vs, *setup, queue, bwBytesPerUs);
        for (const auto& pname : o.patterns) bench.runPattern(pname);
        const int failures = bench.report();
        if (!bench.someTuningRan()) {
            fmt::print(stderr, "zp-chain-bench: error: no --tuning can run on this device (each is SKIPPED above)\n");
            return 2;
        }
        if (failures) {
            fmt::print(stderr, "zp-chain-bench: {} chain(s) differ from the oracle\n", failures);
            return 1;
        }
        return 0;
    } catch (const zp::scheduler::NoSuchDevice& e) {
        fmt::print(stderr, "zp-chain-bench: error: --device {}: {}\n", e.spec(), e.reason());
        return 2;
    } catch (const zp::runtime::Error& e) {
        fmt::print(stderr, "zp-chain-bench: device error: {}\n", e.what());
        return 3;
    } catch (const zp::scheduler::DeviceError& e) {
        fmt::print(stderr, "zp-chain-bench: device error: {}\n", e.what());
        return 3;
    } catch (const std::exception& e) {
        fmt::print(stderr, "zp-chain-bench: internal error: {}\n", e.what());
        return 1;
    }
}
