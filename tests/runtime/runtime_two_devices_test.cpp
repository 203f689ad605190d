// Two zecl devices (two PoCL CPU devices) used at once from two threads. Its own executable:
// ctest runs it with POCL_DEVICES="pthread pthread".
#include "runtime_test_support.hpp"

#include <gtest/gtest.h>

#include <exception>
#include <thread>
#include <vector>

using namespace zp_runtime_test;

TEST(TwoDevices, GivenTwoZeclDevices_WhenUsedFromTwoThreadsAtOnce_ThenBothComputeCorrectly) {
    initForTests();
    std::vector<zp::runtime::DeviceInfo> zecl;
    for (auto& d : zp::runtime::listDevices())
        if (d.isZecl()) zecl.push_back(d);
    ASSERT_GE(zecl.size(), 2u) << "run with POCL_DEVICES=\"pthread pthread\" (PoCL 3.1; \"cpu cpu\" on PoCL >= 4)\n"
                               << zp::runtime::formatDeviceList();
    ASSERT_NE(zecl[0].device, zecl[1].device);

    constexpr uint32_t n = 4096, rounds = 50;
    std::exception_ptr errors[2];
    std::vector<uint32_t> results[2];
    auto work = [&](int i) {
        try {
            Rig rig(zecl[i]);
            zp::runtime::DeviceBuffer<uint32_t> out(rig.ctx, rig.dev, n), counter(rig.ctx, rig.dev, 1);
            counter.fill(rig.imm, 0u);
            zp::runtime::Kernel gid(rig.module, "write_gid"), inc(rig.module, "increment");
            gid.setGroupSize(64);
            gid.setArg(0, out);
            inc.setGroupSize(1);
            inc.setArg(0, counter);
            zp::runtime::CommandQueue queue(rig.ctx, rig.dev);
            zp::runtime::CommandList list(rig.ctx, rig.dev);
            list.launch(gid, {n / 64});
            list.launch(inc, {1});
            list.close();
            for (uint32_t r = 0; r < rounds; ++r) queue.execute(list);
            queue.synchronize();
            results[i] = out.download(rig.imm);
            results[i].push_back(counter.download(rig.imm)[0]);
        } catch (...) {
            errors[i] = std::current_exception();
        }
    };
    std::thread t0(work, 0), t1(work, 1);
    t0.join();
    t1.join();
    for (int i = 0; i < 2; ++i) {
        if (errors[i]) {
            try {
                std::rethrow_exception(errors[i]);
            } catch (const std::exception& e) {
                FAIL() << "device " << i << ": " << e.what();
            }
        }
        auto expected = iota(n);
        expected.push_back(rounds);
        EXPECT_EQ(results[i], expected) << "device " << i;
    }
}
