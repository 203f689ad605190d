// zp-spirv-validate FILE.spv... : exits non-zero (and prints the validator's messages) when a
// module is not valid SPIR-V for the kernel package's environment (exit 1), or exit 2 when a file
// cannot be read as one (missing, not a regular file, not whole words). Used by the build.
#include "spirv_check.hpp"

#include <cstdio>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: zp-spirv-validate FILE.spv...\n");
        return 2;
    }
    int failed = 0, unreadable = 0;
    for (int a = 1; a < argc; ++a) {
        std::vector<std::uint32_t> words;
        try {
            words = zp::kernels::readSpirvWords(argv[a]);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "zp-spirv-validate: %s\n", e.what());
            ++unreadable;
            continue;
        }
        try {
            if (auto err = zp::kernels::validateSpirv(words)) {
                std::fprintf(stderr, "%s: invalid SPIR-V (%s):\n%s", argv[a], zp::kernels::kTargetEnvName,
                             err->c_str());
                ++failed;
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s: %s\n", argv[a], e.what());
            ++failed;
        }
    }
    return unreadable ? 2 : failed ? 1 : 0;
}
