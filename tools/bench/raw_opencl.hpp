// Raw OpenCL for the benchmarks' reference figure (zecl-launch-bench, zp-chain-bench): the
// cost of back-to-back launches of an empty kernel on an in-order queue, with no Level Zero,
// loader or zecl in between. Header-only; programs that print figures, not tests.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace zp::bench {

// NOTE: NVIDIA's OpenCL (ptxas) rejects a kernel whose body is empty, so the "empty" kernel
// takes a flag that is always 0 and writes nothing.
inline constexpr const char* kNoopKernelSource =
    "kernel void noop(global int* sink, int flag) { if (flag) sink[0] = flag; }\n";

inline void clCheck(cl_int err, const char* what) {
    if (err != CL_SUCCESS) throw std::runtime_error(fmt::format("{} failed: OpenCL error {}", what, err));
}

inline std::string clDeviceName(cl_device_id d) {
    size_t size = 0;
    clCheck(clGetDeviceInfo(d, CL_DEVICE_NAME, 0, nullptr, &size), "clGetDeviceInfo(CL_DEVICE_NAME)");
    std::string name(size, '\0');
    clCheck(clGetDeviceInfo(d, CL_DEVICE_NAME, size, name.data(), nullptr), "clGetDeviceInfo(CL_DEVICE_NAME)");
    while (!name.empty() && name.back() == '\0') name.pop_back();
    return name;
}

// Every device of every platform the ICD loader offers, in platform order.
inline std::vector<cl_device_id> clAllDevices() {
    cl_uint np = 0;
    clCheck(clGetPlatformIDs(0, nullptr, &np), "clGetPlatformIDs");
    std::vector<cl_platform_id> platforms(np);
    clCheck(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
    std::vector<cl_device_id> all;
    for (cl_platform_id p : platforms) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
        std::vector<cl_device_id> devs(nd);
        clCheck(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr), "clGetDeviceIDs");
        all.insert(all.end(), devs.begin(), devs.end());
    }
    return all;
}

inline cl_device_id clDeviceNamed(const std::string& want) {
    for (cl_device_id d : clAllDevices())
        if (clDeviceName(d) == want) return d;
    throw std::runtime_error("no OpenCL device named '" + want + "'");
}

// `repeats` timings, each (wall time of `launches` back-to-back launches of the empty kernel +
// clFinish) / launches in µs, after one untimed round (first-submit costs are not launch cost).
inline std::vector<double> rawOpenClLaunchUs(cl_device_id device, std::uint32_t launches, int repeats) {
    cl_int err = CL_SUCCESS;
    cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    clCheck(err, "clCreateContext");
    cl_command_queue queue = clCreateCommandQueueWithProperties(ctx, device, nullptr, &err);
    clCheck(err, "clCreateCommandQueueWithProperties");
    const char* src = kNoopKernelSource;
    cl_program program = clCreateProgramWithSource(ctx, 1, &src, nullptr, &err);
    clCheck(err, "clCreateProgramWithSource");
    clCheck(clBuildProgram(program, 1, &device, "-cl-std=CL1.2", nullptr, nullptr), "clBuildProgram");
    cl_kernel kernel = clCreateKernel(program, "noop", &err);
    clCheck(err, "clCreateKernel");
    cl_mem sink = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(cl_int), nullptr, &err);
    clCheck(err, "clCreateBuffer");
    const cl_int flag = 0;
    clCheck(clSetKernelArg(kernel, 0, sizeof(cl_mem), &sink), "clSetKernelArg");
    clCheck(clSetKernelArg(kernel, 1, sizeof(cl_int), &flag), "clSetKernelArg");
    const size_t global = 1, local = 1;
    auto once = [&] {
        for (std::uint32_t i = 0; i < launches; ++i)
            clCheck(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
                    "clEnqueueNDRangeKernel");
        clCheck(clFinish(queue), "clFinish");
    };
    once();
    std::vector<double> us;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        once();
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                     launches);
    }
    clReleaseKernel(kernel);
    clReleaseMemObject(sink);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    return us;
}

}  // namespace zp::bench
