// The project's one PRNG: SplitMix64 (Steele, Lea, Flood 2014), with integer-only derivations,
// so a seed gives the same bytes with every compiler and standard library. std::*_distribution
// is deliberately not used: its output is implementation-defined.
#pragma once

#include <cstdint>

namespace zp::probe {

class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, n) by Lemire's multiply-shift (bias below 2^-32 for the n used here).
    std::uint32_t below(std::uint32_t n) {
        return static_cast<std::uint32_t>(((next() >> 32) * std::uint64_t{n}) >> 32);
    }
    // Uniform in [lo, hi], inclusive.
    int between(int lo, int hi) { return lo + static_cast<int>(below(static_cast<std::uint32_t>(hi - lo + 1))); }
    // Uniform in [0, 1) on the 2^-24 grid: exact in f32.
    float unit() { return static_cast<float>(next() >> 40) * 0x1p-24f; }
    // Approximately N(0, 1): Irwin–Hall sum of 12 units (exact in double: 28 bits).
    float normal() {
        double sum = 0.0;
        for (int i = 0; i < 12; ++i) sum += static_cast<double>(next() >> 40) * 0x1p-24;
        return static_cast<float>(sum - 6.0);
    }

private:
    std::uint64_t state_;
};

// Derives an independent seed from a parent seed and a stream tag.
inline std::uint64_t deriveSeed(std::uint64_t parent, std::uint64_t tag) {
    SplitMix64 g(parent ^ (tag * 0xD1B54A32D192ED03ull));
    g.next();
    return g.next();
}

}  // namespace zp::probe
