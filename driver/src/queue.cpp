// Command queues: create, destroy, execute regular lists (a replay of their commands on the
// queue's OpenCL queue), synchronize.
#include "api.hpp"
#include "command_stream.hpp"
#include "objects.hpp"

namespace zecl::api {

ze_result_t CommandQueueCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                               const ze_command_queue_desc_t* desc, ze_command_queue_handle_t* phQueue) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    Device* dev = ctx ? lookup<Device>(hDevice, err) : nullptr;
    if (!ctx || !dev) return err;
    if (desc == nullptr || phQueue == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!ctx->hasDevice(dev) || desc->ordinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    cl_int e = CL_SUCCESS;
    cl_command_queue q = createClQueue(ctx, dev, e);
    if (e != CL_SUCCESS) return fromCl(e);
    auto* queue = new Queue;
    queue->context = ctx;
    queue->device = dev;
    queue->cl = q;
    queue->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
    publish(queue);
    *phQueue = reinterpret_cast<ze_command_queue_handle_t>(queue);
    return ZE_RESULT_SUCCESS;
}

ze_result_t CommandQueueDestroy(ze_command_queue_handle_t hQueue) {
    ze_result_t err;
    Queue* q = lookup<Queue>(hQueue, err);
    if (!q) return err;
    retire(q);
    Context* ctx = q->context;
    releaseClQueue(ctx, q->cl);
    delete q;
    leaveContext(ctx);
    return ZE_RESULT_SUCCESS;
}

ze_result_t CommandQueueExecuteCommandLists(ze_command_queue_handle_t hQueue, uint32_t numLists,
                                            ze_command_list_handle_t* phLists, ze_fence_handle_t hFence) {
    ze_result_t err;
    Queue* q = lookup<Queue>(hQueue, err);
    if (!q) return err;
    if (numLists == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (phLists == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Fence* fence = nullptr;
    if (hFence) {
        fence = lookup<Fence>(hFence, err);
        if (!fence) return err;
        if (fence->queue != q) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    for (uint32_t i = 0; i < numLists; ++i) {
        List* l = lookup<List>(phLists[i], err);
        if (!l) return err;
        if (l->immediate || !l->closed || l->device != q->device) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        // An event destroyed since it was recorded can no longer be signalled or waited on.
        for (const Command& c : l->commands)
            if (namesDestroyedEvent(c)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (faultNow(Fault::Enqueue)) return ZE_RESULT_ERROR_DEVICE_LOST;
    for (uint32_t i = 0; i < numLists; ++i) {
        auto* l = reinterpret_cast<List*>(phLists[i]);
        for (const Command& c : l->commands) {
            ze_result_t r;
            if (c.op == Op::Launch && !c.cooperative && c.waits.empty() && !c.signal) {
                // The replay hot path: one enqueue of a pre-set private kernel.
                cl_int e = clEnqueueNDRangeKernel(q->cl, c.kernel, 3, offsetOf(c), c.global.data(), c.local.data(), 0,
                                                  nullptr, nullptr);
                r = e == CL_SUCCESS ? ZE_RESULT_SUCCESS : fromCl(e);
            } else {
                r = enqueueCommand(q->cl, c, c.waits);
            }
            if (r != ZE_RESULT_SUCCESS) return r;
        }
    }
    if (fence) {
        cl_event marker = nullptr;
        cl_int e = clEnqueueMarkerWithWaitList(q->cl, 0, nullptr, &marker);
        if (e != CL_SUCCESS) return fromCl(e);
        std::lock_guard lock(fence->mutex);
        if (fence->marker) clReleaseEvent(fence->marker);
        fence->marker = marker;
    }
    if (q->synchronous) return fromCl(clFinish(q->cl));
    clFlush(q->cl);
    return ZE_RESULT_SUCCESS;
}

ze_result_t CommandQueueSynchronize(ze_command_queue_handle_t hQueue, uint64_t timeout) {
    ze_result_t err;
    Queue* q = lookup<Queue>(hQueue, err);
    if (!q) return err;
    if (timeout == UINT64_MAX) return fromCl(clFinish(q->cl));
    cl_event marker = nullptr;
    cl_int e = clEnqueueMarkerWithWaitList(q->cl, 0, nullptr, &marker);
    if (e != CL_SUCCESS) return fromCl(e);
    clFlush(q->cl);
    ze_result_t r = pollUntil(timeout, [&] { return clStatus(marker); });
    clReleaseEvent(marker);
    return r;
}

}  // namespace zecl::api
