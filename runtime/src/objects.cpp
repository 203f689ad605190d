#include "zp/runtime/ze.hpp"

#include <algorithm>
#include <array>

namespace zp::runtime {
namespace {

// In intercept mode the loader dereferences handles before any driver sees them, so a null
// handle crashes instead of returning ZE_RESULT_ERROR_INVALID_NULL_HANDLE: check first.
template <class H>
H require(H handle, const char* what, const char* file, int line) {
    if (handle == nullptr)
        detail::throwError(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, what, file, line,
                           "the object was moved from or destroyed; use a live one");
    return handle;
}
#define ZP_REQUIRE(handle, what) require((handle), (what), __FILE__, __LINE__)

ze_device_handle_t requireDevice(const DeviceInfo& dev, const char* what) {
    if (dev.device == nullptr)
        detail::throwError(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, what, __FILE__, __LINE__,
                           "DeviceInfo has no device handle; obtain it from zp::runtime::listDevices()/selectDevice()");
    return dev.device;
}

template <class H>
H take(H& h) noexcept {
    return std::exchange(h, H{});
}

// Converts Waits into a contiguous handle array without allocating for the usual few events.
class WaitHandles {
public:
    explicit WaitHandles(const Waits& waits) {
        auto events = waits.events();
        if (events.size() > inline_.size()) heap_.resize(events.size());
        data_ = heap_.empty() ? inline_.data() : heap_.data();
        for (size_t i = 0; i < events.size(); ++i) {
            if (events[i] == nullptr)
                detail::throwError(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "zp::runtime::Waits", __FILE__, __LINE__,
                                   "wait list entry " + std::to_string(i) + " is a null Event*");
            data_[i] = events[i]->handle();
        }
        count_ = static_cast<uint32_t>(events.size());
    }
    uint32_t count() const noexcept { return count_; }
    ze_event_handle_t* data() noexcept { return count_ ? data_ : nullptr; }

private:
    std::array<ze_event_handle_t, 8> inline_{};
    std::vector<ze_event_handle_t> heap_;
    ze_event_handle_t* data_ = nullptr;
    uint32_t count_ = 0;
};

ze_event_handle_t signalHandle(Event* signal) { return signal ? signal->handle() : nullptr; }

// ZE_RESULT_NOT_READY on a finite timeout → false; other failures throw.
bool syncResult(ze_result_t r, const char* expression, const char* file, int line) {
    if (r == ZE_RESULT_SUCCESS) return true;
    if (r == ZE_RESULT_NOT_READY) return false;
    detail::throwError(r, expression, file, line);
}
#define ZP_SYNC(expr) syncResult((expr), #expr, __FILE__, __LINE__)

// A Level Zero call's result with the call's own text and place, for an error raised after
// more is known (a build log read, a kernel name looked up): the message names the call as it
// is written, never a hand-copied string that drifts from it.
struct Call {
    ze_result_t result;
    const char* expression;
    const char* file;
    int line;
    bool failed() const { return result != ZE_RESULT_SUCCESS; }
    [[noreturn]] void fail(std::string extra) const {
        detail::throwError(result, expression, file, line, std::move(extra));
    }
};
#define ZP_CALL(expr) \
    Call { (expr), #expr, __FILE__, __LINE__ }

}  // namespace

// ----------------------------------------------------------------------------------- Context

Context::Context(ze_driver_handle_t driver) : driver_(driver) {
    ZP_REQUIRE(driver, "zp::runtime::Context(driver)");
    ze_context_desc_t desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
    ZE_CHECK(zeContextCreate(driver, &desc, &handle_));
}
Context::Context(Context&& o) noexcept : handle_(take(o.handle_)), driver_(take(o.driver_)) {}
Context& Context::operator=(Context&& o) noexcept {
    if (this != &o) {
        destroy();
        handle_ = take(o.handle_);
        driver_ = take(o.driver_);
    }
    return *this;
}
void Context::destroy() noexcept {
    if (handle_) zeContextDestroy(take(handle_));
}
ze_context_handle_t Context::handle() const { return ZP_REQUIRE(handle_, "zp::runtime::Context::handle"); }

// -------------------------------------------------------------------------------- Allocation

Allocation Allocation::device(const Context& ctx, const DeviceInfo& dev, size_t bytes, size_t alignment) {
    ze_context_handle_t c = ctx.handle();
    ze_device_handle_t d = requireDevice(dev, "zp::runtime::Allocation::device");
    if (bytes == 0)
        detail::throwError(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, "zp::runtime::Allocation::device", __FILE__, __LINE__,
                           "a device allocation of 0 bytes; ask for at least one element");
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    Allocation a;
    const Call alloc = ZP_CALL(zeMemAllocDevice(c, &desc, bytes, alignment, d, &a.ptr_));
    if (alloc.failed())
        alloc.fail("asked for " + std::to_string(bytes) + " bytes on '" + dev.name() + "' (maxMemAllocSize " +
                   std::to_string(dev.props.maxMemAllocSize) + ", total " + std::to_string(dev.totalMemory()) + ")");
    a.context_ = c;
    a.bytes_ = bytes;
    a.kind_ = Kind::Device;
    return a;
}

Allocation Allocation::host(const Context& ctx, size_t bytes, size_t alignment) {
    ze_context_handle_t c = ctx.handle();
    if (bytes == 0)
        detail::throwError(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, "zp::runtime::Allocation::host", __FILE__, __LINE__,
                           "a host allocation of 0 bytes; ask for at least one element");
    ze_host_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    Allocation a;
    const Call alloc = ZP_CALL(zeMemAllocHost(c, &desc, bytes, alignment, &a.ptr_));
    if (alloc.failed()) alloc.fail("asked for " + std::to_string(bytes) + " bytes of host USM");
    a.context_ = c;
    a.bytes_ = bytes;
    a.kind_ = Kind::Host;
    return a;
}

Allocation::Allocation(Allocation&& o) noexcept
    : ptr_(take(o.ptr_)), context_(take(o.context_)), bytes_(take(o.bytes_)), kind_(o.kind_) {}
Allocation& Allocation::operator=(Allocation&& o) noexcept {
    if (this != &o) {
        destroy();
        ptr_ = take(o.ptr_);
        context_ = take(o.context_);
        bytes_ = take(o.bytes_);
        kind_ = o.kind_;
    }
    return *this;
}
void Allocation::destroy() noexcept {
    if (ptr_ && context_) zeMemFree(context_, ptr_);
    ptr_ = nullptr;
    context_ = nullptr;
    bytes_ = 0;
}
void* Allocation::data() const { return ZP_REQUIRE(ptr_, "zp::runtime::Allocation::data"); }

// ------------------------------------------------------------------------------------ Module

Module Module::fromNative(const Context& ctx, const DeviceInfo& dev, std::span<const std::byte> binary,
                          const std::string& buildFlags) {
    return create(ctx, dev, ZE_MODULE_FORMAT_NATIVE, binary, buildFlags);
}

Module Module::fromSpirv(const Context& ctx, const DeviceInfo& dev, std::span<const std::byte> spirv,
                         const std::string& buildFlags) {
    return create(ctx, dev, ZE_MODULE_FORMAT_IL_SPIRV, spirv, buildFlags);
}

Module Module::create(const Context& ctx, const DeviceInfo& dev, ze_module_format_t format,
                      std::span<const std::byte> bytes, const std::string& buildFlags) {
    ze_context_handle_t c = ctx.handle();
    ze_device_handle_t d = requireDevice(dev, "zp::runtime::Module::create");
    if (bytes.empty())
        detail::throwError(ZE_RESULT_ERROR_INVALID_SIZE, "zp::runtime::Module::create", __FILE__, __LINE__,
                           "empty module input; pass the SPIR-V, native binary or source bundle bytes");
    ze_module_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
    desc.format = format;
    desc.inputSize = bytes.size();
    desc.pInputModule = reinterpret_cast<const uint8_t*>(bytes.data());
    desc.pBuildFlags = buildFlags.c_str();
    desc.pConstants = nullptr;

    Module m;
    ze_module_build_log_handle_t log = nullptr;
    const Call create = ZP_CALL(zeModuleCreate(c, d, &desc, &m.handle_, &log));

    std::string logText;
    if (log) {
        size_t size = 0;
        if (zeModuleBuildLogGetString(log, &size, nullptr) == ZE_RESULT_SUCCESS && size > 0) {
            logText.resize(size);
            if (zeModuleBuildLogGetString(log, &size, logText.data()) != ZE_RESULT_SUCCESS) logText.clear();
            while (!logText.empty() && logText.back() == '\0') logText.pop_back();
        }
        zeModuleBuildLogDestroy(log);
    }
    if (create.failed()) {
        if (m.handle_) zeModuleDestroy(take(m.handle_));
        const char* formatName = format == ZE_MODULE_FORMAT_IL_SPIRV ? "SPIR-V" : "native";
        create.fail(std::string(formatName) + " module (" + std::to_string(bytes.size()) + " bytes, flags '" +
                    buildFlags + "') failed to build on '" + dev.name() + "'; build log:\n" +
                    (logText.empty() ? "<empty>" : logText));
    }
    return m;
}

Module::Module(Module&& o) noexcept : handle_(take(o.handle_)) {}
Module& Module::operator=(Module&& o) noexcept {
    if (this != &o) {
        destroy();
        handle_ = take(o.handle_);
    }
    return *this;
}
void Module::destroy() noexcept {
    if (handle_) zeModuleDestroy(take(handle_));
}
ze_module_handle_t Module::handle() const { return ZP_REQUIRE(handle_, "zp::runtime::Module::handle"); }

std::vector<std::string> Module::kernelNames() const {
    ze_module_handle_t h = handle();
    uint32_t count = 0;
    ZE_CHECK(zeModuleGetKernelNames(h, &count, nullptr));
    std::vector<const char*> names(count);
    if (count) ZE_CHECK(zeModuleGetKernelNames(h, &count, names.data()));
    return std::vector<std::string>(names.begin(), names.begin() + count);
}

// ------------------------------------------------------------------------------------ Kernel

Kernel::Kernel(const Module& module, const std::string& name) : name_(name) {
    ze_module_handle_t m = module.handle();
    ze_kernel_desc_t desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, name_.c_str()};
    const Call create = ZP_CALL(zeKernelCreate(m, &desc, &handle_));
    if (create.failed()) {
        handle_ = nullptr;
        // The module's kernel names tell a wrong name apart from a driver that refused a kernel
        // the module does have (e.g. out of resources, or a zecl fault).
        std::string why;
        try {
            const auto names = module.kernelNames();
            if (std::find(names.begin(), names.end(), name_) != names.end()) {
                why = "the module has this kernel, so the name is not the cause";
            } else {
                why = "the module has no kernel of that name; it has: ";
                for (std::size_t i = 0; i < names.size(); ++i) why += (i ? ", " : "") + names[i];
            }
        } catch (const Error&) {
            why = "the module's kernel names are unavailable";
        }
        create.fail(std::string("kernel creation failed for '") + name_ + "' with " + resultName(create.result) + "; " +
                    why);
    }
}
Kernel::Kernel(Kernel&& o) noexcept : handle_(take(o.handle_)), name_(std::move(o.name_)), groupSize_(o.groupSize_) {}
Kernel& Kernel::operator=(Kernel&& o) noexcept {
    if (this != &o) {
        destroy();
        handle_ = take(o.handle_);
        name_ = std::move(o.name_);
        groupSize_ = o.groupSize_;
    }
    return *this;
}
void Kernel::destroy() noexcept {
    if (handle_) zeKernelDestroy(take(handle_));
}
ze_kernel_handle_t Kernel::handle() const { return ZP_REQUIRE(handle_, "zp::runtime::Kernel::handle"); }

void Kernel::setArgRaw(uint32_t index, size_t size, const void* value) {
    const Call set = ZP_CALL(zeKernelSetArgumentValue(handle(), index, size, value));
    if (set.failed())
        set.fail("kernel '" + name_ + "' argument " + std::to_string(index) + " (" + std::to_string(size) + " bytes" +
                 (value ? "" : ", local memory") + ")");
}

void Kernel::setGroupSize(GroupSize size) {
    const Call set = ZP_CALL(zeKernelSetGroupSize(handle(), size.x, size.y, size.z));
    if (set.failed())
        set.fail("kernel '" + name_ + "' group size " + std::to_string(size.x) + "x" + std::to_string(size.y) + "x" +
                 std::to_string(size.z));
    groupSize_ = size;
}

GroupSize Kernel::suggestGroupSize(uint32_t gx, uint32_t gy, uint32_t gz) const {
    GroupSize g;
    ZE_CHECK(zeKernelSuggestGroupSize(handle(), gx, gy, gz, &g.x, &g.y, &g.z));
    return g;
}

uint32_t Kernel::suggestMaxCooperativeGroupCount() const {
    uint32_t groups = 0;
    const Call suggest = ZP_CALL(zeKernelSuggestMaxCooperativeGroupCount(handle(), &groups));
    if (suggest.failed()) suggest.fail("kernel '" + name() + "'");
    return groups;
}

ze_kernel_properties_t Kernel::properties() const {
    ze_kernel_properties_t p{};
    p.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
    ZE_CHECK(zeKernelGetProperties(handle(), &p));
    return p;
}

// ------------------------------------------------------------------------------ Events, pools

EventPool::EventPool(const Context& ctx, const DeviceInfo& dev, uint32_t count, EventPoolOptions options)
    : count_(count), options_(options) {
    ze_context_handle_t c = ctx.handle();
    ze_device_handle_t d = requireDevice(dev, "zp::runtime::EventPool");
    if (count == 0)
        detail::throwError(ZE_RESULT_ERROR_INVALID_SIZE, "zp::runtime::EventPool", __FILE__, __LINE__,
                           "an event pool of 0 events; ask for at least one");
    ze_event_pool_desc_t desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, 0, count};
    if (options.hostVisible) desc.flags |= ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    if (options.kernelTimestamps) desc.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
    ZE_CHECK(zeEventPoolCreate(c, &desc, 1, &d, &handle_));
}
EventPool::EventPool(EventPool&& o) noexcept : handle_(take(o.handle_)), count_(take(o.count_)), options_(o.options_) {}
EventPool& EventPool::operator=(EventPool&& o) noexcept {
    if (this != &o) {
        destroy();
        handle_ = take(o.handle_);
        count_ = take(o.count_);
        options_ = o.options_;
    }
    return *this;
}
void EventPool::destroy() noexcept {
    if (handle_) zeEventPoolDestroy(take(handle_));
    count_ = 0;
}
ze_event_pool_handle_t EventPool::handle() const { return ZP_REQUIRE(handle_, "zp::runtime::EventPool::handle"); }

Event::Event(const EventPool& pool, uint32_t index, ze_event_scope_flags_t signalScope,
             ze_event_scope_flags_t waitScope) {
    ze_event_pool_handle_t p = pool.handle();
    if (index >= pool.count())
        detail::throwError(
            ZE_RESULT_ERROR_INVALID_ARGUMENT, "zp::runtime::Event", __FILE__, __LINE__,
            "event index " + std::to_string(index) + " outside the pool's " + std::to_string(pool.count()) + " events");
    ze_event_desc_t desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, index, signalScope, waitScope};
    ZE_CHECK(zeEventCreate(p, &desc, &handle_));
}
Event::Event(Event&& o) noexcept : handle_(take(o.handle_)) {}
Event& Event::operator=(Event&& o) noexcept {
    if (this != &o) {
        destroy();
        handle_ = take(o.handle_);
    }
    return *this;
}
void Event::destroy() noexcept {
    if (handle_) zeEventDestroy(take(handle_));
}
ze_event_handle_t Event::handle() const { return ZP_REQUIRE(handle_, "zp::runtime::Event::handle"); }

bool Event::hostSynchronize(uint64_t timeoutNs) const { return ZP_SYNC(zeEventHostSynchronize(handle(), timeoutNs)); }
bool Event::isSignaled() const { return ZP_SYNC(zeEventQueryStatus(handle())); }
void Event::hostSignal() { ZE_CHECK(zeEventHostSignal(handle())); }
void Event::hostReset() { ZE_CHECK(zeEventHostReset(handle())); }

ze_kernel_timestamp_result_t Event::kernelTimestamp() const {
    ze_kernel_timestamp_result_t t{};
    ZE_CHECK(zeEventQueryKernelTimestamp(handle(), &t));
    return t;
}

// ----------------------------------------------------------------------------- Command lists

CommandListBase::CommandListBase(CommandListBase&& o) noexcept : handle_(take(o.handle_)) {}
CommandListBase& CommandListBase::operator=(CommandListBase&& o) noexcept {
    if (this != &o) {
        destroy();
        handle_ = take(o.handle_);
    }
    return *this;
}
void CommandListBase::destroy() noexcept {
    if (handle_) zeCommandListDestroy(take(handle_));
}
ze_command_list_handle_t CommandListBase::handle() const {
    return ZP_REQUIRE(handle_, "zp::runtime::CommandList::handle");
}

namespace {

using AppendLaunchFn = ze_result_t (*)(ze_command_list_handle_t, ze_kernel_handle_t, const ze_group_count_t*,
                                       ze_event_handle_t, uint32_t, ze_event_handle_t*);

// One launch append (plain or cooperative); the error names the call, the kernel and the grid.
// ZP_FUNCTION(fn): the function and its name, written once.
#define ZP_FUNCTION(fn) fn, #fn
void appendLaunch(AppendLaunchFn append, const char* call, ze_command_list_handle_t l, const Kernel& kernel,
                  GroupCount groups, ze_event_handle_t signal, Waits waits) {
    ze_kernel_handle_t k = kernel.handle();
    WaitHandles w(waits);
    ze_group_count_t gc{groups.x, groups.y, groups.z};
    ze_result_t r = append(l, k, &gc, signal, w.count(), w.data());
    if (r != ZE_RESULT_SUCCESS)
        detail::throwError(r, call, __FILE__, __LINE__,
                           "kernel '" + kernel.name() + "' groups " + std::to_string(groups.x) + "x" +
                               std::to_string(groups.y) + "x" + std::to_string(groups.z));
}

}  // namespace

void CommandListBase::launch(const Kernel& kernel, GroupCount groups, Event* signal, Waits waits) {
    appendLaunch(ZP_FUNCTION(zeCommandListAppendLaunchKernel), handle(), kernel, groups, signalHandle(signal), waits);
}

void CommandListBase::launchCooperative(const Kernel& kernel, GroupCount groups, Event* signal, Waits waits) {
    appendLaunch(ZP_FUNCTION(zeCommandListAppendLaunchCooperativeKernel), handle(), kernel, groups,
                 signalHandle(signal), waits);
}

void CommandListBase::barrier(Event* signal, Waits waits) {
    ze_command_list_handle_t l = handle();
    WaitHandles w(waits);
    ZE_CHECK(zeCommandListAppendBarrier(l, signalHandle(signal), w.count(), w.data()));
}

void CommandListBase::memoryCopy(void* dst, const void* src, size_t bytes, Event* signal, Waits waits) {
    ze_command_list_handle_t l = handle();
    if (!dst || !src)
        detail::throwError(ZE_RESULT_ERROR_INVALID_NULL_POINTER, "zp::runtime::CommandList::memoryCopy", __FILE__,
                           __LINE__, std::string(dst ? "src" : "dst") + " is null");
    WaitHandles w(waits);
    ZE_CHECK(zeCommandListAppendMemoryCopy(l, dst, src, bytes, signalHandle(signal), w.count(), w.data()));
}

void CommandListBase::memoryFill(void* dst, const void* pattern, size_t patternSize, size_t bytes, Event* signal,
                                 Waits waits) {
    ze_command_list_handle_t l = handle();
    if (!dst || !pattern)
        detail::throwError(ZE_RESULT_ERROR_INVALID_NULL_POINTER, "zp::runtime::CommandList::memoryFill", __FILE__,
                           __LINE__, std::string(dst ? "pattern" : "dst") + " is null");
    WaitHandles w(waits);
    ZE_CHECK(
        zeCommandListAppendMemoryFill(l, dst, pattern, patternSize, bytes, signalHandle(signal), w.count(), w.data()));
}

void CommandListBase::writeGlobalTimestamp(uint64_t* dst, Event* signal, Waits waits) {
    ze_command_list_handle_t l = handle();
    if (!dst)
        detail::throwError(ZE_RESULT_ERROR_INVALID_NULL_POINTER, "zp::runtime::CommandList::writeGlobalTimestamp",
                           __FILE__, __LINE__, "dst is null");
    WaitHandles w(waits);
    ZE_CHECK(zeCommandListAppendWriteGlobalTimestamp(l, dst, signalHandle(signal), w.count(), w.data()));
}

CommandList::CommandList(const Context& ctx, const DeviceInfo& dev, ze_command_list_flags_t flags) {
    ze_context_handle_t c = ctx.handle();
    ze_device_handle_t d = requireDevice(dev, "zp::runtime::CommandList");
    ze_command_list_desc_t desc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, dev.computeQueueOrdinal(), flags};
    ZE_CHECK(zeCommandListCreate(c, d, &desc, &handle_));
}
void CommandList::close() { ZE_CHECK(zeCommandListClose(handle())); }
void CommandList::reset() { ZE_CHECK(zeCommandListReset(handle())); }

namespace {
ze_command_queue_desc_t queueDesc(const DeviceInfo& dev, const QueueOptions& o) {
    ze_command_queue_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    desc.ordinal = o.ordinal ? *o.ordinal : dev.computeQueueOrdinal();
    desc.index = o.index;
    desc.flags = 0;
    desc.mode = o.mode;
    desc.priority = o.priority;
    return desc;
}
}  // namespace

ImmediateCommandList::ImmediateCommandList(const Context& ctx, const DeviceInfo& dev, QueueOptions options) {
    ze_context_handle_t c = ctx.handle();
    ze_device_handle_t d = requireDevice(dev, "zp::runtime::ImmediateCommandList");
    syncPool_ = EventPool(ctx, dev, 1, EventPoolOptions{.hostVisible = true, .kernelTimestamps = false});
    syncEvent_ = Event(syncPool_, 0);
    ze_command_queue_desc_t desc = queueDesc(dev, options);
    ZE_CHECK(zeCommandListCreateImmediate(c, d, &desc, &handle_));
}

bool ImmediateCommandList::synchronize(uint64_t timeoutNs) {
    if (!syncPending_) {
        barrier(&syncEvent_);
        syncPending_ = true;
    }
    if (!syncEvent_.hostSynchronize(timeoutNs)) return false;
    syncEvent_.hostReset();
    syncPending_ = false;
    return true;
}

void ImmediateCommandList::copyAndWait(void* dst, const void* src, size_t bytes) {
    if (syncPending_) synchronize();  // the event must be free
    memoryCopy(dst, src, bytes, &syncEvent_);
    waitSignalled();
}

void ImmediateCommandList::fillAndWait(void* dst, const void* pattern, size_t patternSize, size_t bytes) {
    if (syncPending_) synchronize();
    memoryFill(dst, pattern, patternSize, bytes, &syncEvent_);
    waitSignalled();
}

void ImmediateCommandList::waitSignalled() {
    syncPending_ = true;  // a throw below leaves the event to the next synchronize()
    syncEvent_.hostSynchronize(UINT64_MAX);
    syncEvent_.hostReset();
    syncPending_ = false;
}

// -------------------------------------------------------------------------------------- Queue

CommandQueue::CommandQueue(const Context& ctx, const DeviceInfo& dev, QueueOptions options) {
    ze_context_handle_t c = ctx.handle();
    ze_device_handle_t d = requireDevice(dev, "zp::runtime::CommandQueue");
    ze_command_queue_desc_t desc = queueDesc(dev, options);
    ZE_CHECK(zeCommandQueueCreate(c, d, &desc, &handle_));
}
CommandQueue::CommandQueue(CommandQueue&& o) noexcept : handle_(take(o.handle_)) {}
CommandQueue& CommandQueue::operator=(CommandQueue&& o) noexcept {
    if (this != &o) {
        destroy();
        handle_ = take(o.handle_);
    }
    return *this;
}
void CommandQueue::destroy() noexcept {
    if (handle_) zeCommandQueueDestroy(take(handle_));
}
ze_command_queue_handle_t CommandQueue::handle() const {
    return ZP_REQUIRE(handle_, "zp::runtime::CommandQueue::handle");
}

void CommandQueue::execute(CommandList& list, Fence* fence) {
    CommandList* lists[] = {&list};
    execute(std::span<CommandList* const>(lists), fence);
}

void CommandQueue::execute(std::span<CommandList* const> lists, Fence* fence) {
    ze_command_queue_handle_t q = handle();
    std::array<ze_command_list_handle_t, 8> inlineHandles{};
    std::vector<ze_command_list_handle_t> heap;
    ze_command_list_handle_t* handles = inlineHandles.data();
    if (lists.size() > inlineHandles.size()) {
        heap.resize(lists.size());
        handles = heap.data();
    }
    for (size_t i = 0; i < lists.size(); ++i) {
        if (!lists[i])
            detail::throwError(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "zp::runtime::CommandQueue::execute", __FILE__,
                               __LINE__, "list " + std::to_string(i) + " is a null CommandList*");
        handles[i] = lists[i]->handle();
    }
    if (lists.empty()) return;
    ze_fence_handle_t f = fence ? fence->handle() : nullptr;
    ZE_CHECK(zeCommandQueueExecuteCommandLists(q, static_cast<uint32_t>(lists.size()), handles, f));
}

bool CommandQueue::synchronize(uint64_t timeoutNs) { return ZP_SYNC(zeCommandQueueSynchronize(handle(), timeoutNs)); }

// -------------------------------------------------------------------------------------- Fence

Fence::Fence(const CommandQueue& queue) {
    ze_fence_desc_t desc{ZE_STRUCTURE_TYPE_FENCE_DESC, nullptr, 0};
    ZE_CHECK(zeFenceCreate(queue.handle(), &desc, &handle_));
}
Fence::Fence(Fence&& o) noexcept : handle_(take(o.handle_)) {}
Fence& Fence::operator=(Fence&& o) noexcept {
    if (this != &o) {
        destroy();
        handle_ = take(o.handle_);
    }
    return *this;
}
void Fence::destroy() noexcept {
    if (handle_) zeFenceDestroy(take(handle_));
}
ze_fence_handle_t Fence::handle() const { return ZP_REQUIRE(handle_, "zp::runtime::Fence::handle"); }
bool Fence::hostSynchronize(uint64_t timeoutNs) { return ZP_SYNC(zeFenceHostSynchronize(handle(), timeoutNs)); }
bool Fence::isSignaled() const { return ZP_SYNC(zeFenceQueryStatus(handle())); }
void Fence::reset() { ZE_CHECK(zeFenceReset(handle())); }

}  // namespace zp::runtime
