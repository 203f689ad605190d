// The reduced shape of the scheduler's tests: small enough for PoCL, large enough that every
// lane of the CONTRACT §4 reduction tree has work.
#pragma once

#include "zp/oracle/chain.hpp"

namespace zp::scheduler::test {

// H/32 = 32 blocks: every lane of the §4 tree sums two blocks; I/32 = 17 blocks: lane 0 sums
// two, the others one (a reordered tree or lane sum shows, which H=128 would barely test).
inline oracle::ChainShape reducedShape() {
    oracle::ChainShape s;
    s.hidden = 1024;
    s.intermediate = 544;
    s.experts = 48;  // 12 local experts: six_local needs M*K = 12
    s.topK = 6;
    s.rows = 2;
    s.cards = 4;
    s.card = 1;  // not card 0: the local range does not start at id 0
    return s;
}

}  // namespace zp::scheduler::test
