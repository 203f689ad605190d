// zecl-launch-bench: what zecl + the loader cost per kernel launch over raw OpenCL.
//
// On one OpenCL device, an empty kernel with P pointer arguments (--pointers, default 1) is
// launched N times back to back
//   (a) through a recorded regular command list via zp::runtime (zecl under the Level Zero loader),
//   (b) through an immediate command list via zp::runtime (for reference),
//   (c) through raw OpenCL on the same device (clEnqueueNDRangeKernel on an in-order queue), the
//       pointers bound as buffers, and (d) as SVM pointers, as zecl binds them,
// and the per-launch time (wall clock of submit..completion / N) is printed for each, with the
// ratio (a)/(c). What an enqueue costs per pointer argument decides a short kernel's replay on
// some drivers (NVIDIA's OpenCL: docs/perf.md "What is one_launch made of?"). A program that
// prints figures, not a test.
#include "raw_opencl.hpp"

#include "zp/cli/cli.hpp"
#include "zp/cli/option_values.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/device_setup.hpp"
#include "zecl/source_bundle.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace zp::bench;

struct Stats {
    double min = 0, median = 0, max = 0;
};

Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    Stats s;
    s.min = v.front();
    s.max = v.back();
    s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    return s;
}

template <class F>
std::vector<double> timeRepeats(int repeats, uint32_t launches, F&& once) {
    once();  // warm-up: first-submit costs (JIT, queue setup) are not launch overhead
    std::vector<double> perLaunchUs;
    for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        once();
        auto t1 = std::chrono::steady_clock::now();
        perLaunchUs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / launches);
    }
    return perLaunchUs;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Per-launch cost of an empty kernel: zecl regular command list vs raw OpenCL"};
    // Read as text, then as strict decimals (zp/cli/option_values.hpp): CLI11 reads "0x10" as 16.
    std::string launchesText = "10000", repeatsText = "5", pointersText = "1";
    std::string deviceSpec = "zecl";
    std::optional<std::string> clDeviceText;
    std::optional<std::string> zeclPath;
    app.add_option("-n,--launches", launchesText, "launches per timed run, 1..10000000")->capture_default_str();
    app.add_option("-r,--repeats", repeatsText, "timed runs (after one warm-up), 1..1000")->capture_default_str();
    app.add_option("-p,--pointers", pointersText, "pointer arguments of the empty kernel, 1..64")
        ->capture_default_str();
    app.add_option("-d,--device", deviceSpec, "Level Zero device: \"\", intel, zecl or an index (see --list)");
    app.add_option("--cl-device", clDeviceText, "OpenCL device index (flat over platforms); default: same name");
    app.add_option("--zecl", zeclPath, "path of libze_zecl.so (default: $ZP_ZECL_PATH, next to this tool, ...)");
    bool list = false;
    app.add_flag("--list", list, "list Level Zero and OpenCL devices and exit");
    if (const int rc = zp::cli::parse(app, "zecl-launch-bench", argc, argv); rc >= 0) return rc;

    try {
        const auto launches = std::uint32_t(zp::cli::parseUnsignedOption(launchesText, "--launches", 1, 10'000'000));
        const int repeats = zp::cli::parseCountOption(repeatsText, "--repeats", 1, 1000);
        const int pointers = zp::cli::parseCountOption(pointersText, "--pointers", 1, 64);
        zp::cli::refuseEmptyValues(app, {"--cl-device", "--zecl"});
        if (zeclPath) {
            // Only read when ZE_ENABLE_ALT_DRIVERS is unset: else it would be ignored without a word.
            if (const char* alt = std::getenv("ZE_ENABLE_ALT_DRIVERS"); alt && *alt)
                throw std::invalid_argument("--zecl " + *zeclPath + ": ZE_ENABLE_ALT_DRIVERS (" + alt +
                                            ") is set and decides the drivers; unset it or leave --zecl out");
            std::error_code ec;
            if (!std::filesystem::is_regular_file(*zeclPath, ec))
                throw std::invalid_argument("--zecl " + *zeclPath + ": not a file (the path of libze_zecl.so)");
        }
        zp::runtime::InitOptions init;
        init.setAltDriversIfUnset = true;
        init.zeclPath = zeclPath;
        zp::runtime::init(init);

        std::vector<cl_device_id> clDevices = clAllDevices();
        if (list) {
            fmt::print("Level Zero:\n{}OpenCL:\n", zp::runtime::formatDeviceList());
            for (size_t i = 0; i < clDevices.size(); ++i) fmt::print("  [{}] {}\n", i, clDeviceName(clDevices[i]));
            return 0;
        }

        zp::runtime::DeviceInfo dev = [&] {
            try {
                return zp::scheduler::selectDevice(deviceSpec);
            } catch (const zp::scheduler::NoSuchDevice& e) {
                throw std::invalid_argument("--device " + e.spec() + ": " + e.reason());
            }
        }();
        cl_device_id cl = nullptr;
        if (clDeviceText) {
            if (clDevices.empty()) throw std::invalid_argument("--cl-device " + *clDeviceText + ": no OpenCL device");
            cl = clDevices[zp::cli::parseUnsignedOption(*clDeviceText, "--cl-device", 0, clDevices.size() - 1)];
        } else {
            for (cl_device_id d : clDevices)
                if (clDeviceName(d) == dev.name()) {
                    cl = d;
                    break;
                }
            if (!cl)
                throw std::invalid_argument(
                    fmt::format("no OpenCL device named '{}'; pick one with --cl-device (see --list)", dev.name()));
        }
        if (!dev.isZecl())
            fmt::print("note: device {} is driven by '{}', not zecl\n", dev.index,
                       zp::runtime::driverKindName(dev.kind));

        // (a) and (b): zp::runtime
        zp::runtime::Context ctx(dev);
        std::vector<uint8_t> b = zecl::makeSourceBundle("-cl-std=CL1.2", noopKernelSource(pointers));
        std::vector<std::byte> bytes(b.size());
        std::memcpy(bytes.data(), b.data(), b.size());
        zp::runtime::Module module = zp::runtime::Module::fromSourceBundle(ctx, dev, bytes);
        zp::runtime::Kernel kernel(module, "noop");
        std::vector<zp::runtime::DeviceBuffer<int32_t>> sinks;
        for (int i = 0; i < pointers; ++i) {
            sinks.emplace_back(ctx, dev, 1);
            kernel.setArg(std::uint32_t(i), sinks.back());
        }
        kernel.setArg(std::uint32_t(pointers), int32_t{0});
        kernel.setGroupSize(1);
        zp::runtime::CommandQueue queue(ctx, dev);
        zp::runtime::CommandList regular(ctx, dev);
        auto r0 = std::chrono::steady_clock::now();
        for (uint32_t i = 0; i < launches; ++i) regular.launch(kernel, {1, 1, 1});
        regular.close();
        auto r1 = std::chrono::steady_clock::now();
        const double recordUs = std::chrono::duration<double, std::micro>(r1 - r0).count() / launches;

        auto zeRegular = timeRepeats(repeats, launches, [&] {
            queue.execute(regular);
            queue.synchronize();
        });
        zp::runtime::ImmediateCommandList imm(ctx, dev);
        auto zeImmediate = timeRepeats(repeats, launches, [&] {
            for (uint32_t i = 0; i < launches; ++i) imm.launch(kernel, {1, 1, 1});
            imm.synchronize();
        });

        // (c): raw OpenCL on the same device
        auto raw = rawOpenClLaunchUs(cl, launches, repeats, pointers, ClPointers::buffers);
        std::optional<Stats> sv;  // a device without SVM has no such row (zecl itself needs SVM)
        std::string noSvm;
        try {
            sv = stats(rawOpenClLaunchUs(cl, launches, repeats, pointers, ClPointers::svm));
        } catch (const std::runtime_error& e) {
            noSvm = e.what();
        }

        Stats a = stats(zeRegular), im = stats(zeImmediate), c = stats(raw);
        fmt::print("device: [{}] {} ({}), OpenCL: {}\n", dev.index, dev.name(), zp::runtime::driverKindName(dev.kind),
                   clDeviceName(cl));
        fmt::print(
            "{} launches x {} repeats of an empty kernel with {} pointer argument(s); per-launch µs (min / "
            "median / max)\n",
            launches, repeats, pointers);
        fmt::print("  ze regular list (replay)   {:8.3f} {:8.3f} {:8.3f}   (recording: {:.3f} µs/launch)\n", a.min,
                   a.median, a.max, recordUs);
        fmt::print("  ze immediate list          {:8.3f} {:8.3f} {:8.3f}\n", im.min, im.median, im.max);
        fmt::print("  raw OpenCL                 {:8.3f} {:8.3f} {:8.3f}\n", c.min, c.median, c.max);
        if (sv)
            fmt::print("  raw OpenCL, SVM pointers   {:8.3f} {:8.3f} {:8.3f}\n", sv->min, sv->median, sv->max);
        else
            fmt::print("  raw OpenCL, SVM pointers   not timed: {}\n", noSvm);
        fmt::print("ratio ze regular / OpenCL (median): {:.2f}x\n", a.median / c.median);
        fmt::print("ratio ze immediate / OpenCL (median): {:.2f}x\n", im.median / c.median);
        return 0;
    } catch (const std::invalid_argument& e) {  // a device that is not there (docs/usage.md "Exit codes")
        fmt::print(stderr, "zecl-launch-bench: error: {}\n", e.what());
        return 2;
    } catch (const std::exception& e) {  // every other failure is a Level Zero or OpenCL call's
        fmt::print(stderr, "zecl-launch-bench: device error: {}\n", e.what());
        return 3;
    }
}
