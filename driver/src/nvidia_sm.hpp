// How many work-groups of a kernel one NVIDIA SM keeps resident, from what the OpenCL driver and
// ptxas say of the kernel and the SM, for zeKernelSuggestMaxCooperativeGroupCount (module.cpp).
#pragma once

#include <cstdint>

namespace zecl {

// Shared memory one SM has for its resident groups, in bytes, by compute capability (CUDA C++
// Programming Guide, "Technical Specifications per Compute Capability"); 0 where not known.
uint32_t nvidiaSharedMemoryPerSm(uint32_t major, uint32_t minor);

struct NvidiaKernelUse {
    uint64_t groupSize = 1;     // work-items per group
    uint64_t maxGroupSize = 1;  // CL_KERNEL_WORK_GROUP_SIZE (a reqd_work_group_size pins it)
    uint32_t registers = 0;     // per work-item, ptxas' count; 0 = unknown
    uint64_t localBytes = 0;    // CL_KERNEL_LOCAL_MEM_SIZE
};

struct NvidiaSm {
    uint32_t warp = 32;
    uint32_t registers = 0;      // the register file (CL_DEVICE_REGISTERS_PER_BLOCK_NV); 0 = unknown
    uint64_t sharedPerSm = 0;    // nvidiaSharedMemoryPerSm; 0 = unknown
    uint64_t localPerGroup = 0;  // CL_DEVICE_LOCAL_MEM_SIZE: what one group may use
    uint32_t ccMajor = 0;        // compute capability (CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV)
};

// The groups one SM keeps resident, at least 1 and at most 16: by registers (per thread rounded
// up to 8, per warp to 256) within 1024 threads when ptxas' count is known, else
// maxGroupSize / groupSize in warps; then by shared memory: the SM's (less 1 KiB the driver
// keeps per group from compute capability 8.0) where known, else one group's limit, which
// stands for the SM's larger pool. Every bound under-counts, never over.
uint32_t nvidiaGroupsPerSm(const NvidiaKernelUse& kernel, const NvidiaSm& sm);

}  // namespace zecl
