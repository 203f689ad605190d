#include "spirv_args.hpp"

#include <cstring>
#include <map>

namespace zecl {

namespace {

// SPIR-V 1.x, section 3 (the numbers are the specification's).
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kModeLocalSize = 17, kModeLocalSizeHint = 18, kModeSubgroupSize = 35;
constexpr uint32_t kOpEntryPoint = 15, kOpTypePointer = 32, kOpFunction = 54, kOpFunctionParameter = 55,
                   kOpFunctionEnd = 56;
constexpr uint32_t kExecutionModelKernel = 6;
constexpr uint32_t kStorageUniformConstant = 0, kStorageWorkgroup = 4, kStorageCrossWorkgroup = 5;

// A literal string operand: NUL-terminated, padded to whole words.
std::string_view literalString(const uint32_t* words, size_t count) {
    const char* s = reinterpret_cast<const char*>(words);
    return std::string_view(s, strnlen(s, count * 4));
}

// The module's words, or empty when the bytes are not a little-endian SPIR-V module.
std::vector<uint32_t> moduleWords(std::span<const uint8_t> spirv) {
    if (spirv.size() < 20 || spirv.size() % 4 != 0) return {};
    std::vector<uint32_t> w(spirv.size() / 4);
    std::memcpy(w.data(), spirv.data(), spirv.size());
    if (w[0] != kMagic) return {};
    return w;
}

}  // namespace

std::map<uint32_t, uint32_t> spirvSpecConstantSizes(std::span<const uint8_t> spirv) {
    constexpr uint32_t kOpTypeBool = 20, kOpTypeInt = 21, kOpTypeFloat = 22, kOpSpecConstantTrue = 48,
                       kOpSpecConstantFalse = 49, kOpSpecConstant = 50, kOpDecorate = 71, kDecorationSpecId = 1;
    const std::vector<uint32_t> w = moduleWords(spirv);
    std::map<uint32_t, uint32_t> typeBytes, specIdOf, bytesOf, out;  // by result id
    for (size_t i = 5; i < w.size();) {
        const uint32_t count = w[i] >> 16, op = w[i] & 0xFFFF;
        if (count == 0 || i + count > w.size()) return {};
        const uint32_t* ops = &w[i + 1];
        if (op == kOpDecorate && count >= 4 && ops[1] == kDecorationSpecId)
            specIdOf[ops[0]] = ops[2];
        else if ((op == kOpTypeInt || op == kOpTypeFloat) && count >= 3)
            typeBytes[ops[0]] = ops[1] / 8;
        else if (op == kOpTypeBool && count >= 2)
            typeBytes[ops[0]] = 1;
        else if ((op == kOpSpecConstant || op == kOpSpecConstantTrue || op == kOpSpecConstantFalse) && count >= 3)
            bytesOf[ops[1]] = typeBytes.count(ops[0]) ? typeBytes[ops[0]] : 0;
        i += count;
    }
    for (auto [result, id] : specIdOf)
        if (bytesOf.count(result) && bytesOf[result] > 0) out[id] = bytesOf[result];
    return out;
}

std::string spirvKernelAttributes(std::span<const uint8_t> spirv, std::string_view name) {
    const std::vector<uint32_t> w = moduleWords(spirv);
    std::optional<uint32_t> entry;
    std::string out;
    auto add = [&](const char* attr, const uint32_t* v, size_t n) {
        if (!out.empty()) out += ' ';
        out += attr;
        out += '(';
        for (size_t j = 0; j < n; ++j) out += (j ? "," : "") + std::to_string(v[j]);
        out += ')';
    };
    // Entry points precede execution modes in a valid module's layout (SPIR-V 2.4).
    for (size_t i = 5; i < w.size();) {
        const uint32_t count = w[i] >> 16, op = w[i] & 0xFFFF;
        if (count == 0 || i + count > w.size()) return {};
        const uint32_t* ops = &w[i + 1];
        if (op == kOpEntryPoint && count >= 4 && ops[0] == kExecutionModelKernel &&
            literalString(ops + 2, count - 3) == name)
            entry = ops[1];
        else if (op == kOpExecutionMode && entry && count >= 3 && ops[0] == *entry) {
            if (ops[1] == kModeLocalSize && count >= 6) add("reqd_work_group_size", ops + 2, 3);
            if (ops[1] == kModeLocalSizeHint && count >= 6) add("work_group_size_hint", ops + 2, 3);
            if (ops[1] == kModeSubgroupSize && count >= 4) add("intel_reqd_sub_group_size", ops + 2, 1);
        } else if (op == kOpFunction)
            break;  // modes and entry points are all declared before the first function
        i += count;
    }
    return out;
}

std::optional<std::vector<ArgKind>> spirvKernelArgKinds(std::span<const uint8_t> spirv, std::string_view name) {
    const std::vector<uint32_t> w = moduleWords(spirv);  // (a byte-swapped module is not produced by our tools)
    if (w.empty()) return std::nullopt;

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
