// The step of several cards (tools/ze-probe/step.hpp) on synthetic per-card rounds with known
// answers: the step time per round is the slowest card's, rounds align by (block, index), a
// candidate that speeds up every card but the slowest does not speed up the step, and the
// step's gate is CONTRACT §8's rule (projectPattern, classifyInterval) on the step times.
// Also the meeting of cards played at once (cards_at_once.hpp): a card that ends early never
// keeps the others waiting.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "cards_at_once.hpp"
#include "step.hpp"
#include "timing.hpp"
#include "zp/probe/json_schema.hpp"

namespace {

using namespace zp;
using nlohmann::json;

// Rounds of one pattern: `blocks` blocks of `perBlock` rounds each, sample = f(block, round).
app::CardPatternRounds rounds(std::vector<std::size_t> blockSizes, const std::map<std::string, std::vector<double>>& ns,
                              double resolutionNs = 1) {
    app::CardPatternRounds r;
    std::size_t end = 0;
    for (std::size_t b : blockSizes) r.blockEnds.push_back(end += b);
    r.deviceNs = ns;
    r.resolutionNs = resolutionNs;
    return r;
}

// A card timing one pattern of `n` rounds in blocks of `perBlock`: baseline `base(i)`,
// candidate `cand(i)` for round i.
template <class B, class C>
app::CardRounds card(int id, int n, int perBlock, B base, C cand, probe::CaseCounts counts = {12, 0, 0}) {
    app::CardRounds c;
    c.card = id;
    c.layers = 43;
    c.minSavingMs = 0.5;
    c.patterns = {"six_local"};
    c.candidates = {"paired_direct"};
    std::vector<double> a, b;
    for (int i = 0; i < n; ++i) {
        a.push_back(base(i));
        b.push_back(cand(i));
    }
    std::vector<std::size_t> sizes(std::size_t(n / perBlock), std::size_t(perBlock));
    c.rounds["six_local"] = rounds(sizes, {{"baseline", a}, {"paired_direct", b}});
    c.counts["baseline"] = counts;
    c.counts["paired_direct"] = counts;
    return c;
}

// A little noise that differs per round and card, so the blocks have a spread.
double wiggle(int card, int i) { return double((i * 7 + card * 3) % 5) * 10.0; }

TEST(Step, GivenOneSlowCard_WhenCombined_ThenEveryRoundIsThatCardsTime) {
    std::vector<app::CardRounds> cards;
    for (int id = 0; id < 4; ++id) {
        const double extra = id == 2 ? 50'000 : 0;  // card 2 is 50 us slower in every round
        cards.push_back(card(
            id, 10, 2, [&](int i) { return 100'000 + extra + wiggle(id, i); },
            [&](int i) { return 90'000 + extra + wiggle(id, i); }));
    }
    const app::Step step = app::combineCards(cards);
    ASSERT_EQ(step.patterns.size(), 1u);
    const app::StepPattern& sp = step.patterns[0];
    EXPECT_EQ(sp.blockEnds, (std::vector<std::size_t>{2, 4, 6, 8, 10}));
    EXPECT_EQ(sp.droppedRounds, 0u);
    const app::StepVariant* base = sp.find("baseline");
    ASSERT_NE(base, nullptr);
    ASSERT_EQ(base->stepNs.size(), 10u);
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(base->stepNs[std::size_t(i)], 150'000 + wiggle(2, i)) << "round " << i;
        EXPECT_EQ(base->slowestCard[std::size_t(i)], 2) << "round " << i;
    }
}

TEST(Step, GivenDifferentSlowCardsPerRound_WhenCombined_ThenTheMaxOfEachRoundNotOfTheMedians) {
    // Card 0 is slow in the even rounds, card 1 in the odd ones: each card's median is 100 us,
    // but every step round waits 200 us.
    std::vector<app::CardRounds> cards;
    cards.push_back(card(
        0, 4, 2, [](int i) { return i % 2 ? 100'000.0 : 200'000.0; }, [](int) { return 1.0; }));
    cards.push_back(card(
        1, 4, 2, [](int i) { return i % 2 ? 200'000.0 : 100'000.0; }, [](int) { return 2.0; }));
    const app::Step step = app::combineCards(cards);
    ASSERT_EQ(step.patterns.size(), 1u);
    const app::StepVariant* base = step.patterns[0].find("baseline");
    ASSERT_NE(base, nullptr);
    EXPECT_EQ(base->stepNs, (std::vector<double>{200'000, 200'000, 200'000, 200'000}));
    EXPECT_EQ(base->slowestCard, (std::vector<int>{0, 1, 0, 1}));
    const app::StepVariant* cand = step.patterns[0].find("paired_direct");
    ASSERT_NE(cand, nullptr);
    EXPECT_EQ(cand->slowestCard, (std::vector<int>{1, 1, 1, 1}));
}

TEST(Step, GivenBlocksOfDifferentLengths_WhenCombined_ThenRoundsAlignByBlockAndIndex) {
    // Card 0: blocks of 3 and 3 rounds; card 1: blocks of 2 and 4. Aligned: block 0 has 2 rounds
    // (card 0's third is dropped), block 1 has 3 (card 1's fourth is dropped); round i of block j
    // is the same (j, i) on both cards, never the same flat index.
    auto sample = [](int card, int block, int i) { return double(1000 * card + 100 * block + i); };
    std::vector<double> a0, a1;
    for (int i = 0; i < 3; ++i) a0.push_back(sample(0, 0, i));
    for (int i = 0; i < 3; ++i) a0.push_back(sample(0, 1, i));
    for (int i = 0; i < 2; ++i) a1.push_back(sample(1, 0, i));
    for (int i = 0; i < 4; ++i) a1.push_back(sample(1, 1, i));
    // Card 0 is larger in block 0, card 1 in block 1 (flip the sign of card 1's block 0).
    for (int i = 0; i < 2; ++i) a1[std::size_t(i)] = -a1[std::size_t(i)];
    for (int i = 3; i < 6; ++i) a0[std::size_t(i)] = -a0[std::size_t(i)];
    const auto r0 = rounds({3, 3}, {{"baseline", a0}}, 2);
    const auto r1 = rounds({2, 4}, {{"baseline", a1}}, 5);
    const app::StepPattern sp = app::combineRounds("six_local", {0, 1}, {&r0, &r1});
    EXPECT_EQ(sp.blockEnds, (std::vector<std::size_t>{2, 5}));
    EXPECT_EQ(sp.droppedRounds, 2u);  // one of each card
    EXPECT_EQ(sp.resolutionNs, 5);    // the coarsest card's
    ASSERT_EQ(sp.variants.size(), 1u);
    EXPECT_EQ(sp.variants[0].stepNs, (std::vector<double>{sample(0, 0, 0), sample(0, 0, 1), sample(1, 1, 0),
                                                          sample(1, 1, 1), sample(1, 1, 2)}));
    EXPECT_EQ(sp.variants[0].slowestCard, (std::vector<int>{0, 0, 1, 1, 1}));
}

TEST(Step, GivenACandidateFasterOnEveryCardButTheSlowest_WhenGated_ThenTheStepDoesNotPass) {
    // Cards 0, 1, 3 save 30 us per layer (1.29 ms over 43 layers: each alone would pass); card
    // 2, the slowest, saves nothing, so the step saves nothing.
    std::vector<app::CardRounds> cards;
    for (int id = 0; id < 4; ++id) {
        const double extra = id == 2 ? 50'000 : 0, saving = id == 2 ? 0 : 30'000;
        cards.push_back(card(
            id, 10, 2, [&](int i) { return 100'000 + extra + wiggle(id, i); },
            [&](int i) { return 100'000 + extra - saving + wiggle(id, i); }));
    }
    const app::Step step = app::combineCards(cards);
    ASSERT_EQ(step.gates.size(), 1u);
    const probe::CandidateGate& g = step.gates[0];
    ASSERT_EQ(g.projections.size(), 1u);
    EXPECT_NEAR(g.projections[0].medianMs, 0.0, 1e-9);
    EXPECT_EQ(g.verdict.verdict, probe::Verdict::Fail) << g.verdict.line;
    EXPECT_EQ(g.correctness.passed, 48);  // 12 cases on each of four cards

    // The same candidate saving 30 us on the slowest card too: the step passes.
    for (int id = 0; id < 4; ++id) {
        const double extra = id == 2 ? 50'000 : 0;
        cards[std::size_t(id)] = card(
            id, 10, 2, [&](int i) { return 100'000 + extra + wiggle(id, i); },
            [&](int i) { return 70'000 + extra + wiggle(id, i); });
    }
    const app::Step faster = app::combineCards(cards);
    ASSERT_EQ(faster.gates.size(), 1u);
    EXPECT_EQ(faster.gates[0].verdict.verdict, probe::Verdict::Pass) << faster.gates[0].verdict.line;
    EXPECT_NEAR(faster.gates[0].projections[0].medianMs, 30'000 * 43 * 1e-6, 1e-9);
}

TEST(Step, GivenTheStepTimes_WhenGated_ThenTheVerdictIsClassifyIntervalOfTheirInterval) {
    std::vector<app::CardRounds> cards;
    for (int id = 0; id < 3; ++id)
        cards.push_back(card(
            id, 12, 3, [&](int i) { return 100'000 + 5'000 * id + 300 * wiggle(id, i); },
            [&](int i) { return 88'000 + 5'000 * id + 300 * wiggle(id + 1, i); }));
    const app::Step step = app::combineCards(cards);
    ASSERT_EQ(step.gates.size(), 1u);
    const app::StepPattern& sp = step.patterns[0];
    const auto a = app::splitBlocks(sp.find("baseline")->stepNs, sp.blockEnds);
    const auto b = app::splitBlocks(sp.find("paired_direct")->stepNs, sp.blockEnds);
    const probe::Projection want = probe::projectPattern("six_local", a, b, 43, 0.5, sp.resolutionNs);
    const probe::Projection& got = step.gates[0].projections[0];
    EXPECT_EQ(got.ciLowMs, want.ciLowMs);
    EXPECT_EQ(got.ciHighMs, want.ciHighMs);
    EXPECT_EQ(got.verdict, probe::classifyInterval(want.ciLowMs, want.ciHighMs, 0.5));
    EXPECT_EQ(got.blocks, 4u);
}

TEST(Step, GivenAFailedCaseOnOneCard_WhenGated_ThenTheStepFails) {
    std::vector<app::CardRounds> cards;
    for (int id = 0; id < 2; ++id)
        cards.push_back(card(
            id, 10, 2, [&](int i) { return 100'000 + wiggle(id, i); }, [&](int i) { return 50'000 + wiggle(id, i); },
            id == 1 ? probe::CaseCounts{11, 1, 0} : probe::CaseCounts{12, 0, 0}));
    const app::Step step = app::combineCards(cards);
    ASSERT_EQ(step.gates.size(), 1u);
    EXPECT_EQ(step.gates[0].projections[0].verdict, probe::Verdict::Pass);  // the speed alone would pass
    EXPECT_EQ(step.gates[0].verdict.verdict, probe::Verdict::Fail);
    EXPECT_EQ(step.gates[0].correctness.failed, 1);
}

TEST(Step, GivenAPatternOneCardDidNotTime_WhenCombined_ThenItIsNotValidForTheStepNamingTheCard) {
    std::vector<app::CardRounds> cards;
    for (int id = 0; id < 2; ++id)
        cards.push_back(card(
            id, 4, 2, [](int) { return 10.0; }, [](int) { return 9.0; }));
    cards[0].patterns.push_back("all_remote");
    cards[0].rounds["all_remote"] = cards[0].rounds["six_local"];
    const app::Step step = app::combineCards(cards);
    ASSERT_EQ(step.patterns.size(), 1u);
    ASSERT_EQ(step.notValid.size(), 1u);
    EXPECT_EQ(step.notValid[0].pattern, "all_remote");
    EXPECT_EQ(step.notValid[0].reason, "not timed on card 1");
}

TEST(Step, GivenAStep_WhenWrittenAsJson_ThenItFollowsTheSchemaAndKeepsTheRounds) {
    std::vector<app::CardRounds> cards;
    for (int id = 0; id < 4; ++id)
        cards.push_back(card(
            id, 10, 2, [&](int i) { return 100'000 + wiggle(id, i); }, [&](int i) { return 99'000 + wiggle(id, i); }));
    app::StepRun run;
    run.why = "one after another on one shared device";
    for (int id = 0; id < 4; ++id) run.placement.push_back({id, "0", "cpu", "card" + std::to_string(id) + ".json"});
    run.interferenceSkipped = "the cards did not run at once: each ran alone";
    const app::Step step = app::combineCards(cards);
    const json j = app::stepJson(step, run);
    EXPECT_EQ(probe::schemaProblems(app::stepSchema(), j), std::vector<std::string>{});
    EXPECT_EQ(j["concurrent"], false);
    EXPECT_EQ(j["patterns"]["six_local"]["variants"]["baseline"]["samples"].get<std::vector<double>>(),
              step.patterns[0].find("baseline")->stepNs);
    EXPECT_TRUE(j["interference"].is_null());
    // The schema is strict: an unknown key is a problem.
    json bad = j;
    bad["patterns"]["six_local"]["surprise"] = 1;
    EXPECT_FALSE(probe::schemaProblems(app::stepSchema(), bad).empty());

    run.concurrent = true;
    run.interference[2] = {{"six_local", "baseline", 100.0, 125.0}};
    const json k = app::stepJson(step, run);
    EXPECT_EQ(probe::schemaProblems(app::stepSchema(), k), std::vector<std::string>{});
    EXPECT_EQ(k["interference"][0]["ratio"], 1.25);
}

TEST(CardsAtOnce, GivenACardThatEndsBeforeTheStartLine_WhenTheOthersMeet_ThenNobodyWaitsForIt) {
    app::CardsAtOnce room(3);
    std::atomic<int> solos{0};
    std::vector<int> order;
    std::mutex m;
    auto play = [&](std::size_t slot, bool failEarly) {
        const app::CardsAtOnce::Seat seat(&room, slot);
        if (failEarly) return;  // as a card whose device fails before its timing
        room.startLine(slot);
        room.soloTurn(slot, [&] {
            std::lock_guard lock(m);
            order.push_back(int(slot));
            ++solos;
        });
    };
    std::thread t2(play, 2, false), t1(play, 1, true), t0(play, 0, false);
    t0.join();
    t1.join();
    t2.join();
    EXPECT_EQ(solos.load(), 2);
    EXPECT_EQ(order, (std::vector<int>{0, 2}));  // solo turns in card order
}

TEST(CardsAtOnce, GivenASoloTurnThatThrows_WhenTheNextWaits_ThenItGetsItsTurn) {
    app::CardsAtOnce room(2);
    std::atomic<bool> second{false};
    std::thread t0([&] {
        const app::CardsAtOnce::Seat seat(&room, 0);
        room.startLine(0);
        try {
            room.soloTurn(0, [] { throw std::runtime_error("device lost"); });
        } catch (const std::runtime_error&) {}
    });
    std::thread t1([&] {
        const app::CardsAtOnce::Seat seat(&room, 1);
        room.startLine(1);
        room.soloTurn(1, [&] { second = true; });
    });
    t0.join();
    t1.join();
    EXPECT_TRUE(second.load());
}

}  // namespace
