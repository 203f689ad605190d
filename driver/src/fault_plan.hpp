// ZECL_FAULT, the fault injection of zecl's tests (driver/README.md "Fault injection"): which
// call of each kind fails. Parsed here without the driver, so its bad input is tested alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zecl {

// The kinds of call that can be made to fail, in the order of kFaultNames.
enum class Fault { Alloc, Module, Kernel, Enqueue, Suggest };
inline constexpr std::array<std::string_view, 5> kFaultNames = {"alloc", "module", "kernel", "enqueue", "suggest"};
static_assert(std::size_t(Fault::Suggest) + 1 == kFaultNames.size(), "one name per Fault");

struct FaultSchedule {
    std::array<uint64_t, kFaultNames.size()> failAt{};  // the 1-based call of each kind that fails; 0 = none
    std::vector<std::string> problems;                  // one line per item ignored, and why
};

// "kind:N[,kind:N...]": kind one of kFaultNames, N >= 1 (a later item of the same kind wins).
// An item that is not so (an unknown kind, no ':', N not a positive integer) is ignored and named
// in `problems`; empty items (",,") are skipped silently.
FaultSchedule parseFaultSchedule(std::string_view text);

}  // namespace zecl
