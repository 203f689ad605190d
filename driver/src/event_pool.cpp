// Event pools: fixed slots for the events created in them; destroying a pool destroys its events.
#include "api.hpp"
#include "command_stream.hpp"
#include "objects.hpp"

namespace zecl::api {

ze_result_t EventPoolCreate(ze_context_handle_t hContext, const ze_event_pool_desc_t* desc, uint32_t numDevices,
                            ze_device_handle_t* phDevices, ze_event_pool_handle_t* phPool) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    if (!ctx) return err;
    if (desc == nullptr || phPool == nullptr || (numDevices > 0 && phDevices == nullptr))
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    for (uint32_t i = 0; i < numDevices; ++i)
        if (!lookup<Device>(phDevices[i], err)) return err;
    if (desc->flags & ZE_EVENT_POOL_FLAG_IPC) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    auto* pool = new EventPool;
    pool->context = ctx;
    pool->flags = desc->flags;
    pool->count = desc->count;
    pool->slots.assign(desc->count, nullptr);
    publish(pool);
    *phPool = reinterpret_cast<ze_event_pool_handle_t>(pool);
    return ZE_RESULT_SUCCESS;
}

ze_result_t EventPoolDestroy(ze_event_pool_handle_t hPool) {
    ze_result_t err;
    EventPool* pool = lookup<EventPool>(hPool, err);
    if (!pool) return err;
    retire(pool);
    Context* ctx = pool->context;
    for (Event* e : pool->slots)
        if (e) {
            destroyEvent(e);
            releaseEvent(e);
        }
    delete pool;
    leaveContext(ctx);
    return ZE_RESULT_SUCCESS;
}

}  // namespace zecl::api
