#include "spirv_args.hpp"

#include <cstdlib>
#include <cstring>
#include <algorithm>
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

namespace {

// Instruction words: the opcode word (word count << 16 | opcode), then the operands.
void emit(std::vector<uint32_t>& out, uint32_t op, std::initializer_list<uint32_t> operands) {
    out.push_back(uint32_t(operands.size() + 1) << 16 | op);
    out.insert(out.end(), operands);
}

std::vector<uint32_t> stringWords(std::string_view s) {
    std::vector<uint32_t> w(s.size() / 4 + 1, 0);  // NUL-terminated, padded to whole words
    std::memcpy(w.data(), s.data(), s.size());
    return w;
}

// What spirvWithGlobalAddressKernel reads of a module's declarations (the words before its
// first function): the exported CrossWorkgroup variables with their sizes, the types it can
// reuse (0: not declared) and where the sections end.
struct GlobalDeclarations {
    std::vector<SpirvGlobal> globals;  // in declaration order
    std::vector<uint32_t> ids;         // the globals' ids
    uint32_t voidType = 0, ulongType = 0, ulongPtr = 0, fnType = 0;
    size_t afterMemoryModel = 0, firstFunction = 0;
    bool int64 = false;  // the module declares the Int64 capability
};

std::optional<GlobalDeclarations> scanGlobalDeclarations(const std::vector<uint32_t>& w) {
    constexpr uint32_t kOpMemoryModel = 14, kOpCapability = 17, kOpTypeVoid = 19, kOpTypeBool = 20, kOpTypeInt = 21,
                       kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeArray = 28, kOpTypeStruct = 30,
                       kOpTypeFunction = 33, kOpConstant = 43, kOpVariable = 59, kOpDecorate = 71;
    constexpr uint32_t kCapabilityInt64 = 11, kDecorationLinkageAttributes = 41, kLinkageExport = 0;
    GlobalDeclarations d;
    d.firstFunction = w.size();
    std::map<uint32_t, std::string> exported;  // id -> export name
    std::map<uint32_t, uint64_t> bytes, align, constants;
    std::map<uint32_t, uint32_t> pointee;                  // pointer type -> pointee type
    std::vector<std::pair<uint32_t, uint32_t>> variables;  // (id, pointer type) of CrossWorkgroup variables
    for (size_t i = 5; i < w.size();) {
        const uint32_t count = w[i] >> 16, op = w[i] & 0xFFFF;
        if (count == 0 || i + count > w.size()) return std::nullopt;
        const uint32_t* ops = &w[i + 1];
        const size_t n = count - 1;
        if (op == kOpFunction) {
            d.firstFunction = i;
            break;
        }
        if (op == kOpCapability && n >= 1 && ops[0] == kCapabilityInt64) d.int64 = true;
        if (op == kOpMemoryModel) d.afterMemoryModel = i + count;
        if (op == kOpDecorate && n >= 4 && ops[1] == kDecorationLinkageAttributes && ops[n - 1] == kLinkageExport)
            exported[ops[0]] = std::string(literalString(ops + 2, n - 3));
        if (op == kOpTypeVoid && n >= 1) d.voidType = ops[0];
        if (op == kOpTypeBool && n >= 1) bytes[ops[0]] = align[ops[0]] = 1;
        if ((op == kOpTypeInt || op == kOpTypeFloat) && n >= 2) {
            bytes[ops[0]] = align[ops[0]] = ops[1] / 8;
            if (op == kOpTypeInt && ops[1] == 64 && n >= 3 && ops[2] == 0) d.ulongType = ops[0];
        }
        if (op == kOpTypeVector && n >= 3 && bytes.count(ops[1])) {
            // OpenCL C: a 3-component vector takes the size and alignment of 4.
            const uint64_t lanes = ops[2] == 3 ? 4 : ops[2];
            bytes[ops[0]] = align[ops[0]] = bytes[ops[1]] * lanes;
        }
        if (op == kOpConstant && n >= 3) constants[ops[1]] = n >= 4 ? (uint64_t(ops[3]) << 32 | ops[2]) : ops[2];
        if (op == kOpTypeArray && n >= 3 && bytes.count(ops[1]) && constants.count(ops[2])) {
            bytes[ops[0]] = bytes[ops[1]] * constants[ops[2]];
            align[ops[0]] = align[ops[1]];
        }
        if (op == kOpTypeStruct && n >= 1) {
            uint64_t size = 0, a = 1;
            bool known = true;
            for (size_t m = 1; m < n && known; ++m) {
                known = bytes.count(ops[m]) && align[ops[m]] > 0;
                if (!known) break;
                size = (size + align[ops[m]] - 1) / align[ops[m]] * align[ops[m]] + bytes[ops[m]];
                a = std::max(a, align[ops[m]]);
            }
            if (known) {
                bytes[ops[0]] = (size + a - 1) / a * a;
                align[ops[0]] = a;
            }
        }
        if (op == kOpTypePointer && n >= 3) {
            pointee[ops[0]] = ops[2];
            bytes[ops[0]] = align[ops[0]] = 8;  // Physical64 (OpenCL's 64-bit addressing)
            if (ops[1] == kStorageCrossWorkgroup && ops[2] == d.ulongType && d.ulongType) d.ulongPtr = ops[0];
        }
        if (op == kOpTypeFunction && n == 3 && d.voidType && ops[1] == d.voidType && d.ulongPtr && ops[2] == d.ulongPtr)
            d.fnType = ops[0];
        if (op == kOpVariable && n >= 3 && ops[2] == kStorageCrossWorkgroup) variables.push_back({ops[1], ops[0]});
        i += count;
    }
    for (auto [id, type] : variables) {
        auto name = exported.find(id);
        if (name == exported.end()) continue;
        auto p = pointee.find(type);
        d.globals.push_back({name->second, p != pointee.end() && bytes.count(p->second) ? bytes[p->second] : 0});
        d.ids.push_back(id);
    }
    return d;
}

}  // namespace

std::optional<GlobalAddressModule> spirvWithGlobalAddressKernel(std::span<const uint8_t> spirv) {
    constexpr uint32_t kOpCapability = 17, kOpTypeVoid = 19, kOpTypeInt = 21, kOpTypeFunction = 33, kOpConstant = 43,
                       kOpStore = 62, kOpPtrAccessChain = 67, kOpConvertPtrToU = 117, kOpLabel = 248, kOpReturn = 253;
    constexpr uint32_t kCapabilityInt64 = 11;
    std::vector<uint32_t> w = moduleWords(spirv);
    if (w.empty()) return std::nullopt;
    const std::optional<GlobalDeclarations> d = scanGlobalDeclarations(w);
    if (!d || d->ids.empty() || d->afterMemoryModel == 0) return std::nullopt;
    GlobalAddressModule out;
    out.globals = d->globals;
    const std::vector<uint32_t>& ids = d->ids;
    uint32_t voidType = d->voidType, ulongType = d->ulongType, ulongPtr = d->ulongPtr, fnType = d->fnType;
    const size_t afterMemoryModel = d->afterMemoryModel, firstFunction = d->firstFunction;
    const bool int64 = d->int64;

    uint32_t bound = w[3];
    auto fresh = [&] { return bound++; };
    std::vector<uint32_t> types;  // declared just before the first function
    if (!voidType) emit(types, kOpTypeVoid, {voidType = fresh()});
    if (!ulongType) emit(types, kOpTypeInt, {ulongType = fresh(), 64, 0});
    if (!ulongPtr) emit(types, kOpTypePointer, {ulongPtr = fresh(), kStorageCrossWorkgroup, ulongType});
    if (!fnType) emit(types, kOpTypeFunction, {fnType = fresh(), voidType, ulongPtr});
    std::vector<uint32_t> index(ids.size());
    for (size_t k = 0; k < ids.size(); ++k) emit(types, kOpConstant, {ulongType, index[k] = fresh(), uint32_t(k), 0});
    const uint32_t fn = fresh(), param = fresh(), label = fresh();
    std::vector<uint32_t> body;
    emit(body, kOpFunction, {voidType, fn, 0 /* FunctionControl None */, fnType});
    emit(body, kOpFunctionParameter, {ulongPtr, param});
    emit(body, kOpLabel, {label});
    for (size_t k = 0; k < ids.size(); ++k) {
        const uint32_t address = fresh(), slot = fresh();
        emit(body, kOpConvertPtrToU, {ulongType, address, ids[k]});
        emit(body, kOpPtrAccessChain, {ulongPtr, slot, param, index[k]});
        emit(body, kOpStore, {slot, address, 2 /* Aligned */, 8});
    }
    emit(body, kOpReturn, {});
    emit(body, kOpFunctionEnd, {});
    // The entry point: SPIR-V 1.4 and later list every global variable the kernel uses.
    std::vector<uint32_t> entry{kExecutionModelKernel, fn};
    for (uint32_t c : stringWords(kGlobalAddressKernel)) entry.push_back(c);
    if (w[1] >= 0x00010400) entry.insert(entry.end(), ids.begin(), ids.end());
    std::vector<uint32_t> entryWords{uint32_t(entry.size() + 1) << 16 | kOpEntryPoint};
    entryWords.insert(entryWords.end(), entry.begin(), entry.end());

    std::vector<uint32_t> r(w.begin(), w.begin() + 5);
    r[3] = bound;
    if (!int64) emit(r, kOpCapability, {kCapabilityInt64});
    r.insert(r.end(), w.begin() + 5, w.begin() + long(afterMemoryModel));
    r.insert(r.end(), entryWords.begin(), entryWords.end());
    r.insert(r.end(), w.begin() + long(afterMemoryModel), w.begin() + long(firstFunction));
    r.insert(r.end(), types.begin(), types.end());
    r.insert(r.end(), w.begin() + long(firstFunction), w.end());
    r.insert(r.end(), body.begin(), body.end());
    out.spirv.resize(r.size() * 4);
    std::memcpy(out.spirv.data(), r.data(), out.spirv.size());
    return out;
}

namespace {

// A marker variable: its ID, the member's scalar type and size, and where the initialiser's
// constituent word sits (see spirvSpecConstantMarkers).
struct Marker {
    uint32_t specId = 0, memberType = 0, bytes = 0;
    bool isBool = false, isSigned = false;
    size_t compositeAt = 0;  // word index of the OpConstantComposite instruction
};

std::vector<Marker> findMarkers(const std::vector<uint32_t>& w) {
    constexpr uint32_t kOpName = 5, kOpTypeBool = 20, kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeStruct = 30,
                       kOpConstantComposite = 44, kOpVariable = 59;
    constexpr std::string_view kPrefix = "struct.cl::__spirv::OpSpecConstant<";
    std::map<uint32_t, uint32_t> markerStruct;  // struct type -> ID (from its name)
    std::map<uint32_t, uint32_t> member, pointee;
    std::map<uint32_t, std::pair<uint32_t, bool>> scalar;  // type -> (bytes, signed); bool: bytes 0
    std::map<uint32_t, size_t> composite;                  // constant id -> word index
    std::vector<Marker> out;
    for (size_t i = 5; i < w.size();) {
        const uint32_t count = w[i] >> 16, op = w[i] & 0xFFFF;
        if (count == 0 || i + count > w.size()) return {};
        const uint32_t* ops = &w[i + 1];
        const size_t n = count - 1;
        if (op == kOpFunction) break;
        if (op == kOpName && n >= 2) {
            const std::string_view name = literalString(ops + 1, n - 1);
            if (name.substr(0, kPrefix.size()) == kPrefix && name.back() == '>') {
                const size_t comma = name.rfind(',');
                if (comma != std::string_view::npos) {
                    const std::string digits(name.substr(comma + 1, name.size() - comma - 2));
                    char* end = nullptr;
                    const unsigned long id = std::strtoul(digits.c_str(), &end, 10);
                    if (end && *end == '\0' && !digits.empty() && id <= UINT32_MAX) markerStruct[ops[0]] = uint32_t(id);
                }
            }
        }
        if (op == kOpTypeBool && n >= 1) scalar[ops[0]] = {0, false};
        if ((op == kOpTypeInt || op == kOpTypeFloat) && n >= 2)
            scalar[ops[0]] = {ops[1] / 8, op == kOpTypeInt && n >= 3 && ops[2] == 1};
        if (op == kOpTypeStruct && n == 2) member[ops[0]] = ops[1];
        if (op == kOpTypePointer && n >= 3) pointee[ops[0]] = ops[2];
        if (op == kOpConstantComposite && n == 3) composite[ops[1]] = i;
        if (op == kOpVariable && n >= 4 && ops[2] == kStorageUniformConstant) {
            const auto type = pointee.find(ops[0]);
            const auto init = composite.find(ops[3]);
            if (type != pointee.end() && init != composite.end() && markerStruct.count(type->second) &&
                member.count(type->second) && w[init->second + 1] == type->second) {
                const uint32_t m = member[type->second];
                const auto sc = scalar.find(m);
                if (sc != scalar.end() && (sc->second.first == 0 || sc->second.first <= 8))
                    out.push_back({markerStruct[type->second], m, sc->second.first ? sc->second.first : 1u,
                                   sc->second.first == 0, sc->second.second, init->second});
            }
        }
        i += count;
    }
    return out;
}

}  // namespace

std::map<uint32_t, uint32_t> spirvSpecConstantMarkers(std::span<const uint8_t> spirv) {
    std::map<uint32_t, uint32_t> out;
    for (const Marker& m : findMarkers(moduleWords(spirv))) out[m.specId] = m.bytes;
    return out;
}

std::vector<uint8_t> spirvWithMarkerValues(std::span<const uint8_t> spirv,
                                           const std::map<uint32_t, std::vector<uint8_t>>& values) {
    constexpr uint32_t kOpConstantTrue = 41, kOpConstantFalse = 42, kOpConstant = 43;
    std::vector<uint32_t> w = moduleWords(spirv);
    std::map<size_t, std::vector<uint32_t>> before;  // word index -> instruction to insert there
    uint32_t bound = w.empty() ? 0 : w[3];
    for (const Marker& m : findMarkers(w)) {
        const auto v = values.find(m.specId);
        if (v == values.end() || v->second.size() != m.bytes) continue;
        const uint32_t id = bound++;
        std::vector<uint32_t>& ins = before[m.compositeAt];
        if (m.isBool) {
            emit(ins, v->second[0] ? kOpConstantTrue : kOpConstantFalse, {m.memberType, id});
        } else {
            uint64_t bits = 0;
            std::memcpy(&bits, v->second.data(), m.bytes);
            // A literal narrower than 32 bits is sign-extended for a signed type (SPIR-V 2.2.1).
            if (m.isSigned && m.bytes < 4 && (bits >> (m.bytes * 8 - 1) & 1)) bits |= ~uint64_t(0) << (m.bytes * 8);
            if (m.bytes <= 4)
                emit(ins, kOpConstant, {m.memberType, id, uint32_t(bits)});
            else
                emit(ins, kOpConstant, {m.memberType, id, uint32_t(bits), uint32_t(bits >> 32)});
        }
        w[m.compositeAt + 3] = id;  // the composite's one constituent
    }
    if (before.empty()) return {};
    std::vector<uint32_t> r;
    size_t from = 0;
    for (auto& [at, ins] : before) {
        r.insert(r.end(), w.begin() + long(from), w.begin() + long(at));
        r.insert(r.end(), ins.begin(), ins.end());
        from = at;
    }
    r.insert(r.end(), w.begin() + long(from), w.end());
    r[3] = bound;
    std::vector<uint8_t> out(r.size() * 4);
    std::memcpy(out.data(), r.data(), out.size());
    return out;
}

}  // namespace zecl
