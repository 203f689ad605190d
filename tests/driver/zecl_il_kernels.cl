// SPIR-V kernels of the zecl driver tests (built with clang + llvm-spirv; run only on OpenCL
// devices that take SPIR-V, e.g. Intel's CPU runtime): a source attribute, a program-scope
// global (OpenCL 2.0) and a specialization constant (llvm-spirv turns __spirv_SpecConstant
// into OpSpecConstant with SpecId 5).
global uint zecl_test_global = 7u;
uint __attribute__((overloadable)) __spirv_SpecConstant(int id, uint def);

__attribute__((work_group_size_hint(1, 1, 1))) kernel void hinted(global uint* out) { out[get_global_id(0)] = 1u; }

kernel void read_global(global uint* out) {
    out[0] = zecl_test_global;
    zecl_test_global += 1u;
}

kernel void spec_value(global uint* out) { out[0] = __spirv_SpecConstant(5, 42u); }
