// Kernel argument kinds read from a SPIR-V module, for OpenCL platforms that keep no argument
// info for programs created from IL (clGetKernelArgInfo gives CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
// e.g. Intel's CPU runtime): zecl must still tell a USM pointer from an 8-byte value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "objects.hpp"

namespace zecl {

// The kinds of entry point `name`'s parameters: CrossWorkgroup / UniformConstant pointers are
// Pointer, Workgroup pointers Local, everything else Value. nullopt when the bytes are not a
// SPIR-V module or have no kernel of that name.
std::optional<std::vector<ArgKind>> spirvKernelArgKinds(std::span<const uint8_t> spirv, std::string_view name);

}  // namespace zecl
