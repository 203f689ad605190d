// Command queues, command lists, events and fences.
//
// Every L0 queue and every immediate list owns one in-order OpenCL queue with profiling.
// Regular lists record Commands; executing replays them as a tight loop of enqueues on
// pre-set cl_kernels. An L0 event maps to the cl_event of the latest enqueued command
// that signals it; a wait on an event nobody has signalled yet goes through a user event
// ("gate") completed when the signal arrives.
#include "api.hpp"
#include "objects.hpp"

#include <chrono>
#include <unordered_map>
#include <cstring>
#include <thread>

namespace zecl {
namespace {

// Wait lists without heap allocation for the common case; holds a reference to each entry.
class WaitList {
public:
    WaitList() = default;
    WaitList(const WaitList&) = delete;
    WaitList& operator=(const WaitList&) = delete;
    ~WaitList() {
        for (size_t i = 0; i < n_; ++i) clReleaseEvent(at(i));
    }
    void push(cl_event e) {
        if (n_ < kInline) {
            inline_[n_++] = e;
            return;
        }
        if (heap_.empty()) heap_.assign(inline_, inline_ + n_);
        heap_.push_back(e);
        ++n_;
    }
    cl_uint size() const { return cl_uint(n_); }
    const cl_event* data() const { return n_ == 0 ? nullptr : n_ > kInline ? heap_.data() : inline_; }

private:
    cl_event at(size_t i) const { return n_ > kInline ? heap_[i] : inline_[i]; }
    static constexpr size_t kInline = 16;
    cl_event inline_[kInline]{};
    std::vector<cl_event> heap_;
    size_t n_ = 0;
};

void CL_CALLBACK completeGate(cl_event, cl_int status, void* user) {
    auto gate = static_cast<cl_event>(user);
    clSetUserEventStatus(gate, status < 0 ? status : CL_COMPLETE);
    clReleaseEvent(gate);
}

// What a command must wait on for `e`: nothing once host-signalled, the signalling
// command once one was enqueued, else a gate the next signal completes.
cl_int addWait(Event* e, WaitList& out) {
    std::lock_guard lock(e->mutex);
    if (e->hostSignaled) return CL_SUCCESS;
    if (e->last) {
        clRetainEvent(e->last);
        out.push(e->last);
        return CL_SUCCESS;
    }
    if (!e->gate) {
        cl_int err = CL_SUCCESS;
        e->gate = clCreateUserEvent(e->pool->context->cl, &err);
        if (err != CL_SUCCESS) return err;
    }
    clRetainEvent(e->gate);
    out.push(e->gate);
    return CL_SUCCESS;
}

// Takes ownership of `ev`, the command that now signals `e`.
void signalWith(Event* e, cl_event ev, uint64_t tickNs) {
    std::lock_guard lock(e->mutex);
    e->tickNs = tickNs;
    if (e->gate) {
        // The gate's reference passes to the callback. Registration failing would leave
        // waiters hanging, so complete the gate now rather than never.
        if (clSetEventCallback(ev, CL_COMPLETE, completeGate, e->gate) != CL_SUCCESS) {
            clSetUserEventStatus(e->gate, CL_COMPLETE);
            clReleaseEvent(e->gate);
        }
        e->gate = nullptr;
    }
    if (e->last) clReleaseEvent(e->last);
    e->last = ev;
}

void hostSignal(Event* e) {
    std::lock_guard lock(e->mutex);
    e->hostSignaled = true;
    if (e->gate) {
        clSetUserEventStatus(e->gate, CL_COMPLETE);
        clReleaseEvent(e->gate);
        e->gate = nullptr;
    }
}

void resetEvent(Event* e) {
    std::lock_guard lock(e->mutex);
    e->hostSignaled = false;
    if (e->last) {
        clReleaseEvent(e->last);
        e->last = nullptr;
    }
}

ze_result_t clStatus(cl_event ev) {
    cl_int s = CL_QUEUED;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(s), &s, nullptr) != CL_SUCCESS)
        return ZE_RESULT_ERROR_DEVICE_LOST;
    if (s == CL_COMPLETE) return ZE_RESULT_SUCCESS;
    return s < 0 ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_NOT_READY;
}

ze_result_t eventStatus(Event* e) {
    std::lock_guard lock(e->mutex);
    if (e->hostSignaled) return ZE_RESULT_SUCCESS;
    return e->last ? clStatus(e->last) : ZE_RESULT_NOT_READY;
}

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

struct TimestampSlot {
    uint64_t value = 0;
    uint64_t tickNs = 1;
    cl_event gate = nullptr;
};

void CL_CALLBACK timestampReached(cl_event marker, cl_int, void* user) {
    auto* slot = static_cast<TimestampSlot*>(user);
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof(t), &t, nullptr) != CL_SUCCESS || t == 0)
        t = hostNowNs();
    slot->value = t / slot->tickNs;
    clSetUserEventStatus(slot->gate, CL_COMPLETE);
}

void CL_CALLBACK timestampCopied(cl_event, cl_int, void* user) {
    auto* slot = static_cast<TimestampSlot*>(user);
    clReleaseEvent(slot->gate);
    delete slot;
}

// A global timestamp: a marker whose completion time a callback writes into a host slot;
// a copy gated on that callback moves it to dst in stream order.
cl_int enqueueTimestamp(cl_command_queue q, const Command& c, const WaitList& wl, cl_event* evOut) {
    cl_context ctx = nullptr;
    clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, nullptr);
    cl_int e = CL_SUCCESS;
    auto* slot = new TimestampSlot;
    slot->tickNs = c.tickNs;
    slot->gate = clCreateUserEvent(ctx, &e);
    if (e != CL_SUCCESS) {
        delete slot;
        return e;
    }
    cl_event marker = nullptr, copy = nullptr;
    e = clEnqueueMarkerWithWaitList(q, wl.size(), wl.data(), &marker);
    if (e == CL_SUCCESS)
        e = clEnqueueSVMMemcpy(q, CL_FALSE, c.dst, &slot->value, sizeof(uint64_t), 1, &slot->gate, &copy);
    if (e != CL_SUCCESS) {
        clSetUserEventStatus(slot->gate, CL_COMPLETE);
        if (marker) clReleaseEvent(marker);
        clReleaseEvent(slot->gate);
        delete slot;
        return e;
    }
    clSetEventCallback(marker, CL_COMPLETE, timestampReached, slot);
    clSetEventCallback(copy, CL_COMPLETE, timestampCopied, slot);
    clReleaseEvent(marker);
    if (evOut)
        *evOut = copy;
    else
        clReleaseEvent(copy);
    return CL_SUCCESS;
}

bool isFillPattern(size_t n) { return n != 0 && n <= 128 && (n & (n - 1)) == 0; }

const size_t* offsetOf(const Command& c) { return c.offset[0] | c.offset[1] | c.offset[2] ? c.offset.data() : nullptr; }

// An indirect launch reads its group count (and, for a multi-kernel launch, the kernel
// count) from device memory when the command is reached, without blocking the host: a
// non-blocking read in the stream; its completion callback enqueues the launch, with the
// counts read, on a side queue of the same device; and a barrier in the stream waits on a
// user event that the kernel's completion sets. So a regular list replayed after the counts
// changed launches what memory holds then, and an indirect launch may wait on events the
// host signals after the execute call. The signal event is that barrier's.
struct IndirectLaunch {
    ze_group_count_t counts{0, 0, 0};
    uint32_t kernels = 1;  // read from device memory for a multi-kernel launch
    uint32_t index = 0;    // this kernel's place in a multi-kernel launch
    cl_kernel kernel = nullptr;
    std::array<size_t, 3> local{1, 1, 1}, offset{0, 0, 0};
    cl_command_queue side = nullptr;
    cl_event gate = nullptr;
};

void CL_CALLBACK indirectDone(cl_event, cl_int status, void* user) {
    auto* w = static_cast<IndirectLaunch*>(user);
    clSetUserEventStatus(w->gate, status < 0 ? status : CL_COMPLETE);
    clReleaseEvent(w->gate);
    clReleaseKernel(w->kernel);
    delete w;
}

void CL_CALLBACK indirectCountsRead(cl_event, cl_int status, void* user) {
    auto* w = static_cast<IndirectLaunch*>(user);
    if (status < 0) return indirectDone(nullptr, status, w);
    const size_t global[3] = {size_t(w->counts.groupCountX) * w->local[0], size_t(w->counts.groupCountY) * w->local[1],
                              size_t(w->counts.groupCountZ) * w->local[2]};
    if (w->index >= w->kernels || global[0] == 0 || global[1] == 0 || global[2] == 0)
        return indirectDone(nullptr, CL_COMPLETE, w);  // nothing to run
    const bool offset = w->offset[0] | w->offset[1] | w->offset[2];
    cl_event k = nullptr;
    cl_int e = clEnqueueNDRangeKernel(w->side, w->kernel, 3, offset ? w->offset.data() : nullptr, global,
                                      w->local.data(), 0, nullptr, &k);
    if (e != CL_SUCCESS) return indirectDone(nullptr, e, w);
    clFlush(w->side);
    if (clSetEventCallback(k, CL_COMPLETE, indirectDone, w) != CL_SUCCESS) {
        // Without the callback nobody would open the gate: open it now (the kernel runs
        // unordered with what follows, which is better than a hang).
        indirectDone(nullptr, CL_COMPLETE, w);
    }
    clReleaseEvent(k);
}

// Side queues for indirect launches, one per stream queue, made on first use.
std::mutex sideQueuesMutex;
std::unordered_map<cl_command_queue, cl_command_queue> sideQueues;

cl_command_queue sideQueueOf(cl_command_queue q, cl_int& err) {
    std::lock_guard lock(sideQueuesMutex);
    auto it = sideQueues.find(q);
    if (it != sideQueues.end()) return it->second;
    cl_context ctx = nullptr;
    cl_device_id dev = nullptr;
    clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, nullptr);
    clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof(dev), &dev, nullptr);
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue side = clCreateCommandQueueWithProperties(ctx, dev, props, &err);
    if (side) sideQueues[q] = side;
    return side;
}

// Called once the stream queue `q` has drained (so its indirect launches have run).
void releaseSideQueue(cl_command_queue q) {
    cl_command_queue side = nullptr;
    {
        std::lock_guard lock(sideQueuesMutex);
        auto it = sideQueues.find(q);
        if (it == sideQueues.end()) return;
        side = it->second;
        sideQueues.erase(it);
    }
    clFinish(side);
    clReleaseCommandQueue(side);
}

cl_int enqueueIndirect(cl_command_queue q, const Command& c, const WaitList& wl, cl_event* evOut) {
    cl_int e = CL_SUCCESS;
    cl_command_queue side = sideQueueOf(q, e);
    if (!side) return e;
    cl_context ctx = nullptr;
    clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, nullptr);
    auto* w = new IndirectLaunch;
    w->index = uint32_t(c.size);
    w->local = c.local;
    w->offset = c.offset;
    w->side = side;
    w->kernel = c.kernel;
    clRetainKernel(w->kernel);
    w->gate = clCreateUserEvent(ctx, &e);
    if (e != CL_SUCCESS) {
        clReleaseKernel(w->kernel);
        delete w;
        return e;
    }
    cl_event read = nullptr;
    if (c.src)  // multi-kernel: src is the kernel count, size the index of this kernel
        e = clEnqueueSVMMemcpy(q, CL_FALSE, &w->kernels, c.src, sizeof(w->kernels), wl.size(), wl.data(), nullptr);
    if (e == CL_SUCCESS)
        e = clEnqueueSVMMemcpy(q, CL_FALSE, &w->counts, c.groupCounts, sizeof(w->counts), c.src ? 0 : wl.size(),
                               c.src ? nullptr : wl.data(), &read);
    if (e == CL_SUCCESS) e = clEnqueueBarrierWithWaitList(q, 1, &w->gate, evOut);
    if (e != CL_SUCCESS) {
        // Whatever was enqueued reads into `w`: let it drain before freeing.
        clSetUserEventStatus(w->gate, CL_COMPLETE);
        clFinish(q);
        if (read) clReleaseEvent(read);
        clReleaseEvent(w->gate);
        clReleaseKernel(w->kernel);
        delete w;
        return e;
    }
    if (clSetEventCallback(read, CL_COMPLETE, indirectCountsRead, w) != CL_SUCCESS) {
        clWaitForEvents(1, &read);
        indirectCountsRead(read, CL_COMPLETE, w);
    }
    clReleaseEvent(read);
    clFlush(q);  // the read must make progress for the stream behind the barrier to
    return CL_SUCCESS;
}

// A region copy: one copy where rows and slices are contiguous on both sides, else one per row.
cl_int enqueueCopyRect(cl_command_queue q, const Command& c, const WaitList& wl, cl_event* evOut) {
    const CopyRect& r = c.rect;
    auto* dst = static_cast<uint8_t*>(c.dst);
    auto* src = static_cast<const uint8_t*>(c.src);
    const bool rowsPacked = r.height == 1 || (r.dstPitch == r.width && r.srcPitch == r.width);
    const bool slicesPacked =
        r.depth == 1 || (r.dstSlicePitch == r.width * r.height && r.srcSlicePitch == r.width * r.height);
    if (rowsPacked && slicesPacked)
        return clEnqueueSVMMemcpy(q, CL_FALSE, dst, src, r.width * r.height * r.depth, wl.size(), wl.data(), evOut);
    const size_t rows = r.height * r.depth;
    size_t n = 0;
    for (size_t z = 0; z < r.depth; ++z)
        for (size_t y = 0; y < r.height; ++y) {
            const bool first = n == 0, last = ++n == rows;
            cl_int e = clEnqueueSVMMemcpy(q, CL_FALSE, dst + z * r.dstSlicePitch + y * r.dstPitch,
                                          src + z * r.srcSlicePitch + y * r.srcPitch, r.width, first ? wl.size() : 0,
                                          first ? wl.data() : nullptr, last ? evOut : nullptr);
            if (e != CL_SUCCESS) return e;
        }
    return CL_SUCCESS;
}

// zeCommandListAppendQueryKernelTimestamps: a marker behind the queried events; its
// callback reads their profiling times into host memory, and copies gated on that
// callback move the results to the destination in stream order.
struct KernelTimestampWrite {
    std::vector<cl_event> events;  // per queried event: its signalling command, or null
    std::vector<uint64_t> tickNs;
    std::vector<ze_kernel_timestamp_result_t> results;
    cl_event gate = nullptr;
};

void CL_CALLBACK kernelTimestampsReached(cl_event, cl_int, void* user) {
    auto* w = static_cast<KernelTimestampWrite*>(user);
    for (size_t i = 0; i < w->events.size(); ++i) {
        cl_ulong start = 0, end = 0;
        ze_kernel_timestamp_result_t& r = w->results[i];
        if (w->events[i] &&
            clGetEventProfilingInfo(w->events[i], CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr) ==
                CL_SUCCESS &&
            clGetEventProfilingInfo(w->events[i], CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr) == CL_SUCCESS) {
            r.global.kernelStart = r.context.kernelStart = start / w->tickNs[i];
            r.global.kernelEnd = r.context.kernelEnd = end / w->tickNs[i];
        }
    }
    clSetUserEventStatus(w->gate, CL_COMPLETE);
}

void CL_CALLBACK kernelTimestampsCopied(cl_event, cl_int, void* user) {
    auto* w = static_cast<KernelTimestampWrite*>(user);
    for (cl_event e : w->events)
        if (e) clReleaseEvent(e);
    clReleaseEvent(w->gate);
    delete w;
}

cl_int enqueueKernelTimestamps(cl_command_queue q, const Command& c, const WaitList& wl, cl_event* evOut) {
    cl_context ctx = nullptr;
    clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, nullptr);
    auto* w = new KernelTimestampWrite;
    std::vector<cl_event> waits(wl.data(), wl.data() + wl.size());
    for (Event* ev : c.queried) {
        std::lock_guard lock(ev->mutex);
        cl_event last = ev->hostSignaled ? nullptr : ev->last;
        if (last) {
            clRetainEvent(last);
            waits.push_back(last);
        }
        w->events.push_back(last);
        w->tickNs.push_back(ev->tickNs);
    }
    w->results.assign(c.queried.size(), ze_kernel_timestamp_result_t{});
    cl_int e = CL_SUCCESS;
    w->gate = clCreateUserEvent(ctx, &e);
    cl_event marker = nullptr;
    if (e == CL_SUCCESS) e = clEnqueueMarkerWithWaitList(q, cl_uint(waits.size()), waits.data(), &marker);
    std::vector<cl_event> copies;
    const size_t n = c.queried.size(), one = sizeof(ze_kernel_timestamp_result_t);
    for (size_t i = 0; e == CL_SUCCESS && i < (c.offsets.empty() ? 1 : n); ++i) {
        cl_event copy = nullptr;
        const bool packed = c.offsets.empty();
        e = clEnqueueSVMMemcpy(q, CL_FALSE, static_cast<uint8_t*>(c.dst) + (packed ? 0 : c.offsets[i]), &w->results[i],
                               packed ? n * one : one, 1, &w->gate, &copy);
        if (e == CL_SUCCESS) copies.push_back(copy);
    }
    if (e != CL_SUCCESS) {
        // Nothing will run the callbacks: release what they would have, once the queue
        // has drained whatever was enqueued against the gate.
        if (w->gate) clSetUserEventStatus(w->gate, CL_COMPLETE);
        clFinish(q);
        for (cl_event x : copies) clReleaseEvent(x);
        if (marker) clReleaseEvent(marker);
        kernelTimestampsCopied(nullptr, 0, w);
        return e;
    }
    clSetEventCallback(marker, CL_COMPLETE, kernelTimestampsReached, w);
    clSetEventCallback(copies.back(), CL_COMPLETE, kernelTimestampsCopied, w);  // in order: the last copy ends last
    clReleaseEvent(marker);
    for (size_t i = 0; i + 1 < copies.size(); ++i) clReleaseEvent(copies[i]);
    if (evOut)
        *evOut = copies.back();
    else
        clReleaseEvent(copies.back());
    return CL_SUCCESS;
}

}  // namespace

namespace {

// A cooperative launch waits for the driver's previous one (Driver::lastCooperative): on the
// device when both share an OpenCL context, else on the host (an event cannot cross contexts).
cl_int enqueueCooperative(cl_command_queue q, const Command& c, WaitList& wl, cl_event* evOut) {
    Driver& drv = *c.driver;
    std::lock_guard lock(drv.cooperativeMutex);
    if (drv.lastCooperative && drv.lastCooperativeQueue != q) {  // an in-order queue orders its own
        if (drv.lastCooperativeContext == c.clContext) {
            clRetainEvent(drv.lastCooperative);
            wl.push(drv.lastCooperative);
        } else {
            cl_int e = clWaitForEvents(1, &drv.lastCooperative);
            if (e != CL_SUCCESS && e != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) return e;
        }
    }
    cl_event ev = nullptr;
    cl_int err =
        clEnqueueNDRangeKernel(q, c.kernel, 3, nullptr, c.global.data(), c.local.data(), wl.size(), wl.data(), &ev);
    if (err != CL_SUCCESS) return err;
    if (drv.lastCooperative) clReleaseEvent(drv.lastCooperative);
    drv.lastCooperative = ev;
    drv.lastCooperativeContext = c.clContext;
    if (drv.lastCooperativeQueue != q) {
        clRetainCommandQueue(q);  // held so its address cannot be reused by another queue
        if (drv.lastCooperativeQueue) clReleaseCommandQueue(drv.lastCooperativeQueue);
        drv.lastCooperativeQueue = q;
    }
    if (evOut) {
        clRetainEvent(ev);
        *evOut = ev;
    }
    return CL_SUCCESS;
}

}  // namespace

ze_result_t enqueueCommand(cl_command_queue q, const Command& c, std::span<Event* const> waits) {
    WaitList wl;
    for (Event* e : waits) {
        cl_int err = addWait(e, wl);
        if (err != CL_SUCCESS) return fromCl(err);
    }
    cl_event ev = nullptr;
    cl_event* evOut = c.signal ? &ev : nullptr;
    cl_int err = CL_SUCCESS;
    switch (c.op) {
        case Op::Launch:
            if (c.cooperative) {
                err = enqueueCooperative(q, c, wl, evOut);
                break;
            }
            err = clEnqueueNDRangeKernel(q, c.kernel, 3, offsetOf(c), c.global.data(), c.local.data(), wl.size(),
                                         wl.data(), evOut);
            break;
        case Op::LaunchIndirect: err = enqueueIndirect(q, c, wl, evOut); break;
        case Op::CopyRegion: err = enqueueCopyRect(q, c, wl, evOut); break;
        case Op::KernelTimestamps: err = enqueueKernelTimestamps(q, c, wl, evOut); break;
        case Op::Copy:
            err = clEnqueueSVMMemcpy(q, CL_FALSE, c.dst, c.pattern.empty() ? c.src : c.pattern.data(), c.size,
                                     wl.size(), wl.data(), evOut);
            break;
        case Op::Fill:
            err =
                clEnqueueSVMMemFill(q, c.dst, c.pattern.data(), c.pattern.size(), c.size, wl.size(), wl.data(), evOut);
            break;
        case Op::Reset:
            // Applied when the command is reached on the host side of the in-order stream.
            resetEvent(c.target);
            [[fallthrough]];
        case Op::Barrier:
        case Op::Signal:
        case Op::Wait:
            // An in-order queue already orders everything; only waits and signals need a command.
            if (wl.size() || evOut) err = clEnqueueBarrierWithWaitList(q, wl.size(), wl.data(), evOut);
            break;
        case Op::Timestamp: err = enqueueTimestamp(q, c, wl, evOut); break;
    }
    if (err != CL_SUCCESS) return fromCl(err);
    if (c.signal) signalWith(c.signal, ev, c.tickNs);
    return ZE_RESULT_SUCCESS;
}

void releaseCommand(Command& c) {
    if (c.kernel) {
        clReleaseKernel(c.kernel);
        c.kernel = nullptr;
    }
}

namespace {

cl_command_queue createClQueue(Context* ctx, Device* dev, cl_int& err) {
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx->cl, dev->cl, props, &err);
    if (q) {
        std::lock_guard lock(ctx->queuesMutex);
        ctx->queues.push_back(q);
    }
    return q;
}

void releaseClQueue(Context* ctx, cl_command_queue q) {
    {
        std::lock_guard lock(ctx->queuesMutex);
        std::erase(ctx->queues, q);
    }
    clFinish(q);
    releaseSideQueue(q);
    clReleaseCommandQueue(q);
}

// A cl_kernel private to a recorded launch, holding the kernel's current arguments.
// Appends with unchanged arguments share one (never mutated afterwards).
ze_result_t snapshotKernel(Kernel* k, cl_kernel& out) {
    if (k->snapshot && k->snapshotGeneration == k->generation) {
        clRetainKernel(k->snapshot);
        out = k->snapshot;
        return ZE_RESULT_SUCCESS;
    }
    cl_int e = CL_SUCCESS;
    cl_kernel fresh = nullptr;
    if (k->device->cloneWorks.load(std::memory_order_relaxed)) {
        fresh = clCloneKernel(k->cl, &e);
        if (e != CL_SUCCESS || !fresh) {
            k->device->cloneWorks = false;  // pre-2.1 platform: rebuild from recorded values
            fresh = nullptr;
        }
        // NOTE: PoCL's clCloneKernel (3.1, unchanged upstream) points __local arguments at its
        // argument storage, so each launch then copies `size` bytes from there: a heap
        // over-read (ASan). Setting them again gives them no value, as clSetKernelArg does.
        for (cl_uint i = 0; fresh && i < k->args.size(); ++i) {
            if (k->args[i].kind != ArgKind::Local || !k->args[i].set) continue;
            e = clSetKernelArg(fresh, i, k->args[i].size, nullptr);
            if (e != CL_SUCCESS) {
                clReleaseKernel(fresh);
                return fromCl(e);
            }
        }
    }
    if (!fresh) {
        fresh = clCreateKernel(k->program, k->name.c_str(), &e);
        if (e != CL_SUCCESS) return fromCl(e);
        for (cl_uint i = 0; i < k->args.size() && e == CL_SUCCESS; ++i) {
            const ArgSlot& a = k->args[i];
            switch (a.kind) {
                case ArgKind::Pointer:
                    e = a.pointer ? clSetKernelArgSVMPointer(fresh, i, a.pointer)
                                  : clSetKernelArg(fresh, i, sizeof(cl_mem), nullptr);
                    break;
                case ArgKind::Local: e = clSetKernelArg(fresh, i, a.size, nullptr); break;
                case ArgKind::Value: e = clSetKernelArg(fresh, i, a.value.size(), a.value.data()); break;
            }
        }
        if (e != CL_SUCCESS) {
            clReleaseKernel(fresh);
            return fromCl(e);
        }
    }
    if (k->snapshot) clReleaseKernel(k->snapshot);
    k->snapshot = fresh;
    k->snapshotGeneration = k->generation;
    clRetainKernel(fresh);
    out = fresh;
    return ZE_RESULT_SUCCESS;
}

// Validates the signal and wait handles of an append.
ze_result_t eventArgs(ze_event_handle_t hSignal, uint32_t numWaits, ze_event_handle_t* phWaits, Event*& signal) {
    ze_result_t err;
    signal = nullptr;
    if (hSignal) {
        signal = lookup<Event>(hSignal, err);
        if (!signal) return err;
    }
    if (numWaits > 0 && phWaits == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    for (uint32_t i = 0; i < numWaits; ++i)
        if (!lookup<Event>(phWaits[i], err)) return err;
    return ZE_RESULT_SUCCESS;
}

// Immediate lists enqueue now; regular lists record. `c.kernel` of an immediate launch
// is the kernel's own cl_kernel (OpenCL captures arguments at enqueue).
ze_result_t submit(List* l, Command&& c, uint32_t numWaits, ze_event_handle_t* phWaits) {
    // Validated handles are zecl's own object pointers.
    std::span<Event* const> waits(reinterpret_cast<Event* const*>(phWaits), numWaits);
    c.tickNs = l->device->timerResolutionNs;
    if (!l->immediate) {
        c.waits.assign(waits.begin(), waits.end());
        l->commands.push_back(std::move(c));
        return ZE_RESULT_SUCCESS;
    }
    if (faultNow(Fault::Enqueue)) return ZE_RESULT_ERROR_DEVICE_LOST;
    ze_result_t r = enqueueCommand(l->cl, c, waits);
    if (r != ZE_RESULT_SUCCESS) return r;
    // An emulated fill's source buffer lives in `c`, which dies here.
    if (l->synchronous || (c.op == Op::Copy && !c.pattern.empty())) return fromCl(clFinish(l->cl));
    if (c.signal) clFlush(l->cl);  // let host-side waiters on the signal make progress
    return ZE_RESULT_SUCCESS;
}

ze_result_t openList(ze_command_list_handle_t h, List*& l) {
    ze_result_t err;
    l = lookup<List>(h, err);
    if (!l) return err;
    if (l->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // appending to a closed list
    return ZE_RESULT_SUCCESS;
}

}  // namespace
}  // namespace zecl

namespace zecl::api {

// ---------------------------------------------------------------------------------------
// Command queues

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
    releaseClQueue(q->context, q->cl);
    delete q;
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

// ---------------------------------------------------------------------------------------
// Command lists

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
    for (Command& c : l->commands) releaseCommand(c);
    if (l->cl) releaseClQueue(l->context, l->cl);
    delete l;
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
    for (Command& c : l->commands) releaseCommand(c);
    l->commands.clear();
    l->closed = false;
    if (l->cl) clFinish(l->cl);
    return ZE_RESULT_SUCCESS;
}

namespace {

// Validates a launch of `k` on `l` and fills the command's group size and global offset.
ze_result_t prepareLaunch(List* l, Kernel* k, Command& c) {
    // Another L0 context's kernel runs where both share one cl_context (contexts over all of
    // the driver's devices do); a cl_kernel cannot run on another cl_context's queue.
    if (k->device != l->device || k->module->context->cl != l->context->cl) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    for (const ArgSlot& a : k->args)
        if (!a.set) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // OpenCL would refuse it at enqueue
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
    if (numRanges > 0 && (pRangeSizes == nullptr || pRanges == nullptr)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
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
    c.dst = static_cast<uint8_t*>(dstptr) + dstRegion->originZ * r.dstSlicePitch + dstRegion->originY * r.dstPitch +
            dstRegion->originX;
    c.src = static_cast<const uint8_t*>(srcptr) + srcRegion->originZ * r.srcSlicePitch +
            srcRegion->originY * r.srcPitch + srcRegion->originX;
    c.op = r.width == 0 ? Op::Barrier : Op::CopyRegion;
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
    // Contexts sharing a cl_context share SVM. Otherwise an SVM pointer of another cl_context
    // means nothing to this one's queues; OpenCL reads
    // it as host memory. That is right only where the source allocation is host memory:
    // every allocation on a CPU device, and fine-grained host allocations.
    if (src->cl != l->context->cl && !src->hostReachable(srcptr, size)) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
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
        // size and the address; anything else becomes a copy from an expanded pattern.
        c.op = Op::Copy;
        c.pattern.resize(size);
        for (size_t i = 0; i < size; i += patternSize)
            std::memcpy(c.pattern.data() + i, p, std::min(patternSize, size - i));
    }
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

ze_result_t CommandListAppendMemoryPrefetch(ze_command_list_handle_t hList, const void* ptr, size_t) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    return ptr ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_POINTER;  // a hint
}

ze_result_t CommandListAppendMemAdvise(ze_command_list_handle_t hList, ze_device_handle_t hDevice, const void* ptr,
                                       size_t, ze_memory_advice_t) {
    List* l;
    ze_result_t err = openList(hList, l);
    if (err != ZE_RESULT_SUCCESS) return err;
    if (!lookup<Device>(hDevice, err)) return err;
    return ptr ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_POINTER;  // a hint
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
    Command c;
    if ((err = eventArgs(hSignalEvent, numWaitEvents, phWaitEvents, c.signal)) != ZE_RESULT_SUCCESS) return err;
    c.op = Op::Timestamp;
    c.dst = dstptr;
    return submit(l, std::move(c), numWaitEvents, phWaitEvents);
}

// ---------------------------------------------------------------------------------------
// Fences

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

// ---------------------------------------------------------------------------------------
// Events

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

namespace {
void destroyEvent(Event* e) {
    retire(e);
    std::lock_guard lock(e->mutex);
    if (e->gate) {
        // Nobody can signal a destroyed event; release its waiters rather than hang them.
        clSetUserEventStatus(e->gate, CL_COMPLETE);
        clReleaseEvent(e->gate);
    }
    if (e->last) clReleaseEvent(e->last);
}
}  // namespace

ze_result_t EventPoolDestroy(ze_event_pool_handle_t hPool) {
    ze_result_t err;
    EventPool* pool = lookup<EventPool>(hPool, err);
    if (!pool) return err;
    retire(pool);
    for (Event* e : pool->slots)
        if (e) {
            destroyEvent(e);
            delete e;
        }
    delete pool;
    return ZE_RESULT_SUCCESS;
}

ze_result_t EventCreate(ze_event_pool_handle_t hPool, const ze_event_desc_t* desc, ze_event_handle_t* phEvent) {
    ze_result_t err;
    EventPool* pool = lookup<EventPool>(hPool, err);
    if (!pool) return err;
    if (desc == nullptr || phEvent == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
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
    delete e;
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
