// ZECL_FAULT's parser (driver/src/fault_plan.cpp): what each item schedules, and that a bad
// item is named rather than silently never injected (host only, no device).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fault_plan.hpp"

namespace {

using zecl::Fault;
using zecl::parseFaultSchedule;

uint64_t at(const zecl::FaultSchedule& s, Fault f) { return s.failAt[std::size_t(f)]; }

TEST(FaultSchedule, GivenEveryKind_WhenParsed_ThenEachFailsAtItsCall) {
    const auto s = parseFaultSchedule("alloc:3,module:1,kernel:2,enqueue:5,suggest:4");
    EXPECT_EQ(at(s, Fault::Alloc), 3u);
    EXPECT_EQ(at(s, Fault::Module), 1u);
    EXPECT_EQ(at(s, Fault::Kernel), 2u);
    EXPECT_EQ(at(s, Fault::Enqueue), 5u);
    EXPECT_EQ(at(s, Fault::Suggest), 4u);
    EXPECT_TRUE(s.problems.empty());
}

TEST(FaultSchedule, GivenNothingOrEmptyItems_WhenParsed_ThenNothingFailsAndNothingIsReported) {
    for (const char* text : {"", ",", ",,alloc:2,"}) {
        const auto s = parseFaultSchedule(text);
        EXPECT_TRUE(s.problems.empty()) << text;
    }
    EXPECT_EQ(at(parseFaultSchedule(",,alloc:2,"), Fault::Alloc), 2u);
    EXPECT_EQ(at(parseFaultSchedule(""), Fault::Alloc), 0u);
}

TEST(FaultSchedule, GivenTheSameKindTwice_WhenParsed_ThenTheLaterWins) {
    EXPECT_EQ(at(parseFaultSchedule("enqueue:2,enqueue:7"), Fault::Enqueue), 7u);
}

TEST(FaultSchedule, GivenBadItems_WhenParsed_ThenEachIsNamedAndTheGoodOnesStillCount) {
    const auto s = parseFaultSchedule("enqeue:5,alloc,kernel:0,module:x,suggest:2z,suggest:-1,enqueue:3");
    const std::string bad_n = "N is not a positive integer (the 1-based call that fails)";
    EXPECT_EQ(s.problems,
              (std::vector<std::string>{
                  "ZECL_FAULT item 'enqeue:5' ignored: the kind is not one of alloc, module, kernel, enqueue, suggest",
                  "ZECL_FAULT item 'alloc' ignored: not kind:N",
                  "ZECL_FAULT item 'kernel:0' ignored: " + bad_n,
                  "ZECL_FAULT item 'module:x' ignored: " + bad_n,
                  "ZECL_FAULT item 'suggest:2z' ignored: " + bad_n,
                  "ZECL_FAULT item 'suggest:-1' ignored: " + bad_n,
              }));
    EXPECT_EQ(at(s, Fault::Enqueue), 3u);
    EXPECT_EQ(at(s, Fault::Alloc), 0u);
    EXPECT_EQ(at(s, Fault::Kernel), 0u);
    EXPECT_EQ(at(s, Fault::Module), 0u);
    EXPECT_EQ(at(s, Fault::Suggest), 0u);
}

}  // namespace
