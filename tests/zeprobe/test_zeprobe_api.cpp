// The zeprobe facade (zeprobe/include/zeprobe/zeprobe.hpp) on zecl: error codes and messages,
// weights from a file / memory / a seed, forward() against the host oracle bit for bit (also
// with fewer rows than the chain's), and the documented sharing: one Device, one Layer, Chains
// made and run concurrently from several threads.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <zeprobe/zeprobe.hpp>

#include "zp/oracle/chain.hpp"
#include "zp/oracle/numerics.hpp"
#include "zp/probe/case_io.hpp"
#include "zp/probe/cases.hpp"
#include "zp/probe/safetensors.hpp"
#include "zeprobe_test_support.hpp"

namespace {

namespace fs = std::filesystem;

zeprobe::Shape smallShape() { return zeprobe::Shape{.hidden = 128, .intermediate = 64, .experts = 48}; }

using zp::zeprobe_test::oracleShape;
using zp::zeprobe_test::Step;

Step randomStep(std::mt19937_64& rng, const zeprobe::Shape& s, int rows) {
    Step st;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> any(0, s.experts - 1), local(0, s.experts / s.cards - 1);
    std::uniform_real_distribution<float> w(-1.0f, 1.0f);
    for (int i = 0; i < rows * s.hidden; ++i) st.hidden.push_back(zp::oracle::bf16FromF32(normal(rng)));
    for (int i = 0; i < rows * s.topK; ++i) {
        st.ids.push_back((rng() & 1) ? s.card * (s.experts / s.cards) + local(rng) : any(rng));
        st.weights.push_back(w(rng));
    }
    return st;
}

std::vector<std::uint16_t> oracle(const zeprobe::Shape& s, const zp::oracle::LocalWeights& w, const Step& st) {
    const int rows = int(st.ids.size()) / s.topK;
    zp::oracle::ChainInputs in{st.hidden, st.ids, st.weights};
    return zp::oracle::runChain(oracleShape(s, rows), w, in, zp::oracle::buildSiluTable(1.0)).out;
}

template <class F>
zeprobe::Error errorOf(F&& f) {
    try {
        f();
    } catch (const zeprobe::Error& e) {
        return e;
    }
    ADD_FAILURE() << "no zeprobe::Error thrown";
    return zeprobe::Error(zeprobe::ErrorCode::internal, "none");
}

class ZeprobeApi : public ::testing::Test {
protected:
    static void SetUpTestSuite() { device_ = new zeprobe::Device({.device = "zecl"}); }
    static void TearDownTestSuite() {
        delete device_;
        device_ = nullptr;
    }
    static zeprobe::Device* device_;
};
zeprobe::Device* ZeprobeApi::device_ = nullptr;

}  // namespace

TEST(ZeprobeApiDevice, GivenBadDeviceSpecs_WhenOpening_ThenInvalidArgumentOrNotFound) {
    auto bogus = errorOf([] { zeprobe::Device({.device = "bogus"}); });
    EXPECT_EQ(bogus.code(), zeprobe::ErrorCode::invalid_argument) << bogus.what();
    EXPECT_NE(std::string(bogus.what()).find("'bogus'"), std::string::npos) << bogus.what();
    EXPECT_NE(bogus.zeResult(), 0);
    auto index = errorOf([] { zeprobe::Device({.device = "99"}); });
    EXPECT_EQ(index.code(), zeprobe::ErrorCode::not_found) << index.what();
    auto tuning = errorOf([] { zeprobe::Device({.device = "zecl", .kernelTuning = "cols_per_wg=banana"}); });
    EXPECT_EQ(tuning.code(), zeprobe::ErrorCode::invalid_argument) << tuning.what();
}

TEST_F(ZeprobeApi, GivenZeclDevice_WhenDescribed_ThenZeclAndSourceBundle) {
    EXPECT_EQ(device_->info().driver, "zecl");
    EXPECT_NE(device_->info().kernels.find("bundle"), std::string::npos) << device_->info().kernels;
    EXPECT_FALSE(zeprobe::listDevices().empty());
    EXPECT_EQ(zeprobe::variants().size(), 8u);
    EXPECT_STREQ(zeprobe::errorCodeName(zeprobe::ErrorCode::kernel_build), "kernel_build");
}

TEST_F(ZeprobeApi, GivenBadShapeOrWeights_WhenLoadingLayer_ThenCodedErrors) {
    zeprobe::Shape bad = smallShape();
    bad.hidden = 100;
    auto shape = errorOf([&] { zeprobe::Layer::random(*device_, bad, 1); });
    EXPECT_EQ(shape.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(shape.what()).find("hidden"), std::string::npos) << shape.what();

    auto missing =
        errorOf([&] { zeprobe::Layer::fromSafetensors(*device_, smallShape(), "/nonexistent/w.safetensors"); });
    EXPECT_EQ(missing.code(), zeprobe::ErrorCode::not_found) << missing.what();

    const fs::path dir = fs::temp_directory_path() / ("zp-api-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "garbage.safetensors") << "not a safetensors file";
    auto garbage = errorOf(
        [&] { zeprobe::Layer::fromSafetensors(*device_, smallShape(), (dir / "garbage.safetensors").string()); });
    EXPECT_EQ(garbage.code(), zeprobe::ErrorCode::io) << garbage.what();

    const auto cs = oracleShape(smallShape(), 2);
    const auto w = zp::probe::makeRandomWeights(cs, 99);
    zp::probe::writeSafetensors(dir / "w.safetensors", zp::probe::weightsTensors(cs, w, "model.layers.3.mlp.experts."));
    auto prefix = errorOf(
        [&] { zeprobe::Layer::fromSafetensors(*device_, smallShape(), (dir / "w.safetensors").string(), "wrong."); });
    EXPECT_EQ(prefix.code(), zeprobe::ErrorCode::not_found) << prefix.what();
    EXPECT_NE(std::string(prefix.what()).find("wrong.gate_up_proj_blocks"), std::string::npos) << prefix.what();

    // The file's layer and the same weights from memory give the oracle's bits.
    zeprobe::Layer fromFile = zeprobe::Layer::fromSafetensors(*device_, smallShape(), (dir / "w.safetensors").string(),
                                                              "model.layers.3.mlp.experts.");
    zeprobe::Layer fromMemory =
        zeprobe::Layer::fromLocalWeights(*device_, smallShape(), {w.w1Blocks, w.w1Scales, w.w2Blocks, w.w2Scales});
    std::mt19937_64 rng(5);
    const Step st = randomStep(rng, smallShape(), 2);
    const auto expected = oracle(smallShape(), w, st);
    EXPECT_EQ(zeprobe::Chain(fromFile).forward(st.hidden, st.ids, st.weights), expected);
    EXPECT_EQ(zeprobe::Chain(fromMemory).forward(st.hidden, st.ids, st.weights), expected);

    auto size = errorOf([&] {
        zeprobe::Layer::fromLocalWeights(*device_, smallShape(),
                                         {std::span(w.w1Blocks).first(10), w.w1Scales, w.w2Blocks, w.w2Scales});
    });
    EXPECT_EQ(size.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(size.what()).find("w1Blocks has 10 bytes"), std::string::npos) << size.what();
    fs::remove_all(dir);
}

TEST_F(ZeprobeApi, GivenAShapeLargerThanTheDevice_WhenLoadingLayer_ThenInvalidArgumentBeforeAnyAllocation) {
    // One card's 16 experts of 65536 x 65536 need 2.2e11 bytes: within the documented maximum
    // (256 GiB), more than any device here.
    zeprobe::Shape huge = smallShape();
    huge.hidden = 65536;
    huge.intermediate = 65536;
    huge.experts = 16;
    huge.cards = 1;
    const auto e = errorOf([&] { zeprobe::Layer::random(*device_, huge, 1); });
    EXPECT_EQ(e.code(), zeprobe::ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("more than the memory of device " + device_->info().name), std::string::npos)
        << e.what();
    huge.experts = 4096;  // 1.2e14 bytes: beyond the documented maximum, whatever the device
    const auto max = errorOf([&] { zeprobe::Layer::random(*device_, huge, 1); });
    EXPECT_EQ(max.code(), zeprobe::ErrorCode::invalid_argument) << max.what();
    EXPECT_NE(std::string(max.what()).find("more than the documented maximum of 274877906944 bytes"), std::string::npos)
        << max.what();
}

// The documented maxima hold for the Layer factories as for a config (H = I = 2^30 once wrapped
// the weight sizes to 0, passed the memory check and wrote past empty vectors), and enumerations
// outside their values are refused, all before any allocation.
TEST_F(ZeprobeApi, GivenShapesBeyondTheMaximaOrBadEnums_WhenLoadingLayerOrChain_ThenInvalidArgumentNamingThem) {
    zeprobe::Shape wraps = smallShape();
    wraps.hidden = 1 << 30;
    wraps.intermediate = 1 << 30;
    wraps.experts = 512;
    wraps.cards = 1;
    auto e = errorOf([&] { zeprobe::Layer::random(*device_, wraps, 1); });
    EXPECT_EQ(e.code(), zeprobe::ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("zeprobe::Layer::random: hidden = 1073741824: must be at most 65536"),
              std::string::npos)
        << e.what();
    zeprobe::Shape rows = smallShape();
    rows.rows = 4194304;
    e = errorOf([&] { zeprobe::Layer::fromLocalWeights(*device_, rows, {}); });
    EXPECT_EQ(e.code(), zeprobe::ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("rows = 4194304: must be at most 1048576"), std::string::npos) << e.what();
    zeprobe::Shape layout = smallShape();
    layout.gateUpLayout = zeprobe::GateUpLayout(7);
    e = errorOf([&] { zeprobe::Layer::random(*device_, layout, 1); });
    EXPECT_EQ(e.code(), zeprobe::ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("gate_up_layout = 7"), std::string::npos) << e.what();

    const zeprobe::Layer layer = zeprobe::Layer::random(*device_, smallShape(), 1);
    e = errorOf([&] { zeprobe::Chain(layer, "baseline", zeprobe::IdWidth(9)); });
    EXPECT_EQ(e.code(), zeprobe::ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("zeprobe::Chain: IdWidth 9: must be IdWidth::int32 or IdWidth::int64"),
              std::string::npos)
        << e.what();
    // the facade's own errors inside a call carry the call's name too
    zeprobe::Layer moved = zeprobe::Layer::random(*device_, smallShape(), 1);
    zeprobe::Layer taken = std::move(moved);
    e = errorOf([&] { zeprobe::Chain(moved, "baseline"); });  // NOLINT(bugprone-use-after-move): the point
    EXPECT_EQ(std::string(e.what()), "zeprobe::Chain: moved-from Layer");
}

// One Chain used from two threads at once (which the header forbids) never gives a wrong answer:
// a forward() that finds another running is refused, every other one is the oracle's.
TEST_F(ZeprobeApi, GivenOneChainOnTwoThreadsAtOnce_WhenForward_ThenEachCallIsTheOraclesOrRefused) {
    const zeprobe::Shape s = smallShape();
    const zeprobe::Layer layer = zeprobe::Layer::random(*device_, s, 31);
    const auto w = zp::probe::makeRandomWeights(oracleShape(s, 2), 31);
    zeprobe::Chain chain(layer, "baseline");
    std::vector<std::string> failures(2);
    std::vector<int> answered(2, 0), refused(2, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(500 + t);
            for (int i = 0; i < 30 && failures[t].empty(); ++i) {
                const Step st = randomStep(rng, s, 2);
                try {
                    if (chain.forward(st.hidden, st.ids, st.weights) != oracle(s, w, st))
                        failures[t] =
                            "thread " + std::to_string(t) + ": step " + std::to_string(i) + " differs from the oracle";
                    ++answered[t];
                } catch (const zeprobe::Error& e) {
                    if (e.code() != zeprobe::ErrorCode::invalid_argument ||
                        std::string(e.what()).find("called while another forward() on this Chain runs") ==
                            std::string::npos)
                        failures[t] = std::string("thread ") + std::to_string(t) + ": " + e.what();
                    ++refused[t];
                }
            }
        });
    for (auto& th : threads) th.join();
    for (const auto& f : failures) EXPECT_TRUE(f.empty()) << f;
    EXPECT_EQ(answered[0] + refused[0] + answered[1] + refused[1], 60);
    EXPECT_GT(answered[0] + answered[1], 0);
}

TEST(ZeprobeApiConfig, GivenConfigFilesAndSets_WhenLoaded_ThenTheShapeAndCodedErrors) {
    const zeprobe::Config defaults = zeprobe::loadConfig("");
    EXPECT_EQ(defaults.shape.hidden, zeprobe::Shape{}.hidden);
    EXPECT_EQ(defaults.shape.experts, zeprobe::Shape{}.experts);
    EXPECT_EQ(defaults.seed, 20261129u);

    const fs::path dir = fs::temp_directory_path() / ("zp-api-config-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "c.yaml") << "hidden: 256\nintermediate: 64\nexperts: 48\ngate_up_layout: interleaved\n"
                                     "weights:\n  prefix: model.\n";
    const zeprobe::Config c = zeprobe::loadConfig((dir / "c.yaml").string(), {"swiglu.limit=7", "card=3", "seed=5"});
    EXPECT_EQ(c.shape.hidden, 256);
    EXPECT_EQ(c.shape.intermediate, 64);
    EXPECT_EQ(c.shape.experts, 48);
    EXPECT_EQ(c.shape.card, 3);
    EXPECT_EQ(c.shape.swigluLimit, 7.0f);
    EXPECT_EQ(c.shape.gateUpLayout, zeprobe::GateUpLayout::interleaved);
    EXPECT_EQ(c.seed, 5u);
    EXPECT_EQ(c.weightsPrefix, "model.");

    const auto key = errorOf([&] { zeprobe::loadConfig("", {"swiglu.limt=7"}); });
    EXPECT_EQ(key.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(key.what()).find("--set swiglu.limt: unknown key"), std::string::npos) << key.what();
    const auto rule = errorOf([&] { zeprobe::loadConfig((dir / "c.yaml").string(), {"card=4"}); });
    EXPECT_EQ(rule.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(rule.what()).find("card = 4"), std::string::npos) << rule.what();
    const auto missing = errorOf([&] { zeprobe::loadConfig((dir / "none.yaml").string()); });
    EXPECT_NE(std::string(missing.what()).find("none.yaml: cannot read config"), std::string::npos) << missing.what();
    EXPECT_EQ(missing.code(), zeprobe::ErrorCode::invalid_argument) << missing.what();
    const auto device = errorOf([&] { zeprobe::loadConfig("/dev/zero"); });
    EXPECT_EQ(device.code(), zeprobe::ErrorCode::invalid_argument) << device.what();
    EXPECT_NE(std::string(device.what()).find("a character device"), std::string::npos) << device.what();
    fs::remove_all(dir);
}

TEST(ZeprobeApiRequests, GivenSafetensorsBodies_WhenDecodedAndEncoded_ThenExactValuesOrInvalidArgument) {
    const zeprobe::Shape s = smallShape();
    std::mt19937_64 rng(9);
    const Step st = randomStep(rng, s, 1);
    using zp::probe::DType;
    auto body = [&](int rows, bool extra) {
        zp::probe::TensorMap t;
        t["hidden"] = zp::probe::makeTensor(DType::BF16, {rows, s.hidden}, st.hidden);
        t["topk_ids"] = zp::probe::makeTensor(DType::I32, {rows, s.topK}, st.ids);
        t["topk_weights"] = zp::probe::makeTensor(DType::F32, {rows, s.topK}, st.weights);
        if (extra) t["bias"] = zp::probe::makeTensor(DType::F32, {1}, std::vector<float>{0});
        return zp::probe::serializeSafetensors(t);
    };
    const zeprobe::Inputs in = zeprobe::inputsFromSafetensors(body(1, false), s, "req");
    EXPECT_EQ(in.rows, 1);
    EXPECT_EQ(in.hidden, st.hidden);
    EXPECT_EQ(in.topkIds, std::vector<std::int64_t>(st.ids.begin(), st.ids.end()));
    EXPECT_EQ(in.topkWeights, st.weights);
    // The same ids as I64 (torch.topk's dtype) read the same.
    {
        zp::probe::TensorMap t;
        t["hidden"] = zp::probe::makeTensor(DType::BF16, {1, s.hidden}, st.hidden);
        t["topk_ids"] =
            zp::probe::makeTensor(DType::I64, {1, s.topK}, std::vector<std::int64_t>(st.ids.begin(), st.ids.end()));
        t["topk_weights"] = zp::probe::makeTensor(DType::F32, {1, s.topK}, st.weights);
        EXPECT_EQ(zeprobe::inputsFromSafetensors(zp::probe::serializeSafetensors(t), s, "req").topkIds, in.topkIds);
    }

    const auto extra = errorOf([&] { zeprobe::inputsFromSafetensors(body(1, true), s, "req"); });
    EXPECT_EQ(extra.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(extra.what()).find("req: unknown tensor 'bias'"), std::string::npos) << extra.what();
    const std::vector<std::uint8_t> garbage{1, 2, 3};
    const auto bad = errorOf([&] { zeprobe::inputsFromSafetensors(garbage, s, "req"); });
    EXPECT_EQ(bad.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_EQ(std::string(bad.what()).rfind("req: ", 0), 0u) << bad.what();

    // The answer: one tensor `out` BF16 [m, H] holding exactly the given bits.
    std::vector<std::uint16_t> out(2 * std::size_t(s.hidden));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::uint16_t(i * 7919u);
    const auto file = zeprobe::outputToSafetensors(out, s);
    const zp::probe::TensorMap t = zp::probe::parseSafetensors(file, "answer");
    ASSERT_EQ(t.size(), 1u);
    const std::int64_t shape[] = {2, s.hidden};
    EXPECT_EQ(
        zp::probe::tensorValues<std::uint16_t>(zp::probe::findTensor(t, "out", "answer"), DType::BF16, shape, "out"),
        out);
    const auto ragged = errorOf([&] { zeprobe::outputToSafetensors(std::span(out).first(5), s); });
    EXPECT_EQ(ragged.code(), zeprobe::ErrorCode::invalid_argument) << ragged.what();

    zeprobe::checkExpertId(s.experts - 1, 0, 0, s);
    const auto wide = errorOf([&] { zeprobe::checkExpertId(std::int64_t(1) << 33, 1, 2, s); });
    EXPECT_EQ(wide.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(wide.what()).find("topk_ids[1][2] = 8589934592 is not an expert id in [0, 48)"),
              std::string::npos)
        << wide.what();

    EXPECT_EQ(zeprobe::bf16FromDouble(1.0), 0x3F80);
    EXPECT_EQ(zeprobe::bf16FromDouble(1.0 + 0x1p-8), 0x3F80);            // a tie: to even
    EXPECT_EQ(zeprobe::bf16FromDouble(1.0 + 0x1p-8 + 0x1p-30), 0x3F81);  // past the tie (f32 would round it away)
    EXPECT_EQ(zeprobe::bf16FromDouble(std::nan("")), 0x7FC0);
    EXPECT_EQ(zeprobe::floatFromBf16(0xC040), -3.0f);
}

TEST(ZeprobeApiFiles, GivenOutputPaths_WhenCheckedAndWritten_ThenTheFileOrAnIoError) {
    const fs::path dir = fs::temp_directory_path() / ("zp-api-files-" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string file = (dir / "port").string();
    zeprobe::checkOutputFile(file, "--port-file");
    zeprobe::writeFileAtomically(file, "8080\n", "--port-file");
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, "8080\n");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "no temporary file left";
    const auto isDir = errorOf([&] { zeprobe::checkOutputFile(dir.string(), "--port-file"); });
    EXPECT_EQ(isDir.code(), zeprobe::ErrorCode::io);
    EXPECT_NE(std::string(isDir.what()).find("--port-file"), std::string::npos) << isDir.what();
    const auto write = errorOf([&] { zeprobe::writeFileAtomically(dir.string(), "x", "--port-file"); });
    EXPECT_EQ(write.code(), zeprobe::ErrorCode::io) << write.what();
    fs::remove_all(dir);
}

TEST_F(ZeprobeApi, GivenBadInputs_WhenForward_ThenInvalidArgumentBeforeDeviceWorkAndChainStillWorks) {
    const zeprobe::Shape s = smallShape();
    zeprobe::Layer layer = zeprobe::Layer::random(*device_, s, 3);
    zeprobe::Chain chain(layer);
    EXPECT_TRUE(chain.kernelTimings().empty());
    std::mt19937_64 rng(11);
    Step st = randomStep(rng, s, 2);

    auto variant = errorOf([&] { zeprobe::Chain(layer, "fastest"); });
    EXPECT_EQ(variant.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(variant.what()).find("paired_direct"), std::string::npos) << variant.what();

    Step badId = st;
    badId.ids[1 * 6 + 4] = 48;
    auto id = errorOf([&] { chain.forward(badId.hidden, badId.ids, badId.weights); });
    EXPECT_EQ(id.code(), zeprobe::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(id.what()).find("topk_ids[1][4] = 48 is not an expert id in [0, 48)"), std::string::npos)
        << id.what();
    badId.ids[1 * 6 + 4] = -7;
    auto negative = errorOf([&] { chain.forward(badId.hidden, badId.ids, badId.weights); });
    EXPECT_NE(std::string(negative.what()).find("topk_ids[1][4] = -7"), std::string::npos) << negative.what();

    auto hidden = errorOf([&] { chain.forward(std::span(st.hidden).first(200), st.ids, st.weights); });
    EXPECT_NE(std::string(hidden.what()).find("hidden has 200 values, expected rows*hidden = 2*128 = 256"),
              std::string::npos)
        << hidden.what();
    auto ragged = errorOf([&] { chain.forward(st.hidden, std::span(st.ids).first(7), st.weights); });
    EXPECT_NE(std::string(ragged.what()).find("topk_ids has 7 values"), std::string::npos) << ragged.what();
    Step three = randomStep(rng, s, 3);
    auto rows = errorOf([&] { chain.forward(three.hidden, three.ids, three.weights); });
    EXPECT_NE(std::string(rows.what()).find("rows = 3"), std::string::npos) << rows.what();
    std::vector<std::uint16_t> small(10);
    auto out = errorOf([&] { chain.forward(st.hidden, st.ids, st.weights, small); });
    EXPECT_NE(std::string(out.what()).find("out has room for 10 values"), std::string::npos) << out.what();
    EXPECT_TRUE(chain.kernelTimings().empty()) << "a rejected input must not reach the device";

    const auto w = zp::probe::makeRandomWeights(oracleShape(s, 2), 3);
    EXPECT_EQ(chain.forward(st.hidden, st.ids, st.weights), oracle(s, w, st));
    const auto timings = chain.kernelTimings();
    ASSERT_EQ(timings.size(), 6u);
    EXPECT_EQ(timings.front().kernel, "route_compact");
    for (const auto& t : timings) EXPECT_GE(t.ns, 0.0) << t.kernel;
}

// torch.topk gives int64 ids: the int64 overload on Chains of either id width gives the int32
// overload's bits (the oracle's), one row and two; ids beyond int32 range are rejected before
// any device work, naming (m, k) and the whole id.
TEST_F(ZeprobeApi, GivenInt64Ids_WhenForward_ThenTheSameBitsAsInt32AndIdsBeyondInt32AreInvalid) {
    const zeprobe::Shape s = smallShape();
    zeprobe::Layer layer = zeprobe::Layer::random(*device_, s, 5);
    const auto w = zp::probe::makeRandomWeights(oracleShape(s, 2), 5);
    std::mt19937_64 rng(17);
    for (const char* variant : {"baseline", "two_launch", "m1_oracle"})
        for (auto width : {zeprobe::IdWidth::int64, zeprobe::IdWidth::int32}) {
            zeprobe::Chain chain(layer, variant, width);
            EXPECT_EQ(chain.idWidth(), width);
            for (int rows : {2, 1}) {
                const Step st = randomStep(rng, s, rows);
                const std::vector<std::int64_t> ids(st.ids.begin(), st.ids.end());
                const auto want = oracle(s, w, st);
                EXPECT_EQ(chain.forward(st.hidden, ids, st.weights), want) << variant << " rows " << rows;
                EXPECT_EQ(chain.forward(st.hidden, st.ids, st.weights), want) << variant << " rows " << rows;
            }
        }

    zeprobe::Chain chain(layer, "baseline", zeprobe::IdWidth::int64);
    const Step st = randomStep(rng, s, 2);
    for (const std::int64_t bad : {std::int64_t(1) << 31, std::int64_t(-1), std::int64_t(1) << 40,
                                   std::numeric_limits<std::int64_t>::min(), (std::int64_t(1) << 32) + 13}) {
        std::vector<std::int64_t> ids(st.ids.begin(), st.ids.end());
        ids[1 * 6 + 2] = bad;
        const auto e = errorOf([&] { chain.forward(st.hidden, ids, st.weights); });
        EXPECT_EQ(e.code(), zeprobe::ErrorCode::invalid_argument) << bad;
        const std::string want = "topk_ids[1][2] = " + std::to_string(bad) + " is not an expert id in [0, 48)";
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    // Still usable after the rejections.
    const std::vector<std::int64_t> ids(st.ids.begin(), st.ids.end());
    EXPECT_EQ(chain.forward(st.hidden, ids, st.weights), oracle(s, w, st));
    const auto timings = chain.kernelTimings();
    ASSERT_FALSE(timings.empty());
    EXPECT_EQ(timings.front().kernel, "route_compact");
}

// One Device, one Layer, six threads each making its own Chain (of different variants) at the
// same time and running it; single rows too, on a one-card shape where the padded row is local.
TEST_F(ZeprobeApi, GivenOneLayer_WhenChainsMadeAndRunOnSixThreads_ThenEveryAnswerIsTheOracles) {
    for (const zeprobe::Shape s :
         {smallShape(), zeprobe::Shape{.hidden = 64, .intermediate = 32, .experts = 8, .cards = 1}}) {
        SCOPED_TRACE("experts " + std::to_string(s.experts) + " cards " + std::to_string(s.cards));
        const zeprobe::Layer layer = zeprobe::Layer::random(*device_, s, 21);
        const auto w = zp::probe::makeRandomWeights(oracleShape(s, 2), 21);
        const std::vector<std::string> variants = {"baseline",  "paired_direct", "source_direct",
                                                   "m1_oracle", "two_launch",    "one_launch"};
        std::vector<std::string> failures(variants.size());
        std::vector<std::thread> threads;
        for (std::size_t t = 0; t < variants.size(); ++t)
            threads.emplace_back([&, t] {
                try {
                    zeprobe::Chain chain(layer, variants[t]);
                    std::mt19937_64 rng(100 + t);
                    for (int i = 0; i < 8; ++i) {
                        const Step st = randomStep(rng, s, 1 + i % 2);
                        if (chain.forward(st.hidden, st.ids, st.weights) != oracle(s, w, st)) {
                            failures[t] = variants[t] + ": step " + std::to_string(i) + " differs from the oracle";
                            return;
                        }
                    }
                } catch (const std::exception& e) {
                    failures[t] = variants[t] + ": " + e.what();
                }
            });
        for (auto& th : threads) th.join();
        for (const auto& f : failures) EXPECT_TRUE(f.empty()) << f;
    }
}

TEST_F(ZeprobeApi, GivenDeviceDestroyedFirst_WhenChainRuns_ThenItStillWorks) {
    const zeprobe::Shape s = smallShape();
    std::optional<zeprobe::Chain> chain;
    {
        zeprobe::Device device({.device = "zecl"});
        zeprobe::Layer layer = zeprobe::Layer::random(device, s, 8);
        chain.emplace(layer, "paired_epilogue");
    }  // Device and Layer handles gone; the Chain keeps both alive
    std::mt19937_64 rng(9);
    const Step st = randomStep(rng, s, 2);
    EXPECT_EQ(chain->forward(st.hidden, st.ids, st.weights),
              oracle(s, zp::probe::makeRandomWeights(oracleShape(s, 2), 8), st));
}
