// ze-probe's timing of the chain variants (CONTRACT §8): per route pattern one case is
// uploaded and the recorded command lists are replayed, warm-ups first, then rounds in which
// every variant runs once, interleaved (the order rotated by one each round, so every
// variant takes every position equally often), so drift of the device hits every variant
// alike and round i gives the pairs (baseline_i, candidate_i) that timing_stats' bootstrap
// resamples.
//
// Per execution two figures: the device time (first kernel start to last kernel end, from
// the kernel timestamps of every launch) and the host wall time of execute + synchronize.
// The gate projects the device time; the host time is reported beside it.
#pragma once

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

namespace zp::probe {

struct TimingSettings {
    int repeats = 50;  // timed rounds (pairs per candidate)
    int warmup = 5;    // untimed rounds first
    // true: no dedicated rounds; the case set's own executions are the samples (CaseSetRecorder).
    bool caseSet = false;
    // Defaults by device type. A GPU execution takes ~100 µs: 5 + 50 dedicated rounds of
    // case v0. A PoCL CPU one takes up to 1.5 s at the default shape, where the case set
    // alone fills the main job's two minutes: the case set's executions are timed instead.
    static TimingSettings defaultsFor(const ze::DeviceInfo&);
    std::string describe() const;
};

struct VariantTiming {
    std::string variant;
    std::vector<std::string> kernels;           // entry point per launch, plan order
    std::vector<double> deviceNs, hostNs;       // per timed execution, round order
    std::vector<std::vector<double>> kernelNs;  // [launch][execution]
    int launches() const { return int(kernels.size()); }
};

struct PatternTiming {
    std::string pattern;
    std::string caseName;                 // the case timed, e.g. "six_local/v0"
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
    CaseSetRecorder(const oracle::ChainShape&, std::vector<TraceSpan>* trace, std::string trackPrefix);
    void record(const std::string& variant, const sched::Case&, double hostNs, const std::vector<sched::KernelSpan>&);
    // Patterns in first-seen order, variants in `order` (put baseline first).
    std::vector<PatternTiming> result(const std::vector<std::string>& order) const;

private:
    oracle::ChainShape shape_;
    std::vector<TraceSpan>* trace_;
    std::string prefix_;
    std::string firstCase_;
    std::vector<PatternTiming> patterns_;
    std::vector<std::vector<int>> touched_;  // per pattern, per case recorded
    std::vector<std::string> lastCase_;      // per pattern
};

// Bytes the chain must read for a case: the MXFP4 weights (blocks and scales of W1 and W2)
// of the touched local experts, hidden [M, H] bf16, topk ids and weights, and out [M, H]
// written once.
std::uint64_t chainBytes(const oracle::ChainShape&, int touchedExperts);

// Times one pattern's case on every variant of `variants` (baseline first: the tables and
// the pairs read it there; the same variant twice is the A/A control). `weights`: the fixed weights (already uploaded)
// or null to draw the case's touched experts into `scratch` and upload them.
PatternTiming timePattern(DeviceSession&, const std::vector<sched::Variant>& variants, const sched::Config&,
                          sched::RoutePattern, const oracle::LocalWeights* fixedWeights, oracle::LocalWeights* scratch,
                          const TimingSettings&, std::vector<TraceSpan>* trace, const std::string& trackPrefix = "");

// Device memory bandwidth in bytes/s: L0 memory properties (maxClockRate MHz × maxBusWidth
// bits / 8) when the driver reports them, else a measured device-to-device copy (read +
// write bytes over the copy's time). `source` says which.
struct Bandwidth {
    double bytesPerS = 0;
    std::string source;
};
Bandwidth deviceBandwidth(DeviceSession&);

// Gate inputs: projections of every candidate (every timed variant but baseline and
// m1_oracle) over the valid patterns, from the device times; correctness per variant from
// `counts` (name → counts over the case set).
std::vector<sched::CandidateGate> evaluateCandidates(const std::vector<PatternTiming>&, const sched::Config&,
                                                     const std::function<sched::CaseCounts(const std::string&)>& counts,
                                                     const std::vector<sched::NotValidPattern>& notValid);

nlohmann::json timingsJson(const std::vector<PatternTiming>&, const TimingSettings&, const Bandwidth&);
// Host-time projections beside the device ones the gate uses: {candidate: {pattern: {...}}}.
nlohmann::json projectionsJson(const std::vector<PatternTiming>&, const sched::Config&);
nlohmann::json launchFloorJson(const std::vector<PatternTiming>&);

// Text: median device/host time per pattern × variant, the all_remote launch floor, and the
// roofline fraction of the baseline and the best candidate per pattern.
std::string formatTimings(const std::vector<PatternTiming>&, const TimingSettings&, const Bandwidth&);

}  // namespace zp::probe
