// CONTRACT §8's timed sample: B back-to-back executions of the chain, B such that a sample
// spans at least 200 ticks of the device's kernel timer (timerResolution). NVIDIA's OpenCL
// profiling timer ticks at 1 µs: a 100 µs chain is timed 2 at a time; on a 1 ns timer B = 1.
#pragma once

#include <algorithm>
#include <cmath>

namespace zp::probe {

inline constexpr int kMinTicksPerSample = 200;
inline constexpr int kMaxBatch = 4096;

// B for one execution of `executionNs` on a timer of `tickNs` (1 when unknown or not positive).
inline int chooseBatch(double tickNs, double executionNs) {
    if (!(executionNs > 0) || !std::isfinite(executionNs) || !(tickNs > 0) || !std::isfinite(tickNs)) return 1;
    const double b = std::ceil(double(kMinTicksPerSample) * tickNs / executionNs);
    return int(std::clamp(b, 1.0, double(kMaxBatch)));
}

}  // namespace zp::probe
