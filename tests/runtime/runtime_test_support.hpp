// Shared by the runtime device tests: the OpenCL C kernels, source bundles, and a Rig
// holding a device's context, module and immediate list.
#pragma once

#include "zp/runtime/ze.hpp"

#include "zecl/source_bundle.h"

#include <cstring>
#include <numeric>
#include <string_view>
#include <vector>

namespace zp_runtime_test {

inline constexpr const char* kKernels = R"CL(
kernel void write_gid(global uint* out) {
    out[get_global_id(0)] = (uint)get_global_id(0);
}
kernel void slm_sum(global const uint* in, global uint* out, local uint* scratch) {
    const uint lid = get_local_id(0);
    scratch[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[get_group_id(0)] = scratch[0];
}
kernel void increment(global uint* counter) {
    if (get_global_id(0) == 0) counter[0] += 1u;
}
kernel void add_one(global uint* data) { data[get_global_id(0)] += 1u; }
kernel void times_two(global uint* data) { data[get_global_id(0)] *= 2u; }
)CL";

inline std::vector<std::byte> bundle(std::string_view source, std::string_view options = "-cl-std=CL1.2") {
    std::vector<uint8_t> b = zecl::makeSourceBundle(options, source);
    std::vector<std::byte> out(b.size());
    std::memcpy(out.data(), b.data(), b.size());
    return out;
}

inline std::vector<uint32_t> iota(size_t n, uint32_t first = 0) {
    std::vector<uint32_t> v(n);
    std::iota(v.begin(), v.end(), first);
    return v;
}

inline void initForTests() {
    zp::runtime::InitOptions options;
    options.setAltDriversIfUnset = true;
    zp::runtime::init(options);
}

// Everything a device test needs, declared parents first so destruction runs children first.
struct Rig {
    zp::runtime::DeviceInfo dev;
    zp::runtime::Context ctx;
    zp::runtime::Module module;
    zp::runtime::ImmediateCommandList imm;

    explicit Rig(zp::runtime::DeviceInfo d)
        : dev(std::move(d)),
          ctx(dev),
          module(zp::runtime::Module::fromSourceBundle(ctx, dev, bundle(kKernels))),
          imm(ctx, dev) {}
};

}  // namespace zp_runtime_test
