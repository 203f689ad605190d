// Modules (source bundles or SPIR-V built by OpenCL) and kernels.
#include "api.hpp"
#include "nvidia_sm.hpp"
#include "objects.hpp"
#include "ptxas_log.hpp"
#include "spirv_args.hpp"

#include <zecl/source_bundle.h>
#include <ze_ddi.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <span>
#include <sstream>

namespace zecl {
namespace {

std::string programBuildLog(cl_program program, cl_device_id dev) {
    size_t n = 0;
    if (clGetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
    std::string s(n, '\0');
    clGetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr);
    s.resize(std::strlen(s.c_str()));
    return s;
}

// A successful build's log holds its diagnostics (the L0 build log is for the build's
// messages: warnings, notes, zecl's own remarks). Intel's CPU runtime adds progress lines
// ("Compilation started", "Device build done", ...), its backend options and vectorizer
// statistics on every build; those say nothing about the module and are dropped, so a clean
// build has an empty log as on Intel's GPU driver and PoCL. Any other line stays (a compiler
// diagnostic and the source excerpt and caret under it), and a failed build keeps its whole log.
bool isProgressLine(const std::string& line) {
    static const char* const exact[] = {"Compilation started",  "Compilation done",  "Linking started", "Linking done",
                                        "Device build started", "Device build done", "Done.",           "Done"};
    for (const char* e : exact)
        if (line == e) return true;
    auto starts = [&](const char* p) { return line.rfind(p, 0) == 0; };
    auto ends = [&](const std::string& s) {
        return line.size() >= s.size() && line.compare(line.size() - s.size(), s.size(), s) == 0;
    };
    if (starts("Options used by backend compiler:")) return true;
    // Backend statistics carry no source location ("remark: <unknown>:0:0: 9 instructions in function").
    if (starts("remark: <unknown>:0:0:")) return true;
    // The vectorizer's report: Kernel "k" was successfully vectorized (8) / was not vectorized.
    if (starts("Kernel \"") &&
        (line.find("\" was successfully vectorized") != std::string::npos || ends("\" was not vectorized")))
        return true;
    return false;
}

std::string diagnosticsOf(const std::string& log) {
    std::istringstream in(log);
    std::string line, out;
    while (std::getline(in, line)) {
        std::string bare = line;
        while (!bare.empty() && (bare.back() == '\r' || bare.back() == ' ')) bare.pop_back();
        if (bare.empty() || isProgressLine(bare)) continue;
        out += line;
        out += '\n';
    }
    return out;
}

void giveBuildLog(ze_module_build_log_handle_t* phBuildLog, std::string text) {
    if (phBuildLog == nullptr) return;
    auto* log = new BuildLog;
    log->loaderDdi = loaderShimTable();
    log->text = std::move(text);
    publish(log);
    *phBuildLog = reinterpret_cast<ze_module_build_log_handle_t>(log);
}

// pBuildFlags are IGC options in L0; those with the "-ze-" prefix mean nothing to an
// OpenCL compiler and would fail the build, so they are dropped. The rest pass through.
std::string filterBuildFlags(const char* flags) {
    if (flags == nullptr) return {};
    std::istringstream in(flags);
    std::string tok, out;
    while (in >> tok) {
        if (tok.rfind("-ze-", 0) == 0) continue;
        out += ' ';
        out += tok;
    }
    return out;
}

std::vector<std::string> kernelNamesOf(cl_program program) {
    size_t n = 0;
    std::vector<std::string> names;
    if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &n) != CL_SUCCESS || n == 0) return names;
    std::string s(n, '\0');
    clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, n, s.data(), nullptr);
    s.resize(std::strlen(s.c_str()));
    std::istringstream in(s);
    std::string name;
    while (std::getline(in, name, ';'))
        if (!name.empty()) names.push_back(name);
    return names;
}

ze_result_t copyString(const std::string& s, size_t* pSize, char* out) {
    if (pSize == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (out == nullptr || *pSize == 0) {
        *pSize = s.size() + 1;
        return ZE_RESULT_SUCCESS;
    }
    size_t n = std::min(*pSize - 1, s.size());
    std::memcpy(out, s.data(), n);
    out[n] = '\0';
    *pSize = n + 1;
    return ZE_RESULT_SUCCESS;
}

template <class T>
T kernelWgInfo(cl_kernel k, cl_device_id d, cl_kernel_work_group_info what) {
    T v{};
    clGetKernelWorkGroupInfo(k, d, what, sizeof(T), &v, nullptr);
    return v;
}

// CL_KERNEL_ATTRIBUTES in one form whatever the platform: "name(args)" separated by single
// spaces, no "__attribute__((...))" wrapper and no blanks inside (PoCL gives
// "__attribute__((work_group_size_hint(1, 1, 1 )))", Level Zero drivers
// "work_group_size_hint(1,1,1)").
std::string normalizeAttributes(const std::string& in) {
    std::string out, cur;
    int depth = 0;
    auto flush = [&] {
        const std::string wrap = "__attribute__((";
        if (cur.rfind(wrap, 0) == 0 && cur.size() >= wrap.size() + 2 && cur.ends_with("))"))
            cur = cur.substr(wrap.size(), cur.size() - wrap.size() - 2);
        if (!cur.empty()) out += (out.empty() ? "" : " ") + cur;
        cur.clear();
    };
    for (char ch : in) {
        if (ch == '(') ++depth;
        if (ch == ')') --depth;
        if (std::isspace(static_cast<unsigned char>(ch))) {
            if (depth <= 0) flush();
            continue;
        }
        cur += ch;
    }
    flush();
    return out;
}

// A specialization constant: its id, size (from the SPIR-V) and value bytes.
struct SpecConstant {
    uint32_t id = 0;
    uint32_t size = 0;
    std::vector<uint8_t> value;
};

cl_int setSpecConstant(cl_program program, const Device* dev, const SpecConstant& c) {
    if (dev->clVersion < 220) return CL_INVALID_OPERATION;  // clSetProgramSpecializationConstant is 2.2
    return clSetProgramSpecializationConstant(program, c.id, c.size, c.value.data());
}

// The zecl IL container: the native binary of a module built from SPIR-V.
//   "ZECLSPV1", uint32 LE options length, uint32 LE IL length, uint32 LE constant count,
//   the options, the SPIR-V, then per constant uint32 LE id, uint32 LE size, the value bytes.
constexpr char kIlContainerMagic[8] = {'Z', 'E', 'C', 'L', 'S', 'P', 'V', '1'};

struct IlContainerView {
    std::string options;
    std::span<const uint8_t> il;
    std::vector<SpecConstant> constants;
};

void putU32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

uint32_t getU32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

std::vector<uint8_t> makeIlContainer(const std::string& options, std::span<const uint8_t> il,
                                     const std::vector<SpecConstant>& constants) {
    std::vector<uint8_t> out(kIlContainerMagic, kIlContainerMagic + 8);
    putU32(out, uint32_t(options.size()));
    putU32(out, uint32_t(il.size()));
    putU32(out, uint32_t(constants.size()));
    out.insert(out.end(), options.begin(), options.end());
    out.insert(out.end(), il.begin(), il.end());
    for (const SpecConstant& c : constants) {
        putU32(out, c.id);
        putU32(out, c.size);
        out.insert(out.end(), c.value.begin(), c.value.begin() + c.size);
    }
    return out;
}

// Rejects anything whose lengths do not add up to the size exactly.
bool parseIlContainer(std::span<const uint8_t> in, IlContainerView& view) {
    if (in.size() < 20 || std::memcmp(in.data(), kIlContainerMagic, 8) != 0) return false;
    const uint64_t optLen = getU32(&in[8]), ilLen = getU32(&in[12]), count = getU32(&in[16]);
    uint64_t at = 20;
    if (at + optLen + ilLen > in.size() || ilLen == 0) return false;
    view.options.assign(reinterpret_cast<const char*>(&in[at]), optLen);
    at += optLen;
    view.il = in.subspan(at, ilLen);
    at += ilLen;
    for (uint64_t i = 0; i < count; ++i) {
        if (at + 8 > in.size()) return false;
        SpecConstant c{getU32(&in[at]), getU32(&in[at + 4]), {}};
        at += 8;
        if (c.size == 0 || c.size > 8 || at + c.size > in.size()) return false;
        c.value.assign(&in[at], &in[at] + c.size);
        at += c.size;
        view.constants.push_back(std::move(c));
    }
    return at == in.size();
}

// An extension function of the device's platform, or null when the device does not list
// the extension or the platform does not give the function.
void* deviceExtensionFunction(const Device* dev, const char* extension, const char* function) {
    size_t n = 0;
    if (clGetDeviceInfo(dev->cl, CL_DEVICE_EXTENSIONS, 0, nullptr, &n) != CL_SUCCESS || n == 0) return nullptr;
    std::string ext(n, '\0');
    clGetDeviceInfo(dev->cl, CL_DEVICE_EXTENSIONS, n, ext.data(), nullptr);
    if (ext.find(extension) == std::string::npos) return nullptr;
    return clGetExtensionFunctionAddressForPlatform(dev->driver->platform, function);
}

std::atomic<ze_api_version_t> loaderApiVersion{ZE_API_VERSION_FORCE_UINT32};

// Runs the module's address kernel once on a queue of its own and keeps what it wrote.
cl_int readGlobalAddresses(Module& m) {
    cl_int e = CL_SUCCESS;
    cl_kernel k = clCreateKernel(m.program, kGlobalAddressKernel, &e);
    if (e != CL_SUCCESS) return e;
    std::vector<uint64_t> addresses(m.globals.size(), 0);
    cl_mem out = clCreateBuffer(m.context->cl, CL_MEM_WRITE_ONLY, addresses.size() * 8, nullptr, &e);
    cl_command_queue q =
        e == CL_SUCCESS ? clCreateCommandQueueWithProperties(m.context->cl, m.device->cl, nullptr, &e) : nullptr;
    const size_t one = 1;
    if (e == CL_SUCCESS) e = clSetKernelArg(k, 0, sizeof(out), &out);
    if (e == CL_SUCCESS) e = clEnqueueNDRangeKernel(q, k, 1, nullptr, &one, &one, 0, nullptr, nullptr);
    if (e == CL_SUCCESS)
        e = clEnqueueReadBuffer(q, out, CL_TRUE, 0, addresses.size() * 8, addresses.data(), 0, nullptr, nullptr);
    if (q) clReleaseCommandQueue(q);
    if (out) clReleaseMemObject(out);
    clReleaseKernel(k);
    for (size_t i = 0; e == CL_SUCCESS && i < m.globals.size(); ++i)
        m.globals[i].address = reinterpret_cast<void*>(uintptr_t(addresses[i]));
    return e;
}

// What ModuleCreate makes of its input, read once and built from.
struct ModuleInput {
    bool isBundle = false;  // a zecl source bundle; else SPIR-V, given as such or in an IL container
    std::string options;    // the input's own options (a bundle's or an IL container's)
    std::vector<SpecConstant> constants;
    std::string ignoredIds;  // specialization constant ids the module does not declare
    std::span<const uint8_t> il;
    std::optional<GlobalAddressModule> withAddresses;
    std::vector<uint8_t> lowered;           // il with spec_constant marker values, where it has markers
    std::span<const uint8_t> source;        // what is built: lowered or il
    std::vector<SpecConstant> clConstants;  // the constants OpenCL sets (SpecId ones)
    std::string loweredIds;
};

// The application's specialization constants for a module given as SPIR-V, each sized by the
// module's declaration.
ze_result_t takeSpecConstants(const ze_module_constants_t* pc, ModuleInput& in) {
    auto sizes = pc && pc->numConstants ? spirvSpecConstantSizes(in.il) : std::map<uint32_t, uint32_t>{};
    if (!sizes.empty() || (pc && pc->numConstants))
        for (auto [id, bytes] : spirvSpecConstantMarkers(in.il)) sizes.emplace(id, bytes);
    for (uint32_t i = 0; pc != nullptr && i < pc->numConstants; ++i) {
        if (pc->pConstantValues[i] == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
        auto size = sizes.find(pc->pConstantIds[i]);
        if (size == sizes.end()) {
            // Not in the module: ignored, as Intel's driver does (the conformance suite
            // passes ids its module lacks), and said in the build log.
            in.ignoredIds += " " + std::to_string(pc->pConstantIds[i]);
            continue;
        }
        auto* v = static_cast<const uint8_t*>(pc->pConstantValues[i]);
        in.constants.push_back({pc->pConstantIds[i], size->second, std::vector<uint8_t>(v, v + size->second)});
    }
    return ZE_RESULT_SUCCESS;
}

// OpenCL C++ spec_constant markers (no SpecId; see spirv_args.hpp) take their values in the
// module's initialisers; the rest go to clSetProgramSpecializationConstant.
void lowerMarkerConstants(ModuleInput& in) {
    in.clConstants = in.constants;
    const auto markers = in.constants.empty() ? std::map<uint32_t, uint32_t>{} : spirvSpecConstantMarkers(in.il);
    if (!markers.empty()) {
        const auto declared = spirvSpecConstantSizes(in.il);
        std::map<uint32_t, std::vector<uint8_t>> values;
        in.clConstants.clear();
        for (const SpecConstant& c : in.constants)
            if (markers.count(c.id) && !declared.count(c.id))
                values[c.id] = c.value;
            else
                in.clConstants.push_back(c);
        in.lowered = spirvWithMarkerValues(in.il, values);
        if (in.lowered.empty()) {
            in.clConstants = in.constants;
        } else {
            for (const auto& [id, v] : values) in.loweredIds += " " + std::to_string(id);
        }
    }
    in.source = in.lowered.empty() ? in.il : std::span<const uint8_t>(in.lowered);
}

// The OpenCL program of the module's input: from a source bundle's source, else from SPIR-V
// (given as such or inside an IL container, which carries its build options and
// specialization constants, so the rebuild is the same program).
ze_result_t createProgram(const Context& ctx, const Device& dev, const ze_module_desc_t& desc,
                          ze_module_build_log_handle_t* phBuildLog, ModuleInput& in, cl_program& program) {
    auto* bytes = static_cast<const uint8_t*>(desc.pInputModule);
    const bool native = desc.format == ZE_MODULE_FORMAT_NATIVE;
    zecl_source_bundle_view view{};
    IlContainerView container{};
    in.isBundle = native && zecl_source_bundle_parse(desc.pInputModule, desc.inputSize, &view);
    const bool isContainer = native && !in.isBundle && parseIlContainer({bytes, desc.inputSize}, container);
    if (native && !in.isBundle && !isContainer) {
        giveBuildLog(phBuildLog,
                     "zecl: native module is neither a zecl source bundle (magic ZECLSRC1) nor a zecl IL container "
                     "(magic ZECLSPV1, what zeModuleGetNativeBinary gives for a SPIR-V module)");
        return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    cl_int e = CL_SUCCESS;
    if (in.isBundle) {
        in.options.assign(view.options, view.options_size);
        const char* src = view.source;
        size_t len = view.source_size;
        program = clCreateProgramWithSource(ctx.cl, 1, &src, &len, &e);
    } else {
        if (isContainer) {
            in.options = container.options;
            in.il = container.il;
            in.constants = container.constants;
        } else {
            in.il = {bytes, desc.inputSize};
            if (const ze_result_t r = takeSpecConstants(desc.pConstants, in); r != ZE_RESULT_SUCCESS) return r;
        }
        if (!dev.ilSpirv) {
            giveBuildLog(phBuildLog,
                         "zecl: this OpenCL device accepts no SPIR-V (spirvVersionSupported = 0); "
                         "use the source bundle (ZE_MODULE_FORMAT_NATIVE)");
            return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
        }
        lowerMarkerConstants(in);
        // Without cl_intel_global_variable_pointers, a CPU device (whose global addresses
        // zecl's copies can use) builds the module with the address kernel.
        if (dev.type == ZE_DEVICE_TYPE_CPU && !deviceExtensionFunction(&dev, "cl_intel_global_variable_pointers",
                                                                       "clGetDeviceGlobalVariablePointerINTEL"))
            in.withAddresses = spirvWithGlobalAddressKernel(in.source);
        const std::span<const uint8_t> built =
            in.withAddresses ? std::span<const uint8_t>(in.withAddresses->spirv) : in.source;
        program = clCreateProgramWithIL(ctx.cl, built.data(), built.size(), &e);
    }
    if (e != CL_SUCCESS) {
        giveBuildLog(phBuildLog, "zecl: OpenCL refused the module input (error " + std::to_string(e) + ")");
        return e == CL_INVALID_VALUE ? ZE_RESULT_ERROR_INVALID_NATIVE_BINARY : fromCl(e);
    }
    return ZE_RESULT_SUCCESS;
}

// Sets the program's specialization constants and builds it; on failure releases the program
// and gives the build log. `log` is the build log of a program that built.
ze_result_t buildProgram(const Context& ctx, const Device& dev, const std::string& buildOptions,
                         ze_module_build_log_handle_t* phBuildLog, ModuleInput& in, cl_program& program,
                         std::string& log) {
    cl_int e = CL_SUCCESS;
    for (const SpecConstant& c : in.clConstants) {
        if ((e = setSpecConstant(program, &dev, c)) != CL_SUCCESS) {
            clReleaseProgram(program);
            giveBuildLog(phBuildLog, "zecl: clSetProgramSpecializationConstant(id " + std::to_string(c.id) +
                                         ") failed with error " + std::to_string(e) +
                                         (dev.clVersion < 220 ? " (it needs OpenCL 2.2 or later)" : ""));
            return dev.clVersion < 220 ? ZE_RESULT_ERROR_UNSUPPORTED_FEATURE : ZE_RESULT_ERROR_INVALID_ARGUMENT;
        }
    }
    if (faultNow(Fault::Module)) {
        clReleaseProgram(program);
        giveBuildLog(phBuildLog, "zecl fault injection: module build failed on purpose (ZECL_FAULT)");
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    e = clBuildProgram(program, 1, &dev.cl, buildOptions.c_str(), nullptr, nullptr);
    if (e != CL_SUCCESS && in.withAddresses) {
        // The module as given, should the added kernel be what the compiler refused.
        clReleaseProgram(program);
        in.withAddresses.reset();
        program = clCreateProgramWithIL(ctx.cl, in.source.data(), in.source.size(), &e);
        for (size_t i = 0; e == CL_SUCCESS && i < in.clConstants.size(); ++i)
            e = setSpecConstant(program, &dev, in.clConstants[i]);
        if (e == CL_SUCCESS) e = clBuildProgram(program, 1, &dev.cl, buildOptions.c_str(), nullptr, nullptr);
    }
    log = program ? programBuildLog(program, dev.cl) : std::string();
    if (e != CL_SUCCESS) {
        if (program) clReleaseProgram(program);
        if (log.empty())
            log = "zecl: clBuildProgram failed with error " + std::to_string(e) + " (options:" + buildOptions + ")";
        giveBuildLog(phBuildLog, std::move(log));
        return e == CL_BUILD_PROGRAM_FAILURE || e == CL_INVALID_BUILD_OPTIONS ? ZE_RESULT_ERROR_MODULE_BUILD_FAILURE
                                                                              : fromCl(e);
    }
    return ZE_RESULT_SUCCESS;
}

// The build log the application gets: the compiler's diagnostics (less ptxas' register
// counts, taken into `registers`) and what zecl did with the specialization constants.
std::string moduleBuildLog(std::string log, bool ptxasLog, const ModuleInput& in,
                           std::map<std::string, uint32_t>& registers) {
    if (ptxasLog) {
        std::string rest;
        registers = ptxasRegisters(log, rest);
        log = std::move(rest);
    }
    log = diagnosticsOf(log);
    if (!in.ignoredIds.empty())
        log = "zecl: specialization constants ignored, the module declares no SpecId" + in.ignoredIds + "\n" + log;
    if (!in.loweredIds.empty())
        log = "zecl: specialization constants" + in.loweredIds +
              " set in the module's OpenCL C++ spec_constant initialisers (cl::__spirv::OpSpecConstant, no SpecId)\n" +
              log;
    return log;
}

Module* newModule(Context* ctx, Device* dev, const ze_module_desc_t& desc, cl_program program, const ModuleInput& in,
                  const std::string& flags, std::map<std::string, uint32_t> registers) {
    auto* m = new Module;
    m->context = ctx;
    m->device = dev;
    m->program = program;
    m->format = desc.format;
    if (in.isBundle) {
        auto* bytes = static_cast<const uint8_t*>(desc.pInputModule);
        m->native.assign(bytes, bytes + desc.inputSize);
    } else {
        m->il.assign(in.il.begin(), in.il.end());
        m->native = makeIlContainer(in.options + flags, in.il, in.constants);
    }
    m->kernelNames = kernelNamesOf(program);
    m->registers = std::move(registers);
    if (in.withAddresses) {
        m->globalAddressKernel = true;
        std::erase(m->kernelNames, std::string(kGlobalAddressKernel));
        for (const SpirvGlobal& g : in.withAddresses->globals) m->globals.push_back({g.name, g.bytes, nullptr});
    }
    return m;
}

// What a refused clSetKernelArg answers.
ze_result_t fromClArg(cl_int e) { return e == CL_INVALID_ARG_VALUE ? ZE_RESULT_ERROR_INVALID_ARGUMENT : fromCl(e); }

// Where by-value argument `index` of `k` takes `argSize` bytes: its size (paramSize) is learnt
// from OpenCL with zeroed bytes of the size given, never the caller's, so a wrong size is
// refused (INVALID_KERNEL_ARGUMENT_SIZE) before anything is read from the value. A size
// below 8 that OpenCL refuses may be a narrower scalar for an 8-byte parameter (see the caller).
ze_result_t learnParamSize(Kernel& k, uint32_t index, size_t argSize) {
    ArgSlot& slot = k.args[index];
    if (slot.paramSize == 0) {
        if (argSize == 0 || argSize > std::max<size_t>(k.device->maxParameterSize, 8))
            return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
        const std::vector<uint8_t> zeros(std::max<size_t>(argSize, 8), 0);
        for (size_t size : {argSize, size_t(8)}) {
            const cl_int e = clSetKernelArg(k.cl, index, size, zeros.data());
            if (e == CL_SUCCESS) {
                slot.paramSize = size;
                break;
            }
            if (e != CL_INVALID_ARG_SIZE) return fromClArg(e);
            if (argSize >= 8) break;
        }
    }
    const bool fits = argSize == slot.paramSize || (argSize < slot.paramSize && slot.paramSize == 8);
    return fits ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
}

}  // namespace

void noteLoaderApiVersion(ze_api_version_t version) { loaderApiVersion = version; }

ze_result_t checkLocalMemory(const Kernel& k) {
    cl_ulong total = k.localMemSize;
    for (const ArgSlot& a : k.args)
        if (a.kind == ArgKind::Local) total += a.size;
    return total > k.device->localMemSize ? ZE_RESULT_ERROR_UNSUPPORTED_SIZE : ZE_RESULT_SUCCESS;
}

ze_result_t cooperativeGroupLimit(const Kernel& k, uint32_t& groups) {
    const Device& d = *k.device;
    const uint64_t size = uint64_t(k.groupSize[0]) * k.groupSize[1] * k.groupSize[2];
    if (size > k.maxGroupSize) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    // Asked now, not at create: it includes the local arguments set since.
    const cl_ulong local = kernelWgInfo<cl_ulong>(k.cl, d.cl, CL_KERNEL_LOCAL_MEM_SIZE);
    if (local > d.localMemSize) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    switch (d.residency) {
        case Device::Residency::Single: groups = 1; break;
        case Device::Residency::ThreadPerGroup: groups = d.computeUnits; break;
        case Device::Residency::GpuCu: groups = d.computeUnits; break;
        case Device::Residency::NvidiaSm: {
            const uint32_t perSm = nvidiaGroupsPerSm(
                {.groupSize = size, .maxGroupSize = k.maxGroupSize, .registers = k.registers, .localBytes = local},
                {.warp = d.simdWidth,
                 .registers = d.registersPerSm,
                 .sharedPerSm = d.sharedMemoryPerSm,
                 .localPerGroup = d.localMemSize,
                 .ccMajor = d.computeCapabilityMajor});
            groups = uint32_t(std::min<uint64_t>(UINT32_MAX, uint64_t(perSm) * d.computeUnits));
            break;
        }
    }
    return ZE_RESULT_SUCCESS;
}

const void* loaderShimTable() {
    // The loader's dditable_t starts with ze_dditable_t; only the build-log entries matter.
    static const ze_dditable_t table = [] {
        ze_dditable_t t{};
        t.ModuleBuildLog.pfnDestroy = api::guarded<&api::ModuleBuildLogDestroy>;
        t.ModuleBuildLog.pfnGetString = api::guarded<&api::ModuleBuildLogGetString>;
        return t;
    }();
    return loaderApiVersion.load() == ZE_API_VERSION_CURRENT ? &table : nullptr;
}

}  // namespace zecl

namespace zecl::api {

ze_result_t ModuleCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice, const ze_module_desc_t* desc,
                         ze_module_handle_t* phModule, ze_module_build_log_handle_t* phBuildLog) {
    ze_result_t err;
    Context* ctx = lookup<Context>(hContext, err);
    Device* dev = ctx ? lookup<Device>(hDevice, err) : nullptr;
    if (!ctx || !dev) return err;
    if (desc == nullptr || phModule == nullptr || desc->pInputModule == nullptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->format != ZE_MODULE_FORMAT_NATIVE && desc->format != ZE_MODULE_FORMAT_IL_SPIRV)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (!ctx->hasDevice(dev)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    *phModule = nullptr;
    if (phBuildLog) *phBuildLog = nullptr;
    const ze_module_constants_t* pc = desc->pConstants;
    if (pc != nullptr && pc->numConstants > 0 && (pc->pConstantIds == nullptr || pc->pConstantValues == nullptr))
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;

    const std::string flags = filterBuildFlags(desc->pBuildFlags);
    ModuleInput in;
    cl_program program = nullptr;
    if (const ze_result_t r = createProgram(*ctx, *dev, *desc, phBuildLog, in, program); r != ZE_RESULT_SUCCESS)
        return r;
    // On NVIDIA, ptxas' register counts for zeKernelSuggestMaxCooperativeGroupCount.
    const bool ptxasLog = dev->residency == Device::Residency::NvidiaSm &&
                          (in.options + flags).find("-cl-nv-verbose") == std::string::npos;
    const std::string buildOptions = in.options + flags + " -cl-kernel-arg-info" + (ptxasLog ? " -cl-nv-verbose" : "");
    std::string log;
    if (const ze_result_t r = buildProgram(*ctx, *dev, buildOptions, phBuildLog, in, program, log);
        r != ZE_RESULT_SUCCESS)
        return r;
    std::map<std::string, uint32_t> registers;
    giveBuildLog(phBuildLog, moduleBuildLog(std::move(log), ptxasLog, in, registers));

    Module* m = newModule(ctx, dev, *desc, program, in, flags, std::move(registers));
    publish(m);
    *phModule = reinterpret_cast<ze_module_handle_t>(m);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ModuleDestroy(ze_module_handle_t hModule) {
    ze_result_t err;
    Module* m = lookup<Module>(hModule, err);
    if (!m) return err;
    retire(m);
    Context* ctx = m->context;
    // Kernels and recorded commands hold their own references to the program.
    clReleaseProgram(m->program);
    delete m;
    leaveContext(ctx);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ModuleGetNativeBinary(ze_module_handle_t hModule, size_t* pSize, uint8_t* pModuleNativeBinary) {
    ze_result_t err;
    Module* m = lookupQuery<Module>(hModule, pSize, err);
    if (!m) return err;
    // zecl keeps no device binary (OpenCL program binaries are not portable across
    // platforms, and PoCL's need its cache): the "native binary" is what rebuilds the same
    // program through ZE_MODULE_FORMAT_NATIVE. A source-bundle module gives its bundle, which
    // rebuilds on any zecl device; a SPIR-V module gives a zecl IL container (the SPIR-V, its
    // build options and specialization constants), which rebuilds on any zecl device that
    // takes SPIR-V (spirvVersionSupported != 0), not on PoCL.
    if (pModuleNativeBinary == nullptr) {
        *pSize = m->native.size();
        return ZE_RESULT_SUCCESS;
    }
    size_t n = std::min(*pSize, m->native.size());
    std::memcpy(pModuleNativeBinary, m->native.data(), n);
    *pSize = n;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ModuleGetGlobalPointer(ze_module_handle_t hModule, const char* pGlobalName, size_t* pSize, void** pptr) {
    ze_result_t err;
    Module* m = lookupQuery<Module>(hModule, pGlobalName, err);
    if (!m) return err;
    // Program-scope globals have no address in core OpenCL; cl_intel_global_variable_pointers
    // gives one (where the platform has it). Without it, a SPIR-V module on a CPU device was
    // built with the address kernel (see ModuleCreate); elsewhere: unsupported.
    using GetGlobal = cl_int(CL_API_CALL*)(cl_device_id, cl_program, const char*, size_t*, void**);
    auto get = reinterpret_cast<GetGlobal>(deviceExtensionFunction(m->device, "cl_intel_global_variable_pointers",
                                                                   "clGetDeviceGlobalVariablePointerINTEL"));
    if (!get && m->globalAddressKernel) {
        std::call_once(m->globalsRead, [m] { m->globalsError = readGlobalAddresses(*m); });
        if (m->globalsError != CL_SUCCESS) return fromCl(m->globalsError);
        for (const SpirvGlobalAddress& g : m->globals)
            if (g.name == pGlobalName) {
                if (pSize) *pSize = size_t(g.bytes);
                if (pptr) *pptr = g.address;
                return ZE_RESULT_SUCCESS;
            }
        return ZE_RESULT_ERROR_INVALID_GLOBAL_NAME;
    }
    if (!get) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    size_t size = 0;
    void* ptr = nullptr;
    cl_int e = get(m->device->cl, m->program, pGlobalName, &size, &ptr);
    if (e != CL_SUCCESS || ptr == nullptr) return ZE_RESULT_ERROR_INVALID_GLOBAL_NAME;
    if (pSize) *pSize = size;
    if (pptr) *pptr = ptr;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ModuleGetFunctionPointer(ze_module_handle_t hModule, const char* pFunctionName, void** pfnFunction) {
    ze_result_t err;
    Module* m = lookup<Module>(hModule, err);
    if (!m) return err;
    if (pFunctionName == nullptr || pfnFunction == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    // OpenCL C has no function pointers; cl_intel_function_pointers gives device addresses
    // of functions (where the platform has it). Without it: unsupported.
    using GetFunction = cl_int(CL_API_CALL*)(cl_device_id, cl_program, const char*, cl_ulong*);
    auto get = reinterpret_cast<GetFunction>(
        deviceExtensionFunction(m->device, "cl_intel_function_pointers", "clGetDeviceFunctionPointerINTEL"));
    if (!get) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    cl_ulong address = 0;
    if (get(m->device->cl, m->program, pFunctionName, &address) != CL_SUCCESS || address == 0)
        return ZE_RESULT_ERROR_INVALID_FUNCTION_NAME;
    *pfnFunction = reinterpret_cast<void*>(uintptr_t(address));
    return ZE_RESULT_SUCCESS;
}

ze_result_t ModuleGetKernelNames(ze_module_handle_t hModule, uint32_t* pCount, const char** pNames) {
    ze_result_t err;
    Module* m = lookupQuery<Module>(hModule, pCount, err);
    if (!m) return err;
    uint32_t n = uint32_t(m->kernelNames.size());
    if (*pCount == 0 || *pCount > n) *pCount = n;
    if (pNames)
        for (uint32_t i = 0; i < *pCount; ++i) pNames[i] = m->kernelNames[i].c_str();
    return ZE_RESULT_SUCCESS;
}

ze_result_t ModuleGetProperties(ze_module_handle_t hModule, ze_module_properties_t* p) {
    ze_result_t err;
    if (!lookupQuery<Module>(hModule, p, err)) return err;
    p->flags = 0;  // no unresolved imports: OpenCL programs are fully linked
    return ZE_RESULT_SUCCESS;
}

ze_result_t ModuleBuildLogDestroy(ze_module_build_log_handle_t hLog) {
    ze_result_t err;
    BuildLog* log = lookup<BuildLog>(hLog, err);
    if (!log) return err;
    retire(log);
    delete log;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ModuleBuildLogGetString(ze_module_build_log_handle_t hLog, size_t* pSize, char* pBuildLog) {
    ze_result_t err;
    BuildLog* log = lookup<BuildLog>(hLog, err);
    if (!log) return err;
    return copyString(log->text, pSize, pBuildLog);
}

ze_result_t KernelCreate(ze_module_handle_t hModule, const ze_kernel_desc_t* desc, ze_kernel_handle_t* phKernel) {
    ze_result_t err;
    Module* m = lookup<Module>(hModule, err);
    if (!m) return err;
    if (desc == nullptr || desc->pKernelName == nullptr || phKernel == nullptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *phKernel = nullptr;
    if (faultNow(Fault::Kernel)) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    if (std::find(m->kernelNames.begin(), m->kernelNames.end(), desc->pKernelName) == m->kernelNames.end())
        return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    cl_int e = CL_SUCCESS;
    cl_kernel k = clCreateKernel(m->program, desc->pKernelName, &e);
    if (e != CL_SUCCESS) return fromCl(e);

    auto* kernel = new Kernel;
    kernel->module = m;
    kernel->device = m->device;
    kernel->clContext = m->context->cl;
    clRetainContext(kernel->clContext);
    kernel->program = m->program;
    clRetainProgram(m->program);
    kernel->name = desc->pKernelName;
    kernel->cl = k;
    cl_uint numArgs = 0;
    clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(numArgs), &numArgs, nullptr);
    kernel->args.resize(numArgs);
    // Programs from IL may keep no argument info (Intel's CPU runtime): then the SPIR-V says.
    std::optional<std::vector<ArgKind>> ilKinds;
    for (cl_uint i = 0; i < numArgs; ++i) {
        cl_kernel_arg_address_qualifier q = CL_KERNEL_ARG_ADDRESS_PRIVATE;
        if (clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(q), &q, nullptr) != CL_SUCCESS &&
            !m->il.empty()) {
            if (!ilKinds) ilKinds = spirvKernelArgKinds(m->il, kernel->name);
            if (ilKinds && ilKinds->size() == numArgs) {
                kernel->args[i].kind = (*ilKinds)[i];
                continue;
            }
        }
        kernel->args[i].kind = q == CL_KERNEL_ARG_ADDRESS_LOCAL ? ArgKind::Local
                               : q == CL_KERNEL_ARG_ADDRESS_GLOBAL || q == CL_KERNEL_ARG_ADDRESS_CONSTANT
                                   ? ArgKind::Pointer
                                   : ArgKind::Value;
    }
    cl_device_id dev = m->device->cl;
    size_t reqd[3] = {0, 0, 0};
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof(reqd), reqd, nullptr);
    kernel->requiredGroupSize = {reqd[0], reqd[1], reqd[2]};
    if (reqd[0] && reqd[1] && reqd[2]) kernel->groupSize = {uint32_t(reqd[0]), uint32_t(reqd[1]), uint32_t(reqd[2])};
    kernel->maxGroupSize = std::max<size_t>(1, kernelWgInfo<size_t>(k, dev, CL_KERNEL_WORK_GROUP_SIZE));
    kernel->preferredMultiple =
        std::max<size_t>(1, kernelWgInfo<size_t>(k, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE));
    kernel->localMemSize = kernelWgInfo<cl_ulong>(k, dev, CL_KERNEL_LOCAL_MEM_SIZE);
    kernel->privateMemSize = kernelWgInfo<cl_ulong>(k, dev, CL_KERNEL_PRIVATE_MEM_SIZE);
    if (auto r = m->registers.find(kernel->name); r != m->registers.end()) kernel->registers = r->second;
    size_t n = 0;
    if (clGetKernelInfo(k, CL_KERNEL_ATTRIBUTES, 0, nullptr, &n) == CL_SUCCESS && n > 1) {
        kernel->attributes.assign(n, '\0');
        clGetKernelInfo(k, CL_KERNEL_ATTRIBUTES, n, kernel->attributes.data(), nullptr);
        kernel->attributes.resize(std::strlen(kernel->attributes.c_str()));
        kernel->attributes = normalizeAttributes(kernel->attributes);
    }
    // Platforms may keep no attributes for IL programs (Intel's CPU runtime): the SPIR-V's
    // execution modes say what the source declared.
    if (kernel->attributes.empty() && !m->il.empty()) kernel->attributes = spirvKernelAttributes(m->il, kernel->name);
    publish(kernel);
    *phKernel = reinterpret_cast<ze_kernel_handle_t>(kernel);
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelDestroy(ze_kernel_handle_t hKernel) {
    ze_result_t err;
    Kernel* k = lookup<Kernel>(hKernel, err);
    if (!k) return err;
    retire(k);
    if (k->snapshot) clReleaseKernel(k->snapshot);
    clReleaseKernel(k->cl);
    clReleaseProgram(k->program);
    clReleaseContext(k->clContext);
    delete k;
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelSetCacheConfig(ze_kernel_handle_t hKernel, ze_cache_config_flags_t) {
    ze_result_t err;
    // A hint OpenCL cannot express; accepted.
    return lookup<Kernel>(hKernel, err) ? ZE_RESULT_SUCCESS : err;
}

ze_result_t KernelSetGroupSize(ze_kernel_handle_t hKernel, uint32_t x, uint32_t y, uint32_t z) {
    ze_result_t err;
    Kernel* k = lookup<Kernel>(hKernel, err);
    if (!k) return err;
    const Device* d = k->device;
    if (x == 0 || y == 0 || z == 0 || x > d->maxWorkItemSizes[0] || y > d->maxWorkItemSizes[1] ||
        z > d->maxWorkItemSizes[2] || uint64_t(x) * y * z > k->maxGroupSize)
        return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    const auto& r = k->requiredGroupSize;
    if (r[0] && (r[0] != x || r[1] != y || r[2] != z)) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    k->groupSize = {x, y, z};
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelSetGlobalOffsetExp(ze_kernel_handle_t hKernel, uint32_t offsetX, uint32_t offsetY, uint32_t offsetZ) {
    ze_result_t err;
    Kernel* k = lookup<Kernel>(hKernel, err);
    if (!k) return err;
    // ZE_experimental_global_offset: clEnqueueNDRangeKernel's global_work_offset (work-items),
    // taken by launches appended afterwards.
    k->globalOffset = {offsetX, offsetY, offsetZ};
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelSuggestGroupSize(ze_kernel_handle_t hKernel, uint32_t globalSizeX, uint32_t globalSizeY,
                                   uint32_t globalSizeZ, uint32_t* groupSizeX, uint32_t* groupSizeY,
                                   uint32_t* groupSizeZ) {
    ze_result_t err;
    Kernel* k = lookup<Kernel>(hKernel, err);
    if (!k) return err;
    if (groupSizeX == nullptr || groupSizeY == nullptr || groupSizeZ == nullptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (globalSizeX == 0 || globalSizeY == 0 || globalSizeZ == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    const auto& r = k->requiredGroupSize;
    if (r[0]) {
        *groupSizeX = uint32_t(r[0]);
        *groupSizeY = uint32_t(r[1]);
        *groupSizeZ = uint32_t(r[2]);
        return ZE_RESULT_SUCCESS;
    }
    // Largest divisors of the global sizes that fit the kernel's work-group limit,
    // filled X first: L0 launches whole groups, so a suggestion must divide evenly.
    const Device* d = k->device;
    size_t budget = k->maxGroupSize;
    uint32_t global[3] = {globalSizeX, globalSizeY, globalSizeZ};
    uint32_t out[3] = {1, 1, 1};
    for (int dim = 0; dim < 3; ++dim) {
        size_t limit = std::min(budget, d->maxWorkItemSizes[size_t(dim)]);
        uint32_t best = 1;
        for (uint32_t c = uint32_t(std::min<size_t>(limit, global[dim])); c >= 1; --c)
            if (global[dim] % c == 0) {
                best = c;
                break;
            }
        out[dim] = best;
        budget /= best;
    }
    *groupSizeX = out[0];
    *groupSizeY = out[1];
    *groupSizeZ = out[2];
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelSuggestMaxCooperativeGroupCount(ze_kernel_handle_t hKernel, uint32_t* totalGroupCount) {
    ze_result_t err;
    Kernel* k = lookupQuery<Kernel>(hKernel, totalGroupCount, err);
    if (!k) return err;
    if (faultNow(Fault::Suggest)) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    return cooperativeGroupLimit(*k, *totalGroupCount);
}

ze_result_t KernelSetArgumentValue(ze_kernel_handle_t hKernel, uint32_t argIndex, size_t argSize,
                                   const void* pArgValue) {
    ze_result_t err;
    Kernel* k = lookup<Kernel>(hKernel, err);
    if (!k) return err;
    if (argIndex >= k->args.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    ArgSlot& slot = k->args[argIndex];
    cl_int e = CL_SUCCESS;
    switch (slot.kind) {
        case ArgKind::Pointer: {
            if (argSize != sizeof(void*)) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
            const void* ptr = pArgValue ? *static_cast<void* const*>(pArgValue) : nullptr;
            // Interior pointers are fine: OpenCL accepts any address inside an SVM allocation.
            e = ptr ? clSetKernelArgSVMPointer(k->cl, argIndex, ptr)
                    : clSetKernelArg(k->cl, argIndex, sizeof(cl_mem), nullptr);
            if (e == CL_SUCCESS) slot.pointer = ptr;
            break;
        }
        case ArgKind::Local:
            if (pArgValue != nullptr || argSize == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
            // More than the device has would pass OpenCL here and abort inside the runtime at launch.
            if (argSize > k->device->localMemSize) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
            e = clSetKernelArg(k->cl, argIndex, argSize, nullptr);
            break;
        case ArgKind::Value: {
            if (pArgValue == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
            // Nothing is read from pArgValue before argSize is known to be the parameter's (or a
            // narrower scalar's): a wrong size would read past the caller's value.
            if (ze_result_t r = learnParamSize(*k, argIndex, argSize)) return r;
            auto* b = static_cast<const uint8_t*>(pArgValue);
            std::vector<uint8_t> bytes(b, b + argSize);
            // A value narrower than the parameter (an int for a size_t, as the conformance suite
            // passes): Intel's driver copies the given bytes into a zeroed slot, so zecl
            // zero-extends to the 8 bytes of the widest scalar rather than refuse.
            bytes.resize(slot.paramSize, 0);
            e = clSetKernelArg(k->cl, argIndex, bytes.size(), bytes.data());
            if (e == CL_SUCCESS) {
                argSize = bytes.size();
                slot.value = std::move(bytes);
            }
            break;
        }
    }
    if (e != CL_SUCCESS) return fromClArg(e);
    slot.size = argSize;
    slot.set = true;
    ++k->generation;
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelSetIndirectAccess(ze_kernel_handle_t hKernel, ze_kernel_indirect_access_flags_t flags) {
    ze_result_t err;
    Kernel* k = lookup<Kernel>(hKernel, err);
    if (!k) return err;
    // SVM allocations of the context are reachable from any kernel on these devices, so
    // indirect access needs no extra work; the flags are remembered for the getter.
    k->indirect = flags;
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelGetIndirectAccess(ze_kernel_handle_t hKernel, ze_kernel_indirect_access_flags_t* pFlags) {
    ze_result_t err;
    Kernel* k = lookupQuery<Kernel>(hKernel, pFlags, err);
    if (!k) return err;
    *pFlags = k->indirect;
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelGetSourceAttributes(ze_kernel_handle_t hKernel, uint32_t* pSize, char** pString) {
    ze_result_t err;
    Kernel* k = lookupQuery<Kernel>(hKernel, pSize, err);
    if (!k) return err;
    if (pString == nullptr || *pString == nullptr || *pSize == 0) {
        *pSize = uint32_t(k->attributes.size() + 1);
        return ZE_RESULT_SUCCESS;
    }
    size_t n = std::min<size_t>(*pSize - 1, k->attributes.size());
    std::memcpy(*pString, k->attributes.data(), n);
    (*pString)[n] = '\0';
    *pSize = uint32_t(n + 1);
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelGetProperties(ze_kernel_handle_t hKernel, ze_kernel_properties_t* p) {
    ze_result_t err;
    Kernel* k = lookupQuery<Kernel>(hKernel, p, err);
    if (!k) return err;
    p->numKernelArgs = uint32_t(k->args.size());
    p->requiredGroupSizeX = uint32_t(k->requiredGroupSize[0]);
    p->requiredGroupSizeY = uint32_t(k->requiredGroupSize[1]);
    p->requiredGroupSizeZ = uint32_t(k->requiredGroupSize[2]);
    p->requiredNumSubGroups = 0;
    p->requiredSubgroupSize = 0;
    // Without sub-group queries, the preferred work-group multiple is the closest OpenCL
    // 1.2 notion of the hardware's SIMD grouping for this kernel.
    p->maxSubgroupSize = uint32_t(k->preferredMultiple);
    p->maxNumSubgroups = uint32_t((k->maxGroupSize + k->preferredMultiple - 1) / k->preferredMultiple);
    p->localMemSize = uint32_t(k->localMemSize);
    p->privateMemSize = uint32_t(k->privateMemSize);
    p->spillMemSize = 0;
    std::memset(&p->uuid, 0, sizeof(p->uuid));
    uintptr_t kid = reinterpret_cast<uintptr_t>(k), mid = reinterpret_cast<uintptr_t>(k->module);
    std::memcpy(p->uuid.kid, &kid, sizeof(kid));
    std::memcpy(p->uuid.mid, &mid, sizeof(mid));
    return ZE_RESULT_SUCCESS;
}

ze_result_t KernelGetName(ze_kernel_handle_t hKernel, size_t* pSize, char* pName) {
    ze_result_t err;
    Kernel* k = lookup<Kernel>(hKernel, err);
    if (!k) return err;
    return copyString(k->name, pSize, pName);
}

}  // namespace zecl::api
