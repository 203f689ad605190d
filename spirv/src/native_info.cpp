#include "zp/kernels/native_info.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace zp::kernels {

namespace {

using Bytes = std::span<const std::byte>;

[[noreturn]] void malformed(const std::string& what) { throw std::runtime_error("native binary: " + what); }

template <typename T>
T read(Bytes b, std::size_t offset, const char* what) {
    if (offset > b.size() || b.size() - offset < sizeof(T))
        malformed(std::string(what) + " at offset " + std::to_string(offset) + " lies past the end (" +
                  std::to_string(b.size()) + " bytes)");
    T v;
    std::memcpy(&v, b.data() + offset, sizeof(T));
    return v;
}

Bytes slice(Bytes b, std::uint64_t offset, std::uint64_t size, const std::string& what) {
    if (offset > b.size() || b.size() - offset < size)
        malformed(what + " (offset " + std::to_string(offset) + ", " + std::to_string(size) +
                  " bytes) lies past the end (" + std::to_string(b.size()) + " bytes)");
    return b.subspan(offset, size);
}

// Xe instructions are 16 bytes, or 8 when compacted (CmptCtrl, bit 29 of the first dword).
void countInstructions(Bytes code, NativeKernelInfo& k) {
    std::size_t at = 0;
    std::uint32_t n = 0;
    while (at + 8 <= code.size()) {
        const std::size_t rest = std::min<std::size_t>(16, code.size() - at);
        if (std::all_of(code.begin() + at, code.begin() + at + rest, [](std::byte x) { return x == std::byte{0}; }))
            break;  // the heap's zero padding
        const auto dword = read<std::uint32_t>(code, at, "instruction");
        at += (dword >> 29) & 1u ? 8 : 16;
        ++n;
    }
    k.instructions = n;
    k.codeBytes = static_cast<std::uint32_t>(std::min(at, code.size()));
}

struct Section {
    std::string name;
    std::uint32_t type;
    Bytes bytes;
};

std::vector<Section> elfSections(Bytes b) {
    if (b.size() < 64 || std::memcmp(b.data(),
                                     "\x7f"
                                     "ELF",
                                     4) != 0)
        malformed("not an ELF file");
    if (static_cast<unsigned char>(b[4]) != 2) malformed("not a 64-bit ELF file");
    const auto shoff = read<std::uint64_t>(b, 0x28, "e_shoff");
    const auto shentsize = read<std::uint16_t>(b, 0x3a, "e_shentsize");
    const auto shnum = read<std::uint16_t>(b, 0x3c, "e_shnum");
    const auto shstrndx = read<std::uint16_t>(b, 0x3e, "e_shstrndx");
    if (shentsize < 64) malformed("section header entries of " + std::to_string(shentsize) + " bytes");
    if (shstrndx >= shnum) malformed("section name table index " + std::to_string(shstrndx) + " out of range");
    struct Raw {
        std::uint32_t name, type;
        std::uint64_t offset, size;
    };
    std::vector<Raw> raw;
    for (std::uint16_t i = 0; i < shnum; ++i) {
        const std::uint64_t h = shoff + std::uint64_t(i) * shentsize;
        const auto type = read<std::uint32_t>(b, h + 4, "section header");
        const auto offset = read<std::uint64_t>(b, h + 0x18, "section header");
        const auto size = read<std::uint64_t>(b, h + 0x20, "section header");
        raw.push_back({read<std::uint32_t>(b, h, "section header"), type, offset, type == 8 /*NOBITS*/ ? 0 : size});
    }
    const Bytes names = slice(b, raw[shstrndx].offset, raw[shstrndx].size, "section name table");
    std::vector<Section> out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i].name >= names.size()) malformed("section " + std::to_string(i) + " has its name out of range");
        const char* start = reinterpret_cast<const char*>(names.data()) + raw[i].name;
        const std::string name(start, strnlen(start, names.size() - raw[i].name));
        out.push_back({name, raw[i].type, slice(b, raw[i].offset, raw[i].size, "section " + name)});
    }
    return out;
}

// IGC's internal kernel holding the program's symbol table, not one of ours.
bool isInternalKernel(std::string_view name) { return name.rfind("Intel_Symbol_Table", 0) == 0; }

std::uint32_t toU32(const YAML::Node& n, const std::string& what) {
    try {
        return n.as<std::uint32_t>();
    } catch (const YAML::Exception&) {
        malformed(".ze_info: " + what + " = '" + n.as<std::string>("?") + "' is not an unsigned integer");
    }
}

NativeBinaryInfo inspectZebin(const std::vector<Section>& sections, Bytes zeInfo) {
    YAML::Node doc;
    try {
        doc = YAML::Load(std::string(reinterpret_cast<const char*>(zeInfo.data()), zeInfo.size()));
    } catch (const YAML::Exception& e) {
        malformed(std::string(".ze_info is not YAML: ") + e.what());
    }
    NativeBinaryInfo info;
    info.format = "zebin";
    info.version = doc["version"].as<std::string>("");
    if (!doc["kernels"].IsSequence()) malformed(".ze_info has no kernels list");
    for (const auto& kernel : doc["kernels"]) {
        NativeKernelInfo k;
        k.name = kernel["name"].as<std::string>("");
        if (k.name.empty()) malformed(".ze_info: a kernel without a name");
        if (isInternalKernel(k.name)) continue;
        const auto env = kernel["execution_env"];
        if (env["simd_size"]) k.simdSize = toU32(env["simd_size"], k.name + " simd_size");
        if (env["grf_count"]) k.grfCount = toU32(env["grf_count"], k.name + " grf_count");
        if (env["spill_size"]) k.spillBytes = toU32(env["spill_size"], k.name + " spill_size");
        if (env["private_size"]) k.privateBytes = toU32(env["private_size"], k.name + " private_size");
        // The same memory as per_thread_memory_buffers (sizes per SIMT lane when is_simt_thread);
        // older .ze_info versions carry only these. single_space is one scratch space holding
        // both the private memory and the spills. The larger figure wins: never double-counted.
        std::uint32_t spillFill = 0, privateSpace = 0, singleSpace = 0;
        for (const auto& buf : kernel["per_thread_memory_buffers"]) {
            std::uint32_t size = toU32(buf["size"], k.name + " per_thread_memory_buffers size");
            if (buf["is_simt_thread"] && buf["is_simt_thread"].as<bool>(false)) size *= std::max(k.simdSize, 1u);
            const auto usage = buf["usage"].as<std::string>("");
            if (usage == "private_space")
                privateSpace += size;
            else if (usage == "spill_fill_space")
                spillFill += size;
            else
                singleSpace += size;
        }
        // single_space is allocated rounded up (to a power of two): when execution_env gives the
        // exact spill_size / private_size, those are the figures; only an older .ze_info without
        // them leaves single_space (less the private space) to stand for the spills.
        const bool exact = env["spill_size"] || env["private_size"];
        k.privateBytes = std::max(k.privateBytes, privateSpace);
        const std::uint32_t singleSpill = !exact && singleSpace > k.privateBytes ? singleSpace - k.privateBytes : 0;
        k.spillBytes = std::max({k.spillBytes, spillFill, singleSpill});
        const std::string textName = ".text." + k.name;
        const auto text =
            std::find_if(sections.begin(), sections.end(), [&](const Section& s) { return s.name == textName; });
        if (text == sections.end()) malformed("zebin has no " + textName + " section for its kernel " + k.name);
        countInstructions(text->bytes, k);
        info.kernels.push_back(std::move(k));
    }
    return info;
}

// IGC's patch-token program (patch_list.h): a program header, its patch list, then per kernel
// a header, the name, the four heaps and the kernel's patch list.
enum : std::uint32_t {
    kPatchMediaVfeState = 18,
    kPatchExecutionEnvironment = 23,
    kPatchAllocateStatelessPrivateMemory = 38,
    kPatchMediaVfeStateSlot1 = 55,
};

NativeBinaryInfo inspectPatchTokens(Bytes b) {
    constexpr std::uint32_t kMagic = 0x494E5443;  // "CTNI"
    if (read<std::uint32_t>(b, 0, "program header") != kMagic) malformed("patch-token program without its magic");
    NativeBinaryInfo info;
    info.format = "patch tokens";
    info.version = std::to_string(read<std::uint32_t>(b, 4, "program header"));
    const auto kernels = read<std::uint32_t>(b, 16, "program header");
    std::uint64_t at = 28 + std::uint64_t(read<std::uint32_t>(b, 24, "program header"));
    for (std::uint32_t i = 0; i < kernels; ++i) {
        const auto nameSize = read<std::uint32_t>(b, at + 12, "kernel header");
        const auto patchSize = read<std::uint32_t>(b, at + 16, "kernel header");
        const auto heap = read<std::uint32_t>(b, at + 20, "kernel header");
        std::uint64_t heaps = heap;
        for (int h = 0; h < 3; ++h) heaps += read<std::uint32_t>(b, at + 24 + 4 * h, "kernel header");
        const auto unpadded = read<std::uint32_t>(b, at + 36, "kernel header");
        at += 40;
        const Bytes name = slice(b, at, nameSize, "kernel name");
        NativeKernelInfo k;
        k.name.assign(reinterpret_cast<const char*>(name.data()),
                      strnlen(reinterpret_cast<const char*>(name.data()), name.size()));
        at += nameSize;
        const Bytes code = slice(b, at, std::min(unpadded, heap), "kernel heap of " + k.name);
        at += heaps;
        const Bytes patches = slice(b, at, patchSize, "patch list of " + k.name);
        at += patchSize;
        std::uint32_t privatePerLane = 0, privateScratch = 0;
        bool privatePerSimtLane = false;
        for (std::size_t p = 0; p + 8 <= patches.size();) {
            const auto token = read<std::uint32_t>(patches, p, "patch token");
            const auto size = read<std::uint32_t>(patches, p + 4, "patch token");
            if (size < 8)
                malformed("patch token " + std::to_string(token) + " of " + k.name + " has size " +
                          std::to_string(size));
            const Bytes item = slice(patches, p, size, "patch token of " + k.name);
            // Scratch slot 0 holds the spills; slot 1 (multiple scratch spaces) private memory.
            if (token == kPatchMediaVfeState)
                k.spillBytes = read<std::uint32_t>(item, 12, "PerThreadScratchSpace");
            else if (token == kPatchMediaVfeStateSlot1)
                privateScratch = read<std::uint32_t>(item, 12, "PerThreadScratchSpace");
            else if (token == kPatchAllocateStatelessPrivateMemory) {
                privatePerLane = read<std::uint32_t>(item, 20, "PerThreadPrivateMemorySize");
                privatePerSimtLane = item.size() >= 28 && read<std::uint32_t>(item, 24, "IsSimtThread") != 0;
            } else if (token == kPatchExecutionEnvironment) {
                k.simdSize = read<std::uint32_t>(item, 8 + 4 * 3, "LargestCompiledSIMDSize");
                k.grfCount = read<std::uint32_t>(item, 8 + 4 * 20, "NumGRFRequired");
            }
            p += size;
        }
        k.privateBytes = privatePerLane * (privatePerSimtLane ? std::max(k.simdSize, 1u) : 1u) + privateScratch;
        countInstructions(code, k);
        if (!isInternalKernel(k.name)) info.kernels.push_back(std::move(k));
    }
    return info;
}

}  // namespace

NativeBinaryInfo inspectNativeBinary(std::span<const std::byte> binary) {
    const auto sections = elfSections(binary);
    for (const auto& s : sections)
        if (s.name == ".ze_info") return inspectZebin(sections, s.bytes);
    constexpr std::uint32_t kShtOpenClDevBinary = 0xff000005;
    for (const auto& s : sections)
        if (s.type == kShtOpenClDevBinary) return inspectPatchTokens(s.bytes);
    malformed("an ELF with neither a .ze_info section (zebin) nor an OpenCL device binary section (patch tokens)");
}

}  // namespace zp::kernels
