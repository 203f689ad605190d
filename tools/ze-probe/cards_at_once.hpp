// Cards played at once, one thread and one device each (main.cpp): the threads meet twice.
//  - the start line: every card's timing starts when the last card reaches it, so the cards'
//    timed rounds overlap (their correctness runs take different times);
//  - the solo turns: once every card has finished its timing together, each card in turn
//    times its patterns again alone (the others idle), for the interference figures.
// A card that ends early (an error) leaves: it counts as arrived at the start line and as
// done with its turn, so the others never wait for it. Every wait therefore ends as long as
// every thread either reaches the meeting or ends.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace zp::app {

class CardsAtOnce {
public:
    explicit CardsAtOnce(std::size_t cards) : started_(cards, false), timed_(cards, false), solo_(cards, false) {}

    // Waits until every card has reached its timing (or left).
    void startLine(std::size_t slot) {
        std::unique_lock lock(mutex_);
        started_[slot] = true;
        changed_.notify_all();
        changed_.wait(lock, [&] { return all(started_); });
    }
    // Waits until every card has finished timing together and the cards before `slot` have
    // had their solo turns, runs `solo`, then passes the turn on (also when `solo` throws).
    template <class F>
    void soloTurn(std::size_t slot, F&& solo) {
        {
            std::unique_lock lock(mutex_);
            timed_[slot] = started_[slot] = true;
            changed_.notify_all();
            changed_.wait(lock, [&] { return all(timed_) && firstWithoutSolo() == slot; });
        }
        struct Pass {
            CardsAtOnce& self;
            std::size_t slot;
            ~Pass() { self.leave(slot); }
        } pass{*this, slot};
        solo();
    }
    // The card is done (or failed): nobody waits for it any more.
    void leave(std::size_t slot) {
        std::lock_guard lock(mutex_);
        started_[slot] = timed_[slot] = solo_[slot] = true;
        changed_.notify_all();
    }

    // Leaves on destruction: a card's thread holds one for its whole run.
    class Seat {
    public:
        Seat(CardsAtOnce* room, std::size_t slot) : room_(room), slot_(slot) {}
        ~Seat() {
            if (room_) room_->leave(slot_);
        }
        Seat(const Seat&) = delete;
        Seat& operator=(const Seat&) = delete;

    private:
        CardsAtOnce* room_;
        std::size_t slot_;
    };

private:
    static bool all(const std::vector<bool>& v) {
        for (bool b : v)
            if (!b) return false;
        return true;
    }
    std::size_t firstWithoutSolo() const {
        std::size_t i = 0;
        while (i < solo_.size() && solo_[i]) ++i;
        return i;
    }
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<bool> started_, timed_, solo_;
};

}  // namespace zp::app
