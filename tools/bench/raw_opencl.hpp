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
// takes a flag that is always 0 and writes nothing. `pointers` global int* arguments p0.. come
// first (each written under the flag, so none is dead), the flag last.
inline std::string noopKernelSource(int pointers) {
    std::string params, body;
    for (int i = 0; i < pointers; ++i) {
        params += fmt::format("global int* p{}, ", i);
        body += fmt::format(" p{}[0] = flag;", i);
    }
    return fmt::format("kernel void noop({}int flag) {{ if (flag) {{{} }} }}\n", params, body);
}

// How the raw OpenCL reference binds the empty kernel's pointers: buffers (clSetKernelArg of a
// cl_mem) or SVM pointers (clSetKernelArgSVMPointer, as zecl binds every Level Zero pointer, into
// programs built as OpenCL C 1.2 as here). A device without SVM makes the svm form throw.
enum class ClPointers { buffers, svm };

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

// `repeats` timings, each (wall time of `launches` back-to-back launches of the empty kernel with
// `pointers` pointer arguments + clFinish) / launches in µs, after one untimed round (first-submit
// costs are not launch cost).
inline std::vector<double> rawOpenClLaunchUs(cl_device_id device, std::uint32_t launches, int repeats, int pointers = 1,
                                             ClPointers bind = ClPointers::buffers) {
    cl_int err = CL_SUCCESS;
    cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    clCheck(err, "clCreateContext");
    cl_command_queue queue = clCreateCommandQueueWithProperties(ctx, device, nullptr, &err);
    clCheck(err, "clCreateCommandQueueWithProperties");
    const std::string source = noopKernelSource(pointers);
    const char* src = source.c_str();
    cl_program program = clCreateProgramWithSource(ctx, 1, &src, nullptr, &err);
    clCheck(err, "clCreateProgramWithSource");
    clCheck(clBuildProgram(program, 1, &device, "-cl-std=CL1.2", nullptr, nullptr), "clBuildProgram");
    cl_kernel kernel = clCreateKernel(program, "noop", &err);
    clCheck(err, "clCreateKernel");
    std::vector<cl_mem> buffers;
    std::vector<void*> svm;
    for (int i = 0; i < pointers; ++i) {
        if (bind == ClPointers::svm) {
            void* p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, sizeof(cl_int), 0);
            if (!p) throw std::runtime_error("clSVMAlloc failed (the device has no SVM)");
            svm.push_back(p);
            clCheck(clSetKernelArgSVMPointer(kernel, cl_uint(i), p), "clSetKernelArgSVMPointer");
        } else {
            buffers.push_back(clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(cl_int), nullptr, &err));
            clCheck(err, "clCreateBuffer");
            clCheck(clSetKernelArg(kernel, cl_uint(i), sizeof(cl_mem), &buffers.back()), "clSetKernelArg");
        }
    }
    const cl_int flag = 0;
    clCheck(clSetKernelArg(kernel, cl_uint(pointers), sizeof(cl_int), &flag), "clSetKernelArg");
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
    for (cl_mem b : buffers) clReleaseMemObject(b);
    for (void* p : svm) clSVMFree(ctx, p);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    return us;
}

}  // namespace zp::bench
