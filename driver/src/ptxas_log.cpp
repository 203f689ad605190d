#include "ptxas_log.hpp"

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace zecl {

// NVIDIA's OpenCL compiler with -cl-nv-verbose logs ptxas' figures per entry function:
//   ptxas info    : Compiling entry function 'name' for 'sm_90'
//   ptxas info    : Function properties for name
//   ptxas info    : Used 128 registers, 22612 bytes smem, 400 bytes cmem[0]
std::map<std::string, uint32_t> ptxasRegisters(const std::string& log, std::string& rest) {
    constexpr std::string_view kEntry = "Compiling entry function '", kProps = "Function properties for ",
                               kUsed = "Used ", kRegs = " registers";
    std::map<std::string, uint32_t> regs;
    std::istringstream in(log);
    std::string line, entry;
    rest.clear();
    while (std::getline(in, line)) {
        const bool ptxas = line.find("ptxas info") != std::string::npos;
        if (size_t p = line.find(kEntry); ptxas && p != std::string::npos) {
            const size_t b = p + kEntry.size();
            entry = line.substr(b, line.find('\'', b) - b);
        } else if (size_t q = line.find(kProps); ptxas && q != std::string::npos) {
            entry = line.substr(q + kProps.size());
            while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.back()))) entry.pop_back();
        } else if (size_t u = line.find(kUsed);
                   ptxas && u != std::string::npos && !entry.empty() && line.find(kRegs, u) != std::string::npos) {
            regs[entry] = uint32_t(std::strtoul(line.c_str() + u + kUsed.size(), nullptr, 10));
        }
        if (!ptxas && line.find("bytes stack frame") == std::string::npos) rest += line + "\n";
    }
    return regs;
}

}  // namespace zecl
