// Events: signalled by commands or the host, waited for, reset, and their kernel timestamps.
#include "api.hpp"
#include "command_stream.hpp"
#include "objects.hpp"

namespace zecl {

void destroyEvent(Event* e) {
    retire(e);
    e->destroyed = true;
    std::lock_guard lock(e->mutex);
    if (e->gate) {
        // Nobody can signal a destroyed event; release its waiters rather than hang them.
        clSetUserEventStatus(e->gate, CL_COMPLETE);
        clReleaseEvent(e->gate);
    }
    if (e->last) clReleaseEvent(e->last);
}

}  // namespace zecl

namespace zecl::api {

ze_result_t EventCreate(ze_event_pool_handle_t hPool, const ze_event_desc_t* desc, ze_event_handle_t* phEvent) {
    ze_result_t err;
    EventPool* pool = lookup<EventPool>(hPool, err);
    if (!pool) return err;
    if (desc == nullptr || phEvent == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *phEvent = nullptr;  // a refused create hands back no handle
    std::lock_guard lock(pool->mutex);
    if (desc->index >= pool->count || pool->slots[desc->index] != nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    auto* e = new Event;
    e->pool = pool;
    e->index = desc->index;
    pool->slots[desc->index] = e;
    publish(e);
    *phEvent = reinterpret_cast<ze_event_handle_t>(e);
    return ZE_RESULT_SUCCESS;
}

ze_result_t EventDestroy(ze_event_handle_t hEvent) {
    ze_result_t err;
    Event* e = lookup<Event>(hEvent, err);
    if (!e) return err;
    {
        std::lock_guard lock(e->pool->mutex);
        e->pool->slots[e->index] = nullptr;
    }
    destroyEvent(e);
    releaseEvent(e);
    return ZE_RESULT_SUCCESS;
}

ze_result_t EventHostSignal(ze_event_handle_t hEvent) {
    ze_result_t err;
    Event* e = lookup<Event>(hEvent, err);
    if (!e) return err;
    hostSignal(e);
    return ZE_RESULT_SUCCESS;
}

ze_result_t EventHostSynchronize(ze_event_handle_t hEvent, uint64_t timeout) {
    ze_result_t err;
    Event* e = lookup<Event>(hEvent, err);
    if (!e) return err;
    if (timeout == UINT64_MAX) {
        // Block on the signalling command where one exists instead of polling.
        cl_event last = nullptr;
        {
            std::lock_guard lock(e->mutex);
            if (!e->hostSignaled && (last = e->last)) clRetainEvent(last);
        }
        if (last) {
            cl_int w = clWaitForEvents(1, &last);
            clReleaseEvent(last);
            if (w != CL_SUCCESS) return ZE_RESULT_ERROR_DEVICE_LOST;
        }
    }
    return pollUntil(timeout, [&] { return eventStatus(e); });
}

ze_result_t EventQueryStatus(ze_event_handle_t hEvent) {
    ze_result_t err;
    Event* e = lookup<Event>(hEvent, err);
    return e ? eventStatus(e) : err;
}

ze_result_t EventHostReset(ze_event_handle_t hEvent) {
    ze_result_t err;
    Event* e = lookup<Event>(hEvent, err);
    if (!e) return err;
    resetEvent(e);
    return ZE_RESULT_SUCCESS;
}

ze_result_t EventQueryKernelTimestamp(ze_event_handle_t hEvent, ze_kernel_timestamp_result_t* dst) {
    ze_result_t err;
    Event* e = lookupQuery<Event>(hEvent, dst, err);
    if (!e) return err;
    if (!(e->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // the pool was not created for timestamps
    std::lock_guard lock(e->mutex);
    if (!e->last) return e->hostSignaled ? ZE_RESULT_ERROR_INVALID_ARGUMENT : ZE_RESULT_NOT_READY;
    ze_result_t s = clStatus(e->last);
    if (s != ZE_RESULT_SUCCESS) return s;
    cl_ulong start = 0, end = 0;
    if (clGetEventProfilingInfo(e->last, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr) != CL_SUCCESS ||
        clGetEventProfilingInfo(e->last, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr) != CL_SUCCESS)
        return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    // Ticks of timerResolution (the OpenCL profiling timer resolution, in ns).
    const uint64_t tick = e->tickNs;
    dst->global.kernelStart = dst->context.kernelStart = start / tick;
    dst->global.kernelEnd = dst->context.kernelEnd = end / tick;
    return ZE_RESULT_SUCCESS;
}

}  // namespace zecl::api
