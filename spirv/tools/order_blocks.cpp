// zp-spirv-order-blocks IN.spv OUT.spv : see zp::kernels::orderSpirvBlocks. Exit 2 (and a
// message naming the file) when IN is not a SPIR-V module it can parse or OUT cannot be written.
#include "spirv_check.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

// Through a temporary file beside OUT, renamed into place: never a half-written OUT, and an
// existing OUT that is not a regular file (a FIFO would block the open) is refused, not opened.
void writeWords(const std::string& out, const std::vector<std::uint32_t>& words) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (const auto st = fs::status(out, ec); fs::exists(st) && !fs::is_regular_file(st))
        throw std::runtime_error(out +
                                 ": cannot write: " + (fs::is_directory(st) ? "a directory" : "not a regular file"));
    const std::string tmp = out + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw std::runtime_error(out + ": cannot write: " + std::strerror(errno));
        f.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
        f.close();
        if (!f) {
            fs::remove(tmp, ec);
            throw std::runtime_error(out + ": cannot write");
        }
    }
    fs::rename(tmp, out, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw std::runtime_error(out + ": cannot write: " + ec.message());
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: zp-spirv-order-blocks IN.spv OUT.spv\n");
        return 2;
    }
    try {
        const auto in = zp::kernels::readSpirvWords(argv[1]);
        std::vector<std::uint32_t> words;
        try {
            words = zp::kernels::orderSpirvBlocks(in);
        } catch (const std::exception& e) {
            throw std::runtime_error(std::string(argv[1]) + ": " + e.what());
        }
        writeWords(argv[2], words);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "zp-spirv-order-blocks: %s\n", e.what());
        return 2;
    }
    return 0;
}
