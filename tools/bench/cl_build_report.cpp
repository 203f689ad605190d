// zp-cl-build-report: what an OpenCL device's own compiler makes of every kernel of
// kernels_cl/ at a tuning: per kernel the registers, spill and stack bytes its compiler reports
// (NVIDIA: ptxas through -cl-nv-verbose) and the private memory, local memory and largest
// work-group the OpenCL runtime reports. The Xe2 rows of the same table come from ocloc at build
// time (spirv/, kernel-report.md); this is the other devices' half, run where the device is.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "raw_opencl.hpp"
#include "zp/probe/file_io.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/cli/cli.hpp"
#include "zp/scheduler/kernel_tuning.hpp"

namespace {

struct PtxasFigures {
    std::string registers = "-", spillStores = "-", spillLoads = "-", stack = "-";
};

// ptxas -v output of NVIDIA's OpenCL build log, by entry function.
std::map<std::string, PtxasFigures> parsePtxas(const std::string& log) {
    std::map<std::string, PtxasFigures> out;
    const std::regex entry(R"(Compiling entry function '([A-Za-z0-9_]+)')"),
        props(R"(Function properties for ([A-Za-z0-9_]+))"),
        frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)"),
        regs(R"(Used (\d+) registers)");
    std::istringstream in(log);
    std::string line, current;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, entry) || std::regex_search(line, m, props)) current = m[1];
        if (current.empty()) continue;
        if (std::regex_search(line, m, frame)) {
            out[current].stack = m[1];
            out[current].spillStores = m[2];
            out[current].spillLoads = m[3];
        }
        if (std::regex_search(line, m, regs)) out[current].registers = m[1];
    }
    return out;
}

std::string buildLog(cl_program program, cl_device_id dev) {
    size_t n = 0;
    clGetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string s(n, '\0');
    clGetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr);
    return s;
}

cl_device_id firstGpuOrAny() {
    const auto all = zp::bench::clAllDevices();
    for (cl_device_id d : all) {
        cl_device_type type = 0;
        clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
        if (type & CL_DEVICE_TYPE_GPU) return d;
    }
    if (all.empty()) throw std::runtime_error("no OpenCL device");
    return all.front();
}

// The program's (one device's) binary as the driver returns it, e.g. PTX text on NVIDIA.
void writeBinary(cl_program prog, const std::filesystem::path& path) {
    size_t size = 0;
    zp::bench::clCheck(clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr),
                       "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
    std::string bytes(size, '\0');
    unsigned char* data = reinterpret_cast<unsigned char*>(bytes.data());
    zp::bench::clCheck(clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr),
                       "clGetProgramInfo(CL_PROGRAM_BINARIES)");
    zp::probe::writeFileAtomically(path, bytes, "--binaries");
}

// The kernel files (*.cl) of the kernels folder, sorted; none is bad input (a report of no
// kernels, exit 0, would look like a run).
std::vector<std::filesystem::path> clFiles(const std::string& dir) {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".cl") files.push_back(it->path());
    if (ec) throw std::invalid_argument("--kernels-dir " + dir + ": " + ec.message());
    if (files.empty()) throw std::invalid_argument("--kernels-dir " + dir + ": no kernel files (*.cl) in it");
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Registers, spills and local memory of every kernel of kernels_cl/ on an OpenCL device"};
    std::string deviceName, tuningText, dir = "kernels_cl";
    app.add_option("--device", deviceName, "the OpenCL device's name (default: the first GPU, else the first device)");
    bool rawLog = false;
    app.add_flag("--log", rawLog, "also print each file's build log (to stderr)");
    app.add_option("--tuning", tuningText, "kernel tuning (KernelTuning::parse), default the packaged tiles");
    app.add_option("--kernels-dir", dir, "the kernels' source folder")->check(CLI::ExistingDirectory);
    std::string binariesDir;
    app.add_option("--binaries", binariesDir,
                   "also write each file's program binary to DIR/<file>.ptx (NVIDIA: the PTX its ptxas assembles) or "
                   "DIR/<file>.bin");
    bool optionsOnly = false;
    app.add_flag("--options-only", optionsOnly,
                 "print each file's build options at the tuning (`<file> <options>` lines) and build nothing "
                 "(tools/bench/xe2_report.sh: the same tiles through clang, llvm-spirv and ocloc)")
        ->excludes("--device", "--log", "--binaries");
    if (const int rc = zp::cli::parse(app, "zp-cl-build-report", argc, argv); rc >= 0) return rc;
    try {
        // given but empty: not the default they would otherwise silently fall back to
        zp::cli::refuseEmptyValues(app, {"--device", "--binaries"});
        // ablation tunings build (they are wrong only when run): their code is what --ablation times
        const auto tuning =
            zp::scheduler::KernelTuning::parse(tuningText, zp::scheduler::KernelTuning::Ablation::allowed);
        if (optionsOnly) {
            for (const auto& f : clFiles(dir))
                fmt::print("{} {}\n", f.stem().string(), tuning.forKernelFile(f.stem().string()).buildOptions());
            return 0;
        }
        if (!binariesDir.empty()) zp::probe::checkOutputDir(binariesDir, "--binaries");
        cl_device_id dev = nullptr;
        if (deviceName.empty()) {
            dev = firstGpuOrAny();
        } else {
            std::string names;
            for (cl_device_id d : zp::bench::clAllDevices()) {
                const std::string n = zp::bench::clDeviceName(d);
                if (n == deviceName) dev = d;
                names += (names.empty() ? "'" : ", '") + n + "'";
            }
            if (!dev)  // bad input, exit 2, as ze-probe's --device
                throw std::invalid_argument(
                    "--device '" + deviceName +
                    "': no OpenCL device of that name (there are: " + (names.empty() ? "none" : names) + ")");
        }
        const std::string name = zp::bench::clDeviceName(dev);
        constexpr cl_uint kNvidiaVendorId = 0x10de;
        cl_uint vendor = 0;
        clGetDeviceInfo(dev, CL_DEVICE_VENDOR_ID, sizeof vendor, &vendor, nullptr);
        const bool nvidia = vendor == kNvidiaVendorId;  // ptxas prints its figures with -cl-nv-verbose
        cl_int err = CL_SUCCESS;
        cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
        zp::bench::clCheck(err, "clCreateContext");
        const std::vector<std::filesystem::path> files = clFiles(dir);
        fmt::print("device: {}\ntuning: {}\n\n", name, tuning.describe());
        fmt::print(
            "| file | kernel | registers | spill stores B | spill loads B | stack B | private B | local B | max "
            "work-group |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        int failed = 0;
        for (const auto& f : files) {
            const std::string src = zp::probe::readTextFile(f, "kernel source"), stem = f.stem().string();
            const char* text = src.c_str();
            cl_program prog = clCreateProgramWithSource(ctx, 1, &text, nullptr, &err);
            zp::bench::clCheck(err, "clCreateProgramWithSource");
            const std::string options = "-cl-std=CL1.2 -I " + dir + " " + tuning.forKernelFile(stem).buildOptions() +
                                        (nvidia ? " -cl-nv-verbose" : "") +
                                        (nvidia ? tuning.nvidiaRegisterOptions() : "");
            if (clBuildProgram(prog, 1, &dev, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
                fmt::print("| {} | BUILD FAILED | | | | | | | |\n", stem);
                fmt::print(stderr, "{}: build failed:\n{}\n", stem, buildLog(prog, dev));
                ++failed;
                clReleaseProgram(prog);
                continue;
            }
            const std::string log = buildLog(prog, dev);
            if (rawLog) fmt::print(stderr, "== {} build log:\n{}\n", stem, log);
            const auto ptxas = parsePtxas(log);
            if (!binariesDir.empty())
                writeBinary(prog, std::filesystem::path(binariesDir) / (stem + (nvidia ? ".ptx" : ".bin")));
            cl_uint n = 0;
            clCreateKernelsInProgram(prog, 0, nullptr, &n);
            std::vector<cl_kernel> kernels(n);
            clCreateKernelsInProgram(prog, n, kernels.data(), nullptr);
            for (cl_kernel k : kernels) {
                size_t len = 0;
                clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &len);
                std::string kname(len, '\0');
                clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, len, kname.data(), nullptr);
                kname.resize(std::strlen(kname.c_str()));
                cl_ulong priv = 0, local = 0;
                size_t wg = 0;
                clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv, nullptr);
                clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, nullptr);
                clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr);
                const auto it = ptxas.find(kname);
                const PtxasFigures p = it == ptxas.end() ? PtxasFigures{} : it->second;
                fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", stem, kname, p.registers, p.spillStores,
                           p.spillLoads, p.stack, priv, local, wg);
                clReleaseKernel(k);
            }
            clReleaseProgram(prog);
        }
        clReleaseContext(ctx);
        return failed ? 1 : 0;
    } catch (const zp::probe::InputError& e) {  // an unreadable kernel source
        fmt::print(stderr, "zp-cl-build-report: error: {}\n", e.what());
        return 2;
    } catch (const std::invalid_argument& e) {  // a bad --tuning, --device, --kernels-dir
        fmt::print(stderr, "zp-cl-build-report: error: {}\n", e.what());
        return 2;
    } catch (const std::exception& e) {  // the OpenCL device or driver (exit codes as ze-probe's)
        fmt::print(stderr, "zp-cl-build-report: error: {}\n", e.what());
        return 3;
    }
}
