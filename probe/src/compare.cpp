#include "zp/probe/compare.hpp"

#include <fmt/format.h>

namespace zp::probe {

std::string Mismatch::describe(std::size_t total) const {
    auto value = [](oracle::bf16_t b) { return fmt::format("{:#06x} ({:g})", b, oracle::f32FromBf16(b)); };
    return fmt::format("{}[{}][{}]: got {}, want {}; {} of {} elements differ", tensor, row, col, value(got),
                       value(want), differing, total);
}

std::optional<Mismatch> firstMismatch(const std::string& tensor, std::span<const oracle::bf16_t> got,
                                      std::span<const oracle::bf16_t> want, std::size_t cols) {
    std::optional<Mismatch> first;
    const std::size_t n = std::max(got.size(), want.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const bool inGot = i < got.size(), inWant = i < want.size();
        if (inGot && inWant && got[i] == want[i]) continue;
        ++differing;
        if (!first)
            first = Mismatch{tensor,
                             cols ? i / cols : 0,
                             cols ? i % cols : i,
                             inGot ? got[i] : oracle::bf16_t{0},
                             inWant ? want[i] : oracle::bf16_t{0},
                             0};
    }
    if (first) first->differing = differing;
    return first;
}

}  // namespace zp::probe
