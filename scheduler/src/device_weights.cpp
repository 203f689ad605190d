#include "zp/scheduler/device_weights.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace zp::scheduler {

DeviceWeights::DeviceWeights(const runtime::Context& context, const runtime::DeviceInfo& device,
                             const oracle::ChainShape& shape)
    : shape_(shape), copies_(context, device) {
    oracle::validateShape(shape);
    const std::size_t e = shape.localExperts();
    w1Blocks_ =
        runtime::DeviceBuffer<std::uint8_t>(context, device, e * oracle::LocalWeights::w1BlocksPerExpert(shape));
    w1Scales_ =
        runtime::DeviceBuffer<std::uint8_t>(context, device, e * oracle::LocalWeights::w1ScalesPerExpert(shape));
    w2Blocks_ =
        runtime::DeviceBuffer<std::uint8_t>(context, device, e * oracle::LocalWeights::w2BlocksPerExpert(shape));
    w2Scales_ =
        runtime::DeviceBuffer<std::uint8_t>(context, device, e * oracle::LocalWeights::w2ScalesPerExpert(shape));
}

void DeviceWeights::upload(const oracle::LocalWeights& w, std::span<const int> localExperts) {
    const int e = shape_.localExperts();
    if (w.w1Blocks.size() != w1Blocks_.size() || w.w1Scales.size() != w1Scales_.size() ||
        w.w2Blocks.size() != w2Blocks_.size() || w.w2Scales.size() != w2Scales_.size())
        throw std::invalid_argument("DeviceWeights::upload: the weights do not match the shape's E/C, 2I, H, I");
    std::vector<int> all;
    if (localExperts.empty()) {
        all.resize(e);
        for (int i = 0; i < e; ++i) all[i] = i;
        localExperts = all;
    }
    auto copy = [&](runtime::DeviceBuffer<std::uint8_t>& dst, const std::vector<std::uint8_t>& src,
                    std::size_t perExpert, int le) {
        dst.upload(copies_, std::span<const std::uint8_t>(src).subspan(perExpert * le, perExpert), perExpert * le);
    };
    for (int le : localExperts) {
        if (le < 0 || le >= e)
            throw std::invalid_argument("DeviceWeights::upload: local expert " + std::to_string(le) +
                                        " is not in [0, " + std::to_string(e) + ")");
        copy(w1Blocks_, w.w1Blocks, oracle::LocalWeights::w1BlocksPerExpert(shape_), le);
        copy(w1Scales_, w.w1Scales, oracle::LocalWeights::w1ScalesPerExpert(shape_), le);
        copy(w2Blocks_, w.w2Blocks, oracle::LocalWeights::w2BlocksPerExpert(shape_), le);
        copy(w2Scales_, w.w2Scales, oracle::LocalWeights::w2ScalesPerExpert(shape_), le);
    }
}
}  // namespace zp::scheduler
