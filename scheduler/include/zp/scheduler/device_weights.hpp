// This card's local experts' weights in device memory.
#pragma once

#include <cstdint>
#include <span>

#include "zp/oracle/chain.hpp"
#include "zp/runtime/ze.hpp"

namespace zp::scheduler {

// This card's local experts (E/C of them) in device memory, laid out as oracle::LocalWeights.
// Shared by every chain of the device.
class DeviceWeights {
public:
    DeviceWeights(const runtime::Context& context, const runtime::DeviceInfo& device, const oracle::ChainShape& shape);

    // Copies these local experts' W1/W2 blocks and scales (all of them when `localExperts` is
    // empty). Experts never uploaded hold garbage: upload every expert a case touches.
    void upload(const oracle::LocalWeights& weights, std::span<const int> localExperts = {});

    const oracle::ChainShape& shape() const noexcept { return shape_; }
    const runtime::DeviceBuffer<std::uint8_t>& w1Blocks() const noexcept { return w1Blocks_; }
    const runtime::DeviceBuffer<std::uint8_t>& w1Scales() const noexcept { return w1Scales_; }
    const runtime::DeviceBuffer<std::uint8_t>& w2Blocks() const noexcept { return w2Blocks_; }
    const runtime::DeviceBuffer<std::uint8_t>& w2Scales() const noexcept { return w2Scales_; }

private:
    oracle::ChainShape shape_;
    runtime::ImmediateCommandList copies_;
    runtime::DeviceBuffer<std::uint8_t> w1Blocks_, w1Scales_, w2Blocks_, w2Scales_;
};

}  // namespace zp::scheduler
