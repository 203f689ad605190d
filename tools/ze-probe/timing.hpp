// ze-probe's timing of the chain variants (CONTRACT §8): per route pattern one case is
// uploaded and the recorded command lists are replayed in BLOCKS. Each block starts from
// chains rebuilt as a fresh process would build them (DeviceSession::rebuild: weights and
// chain buffers reallocated, inputs re-uploaded, lists re-recorded), runs warm-ups, then
// rounds in which every variant runs once, interleaved (the order rotated by one each round,
// so every variant takes every position equally often), so drift of the device hits every
// variant alike and round i of block j gives the pair (baseline_ji, candidate_ji). The gate's
// interval is taken over the blocks (timing_stats.hpp, blockedSaving).
//
// A timed sample is B back-to-back executions of the recorded chain (DeviceChain::
// executeBatch: first kernel start of the first to last kernel end of the last, / B), B
// chosen per pattern from the warm-ups so a sample spans ≥ 200 ticks of the device's kernel
// timer (timerResolution; NVIDIA's OpenCL timer ticks at 1 µs). Per-kernel times are of one
// execution (the last of each sample). Beside the device time, the host wall time of
// execute + synchronize, / B. The gate projects the device time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device_session.hpp"
#include "trace_json.hpp"
#include "zp/probe/config.hpp"
#include "zp/probe/cases.hpp"
#include "zp/probe/gate.hpp"
#include "zp/probe/sampling.hpp"

namespace zp::app {

using probe::chooseBatch;  // zp/probe/sampling.hpp
using probe::kMinTicksPerSample;

struct TimingSettings {
    int repeats = 50;  // timed rounds in all (pairs per candidate), spread over `blocks`
    int warmup = 2;    // untimed rounds at the start of every block (after the rebuild)
    int blocks = 5;    // ≥ 5 by default (§8), 10 on a GPU (defaultsFor says why); ≥ 2 for an interval
    // true: no dedicated rounds; the case set's own executions are the samples (CaseSetRecorder),
    // two cases a block.
    bool caseSet = false;
    // true: every block after the first is timed in a fresh ze-probe process (a new context,
    // kernels loaded again, its own allocations and host thread: what a rerun of the tool gets),
    // so the interval over blocks holds the variation between runs too. The GPU default.
    bool blockProcesses = false;
    int roundsPerBlock() const { return std::max(1, (repeats + blocks - 1) / blocks); }
    // Defaults by device type. A GPU execution takes ~100 µs: 10 blocks × (2 warm-up + 5
    // timed rounds) of case v0. A PoCL CPU one takes up to 1.5 s at the default shape, where
    // the case set alone fills the main job's two minutes: the case set's executions are
    // timed instead.
    static TimingSettings defaultsFor(const runtime::DeviceInfo&);
    std::string describe() const;
};

// Samples cut into blocks at `blockEnds` (sample index one past each block's last; an end past
// the samples is clamped, an empty block left out).
std::vector<std::vector<double>> splitBlocks(const std::vector<double>& samples,
                                             const std::vector<std::size_t>& blockEnds);

// The card's "summary" of samples (median, p05, p95, min, max, mean, stddev, n).
nlohmann::json summaryJson(const std::vector<double>& samples);

struct VariantTiming {
    std::string variant;
    std::vector<std::string> kernels;           // entry point per launch, plan order
    std::vector<double> deviceNs, hostNs;       // per timed execution, round order
    std::vector<std::vector<double>> kernelNs;  // [launch][execution]
    int launches() const { return int(kernels.size()); }
};

struct PatternTiming {
    std::string pattern;
    std::string caseName;                // the case timed, e.g. "six_local/v0"
    int batch = 1;                       // B: executions per timed sample
    double tickNs = 1;                   // the kernel timer's step
    std::vector<std::size_t> blockEnds;  // sample index one past each block's last
    std::vector<long> blockPids;         // the process that timed each block
    // A variant's samples cut into the blocks.
    std::vector<std::vector<double>> blocksOf(const std::vector<double>& samples) const;
    int touchedExperts = 0;               // local experts the case routes to
    std::uint64_t bytes = 0;              // what the chain must read: weights of the touched experts + activations
    std::vector<VariantTiming> variants;  // baseline first
    oracle::ChainInputs inputs;           // of the case timed (the chains' last execute ran it)
    const VariantTiming* find(const std::string& variant) const;
};

// Times the executions the correctness run makes anyway: each case runs every variant once,
// in an order rotated per case (runCases), so case i of a pattern is round i and the pairs
// are (baseline, candidate) on the same case. The run's first case is dropped as the warm-up
// (the first execution of each recorded list). The pattern's bytes are of the median case.
class CaseSetRecorder {
public:
    CaseSetRecorder(const oracle::ChainShape&, double tickNs, std::vector<TraceSpan>* trace, std::string trackPrefix);
    void record(const std::string& variant, const probe::Case&, double hostNs,
                const std::vector<scheduler::KernelSpan>&);
    // Whether `kase` opens a block (its chains to be rebuilt first): every second case of a
    // pattern, except the run's first (the warm-up, on chains just built).
    bool opensBlock(const probe::Case& kase) const;
    // Patterns in first-seen order, variants in `order` (put baseline first).
    std::vector<PatternTiming> result(const std::vector<std::string>& order) const;

private:
    oracle::ChainShape shape_;
    double tickNs_;
    std::vector<TraceSpan>* trace_;
    std::string prefix_;
    std::string firstCase_;
    std::vector<PatternTiming> patterns_;
    std::vector<std::vector<int>> touched_;  // per pattern, per case recorded
    std::vector<std::string> lastCase_;      // per pattern
    std::vector<int> lastBlock_;             // per pattern
};

// Bytes the chain must read for a case: the MXFP4 weights (blocks and scales of W1 and W2)
// of the touched local experts, hidden [M, H] bf16, topk ids and weights, and out [M, H]
// written once.
std::uint64_t chainBytes(const oracle::ChainShape&, int touchedExperts);

// Times one pattern's case on every variant of `variants` (baseline first: the tables and
// the pairs read it there; the same variant twice is the A/A control). `weights`: the fixed weights (already uploaded)
// or null to draw the case's touched experts into `scratch` and upload them.
// `batch`: B of every sample (deviceBatch's; 0 = chosen from this pattern's warm-ups);
// `rotation`: the round order continued from the blocks before (a block of another process).
PatternTiming timePattern(DeviceSession&, const std::vector<probe::Variant>& variants, const probe::Config&,
                          probe::RoutePattern, const oracle::LocalWeights* fixedWeights, oracle::LocalWeights* scratch,
                          const TimingSettings&, std::vector<TraceSpan>* trace, const std::string& trackPrefix = "",
                          int batch = 0, std::size_t rotation = 0);

// One B for every pattern of the run: chooseBatch of the fastest single execution of any
// variant on any of `patterns`' cases v0 (one warm-up each first). Per pattern, B flipped
// between runs (3 or 4 on the H200's same_typical, from warm-ups near the threshold) and the
// saving with it, by a whole µs: what a sample adds once (the first launch of the batch) is
// spread over B, so B must not depend on a pattern's noise. B is large where it matters (the
// fastest chain sets it), which leaves that once-per-sample part small; and a power of two
// (chooseBatch), so the fastest chain's own noise between runs does not move it either.
int deviceBatch(DeviceSession&, const std::vector<probe::Variant>& variants, const probe::Config&,
                const std::vector<probe::RoutePattern>& patterns, const oracle::LocalWeights* fixedWeights,
                oracle::LocalWeights* scratch);
// A block timed in a child process travels as JSON: per pattern its B and, per variant, the
// samples it took. appendBlock adds them to `pts` as one more block of each pattern it holds;
// a pattern, variant or launch list that does not match is a std::runtime_error.
nlohmann::json blockSamplesJson(const std::vector<PatternTiming>&);
void appendBlock(std::vector<PatternTiming>& pts, const nlohmann::json& block);

// `blocks` more blocks of the same pattern's case v0 (the gate budget's extra blocks); the
// chains are rebuilt and the case re-made, so `pt` may come from either mode.
void addBlocks(PatternTiming& pt, int blocks, DeviceSession&, const std::vector<probe::Variant>& variants,
               const probe::Config&, const oracle::LocalWeights* fixedWeights, oracle::LocalWeights* scratch,
               const TimingSettings&, std::vector<TraceSpan>* trace, const std::string& trackPrefix = "");

// Device memory bandwidth in bytes/s: L0 memory properties (maxClockRate MHz × maxBusWidth
// bits / 8) when the driver reports them, else a measured device-to-device copy (read +
// write bytes over the copy's time). `source` says which.
struct Bandwidth {
    double bytesPerS = 0;
    std::string source;
};
Bandwidth deviceBandwidth(DeviceSession&);

// One pattern's projection of the device-time saving of `cand` over `base` (the blocks'
// interval, the timer step / B as its floor); NaN when fewer than 2 blocks were timed.
probe::Projection projectTiming(const PatternTiming&, const VariantTiming& base, const VariantTiming& cand,
                                const probe::Config&);

// Gate inputs: projections of every candidate (every timed variant but baseline and
// m1_oracle) over the valid patterns, from the device times; correctness per variant from
// `counts` (name → counts over the case set).
std::vector<probe::CandidateGate> evaluateCandidates(const std::vector<PatternTiming>&, const probe::Config&,
                                                     const std::function<probe::CaseCounts(const std::string&)>& counts,
                                                     const std::vector<probe::NotValidPattern>& notValid);

nlohmann::json timingsJson(const std::vector<PatternTiming>&, const TimingSettings&, const Bandwidth&);
// Host-time projections beside the device ones the gate uses: {candidate: {pattern: {...}}}.
nlohmann::json projectionsJson(const std::vector<PatternTiming>&, const probe::Config&);
nlohmann::json launchFloorJson(const std::vector<PatternTiming>&);

// Text: median device/host time per pattern × variant, the all_remote launch floor, and the
// roofline fraction of the baseline and the best candidate per pattern.
std::string formatTimings(const std::vector<PatternTiming>&, const TimingSettings&, const Bandwidth&);

}  // namespace zp::app
