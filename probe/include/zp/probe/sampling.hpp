// CONTRACT §8's timed sample: B back-to-back executions of the chain, B such that a sample
// spans at least 200 ticks of the device's kernel timer (timerResolution). NVIDIA's OpenCL
// profiling timer ticks at 1 µs: a 100 µs chain is timed 2 at a time; on a 1 ns timer B = 1.
#pragma once

#include <algorithm>
#include <cmath>

namespace zp::probe {

inline constexpr int kMinTicksPerSample = 200;
inline constexpr int kMaxBatch = 4096;

// B for one execution of `executionNs` on a timer of `tickNs` (1 when unknown or not positive):
// the smallest power of two with B · executionNs ≥ 200 ticks. A power of two, not the least B
// that suffices, so that B stays the same between runs: the fastest chain is timed anew in
// every run, and on the H200 it sits at 10.5 µs, where the least B flips between 19 and 20
// from run to run (and B moves the saving: docs/perf.md); the next power-of-two step is ±35%
// away.
inline int chooseBatch(double tickNs, double executionNs) {
    if (!(executionNs > 0) || !std::isfinite(executionNs) || !(tickNs > 0) || !std::isfinite(tickNs)) return 1;
    const double least = double(kMinTicksPerSample) * tickNs / executionNs;
    int b = 1;
    while (b < kMaxBatch && double(b) < least) b *= 2;
    return b;
}

}  // namespace zp::probe
