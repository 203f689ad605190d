// zp-spirv-order-blocks IN.spv OUT.spv : see zp::kernels::orderSpirvBlocks.
#include "spirv_check.hpp"

#include <cstdio>
#include <exception>
#include <fstream>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: zp-spirv-order-blocks IN.spv OUT.spv\n");
        return 2;
    }
    try {
        const auto words = zp::kernels::orderSpirvBlocks(zp::kernels::readSpirvWords(argv[1]));
        std::ofstream f(argv[2], std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
        if (!f) throw std::runtime_error(std::string("cannot write ") + argv[2]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
        return 1;
    }
    return 0;
}
