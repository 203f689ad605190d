// Kernel argument kinds read from a SPIR-V module, for OpenCL platforms that keep no argument
// info for programs created from IL (clGetKernelArgInfo gives CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
// e.g. Intel's CPU runtime): zecl must still tell a USM pointer from an 8-byte value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "objects.hpp"

namespace zecl {

// The kinds of entry point `name`'s parameters: CrossWorkgroup / UniformConstant pointers are
// Pointer, Workgroup pointers Local, everything else Value. nullopt when the bytes are not a
// SPIR-V module or have no kernel of that name.
std::optional<std::vector<ArgKind>> spirvKernelArgKinds(std::span<const uint8_t> spirv, std::string_view name);

// Entry point `name`'s source attributes in CL_KERNEL_ATTRIBUTES form, rebuilt from its
// execution modes (LocalSize -> "reqd_work_group_size(x,y,z)", LocalSizeHint ->
// "work_group_size_hint(x,y,z)", SubgroupSize -> "intel_reqd_sub_group_size(n)"), space
// separated; for platforms that report no attributes for IL programs. Empty when none.
// Byte sizes of the module's specialization constants by SpecId (a boolean one is 1 byte,
// as OpenCL takes it). L0 gives constant values without sizes; the module says them.
std::map<uint32_t, uint32_t> spirvSpecConstantSizes(std::span<const uint8_t> spirv);

std::string spirvKernelAttributes(std::span<const uint8_t> spirv, std::string_view name);

// OpenCL C++ 1.0's cl::spec_constant<T, ID> as a SPIR-V producer may leave it unlowered: a
// UniformConstant variable of a one-member struct named (OpName) "struct.cl::__spirv::
// OpSpecConstant<T, ID>", its default in the initialiser, and no SpecId. Byte sizes by ID.
std::map<uint32_t, uint32_t> spirvSpecConstantMarkers(std::span<const uint8_t> spirv);
// The module with those markers' initialisers set to `values` (by ID, each of the marker's
// size); empty when no marker of a given ID is found.
std::vector<uint8_t> spirvWithMarkerValues(std::span<const uint8_t> spirv,
                                           const std::map<uint32_t, std::vector<uint8_t>>& values);

// Program-scope globals without cl_intel_global_variable_pointers: the module's exported
// CrossWorkgroup variables (LinkageAttributes Export), and the module with one more kernel,
// kGlobalAddressKernel(global ulong *out), that stores the address of the i-th of them in
// out[i]. OpenCL keeps a program's globals at one place for the program's life, so what the
// kernel writes is each variable's address for every kernel of that program.
inline constexpr const char* kGlobalAddressKernel = "__zecl_global_addresses";
struct SpirvGlobal {
    std::string name;
    uint64_t bytes = 0;  // the variable's size (0 where the type is opaque to zecl)
};
struct GlobalAddressModule {
    std::vector<uint8_t> spirv;        // the input plus the address kernel
    std::vector<SpirvGlobal> globals;  // in the order of out[]
};
// nullopt when the bytes are not a SPIR-V module or export no CrossWorkgroup variable.
std::optional<GlobalAddressModule> spirvWithGlobalAddressKernel(std::span<const uint8_t> spirv);

}  // namespace zecl
