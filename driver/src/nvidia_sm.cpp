#include "nvidia_sm.hpp"

#include <algorithm>

namespace zecl {

uint32_t nvidiaSharedMemoryPerSm(uint32_t major, uint32_t minor) {
    constexpr uint32_t KiB = 1024;
    switch (major * 10 + minor) {
        case 70:
        case 72: return 96 * KiB;
        case 75: return 64 * KiB;
        case 80:
        case 87: return 164 * KiB;
        case 86:
        case 89: return 100 * KiB;
        case 90: return 228 * KiB;
        default: return 0;
    }
}

uint32_t nvidiaGroupsPerSm(const NvidiaKernelUse& k, const NvidiaSm& sm) {
    const uint64_t warp = std::max<uint32_t>(1, sm.warp);
    const uint64_t threads = (std::max<uint64_t>(1, k.groupSize) + warp - 1) / warp * warp;
    uint64_t perSm = std::max<uint64_t>(1, k.maxGroupSize / threads);
    if (k.registers > 0 && sm.registers > 0) {
        const uint64_t perWarp = (uint64_t(k.registers + 7) / 8 * 8 * warp + 255) / 256 * 256;
        const uint64_t byRegisters = sm.registers / perWarp / (threads / warp);
        perSm = std::max<uint64_t>(1, std::min<uint64_t>(byRegisters, 1024 / threads));
    }
    if (k.localBytes > 0) {
        const uint64_t reserved = sm.ccMajor >= 8 ? 1024 : 0;
        perSm = std::min<uint64_t>(
            perSm, sm.sharedPerSm > 0 ? sm.sharedPerSm / (k.localBytes + reserved) : sm.localPerGroup / k.localBytes);
    }
    return uint32_t(std::clamp<uint64_t>(perSm, 1, 16));  // 16: the fewest resident blocks per SM of any CUDA GPU
}

}  // namespace zecl
