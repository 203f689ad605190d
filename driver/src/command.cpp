// The OpenCL side of command queues, lists, events and fences: how a recorded or immediate
// command is enqueued (waits, signals, timestamps, indirect and cooperative launches, region
// copies), the OpenCL queues, and the helpers the entry points share (command_stream.hpp).
//
// Every L0 queue and every immediate list owns one in-order OpenCL queue with profiling.
// Regular lists record Commands; executing replays them as a tight loop of enqueues on
// pre-set cl_kernels. An L0 event maps to the cl_event of the latest enqueued command
// that signals it; a wait on an event nobody has signalled yet goes through a user event
// ("gate") completed when the signal arrives.
#include "command_stream.hpp"
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

}  // namespace

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

namespace {

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

// A cooperative launch waits for the driver's previous one: nothing to do on the same in-order
// queue; behind another queue, for a marker enqueued there now (on the device when both share
// an OpenCL context, else on the host: an event cannot cross contexts). So a launch carries an
// OpenCL event only where the application asked for one (on NVIDIA's OpenCL an event per
// launch cost ~20 us per replay of a list of back-to-back cooperative launches).
cl_int enqueueCooperative(cl_command_queue q, const Command& c, WaitList& wl, cl_event* evOut) {
    Driver& drv = *c.driver;
    std::lock_guard lock(drv.cooperativeMutex);
    if (drv.lastCooperativeQueue && drv.lastCooperativeQueue != q) {
        cl_event behind = nullptr;
        cl_int e = clEnqueueMarkerWithWaitList(drv.lastCooperativeQueue, 0, nullptr, &behind);
        if (e != CL_SUCCESS) return e;
        clFlush(drv.lastCooperativeQueue);
        if (drv.lastCooperativeContext == c.clContext) {
            wl.push(behind);  // released with the wait list
        } else {
            e = clWaitForEvents(1, &behind);
            clReleaseEvent(behind);
            if (e != CL_SUCCESS && e != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) return e;
        }
    }
    cl_int err =
        clEnqueueNDRangeKernel(q, c.kernel, 3, nullptr, c.global.data(), c.local.data(), wl.size(), wl.data(), evOut);
    if (err != CL_SUCCESS) return err;
    drv.lastCooperativeContext = c.clContext;
    if (drv.lastCooperativeQueue != q) {
        clRetainCommandQueue(q);  // held so its address cannot be reused by another queue
        if (drv.lastCooperativeQueue) clReleaseCommandQueue(drv.lastCooperativeQueue);
        drv.lastCooperativeQueue = q;
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
template <class F>
void forEachEvent(const Command& c, F f) {
    for (Event* e : {c.signal, c.target})
        if (e) f(e);
    for (Event* e : c.waits) f(e);
    for (Event* e : c.queried) f(e);
}
}  // namespace

void holdEvents(const Command& c) {
    forEachEvent(c, [](Event* e) { ++e->refs; });
}

void dropEvents(const Command& c) { forEachEvent(c, releaseEvent); }

bool namesDestroyedEvent(const Command& c) {
    bool destroyed = false;
    forEachEvent(c, [&](Event* e) { destroyed = destroyed || e->destroyed; });
    return destroyed;
}

void releaseEvent(Event* e) {
    if (e->refs.fetch_sub(1) == 1) delete e;
}

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

ze_result_t submit(List* l, Command&& c, uint32_t numWaits, ze_event_handle_t* phWaits) {
    // Validated handles are zecl's own object pointers.
    std::span<Event* const> waits(reinterpret_cast<Event* const*>(phWaits), numWaits);
    c.tickNs = l->device->timerResolutionNs;
    if (!l->immediate) {
        c.waits.assign(waits.begin(), waits.end());
        holdEvents(c);
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

}  // namespace zecl
