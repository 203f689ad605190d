#include "spirv_args.hpp"

#include <cstring>
#include <map>

namespace zecl {

namespace {

// SPIR-V 1.x, section 3 (the numbers are the specification's).
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kOpEntryPoint = 15, kOpTypePointer = 32, kOpFunction = 54, kOpFunctionParameter = 55,
                   kOpFunctionEnd = 56;
constexpr uint32_t kExecutionModelKernel = 6;
constexpr uint32_t kStorageUniformConstant = 0, kStorageWorkgroup = 4, kStorageCrossWorkgroup = 5;

// A literal string operand: NUL-terminated, padded to whole words.
std::string_view literalString(const uint32_t* words, size_t count) {
    const char* s = reinterpret_cast<const char*>(words);
    return std::string_view(s, strnlen(s, count * 4));
}

}  // namespace

std::optional<std::vector<ArgKind>> spirvKernelArgKinds(std::span<const uint8_t> spirv, std::string_view name) {
    if (spirv.size() < 20 || spirv.size() % 4 != 0) return std::nullopt;
    std::vector<uint32_t> w(spirv.size() / 4);
    std::memcpy(w.data(), spirv.data(), spirv.size());
    if (w[0] != kMagic) return std::nullopt;  // (a byte-swapped module is not produced by our tools)

    std::optional<uint32_t> entry;
    std::map<uint32_t, uint32_t> pointerStorage;  // OpTypePointer id -> storage class
    std::vector<ArgKind> kinds;
    bool inEntry = false, found = false;
    for (size_t i = 5; i < w.size();) {
        const uint32_t count = w[i] >> 16, op = w[i] & 0xFFFF;
        if (count == 0 || i + count > w.size()) return std::nullopt;  // truncated or corrupt
        const uint32_t* ops = &w[i + 1];
        if (op == kOpEntryPoint && count >= 4 && ops[0] == kExecutionModelKernel &&
            literalString(ops + 2, count - 3) == name)
            entry = ops[1];
        else if (op == kOpTypePointer && count >= 4)
            pointerStorage[ops[0]] = ops[1];
        else if (op == kOpFunction && count >= 5)
            inEntry = entry && ops[1] == *entry;
        else if (op == kOpFunctionParameter && inEntry && count >= 3) {
            const auto p = pointerStorage.find(ops[0]);
            const uint32_t sc = p == pointerStorage.end() ? UINT32_MAX : p->second;
            kinds.push_back(sc == kStorageCrossWorkgroup || sc == kStorageUniformConstant ? ArgKind::Pointer
                            : sc == kStorageWorkgroup                                     ? ArgKind::Local
                                                                                          : ArgKind::Value);
        } else if (op == kOpFunctionEnd && inEntry) {
            inEntry = false;
            found = true;
        }
        i += count;
    }
    if (!found) return std::nullopt;
    return kinds;
}

}  // namespace zecl
