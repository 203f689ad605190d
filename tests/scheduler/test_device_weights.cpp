// DeviceWeights (scheduler/device_weights.hpp): this card's local experts copied to the device,
// all of them or the ones a case touches, and read back byte for byte. Through the real loader
// on zecl (PoCL in CI); no kernel is built.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "reduced_shape.hpp"
#include "zp/oracle/chain.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/device_weights.hpp"

namespace {

using zp::oracle::LocalWeights;

// Every byte names its buffer, its expert and its place: a copy to the wrong offset shows.
LocalWeights patterned(const zp::oracle::ChainShape& s, std::uint8_t salt) {
    LocalWeights w = LocalWeights::zeros(s);
    int buffer = 0;
    for (auto* v : {&w.w1Blocks, &w.w1Scales, &w.w2Blocks, &w.w2Scales}) {
        for (std::size_t i = 0; i < v->size(); ++i) (*v)[i] = std::uint8_t(i * 7 + std::size_t(buffer) * 31 + salt);
        ++buffer;
    }
    return w;
}

class DeviceWeightsOnZecl : public ::testing::Test {
protected:
    static std::string deviceSpec() {
        const char* s = std::getenv("ZP_TEST_DEVICE");
        return s ? s : "zecl";
    }
    zp::oracle::ChainShape shape = zp::scheduler::test::reducedShape();
    zp::runtime::DeviceInfo device = zp::runtime::selectDevice(deviceSpec());
    zp::runtime::Context context{device};
    zp::runtime::ImmediateCommandList copies{context, device};
};

TEST_F(DeviceWeightsOnZecl, GivenEveryLocalExpert_WhenUploaded_ThenTheDeviceHoldsTheirBytes) {
    zp::scheduler::DeviceWeights weights(context, device, shape);
    const LocalWeights host = patterned(shape, 1);
    weights.upload(host);
    EXPECT_EQ(weights.shape().localExperts(), 12);
    EXPECT_EQ(weights.w1Blocks().download(copies), host.w1Blocks);
    EXPECT_EQ(weights.w1Scales().download(copies), host.w1Scales);
    EXPECT_EQ(weights.w2Blocks().download(copies), host.w2Blocks);
    EXPECT_EQ(weights.w2Scales().download(copies), host.w2Scales);
}

TEST_F(DeviceWeightsOnZecl, GivenSomeLocalExperts_WhenUploaded_ThenOnlyTheirBytesChange) {
    zp::scheduler::DeviceWeights weights(context, device, shape);
    const LocalWeights before = patterned(shape, 1), after = patterned(shape, 2);
    weights.upload(before);
    const int touched[] = {3, 11};
    weights.upload(after, touched);
    const std::size_t perExpert = LocalWeights::w2ScalesPerExpert(shape);
    const auto got = weights.w2Scales().download(copies);
    ASSERT_EQ(got.size(), 12 * perExpert);
    for (int le = 0; le < 12; ++le) {
        const auto& want = le == 3 || le == 11 ? after.w2Scales : before.w2Scales;
        for (std::size_t i = le * perExpert; i < (le + 1) * perExpert; ++i)
            ASSERT_EQ(got[i], want[i]) << "local expert " << le << ", byte " << i;
    }
}

TEST_F(DeviceWeightsOnZecl, GivenWeightsOfAnotherShapeOrAnExpertOutOfRange_WhenUploaded_ThenItThrows) {
    zp::scheduler::DeviceWeights weights(context, device, shape);
    zp::oracle::ChainShape other = shape;
    other.cards = 2;  // 24 local experts
    EXPECT_THROW(weights.upload(LocalWeights::zeros(other)), std::invalid_argument);
    const int outside[] = {12};
    EXPECT_THROW(weights.upload(LocalWeights::zeros(shape), outside), std::invalid_argument);
}

}  // namespace
