// Device tests of zp::runtime through the real loader on zecl + PoCL (ctest sets
// ZE_ENABLE_ALT_DRIVERS to libze_zecl.so and turns the validation layer on).
#include "zp/runtime/ze.hpp"

#include "grid_barrier_source.h"
#include "runtime_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace zp_runtime_test;

class ZeclDevice : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        initForTests();
        rig_ = new Rig(zp::runtime::selectDevice("zecl"));
    }
    static void TearDownTestSuite() {
        delete rig_;
        rig_ = nullptr;
    }
    void SetUp() override { ASSERT_NE(rig_, nullptr) << "no zecl device: is ZE_ENABLE_ALT_DRIVERS set?"; }

    static Rig* rig_;
    const zp::runtime::DeviceInfo& dev() { return rig_->dev; }
    zp::runtime::Context& ctx() { return rig_->ctx; }
    zp::runtime::Module& module() { return rig_->module; }
    zp::runtime::ImmediateCommandList& imm() { return rig_->imm; }
};
Rig* ZeclDevice::rig_ = nullptr;

}  // namespace

// ----------------------------------------------------------------------------------- devices

TEST_F(ZeclDevice, GivenTheLoader_WhenDevicesListed_ThenZeclDeviceHasSaneProperties) {
    const auto& d = dev();
    EXPECT_TRUE(d.isZecl());
    EXPECT_FALSE(d.name().empty());
    EXPECT_GT(d.computeUnits(), 0u);
    EXPECT_GT(d.compute.maxTotalGroupSize, 0u);
    EXPECT_GT(d.props.maxMemAllocSize, 0u);
    EXPECT_GT(d.totalMemory(), 0u);
    EXPECT_GT(d.kernelClock().nsPerTick, 0.0);
    EXPECT_GT(d.props.kernelTimestampValidBits, 0u);
    EXPECT_NO_THROW(d.computeQueueOrdinal());
    EXPECT_EQ(ZE_MAJOR_VERSION(d.apiVersion), 1u);
}

TEST_F(ZeclDevice, GivenTheDeviceList_WhenFormatted_ThenEachDeviceShowsNameAndFormats) {
    auto devices = zp::runtime::listDevices();
    std::string text = zp::runtime::formatDeviceList(devices);
    for (const auto& d : devices) EXPECT_NE(text.find(d.name()), std::string::npos) << text;
    EXPECT_NE(text.find("zecl source bundle"), std::string::npos) << text;
    EXPECT_NE(text.find("fp32 denorm"), std::string::npos) << text;
}

TEST_F(ZeclDevice, GivenSpecs_WhenSelected_ThenIndexAndNamesResolve) {
    auto devices = zp::runtime::listDevices();
    EXPECT_EQ(zp::runtime::selectDevice("0").device, devices[0].device);
    EXPECT_EQ(zp::runtime::selectDevice("zecl").device, dev().device);
    EXPECT_EQ(zp::runtime::selectDevice("").device, dev().device);  // no Intel GPU here
}

TEST_F(ZeclDevice, GivenABadSpec_WhenSelected_ThenErrorNamesTheValueAndTheChoices) {
    for (const char* spec : {"99", "nvidia", "-1"}) {
        try {
            zp::runtime::selectDevice(spec);
            ADD_FAILURE() << "no throw for " << spec;
        } catch (const zp::runtime::Error& e) {
            std::string what = e.what();
            EXPECT_EQ(e.code(), ZE_RESULT_ERROR_INVALID_ARGUMENT);
            EXPECT_NE(what.find(std::string("'") + spec + "'"), std::string::npos) << what;
            EXPECT_NE(what.find("\"zecl\""), std::string::npos) << what;
            EXPECT_NE(what.find("0.."), std::string::npos) << what;
        }
    }
}

TEST_F(ZeclDevice, GivenTheDevice_WhenGlobalTimestampsRead_ThenTheyAdvance) {
    auto a = zp::runtime::globalTimestamps(dev());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto b = zp::runtime::globalTimestamps(dev());
    EXPECT_GT(a.device, 0u);
    EXPECT_GT(b.host, a.host);
    EXPECT_GT(dev().globalClock().durationNs(a.device, b.device), 1e6);  // ≥ 1 ms of the 2 slept
}

// ----------------------------------------------------------------------------------- memory

TEST_F(ZeclDevice, GivenRandomBytes_WhenCopiedHostDeviceDeviceHost_ThenBytesRoundTripExactly) {
    std::mt19937 rng(7);
    std::vector<uint8_t> src(4099);
    for (auto& b : src) b = static_cast<uint8_t>(rng());

    zp::runtime::DeviceBuffer<uint8_t> a(ctx(), dev(), src.size()), b(ctx(), dev(), src.size());
    a.upload(imm(), src);
    imm().memoryCopy(b.data(), a.data(), src.size());
    imm().synchronize();
    EXPECT_EQ(b.download(imm()), src);

    zp::runtime::HostBuffer<uint8_t> h(ctx(), src.size());
    imm().memoryCopy(h.data(), b.data(), src.size());
    std::vector<uint8_t> back(src.size(), 0);
    imm().memoryCopy(back.data(), h.data(), src.size());
    imm().synchronize();
    EXPECT_EQ(back, src);
}

TEST_F(ZeclDevice, GivenASubRange_WhenUploadedAndDownloaded_ThenOnlyThatRangeChanges) {
    zp::runtime::DeviceBuffer<uint32_t> buf(ctx(), dev(), 64);
    buf.fill(imm(), 0u);
    auto part = iota(10, 100);
    buf.upload(imm(), part, 20);
    auto all = buf.download(imm());
    for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], (i >= 20 && i < 30) ? uint32_t(100 + i - 20) : 0u) << i;
    std::vector<uint32_t> window(5);
    buf.download(imm(), window, 22);
    EXPECT_EQ(window, (std::vector<uint32_t>{102, 103, 104, 105, 106}));
}

TEST_F(ZeclDevice, GivenPatterns_WhenFilled_ThenEveryElementHoldsThePattern) {
    zp::runtime::DeviceBuffer<uint32_t> words(ctx(), dev(), 1000);
    words.fill(imm(), 0xDEADBEEFu);
    EXPECT_EQ(words.download(imm()), std::vector<uint32_t>(1000, 0xDEADBEEFu));

    zp::runtime::DeviceBuffer<uint8_t> bytes(ctx(), dev(), 257);
    bytes.fill(imm(), uint8_t{0x00});
    const uint8_t pattern = 0xA5;
    imm().memoryFill(bytes.data() + 1, &pattern, 1, 255);
    imm().synchronize();
    auto got = bytes.download(imm());
    EXPECT_EQ(got.front(), 0x00);
    EXPECT_EQ(got.back(), 0x00);
    EXPECT_TRUE(std::all_of(got.begin() + 1, got.end() - 1, [](uint8_t b) { return b == 0xA5; }));
}

TEST_F(ZeclDevice, GivenARangeBeyondTheBuffer_WhenUploaded_ThenItThrowsBeforeAnyCopy) {
    zp::runtime::DeviceBuffer<uint32_t> buf(ctx(), dev(), 8);
    auto data = iota(8);
    EXPECT_THROW(buf.upload(imm(), data, 1), zp::runtime::Error);
    std::vector<uint32_t> big(9);
    EXPECT_THROW(buf.download(imm(), big), zp::runtime::Error);
}

// ----------------------------------------------------------------------------------- kernels

TEST_F(ZeclDevice, GivenWriteGid_WhenLaunchedOnAnImmediateList_ThenEachElementHoldsItsGlobalId) {
    constexpr uint32_t n = 1024, local = 64;
    zp::runtime::DeviceBuffer<uint32_t> out(ctx(), dev(), n);
    out.fill(imm(), 0xFFFFFFFFu);
    zp::runtime::Kernel k(module(), "write_gid");
    k.setGroupSize(local);
    k.setArg(0, out);
    imm().launch(k, {n / local, 1, 1});
    ASSERT_TRUE(imm().synchronize());
    EXPECT_EQ(out.download(imm()), iota(n));
}

TEST_F(ZeclDevice, GivenSlmSum_WhenLaunchedWithLocalMem_ThenEachGroupSumIsExact) {
    constexpr uint32_t groups = 16, local = 64;
    std::vector<uint32_t> in(groups * local);
    std::mt19937 rng(3);
    for (auto& v : in) v = rng() % 1000;
    std::vector<uint32_t> expected(groups, 0);
    for (uint32_t i = 0; i < in.size(); ++i) expected[i / local] += in[i];

    zp::runtime::DeviceBuffer<uint32_t> din(ctx(), dev(), in.size()), dout(ctx(), dev(), groups);
    din.upload(imm(), in);
    zp::runtime::Kernel k(module(), "slm_sum");
    k.setGroupSize(local);
    k.setArg(0, din);
    k.setArg(1, dout);
    k.setArg(2, zp::runtime::LocalMem{local * sizeof(uint32_t)});
    imm().launch(k, {groups});
    imm().synchronize();
    EXPECT_EQ(dout.download(imm()), expected);
}

TEST_F(ZeclDevice, GivenARecordedRegularList_WhenExecuted1000Times_ThenCounterIs1000) {
    zp::runtime::DeviceBuffer<uint32_t> counter(ctx(), dev(), 1);
    counter.fill(imm(), 0u);
    zp::runtime::Kernel k(module(), "increment");
    k.setGroupSize(1);
    k.setArg(0, counter);

    zp::runtime::CommandQueue queue(ctx(), dev());
    zp::runtime::CommandList list(ctx(), dev());
    list.launch(k, {1});
    list.close();
    for (int i = 0; i < 1000; ++i) queue.execute(list);
    ASSERT_TRUE(queue.synchronize());
    EXPECT_EQ(counter.download(imm())[0], 1000u);
}

TEST_F(ZeclDevice, GivenABarrierBetweenTwoKernels_WhenExecuted_ThenTheSecondSeesTheFirst) {
    constexpr uint32_t n = 256;
    zp::runtime::DeviceBuffer<uint32_t> data(ctx(), dev(), n);
    data.upload(imm(), iota(n));
    zp::runtime::Kernel add(module(), "add_one"), twice(module(), "times_two");
    for (zp::runtime::Kernel* k : {&add, &twice}) {
        k->setGroupSize(64);
        k->setArg(0, data);
    }
    zp::runtime::CommandQueue queue(ctx(), dev());
    zp::runtime::Fence fence(queue);
    zp::runtime::CommandList list(ctx(), dev());
    list.launch(add, {n / 64});
    list.barrier();
    list.launch(twice, {n / 64});
    list.close();
    queue.execute(list, &fence);
    ASSERT_TRUE(fence.hostSynchronize());
    EXPECT_TRUE(fence.isSignaled());
    auto got = data.download(imm());
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(got[i], (i + 1) * 2) << i;  // not 2i+1
}

TEST_F(ZeclDevice, GivenEventsBetweenLists_WhenTheSecondWaits_ThenItRunsAfterTheFirst) {
    constexpr uint32_t n = 128;
    zp::runtime::DeviceBuffer<uint32_t> data(ctx(), dev(), n);
    data.upload(imm(), iota(n));
    zp::runtime::Kernel add(module(), "add_one"), twice(module(), "times_two");
    for (zp::runtime::Kernel* k : {&add, &twice}) {
        k->setGroupSize(32);
        k->setArg(0, data);
    }
    zp::runtime::EventPool pool(ctx(), dev(), 2);
    zp::runtime::Event first(pool, 0), second(pool, 1);
    zp::runtime::CommandQueue queue(ctx(), dev());
    zp::runtime::CommandList a(ctx(), dev()), b(ctx(), dev());
    b.launch(twice, {n / 32}, &second, {&first});
    b.close();
    a.launch(add, {n / 32}, &first);
    a.close();
    queue.execute({&a, &b});
    ASSERT_TRUE(second.hostSynchronize());
    EXPECT_TRUE(first.isSignaled());
    queue.synchronize();
    auto got = data.download(imm());
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(got[i], (i + 1) * 2) << i;
    first.hostReset();
    EXPECT_FALSE(first.isSignaled());
}

TEST_F(ZeclDevice, GivenKernelTimestampEvents_WhenTwoKernelsRunInOrder_ThenTimestampsAreOrderedAndNonZero) {
    constexpr uint32_t n = 1 << 16;
    zp::runtime::DeviceBuffer<uint32_t> out(ctx(), dev(), n);
    zp::runtime::Kernel k(module(), "write_gid");
    k.setGroupSize(64);
    k.setArg(0, out);
    zp::runtime::EventPool pool(ctx(), dev(), 2, {.hostVisible = true, .kernelTimestamps = true});
    zp::runtime::Event e0(pool, 0), e1(pool, 1);
    zp::runtime::CommandQueue queue(ctx(), dev());
    zp::runtime::CommandList list(ctx(), dev());
    list.launch(k, {n / 64}, &e0);
    list.launch(k, {n / 64}, &e1, {&e0});
    list.close();
    queue.execute(list);
    queue.synchronize();

    auto t0 = e0.kernelTimestamp(), t1 = e1.kernelTimestamp();
    auto clock = dev().kernelClock();
    EXPECT_GT(t0.global.kernelStart, 0u);
    EXPECT_GE(t0.global.kernelEnd, t0.global.kernelStart);
    EXPECT_GE(t1.global.kernelStart, t0.global.kernelEnd);
    EXPECT_GE(t1.global.kernelEnd, t1.global.kernelStart);
    const double d0 = clock.durationNs(t0.global.kernelStart, t0.global.kernelEnd);
    EXPECT_GT(d0, 0.0);
    EXPECT_LT(d0, 10e9);  // a 64 Ki-element write does not take 10 s
    EXPECT_DOUBLE_EQ(zp::runtime::timestampToNs(dev(), t0.global.kernelStart), clock.toNs(t0.global.kernelStart));
}

TEST_F(ZeclDevice, GivenGlobalTimestampWrites_WhenAroundAKernel_ThenTheSecondIsNotEarlier) {
    zp::runtime::DeviceBuffer<uint64_t> stamps(ctx(), dev(), 2);
    zp::runtime::DeviceBuffer<uint32_t> out(ctx(), dev(), 4096);
    zp::runtime::Kernel k(module(), "write_gid");
    k.setGroupSize(64);
    k.setArg(0, out);
    imm().writeGlobalTimestamp(stamps.data());
    imm().barrier();
    imm().launch(k, {4096 / 64});
    imm().barrier();
    imm().writeGlobalTimestamp(stamps.data() + 1);
    imm().synchronize();
    auto t = stamps.download(imm());
    EXPECT_GT(t[0], 0u);
    EXPECT_GE(t[1], t[0]);
}

TEST_F(ZeclDevice, GivenAKernel_WhenQueried_ThenPropertiesAndSuggestionsAreUsable) {
    zp::runtime::Kernel k(module(), "slm_sum");
    EXPECT_EQ(k.properties().numKernelArgs, 3u);
    auto g = k.suggestGroupSize(1024);
    EXPECT_GE(g.x, 1u);
    EXPECT_EQ(1024 % g.x, 0u);
    auto names = module().kernelNames();
    EXPECT_NE(std::find(names.begin(), names.end(), "write_gid"), names.end());
}

// ------------------------------------------------------------------------------- error paths

TEST_F(ZeclDevice, GivenAnUnknownKernelName_WhenCreated_ThenErrorNamesItAndListsTheModulesKernels) {
    try {
        zp::runtime::Kernel k(module(), "no_such_kernel");
        FAIL() << "no throw";
    } catch (const zp::runtime::Error& e) {
        EXPECT_NE(e.code(), ZE_RESULT_SUCCESS);
        std::string what = e.what();
        EXPECT_NE(what.find("no_such_kernel"), std::string::npos) << what;
        EXPECT_NE(what.find("write_gid"), std::string::npos) << what;
    }
}

TEST_F(ZeclDevice, GivenSourceThatDoesNotCompile_WhenBuilt_ThenErrorCarriesTheBuildLog) {
    auto bad = bundle("kernel void broken(global int* p) { p[0] = undeclared_symbol; }");
    try {
        auto m = zp::runtime::Module::fromSourceBundle(ctx(), dev(), bad);
        FAIL() << "no throw";
    } catch (const zp::runtime::Error& e) {
        EXPECT_EQ(e.code(), ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
        EXPECT_NE(e.extra().find("undeclared_symbol"), std::string::npos) << e.extra();
    }
}

TEST_F(ZeclDevice, GivenAnAllocationLargerThanTheDevice_WhenAllocated_ThenErrorIsThrown) {
    const size_t huge = std::max<uint64_t>(dev().totalMemory(), dev().props.maxMemAllocSize) * 4;
    try {
        zp::runtime::DeviceBuffer<uint8_t> b(ctx(), dev(), huge);
        FAIL() << "allocated " << huge << " bytes";
    } catch (const zp::runtime::Error& e) {
        EXPECT_NE(e.code(), ZE_RESULT_SUCCESS);
        EXPECT_NE(std::string(e.what()).find(std::to_string(huge)), std::string::npos) << e.what();
    }
}

TEST_F(ZeclDevice, GivenMovedFromAndDestroyedHandles_WhenUsed_ThenTheyThrowNullHandle) {
    zp::runtime::Kernel k(module(), "write_gid");
    zp::runtime::Kernel moved = std::move(k);
    EXPECT_FALSE(k);
    EXPECT_TRUE(moved);
    auto expectNull = [](auto&& f) {
        try {
            f();
            ADD_FAILURE() << "no throw";
        } catch (const zp::runtime::Error& e) {
            EXPECT_EQ(e.code(), ZE_RESULT_ERROR_INVALID_NULL_HANDLE) << e.what();
        }
    };
    expectNull([&] { k.setArg(0, 1u); });
    expectNull([&] { imm().launch(k, {1}); });

    zp::runtime::DeviceBuffer<uint32_t> buf(ctx(), dev(), 4);
    buf.destroy();
    buf.destroy();  // idempotent
    expectNull([&] { (void)buf.data(); });
    expectNull([&] { moved.setArg(0, buf); });

    zp::runtime::CommandList list(ctx(), dev());
    zp::runtime::CommandList other = std::move(list);
    expectNull([&] { list.close(); });
    zp::runtime::CommandQueue queue(ctx(), dev());
    expectNull([&] { queue.execute(list); });
    other.destroy();
    expectNull([&] { other.barrier(); });

    zp::runtime::Event ev;
    expectNull([&] { ev.hostSignal(); });
    expectNull([&] { imm().barrier(nullptr, {&ev}); });
    zp::runtime::Context noCtx;
    expectNull([&] { zp::runtime::DeviceBuffer<int> b(noCtx, dev(), 1); });
    zp::runtime::DeviceInfo noDevice;
    expectNull([&] { zp::runtime::CommandList l(ctx(), noDevice); });
}

// Guards the ctest wiring: the device tests are meant to run under the validation layer.
TEST_F(ZeclDevice, GivenTheValidationLayerRequested_WhenInitialised_ThenTheLoaderHasLoadedIt) {
    const char* requested = std::getenv("ZE_ENABLE_VALIDATION_LAYER");
    if (!requested || std::string(requested) != "1") GTEST_SKIP() << "ZE_ENABLE_VALIDATION_LAYER is not 1";
    std::ifstream maps("/proc/self/maps");
    std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("libze_validation_layer"), std::string::npos);
    const char* param = std::getenv("ZE_ENABLE_PARAMETER_VALIDATION");
    EXPECT_TRUE(param && std::string(param) == "1") << "parameter validation is off";
}

// ------------------------------------------------------------------------- cooperative launches

namespace {

// One grid barrier between a write and a read of another group's slot (after kGridBarrierHeader,
// kernels_cl/common/zp_grid_barrier.h embedded at build time).
constexpr const char* kGridKernel = R"CL(
kernel void grid_swap(global uint *slots, global uint *out, volatile global uint *state) {
    const uint n = (uint)get_global_size(0), gid = (uint)get_global_id(0);
    ZP_GRID_SHARED uint *shared = slots;
    shared[gid] = gid + 1u;
    zp_grid_barrier(state);
    out[gid] = shared[(gid + (uint)get_local_size(0)) % n];
}
)CL";

// zp_grid_rank: each group publishes the compute unit the test says it runs on and records its rank.
constexpr const char* kRankKernel = R"CL(
kernel void grid_rank(global const uint *cus, global uint *ranks, volatile global uint *state) {
    local int scratch[ZP_GRID_RANK_LOCAL_INTS];
    const uint rank = zp_grid_rank(state, cus[get_group_id(0)], scratch);
    if (get_local_id(0) == 0) ranks[get_group_id(0)] = rank;
}
)CL";

// zp_grid_rank_of alone, over units the test gives for n groups (a plain launch of n groups).
constexpr const char* kRankOfKernel = R"CL(
kernel void grid_rank_of(global const uint *cus, uint n, global uint *ranks) {
    local int scratch[ZP_GRID_RANK_LOCAL_INTS];
    const uint rank = zp_grid_rank_of(cus, n, get_group_id(0), scratch);
    if (get_local_id(0) == 0) ranks[get_group_id(0)] = rank;
}
)CL";

// The ranks zp_grid_rank must give: the groups sorted by (slot, unit), the slot being how many
// groups before it share its unit; every group its own id when a unit is out of range.
std::vector<uint32_t> expectedRanks(const std::vector<uint32_t>& cus, uint32_t maxCus) {
    std::vector<uint32_t> ranks(cus.size());
    std::iota(ranks.begin(), ranks.end(), 0u);
    if (std::any_of(cus.begin(), cus.end(), [&](uint32_t c) { return c >= maxCus; })) return ranks;
    std::vector<std::pair<uint32_t, uint32_t>> keys;  // (slot, unit)
    for (size_t g = 0; g < cus.size(); ++g)
        keys.emplace_back(uint32_t(std::count(cus.begin(), cus.begin() + std::ptrdiff_t(g), cus[g])), cus[g]);
    std::vector<uint32_t> order(cus.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
    for (uint32_t r = 0; r < order.size(); ++r) ranks[order[r]] = r;
    return ranks;
}

}  // namespace

TEST_F(ZeclDevice,
       GivenMadeUpPlacements_WhenTheGridRanksItsGroups_ThenRanksSpreadOverUnitsAndTheCountsResetThemselves) {
    zp::runtime::Module m =
        zp::runtime::Module::fromSourceBundle(ctx(), dev(), bundle(std::string(kGridBarrierHeader) + kRankKernel));
    zp::runtime::Kernel k(m, "grid_rank");
    k.setGroupSize(8);
    const uint32_t groups = k.suggestMaxCooperativeGroupCount();
    ASSERT_GE(groups, 1u);
    zp::runtime::DeviceBuffer<uint32_t> cus(ctx(), dev(), groups), ranks(ctx(), dev(), groups),
        state(ctx(), dev(), 2 + groups);
    state.fill(imm(), 0u);
    k.setArg(0, cus);
    k.setArg(1, ranks);
    k.setArg(2, state);
    const uint32_t maxCus = 512;  // ZP_GRID_RANK_MAX_CUS
    struct Placement {
        const char* name;
        std::vector<uint32_t> cus;
    };
    std::vector<Placement> placements(4);
    placements[0].name = "uneven: 7 units";
    placements[1].name = "two per unit, the later ones first";
    placements[2].name = "all on one unit";
    placements[3].name = "one unit out of range";
    for (uint32_t g = 0; g < groups; ++g) {
        placements[0].cus.push_back((g * 5 + 3) % 7);
        placements[1].cus.push_back((groups - 1 - g) / 2);
        placements[2].cus.push_back(300);
        placements[3].cus.push_back(g == groups / 2 ? maxCus : g % 3);
    }
    for (int round = 0; round < 2; ++round)  // a second launch starts from the counts the first left
        for (const auto& p : placements) {
            cus.upload(imm(), p.cus);
            imm().launchCooperative(k, {groups});
            ASSERT_TRUE(imm().synchronize(60ull * 1000000000ull)) << p.name << ": the groups did not finish";
            const auto got = ranks.download(imm());
            const auto want = expectedRanks(p.cus, maxCus);
            for (uint32_t g = 0; g < groups; ++g)
                ASSERT_EQ(got[g], want[g]) << p.name << ", round " << round << ": group " << g << " of " << groups
                                           << " (unit " << p.cus[g] << ")";
            const auto words = state.download(imm());
            ASSERT_EQ(words[0], 0u) << p.name << ": the published count was left non-zero";
            ASSERT_EQ(words[1], 0u) << p.name << ": the ranked count was left non-zero";
        }
}

TEST_F(ZeclDevice, GivenPlacementsOfManyGroups_WhenEachGroupRanksItself_ThenTheRanksSortTheGroupsBySlotThenUnit) {
    zp::runtime::Module m =
        zp::runtime::Module::fromSourceBundle(ctx(), dev(), bundle(std::string(kGridBarrierHeader) + kRankOfKernel));
    zp::runtime::Kernel k(m, "grid_rank_of");
    k.setGroupSize(32);
    std::mt19937 rng(7);
    struct Placement {
        std::string name;
        std::vector<uint32_t> cus;
    };
    std::vector<Placement> placements;
    auto add = [&](std::string name, uint32_t n, auto cuOf) {
        Placement p{std::move(name), {}};
        for (uint32_t g = 0; g < n; ++g) p.cus.push_back(cuOf(g));
        placements.push_back(std::move(p));
    };
    // the H200's: ids 0-7 on SMs 124-131, then TPC pairs across the GPCs, two rounds of 132
    add("264 groups, two per SM", 264,
        [](uint32_t g) { return g % 132 < 8 ? 124 + g % 132 : (g % 132 - 8) * 7 % 124; });
    add("264 groups, 3 on some units, 1 on others", 264, [](uint32_t g) { return g * g % 131; });
    add("1000 groups on 511 units at random", 1000, [&](uint32_t) { return uint32_t(rng() % 512); });
    add("one group", 1, [](uint32_t) { return 5u; });
    add("100 groups, one on unit 512", 100, [](uint32_t g) { return g == 99 ? 512u : g % 10; });
    for (const auto& p : placements) {
        const uint32_t n = uint32_t(p.cus.size());
        zp::runtime::DeviceBuffer<uint32_t> cus(ctx(), dev(), n), ranks(ctx(), dev(), n);
        cus.upload(imm(), p.cus);
        k.setArg(0, cus);
        k.setArg(1, n);
        k.setArg(2, ranks);
        imm().launch(k, {n});
        ASSERT_TRUE(imm().synchronize(60ull * 1000000000ull)) << p.name;
        const auto got = ranks.download(imm());
        const auto want = expectedRanks(p.cus, 512);
        for (uint32_t g = 0; g < n; ++g)
            ASSERT_EQ(got[g], want[g]) << p.name << ": group " << g << " (unit " << p.cus[g] << ")";
    }
}

TEST_F(ZeclDevice, GivenAGridBarrierKernel_WhenLaunchedCooperativelyAtTheSuggestedCount_ThenEveryGroupSeesTheOthers) {
    zp::runtime::Module m =
        zp::runtime::Module::fromSourceBundle(ctx(), dev(), bundle(std::string(kGridBarrierHeader) + kGridKernel));
    zp::runtime::Kernel k(m, "grid_swap");
    constexpr uint32_t items = 8;
    k.setGroupSize(items);
    const uint32_t groups = k.suggestMaxCooperativeGroupCount();
    ASSERT_GE(groups, 1u);
    const size_t n = size_t(groups) * items;
    zp::runtime::DeviceBuffer<uint32_t> slots(ctx(), dev(), n), out(ctx(), dev(), n), state(ctx(), dev(), 2);
    state.fill(imm(), 0u);
    k.setArg(0, slots);
    k.setArg(1, out);
    k.setArg(2, state);
    imm().launchCooperative(k, {groups});
    ASSERT_TRUE(imm().synchronize(60ull * 1000000000ull)) << groups << " groups did not finish: not co-resident";
    auto got = out.download(imm());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], uint32_t((i + items) % n + 1)) << "item " << i;
}

TEST_F(ZeclDevice, GivenAGridAboveTheSuggestedCount_WhenLaunchedCooperatively_ThenErrorNamesTheCallAndTheGrid) {
    zp::runtime::Module m =
        zp::runtime::Module::fromSourceBundle(ctx(), dev(), bundle(std::string(kGridBarrierHeader) + kGridKernel));
    zp::runtime::Kernel k(m, "grid_swap");
    k.setGroupSize(8);
    zp::runtime::DeviceBuffer<uint32_t> buf(ctx(), dev(), 8);
    for (uint32_t i = 0; i < 3; ++i) k.setArg(i, buf);
    const uint32_t over = k.suggestMaxCooperativeGroupCount() + 1;
    try {
        imm().launchCooperative(k, {over});
        FAIL() << "no throw";
    } catch (const zp::runtime::Error& e) {
        EXPECT_EQ(e.code(), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        std::string what = e.what();
        EXPECT_NE(what.find("zeCommandListAppendLaunchCooperativeKernel"), std::string::npos) << what;
        EXPECT_NE(what.find("grid_swap"), std::string::npos) << what;
        EXPECT_NE(what.find(std::to_string(over) + "x1x1"), std::string::npos) << what;
    }
}
