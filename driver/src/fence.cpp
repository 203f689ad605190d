// Fences: a marker on the queue's OpenCL queue at each execute, waited for or queried.
#include "api.hpp"
#include "command_stream.hpp"
#include "objects.hpp"

namespace zecl::api {

ze_result_t FenceCreate(ze_command_queue_handle_t hQueue, const ze_fence_desc_t* desc, ze_fence_handle_t* phFence) {
    ze_result_t err;
    Queue* q = lookup<Queue>(hQueue, err);
    if (!q) return err;
    if (desc == nullptr || phFence == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    auto* f = new Fence;
    f->queue = q;
    publish(f);
    *phFence = reinterpret_cast<ze_fence_handle_t>(f);
    return ZE_RESULT_SUCCESS;
}

ze_result_t FenceDestroy(ze_fence_handle_t hFence) {
    ze_result_t err;
    Fence* f = lookup<Fence>(hFence, err);
    if (!f) return err;
    retire(f);
    if (f->marker) clReleaseEvent(f->marker);
    delete f;
    return ZE_RESULT_SUCCESS;
}

namespace {
ze_result_t fenceStatus(Fence* f) {
    std::lock_guard lock(f->mutex);
    return f->marker ? clStatus(f->marker) : ZE_RESULT_NOT_READY;
}
}  // namespace

ze_result_t FenceHostSynchronize(ze_fence_handle_t hFence, uint64_t timeout) {
    ze_result_t err;
    Fence* f = lookup<Fence>(hFence, err);
    if (!f) return err;
    if (timeout == UINT64_MAX) {
        cl_event marker = nullptr;
        {
            std::lock_guard lock(f->mutex);
            if ((marker = f->marker)) clRetainEvent(marker);
        }
        if (marker) {
            cl_int e = clWaitForEvents(1, &marker);
            clReleaseEvent(marker);
            if (e != CL_SUCCESS) return ZE_RESULT_ERROR_DEVICE_LOST;
        }
    }
    return pollUntil(timeout, [&] { return fenceStatus(f); });
}

ze_result_t FenceQueryStatus(ze_fence_handle_t hFence) {
    ze_result_t err;
    Fence* f = lookup<Fence>(hFence, err);
    return f ? fenceStatus(f) : err;
}

ze_result_t FenceReset(ze_fence_handle_t hFence) {
    ze_result_t err;
    Fence* f = lookup<Fence>(hFence, err);
    if (!f) return err;
    std::lock_guard lock(f->mutex);
    if (f->marker) {
        clReleaseEvent(f->marker);
        f->marker = nullptr;
    }
    return ZE_RESULT_SUCCESS;
}

}  // namespace zecl::api
