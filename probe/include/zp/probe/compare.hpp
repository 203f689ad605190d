// Bitwise comparison of BF16 tensors (CONTRACT §7: a case passes only bit for bit).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "zp/oracle/numerics.hpp"

namespace zp::probe {

struct Mismatch {
    std::string tensor;
    std::size_t row = 0, col = 0;  // first differing element, row-major [rows, cols]
    oracle::bf16_t got = 0, want = 0;
    std::size_t differing = 0;  // how many elements differ in all

    // "out[1][17]: got 0x3f80 (1), want 0x3f81 (1.0078125); 3 of 8192 elements differ"
    std::string describe(std::size_t total) const;
};

// First element whose raw bits differ, or nothing. A size mismatch is reported at the
// first index past the shorter tensor.
std::optional<Mismatch> firstMismatch(const std::string& tensor, std::span<const oracle::bf16_t> got,
                                      std::span<const oracle::bf16_t> want, std::size_t cols);

}  // namespace zp::probe
