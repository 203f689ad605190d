// zp-spirv-validate FILE.spv... : exits non-zero (and prints the validator's messages) when a
// module is not valid SPIR-V for the kernel package's environment. Used by the build.
#include "spirv_check.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: zp-spirv-validate FILE.spv...\n");
        return 2;
    }
    int failed = 0;
    for (int a = 1; a < argc; ++a) {
        try {
            if (auto err = zp::kernels::validateSpirv(zp::kernels::readSpirvWords(argv[a]))) {
                std::fprintf(stderr, "%s: invalid SPIR-V (%s):\n%s", argv[a], zp::kernels::kTargetEnvName,
                             err->c_str());
                ++failed;
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s\n", e.what());
            ++failed;
        }
    }
    return failed ? 1 : 0;
}
