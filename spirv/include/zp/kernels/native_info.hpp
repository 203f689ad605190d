// What an Intel native binary says about each of its kernels, read from the binary itself
// (not from IGC's dumps, which also describe attempts IGC threw away):
//   zebin (ELF with a .ze_info section; ocloc 23+ and every Xe2 binary): execution_env
//     simd_size, grf_count, spill_size, private_size and per_thread_memory_buffers, and the
//     code in .text.<kernel>;
//   patch tokens (ocloc 22.43's dg2/pvc binaries: an ELF whose "Intel(R) OpenCL Device Binary"
//     section holds IGC's patch list): the execution environment (LargestCompiledSIMDSize,
//     NumGRFRequired), the scratch space of the media VFE states (spill) and the stateless
//     private memory surface, and the kernel heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace zp::kernels {

struct NativeKernelInfo {
    std::string name;
    std::uint32_t simdSize = 0;  // SIMD width the kernel was compiled for (the largest one)
    std::uint32_t grfCount = 0;  // registers per hardware thread: 128 normal, 256 large GRF mode
    // Instructions, counted by walking the code: an instruction with the compaction bit (bit 29
    // of its first dword) is 8 bytes, any other 16. Stops at the end of the code or at 16 zero
    // bytes (the heap's padding); IGC's own instCount agrees with this count.
    std::uint32_t instructions = 0;
    std::uint32_t codeBytes = 0;     // the code, without the heap's padding
    std::uint32_t spillBytes = 0;    // scratch per hardware thread for register spills
    std::uint32_t privateBytes = 0;  // private memory per hardware thread (all its SIMD lanes)
};

struct NativeBinaryInfo {
    std::string format;                     // "zebin" or "patch tokens"
    std::string version;                    // zebin: the .ze_info version; patch tokens: the ICBE version
    std::vector<NativeKernelInfo> kernels;  // in binary order, IGC's internal symbol-table kernel left out
};

// Throws std::runtime_error saying what is malformed when `binary` is neither format or is
// truncated.
NativeBinaryInfo inspectNativeBinary(std::span<const std::byte> binary);

}  // namespace zp::kernels
