// Command lists: regular lists record commands, immediate lists enqueue them at append
// (command_stream.hpp); launches, copies, fills, barriers, event signals and waits, timestamps.
#include "api.hpp"
#include "command_stream.hpp"
#include "objects.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace zecl {
namespace {

// Releases what a regular list's commands hold (snapshot kernels, event references) and empties it.
void releaseRecorded(List* l) {
    for (Command& c : l->commands) {
        releaseCommand(c);
        dropEvents(c);
    }
    l->commands.clear();
}

}  // namespace
}  // namespace zecl

namespace zecl::api {

ze_result_t CommandListCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                              const ze_command_list_desc_t* desc, ze_command_list_handle_t* phList) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    Device* dev = ctx ? lookup<Device>(hDevice, err) : nullptr;
    if (!ctx || !dev) return err;
    if (desc == nullptr || phList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!ctx->hasDevice(dev) || desc->commandQueueGroupOrdinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    auto* l = new List;
    l->context = ctx;
    l->device = dev;
    publish(l);
    *phList = reinterpret_cast<ze_command_list_handle_t>(l);
    return ZE_RESULT_SUCCESS;
}

ze_result_t CommandListCreateImmediate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                       const ze_command_queue_desc_t* desc, ze_command_list_handle_t* phList) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    Device* dev = ctx ? lookup<Device>(hDevice, err) : nullptr;
    if (!ctx || !dev) return err;
    if (desc == nullptr || phList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!ctx->hasDevice(dev) || desc->ordinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    cl_int e = CL_SUCCESS;
    cl_command_queue q = createClQueue(ctx, dev, e);
    if (e != CL_SUCCESS) return fromCl(e);
    auto* l = new List;
    l->context = ctx;
    l->device = dev;
    l->immediate = true;
    l->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
    l->cl = q;
    publish(l);
    *phList = reinterpret_cast<ze_command_list_handle_t>(l);
    return ZE_RESULT_SUCCESS;
}

ze_result_t CommandListDestroy(ze_command_list_handle_t hList) {
    ze_result_t err;
    List* l = lookup<List>(hList, err);
    if (!l) return err;
    retire(l);
    Context* ctx = l->context;
    releaseRecorded(l);
    if (l->cl) releaseClQueue(ctx, l->cl);
    delete l;
    leaveContext(ctx);
    return ZE_RESULT_SUCCESS;
}

ze_result_t CommandListClose(ze_command_list_handle_t hList) {
    ze_result_t err;
    List* l = lookup<List>(hList, err);
    if (!l) return err;
    if (!l->immediate) l->closed = true;
    return ZE_RESULT_SUCCESS;
}

ze_result_t CommandListReset(ze_command_list_handle_t hList) {
    ze_result_t err;
    List* l = lookup<List>(hList, err);
    if (!l) return err;
    releaseRecorded(l);
    l->closed = false;
    if (l->cl) clFinish(l->cl);
    return ZE_RESULT_SUCCESS;
}

namespace {

// The host's physical memory in bytes (SIZE_MAX where the system does not say).
size_t hostMemoryBytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || pageSize <= 0) return SIZE_MAX;
    return size_t(pages) > SIZE_MAX / size_t(pageSize) ? SIZE_MAX : size_t(pages) * size_t(pageSize);
}

// The bytes one side of a region copy spans: `offset` from the pointer to the region's origin,
// `bytes` from there to the last byte of its last row. False where either exceeds size_t
// (32-bit origins times 64-bit slice pitches can).
bool regionSpan(const ze_copy_region_t& region, const CopyRect& r, size_t pitch, size_t slicePitch, size_t& offset,
                size_t& bytes) {
    using Wide = unsigned __int128;
    const Wide o = Wide(region.originZ) * slicePitch + Wide(region.originY) * pitch + region.originX;
    const Wide b = Wide(r.depth - 1) * slicePitch + Wide(r.height - 1) * pitch + r.width;
    if (o > SIZE_MAX || b > SIZE_MAX) return false;
    offset = size_t(o);
    bytes = size_t(b);
    return true;
}

// Whether [a, a + n) and [b, b + n) share a byte (neither wraps: checkRange refused those).
bool spansMeet(uintptr_t a, size_t an, uintptr_t b, size_t bn) { return a < b + bn && b < a + an; }

// Whether a byte a region copy writes is one it reads. Each side's rows start at non-decreasing
// addresses (a slice pitch >= pitch x height: checked before) and are all `width` bytes long,
// so a merge of the two row lists finds any pair that meets: a row that ends before the
// other side's current row ends before all its later ones. Linear in the rows, as the copy is.
bool regionRowsMeet(uintptr_t dst, uintptr_t src, const CopyRect& r) {
    const uint64_t rows = uint64_t(r.height) * r.depth;
    const auto rowAt = [&](uintptr_t base, size_t pitch, size_t slicePitch, uint64_t i) {
        return base + (i / r.height) * slicePitch + (i % r.height) * pitch;
    };
    for (uint64_t i = 0, j = 0; i < rows && j < rows;) {
        const uintptr_t d = rowAt(dst, r.dstPitch, r.dstSlicePitch, i), s = rowAt(src, r.srcPitch, r.srcSlicePitch, j);
        if (spansMeet(d, r.width, s, r.width)) return true;
        (d < s ? i : j) += 1;
    }
    return false;
}

// Validates a launch of `k` on `l` and fills the command's group size and global offset.
ze_result_t prepareLaunch(List* l, Kernel* k, Command& c) {
    // Another L0 context's kernel runs where both share one cl_context (contexts over all of
    // the driver's devices do); a cl_kernel cannot run on another cl_context's queue.
    if (k->device != l->device || k->clContext != l->context->cl) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    for (const ArgSlot& a : k->args)
        if (!a.set) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // OpenCL would refuse it at enqueue
    if (ze_result_t r = checkLocalMemory(*k)) return r;
    for (size_t d = 0; d < 3; ++d) {
        c.local[d] = k->groupSize[d];
        c.offset[d] = k->globalOffset[d];
    }
    return ZE_RESULT_SUCCESS;
}

// The handle and argument checks every single-kernel launch starts with.
ze_result_t beginLaunch(ze_command_list_handle_t hList, ze_kernel_handle_t hKernel, const ze_group_count_t* counts,
                        ze_event_handle_t hSignal, uint32_t numWaits, ze_event_handle_t* phWaits, List*& l, Kernel*& k,
                        Command& c) {
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    k = lookup<Kernel>(hKernel, err);
    if (!k) return err;
    if (counts == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if ((err = eventArgs(hSignal, numWaits, phWaits, c.signal)) != ZE_RESULT_SUCCESS) return err;
    return prepareLaunch(l, k, c);
}

// The cl_kernel a launch enqueues: the kernel's own for immediate lists (OpenCL captures
// arguments at enqueue), a snapshot of the current arguments for regular lists.
ze_result_t attachKernel(List* l, Kernel* k, Command& c) {
    // An indirect launch enqueues later, from a callback: it needs a snapshot even on an
    // immediate list (the caller releases it after submitting).
    if (l->immediate && c.op != Op::LaunchIndirect) {
        c.kernel = k->cl;
        return ZE_RESULT_SUCCESS;
    }
    return snapshotKernel(k, c.kernel);
}

ze_result_t appendLaunch(ze_command_list_handle_t hList, ze_kernel_handle_t hKernel,
                         const ze_group_count_t* pLaunchFuncArgs, ze_event_handle_t hSignalEvent,
                         uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents, bool cooperative) {
    List* l;
    Kernel* k;
    Command c;
    ze_result_t err = beginLaunch(hList, hKernel, pLaunchFuncArgs, hSignalEvent, numWaitEvents, phWaitEvents, l, k, c);
    if (err != ZE_RESULT_SUCCESS) return err;
    const uint32_t counts[3] = {pLaunchFuncArgs->groupCountX, pLaunchFuncArgs->groupCountY,
                                pLaunchFuncArgs->groupCountZ};
    bool empty = false;
    for (size_t d = 0; d < 3; ++d) {
        c.global[d] = size_t(counts[d]) * k->groupSize[d];
        empty = empty || counts[d] == 0;
    }
    if (empty) {
        // No work: keep only the event semantics.
        c.op = Op::Barrier;
        return submit(l, std::move(c), numWaitEvents, phWaitEvents);
    }
    if (cooperative) {
        // Exactly the grid asked for, and only one the device keeps resident: a larger one
        // would spin forever in its device-wide barrier.
        uint32_t limit = 0;
        if ((err = cooperativeGroupLimit(*k, limit)) != ZE_RESULT_SUCCESS) return err;
        if (uint64_t(counts[0]) * counts[1] * counts[2] > limit) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        c.cooperative = true;
        c.driver = l->device->driver;
        c.clContext = l->context->cl;
    }
    c.op = Op::Launch;
    if ((err = attachKernel(l, k, c)) != ZE_RESULT_SUCCESS) return err;
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

}  // namespace

ze_result_t CommandListAppendLaunchKernel(ze_command_list_handle_t hList, ze_kernel_handle_t hKernel,
                                          const ze_group_count_t* pLaunchFuncArgs, ze_event_handle_t hSignalEvent,
                                          uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
    return appendLaunch(hList, hKernel, pLaunchFuncArgs, hSignalEvent, numWaitEvents, phWaitEvents, false);
}

ze_result_t CommandListAppendLaunchCooperativeKernel(ze_command_list_handle_t hList, ze_kernel_handle_t hKernel,
                                                     const ze_group_count_t* pLaunchFuncArgs,
                                                     ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                     ze_event_handle_t* phWaitEvents) {
    return appendLaunch(hList, hKernel, pLaunchFuncArgs, hSignalEvent, numWaitEvents, phWaitEvents, true);
}

ze_result_t CommandListAppendLaunchKernelIndirect(ze_command_list_handle_t hList, ze_kernel_handle_t hKernel,
                                                  const ze_group_count_t* pLaunchArgumentsBuffer,
                                                  ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                  ze_event_handle_t* phWaitEvents) {
    List* l;
    Kernel* k;
    Command c;
    ze_result_t err =
        beginLaunch(hList, hKernel, pLaunchArgumentsBuffer, hSignalEvent, numWaitEvents, phWaitEvents, l, k, c);
    if (err != ZE_RESULT_SUCCESS) return err;
    if ((err = checkRange(l->context, pLaunchArgumentsBuffer, sizeof(ze_group_count_t))) != ZE_RESULT_SUCCESS)
        return err;
    c.op = Op::LaunchIndirect;
    c.groupCounts = pLaunchArgumentsBuffer;
    if ((err = attachKernel(l, k, c)) != ZE_RESULT_SUCCESS) return err;
    const bool immediate = l->immediate;
    err = submit(l, std::move(c), numWaitEvents, phWaitEvents);
    if (immediate) releaseCommand(c);  // the launch holds its own reference to the snapshot
    return err;
}

ze_result_t CommandListAppendLaunchMultipleKernelsIndirect(ze_command_list_handle_t hList, uint32_t numKernels,
                                                           ze_kernel_handle_t* phKernels, const uint32_t* pCountBuffer,
                                                           const ze_group_count_t* pLaunchArgumentsBuffer,
                                                           ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                           ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (phKernels == nullptr || pCountBuffer == nullptr || pLaunchArgumentsBuffer == nullptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if ((err = checkRange(l->context, pCountBuffer, sizeof(uint32_t))) != ZE_RESULT_SUCCESS ||
        (err = checkRange(l->context, pLaunchArgumentsBuffer, size_t(numKernels) * sizeof(ze_group_count_t))) !=
            ZE_RESULT_SUCCESS)
        return err;
    Event* signal = nullptr;
    if ((err = eventArgs(hSignalEvent, numWaitEvents, phWaitEvents, signal)) != ZE_RESULT_SUCCESS) return err;
    // Validate everything before recording anything, so a refused append leaves the list as it was.
    std::vector<Command> cmds(numKernels);
    for (uint32_t i = 0; i < numKernels; ++i) {
        Kernel* k = lookup<Kernel>(phKernels[i], err);
        if (!k) return err;
        if ((err = prepareLaunch(l, k, cmds[i])) != ZE_RESULT_SUCCESS) return err;
    }
    if (numKernels == 0) {
        Command c;
        c.op = Op::Barrier;
        c.signal = signal;
        return submit(l, std::move(c), numWaitEvents, phWaitEvents);
    }
    for (uint32_t i = 0; i < numKernels; ++i) {
        Command& c = cmds[i];
        c.op = Op::LaunchIndirect;  // before attachKernel: it snapshots for indirect launches
        c.src = pCountBuffer;       // launched only while i < *pCountBuffer
        c.size = i;
        c.groupCounts = pLaunchArgumentsBuffer + i;
        c.signal = i + 1 == numKernels ? signal : nullptr;
        auto* k = reinterpret_cast<Kernel*>(phKernels[i]);
        if ((err = attachKernel(l, k, c)) != ZE_RESULT_SUCCESS) {
            for (Command& r : cmds) releaseCommand(r);
            return err;
        }
    }
    for (uint32_t i = 0; i < numKernels; ++i) {
        // The waits go with the first kernel; the in-order stream orders the rest.
        err = submit(l, std::move(cmds[i]), i == 0 ? numWaitEvents : 0, i == 0 ? phWaitEvents : nullptr);
        if (l->immediate) releaseCommand(cmds[i]);  // the launch holds its own reference
        if (err != ZE_RESULT_SUCCESS) {
            for (uint32_t j = i + 1; j < numKernels; ++j) releaseCommand(cmds[j]);
            return err;
        }
    }
    return ZE_RESULT_SUCCESS;
}

ze_result_t CommandListAppendBarrier(ze_command_list_handle_t hList, ze_event_handle_t hSignalEvent,
                                     uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    Command c;
    c.op = Op::Barrier;
    if ((err = eventArgs(hSignalEvent, numWaitEvents, phWaitEvents, c.signal)) != ZE_RESULT_SUCCESS) return err;
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

ze_result_t CommandListAppendMemoryRangesBarrier(ze_command_list_handle_t hList, uint32_t numRanges,
                                                 const size_t* pRangeSizes, const void** pRanges,
                                                 ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                 ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (numRanges > 0 && (pRangeSizes == nullptr || pRanges == nullptr)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    for (uint32_t i = 0; i < numRanges; ++i)
        if ((err = checkRange(l->context, pRanges[i], pRangeSizes[i])) != ZE_RESULT_SUCCESS) return err;
    // OpenCL has no ranged barrier; a full barrier is a correct superset.
    return CommandListAppendBarrier(hList, hSignalEvent, numWaitEvents, phWaitEvents);
}

ze_result_t CommandListAppendMemoryCopy(ze_command_list_handle_t hList, void* dstptr, const void* srcptr, size_t size,
                                        ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                        ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (dstptr == nullptr || srcptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if ((err = checkRange(l->context, dstptr, size)) != ZE_RESULT_SUCCESS ||
        (err = checkRange(l->context, srcptr, size)) != ZE_RESULT_SUCCESS)
        return err;
    if (spansMeet(reinterpret_cast<uintptr_t>(dstptr), size, reinterpret_cast<uintptr_t>(srcptr), size))
        return ZE_RESULT_ERROR_OVERLAPPING_REGIONS;
    Command c;
    if ((err = eventArgs(hSignalEvent, numWaitEvents, phWaitEvents, c.signal)) != ZE_RESULT_SUCCESS) return err;
    c.op = size == 0 ? Op::Barrier : Op::Copy;
    c.dst = dstptr;
    c.src = srcptr;
    c.size = size;
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

ze_result_t CommandListAppendMemoryCopyRegion(ze_command_list_handle_t hList, void* dstptr,
                                              const ze_copy_region_t* dstRegion, uint32_t dstPitch,
                                              uint32_t dstSlicePitch, const void* srcptr,
                                              const ze_copy_region_t* srcRegion, uint32_t srcPitch,
                                              uint32_t srcSlicePitch, ze_event_handle_t hSignalEvent,
                                              uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (dstptr == nullptr || srcptr == nullptr || dstRegion == nullptr || srcRegion == nullptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Command c;
    if ((err = eventArgs(hSignalEvent, numWaitEvents, phWaitEvents, c.signal)) != ZE_RESULT_SUCCESS) return err;
    // A 2-D region may give depth 0 (and a 1-D one height 0): one slice, one row.
    const size_t height = std::max<uint32_t>(1, dstRegion->height), depth = std::max<uint32_t>(1, dstRegion->depth);
    if (dstRegion->width != srcRegion->width || height != std::max<uint32_t>(1, srcRegion->height) ||
        depth != std::max<uint32_t>(1, srcRegion->depth))
        return ZE_RESULT_ERROR_INVALID_SIZE;  // the spec: both regions have the same extent
    CopyRect& r = c.rect;
    r.width = dstRegion->width;
    r.height = height;
    r.depth = depth;
    // A zero pitch means tightly packed rows (slices).
    r.dstPitch = dstPitch ? dstPitch : r.width;
    r.srcPitch = srcPitch ? srcPitch : r.width;
    r.dstSlicePitch = dstSlicePitch ? dstSlicePitch : r.dstPitch * r.height;
    r.srcSlicePitch = srcSlicePitch ? srcSlicePitch : r.srcPitch * r.height;
    if ((r.height > 1 && (r.dstPitch < r.width || r.srcPitch < r.width)) ||
        (r.depth > 1 && (r.dstSlicePitch < r.dstPitch * r.height || r.srcSlicePitch < r.srcPitch * r.height)))
        return ZE_RESULT_ERROR_INVALID_SIZE;  // rows (slices) would overlap
    if (r.width == 0) {
        c.op = Op::Barrier;  // nothing to copy
        return submit(l, std::move(c), numWaitEvents, phWaitEvents);
    }
    size_t dstOffset = 0, dstBytes = 0, srcOffset = 0, srcBytes = 0;
    if (!regionSpan(*dstRegion, r, r.dstPitch, r.dstSlicePitch, dstOffset, dstBytes) ||
        !regionSpan(*srcRegion, r, r.srcPitch, r.srcSlicePitch, srcOffset, srcBytes))
        return ZE_RESULT_ERROR_INVALID_SIZE;
    if ((err = checkRange(l->context, dstptr, dstOffset, dstBytes)) != ZE_RESULT_SUCCESS ||
        (err = checkRange(l->context, srcptr, srcOffset, srcBytes)) != ZE_RESULT_SUCCESS)
        return err;
    c.dst = static_cast<uint8_t*>(dstptr) + dstOffset;
    c.src = static_cast<const uint8_t*>(srcptr) + srcOffset;
    const auto dstFirst = reinterpret_cast<uintptr_t>(c.dst), srcFirst = reinterpret_cast<uintptr_t>(c.src);
    if (spansMeet(dstFirst, dstBytes, srcFirst, srcBytes) && regionRowsMeet(dstFirst, srcFirst, r))
        return ZE_RESULT_ERROR_OVERLAPPING_REGIONS;
    c.op = Op::CopyRegion;
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

ze_result_t CommandListAppendMemoryCopyFromContext(ze_command_list_handle_t hList, void* dstptr,
                                                   ze_context_handle_t hContextSrc, const void* srcptr, size_t size,
                                                   ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                   ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    Context* src = lookup<Context>(hContextSrc, err);
    if (!src) return err;
    if (src->driver != l->context->driver) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (srcptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    // The source is bounded by its own context's allocations (the copy below bounds the destination).
    if ((err = checkRange(src, srcptr, size)) != ZE_RESULT_SUCCESS) return err;
    // Contexts sharing a cl_context share SVM. Otherwise an SVM pointer of another cl_context
    // means nothing to this one's queues; OpenCL reads
    // it as host memory. That is right only where the source allocation is host memory:
    // every allocation on a CPU device, and fine-grained host allocations.
    if (src->cl != l->context->cl && !src->hostReachable(srcptr)) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    return CommandListAppendMemoryCopy(hList, dstptr, srcptr, size, hSignalEvent, numWaitEvents, phWaitEvents);
}

ze_result_t CommandListAppendQueryKernelTimestamps(ze_command_list_handle_t hList, uint32_t numEvents,
                                                   ze_event_handle_t* phEvents, void* dstptr, const size_t* pOffsets,
                                                   ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                   ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (dstptr == nullptr || (numEvents > 0 && phEvents == nullptr)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    // The results: packed, or one at each offset.
    const size_t one = sizeof(ze_kernel_timestamp_result_t);
    if (pOffsets == nullptr && (err = checkRange(l->context, dstptr, numEvents * one)) != ZE_RESULT_SUCCESS) return err;
    for (uint32_t i = 0; pOffsets != nullptr && i < numEvents; ++i)
        if ((err = checkRange(l->context, dstptr, pOffsets[i], one)) != ZE_RESULT_SUCCESS) return err;
    Command c;
    if ((err = eventArgs(hSignalEvent, numWaitEvents, phWaitEvents, c.signal)) != ZE_RESULT_SUCCESS) return err;
    for (uint32_t i = 0; i < numEvents; ++i) {
        Event* e = lookup<Event>(phEvents[i], err);
        if (!e) return err;
        if (!(e->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        c.queried.push_back(e);
        if (pOffsets) c.offsets.push_back(pOffsets[i]);
    }
    c.op = numEvents == 0 ? Op::Barrier : Op::KernelTimestamps;
    c.dst = dstptr;
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

ze_result_t CommandListAppendMemoryFill(ze_command_list_handle_t hList, void* ptr, const void* pattern,
                                        size_t patternSize, size_t size, ze_event_handle_t hSignalEvent,
                                        uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (ptr == nullptr || pattern == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (patternSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    if ((err = checkRange(l->context, ptr, size)) != ZE_RESULT_SUCCESS) return err;
    Command c;
    if ((err = eventArgs(hSignalEvent, numWaitEvents, phWaitEvents, c.signal)) != ZE_RESULT_SUCCESS) return err;
    c.dst = ptr;
    c.size = size;
    auto* p = static_cast<const uint8_t*>(pattern);
    if (size == 0) {
        c.op = Op::Barrier;
    } else if (isFillPattern(patternSize) && size % patternSize == 0 &&
               reinterpret_cast<uintptr_t>(ptr) % patternSize == 0) {
        c.op = Op::Fill;
        c.pattern.assign(p, p + patternSize);
    } else {
        // OpenCL fills need a power-of-two pattern of at most 128 bytes that divides the
        // size and the address; anything else becomes a copy from an expanded pattern, host
        // memory of `size` bytes: more than the host has is refused before it is asked for
        // (under ASan, a request beyond its allocator ends the process instead of throwing).
        if (size > hostMemoryBytes()) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        c.op = Op::Copy;
        c.pattern.resize(size);
        for (size_t i = 0; i < size; i += patternSize)
            std::memcpy(c.pattern.data() + i, p, std::min(patternSize, size - i));
    }
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

// Prefetch and advice are hints with nothing to do over SVM; their range is checked all the same.
ze_result_t CommandListAppendMemoryPrefetch(ze_command_list_handle_t hList, const void* ptr, size_t size) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return checkRange(l->context, ptr, size);
}

ze_result_t CommandListAppendMemAdvise(ze_command_list_handle_t hList, ze_device_handle_t hDevice, const void* ptr,
                                       size_t size, ze_memory_advice_t) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (!lookup<Device>(hDevice, err)) return err;
    if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return checkRange(l->context, ptr, size);
}

ze_result_t CommandListAppendSignalEvent(ze_command_list_handle_t hList, ze_event_handle_t hEvent) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    Command c;
    c.op = Op::Signal;
    c.signal = lookup<Event>(hEvent, err);
    if (!c.signal) return err;
    return submit(l, std::move(c), 0, nullptr);
}

ze_result_t CommandListAppendWaitOnEvents(ze_command_list_handle_t hList, uint32_t numEvents,
                                          ze_event_handle_t* phEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    Command c;
    c.op = Op::Wait;
    if ((err = eventArgs(nullptr, numEvents, phEvents, c.signal)) != ZE_RESULT_SUCCESS) return err;
    return submit(l, std::move(c), numEvents, phEvents);
}

ze_result_t CommandListAppendEventReset(ze_command_list_handle_t hList, ze_event_handle_t hEvent) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    Command c;
    c.op = Op::Reset;
    c.target = lookup<Event>(hEvent, err);
    if (!c.target) return err;
    return submit(l, std::move(c), 0, nullptr);
}

ze_result_t CommandListAppendWriteGlobalTimestamp(ze_command_list_handle_t hList, uint64_t* dstptr,
                                                  ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                  ze_event_handle_t* phWaitEvents) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (dstptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if ((err = checkRange(l->context, dstptr, sizeof(uint64_t))) != ZE_RESULT_SUCCESS) return err;
    Command c;
    if ((err = eventArgs(hSignalEvent, numWaitEvents, phWaitEvents, c.signal)) != ZE_RESULT_SUCCESS) return err;
    c.op = Op::Timestamp;
    c.dst = dstptr;
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

}  // namespace zecl::api
