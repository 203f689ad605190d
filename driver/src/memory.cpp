// Contexts and USM over OpenCL SVM.
//
// Device and host allocations are coarse-grained SVM buffers (host allocations use
// fine-grained SVM where every device of the context has it, so the host may touch them
// directly). Coarse-grained memory must only be accessed from the host through copies
// (zeCommandListAppendMemoryCopy) unless the device is a CPU, where it is host memory.
// Shared allocations need fine-grained SVM and are refused without it.
#include "api.hpp"
#include "objects.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>
#include <optional>

namespace zecl {

bool Context::hasDevice(const Device* d) const { return std::find(devices.begin(), devices.end(), d) != devices.end(); }

bool Context::hostReachable(const void* ptr) {
    std::lock_guard lock(allocMutex);
    const Allocation* a = findLocked(ptr);
    if (!a) return true;                                // host memory of the application's own
    if (a->type == ZE_MEMORY_TYPE_SHARED) return true;  // fine-grained SVM
    auto onCpu = [](const Device* d) { return d->type == ZE_DEVICE_TYPE_CPU; };
    if (a->device) return onCpu(a->device);  // a CPU device's memory is host memory
    // Host allocations are fine-grained where every device has fine-grained buffer SVM.
    return std::all_of(devices.begin(), devices.end(),
                       [&](const Device* d) { return onCpu(d) || (d->svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER); });
}

const Allocation* Context::findLocked(const void* ptr) const {
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    auto it = allocs.upper_bound(p);
    if (it == allocs.begin()) return nullptr;
    --it;
    const Allocation& a = it->second;
    return p < a.begin + a.size ? &a : nullptr;
}

namespace {

// The allocation of `c` whose OpenCL block (alignment prefix, the allocation, its page padding)
// holds address p, or null; c.allocMutex held. Blocks do not overlap, and the map is ordered by
// `begin`: p lies in the block of the last allocation beginning at or before it, or in the
// alignment prefix of the next one.
const Allocation* blockHoldingLocked(const Context& c, uintptr_t p) {
    auto blockOf = [p](const Allocation& a) {
        const auto base = reinterpret_cast<uintptr_t>(a.clBase);
        return p >= base && p - base < a.reserved ? &a : nullptr;
    };
    auto next = c.allocs.upper_bound(p);
    if (next != c.allocs.end())
        if (const Allocation* a = blockOf(next->second)) return a;
    return next == c.allocs.begin() ? nullptr : blockOf(std::prev(next)->second);
}

}  // namespace

ze_result_t checkRange(Context* ctx, const void* ptr, size_t offset, size_t size) {
    if (size == 0) return ZE_RESULT_SUCCESS;
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    if (offset > UINTPTR_MAX - p || size > UINTPTR_MAX - (p + offset)) return ZE_RESULT_ERROR_INVALID_SIZE;
    const uintptr_t first = p + offset, end = first + size;
    // Whether the range lies within the allocation of `c` whose block holds its first byte;
    // nullopt where none does.
    auto within = [&](Context* c) -> std::optional<bool> {
        std::lock_guard lock(c->allocMutex);
        const Allocation* a = blockHoldingLocked(*c, first);
        if (a == nullptr) return std::nullopt;
        return first >= a->begin && end - a->begin <= a->size;
    };
    std::optional<bool> fits = within(ctx);
    // Allocations of the contexts sharing this one's cl_context are valid here too (one SVM space).
    if (!fits) {
        std::lock_guard lock(ctx->driver->sharedMutex);
        if (ctx->cl == ctx->driver->shared)
            for (Context* c : ctx->driver->sharing) {
                if (c == ctx) continue;
                fits = within(c);
                if (fits) break;
            }
    }
    return fits.value_or(true) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_SIZE;
}

namespace {

std::atomic<uint64_t> nextAllocationId{1};

ze_result_t createContext(Driver* drv, std::vector<Device*> devices, ze_context_handle_t* phContext) {
    std::vector<cl_device_id> ids;
    for (Device* d : devices) ids.push_back(d->cl);
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(drv->platform), 0};
    cl_int e = CL_SUCCESS;
    cl_context cl = nullptr;
    bool sharing = false;
    if (devices.size() == drv->devices.size()) {
        // Over all devices: the driver's shared cl_context (see Driver::shared).
        std::lock_guard lock(drv->sharedMutex);
        if (!drv->shared) drv->shared = clCreateContext(props, cl_uint(ids.size()), ids.data(), nullptr, nullptr, &e);
        if (e != CL_SUCCESS) return fromCl(e);
        cl = drv->shared;
        clRetainContext(cl);
        sharing = true;
    } else {
        cl = clCreateContext(props, cl_uint(ids.size()), ids.data(), nullptr, nullptr, &e);
        if (e != CL_SUCCESS) return fromCl(e);
    }
    auto* ctx = new Context;
    ctx->driver = drv;
    ctx->cl = cl;
    ctx->devices = std::move(devices);
    if (sharing) {
        std::lock_guard lock(drv->sharedMutex);
        drv->sharing.push_back(ctx);
    }
    publish(ctx);
    *phContext = reinterpret_cast<ze_context_handle_t>(ctx);
    return ZE_RESULT_SUCCESS;
}

ze_result_t allocate(Context* ctx, Device* dev, ze_memory_type_t type, size_t size, size_t alignment, void** pptr) {
    if (pptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pptr = nullptr;
    if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (alignment != 0 && !std::has_single_bit(alignment)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    // The limits of every device that may touch the allocation apply.
    std::vector<Device*> users = dev ? std::vector<Device*>{dev} : ctx->devices;
    cl_ulong maxAlloc = UINT64_MAX;
    size_t baseAlign = 4096;
    bool fineEverywhere = true, cpuOnly = true;
    for (Device* d : users) {
        cpuOnly = cpuOnly && d->type == ZE_DEVICE_TYPE_CPU;
        maxAlloc = std::min(maxAlloc, d->maxAllocSize);
        baseAlign = std::min<size_t>(baseAlign, d->baseAddrAlign);
        fineEverywhere = fineEverywhere && (d->svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER);
    }
    if (size > maxAlloc) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (type == ZE_MEMORY_TYPE_SHARED && !fineEverywhere) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    if (faultNow(Fault::Alloc)) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;

    cl_svm_mem_flags flags = CL_MEM_READ_WRITE;
    if (type == ZE_MEMORY_TYPE_SHARED || (type == ZE_MEMORY_TYPE_HOST && fineEverywhere))
        flags |= CL_MEM_SVM_FINE_GRAIN_BUFFER;
    // OpenCL implementations refuse alignments above what they support (PoCL returns null
    // for 4096), so larger alignments are met by over-allocating.
    size_t clAlign = alignment == 0 ? 0 : std::min(alignment, baseAlign);
    size_t extra = alignment > baseAlign ? alignment : 0;
    // Whole pages, as GPU drivers allocate: a kernel that strays past the end of a small
    // allocation (the conformance suite has one) writes into padding, not into the heap.
    constexpr size_t kPage = 4096;
    if (size > SIZE_MAX - extra - kPage) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    const size_t padded = std::max<size_t>(size, std::min<cl_ulong>((size + kPage - 1) / kPage * kPage, maxAlloc));
    void* base = clSVMAlloc(ctx->cl, flags, padded + extra, cl_uint(clAlign));
    if (base == nullptr) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    uintptr_t begin = reinterpret_cast<uintptr_t>(base);
    if (extra) begin = (begin + alignment - 1) & ~(uintptr_t(alignment) - 1);
    // A GPU driver's fresh pages read as zero past the end; an OpenCL runtime's SVM heap
    // (Intel's CPU runtime reuses freed blocks) holds stale data there, and a kernel that
    // reads past a small allocation takes it as offsets (the suite's scratch test then
    // crashed). So the padding is zeroed where the host can write it.
    if (cpuOnly || (flags & CL_MEM_SVM_FINE_GRAIN_BUFFER)) {
        auto* end = static_cast<uint8_t*>(base) + padded + extra;
        auto* tail = reinterpret_cast<uint8_t*>(begin) + size;
        if (tail < end) std::memset(tail, 0, size_t(end - tail));
    }

    const Allocation a{.clBase = base,
                       .reserved = padded + extra,
                       .begin = begin,
                       .size = size,
                       .type = type,
                       .device = dev,
                       .id = nextAllocationId.fetch_add(1)};
    {
        std::lock_guard lock(ctx->allocMutex);
        ctx->allocs[begin] = a;
    }
    *pptr = reinterpret_cast<void*>(begin);
    return ZE_RESULT_SUCCESS;
}

}  // namespace

namespace {
void releaseRetiredContext(Context* ctx) {
    if (ctx->released.exchange(true)) return;  // the destroy and the last dependant may both get here
    clReleaseContext(ctx->cl);
    delete ctx;
}
}  // namespace

void leaveContext(Context* ctx) {
    if (--ctx->dependants == 0 && ctx->destroyed) releaseRetiredContext(ctx);
}

}  // namespace zecl

namespace zecl::api {

ze_result_t ContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t* desc, ze_context_handle_t* phContext) {
    ze_result_t err;
    Driver* drv = lookup<Driver>(hDriver, err);
    if (!drv) return err;
    if (desc == nullptr || phContext == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    std::vector<Device*> devices;
    for (auto& d : drv->devices) devices.push_back(d.get());
    return createContext(drv, std::move(devices), phContext);
}

ze_result_t ContextCreateEx(ze_driver_handle_t hDriver, const ze_context_desc_t* desc, uint32_t numDevices,
                            ze_device_handle_t* phDevices, ze_context_handle_t* phContext) {
    ze_result_t err;
    Driver* drv = lookup<Driver>(hDriver, err);
    if (!drv) return err;
    if (desc == nullptr || phContext == nullptr || (numDevices > 0 && phDevices == nullptr))
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    std::vector<Device*> devices;
    for (uint32_t i = 0; i < numDevices; ++i) {
        Device* d = lookup<Device>(phDevices[i], err);
        if (!d) return err;
        if (d->driver != drv) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        devices.push_back(d);
    }
    if (devices.empty())
        for (auto& d : drv->devices) devices.push_back(d.get());
    return createContext(drv, std::move(devices), phContext);
}

ze_result_t ContextDestroy(ze_context_handle_t hContext) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    if (!ctx) return err;
    // The handle goes now (any later use of it is INVALID_ARGUMENT) and so do its allocations;
    // the context's own memory and OpenCL context stay while queues, lists, modules or event
    // pools made on it live (they use them to their own destroy), freed by the last of them.
    retire(ctx);
    {
        std::lock_guard lock(ctx->driver->sharedMutex);
        std::erase(ctx->driver->sharing, ctx);
    }
    {
        std::lock_guard lock(ctx->allocMutex);
        for (auto& [begin, a] : ctx->allocs) clSVMFree(ctx->cl, a.clBase);
        ctx->allocs.clear();
    }
    ctx->destroyed = true;
    if (ctx->dependants == 0) zecl::releaseRetiredContext(ctx);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ContextSystemBarrier(ze_context_handle_t hContext, ze_device_handle_t hDevice) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    if (!ctx) return err;
    Device* dev = lookup<Device>(hDevice, err);
    if (!dev) return err;
    if (!ctx->hasDevice(dev)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    // A host-side barrier: returns once everything submitted to the context's queues has
    // completed, so its writes are visible to the host and every device. (OpenCL queues do
    // not say which device they drain for, so all of the context's queues are waited on.)
    std::lock_guard lock(ctx->queuesMutex);
    for (cl_command_queue q : ctx->queues)
        if (cl_int e = clFinish(q); e != CL_SUCCESS) return fromCl(e);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ContextGetStatus(ze_context_handle_t hContext) {
    ze_result_t err;
    return lookup<Context>(hContext, err) ? ZE_RESULT_SUCCESS : err;
}

namespace {
// Everything SVM is resident already; residency calls check their range and succeed without work.
ze_result_t residency(ze_context_handle_t hContext, ze_device_handle_t hDevice, const void* ptr, size_t size) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    if (!ctx || !lookup<Device>(hDevice, err)) return err;
    if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return checkRange(ctx, ptr, size);
}
}  // namespace

ze_result_t ContextMakeMemoryResident(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr,
                                      size_t size) {
    return residency(hContext, hDevice, ptr, size);
}

ze_result_t ContextEvictMemory(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr, size_t size) {
    return residency(hContext, hDevice, ptr, size);
}

ze_result_t MemAllocDevice(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t* desc, size_t size,
                           size_t alignment, ze_device_handle_t hDevice, void** pptr) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    Device* dev = ctx ? lookup<Device>(hDevice, err) : nullptr;
    if (!ctx || !dev) return err;
    if (desc == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!ctx->hasDevice(dev)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    return allocate(ctx, dev, ZE_MEMORY_TYPE_DEVICE, size, alignment, pptr);
}

ze_result_t MemAllocHost(ze_context_handle_t hContext, const ze_host_mem_alloc_desc_t* desc, size_t size,
                         size_t alignment, void** pptr) {
    ze_result_t err;
    Context* ctx = lookupQuery<Context>(hContext, desc, err);
    if (!ctx) return err;
    return allocate(ctx, nullptr, ZE_MEMORY_TYPE_HOST, size, alignment, pptr);
}

ze_result_t MemAllocShared(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t* deviceDesc,
                           const ze_host_mem_alloc_desc_t* hostDesc, size_t size, size_t alignment,
                           ze_device_handle_t hDevice, void** pptr) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    if (!ctx) return err;
    Device* dev = nullptr;
    if (hDevice != nullptr) {
        dev = lookup<Device>(hDevice, err);
        if (!dev) return err;
        if (!ctx->hasDevice(dev)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    if (deviceDesc == nullptr || hostDesc == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return allocate(ctx, dev, ZE_MEMORY_TYPE_SHARED, size, alignment, pptr);
}

ze_result_t MemFree(ze_context_handle_t hContext, void* ptr) {
    ze_result_t err;
    Context* ctx = lookupQuery<Context>(hContext, ptr, err);
    if (!ctx) return err;
    void* base = nullptr;
    auto take = [&](Context* c) {
        std::lock_guard lock(c->allocMutex);
        auto it = c->allocs.find(reinterpret_cast<uintptr_t>(ptr));
        if (it == c->allocs.end()) return false;
        base = it->second.clBase;
        c->allocs.erase(it);
        return true;
    };
    if (!take(ctx)) {
        // Memory of another context on the same shared cl_context is freed through its owner
        // (one SVM space, as on Intel's driver); anything else is not an allocation here.
        Context* owner = nullptr;
        if (ctx->cl == ctx->driver->shared) {
            std::lock_guard lock(ctx->driver->sharedMutex);
            for (Context* c : ctx->driver->sharing)
                if (c != ctx && take(c)) {
                    owner = c;
                    break;
                }
        }
        if (!owner) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        ctx = owner;
    }
    {
        // The spec makes freeing memory in use undefined; zecl waits instead of crashing (an
        // application unwinding after a failed append may still have earlier work in flight).
        std::lock_guard lock(ctx->queuesMutex);
        for (cl_command_queue q : ctx->queues) clFinish(q);
    }
    clSVMFree(ctx->cl, base);
    return ZE_RESULT_SUCCESS;
}

ze_result_t MemGetAllocProperties(ze_context_handle_t hContext, const void* ptr, ze_memory_allocation_properties_t* p,
                                  ze_device_handle_t* phDevice) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    if (!ctx) return err;
    if (ptr == nullptr || p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    std::lock_guard lock(ctx->allocMutex);
    const Allocation* a = ctx->findLocked(ptr);
    p->type = a ? a->type : ZE_MEMORY_TYPE_UNKNOWN;
    p->id = a ? a->id : 0;
    p->pageSize = a ? 4096 : 0;
    if (phDevice != nullptr) *phDevice = a ? reinterpret_cast<ze_device_handle_t>(a->device) : nullptr;
    return ZE_RESULT_SUCCESS;
}

ze_result_t MemGetAddressRange(ze_context_handle_t hContext, const void* ptr, void** pBase, size_t* pSize) {
    ze_result_t err;
    Context* ctx = lookupQuery<Context>(hContext, ptr, err);
    if (!ctx) return err;
    std::lock_guard lock(ctx->allocMutex);
    const Allocation* a = ctx->findLocked(ptr);
    if (!a) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (pBase) *pBase = reinterpret_cast<void*>(a->begin);
    if (pSize) *pSize = a->size;
    return ZE_RESULT_SUCCESS;
}

// zecl reserves no virtual address ranges (OpenCL has nothing to map them onto), so it has no
// page size to give: UNSUPPORTED_FEATURE after the spec's checks (handles, pointer, a size of 0),
// *pagesize left alone. Never SUCCESS with a page size of 0: the conformance suite divides by it.
ze_result_t VirtualMemQueryPageSize(ze_context_handle_t hContext, ze_device_handle_t hDevice, size_t size,
                                    size_t* pagesize) {
    ze_result_t err;
    if (lookup<Context>(hContext, err) == nullptr) return err;
    if (lookupQuery<Device>(hDevice, pagesize, err) == nullptr) return err;
    if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;  // the spec's check, as the validation layer makes it
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

}  // namespace zecl::api
