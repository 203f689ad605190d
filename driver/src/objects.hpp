// zecl internal objects. Every L0 handle zecl hands out is a pointer to one of these
// structs; the registry records which pointers are live so a stale, foreign or null
// handle is answered with an error instead of a crash.
#pragma once

#include "fault_plan.hpp"

#include <CL/cl.h>
#include <ze_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace zecl {

enum class Kind : uint32_t {
    Driver = 1,
    Device,
    Context,
    Queue,
    List,
    Module,
    BuildLog,
    Kernel,
    EventPool,
    Event,
    Fence
};

class Registry {
public:
    void add(const void* handle, Kind kind);
    void remove(const void* handle);
    bool has(const void* handle, Kind kind) const;

private:
    mutable std::shared_mutex mutex_;
    std::unordered_map<const void*, Kind> live_;
};

Registry& registry();

// Turns a handle into its object, or sets `err` (null → INVALID_NULL_HANDLE, unknown or
// destroyed → INVALID_ARGUMENT) and returns nullptr.
template <class T, class H>
T* lookup(H handle, ze_result_t& err) {
    if (handle == nullptr) {
        err = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
        return nullptr;
    }
    if (!registry().has(handle, T::kKind)) {
        err = ZE_RESULT_ERROR_INVALID_ARGUMENT;
        return nullptr;
    }
    return reinterpret_cast<T*>(handle);
}

// lookup() for a query that writes through `out`: a live handle first, then a non-null
// `out` (else INVALID_NULL_POINTER), the order of the validation layer's checks.
template <class T, class H, class P>
T* lookupQuery(H handle, const P* out, ze_result_t& err) {
    T* object = lookup<T>(handle, err);
    if (object != nullptr && out == nullptr) {
        err = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
        return nullptr;
    }
    return object;
}

// An object made on a context (queue, command list, module, event pool: those with a `context`)
// counts as its dependant from publish to the end of its destroy (leaveContext): a context
// destroyed while any lives keeps its memory and OpenCL context for them until the last one goes.
template <class T>
void publish(T* object) {
    if constexpr (requires { object->context->dependants; }) ++object->context->dependants;
    registry().add(object, T::kKind);
}
template <class T>
void retire(T* object) {
    registry().remove(object);
}
struct Context;
// The last step of a dependant's destroy, after its last use of `ctx` (memory.cpp): one
// dependant fewer, and the context freed with the last one where zeContextDestroy retired it.
void leaveContext(Context* ctx);

ze_result_t fromCl(cl_int err);

// ZECL_FAULT (see README; fault_plan.hpp): makes the Nth call of a kind fail.
bool faultNow(Fault kind);

uint64_t hostNowNs();

struct Driver;

struct Device {
    static constexpr Kind kKind = Kind::Device;
    Driver* driver = nullptr;
    cl_device_id cl = nullptr;
    uint32_t ordinal = 0;  // index within the driver

    std::string name;
    ze_device_type_t type = ZE_DEVICE_TYPE_GPU;
    uint32_t vendorId = 0;
    uint32_t clVersion = 0;  // major * 100 + minor
    cl_uint computeUnits = 1;
    cl_uint clockMHz = 0;
    size_t maxWorkGroupSize = 1;
    std::array<size_t, 3> maxWorkItemSizes{1, 1, 1};
    cl_ulong localMemSize = 0;
    cl_ulong globalMemSize = 0;
    cl_ulong maxAllocSize = 0;
    cl_ulong globalCacheSize = 0;
    cl_uint baseAddrAlign = 128;  // bytes
    cl_device_svm_capabilities svm = 0;
    cl_device_fp_config fp16 = 0, fp32 = 0, fp64 = 0;
    bool ilSpirv = false;
    uint32_t spirvVersion = 0;  // ZE_MAKE_VERSION form
    size_t maxParameterSize = 0;
    size_t printfBufferSize = 0;
    std::vector<uint32_t> subGroupSizes;
    const char* subGroupSizesReason = "";  // why subGroupSizes is empty, when it is
    bool subGroupProbe = false;            // core OpenCL sub-groups: sizes asked of a probe kernel
    std::once_flag subGroupProbeOnce;
    uint32_t memoryBusWidth = 0;  // bits; 0 when nothing on the system says (see driver.cpp)
    uint32_t simdWidth = 1;
    uint32_t registersPerSm = 0;  // NVIDIA (CL_DEVICE_REGISTERS_PER_BLOCK_NV): the SM's register file; 0 = unknown
    uint32_t computeCapabilityMajor = 0;  // NVIDIA (CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV); 0 = unknown
    uint32_t sharedMemoryPerSm = 0;       // NVIDIA: bytes, by compute capability (nvidia_sm.hpp); 0 = unknown
    uint64_t timerResolutionNs = 1;
    bool hostUnifiedMemory = false;
    bool ecc = false;
    bool int64Atomics = false;
    bool hostTimer = false;  // clGetDeviceAndHostTimer works
    ze_device_uuid_t uuid{};
    std::atomic<bool> cloneWorks{true};

    // What zecl can promise about work-groups of one kernel being resident at once, for
    // zeKernelSuggestMaxCooperativeGroupCount (module.cpp, cooperativeGroupLimit):
    //   ThreadPerGroup: PoCL's pthread/cpu device: one worker thread per compute unit, and a
    //                   grid of at most that many groups gets one OS thread per group;
    //   NvidiaSm:       NVIDIA GPU: groups per SM bounded by the kernel's registers (ptxas'
    //                   count where the build log has it, else its work-group limit), 1024
    //                   threads and local memory, times the SMs;
    //   GpuCu:          another GPU: one group per compute unit;
    //   Single:         no promise beyond one group (Intel's CPU runtime runs groups as TBB
    //                   tasks, which TBB runs concurrently only as threads happen to be free).
    enum class Residency { Single, ThreadPerGroup, NvidiaSm, GpuCu };
    Residency residency = Residency::Single;
};

struct Driver {
    static constexpr Kind kKind = Kind::Driver;
    cl_platform_id platform = nullptr;
    std::string platformName;
    std::string platformVersion;
    std::vector<std::unique_ptr<Device>> devices;
    ze_driver_uuid_t uuid{};
    uint32_t driverVersion = 0;
    // One cl_context shared by every L0 context over all of the driver's devices, so kernels,
    // events and memory of one such context work with another's lists, as on Intel's driver
    // (made on first use, kept for the process).
    std::mutex sharedMutex;
    cl_context shared = nullptr;
    std::vector<struct Context*> sharing;  // live contexts on `shared`, under sharedMutex

    // Cooperative launches of this driver run one at a time: two spinning grids sharing one
    // device (or PoCL's one thread pool behind several devices) could each wait for groups
    // the other holds. The queue of the latest cooperative launch; the next one waits for it.
    std::mutex cooperativeMutex;
    cl_context lastCooperativeContext = nullptr;
    cl_command_queue lastCooperativeQueue = nullptr;  // retained; its own launches need no wait
};

struct Allocation {
    void* clBase = nullptr;  // what clSVMAlloc returned (differs from the user pointer when over-aligned)
    size_t reserved = 0;     // what clSVMAlloc gave from clBase: alignment prefix, size and page padding
    uintptr_t begin = 0;
    size_t size = 0;
    ze_memory_type_t type = ZE_MEMORY_TYPE_UNKNOWN;
    struct Device* device = nullptr;
    uint64_t id = 0;
};

struct Context {
    static constexpr Kind kKind = Kind::Context;
    Driver* driver = nullptr;
    cl_context cl = nullptr;
    std::vector<Device*> devices;
    std::mutex allocMutex;
    std::map<uintptr_t, Allocation> allocs;  // keyed by user begin address
    // Every cl queue of this context (L0 queues and immediate lists): zeMemFree waits for them,
    // so memory freed after a failed submission is never still in use by work in flight.
    std::mutex queuesMutex;
    std::vector<cl_command_queue> queues;
    // Live queues, command lists, modules and event pools made on it (see publish), and whether
    // zeContextDestroy has retired its handle: then the last dependant's destroy frees it
    // (leaveContext), at most once (`released`).
    std::atomic<uint32_t> dependants{0};
    std::atomic<bool> destroyed{false};
    std::atomic<bool> released{false};

    bool hasDevice(const Device* d) const;
    // The allocation containing ptr (interior pointers included); allocMutex held by the caller.
    const Allocation* findLocked(const void* ptr) const;
    // Whether the host (and so another cl_context's queue) may read the memory at ptr directly:
    // none of this context's allocations, or one that is host memory (see memory.cpp).
    bool hostReachable(const void* ptr);
};

// The one bound check of every entry point that names memory by pointer and size (copies,
// fills, prefetch and advice, ranged barriers, residency, the results a command writes, the
// counts an indirect launch reads): the bytes [ptr + offset, ptr + offset + size) are refused
// with INVALID_SIZE where they wrap around the address space, or start in memory zecl allocated
// (an allocation of `ctx` or of a context sharing its cl_context, its alignment prefix and page
// padding included) without ending within that allocation. Memory zecl did not allocate is the
// application's host memory, which zecl cannot bound. Zero bytes are always accepted.
ze_result_t checkRange(Context* ctx, const void* ptr, size_t offset, size_t size);
inline ze_result_t checkRange(Context* ctx, const void* ptr, size_t size) { return checkRange(ctx, ptr, 0, size); }

struct SpirvGlobalAddress {
    std::string name;
    uint64_t bytes = 0;
    void* address = nullptr;
};

// What the objects made on one device of a context (modules, queues, command lists) start with:
// their kind (for lookup()) and where they live.
template <Kind K>
struct OnDevice {
    static constexpr Kind kKind = K;
    Context* context = nullptr;
    Device* device = nullptr;
};

struct Module : OnDevice<Kind::Module> {
    cl_program program = nullptr;
    ze_module_format_t format = ZE_MODULE_FORMAT_NATIVE;
    std::vector<uint8_t> il;      // the SPIR-V the program was built from (IL or IL container), else empty
    std::vector<uint8_t> native;  // what zeModuleGetNativeBinary hands back (see module.cpp)
    std::vector<std::string> kernelNames;
    std::map<std::string, uint32_t> registers;  // per kernel, from ptxas' build log (NVIDIA); absent = unknown
    // Program-scope globals found by the address kernel (spirv_args.hpp), where the device
    // has no cl_intel_global_variable_pointers; their addresses are read on first use.
    bool globalAddressKernel = false;
    std::vector<SpirvGlobalAddress> globals;
    std::once_flag globalsRead;
    cl_int globalsError = CL_SUCCESS;
};

// Loader workaround: when zeModuleCreate fails, the loader (1.8.12 and later) hands the
// driver's raw build-log handle to the application without wrapping it, then treats it
// as its own {handle, dditable*} object in zeModuleBuildLogGetString/Destroy. A build log
// therefore starts with exactly that layout, pointing at a table of zecl's own entries.
struct BuildLog {
    static constexpr Kind kKind = Kind::BuildLog;
    const void* loaderHandle = this;
    const void* loaderDdi = nullptr;  // see loaderShimTable()
    std::string text;
};

// Records the API version the loader asked the tables for: the loader's own table layout
// is that version's, so the shim is only offered when it equals zecl's header version.
void noteLoaderApiVersion(ze_api_version_t version);
const void* loaderShimTable();

enum class ArgKind : uint8_t { Pointer, Local, Value };

struct ArgSlot {
    ArgKind kind = ArgKind::Value;
    bool set = false;
    size_t size = 0;                // by-value size or __local bytes
    size_t paramSize = 0;           // by-value: the parameter's size once OpenCL took one (0 = not yet known)
    std::vector<uint8_t> value;     // by-value bytes
    const void* pointer = nullptr;  // pointer args
};

struct Kernel {
    static constexpr Kind kKind = Kind::Kernel;
    Module* module = nullptr;  // for its identity only: kernels may outlive a destroyed module
    Device* device = nullptr;
    cl_context clContext = nullptr;  // retained: the module's (and its context's) may be gone
    cl_program program = nullptr;    // retained, for the clCreateKernel fallback of snapshots
    std::string name;
    cl_kernel cl = nullptr;  // holds the current arguments; immediate lists enqueue it directly
    std::vector<ArgSlot> args;
    std::array<uint32_t, 3> groupSize{1, 1, 1};
    std::array<uint32_t, 3> globalOffset{0, 0, 0};  // zeKernelSetGlobalOffsetExp
    std::array<size_t, 3> requiredGroupSize{0, 0, 0};
    size_t maxGroupSize = 1;
    size_t preferredMultiple = 1;
    cl_ulong localMemSize = 0;
    cl_ulong privateMemSize = 0;
    uint32_t registers = 0;  // per work-item, from the module's build log; 0 = unknown
    std::string attributes;
    ze_kernel_indirect_access_flags_t indirect = 0;

    // Regular lists record a private cl_kernel per launch so later argument changes do not
    // leak into recorded commands. Appends with unchanged arguments share one snapshot.
    uint64_t generation = 0;
    cl_kernel snapshot = nullptr;
    uint64_t snapshotGeneration = ~0ull;
};

struct EventPool;

struct Event {
    static constexpr Kind kKind = Kind::Event;
    EventPool* pool = nullptr;
    uint32_t index = 0;
    std::mutex mutex;
    bool hostSignaled = false;
    cl_event last = nullptr;  // the latest enqueued command that signals this event
    uint64_t tickNs = 1;      // timer resolution of the device that signalled `last`
    cl_event gate = nullptr;  // user event that waiters enqueued before any signaller was known wait on
    // The handle's reference (until zeEventDestroy or its pool's destroy: then `destroyed`) and
    // one per command of a regular list that names the event; the last one deletes it, so a list
    // never points at freed memory, and executing one that names a destroyed event is refused.
    std::atomic<uint32_t> refs{1};
    std::atomic<bool> destroyed{false};
};

struct EventPool {
    static constexpr Kind kKind = Kind::EventPool;
    Context* context = nullptr;
    ze_event_pool_flags_t flags = 0;
    uint32_t count = 0;
    std::mutex mutex;
    std::vector<Event*> slots;
};

// One recorded command of a regular list (or the transient description of an
// immediate-list append).
enum class Op : uint8_t {
    Launch,
    LaunchIndirect,  // group count read from device memory when the command is reached
    Copy,
    CopyRegion,
    Fill,
    Barrier,
    Signal,
    Wait,
    Reset,
    Timestamp,
    KernelTimestamps  // zeCommandListAppendQueryKernelTimestamps
};

// A 3-D region copy: `dst`/`src` point at the regions' first bytes.
struct CopyRect {
    size_t width = 0, height = 1, depth = 1;  // bytes, rows, slices
    size_t dstPitch = 0, dstSlicePitch = 0, srcPitch = 0, srcSlicePitch = 0;
};

struct Command {
    Op op = Op::Barrier;
    bool cooperative = false;        // Launch: zeCommandListAppendLaunchCooperativeKernel
    Driver* driver = nullptr;        // cooperative launches: whose launches are serialised
    cl_context clContext = nullptr;  // cooperative launches: the list's OpenCL context
    cl_kernel kernel = nullptr;      // owned (retained) in regular lists
    std::array<size_t, 3> global{0, 0, 0};
    std::array<size_t, 3> local{1, 1, 1};
    std::array<size_t, 3> offset{0, 0, 0};          // global offset (ZE_experimental_global_offset)
    const ze_group_count_t* groupCounts = nullptr;  // LaunchIndirect: device memory, read at execution
    CopyRect rect;                                  // CopyRegion
    std::vector<Event*> queried;                    // KernelTimestamps: the events read
    std::vector<size_t> offsets;                    // KernelTimestamps: destination offsets (empty: packed)
    void* dst = nullptr;
    const void* src = nullptr;
    size_t size = 0;
    std::vector<uint8_t> pattern;  // fill pattern bytes, or the expanded source of an emulated fill
    uint64_t tickNs = 1;           // ns per tick of the list's device timer
    Event* target = nullptr;       // Reset: the event to reset
    Event* signal = nullptr;
    std::vector<Event*> waits;
};

struct Queue : OnDevice<Kind::Queue> {
    cl_command_queue cl = nullptr;
    bool synchronous = false;
};

struct List : OnDevice<Kind::List> {
    bool immediate = false;
    bool closed = false;
    bool synchronous = false;
    cl_command_queue cl = nullptr;  // immediate lists only
    std::vector<Command> commands;
};

struct Fence {
    static constexpr Kind kKind = Kind::Fence;
    Queue* queue = nullptr;
    std::mutex mutex;
    cl_event marker = nullptr;
};

// Command execution (command.cpp), shared by regular-list replay and immediate appends.
// `waits` is passed apart from the command so immediate appends need no allocation.
ze_result_t enqueueCommand(cl_command_queue q, const Command& c, std::span<Event* const> waits);
// The largest grid (total groups) of `k` at its current group size and local arguments that
// the device keeps resident at once (Device::Residency); an error where `k` cannot launch.
ze_result_t cooperativeGroupLimit(const Kernel& k, uint32_t& groups);
void releaseCommand(Command& c);
// The references (Event::refs) a regular list's command holds on the events it names.
void holdEvents(const Command& c);
void dropEvents(const Command& c);
// Whether the command names an event destroyed since it was recorded.
bool namesDestroyedEvent(const Command& c);
// Drops one reference of `e` (Event::refs), deleting it with the last.
void releaseEvent(Event* e);
// Whether `k`'s local memory (its own and its local arguments') fits its device, else
// UNSUPPORTED_SIZE: an OpenCL runtime may abort at enqueue rather than refuse (PoCL asserts).
ze_result_t checkLocalMemory(const Kernel& k);

}  // namespace zecl
