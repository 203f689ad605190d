// zp::runtime: move-only RAII C++20 over the Level Zero API (ze_api.h, spec 1.4 headers).
// Code in namespace zp spells it runtime::, code outside zp::runtime::.
//
// Links only the Level Zero loader. Knows nothing of MoE. Every failing call throws runtime::Error;
// library code never prints or exits.
//
// Ownership: objects that need a parent keep its raw handle, not a reference count. Destroy
// children (buffers, modules, kernels, lists, queues, events, fences) before their Context;
// declaring the Context first in a struct gives that order for free.
//
// Thread safety follows Level Zero: distinct objects may be used from distinct threads; one
// command list or queue must not be appended to / executed from two threads at once.
//
//   runtime::init({.setAltDriversIfUnset = true});    // tools only; libraries pass nothing
//   runtime::DeviceInfo dev = runtime::selectDevice("");  // first Intel GPU, else first zecl device
//   runtime::Context ctx(dev);
//   runtime::Module mod = runtime::Module::fromSourceBundle(ctx, dev, bytes);  // or fromNative / fromSpirv
//   runtime::Kernel k(mod, "gemm1");
//   runtime::DeviceBuffer<float> y(ctx, dev, n);
//   k.setGroupSize(64);  k.setArg(0, y);  k.setArg(1, n);  k.setArg(2, runtime::LocalMem{4096});
//   runtime::CommandQueue q(ctx, dev);
//   runtime::CommandList list(ctx, dev);              // record once ...
//   list.launch(k, {groups});  list.barrier();  list.close();
//   q.execute(list);  q.synchronize();                // ... replay many times
//   runtime::ImmediateCommandList imm(ctx, dev);
//   std::vector<float> host = y.download(imm);        // blocking copy
#pragma once

#include <level_zero/ze_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

// The headers' API version as a preprocessor number. ZE_API_VERSION_CURRENT is an enumerator,
// so `#if ZE_API_VERSION_CURRENT >= ...` silently evaluates to 0 >= ...; newer headers define
// ZE_API_VERSION_CURRENT_M, Debian's 1.4 headers do not. Guard newer features with
// `#if ZP_ZE_HEADER_VERSION >= ZE_MAKE_VERSION(1, x)` plus a run-time DeviceInfo::apiVersion check.
#if defined(ZE_API_VERSION_CURRENT_M)
#define ZP_ZE_HEADER_VERSION ZE_API_VERSION_CURRENT_M
#else
#define ZP_ZE_HEADER_VERSION ZE_MAKE_VERSION(1, 4)
#endif

namespace zp::runtime {

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

// The enumerator's name ("ZE_RESULT_ERROR_INVALID_ARGUMENT"); every 1.4 result is covered,
// anything else gives "ZE_RESULT_<unknown 0x...>" (the storage is static, never null).
const char* resultName(ze_result_t code) noexcept;

class Error : public std::runtime_error {
public:
    // `extra` is free text appended to what(): a build log, the list of valid choices, ...
    Error(ze_result_t code, std::string expression, const char* file, int line, std::string extra = {});

    ze_result_t code() const noexcept { return code_; }
    const char* codeName() const noexcept { return resultName(code_); }
    const std::string& expression() const noexcept { return expression_; }
    const std::string& file() const noexcept { return file_; }
    int line() const noexcept { return line_; }
    const std::string& extra() const noexcept { return extra_; }

private:
    ze_result_t code_;
    std::string expression_;
    std::string file_;
    int line_;
    std::string extra_;
};

namespace detail {
[[noreturn]] void throwError(ze_result_t code, const char* expression, const char* file, int line,
                             std::string extra = {});
inline void check(ze_result_t code, const char* expression, const char* file, int line) {
    if (code != ZE_RESULT_SUCCESS) throwError(code, expression, file, line);
}
}  // namespace detail

}  // namespace zp::runtime

// Throws runtime::Error{code, "expr", file:line} when expr does not return ZE_RESULT_SUCCESS.
#define ZE_CHECK(expr) ::zp::runtime::detail::check((expr), #expr, __FILE__, __LINE__)

namespace zp::runtime {

// ---------------------------------------------------------------------------------------------
// Init
// ---------------------------------------------------------------------------------------------

struct InitOptions {
    ze_init_flags_t flags = 0;
    // Before zeInit: when ZE_ENABLE_ALT_DRIVERS is unset, set it to defaultAltDrivers(zeclPath).
    // Off by default: the library does not touch the environment unless asked. When nothing is
    // found the variable is left unset (an empty value crashes the loader).
    bool setAltDriversIfUnset = false;
    std::optional<std::string> zeclPath;
};

// Calls zeInit once per process (thread-safe, idempotent). Options of later calls are ignored;
// a failed zeInit is remembered and rethrown on every later call.
void init(const InitOptions& options = {});

// Absolute path of libze_zecl.so: explicit path (must exist), else $ZP_ZECL_PATH, else next to
// the executable (., ../lib, ../driver), else the build tree's driver, else the install libdir.
// nullopt when not found.
std::optional<std::string> findZeclLibrary(std::optional<std::string> zeclPath = std::nullopt);

// Value for ZE_ENABLE_ALT_DRIVERS: the Intel GPU driver (absolute path of libze_intel_gpu.so.1
// found in the standard library dirs) and zecl, joined by ',' without spaces; absolute paths
// only. Never empty: throws runtime::Error (ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE) if neither is
// found.
std::string defaultAltDrivers(std::optional<std::string> zeclPath = std::nullopt);

// ---------------------------------------------------------------------------------------------
// Drivers and devices
// ---------------------------------------------------------------------------------------------

enum class DriverKind { Intel, Zecl, Other };
const char* driverKindName(DriverKind kind) noexcept;  // "intel", "zecl", "other"

// A ns/tick converter with a valid-bits mask. Kernel timestamps use kernelTimestampValidBits,
// global timestamps timestampValidBits.
struct TimestampClock {
    double nsPerTick = 1.0;
    uint64_t mask = ~0ull;

    // timerResolution's unit depends on the stype the properties were queried with:
    // ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES → ns per tick; _1_2 → ticks (cycles) per second.
    static TimestampClock fromProperties(const ze_device_properties_t& props, uint32_t validBits);

    double toNs(uint64_t ticks) const noexcept { return double(ticks & mask) * nsPerTick; }
    // end - start under the mask, so a single wrap-around is handled.
    uint64_t durationTicks(uint64_t start, uint64_t end) const noexcept {
        return ((end & mask) - (start & mask)) & mask;
    }
    double durationNs(uint64_t start, uint64_t end) const noexcept {
        return double(durationTicks(start, end)) * nsPerTick;
    }
};

// bits >= 64 → all ones; 0 → all ones too (a driver reporting 0 valid bits means "unknown").
constexpr uint64_t validBitsMask(uint32_t bits) noexcept {
    return (bits == 0 || bits >= 64) ? ~0ull : (1ull << bits) - 1;
}

struct DeviceInfo {
    // identity
    ze_driver_handle_t driver = nullptr;
    ze_device_handle_t device = nullptr;
    size_t index = 0;  // position in listDevices()
    DriverKind kind = DriverKind::Other;

    // driver
    ze_driver_properties_t driverProps{};
    ze_api_version_t apiVersion{};
    std::vector<ze_driver_extension_properties_t> extensions;

    // device (props.stype tells timerResolution's unit, see TimestampClock)
    ze_device_properties_t props{};
    ze_device_compute_properties_t compute{};
    ze_device_module_properties_t module{};
    std::vector<ze_device_memory_properties_t> memory;
    ze_device_memory_access_properties_t memoryAccess{};
    std::vector<ze_command_queue_group_properties_t> queueGroups;
    std::optional<uint32_t> ipVersion;  // Intel native-binary IP version, when the driver tells

    std::string name() const { return props.name; }
    bool isIntel() const noexcept { return kind == DriverKind::Intel; }
    bool isZecl() const noexcept { return kind == DriverKind::Zecl; }
    bool isGpu() const noexcept { return props.type == ZE_DEVICE_TYPE_GPU; }
    bool isNvidiaGpu() const noexcept { return isGpu() && props.vendorId == 0x10de; }  // PCI vendor id
    uint32_t computeUnits() const noexcept;  // slices * subslices * EUs (zecl: CL compute units)
    uint64_t totalMemory() const noexcept;   // sum of memory[].totalSize
    bool supportsFp32Denorm() const noexcept { return (module.fp32flags & ZE_DEVICE_FP_FLAG_DENORM) != 0; }
    bool supportsSpirv() const noexcept { return module.spirvVersionSupported != 0; }
    bool hasExtension(std::string_view name) const noexcept;
    // First queue group with the COMPUTE flag; throws if none.
    uint32_t computeQueueOrdinal() const;

    TimestampClock kernelClock() const { return TimestampClock::fromProperties(props, props.kernelTimestampValidBits); }
    TimestampClock globalClock() const { return TimestampClock::fromProperties(props, props.timestampValidBits); }
};

// A kernel timestamp (masked by kernelTimestampValidBits) in ns.
double timestampToNs(const DeviceInfo& device, uint64_t ticks);

// Every device of every driver, flat, in driver order. Calls init() (default options) first.
std::vector<DeviceInfo> listDevices();

// "" → first Intel GPU, else first zecl device, else first device; "intel" / "zecl" → the first
// of that driver; "N" → listDevices()[N]. Throws runtime::Error(ZE_RESULT_ERROR_INVALID_ARGUMENT)
// naming the value and listing the valid choices.
DeviceInfo selectDevice(const std::string& spec);

// Human-readable table of drivers and devices (text, never printed by the library).
std::string formatDeviceList(const std::vector<DeviceInfo>& devices);
std::string formatDeviceList();

struct GlobalTimestamps {
    uint64_t host = 0;
    uint64_t device = 0;  // ticks; convert with DeviceInfo::globalClock()
};
GlobalTimestamps globalTimestamps(const DeviceInfo& device);

// ---------------------------------------------------------------------------------------------
// Context
// ---------------------------------------------------------------------------------------------

class Context {
public:
    Context() = default;
    explicit Context(ze_driver_handle_t driver);
    explicit Context(const DeviceInfo& device) : Context(device.driver) {}
    Context(Context&& other) noexcept;
    Context& operator=(Context&& other) noexcept;
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;
    ~Context() { destroy(); }

    void destroy() noexcept;             // idempotent
    ze_context_handle_t handle() const;  // throws on a moved-from / destroyed Context
    ze_driver_handle_t driver() const noexcept { return driver_; }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    // always owned
    ze_context_handle_t handle_ = nullptr;
    // never owned
    ze_driver_handle_t driver_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// USM memory
// ---------------------------------------------------------------------------------------------

// An untyped USM allocation (device or host). Under zecl host allocations are coarse-grained
// SVM: do not dereference host USM from the host in generic code; copy through a command list.
class Allocation {
public:
    enum class Kind { Device, Host };

    Allocation() = default;
    static Allocation device(const Context& ctx, const DeviceInfo& dev, size_t bytes, size_t alignment = 64);
    static Allocation host(const Context& ctx, size_t bytes, size_t alignment = 64);
    Allocation(Allocation&& other) noexcept;
    Allocation& operator=(Allocation&& other) noexcept;
    Allocation(const Allocation&) = delete;
    Allocation& operator=(const Allocation&) = delete;
    ~Allocation() { destroy(); }

    void destroy() noexcept;
    void* data() const;  // throws on a moved-from / destroyed Allocation
    size_t bytes() const noexcept { return bytes_; }
    Kind kind() const noexcept { return kind_; }
    explicit operator bool() const noexcept { return ptr_ != nullptr; }

private:
    // always owned
    void* ptr_ = nullptr;
    // never owned
    ze_context_handle_t context_ = nullptr;
    size_t bytes_ = 0;
    Kind kind_ = Kind::Device;
};

class ImmediateCommandList;

// A typed USM buffer of `size()` elements.
template <class T, Allocation::Kind K>
class Buffer {
    static_assert(std::is_trivially_copyable_v<T>, "USM buffers hold trivially copyable types");

public:
    Buffer() = default;
    Buffer(const Context& ctx, const DeviceInfo& dev, size_t count) requires(K == Allocation::Kind::Device)
        : alloc_(Allocation::device(ctx, dev, count * sizeof(T), alignof(T) > 64 ? alignof(T) : 64)), count_(count) {}
    Buffer(const Context& ctx, size_t count) requires(K == Allocation::Kind::Host)
        : alloc_(Allocation::host(ctx, count * sizeof(T), alignof(T) > 64 ? alignof(T) : 64)), count_(count) {}

    T* data() const { return static_cast<T*>(alloc_.data()); }
    size_t size() const noexcept { return count_; }
    size_t bytes() const noexcept { return count_ * sizeof(T); }
    explicit operator bool() const noexcept { return static_cast<bool>(alloc_); }
    void destroy() noexcept {
        alloc_.destroy();
        count_ = 0;
    }
    Allocation& allocation() noexcept { return alloc_; }

    // Blocking copies through an immediate list (ImmediateCommandList::copyAndWait / fillAndWait).
    void upload(ImmediateCommandList& list, std::span<const T> src, size_t offset = 0);
    void download(ImmediateCommandList& list, std::span<T> dst, size_t offset = 0) const;
    std::vector<T> download(ImmediateCommandList& list) const {
        std::vector<T> out(count_);
        download(list, std::span<T>(out));
        return out;
    }
    void fill(ImmediateCommandList& list, const T& value);

private:
    Allocation alloc_;
    size_t count_ = 0;
};

template <class T>
using DeviceBuffer = Buffer<T, Allocation::Kind::Device>;
template <class T>
using HostBuffer = Buffer<T, Allocation::Kind::Host>;

// ---------------------------------------------------------------------------------------------
// Modules and kernels
// ---------------------------------------------------------------------------------------------

class Module {
public:
    Module() = default;
    // ZE_MODULE_FORMAT_NATIVE: an Intel native binary (ocloc) or a zecl source bundle.
    static Module fromNative(const Context& ctx, const DeviceInfo& dev, std::span<const std::byte> binary,
                             const std::string& buildFlags = {});
    // Same as fromNative: the runtime passes the bundle bytes through, it does not parse them.
    static Module fromSourceBundle(const Context& ctx, const DeviceInfo& dev, std::span<const std::byte> bundle,
                                   const std::string& buildFlags = {}) {
        return fromNative(ctx, dev, bundle, buildFlags);
    }
    static Module fromSpirv(const Context& ctx, const DeviceInfo& dev, std::span<const std::byte> spirv,
                            const std::string& buildFlags = {});
    // On failure: runtime::Error whose extra() is the build log (zeModuleBuildLogGetString).
    static Module create(const Context& ctx, const DeviceInfo& dev, ze_module_format_t format,
                         std::span<const std::byte> bytes, const std::string& buildFlags);

    Module(Module&& other) noexcept;
    Module& operator=(Module&& other) noexcept;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;
    ~Module() { destroy(); }

    void destroy() noexcept;
    ze_module_handle_t handle() const;
    std::vector<std::string> kernelNames() const;
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    // always owned
    ze_module_handle_t handle_ = nullptr;
};

// Tag for a local (shared local memory) kernel argument of `bytes` bytes.
struct LocalMem {
    size_t bytes;
};

struct GroupSize {
    uint32_t x = 1, y = 1, z = 1;
};
struct GroupCount {
    uint32_t x = 1, y = 1, z = 1;
};

class Kernel {
public:
    Kernel() = default;
    Kernel(const Module& module, const std::string& name);
    Kernel(Kernel&& other) noexcept;
    Kernel& operator=(Kernel&& other) noexcept;
    Kernel(const Kernel&) = delete;
    Kernel& operator=(const Kernel&) = delete;
    ~Kernel() { destroy(); }

    void destroy() noexcept;
    ze_kernel_handle_t handle() const;
    const std::string& name() const noexcept { return name_; }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

    // By value: scalars, structs, and USM pointers (T* is trivially copyable).
    template <class T>
    requires(std::is_trivially_copyable_v<T> && !std::is_same_v<T, LocalMem>) void setArg(uint32_t index,
                                                                                          const T& value) {
        setArgRaw(index, sizeof(T), &value);
    }
    void setArg(uint32_t index, LocalMem local) { setArgRaw(index, local.bytes, nullptr); }
    template <class T, Allocation::Kind K>
    void setArg(uint32_t index, const Buffer<T, K>& buffer) {
        T* p = buffer.data();
        setArgRaw(index, sizeof(p), &p);
    }
    void setArg(uint32_t index, const Allocation& allocation) {
        void* p = allocation.data();
        setArgRaw(index, sizeof(p), &p);
    }
    // value == nullptr → local memory of `size` bytes (the Level Zero convention).
    void setArgRaw(uint32_t index, size_t size, const void* value);

    void setGroupSize(GroupSize size);
    void setGroupSize(uint32_t x, uint32_t y = 1, uint32_t z = 1) { setGroupSize(GroupSize{x, y, z}); }
    GroupSize groupSize() const noexcept { return groupSize_; }
    GroupSize suggestGroupSize(uint32_t globalX, uint32_t globalY = 1, uint32_t globalZ = 1) const;
    // zeKernelSuggestMaxCooperativeGroupCount at the group size and local arguments set now:
    // the most groups (x*y*z) the device keeps resident at once, hence the largest grid a
    // launchCooperative of this kernel may use. Throws where the driver has no cooperative
    // launches (ZE_RESULT_ERROR_UNSUPPORTED_FEATURE).
    uint32_t suggestMaxCooperativeGroupCount() const;
    ze_kernel_properties_t properties() const;

private:
    // always owned
    ze_kernel_handle_t handle_ = nullptr;
    std::string name_;
    GroupSize groupSize_{};
};

// ---------------------------------------------------------------------------------------------
// Events, fences
// ---------------------------------------------------------------------------------------------

struct EventPoolOptions {
    bool hostVisible = true;
    bool kernelTimestamps = false;
};

class EventPool {
public:
    EventPool() = default;
    EventPool(const Context& ctx, const DeviceInfo& dev, uint32_t count, EventPoolOptions options = {});
    EventPool(EventPool&& other) noexcept;
    EventPool& operator=(EventPool&& other) noexcept;
    EventPool(const EventPool&) = delete;
    EventPool& operator=(const EventPool&) = delete;
    ~EventPool() { destroy(); }

    void destroy() noexcept;
    ze_event_pool_handle_t handle() const;
    uint32_t count() const noexcept { return count_; }
    const EventPoolOptions& options() const noexcept { return options_; }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    ze_event_pool_handle_t handle_ = nullptr;
    uint32_t count_ = 0;
    EventPoolOptions options_{};
};

class Event {
public:
    Event() = default;
    // Signal and wait scopes default to HOST (visible to host and device).
    Event(const EventPool& pool, uint32_t index, ze_event_scope_flags_t signalScope = ZE_EVENT_SCOPE_FLAG_HOST,
          ze_event_scope_flags_t waitScope = ZE_EVENT_SCOPE_FLAG_HOST);
    Event(Event&& other) noexcept;
    Event& operator=(Event&& other) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() { destroy(); }

    void destroy() noexcept;
    ze_event_handle_t handle() const;
    explicit operator bool() const noexcept { return handle_ != nullptr; }

    // false when timeoutNs passed first (ZE_RESULT_NOT_READY); other results throw.
    bool hostSynchronize(uint64_t timeoutNs = UINT64_MAX) const;
    bool isSignaled() const;  // zeEventQueryStatus: SUCCESS → true, NOT_READY → false
    void hostSignal();
    void hostReset();
    // Requires a pool with kernelTimestamps; raw ticks, convert with DeviceInfo::kernelClock().
    ze_kernel_timestamp_result_t kernelTimestamp() const;

private:
    ze_event_handle_t handle_ = nullptr;
};

// Events a command waits on. Built implicitly from {&a, &b}, a vector or span of Event*, or
// one Event. Views only: the events must outlive the call.
class Waits {
public:
    Waits() = default;
    Waits(std::initializer_list<const Event*> events) : events_(events.begin(), events.size()) {}
    Waits(std::span<const Event* const> events) : events_(events) {}
    Waits(const std::vector<const Event*>& events) : events_(events.data(), events.size()) {}
    Waits(const Event& event) : single_(&event), events_(&single_, 1) {}
    Waits(const Waits& o)
        : single_(o.single_), events_(o.single_ ? std::span<const Event* const>(&single_, 1) : o.events_) {}
    Waits& operator=(const Waits&) = delete;
    std::span<const Event* const> events() const noexcept { return events_; }

private:
    const Event* single_ = nullptr;
    std::span<const Event* const> events_;
};

class Fence;

// ---------------------------------------------------------------------------------------------
// Command lists and queues
// ---------------------------------------------------------------------------------------------

// Append API shared by regular and immediate lists. `signal` may be null.
class CommandListBase {
public:
    CommandListBase(const CommandListBase&) = delete;
    CommandListBase& operator=(const CommandListBase&) = delete;

    void destroy() noexcept;  // idempotent
    ze_command_list_handle_t handle() const;
    explicit operator bool() const noexcept { return handle_ != nullptr; }

    // Uses the group size last set on the kernel (arguments are captured at append time).
    void launch(const Kernel& kernel, GroupCount groups, Event* signal = nullptr, Waits waits = {});
    // zeCommandListAppendLaunchCooperativeKernel: all groups resident at once, so the kernel may
    // synchronise across groups. groups.x*y*z must not exceed suggestMaxCooperativeGroupCount().
    void launchCooperative(const Kernel& kernel, GroupCount groups, Event* signal = nullptr, Waits waits = {});
    void barrier(Event* signal = nullptr, Waits waits = {});
    void memoryCopy(void* dst, const void* src, size_t bytes, Event* signal = nullptr, Waits waits = {});
    void memoryFill(void* dst, const void* pattern, size_t patternSize, size_t bytes, Event* signal = nullptr,
                    Waits waits = {});
    // Writes a 64-bit global timestamp (ticks, DeviceInfo::globalClock()) to device memory.
    void writeGlobalTimestamp(uint64_t* dst, Event* signal = nullptr, Waits waits = {});

protected:
    CommandListBase() = default;
    CommandListBase(CommandListBase&& other) noexcept;
    CommandListBase& operator=(CommandListBase&& other) noexcept;
    ~CommandListBase() { destroy(); }

    // always owned
    ze_command_list_handle_t handle_ = nullptr;
};

// Regular list: record, close(), execute on a queue many times.
class CommandList : public CommandListBase {
public:
    CommandList() = default;
    CommandList(const Context& ctx, const DeviceInfo& dev, ze_command_list_flags_t flags = 0);
    CommandList(CommandList&&) noexcept = default;
    CommandList& operator=(CommandList&&) noexcept = default;
    ~CommandList() = default;

    void close();
    void reset();
};

struct QueueOptions {
    std::optional<uint32_t> ordinal;  // default: DeviceInfo::computeQueueOrdinal()
    uint32_t index = 0;
    ze_command_queue_mode_t mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    ze_command_queue_priority_t priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
};

// Immediate list: commands are submitted at append. synchronize() waits for all of them.
class ImmediateCommandList : public CommandListBase {
public:
    ImmediateCommandList() = default;
    ImmediateCommandList(const Context& ctx, const DeviceInfo& dev, QueueOptions options = {});
    ImmediateCommandList(ImmediateCommandList&&) noexcept = default;
    ImmediateCommandList& operator=(ImmediateCommandList&&) noexcept = default;
    ~ImmediateCommandList() { destroy(); }  // the list before its sync event

    // Level Zero 1.4 has no zeCommandListHostSynchronize: appends a barrier that signals an
    // internal host-visible event and waits on it.
    // false when timeoutNs passed first; a later synchronize() waits for the same point again.
    bool synchronize(uint64_t timeoutNs = UINT64_MAX);
    // A copy / fill that signals the internal event itself, and a wait for it (for this command;
    // commands appended earlier without a wait are not waited for): one append, so when the
    // append fails nothing of this call is in flight. (A copy followed by
    // synchronize()'s barrier leaves the copy running, still reading `src`, when the barrier's
    // append fails; the caller may then free `src`.)
    void copyAndWait(void* dst, const void* src, size_t bytes);
    void fillAndWait(void* dst, const void* pattern, size_t patternSize, size_t bytes);

private:
    void waitSignalled();

    // always owned; destroyed after the list (see the destructor)
    EventPool syncPool_;
    Event syncEvent_;
    bool syncPending_ = false;
};

class CommandQueue {
public:
    CommandQueue() = default;
    CommandQueue(const Context& ctx, const DeviceInfo& dev, QueueOptions options = {});
    CommandQueue(CommandQueue&& other) noexcept;
    CommandQueue& operator=(CommandQueue&& other) noexcept;
    CommandQueue(const CommandQueue&) = delete;
    CommandQueue& operator=(const CommandQueue&) = delete;
    ~CommandQueue() { destroy(); }

    void destroy() noexcept;
    ze_command_queue_handle_t handle() const;
    explicit operator bool() const noexcept { return handle_ != nullptr; }

    void execute(CommandList& list, Fence* fence = nullptr);
    void execute(std::span<CommandList* const> lists, Fence* fence = nullptr);
    void execute(std::initializer_list<CommandList*> lists, Fence* fence = nullptr) {
        execute(std::span<CommandList* const>(lists.begin(), lists.size()), fence);
    }
    // false when timeoutNs passed first (ZE_RESULT_NOT_READY).
    bool synchronize(uint64_t timeoutNs = UINT64_MAX);
    // A copy / fill that signals the internal event itself, and a wait for it (for this command;
    // commands appended earlier without a wait are not waited for): one append, so when the
    // append fails nothing of this call is in flight. (A copy followed by
    // synchronize()'s barrier leaves the copy running, still reading `src`, when the barrier's
    // append fails; the caller may then free `src`.)
    void copyAndWait(void* dst, const void* src, size_t bytes);
    void fillAndWait(void* dst, const void* pattern, size_t patternSize, size_t bytes);

private:
    void waitSignalled();

    ze_command_queue_handle_t handle_ = nullptr;
};

class Fence {
public:
    Fence() = default;
    explicit Fence(const CommandQueue& queue);
    Fence(Fence&& other) noexcept;
    Fence& operator=(Fence&& other) noexcept;
    Fence(const Fence&) = delete;
    Fence& operator=(const Fence&) = delete;
    ~Fence() { destroy(); }

    void destroy() noexcept;
    ze_fence_handle_t handle() const;
    explicit operator bool() const noexcept { return handle_ != nullptr; }

    // false when timeoutNs passed first (ZE_RESULT_NOT_READY).
    bool hostSynchronize(uint64_t timeoutNs = UINT64_MAX);
    bool isSignaled() const;
    void reset();

private:
    ze_fence_handle_t handle_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Buffer copies (inline: templates)
// ---------------------------------------------------------------------------------------------

namespace detail {
void checkRange(size_t offset, size_t count, size_t size, const char* what);
}

template <class T, Allocation::Kind K>
void Buffer<T, K>::upload(ImmediateCommandList& list, std::span<const T> src, size_t offset) {
    detail::checkRange(offset, src.size(), count_, "Buffer::upload");
    if (src.empty()) return;
    list.copyAndWait(data() + offset, src.data(), src.size_bytes());
}

template <class T, Allocation::Kind K>
void Buffer<T, K>::download(ImmediateCommandList& list, std::span<T> dst, size_t offset) const {
    detail::checkRange(offset, dst.size(), count_, "Buffer::download");
    if (dst.empty()) return;
    list.copyAndWait(dst.data(), data() + offset, dst.size_bytes());
}

template <class T, Allocation::Kind K>
void Buffer<T, K>::fill(ImmediateCommandList& list, const T& value) {
    if (count_ == 0) return;
    list.fillAndWait(data(), &value, sizeof(T), bytes());
}

}  // namespace zp::runtime
