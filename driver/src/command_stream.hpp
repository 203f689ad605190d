// What the entry points of queues, lists, events, fences and event pools share (command.cpp
// enqueues commands; enqueueCommand and releaseCommand are in objects.hpp).
#pragma once

#include "objects.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace zecl {

// Host signal and reset of an event: a host signal completes its gate, a reset forgets the
// command that signalled it.
void hostSignal(Event* e);
void resetEvent(Event* e);
// The event's state as zeEventQueryStatus answers it; clStatus the same of one cl_event.
ze_result_t eventStatus(Event* e);
ze_result_t clStatus(cl_event ev);
// Releases an event's OpenCL events and completes its gate (nobody can signal it any more).
void destroyEvent(Event* e);

// Polls `ready` until it returns other than NOT_READY or `timeoutNs` passes.
template <class F>
ze_result_t pollUntil(uint64_t timeoutNs, F ready) {
    ze_result_t r = ready();
    if (r != ZE_RESULT_NOT_READY || timeoutNs == 0) return r;
    const uint64_t start = hostNowNs();
    for (unsigned spin = 0;; ++spin) {
        if (spin < 64)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        r = ready();
        if (r != ZE_RESULT_NOT_READY) return r;
        if (timeoutNs != UINT64_MAX && hostNowNs() - start >= timeoutNs) return ZE_RESULT_NOT_READY;
    }
}

inline bool isFillPattern(size_t n) { return n != 0 && n <= 128 && (n & (n - 1)) == 0; }

// A launch's global offset for clEnqueueNDRangeKernel: null when it is zero.
inline const size_t* offsetOf(const Command& c) {
    return c.offset[0] | c.offset[1] | c.offset[2] ? c.offset.data() : nullptr;
}

// The in-order, profiling OpenCL queue of an L0 queue or immediate list, known to its context.
cl_command_queue createClQueue(Context* ctx, Device* dev, cl_int& err);
void releaseClQueue(Context* ctx, cl_command_queue q);

// A cl_kernel private to a recorded launch, holding the kernel's current arguments.
// Appends with unchanged arguments share one (never mutated afterwards).
ze_result_t snapshotKernel(Kernel* k, cl_kernel& out);
// Validates the signal and wait handles of an append.
ze_result_t eventArgs(ze_event_handle_t hSignal, uint32_t numWaits, ze_event_handle_t* phWaits, Event*& signal);
// Immediate lists enqueue now; regular lists record. `c.kernel` of an immediate launch
// is the kernel's own cl_kernel (OpenCL captures arguments at enqueue).
ze_result_t submit(List* l, Command&& c, uint32_t numWaits, ze_event_handle_t* phWaits);
// The list behind `h`, open for appends (INVALID_ARGUMENT once closed).
ze_result_t openList(ze_command_list_handle_t h, List*& l);

}  // namespace zecl
