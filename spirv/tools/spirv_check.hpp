// SPIR-V checks of the kernel build, on SPIRV-Tools' library API (no spirv-val binary).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace zp::kernels {

// The validation environment of the kernel package: OpenCL (Kernel capability), SPIR-V <= 1.2.
// llvm-spirv is run with --spirv-max-version=1.1 (SubgroupDispatch needs 1.1).
inline constexpr const char* kTargetEnvName = "opencl2.2";

// nullopt when the module is valid, else every diagnostic, one a line: SPIRV-Tools' own rules
// plus one of the package's: no function may be declared without a body (nothing links the
// package's modules, so an import could never resolve).
std::optional<std::string> validateSpirv(std::span<const std::uint32_t> words);

// llvm-spirv 14 writes a function's blocks in LLVM's layout order, which may put a block
// before its dominator (invalid SPIR-V: "ID has not been defined"), and an entry block's
// instructions in LLVM's order, which may put a bitcast between two allocas' OpVariables
// (invalid: "All OpVariable instructions in a function must be the first instructions in the
// first block"). This reorders every function's blocks into reverse post-order from the entry
// block (unreachable blocks keep their relative order after the reachable ones) and moves the
// entry block's OpVariables, in their order, to its start: a pure permutation, the
// instructions are untouched. Throws std::runtime_error on a module SPIRV-Tools cannot parse.
std::vector<std::uint32_t> orderSpirvBlocks(std::span<const std::uint32_t> words);

// Reads a whole SPIR-V file as words; throws std::runtime_error naming the file on failure,
// without opening anything but a regular file (a FIFO would block) of whole words, <= 256 MiB.
std::vector<std::uint32_t> readSpirvWords(const std::string& path);

}  // namespace zp::kernels
