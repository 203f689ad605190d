// The register counts NVIDIA's OpenCL compiler logs with -cl-nv-verbose (ptxas' figures per
// entry function), for zeKernelSuggestMaxCooperativeGroupCount (module.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace zecl {

// "Used N registers" of each entry function of `log`, by function name; `rest` gets the log
// without ptxas' lines (what the application's build log shows).
std::map<std::string, uint32_t> ptxasRegisters(const std::string& log, std::string& rest);

}  // namespace zecl
